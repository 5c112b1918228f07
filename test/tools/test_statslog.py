"""arshim.statslog: a log is used only after it passed the schema and the checks the report relies on."""
import glob
import json
import os

import pytest

from arshim import files, statslog
from conftest import DATA


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(DATA, "*.json"))))
def test_recorded_logs_are_valid(path):
    assert statslog.load(path)["schema"] == "arshim-stats/1"
    with open(path) as f:
        assert statslog.problems(json.load(f)) == []


def save(tmp_path, doc):
    path = tmp_path / "log.json"
    path.write_text(json.dumps(doc))
    return str(path)


def refused(path):
    with pytest.raises(files.InputError) as info:
        statslog.load(path)
    return info.value.reason


@pytest.mark.parametrize("doc, reason", [
    ({}, "not an ARShim statistics log (schema None, expected 'arshim-stats/1')"),
    ([], "not an ARShim statistics log (schema None, expected 'arshim-stats/1')"),
    ({"schema": "arshim-stats/2"}, "not an ARShim statistics log (schema 'arshim-stats/2', expected 'arshim-stats/1')"),
    ({"schema": ["x"]}, "not an ARShim statistics log (schema an array, expected 'arshim-stats/1')"),
    ({"schema": "\x1b[2J"}, "not an ARShim statistics log (schema '\\x1b[2J', expected 'arshim-stats/1')"),
])
def test_not_a_log(tmp_path, doc, reason):
    assert refused(save(tmp_path, doc)) == reason


def test_minimal_log_is_refused_naming_the_first_problem(tmp_path):
    assert refused(save(tmp_path, {"schema": "arshim-stats/1"})).startswith(
        "not a valid arshim-stats/1 log: $.: 'scope' is a required property")


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["totals"].update(calls="many"), "$.totals.calls: 'many' is not of type 'integer'"),
    (lambda d: d["buckets"][1].update(bytes_min=8.0), "$.buckets.1.bytes_min: 8.0 is not of type 'integer'"),
    (lambda d: d["paths"][0].update(calls=True), "$.paths.0.calls: True is not of type 'integer'"),
    (lambda d: d.update(run=[]), "$.run: [] is not of type 'object'"),
    (lambda d: d["run"].pop("ppn"), "$.run: 'nodes' without 'ppn'"),
])
def test_wrong_types_and_semantics(tmp_path, sample_log, mutate, where):
    doc = sample_log()
    mutate(doc)
    assert refused(save(tmp_path, doc)) == f"not a valid arshim-stats/1 log: {where} (arshim report --validate " \
                                           "lists every problem)"
    assert statslog.problems(doc)[0] == where


def test_problem_text_is_escaped_and_short(sample_log):
    doc = sample_log()
    doc["communicators"][0]["id"] = "\x1b[2J" + "x" * 10000
    problem = statslog.problems(doc)[0]
    assert "\x1b" not in problem and len(problem) < 400 and problem.startswith("$.communicators.0.id: ")
