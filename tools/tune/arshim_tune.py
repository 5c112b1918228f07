#!/usr/bin/env python3
"""arshim tune (`arshim tune --help`, docs/tuning.md): a policy table measured on this machine. The tuner lives in
the arshim package (tools/arshim/tune.py), in this script's parent directory in the source tree and in an
installation (<datadir>/arshim/tools/)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
from arshim import tune  # noqa: E402

if __name__ == "__main__":
    sys.exit(tune.main())
