"""Shared by the tools' tests: the arshim package importable from the source tree (meson's tools-pytest sets
PYTHONPATH too), and the scripts under test. ARSHIM_TEST_REPORT / ARSHIM_TEST_TUNE point the subprocess tests at
other copies of the scripts, e.g. an older checkout's, to see which of these tests it would fail."""
import json
import os
import sys

import pytest

SOURCE = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOLS = os.path.join(SOURCE, "tools")
DATA = os.path.join(SOURCE, "test", "stats", "data")
sys.path.insert(0, TOOLS)


@pytest.fixture
def report_script():
    return os.environ.get("ARSHIM_TEST_REPORT") or os.path.join(TOOLS, "report", "arshim_report.py")


@pytest.fixture
def tune_script():
    return os.environ.get("ARSHIM_TEST_TUNE") or os.path.join(TOOLS, "tune", "arshim_tune.py")


@pytest.fixture
def sample_log():
    """A fresh copy of a recorded, valid log (test/stats/data) to mutate."""
    def load(name="program-openmpi.json"):
        with open(os.path.join(DATA, name)) as f:
            return json.load(f)
    return load


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """`arshim cluster` against a fake command layer, its state in tmp_path (test/tools/cluster_fake.py)."""
    from cluster_fake import FakeSystem, Harness
    monkeypatch.chdir(tmp_path)
    return Harness(tmp_path, FakeSystem())
