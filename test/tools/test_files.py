"""arshim.files: untrusted files are read bounded or refused in one InputError, whatever sits at the name."""
import json
import os
import signal

import pytest

from arshim import ToolError, files


@pytest.fixture(autouse=True)
def no_hang():
    """A read that blocks (a FIFO opened without O_NONBLOCK) fails the test instead of hanging the suite."""
    def hung(*_):
        raise TimeoutError("the read blocked")
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def write(tmp_path, data, name="in.json"):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


def reason(call, *args, **kwargs):
    with pytest.raises(files.InputError) as info:
        call(*args, **kwargs)
    assert "\n" not in str(info.value)
    return info.value.reason


def test_a_regular_file_within_the_limit(tmp_path):
    assert files.read_bounded(write(tmp_path, b"x" * 100), limit=100) == b"x" * 100
    assert files.read_json(write(tmp_path, '{"a": [1, 2.5, "t\\u00e9"]}')) == {"a": [1, 2.5, "t\u00e9"]}


def test_larger_than_the_limit(tmp_path):
    assert reason(files.read_bounded, write(tmp_path, b"x" * 101), limit=100) == "larger than 100 bytes (101 bytes)"
    assert reason(files.read_bounded, write(tmp_path, b"x" * ((1 << 20) + 1)), limit=1 << 20) == \
        "larger than 1 MiB (1048577 bytes)"


def test_a_file_larger_than_it_says_is_caught(tmp_path):
    # /proc files are regular files of size 0 with contents: what a file growing while it is read looks like.
    assert reason(files.read_bounded, "/proc/self/status", limit=16) == "grew beyond 16 bytes while being read"


@pytest.mark.parametrize("make, kind", [
    (lambda p: os.mkfifo(p), "a FIFO"),
    (lambda p: os.mkdir(p), "a directory"),
])
def test_special_files_are_refused_without_blocking(tmp_path, make, kind):
    path = str(tmp_path / "special.json")
    make(path)
    assert reason(files.read_json, path) == f"{kind}, not a regular file"


def test_dev_zero_is_refused():
    assert reason(files.read_json, "/dev/zero") == "a character device, not a regular file"


def test_a_missing_file(tmp_path):
    assert reason(files.read_json, str(tmp_path / "missing.json")) == "cannot read (No such file or directory)"


def test_the_path_is_escaped_in_the_message(tmp_path):
    with pytest.raises(files.InputError) as info:
        files.read_json(str(tmp_path / "a\nforged\x1b[2J"))
    assert "\n" not in str(info.value) and "\x1b" not in str(info.value) and "a\\nforged\\x1b[2J" in str(info.value)


def test_not_utf8(tmp_path):
    assert reason(files.read_json, write(tmp_path, b'{"a": "\xff"}')) == "not UTF-8 text (byte 0xff at offset 7)"


@pytest.mark.parametrize("text, expected", [
    ("[" * 100000, "JSON nested deeper than 64 levels"),
    ("[" * 65 + "]" * 65, "JSON nested deeper than 64 levels"),
    ('{"a": ' * 500 + "1" + "}" * 500, "JSON nested deeper than 64 levels"),
    ("1" * 401, "an integer beyond 2**63 (401 digits)"),
    ('{"calls": ' + "9" * 5000 + "}", "an integer beyond 2**63 (5000 digits)"),
    ("[9223372036854775809]", "an integer beyond 2**63 (19 digits)"),
    ("[1e400]", "a number beyond the range of a double (1e400)"),
    ("[NaN]", "NaN is not a JSON number"),
    ("[-Infinity]", "-Infinity is not a JSON number"),
    ("", "not JSON (Expecting value at line 1 column 1)"),
    ('{"a": 1', "not JSON (Expecting ',' delimiter at line 1 column 8)"),
])
def test_json_limits(tmp_path, text, expected):
    assert reason(files.read_json, write(tmp_path, text)) == expected


def test_json_at_the_limits(tmp_path):
    deep = "[" * 64 + "]" * 64
    assert files.read_json(write(tmp_path, deep)) is not None
    assert files.read_json(write(tmp_path, "[9223372036854775808, -9223372036854775808, 1e308]")) == [
        1 << 63, -(1 << 63), 1e308]


def test_nesting_exceeds():
    assert not files.nesting_exceeds(1, 0)
    assert files.nesting_exceeds([], 0)
    assert not files.nesting_exceeds({"a": [1]}, 2)
    assert files.nesting_exceeds({"a": [{}]}, 2)
    assert not files.nesting_exceeds(json.loads("[" * 900 + "]" * 900), 900)


def test_write_file_replaces_a_planted_symlink(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    os.symlink(victim, tmp_path / "out.toml")
    files.write_file(str(tmp_path / "out.toml"), "table")
    assert victim.read_text() == "untouched"
    assert not os.path.islink(tmp_path / "out.toml") and (tmp_path / "out.toml").read_text() == "table"


def test_write_file_failure_is_one_line(tmp_path):
    with pytest.raises(ToolError, match="missing-dir does not exist"):
        files.write_file(str(tmp_path / "missing-dir" / "out.toml"), "table")
    (tmp_path / "file").write_text("")
    with pytest.raises(ToolError, match="cannot write"):
        files.write_file(str(tmp_path / "file" / "out.toml"), "table")
