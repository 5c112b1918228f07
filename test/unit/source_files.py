"""The source walk the source checks of test/unit share (check_rooms.py, check_settings.py, check_log_verdicts.py).

  for f in source_files.walk(root, ["shim"], C_SOURCES): f.name, f.room, f.text

Files under each top directory of the source tree, in sorted order, with one of the given suffixes; each as its path
from the root (POSIX form, the name every check prints), the first directory below the top (a room of shim/), and its
text (undecodable bytes replaced: a check reads text, and no file of the tree may crash it)."""
import pathlib
import re
from typing import Iterator, NamedTuple

C_SOURCES = (".h", ".cpp", ".inc")
SCRIPTS = (".py", ".sh")
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


class Source(NamedTuple):
    path: pathlib.Path
    name: str   # relative to the source root, e.g. "shim/core/engine.cpp"
    room: str   # the first directory below the top ("core"), or the file's name when it sits in the top itself
    text: str


def walk(root, tops, suffixes, skip=()) -> Iterator[Source]:
    root = pathlib.Path(root)
    for top in tops:
        for path in sorted((root / top).rglob("*")):
            if path.suffix not in suffixes or not path.is_file():
                continue
            name = path.relative_to(root).as_posix()
            if name in skip:
                continue
            room = path.relative_to(root / top).parts[0]
            yield Source(path, name, room, path.read_text(errors="replace"))


def without_comments(text):
    """C and C++ comments blanked, newlines kept (line numbers survive): comments may name what they explain."""
    return COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
