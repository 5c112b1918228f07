#!/usr/bin/env python3
"""Embeds a text file in a C++ source as a raw string, byte for byte.

Usage: embed_text.py INPUT OUTPUT NAMESPACE SYMBOL

Defines `extern const char SYMBOL[]` (NUL-terminated) and `extern const std::size_t SYMBOL + "Size"` (its length
without the NUL) in NAMESPACE. Used for policy/default.toml, so the compiled-in table cannot drift from the file.
"""
import sys


def main() -> int:
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    source, output, namespace, symbol = sys.argv[1:]
    with open(source, 'rb') as f:
        data = f.read()
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as e:
        print(f'{source}: not UTF-8 ({e})', file=sys.stderr)
        return 1
    delimiter = 'ARSHIM_EMBED'
    if ')' + delimiter + '"' in text or '\r' in text or '\0' in text:
        print(f'{source}: contains the raw-string delimiter, a CR or a NUL; cannot embed', file=sys.stderr)
        return 1
    with open(output, 'w', encoding='utf-8', newline='\n') as f:
        f.write(f'// Generated from {source} by embed_text.py: do not edit.\n')
        f.write('#include <cstddef>\n\n')
        f.write(f'namespace {namespace} {{\n')
        f.write(f'extern const char {symbol}[];\n')
        f.write(f'extern const std::size_t {symbol}Size;\n')
        f.write(f'const char {symbol}[] = R"{delimiter}({text}){delimiter}";\n')
        f.write(f'const std::size_t {symbol}Size = sizeof {symbol} - 1;\n')
        f.write(f'}}  // namespace {namespace}\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
