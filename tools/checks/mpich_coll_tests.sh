#!/usr/bin/env bash
# Kept for existing command lines: the check is `arshim mpich-tests` (tools/arshim/mpich_coll.py; --help for it).
exec python3 "$(dirname "$0")/../arshim.py" mpich-tests "$@"
