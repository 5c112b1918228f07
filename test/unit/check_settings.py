#!/usr/bin/env python3
"""Settings have one source (issue 55; docs/architecture.md "Invariants").

  check_settings.py SOURCE_ROOT

Every file in shim/ reads settings as fields of the process's settings or of a communicator's agreed Settings
(policy/settings.h). Only the settings module, shim/core/settings.{h,cpp}, reads the environment's ARSHIM_* options
and builds them. Fails (exit 1, one line per finding) on any other file of shim/ that names an option id, reads an
option from a Config (.number/.flag/.text/.value/.is_set), parses or echoes the option table (Config::from_pairs,
pairs_from_environ, option_spec, option_table), reads the environment block, or getenv()s an ARSHIM_ variable; and on
any process global the node protocol's settings used to live in (g_wait, g_phase_times_on)."""
import re
import sys

from source_files import C_SOURCES, walk, without_comments

MODULE = {"shim/core/settings.h", "shim/core/settings.cpp"}
RULES = [
    (re.compile(r"\bOptionId\b"), "names an option id"),
    (re.compile(r"\bconfig\w*\s*(?:\.|->)\s*(?:number|flag|text|value|is_set)\s*\("), "reads an option from a Config"),
    (re.compile(r"\b(?:from_pairs|pairs_from_environ|option_spec|option_table)\s*\("), "reads the option table"),
    (re.compile(r"\benviron\b"), "reads the environment block"),
    (re.compile(r"getenv\s*\(\s*\"ARSHIM_"), "reads an ARSHIM_ variable"),
    (re.compile(r"\b(?:g_wait|g_phase_times_on)\b"), "uses a process global for settings"),
]


def main(root):
    problems = []
    files = 0
    for f in walk(root, ["shim"], C_SOURCES, skip=MODULE):
        files += 1
        # Comments may name what they explain; only code counts.
        for number, line in enumerate(without_comments(f.text).splitlines(), 1):
            for rule, what in RULES:
                if rule.search(line):
                    problems.append(f"{f.name}:{number}: {what}: {line.strip()}")
    for p in problems:
        print(p)
    print(f"check_settings: {len(problems)} read(s) of settings outside {', '.join(sorted(MODULE))} in {files} files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
