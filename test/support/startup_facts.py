"""TEST CODE ONLY: what ARShim's start-up check recorded in a run, checked against what a test expects: rank 0's
statistics log (run.startup_check, validated against the schema) and every rank's trace (the startup_check event).
Shell tests (test/hardening/hardening_test.sh, test/unit/check_launcher.sh) decide which ranks had ARShim from this
data, never from a warning's or the summary's wording (docs/stats.md).

  startup_facts.py DIR SCHEMA EXPECTED_JSON

DIR holds the run's stats.json and trace-<rank>.jsonl. EXPECTED_JSON: {"log": {key: value, ...} or null (no log may
be written), "traces": {rank: {key: value, ...}}}: the log's run.startup_check must have those values ("np" and
"calls" are the log's run.np and totals.calls, an ARSHIM_* key the value of that setting in the ranks), exactly the
ranks named must have written a trace (a rank without ARShim writes none), and each one's startup_check event must
have those values. Prints one line per problem; exit status 1 when there is any.
"""
import glob
import json
import os
import re
import sys

import jsonschema  # python3-jsonschema


def main():
    directory, schema_path, expected = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    problems = []
    log_path = os.path.join(directory, "stats.json")
    want_log = expected.get("log")
    if want_log is None:
        if os.path.exists(log_path):
            problems.append("a statistics log was written, none expected")
    elif not os.path.exists(log_path):
        problems.append("no statistics log")
    else:
        with open(log_path) as f:
            doc = json.load(f)
        with open(schema_path) as f:
            jsonschema.validate(doc, json.load(f))
        check = doc["run"].get("startup_check", {})
        got = dict(check, np=doc["run"]["np"], calls=doc["totals"]["calls"],
                   **{k: v["value"] for k, v in doc["run"]["settings"].items()})
        for key, value in want_log.items():
            if got.get(key) != value:
                problems.append(f"log: {key} is {got.get(key)!r}, expected {value!r}")
    traces = {}
    for path in glob.glob(os.path.join(directory, "trace-*.jsonl")):
        with open(path) as f:
            lines = [json.loads(line) for line in f if line.strip()]
        rank = int(re.search(r"trace-([0-9]+)\.jsonl$", path).group(1))
        traces[str(rank)] = [e for e in lines[1:] if e.get("event") == "startup_check"]
    want_traces = expected.get("traces", {})
    if sorted(traces, key=int) != sorted(want_traces, key=int):
        problems.append(f"traces of ranks {sorted(traces, key=int)}, expected {sorted(want_traces, key=int)} (the "
                        "ranks with ARShim)")
    for rank, want in want_traces.items():
        events = traces.get(rank, [])
        if len(events) != 1:
            problems.append(f"rank {rank}: {len(events)} startup_check events, expected 1")
            continue
        for key, value in want.items():
            if events[0].get(key) != value:
                problems.append(f"rank {rank}'s trace: {key} is {events[0].get(key)!r}, expected {value!r}")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
