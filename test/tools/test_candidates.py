"""arshim tune's candidates (tools/arshim/candidates.py) take where each path applies from the path specs, through
tools/arshim/path_limits.json (`arshim-policy paths`; the `path-limits` test keeps the file current): the
candidates of a layout follow the file, and the module writes no limit of its own (issue 55)."""
import json
import os

import pytest

from arshim import candidates as cand
from conftest import TOOLS


def by_name(ppn, nodes):
    return {c[0]: c for c in cand.candidates(ppn, nodes)}


def test_the_limits_file_is_the_package_data():
    with open(os.path.join(TOOLS, "arshim", "path_limits.json")) as f:
        limits = json.load(f)
    assert cand.LIMITS == limits
    assert set(limits["paths"]) >= {"native", "pipelined", "multileader", "latency"}


def test_candidates_of_layouts():
    assert list(by_name(4, 2)) == ["multileader-l1", "multileader-l2", "multileader-l4", "latency", "pipelined-one",
                                   "pipelined-64K", "pipelined-256K", "pipelined-1M"]
    assert list(by_name(16, 1))[:4] == ["multileader-l1", "multileader-l2", "multileader-l4", "multileader-l8"]
    assert list(by_name(1, 3)) == ["multileader-ring", "latency", "pipelined-one", "pipelined-64K", "pipelined-256K",
                                   "pipelined-1M"]
    assert "multileader-ring" not in by_name(1, 4) and "multileader-ring" not in by_name(1, 8)
    # One rank per node: the latency path is ARShim's recursive doubling among the nodes, a candidate of its own
    assert "latency" in by_name(1, 4)
    seg = by_name(2, 2)["pipelined-256K"]
    assert seg[3] == 256 << 10 and seg[4] is None  # from one segment (the spec's sensible_at)


def test_limits_come_from_the_file(monkeypatch):
    paths = json.loads(json.dumps(cand.PATHS))
    limits = by_name(4, 2)
    assert limits["latency"][4] == cand.PATHS["latency"]["max_bytes"] - 1
    assert by_name(1, 5)["multileader-ring"][3] == cand.RING["min_bytes"]
    # A spec that changed: the candidates follow the file's facts, not a copy here.
    paths["latency"]["ranks_per_node"] = "several"
    monkeypatch.setattr(cand, "PATHS", paths)
    monkeypatch.setattr(cand, "RING", {"nodes": [3], "min_bytes": 1 << 20})
    assert "latency" not in by_name(1, 4)
    assert "multileader-ring" not in by_name(1, 5)
    assert by_name(1, 3)["multileader-ring"][3] == 1 << 20


@pytest.mark.skipif(not os.environ.get("ARSHIM_POLICY_PROGRAM"), reason="arshim-policy not built")
def test_the_file_is_what_arshim_policy_prints():
    import subprocess
    done = subprocess.run([os.environ["ARSHIM_POLICY_PROGRAM"], "paths"], stdout=subprocess.PIPE, text=True,
                          check=True)
    assert json.loads(done.stdout) == cand.LIMITS
