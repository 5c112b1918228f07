#!/usr/bin/env python3
"""The tuner is generic over the path rows (issue 55 item 3; docs/architecture.md "Where to add").

  check_tuner_generic.py SOURCE_ROOT

Where a path applies and what the tuner tries against it are each path's own spec (policy/paths/<path>.h: Applies,
serves_layout, sensible_at, internode_step_changes, candidate_rows, tune_neighbours). So the code of
policy/tuned_table.cpp and policy/tune_candidates.cpp (and their headers) names no path: no path name, no
parameter struct and no constant of a path (k<Path>...) from the rows of policy/path_rows.h, outside comments: no
`Path::<name>`, `<name>Params`, `k<Name>...` or "<name>" string. (`native` alone is a word of the measurements, the
library's time beside each candidate's; the library's decision is vocab::kLibraryPath.) Fails (exit 1) with one line
per name found."""
import pathlib
import re
import sys

FILES = ["policy/tuned_table.cpp", "policy/tuned_table.h", "policy/tune_candidates.cpp", "policy/tune_candidates.h"]
ROW = re.compile(r"^\s*X\((\w+),\s*(\w+)\)", re.M)
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
TOKEN = re.compile(r'(::|")?([A-Za-z_]\w*)("?)')


def path_rows(root):
    text = (root / "policy" / "path_rows.h").read_text()
    rows = ROW.findall(text)
    if not rows:
        raise SystemExit("check_tuner_generic: no ARSHIM_PATH_ROWS rows found in policy/path_rows.h")
    return rows


def main(root):
    root = pathlib.Path(root)
    rows = path_rows(root)
    names = {name for name, _ in rows}
    params = {p for _, p in rows}
    prefixes = tuple("k" + name[0].upper() + name[1:] for name in names)  # kLatencyMaxBytes, kMultileader...
    problems = []
    for rel in FILES:
        code = COMMENT.sub("", (root / rel).read_text())
        for number, line in enumerate(code.splitlines(), 1):
            for before, word, after in TOKEN.findall(line):
                scoped = before == "::" or (before == '"' and after == '"')
                if (scoped and word in names) or word in params or word.startswith(prefixes):
                    problems.append(f"{rel}:{number}: names a path ({word}): say it in the path's spec instead")
    for p in problems:
        print(p)
    print(f"check_tuner_generic: {len(problems)} path name(s) in {', '.join(FILES)} "
          f"(paths: {', '.join(name for name, _ in rows)})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
