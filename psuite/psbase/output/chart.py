"""What a chart of a ResultTable shows, decided once for every plotting
output (matplotlib, plotly, gnuplot): bar or line, the x values or groups,
one series per value column (times each value of the other keys), error
bars from the error columns, and the axis labels with their units.

The first key column is the x axis (a line plot) or the groups (a bar
chart); further keys split the series ("compiler = gcc").  One y axis has
one unit: value columns whose unit differs from the first numeric value
column's (the count beside a mean in seconds; a count beside any other
statistic, even a unit-less one), and values that are not
numbers (the minimum of a string), are not drawn; Chart.left_out names
them.  Texts are plain: each plotter escapes what its library would
interpret (matplotlib's $...$, plotly's HTML, gnuplot's quotes)."""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass, field

from psuite.errors import UsageError
from psuite.psbase.output.tables import value_text
from psuite.psbase.result import Column, ResultTable

KINDS = ("auto", "bar", "line")
NUMERIC = ("integer", "float", "duration")


@dataclass
class Series:
    label: str  # the legend entry
    xs: list  # line: numbers; bar: group indexes into Chart.groups
    ys: list[float]  # nan: no value
    errs: list[float] | None  # None: no error column; nan: no error for that point


@dataclass
class Chart:
    kind: str  # "bar" or "line"
    title: str
    xlabel: str
    ylabel: str
    series: list[Series]
    groups: list[str] = field(default_factory=list)  # bar: the group labels, in order
    legend_title: str = ""
    notes: list[str] = field(default_factory=list)  # the table's (its sources and filters)
    xlog: int = 0  # line: the base of a logarithmic x axis (2 or 10), 0 for a linear one
    left_out: list[str] = field(default_factory=list)  # value columns not drawn (another unit, not numbers)
    # line over an integer key (ranks 1, 2, 4): ticks at whole numbers only, never 1.5
    xint: bool = False
    xticks: list[float] = field(default_factory=list)  # xint, linear: the x values themselves (few); else none

    @property
    def has_errors(self) -> bool:
        return any(s.errs is not None for s in self.series)


def check_table(table: ResultTable, text: bool = False) -> None:
    """A table an output can show: rows (a text table of a query file's output
    may have none) and at least one value column."""
    if not table.values():
        raise UsageError(f"{_name(table)} has no value column: nothing to show; query a result")
    if not table.rows and not (text and table.empty_ok):
        raise UsageError(f"{_name(table)} has no rows: no run matches; check the experiment and the filters "
                         "(psbase ls EXPERIMENT lists its runs)")


def _name(table: ResultTable) -> str:
    return f"the query result {table.title!r}" if table.title else "the query result"


def axis_label(col: Column) -> str:
    """'label [unit]': the variable's synopsis (or its name) and unit."""
    text = col.label or col.name
    return f"{text} [{col.unit}]" if col.unit else text


def text(value: object) -> str:
    """A value as a tick or legend text: floats to 12 significant digits."""
    return "(none)" if value is None else value_text(value)


def number(value: object) -> float:
    """A plottable number; nan for no value (None, a non-number, infinity)."""
    if isinstance(value, bool) or value is None:
        return math.nan
    if isinstance(value, (int, float)):
        x = float(value)
    elif isinstance(value, _dt.timedelta):
        x = value.total_seconds()
    else:
        return math.nan
    return x if math.isfinite(x) else math.nan


def _numeric(col: Column, values: list) -> bool:
    present = [v for v in values if v is not None]
    return col.datatype in NUMERIC and bool(present) and \
        all(isinstance(v, (int, float, _dt.timedelta)) and not isinstance(v, bool) for v in present)


def choose_kind(table: ResultTable, kind: str = "auto") -> str:
    """"line" for a numeric first key with more than two distinct values,
    else "bar" (for kind "auto"); a line asked of a non-numeric key is an
    error."""
    if kind not in KINDS:
        raise UsageError(f"plot kind {kind!r} is not one of {', '.join(KINDS)}")
    keys = table.keys()
    if not keys:
        if kind == "line":
            raise UsageError("a line plot needs a parameter (key column) for its x axis; use --plot bar")
        return "bar"
    i = table.column(keys[0].name)
    xs = [r[i] for r in table.rows]
    numeric = _numeric(keys[0], xs)
    if kind == "line":
        if not numeric:
            raise UsageError(f"a line plot needs a numeric x axis, and {keys[0].name!r} is a {keys[0].datatype}; "
                             "use --plot bar")
        return "line"
    if kind == "bar":
        return "bar"
    return "line" if numeric and len({v for v in xs if v is not None}) > 2 else "bar"


