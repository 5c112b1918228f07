"""arshim.sizes: sizes written by one tool are read back by another ("64K" in a configuration name, --max 4M)."""
import pytest

from arshim.sizes import human_bytes, parse_size, size_text

SIZES = [0, 1, 8, 1000, 1023, 1024, 1536, 4096, 64 << 10, (64 << 10) + 4, 1 << 20, 3 << 20, 1 << 30, 5 << 40,
         (1 << 63) - 1]


@pytest.mark.parametrize("n", SIZES)
def test_size_text_round_trip(n):
    assert parse_size(size_text(n)) == n


@pytest.mark.parametrize("n, text", [(0, "0"), (8, "8"), (1536, "1536"), (1024, "1K"), (64 << 10, "64K"),
                                     (1 << 20, "1M"), (1 << 30, "1G"), (2 << 40, "2T"), (3 << 20 | 1, "3145729")])
def test_size_text_is_the_shortest_exact_form(n, text):
    assert size_text(n) == text


@pytest.mark.parametrize("text, n", [("4096", 4096), ("64K", 65536), ("64k", 65536), ("64KiB", 65536),
                                     (" 4M ", 4 << 20), ("4mib", 4 << 20), ("1G", 1 << 30), ("2TiB", 2 << 40)])
def test_parse_size_units(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("text", ["", "K", "-1", "1.5M", "4 M", "64KB", "4X", "1e3", "٤K", "1" * 5000])
def test_parse_size_refuses_with_an_example(text):
    with pytest.raises(ValueError, match="is not a size; write e.g. 4096, 64K or 4M"):
        parse_size(text)


@pytest.mark.parametrize("n, text", [(0, "0 B"), (8, "8 B"), (1023, "1023 B"), (1024, "1.0 KiB"),
                                     (1536, "1.5 KiB"), (6.1 * (1 << 20), "6.1 MiB"), (1 << 50, "1.0 PiB"),
                                     (1 << 60, "1024.0 PiB")])
def test_human_bytes(n, text):
    assert human_bytes(n) == text


def test_human_bytes_whole_units():
    assert [human_bytes(n, places=0) for n in (8, 1024, 32 << 10, 1 << 20)] == ["8 B", "1 KiB", "32 KiB", "1 MiB"]
