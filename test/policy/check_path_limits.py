#!/usr/bin/env python3
"""tools/arshim/path_limits.json is what `arshim-policy paths` prints from the path specs (issue 55).

  check_path_limits.py ARSHIM_POLICY PATH_LIMITS_JSON

The Python tools (tools/arshim/candidates.py) read where each path applies from that file instead of writing the
limits again; this test fails (exit 1, with the differences and the command that regenerates the file) when a
spec changed and the file did not."""
import json
import subprocess
import sys


def flat(value, prefix=""):
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out.update(flat(item, f"{prefix}.{key}" if prefix else key))
        return out
    return {prefix: value}


def main(program, path):
    done = subprocess.run([program, "paths"], stdout=subprocess.PIPE, text=True, check=True)
    expected = json.loads(done.stdout)
    with open(path, encoding="utf-8") as f:
        found = json.load(f)
    if found == expected:
        print(f"check_path_limits: {path} is current ({len(expected['paths'])} paths)")
        return 0
    want, have = flat(expected), flat(found)
    for key in sorted(set(want) | set(have)):
        if want.get(key, "(absent)") != have.get(key, "(absent)"):
            print(f"{key}: the specs say {json.dumps(want.get(key, '(absent)'))}, the file "
                  f"{json.dumps(have.get(key, '(absent)'))}")
    print(f"check_path_limits: {path} is out of date; regenerate it: arshim-policy paths > tools/arshim/path_limits.json")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
