#!/usr/bin/env python3
"""Every list of paths and of reasons a call went to the library, wherever it is written, matches the vocabulary.

  check_vocabulary_lists.py SOURCE_ROOT

The paths are the rows of policy/path_rows.h; the reasons the enum in policy/routing_words.h. Checked against them:
the statistics log's JSON schema (path and reason enums), the report tool's path list, the man page's and the
README's ARSHIM_PATH choices, docs/policy.md's path key, and the reasons README.md ("What goes native") and
docs/stats.md name. One line per difference, exit 1 when there is any."""
import json
import pathlib
import re
import sys


def words(text):
    return set(re.findall(r"`([a-z_]+)`", text))


def main(root):
    root = pathlib.Path(root)
    rows = (root / "policy/path_rows.h").read_text()
    paths = re.findall(r"^\s*X\((\w+),", rows[rows.index("#define ARSHIM_PATH_ROWS(X)"):], re.M)
    vocabulary = (root / "policy/routing_words.h").read_text()
    enum = vocabulary[vocabulary.index("enum class Reason"):]
    reasons = re.findall(r"^\s*([a-z_]+),", enum[:re.search(r"^\s*count\b", enum, re.M).start()], re.M)
    problems = []

    def same(what, found, expected):
        found, expected = set(found), set(expected)
        if found != expected:
            problems.append(f"{what}: missing {sorted(expected - found)}, unknown {sorted(found - expected)}")

    schema = json.loads((root / "tools/report/arshim-stats-1.schema.json").read_text())
    same("the log schema's path enum", schema["definitions"]["path"]["enum"], paths)
    same("the log schema's reason enum", schema["definitions"]["reason"]["enum"], reasons + ["served"])

    report = (root / "tools/arshim/report.py").read_text()
    same("tools/arshim/report.py PATHS", re.findall(r'"(\w+)"', re.search(r"^PATHS = \(([^)]*)\)", report, re.M).group(1)),
         paths)

    man = (root / "docs/arshim.1").read_text()
    entry = re.search(r"^\.BR ARSHIM_PATH = .*\n((?:.*\n)*?)\.TP", man, re.M).group(1)
    same("docs/arshim.1 ARSHIM_PATH", re.findall(r"^\.BR (\w+) [,.]$", entry, re.M), ["auto"] + paths)

    readme = (root / "README.md").read_text()
    row = re.search(r"^\| `ARSHIM_PATH` \|.*$", readme, re.M).group(0)
    same("README.md ARSHIM_PATH row", words(row.split("|")[3].split(":")[0]), ["auto"] + paths)
    native = readme[readme.index("### What goes native"):]
    native = native[:native.index("\n\n", native.index("counted with its reason"))]
    same("README.md 'What goes native'", words(native) & (set(reasons) | {"served"}), reasons)
    unknown = {w for w in re.findall(r"`([a-z]+_[a-z_]+)`", native)} - set(reasons)
    if unknown:
        problems.append(f"README.md 'What goes native': not reasons: {sorted(unknown)}")

    stats = (root / "docs/stats.md").read_text()
    listing = stats[stats.index("Reason: `served`"):]
    listing = listing[:listing.index("Rows of the")]
    same("docs/stats.md reasons", words(listing) & (set(reasons) | {"served"}), reasons + ["served"])

    policy = (root / "docs/policy.md").read_text()
    path_row = re.search(r"^\| `path` \|.*$", policy, re.M).group(0)
    same("docs/policy.md path key", re.findall(r'`"(\w+)"`', path_row), paths)

    for p in problems:
        print(p)
    print(f"check_vocabulary_lists: {len(paths)} paths, {len(reasons)} reasons, {len(problems)} list(s) differ")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
