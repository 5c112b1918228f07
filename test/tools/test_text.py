"""arshim.text: whatever a log's strings hold, what the tools print of them is visible text on one line."""
import pytest

from arshim.text import escape, escape_strings, plot_text


@pytest.mark.parametrize("raw, shown", [
    ("world", "world"),
    ("MPI_COMM_WORLD (dup)", "MPI_COMM_WORLD (dup)"),
    ("été µs — ünïcode", "été µs — ünïcode"),
    ("\x1b[2J", "\\x1b[2J"),                          # clear the screen
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),       # set the window title (OSC ... BEL)
    ("a\narshim[0] error: FORGED", "a\\narshim[0] error: FORGED"),
    ("a\rb\tc\x00\x7f", "a\\rb\\tc\\x00\\x7f"),
    ("\x9b2J", "\\x9b2J"),                            # C1 CSI: an escape without ESC
    ("\u202eevil", "\\u202eevil"),                     # right-to-left override
    ("line\u2028sep", "line\\u2028sep"),
    ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
    ("back\\slash", "back\\\\slash"),                 # so that a shown \x1b was no ESC in the log
    ("\U000e0001tag", "\\U000e0001tag"),
])
def test_escape(raw, shown):
    assert escape(raw) == shown
    assert escape(raw).isprintable()


def test_long_strings_are_cut():
    assert escape("x" * 10, limit=4) == "xxxx..."
    assert len(escape("\x1b" * 10**6)) < 10 * 512
    assert escape("x" * 512) == "x" * 512


def test_not_a_string():
    assert escape(42) == "42" and escape(None) == "None"


def test_escape_strings_reaches_keys_and_nested_values():
    doc = {"a\n": ["\x1b[2J", {"label": "\x07", "n": 3, "x": 1.5, "t": True, "z": None}]}
    assert escape_strings(doc) == {"a\\n": ["\\x1b[2J", {"label": "\\x07", "n": 3, "x": 1.5, "t": True, "z": None}]}


def test_plot_text_keeps_dollars_literal():
    assert plot_text("MPICH $\\alpha$ 4.0") == "MPICH \\$\\alpha\\$ 4.0"
