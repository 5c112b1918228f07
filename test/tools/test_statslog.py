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


STARTUP_OK = {"checked": True, "all_loaded": True, "timeout_s": 30, "ranks_without_arshim": [],
              "ranks_without_arshim_count": 0, "ranks_other_build": [], "ranks_other_build_count": 0}


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d["totals"].update(calls="many"), "$.totals.calls: 'many' is not of type 'integer'"),
    (lambda d: d["buckets"][1].update(bytes_min=8.0), "$.buckets.1.bytes_min: 8.0 is not of type 'integer'"),
    (lambda d: d["paths"][0].update(calls=True), "$.paths.0.calls: True is not of type 'integer'"),
    (lambda d: d.update(run=[]), "$.run: [] is not of type 'object'"),
    (lambda d: d["run"].pop("ppn"), "$.run: 'nodes' without 'ppn'"),
    (lambda d: d["run"].update(startup_check={"checked": True}),
     "$.run.startup_check: 'all_loaded' is a required property"),
    (lambda d: d["run"].update(startup_check={"checked": False, "all_loaded": True}),
     "$.run.startup_check: {'checked': False, 'all_loaded': True} has too many properties"),
    (lambda d: d["run"].update(startup_check=dict(STARTUP_OK, ranks_without_arshim=[1])),
     "$.run.startup_check: ranks_without_arshim_count below the 1 ranks listed"),
    (lambda d: d["run"].update(startup_check=dict(STARTUP_OK, ranks_other_build_count=2)),
     "$.run.startup_check: all_loaded disagrees with the counts of ranks"),
])
def test_wrong_types_and_semantics(tmp_path, sample_log, mutate, where):
    doc = sample_log()
    mutate(doc)
    assert refused(save(tmp_path, doc)) == f"not a valid arshim-stats/1 log: {where} (arshim report --validate " \
                                           "lists every problem)"
    assert statslog.problems(doc)[0] == where


def test_startup_check_of_the_job_and_of_a_rank(sample_log):
    doc = sample_log()
    for check in (STARTUP_OK, {"checked": False}, {"checked": True, "all_loaded": True, "timeout_s": 2, "parent": 0,
                                                  "parent_answered": True},
                  dict(STARTUP_OK, all_loaded=False, ranks_without_arshim=[1, 4], ranks_without_arshim_count=9)):
        doc["run"]["startup_check"] = check
        assert statslog.problems(doc) == [], check


def test_problem_text_is_escaped_and_short(sample_log):
    doc = sample_log()
    doc["communicators"][0]["id"] = "\x1b[2J" + "x" * 10000
    problem = statslog.problems(doc)[0]
    assert "\x1b" not in problem and len(problem) < 400 and problem.startswith("$.communicators.0.id: ")


def test_report_says_when_the_startup_check_disabled_arshim(sample_log):
    import io
    from arshim import report
    doc = sample_log()
    doc["run"]["startup_check"] = dict(STARTUP_OK, all_loaded=False, ranks_without_arshim=[1, 2, 3, 4, 5, 6, 7, 8],
                                       ranks_without_arshim_count=12)
    out = io.StringIO()
    report.print_report(doc, "x.json", out=out)
    assert "  DISABLED  at start, on every rank: ARShim not loaded on 12 ranks (1, 2, 3, 4, 5, 6, 7, 8, ...); no " \
           "call counted" in out.getvalue().splitlines()
    doc["run"]["startup_check"] = STARTUP_OK
    out = io.StringIO()
    report.print_report(doc, "x.json", out=out)
    assert "DISABLED" not in out.getvalue()
