#!/usr/bin/env python3
"""arshim report (`arshim report --help`): print, compare or plot ARShim call-statistics logs. The report lives in
the arshim package (tools/arshim/report.py), which is this script's parent directory's in the source tree and in an
installation (<datadir>/arshim/tools/)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
from arshim import report  # noqa: E402

if __name__ == "__main__":
    sys.exit(report.main())
