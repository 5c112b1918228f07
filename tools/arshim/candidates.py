"""The options `arshim tune` measures against the library's own allreduce, and `arshim simulate` can force one by
one (docs/tuning.md, docs/scale.md): each a path with its parameters, set with ARSHIM_PATH and friends."""
from .sizes import size_text


LATENCY_MAX_BYTES = 4096  # policy/paths/latency.h kLatencyMaxBytes


def candidates(ppn, nodes):
    """The paths and parameters the tuner measures: multi-leader with 1, 2, 4.. leaders and the latency path up to
    4 KiB (several ranks per node), or
    at one rank per node on 3, 5, 6 or 7 nodes from 64 KiB with one leader, which is ARShim's ring over the ranks
    there (shim/paths/multileader.cpp); pipelined with 64 KiB to 1 MiB segments (64 KiB and more), and below 64 KiB
    the whole message as one non-blocking allreduce (MPICH 4.0.2's is up to 1.8x faster than its blocking one there
    at one rank per node: docs/tuning.md). Each: (name, ARSHIM_* settings, decision, min bytes, max bytes or None)."""
    out = []
    if ppn == 1 and nodes > 2 and nodes & (nodes - 1) and nodes <= 7:  # policy/cost_model.h internode_ring_auto
        out.append(("multileader-ring", {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": "1", "ARSHIM_PIPELINE_K": "1"},
                    {"path": "multileader", "leaders": 1, "pipeline_k": 1}, 64 << 10, None))
    if ppn > 1:
        leaders = 1
        while leaders <= min(ppn, 8):
            out.append((f"multileader-l{leaders}",
                        {"ARSHIM_PATH": "multileader", "ARSHIM_LEADERS": str(leaders), "ARSHIM_PIPELINE_K": "1"},
                        {"path": "multileader", "leaders": leaders, "pipeline_k": 1}, 0, None))
            leaders *= 2
    if ppn > 1:
        # The built-in table's small-call path (node slots; across nodes one leader per node runs the library's
        # allreduce): measured, so that a tuned table never overrules it unmeasured. It serves up to 4 KiB
        # (policy/paths/latency.h kLatencyMaxBytes); measured below, so that no size bucket from 4 KiB up (where
        # larger calls would decline) takes it.
        out.append(("latency", {"ARSHIM_PATH": "latency"}, {"path": "latency"}, 0, LATENCY_MAX_BYTES - 1))
    out.append(("pipelined-one", {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENTS": "1", "ARSHIM_WINDOW": "1"},
                {"path": "pipelined", "segments": 1, "window": 1}, 0, (64 << 10) - 1))
    for seg in (64 << 10, 256 << 10, 1 << 20):
        out.append((f"pipelined-{size_text(seg)}",
                    {"ARSHIM_PATH": "pipelined", "ARSHIM_SEGMENT_BYTES": str(seg), "ARSHIM_WINDOW": "8"},
                    {"path": "pipelined", "segment_bytes": seg, "window": 8}, seg, None))
    return out


def candidate_names(ppn, nodes):
    return [c[0] for c in candidates(ppn, nodes)]


def candidate(name, ppn, nodes):
    """The candidate `name` of the layout, or None when the layout has no such candidate."""
    return next((c for c in candidates(ppn, nodes) if c[0] == name), None)
