#!/usr/bin/env python3
"""The rooms of shim/ include only downward (docs/architecture.md "The rooms").

  check_rooms.py SOURCE_ROOT

Reads every #include "shim/<room>/..." of every file in shim/ and fails (exit 1, one line per arrow) on any include
of a room above the includer's own, or of a room the order does not know. Below shim/, policy/ and kernels/ must
not include shim/ at all."""
import re
import sys

from source_files import C_SOURCES, walk

# Top to bottom: a room may include itself and any room after it.
ORDER = ["entry", "core", "modes", "sharp", "paths", "stats", "base"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"shim/([a-z_]+)/([^"]+)"', re.M)


def main(root):
    problems = []
    for f in walk(root, ["shim"], C_SOURCES):
        if f.room not in ORDER:
            problems.append(f"{f.name}: room '{f.room}' is not in the order {ORDER}")
            continue
        for m in INCLUDE.finditer(f.text):
            target = m.group(1)
            if target not in ORDER:
                problems.append(f"{f.name}: includes shim/{target}/{m.group(2)}, a room not in {ORDER}")
            elif ORDER.index(target) < ORDER.index(f.room):
                problems.append(f"{f.name}: {f.room} includes shim/{target}/{m.group(2)} (up)")
    for f in walk(root, ["policy", "kernels"], C_SOURCES):
        if INCLUDE.search(f.text):
            problems.append(f"{f.name}: {f.name.split('/')[0]}/ includes shim/")
    for p in problems:
        print(p)
    print(f"check_rooms: {len(problems)} include(s) against the order {' > '.join(ORDER)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
