"""perfbase's raw_text output, byte for byte: each input of an output as a
block (a data title of the filters it shows, a header of its columns with
their units, then its rows), values as perfbase's Python 2 printed them.

A header line is "# " then "LABEL[UNIT]\\t" per column; a data title
"# " then "FILTER  " per filter, printed with the header and only when it
has a filter; both are printed again only when they change from the block
before.  A row is each value, a space and a tab ("4.4 \\t7.0 \\t"): the
softspace of Python 2's `print x, "\\t",`.  An input without rows prints
nothing (an output with no rows at all is empty)."""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass


@dataclass
class Block:
    """One input of a perfbase output: columns as (label, unit), the filter texts, the rows."""

    input: str
    params: list[tuple[str, str]]
    results: list[tuple[str, str]]
    filters: list[str]
    rows: list[tuple]


def py2str(x: object) -> str:
    """A value as Python 2's str() printed it: floats to 12 significant digits with ".0" on whole
    numbers (7.0, 1.1, 1e+20), None as None."""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        text = f"{x:.12g}"
        return text if any(ch in text for ch in ".e") else text + ".0"
    if isinstance(x, _dt.timedelta):  # perfbase's durations print as Python's timedelta
        return str(x)
    return str(x)


def _cell(value: object) -> str:
    """A value as `print >>f, value, "\t",` wrote it: Python 2's softspace puts a space before the tab,
    except after a string that ends in whitespace other than a space (a text ending in a newline)."""
    text = py2str(value)
    soft = not isinstance(value, str) or not text or not text[-1].isspace() or text[-1] == " "
    return text + (" " if soft else "") + "\t"


def header(block: Block) -> str:
    return "# " + "".join(f"{label}[{unit}]\t" for label, unit in block.params + block.results)


def data_title(block: Block) -> str:
    return "# " + "".join(f + "  " for f in block.filters)


def text(blocks: list[Block]) -> str:
    out: list[str] = []
    prev_header = prev_title = ""
    for b in blocks:
        if not b.rows:
            continue
        head, title = header(b), data_title(b)
        if head != prev_header or title != prev_title:
            if title != "# ":  # perfbase remembers a title only when it printed one
                out.append(title + "\n")
                prev_title = title
            out.append(head + "\n")
            prev_header = head
        out += ["".join(_cell(v) for v in row) + "\n" for row in b.rows]
    return "".join(out)


def unit_text(unit: str) -> str:
    """A unit as perfbase writes it: scaling symbol and base unit word (byte, us, Mbit/s, Kbyte)."""
    from psuite.errors import PsuiteError
    from psuite.psbase import units

    try:
        u = units.parse(unit)
    except PsuiteError:
        return unit

    def factor(f: units.Factor) -> str:
        prefix = "K" if f.scaling == "Kilo" else units.SCALINGS[f.scaling][0] if f.scaling else ""
        return prefix + f.base

    top = "*".join(factor(f) for f in u.dividend) or ("1" if u.divisor else "")
    return top + "".join("/" + factor(f) for f in u.divisor)
