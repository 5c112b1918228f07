"""Text from files the tools did not write, made safe to print: a call-site or communicator label in a log can carry
terminal escapes (clear the screen, set the window title), a newline that forges a line of output, bidirectional
overrides, lone surrogates (valid JSON, unprintable UTF-8) or a megabyte of text. One function, `escape`, turns any
of them into visible, unambiguous escapes; everything the tools print from such a file goes through it."""

DEFAULT_LIMIT = 512  # a demangled C++ template name can be long; a label of 64 MiB cannot
NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def escape_char(c):
    if c in NAMED:
        return NAMED[c]
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape(value, limit=DEFAULT_LIMIT):
    """Printable text: every character Python does not call printable (C0 and C1 controls, ESC, DEL, format
    characters such as bidirectional overrides, line and paragraph separators, surrogates, unassigned code points)
    and the backslash become \\n, \\xNN, \\uNNNN escapes, and more than `limit` characters are cut with "...".
    Non-strings are shown as str() of them."""
    text = value if isinstance(value, str) else str(value)
    cut = len(text) > limit
    if cut:
        text = text[:limit]
    if not (text.isprintable() and "\\" not in text):
        text = "".join(c if c.isprintable() and c != "\\" else escape_char(c) for c in text)
    return text + "..." if cut else text


def escape_strings(value, limit=DEFAULT_LIMIT):
    """A copy of parsed JSON with every string in it, keys too, passed through escape(): printing anything from it
    is then safe, whichever field a printer picks."""
    if isinstance(value, str):
        return escape(value, limit)
    if isinstance(value, list):
        return [escape_strings(v, limit) for v in value]
    if isinstance(value, dict):
        return {escape(k, limit): escape_strings(v, limit) for k, v in value.items()}
    return value


def plot_text(text):
    """Text for a matplotlib label or title, already escape()d: a "$" would start mathtext, which fails to parse
    (an exception at draw time) or renders something else than the log said."""
    return text.replace("$", "\\$")


def one_line(message, limit=4000):
    """A message composed elsewhere, as one printable line: every character escape() would escape but the backslash
    (parts already escape()d keep their single backslashes). The last guard before an error line reaches the
    terminal, for messages that quote what the user or a file gave."""
    text = message if isinstance(message, str) else str(message)
    if len(text) > limit:
        text = text[:limit] + "..."
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else escape_char(c) for c in text)
