#!/usr/bin/env python3
"""No test or tool takes a number out of one of ARShim's log lines (issue 55, docs/architecture.md "Verdicts from
data"): counts, ranks and mismatches come from the statistics log or the trace; a line for people is checked for being printed,
once, escaped, never parsed for a verdict.

  check_log_verdicts.py SOURCE_ROOT

Scans the Python and shell files under test/ and tools/ for a pattern that names an ARShim line ("arshim[" as a
regular expression: arshim\\[ ) and captures a number from it ((\\d, ([0-9], \\([0-9] ), and fails (exit 1, one line
each) on any outside ALLOWED (now empty)."""
import re
import sys

from source_files import SCRIPTS, walk

ARSHIM_LINE = re.compile(r"arshim\\+\[")
NUMBER_CAPTURE = re.compile(r"\(\\d|\(\[0-9\]|\\\(\[0-9\]")
# path -> why a number is read from a line there. None: the summary's sentences are tested where they are made
# (test/shim/test_summary.cpp, against a log document of known numbers), and the MPI tests compare a job's printed
# summary with arshim-stats-summary's text of its own log, line for line.
ALLOWED = {}
SKIP = {"test/unit/check_log_verdicts.py"}


def main(root):
    problems, allowed_seen = [], set()
    for f in walk(root, ["test", "tools"], SCRIPTS, skip=SKIP):
        for number, line in enumerate(f.text.splitlines(), 1):
            if ARSHIM_LINE.search(line) and NUMBER_CAPTURE.search(line):
                if f.name in ALLOWED:
                    allowed_seen.add(f.name)
                else:
                    problems.append(f"{f.name}:{number}: a number read from an ARShim log line (take it from the "
                                    f"statistics log or the trace): {line.strip()[:160]}")
    for name in sorted(set(ALLOWED) - allowed_seen):
        problems.append(f"{name}: allowed to read a number from a line, and no longer does: drop it from ALLOWED")
    for problem in problems:
        print(problem)
    print(f"check_log_verdicts: {len(problems)} problem(s); allowed: {', '.join(sorted(allowed_seen)) or 'none'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
