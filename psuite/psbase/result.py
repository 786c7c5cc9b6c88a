"""A query's result as one table: what every psbase query (the short form
and query files) produces and every output (text, CSV, JSON, gnuplot,
plots, HTML) consumes, so that queries and outputs are written once each.

Columns have a role: "key" columns are the parameter values a row stands
for (the x axis of a plot, the groups of a bar chart), "value" columns
the results (one line or one set of bars each), and "error" columns the
spread of one value column (named by `of`; drawn as error bars)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from psuite.errors import InputError, PsuiteError

ROLES = ("key", "value", "error")


@dataclass
class Column:
    name: str  # the header, e.g. "chunk_size" or "bandwidth mean"
    unit: str = ""  # printed form, e.g. "MB/s"; "" when the values have none
    role: str = "value"  # one of ROLES
    of: str | None = None  # role "error": the name of the value column it belongs to
    label: str = ""  # a longer label for axes and legends (the variable's synopsis); "" means the name
    datatype: str = "float"  # the psbase datatype of the values (model.DATATYPES)
    statistic: str = ""  # what the values are of the result ("mean", "count", ...): charts keep counts apart
    pb: str = ""  # perfbase's label of the column (e.g. "avg(r)"), for perfbase's outputs; "" means the name
    pb_unit: str | None = None  # perfbase's unit of the column where it differs from unit (e.g. "us/us")
    pb_filters: tuple[str, ...] = ()  # the filters perfbase shows with the column (e.g. "MPI_version = '1.2'")
    pb_synopsis: str | None = None  # perfbase's synopsis of the column (its plots' axis label); None: label

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"column role {self.role!r} is not one of {ROLES}")
        if (self.role == "error") != (self.of is not None):
            raise ValueError("an error column names the value column it belongs to (of=), and only it does")


@dataclass
class ResultTable:
    """Rows of typed values, one per column (None: no value)."""

    title: str
    columns: list[Column]
    rows: list[tuple] = field(default_factory=list)
    experiment: str = ""
    notes: list[str] = field(default_factory=list)  # e.g. the sources and filters, printed with the table
    empty_ok: bool = False  # no rows is a table (a query file's output, as perfbase writes it), not an error
    pb_blocks: list | None = None  # perfbase's outputs: each input's block (output.perfbase_text.Block)
    pb_spec: object = None  # perfbase's gnuplot output: what its <output> asks (output.perfbase_gnuplot.Spec)

    def column(self, name: str) -> int:
        for i, c in enumerate(self.columns):
            if c.name == name:
                return i
        raise KeyError(name)

    def keys(self) -> list[Column]:
        return [c for c in self.columns if c.role == "key"]

    def values(self) -> list[Column]:
        return [c for c in self.columns if c.role == "value"]

    def error_of(self, value: str) -> Column | None:
        return next((c for c in self.columns if c.role == "error" and c.of == value), None)

    def converted(self, unit: str) -> ResultTable:
        """The table with every value and error column whose unit measures
        the same quantity as `unit` converted to it (MB/s -> GB/s); other
        columns (counts, percentages, other quantities) stay as they are.
        InputError when no column converts."""
        from psuite.psbase import units

        target = units.normalize(unit)
        factors: dict[int, float] = {}
        for i, c in enumerate(self.columns):
            if c.role == "key" or not c.unit:
                continue
            try:
                factors[i] = units.conversion(c.unit, target)
            except PsuiteError:  # another quantity, or a unit made by an operator ("(MB/s)^2", "%")
                continue
        if not factors:
            have = sorted({c.unit for c in self.columns if c.role != "key" and c.unit})
            raise InputError(
                f"--unit {unit!r}: no result of this query is in a unit convertible to it "
                f"(its units: {', '.join(have) or 'none'}); give one of the same kind"
            )
        cols = [replace(c, unit=target, datatype="float") if i in factors else c for i, c in enumerate(self.columns)]
        rows = [
            tuple(x * factors[i] if i in factors and x is not None else x for i, x in enumerate(row))
            for row in self.rows
        ]
        return replace(self, columns=cols, rows=rows, notes=list(self.notes))
