"""A ResultTable as text: an aligned table (units in the header, notes
first as '# ' lines), CSV (the column names as header, floats exact), or
JSON (the columns with their units, labels and roles, then the rows as
objects keyed by column name)."""

from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import math

from psuite.psbase.result import ResultTable


def text(table: ResultTable) -> str:
    header = [f"{c.name} [{c.unit}]" if c.unit else c.name for c in table.columns]
    rows = [["" if v is None else value_text(v) for v in row] for row in table.rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = [f"# {n}" for n in table.notes]
    lines.append("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines) + "\n"


def value_text(value: object) -> str:
    """A value as every psbase text shows it (tables, chart ticks, ls, info)."""
    if isinstance(value, float):  # whole numbers as such; others to 12 significant digits
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.12g}"
    return str(value)


def csv_text(table: ResultTable) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([c.name for c in table.columns])
    # repr: a float read back is the float written
    w.writerows([["" if v is None else repr(v) if isinstance(v, float) else str(v) for v in row]
                 for row in table.rows])
    return buf.getvalue()


def json_text(table: ResultTable) -> str:
    doc = {
        "title": table.title,
        "experiment": table.experiment,
        "notes": list(table.notes),
        "columns": [
            {"name": c.name, "role": c.role, "unit": c.unit, "label": c.label or c.name, "datatype": c.datatype,
             **({"of": c.of} if c.of else {})}
            for c in table.columns
        ],
        "rows": [{c.name: json_value(v) for c, v in zip(table.columns, row, strict=True)} for row in table.rows],
    }
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"


def json_value(v: object) -> object:
    """Numbers as numbers (durations in seconds, no value or not finite:
    null), dates and times in ISO 8601, anything else as its text."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, _dt.timedelta):
        return v.total_seconds()
    if isinstance(v, (_dt.date, _dt.time)):
        return v.isoformat()
    return str(v)
