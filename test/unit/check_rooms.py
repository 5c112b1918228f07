#!/usr/bin/env python3
"""The rooms of shim/ include only downward (docs/architecture.md "The rooms").

  check_rooms.py SOURCE_ROOT

Reads every #include "shim/<room>/..." of every file in shim/ and fails (exit 1, one line per arrow) on any include
of a room above the includer's own, or of a room the order does not know. Below shim/, policy/ and kernels/ must
not include shim/ at all."""
import pathlib
import re
import sys

# Top to bottom: a room may include itself and any room after it.
ORDER = ["entry", "core", "modes", "sharp", "paths", "stats", "base"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"shim/([a-z_]+)/([^"]+)"', re.M)


def main(root):
    root = pathlib.Path(root)
    problems = []
    for path in sorted((root / "shim").rglob("*")):
        if path.suffix not in (".h", ".cpp", ".inc") or not path.is_file():
            continue
        room = path.relative_to(root / "shim").parts[0]
        if room not in ORDER:
            problems.append(f"{path.relative_to(root)}: room '{room}' is not in the order {ORDER}")
            continue
        for m in INCLUDE.finditer(path.read_text()):
            target = m.group(1)
            if target not in ORDER:
                problems.append(f"{path.relative_to(root)}: includes shim/{target}/{m.group(2)}, a room not in {ORDER}")
            elif ORDER.index(target) < ORDER.index(room):
                problems.append(f"{path.relative_to(root)}: {room} includes shim/{target}/{m.group(2)} (up)")
    for lower in ("policy", "kernels"):
        for path in sorted((root / lower).rglob("*")):
            if path.suffix in (".h", ".cpp", ".inc") and path.is_file() and INCLUDE.search(path.read_text()):
                problems.append(f"{path.relative_to(root)}: {lower}/ includes shim/")
    for p in problems:
        print(p)
    print(f"check_rooms: {len(problems)} include(s) against the order {' > '.join(ORDER)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
