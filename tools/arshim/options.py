"""Command-line options checked before any work starts. Every `arshim` command parses with Parser, whose errors
are one line `<prog>: <message>` and exit status 2 (argparse's own print the usage too), escaped (text.escape: a
value with a terminal escape or a newline in it reaches the terminal as \\x1b, \\n); and takes numbers, sizes and
output names through the type functions below, each of which names the value and what is allowed:

  whole(lo, hi)        a whole number within [lo, hi]
  number(lo, hi)       a finite number within [lo, hi] (above lo when low_open)
  size(lo, hi)         a byte count as sizes.parse_size reads it (4096, 64K, 4M) within [lo, hi]
  names(allowed)       a comma-separated list of names from `allowed`, each once, at least one
  output(option)       a file name files.write_file can write (files.check_output), found out before the work
"""
import argparse
import math
import re

from . import ToolError, files
from .sizes import parse_size, size_text
from .text import escape

INT_RE = re.compile(r"[+]?[0-9]{1,19}")


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: `PROG: MESSAGE` on stderr, escaped, exit status 2. Sub-parsers are Parsers
    too (add_subparsers makes them of the parent's class)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {escape(message, 400)}\n")

    def _check_value(self, action, value):
        # argparse's own message quotes the value with repr(), which error() would escape a second time.
        if action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(action, f"invalid choice: {value} (allowed: "
                                                 f"{', '.join(map(str, action.choices))})")


class OptionError(ToolError):
    """A bad option value found after parsing (a range between two options, a value checked against the
    machine): `OPTION VALUE: why; allowed`, printed as the tool's one line."""

    def __init__(self, option, value, why):
        super().__init__(f"{option} {escape(value, 120)}: {why}")


def fail(value, why):
    """The error of a type function: argparse prints it as `argument OPTION: VALUE: why` through Parser.error, which
    escapes the line once (so the value is not escaped here)."""
    return argparse.ArgumentTypeError(f"{value}: {why}")


def parse_whole(text, lo, hi):
    """int of `text` within [lo, hi], or None: digits only (int() would take '1_000', ' 5' and '٣')."""
    if not isinstance(text, str) or not INT_RE.fullmatch(text.strip()):
        return None
    value = int(text.strip())
    return value if lo <= value <= hi else None


def whole_range_text(lo, hi):
    return f"a whole number from {lo} to {hi}"


def whole(lo, hi):
    def check(text):
        value = parse_whole(text, lo, hi)
        if value is None:
            raise fail(text, f"not {whole_range_text(lo, hi)}")
        return value
    check.__name__ = "whole number"
    return check


def number_range_text(lo, hi, low_open=False):
    return f"a number above {lo:g} and at most {hi:g}" if low_open else f"a number from {lo:g} to {hi:g}"


def parse_number(text, lo, hi, low_open=False):
    """float of `text` within the range, or None (nan, inf and '1e999' are no number here)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(value) or value < lo or (low_open and value == lo) or value > hi:
        return None
    return value


def number(lo, hi, low_open=False):
    def check(text):
        value = parse_number(text, lo, hi, low_open)
        if value is None:
            raise fail(text, f"not {number_range_text(lo, hi, low_open)}")
        return value
    check.__name__ = "number"
    return check


def parse_size_within(text, lo, hi):
    """Bytes of `text` within [lo, hi], or None."""
    try:
        value = parse_size(text)
    except (ValueError, AttributeError):
        return None
    return value if lo <= value <= hi else None


def size_range_text(lo, hi):
    return f"a size from {size_text(lo)} to {size_text(hi)} (e.g. 4096, 64K, 4M)"


def size(lo, hi):
    def check(text):
        value = parse_size_within(text, lo, hi)
        if value is None:
            raise fail(text, f"not {size_range_text(lo, hi)}")
        return value
    check.__name__ = "size"
    return check


def names(allowed, what="name"):
    def check(text):
        items = []
        for item in (part.strip() for part in text.split(",")):
            if not item:
                continue
            if item not in allowed:
                raise fail(text, f"unknown {what} {item}; allowed: {', '.join(allowed)} (comma-separated)")
            if item not in items:
                items.append(item)
        if not items:
            raise fail(text, f"no {what}; allowed: {', '.join(allowed)} (comma-separated)")
        return items
    check.__name__ = "list"
    return check


def output(text):
    """An output file name (files.output_problem): nothing, a regular file or a symbolic link at it, in an existing
    directory. Checked when the options are parsed, before any work."""
    problem = files.output_problem(text)
    if problem:
        raise fail(text, problem)
    return text
