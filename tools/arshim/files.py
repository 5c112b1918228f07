"""Reading files the tools did not write (statistics logs, state files, CSVs) as if an attacker had: whatever sits
at the name (a FIFO, a device, /dev/zero, a directory, a file that keeps growing, bytes that are no text, JSON
nested a hundred thousand deep or with a 400-digit number) ends in one InputError naming the problem, never in a
hang, unbounded memory or a traceback. And writing: every file a tool writes goes through write_file (a whole file
or nothing, never through a symbolic link, never to a FIFO, device or directory) or, for a stream such as a log,
open_output; check_output refuses a bad output name before the work that would fill it."""
import errno
import json
import math
import os
import stat

from . import ToolError
from .text import escape

DEFAULT_LIMIT = 64 << 20
# JSON nesting the tools accept: ARShim's own files nest 7 deep, and jsonschema and repr() recurse per level on
# what the parser returns.
MAX_DEPTH = 64
# Integers beyond 64 bits are no count ARShim writes; Python would parse them at any size (and slowly).
MAX_INT = 1 << 63
KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class InputError(ToolError):
    """A file that cannot be taken as input: `path: reason` in one line (the path escaped)."""

    def __init__(self, path, reason):
        super().__init__(f"{escape(os.fspath(path))}: {reason}")
        self.path, self.reason = path, reason


def kind(mode):
    return next((name for test, name in KINDS if test(mode)), "a special file")


def read_bounded(path, limit=DEFAULT_LIMIT):
    """The bytes of a regular file of at most `limit` bytes. Opened without blocking (a FIFO with no writer would
    block a plain open() forever) and without becoming a controlling terminal, checked with fstat on the open file
    (no race with a rename), and read up to limit + 1 bytes so that a file growing while it is read is caught."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise InputError(path, f"cannot read ({e.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(path, f"{kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise InputError(path, f"larger than {limit_text(limit)} ({st.st_size} bytes)")
        data = read_at_most(fd, limit + 1)
    except OSError as e:
        raise InputError(path, f"cannot read ({e.strerror})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InputError(path, f"grew beyond {limit_text(limit)} while being read")
    return data


def read_at_most(fd, size):
    chunks = []
    while size > 0:
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def limit_text(limit):
    return f"{limit >> 20} MiB" if limit >= 1 << 20 and limit % (1 << 20) == 0 else f"{limit} bytes"


def read_text(path, limit=DEFAULT_LIMIT):
    """A bounded regular file as strict UTF-8 text."""
    data = read_bounded(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None


def nesting_exceeds(value, limit):
    """Whether parsed JSON nests containers more than `limit` deep: level by level, without recursion."""
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(limit):
        if not level:
            return False
        level = [child for container in level
                 for child in (container.values() if isinstance(container, dict) else container)
                 if isinstance(child, (dict, list))]
    return bool(level)


class NumberError(ValueError):
    pass


def bounded_int(digits):
    # The length first: int() of thousands of digits is slow, and refused by Python past 4300 of them.
    if len(digits.lstrip("-")) > 19 or abs(int(digits)) > MAX_INT:
        raise NumberError(f"an integer beyond 2**63 ({len(digits.lstrip('-'))} digits)")
    return int(digits)


def finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise NumberError(f"a number beyond the range of a double ({escape(text, 40)})")
    return value


def no_constant(name):
    raise NumberError(f"{name} is not a JSON number")


def parse_json(path, text, max_depth=MAX_DEPTH):
    """JSON text to Python values: integers within 64 bits, finite numbers only, at most max_depth containers deep.
    Deeper nesting is caught while parsing: Python's parser recurses per level and raises RecursionError near the
    interpreter's limit (100000 '[' take no time to refuse), and what it returns is measured level by level."""
    too_deep = InputError(path, f"JSON nested deeper than {max_depth} levels")
    try:
        value = json.loads(text, parse_int=bounded_int, parse_float=finite_float, parse_constant=no_constant)
    except NumberError as e:
        raise InputError(path, str(e)) from None
    except json.JSONDecodeError as e:
        raise InputError(path, f"not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise too_deep from None
    if nesting_exceeds(value, max_depth):
        raise too_deep
    return value


def read_json(path, limit=DEFAULT_LIMIT, max_depth=MAX_DEPTH):
    """A bounded regular file of strict UTF-8 JSON (parse_json's limits)."""
    return parse_json(path, read_text(path, limit), max_depth)


def output_problem(path):
    """Why write_file would refuse `path`, or None. What may be at the name (not followed): nothing, a regular file
    or a symbolic link, which are replaced; the name's directory must exist. A directory, a FIFO, a device or a
    socket is refused (a FIFO would block, a device or a socket is no file to replace)."""
    if not path:
        return "an empty file name"
    directory = os.path.dirname(os.fspath(path)) or "."
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not os.path.isdir(directory):
            return f"its directory {escape(directory)} does not exist"
        st = None
    except OSError as e:
        return f"cannot write ({e.strerror})"
    if st is None or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
        # The new file is made beside the name and renamed over it: the directory must take both.
        return None if os.access(directory, os.W_OK | os.X_OK) else \
            f"cannot write in its directory {escape(directory)} (Permission denied)"
    return (f"{kind(st.st_mode)}, not a regular file (an output is written as a new file that replaces only a "
            "regular file or a symbolic link at its name)")


def check_output(path, option=None):
    """Refuses, in one ToolError naming the option and the escaped name, an output name write_file would not write
    (output_problem), so that a tool finds out before its work instead of losing the work's results. Returns path."""
    problem = output_problem(path)
    if problem:
        raise ToolError(f"{option + ' ' if option else ''}{escape(os.fspath(path))}: {problem}")
    return path


def write_file(path, data, mode=0o644):
    """Writes a whole file (text or bytes) or nothing: a new temporary file beside it (O_EXCL | O_NOFOLLOW: never
    through a symlink planted in a shared directory), then renamed over the name. The rename replaces a regular file
    or a symbolic link (never followed: the file it pointed to stays as it was) and opens nothing, so a FIFO cannot
    block it; a directory, FIFO, device or socket at the name is refused (output_problem) before anything is
    written."""
    problem = output_problem(path)
    if problem:
        raise ToolError(f"{escape(os.fspath(path))}: {problem}")
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
        with os.fdopen(fd, "wb" if isinstance(data, (bytes, bytearray)) else "w") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise ToolError(f"{escape(os.fspath(path))}: cannot write ({e.strerror})") from None


def open_output(path, append=False, mode=0o644):
    """A descriptor for writing a stream (a log, rows added to a CSV), for what cannot be written whole: never
    through a symbolic link at the name (O_NOFOLLOW), never blocking on a FIFO (O_NONBLOCK: no reader is ENXIO, and
    a FIFO with one is refused), and only to a regular file, checked on the open descriptor before anything is
    truncated or written. Created if missing; truncated unless `append`. OSError (filename set) on failure."""
    st = None
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise OSError(errno.ELOOP, "a symbolic link, never followed", path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OSError(errno.EINVAL, f"{kind(st.st_mode)}, not a regular file", path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
                 | (os.O_APPEND if append else 0), mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"{kind(st.st_mode)}, not a regular file", path)
        if not append:
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd
