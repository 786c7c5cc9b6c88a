"""perfbase's xml output, byte for byte: <output>, then per input with rows a
<data> of its filters and one <dataset> per row, a <value name="LABEL"
unit="UNIT"> per column (unit= only where it has one), values as perfbase's
Python 2 printed them.  perfbase stops at the first input without rows.

perfbase writes the text as it is, without escaping: so does this (a value
with "<" or "&" gives the same ill-formed XML perfbase's did)."""

from __future__ import annotations

from psuite.psbase.output.perfbase_text import Block, py2str


def text(blocks: list[Block]) -> str:
    out = ["<output>\n"]
    for b in blocks:
        if not b.rows:  # perfbase's xml_output ends its loop at an input without rows
            break
        out.append("  <data>\n")
        out += [f"    <filter>{f}</filter>\n" for f in b.filters]
        for row in b.rows:
            out.append("    <dataset>\n")
            for (label, unit), value in zip(b.params + b.results, row, strict=True):
                where = f' unit="{unit}"' if unit else ""
                out.append(f'      <value name="{label}"{where}>{py2str(value)}</value>\n')
            out.append("    </dataset>\n")
        out.append("  </data>\n")
    out.append("</output>\n")
    return "".join(out)
