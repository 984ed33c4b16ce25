"""How a delimited text file is written: its delimiter and decimal mark, sniffed from its first lines.

A ``.csv`` exported by a spreadsheet in a European locale is ``;``-separated with decimal commas
(``seed;acc`` / ``1;0,853``); a ``.tsv`` is sometimes comma-separated. The delimiter the suffix
promises is kept whenever the header line holds it; otherwise the most frequent of ``, ; TAB |``
in the header is used, and with a delimiter other than the comma, numbers written ``0,853``
(and none written ``0.853``) mean a decimal comma. Whatever differs from the suffix's promise is
said in a note, never silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

#: the delimiter each suffix promises
EXPECTED = {"csv": ",", "tsv": "\t"}
CANDIDATES = (",", ";", "\t", "|")
SNIFF_BYTES = 64 * 1024
_DECIMAL_COMMA = re.compile(r"^[-+]?\d+,\d+%?$")
_DECIMAL_POINT = re.compile(r"^[-+]?\d*\.\d+%?$")
_NAMES = {",": "','", ";": "';'", "\t": "a tab", "|": "'|'"}


@dataclass(frozen=True)
class Dialect:
    """``sep`` and ``decimal`` to read the file with, and the note to show when they are not the default."""

    sep: str
    decimal: str = "."
    note: str | None = None


def sniff(path: Path, fmt: str) -> Dialect:
    """The file's delimiter and decimal mark (the suffix's delimiter and a point unless the file says otherwise)."""
    expected = EXPECTED[fmt]
    try:
        with path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
            sample = handle.read(SNIFF_BYTES)
    except OSError:
        return Dialect(expected)
    lines = [line for line in sample.splitlines() if line.strip()]
    if not lines:
        return Dialect(expected)
    header = lines[0]
    sep = expected
    if expected not in header:
        counts = {c: header.count(c) for c in CANDIDATES}
        best = max(counts, key=counts.get)
        sep = best if counts[best] else expected
    fields = [f.strip().strip('"') for line in lines[1:50] for f in line.split(sep)]
    comma = sep != "," and any(_DECIMAL_COMMA.match(f) for f in fields) and not any(_DECIMAL_POINT.match(f) for f in fields)
    decimal = "," if comma else "."
    if sep == expected and decimal == ".":
        return Dialect(sep)
    said = f"{path}: read with {_NAMES[sep]} as the delimiter" + (" and ',' as the decimal mark" if comma else "")
    return Dialect(sep, decimal, said + " (detected from the file)")