def chart(table: ResultTable, kind: str = "auto") -> Chart:
    """The chart of a table (see the module's description)."""
    check_table(table)
    kind = choose_kind(table, kind)
    keys = table.keys()
    values = [c for c in table.values() if c.datatype in NUMERIC]
    if not values:
        raise UsageError(f"{_name(table)} has no numeric value to plot ({', '.join(c.name for c in table.values())}"
                         "); write it as text, csv or json")
    # one axis, one quantity: the first value's unit, and counts only beside counts
    # (a unit-less result's count would share its axis with the result otherwise)
    unit, counts = values[0].unit, values[0].statistic == "count"
    drawn = [c for c in values if c.unit == unit and (c.statistic == "count") == counts]
    left_out = [c.name for c in table.values() if c not in drawn]
    idx = {c.name: table.column(c.name) for c in table.columns}
    x, split = (keys[0], keys[1:]) if keys else (None, [])

    # the groups (bar) and the split values, in the order the rows give them
    groups: dict[object, int] = {}
    splits: dict[tuple, list[tuple[int, tuple]]] = {}  # the split's values -> its (row number, row)
    for n, r in enumerate(table.rows):
        g = r[idx[x.name]] if x else n + 1
        if kind == "bar":
            groups.setdefault(g, len(groups))
        splits.setdefault(tuple(r[idx[k.name]] for k in split), []).append((n, r))

    series: list[Series] = []
    for s, rows in splits.items():
        for c in drawn:
            err = table.error_of(c.name)
            xs: list = []
            ys: list[float] = []
            es: list[float] = []
            for n, r in rows:
                if kind == "line":
                    xv = number(r[idx[x.name]])
                    if math.isnan(xv):
                        continue  # no place on the x axis
                    xs.append(xv)
                else:
                    xs.append(groups[r[idx[x.name]] if x else n + 1])
                ys.append(number(r[idx[c.name]]))
                es.append(abs(number(r[idx[err.name]])) if err else math.nan)  # a spread: its size
            parts = [", ".join(f"{k.label or k.name} = {text(v)}{' ' + k.unit if k.unit else ''}"
                               for k, v in zip(split, s, strict=True))] if split else []
            label = c.label or c.name
            if parts:  # one value: the legend's title names the keys, its entries their values
                label = ", ".join(text(v) + (f" {k.unit}" if k.unit else "") for k, v in zip(split, s, strict=True)) \
                    if len(drawn) == 1 else f"{label}, {parts[0]}"
            if kind == "line":  # drawn left to right
                order = sorted(range(len(xs)), key=xs.__getitem__)
                xs, ys, es = [xs[i] for i in order], [ys[i] for i in order], [es[i] for i in order]
            series.append(Series(label, xs, ys, es if err else None))

    xs_all = sorted({v for s in series for v in s.xs}) if kind == "line" else []
    xlog = _log_base(xs_all) if kind == "line" else 0
    xint = kind == "line" and x is not None and x.datatype == "integer"
    title = f"{table.experiment}: {table.title}" if table.experiment and table.title else \
        table.title or table.experiment
    return Chart(
        kind=kind,
        title=title,
        xlabel=axis_label(x) if x else "row",
        ylabel=_ylabel(drawn),
        series=series,
        groups=[text(g) for g in groups] if x else [str(g) for g in groups],
        legend_title=", ".join(k.label or k.name for k in split) if split and len(drawn) == 1 else "",
        left_out=left_out,
        notes=list(table.notes),
        xlog=xlog,
        xint=xint,
        xticks=_value_ticks(xs_all) if xint and not xlog else [],
    )


def _log_base(xs: list[float]) -> int:
    """A logarithmic x axis for positive values spanning more than two
    decades (chunk sizes, message sizes): base 2 when they are all powers
    of two, else 10."""
    if not xs or min(xs) <= 0 or max(xs) / min(xs) <= 100:
        return 0
    return 2 if all(math.log2(x).is_integer() for x in xs) else 10


def _value_ticks(xs: list[float], most: int = 10) -> list[float]:
    """The distinct x values as the ticks of a linear axis when they are
    few and apart (no gap below 1/14 of their span: their labels would
    touch); else none (a plotter places whole-number ticks itself)."""
    if not xs or len(xs) > most:
        return []
    gap = (xs[-1] - xs[0]) / 14
    return xs if all(b - a >= gap for a, b in zip(xs, xs[1:], strict=False)) else []


def integer_step(lo: float, hi: float, ticks: int = 8) -> int:
    """A whole tick step (1, 2 or 5 times a power of ten, at least 1) that
    puts at most about `ticks` ticks between lo and hi."""
    step = 1
    while (hi - lo) / step > ticks:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    return step


# words that join others ("bandwidth for write"): the words the labels share say
# nothing more for ending (a prefix) or starting (a suffix) with one
_JOINERS = frozenset(
    "a an and as at by for from in into of on or over per the to versus vs vs. with within without - : ,".split()
)


def _ylabel(cols: list[Column]) -> str:
    """The one value's label, or the whole words the values' labels share
    at their start ("time" for "time mean" and "time max"; "weighted
    average bandwidth" for "weighted average bandwidth for write" and "...
    for read") or else at their end ("rel. difference" for "read (rel.
    difference)" and "write (rel. difference)"; not a qualifier like "of
    the file"), without the joining words at the cut; else "value"; with
    the unit."""
    if len(cols) == 1:
        return axis_label(cols[0])
    words = [(c.label or c.name).split() for c in cols]
    prefix = _common(words)
    while prefix and _bare(prefix[-1]).lower() in _JOINERS | {""}:
        prefix.pop()
    suffix = _common([w[::-1] for w in words])[::-1]
    if suffix and _bare(suffix[0]).lower() in _JOINERS | {""}:
        suffix = []  # "of the file" qualifies the values ("read of the file"); it names no quantity
    text_ = " ".join(prefix).rstrip(",:;-(") or " ".join(suffix).strip("()") or "value"
    return f"{text_} [{cols[0].unit}]" if cols[0].unit else text_


def _bare(word: str) -> str:
    """A word without the punctuation around it ("(for" -> "for")."""
    return word.strip("()[],:;")


def _common(words: list[list[str]]) -> list[str]:
    out: list[str] = []
    for ws in zip(*words, strict=False):
        if len(set(ws)) != 1:
            break
        out.append(ws[0])
    return out
