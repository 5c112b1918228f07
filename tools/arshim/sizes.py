"""Byte counts as people write them: "4096", "64K", "64KiB", "4M" read in; "64K" (exact, for names and tables) or
"1.5 KiB" (rounded, for totals) written out. Binary units throughout: ARShim's buckets are powers of two."""

SHIFTS = (("T", 40), ("G", 30), ("M", 20), ("K", 10))
SUFFIXES = {"": 0, "K": 10, "KIB": 10, "M": 20, "MIB": 20, "G": 30, "GIB": 30, "T": 40, "TIB": 40}
# More digits than any byte count has: int() of a longer string is refused by Python anyway (int_max_str_digits).
MAX_DIGITS = 20


def parse_size(text):
    """Bytes from "4096", "64K", "64KiB", "4M", "1G" (any case); ValueError with the text and an example."""
    t = text.strip().upper()
    digits = t.rstrip("KMGTIB")
    unit = t[len(digits):]
    if not (digits.isascii() and digits.isdigit()) or len(digits) > MAX_DIGITS or unit not in SUFFIXES:
        raise ValueError(f"'{text}' is not a size; write e.g. 4096, 64K or 4M")
    return int(digits) << SUFFIXES[unit]


def size_text(n):
    """The shortest exact form: 0, 8, 4K, 1M, 3G (a count that is no whole number of KiB stays in bytes)."""
    for unit, shift in SHIFTS:
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def human_bytes(n, places=1):
    """A rounded amount for reading: 8 B, 1.5 KiB, 2.0 MiB (`places` digits after the point, bytes always whole)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.{places}f} {unit}"
        value /= 1024
