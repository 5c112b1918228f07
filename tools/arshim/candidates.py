"""The options `arshim tune` measures against the library's own allreduce, and `arshim simulate` can force one by
one (docs/tuning.md, docs/scale.md): each a path with its parameters, set with ARSHIM_PATH and friends.

Which candidates the tuner measures (leader counts, segment sizes) is the tuner's choice, made here; where a path
applies is its spec's (policy/paths/<path>.h kApplies), read from path_limits.json beside this file, which
`arshim-policy paths` writes from those headers (the `path-limits` test keeps it current): no limit is written
here."""
import json
import os

from .sizes import size_text

LIMITS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "path_limits.json")


def _limits():
    with open(LIMITS_FILE, encoding="utf-8") as f:
        return json.load(f)


LIMITS = _limits()
PATHS = LIMITS["paths"]
# The latency path's largest call (larger calls decline with buffer_too_large).
LATENCY_MAX_BYTES = PATHS["latency"]["max_bytes"]
# At one rank per node, the multi-leader path with one leader is ARShim's ring over the nodes on these node counts
# from this size (model::internode_ring_auto); elsewhere it is the library's allreduce behind a copy.
RING = LIMITS["multileader_one_rank_ring"]
MOST_LEADERS = 8  # the tuner measures 1, 2, 4 and 8 leaders (at most the ppn)
SEGMENTS = (64 << 10, 256 << 10, 1 << 20)
WHOLE_BELOW = 64 << 10  # the whole message as one non-blocking allreduce below this size


def serves_layout(path, ppn, nodes):
    """Whether `path` applies at (ppn, nodes) as its spec's kApplies says (ranks per node and node count)."""
    spec = PATHS[path]
    need = {"any": lambda n: True, "one": lambda n: n == 1, "several": lambda n: n > 1}
    return need[spec["ranks_per_node"]](ppn) and need[spec["nodes"]](nodes)


def candidates(ppn, nodes):
    """The paths and parameters the tuner measures: multi-leader with 1, 2, 4.. leaders and the latency path up to
    its largest call where a node has several ranks, or, at one rank per node, multi-leader with one leader on the
    node counts and sizes where it is ARShim's ring (shim/paths/multileader.cpp); pipelined with 64 KiB to 1 MiB
    segments (from one segment: a smaller message is the library's allreduce with extra steps, the pipelined spec's
    sensible_at), and below 64 KiB the whole message as one non-blocking allreduce (MPICH 4.0.2's is up to 1.8x faster
    than its blocking one there at one rank per node: docs/tuning.md). Each: (name, ARSHIM_* settings, decision, min
    bytes, max bytes or None)."""
    out = []
    if ppn == 1 and nodes in RING["nodes"]:
        out.append(("multileader-ring", {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "1", "ARSHIM_PIPELINE_K": "1"},
                    {"path": "multileader", "leaders": 1, "pipeline_k": 1}, RING["min_bytes"], None))
    if ppn > 1 and serves_layout("multileader", ppn, nodes):
        leaders = 1
        while leaders <= min(ppn, MOST_LEADERS):  # more leaders than ranks: the shim clamps them (serves_layout)
            out.append((f"multileader-l{leaders}",
                        {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": str(leaders), "ARSHIM_PIPELINE_K": "1"},
                        {"path": "multileader", "leaders": leaders, "pipeline_k": 1}, 0, None))
            leaders *= 2
    if serves_layout("latency", ppn, nodes):
        # The built-in table's small-call path: measured, so that a tuned table never overrules it unmeasured; only
        # below its largest call, so that no size bucket from there up (where larger calls would decline) takes it.
        out.append(("latency", {"ARSHIM_PATH": "latency"}, {"path": "latency"}, 0, LATENCY_MAX_BYTES - 1))
    if serves_layout("pipelined", ppn, nodes):
        out.append(("pipelined-one", {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENTS": "1", "ARSHIM_WINDOW": "1"},
                    {"path": "pipelined", "segments": 1, "window": 1}, 0, WHOLE_BELOW - 1))
        for seg in SEGMENTS:
            out.append((f"pipelined-{size_text(seg)}",
                        {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENT_BYTES": str(seg), "ARSHIM_WINDOW": "8"},
                        {"path": "pipelined", "segment_bytes": seg, "window": 8}, seg, None))
    return out


def candidate_names(ppn, nodes):
    return [c[0] for c in candidates(ppn, nodes)]


def candidate(name, ppn, nodes):
    """The candidate `name` of the layout, or None when the layout has no such candidate."""
    return next((c for c in candidates(ppn, nodes) if c[0] == name), None)
