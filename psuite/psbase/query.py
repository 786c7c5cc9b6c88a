"""The short query form: one result against one or two parameters, the
runs with the same parameter values aggregated (perfbase's data-set
aggregation: mean and standard deviation over repetitions).

The database does the aggregation: one GROUP BY over the once-table (or,
for a multiple-occurrence variable, over the data-set table joined to its
run), with window functions for what SQLite lacks as aggregates: the
standard deviation is the square root of a sum of squared deviations from
the group's mean (two-pass, so it does not lose digits the way
sum(x^2) - sum(x)^2/n does), and the median the mean of the middle one or
two values by row number.  Both are the same SQL on SQLite and PostgreSQL.
Deleted runs are left out; a run without a value for the result is no data
point."""

from __future__ import annotations

import math
from dataclasses import dataclass

import sqlalchemy as sa

from psuite.errors import UsageError
from psuite.psbase.model import Definition, Variable, Version, convert
from psuite.psbase.result import Column, ResultTable
from psuite.psbase.store import RUN, Store, _from_db, _to_db

STATS = ("mean", "stddev", "count", "min", "max", "median")
DEFAULT_STATS = ("mean", "stddev", "count")
NUMERIC = ("integer", "float", "duration")
_ORDER_ONLY = ("count", "min", "max")  # the statistics any datatype has


@dataclass
class QueryResult:
    experiment: str
    result: Variable
    by: list[Variable]
    stats: list[str]
    rows: list[tuple]  # per group: the parameter values, then one value per statistic

    def table(self) -> ResultTable:
        """The result as the table every output reads: the parameters as
        keys, each statistic a value column, the standard deviation the
        error of the mean."""
        cols = [Column(p.name, p.unit, "key", label=p.synopsis, datatype=p.datatype) for p in self.by]
        r = self.result
        for s in self.stats:
            name = f"{r.name} {s}"
            if s == "stddev" and "mean" in self.stats:
                cols.append(Column(name, r.unit, "error", of=f"{r.name} mean", label=f"{r.synopsis or r.name} {s}"))
            else:
                cols.append(Column(name, "" if s == "count" else r.unit, "value",
                                   label=f"{r.synopsis or r.name} {s}",
                                   datatype="integer" if s == "count" else r.datatype))
        return ResultTable(f"{r.name} by {', '.join(p.name for p in self.by)}", cols, list(self.rows),
                           experiment=self.experiment)


def parse_where(items: list[str], d: Definition) -> dict[str, list[object]]:
    """--where NAME=VALUE items as typed values per variable; one name given
    several times means any of its values."""
    out: dict[str, list[object]] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--where {item!r}: write NAME=VALUE, e.g. --where ranks=4")
        v = _variable(d, name, "--where")
        out.setdefault(name, []).append(convert(v, text))
    return out


def parse_stats(text: str) -> list[str]:
    stats = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in stats if s not in STATS]
    if bad or not stats:
        raise UsageError(
            f"--stat {text!r}: {'unknown ' + ', '.join(bad) if bad else 'empty'}; "
            f"give a comma-separated list of {', '.join(STATS)}"
        )
    return list(dict.fromkeys(stats))


def _variable(d: Definition, name: str, what: str) -> Variable:
    for v in d.variables:
        if v.name == name:
            return v
    raise UsageError(
        f"{what} {name!r}: experiment {d.name!r} has no such variable; "
        f"its parameters: {', '.join(p.name for p in d.parameters) or 'none'}; "
        f"its results: {', '.join(r.name for r in d.results) or 'none'}"
    )


def run_query(
    store: Store,
    experiment: str,
    result: str,
    by: list[str],
    where: list[str] | None = None,
    stats: list[str] | None = None,
) -> QueryResult:
    """RESULT against the parameters BY, aggregated over runs with equal
    parameter values, as SQL computes it."""
    stats = list(stats or DEFAULT_STATS)
    with store.engine.connect() as conn:
        exp_id, d = store._run(lambda: store._experiment_id(conn, experiment))
        res = _variable(d, result, "result")
        if not res.is_result:
            raise UsageError(
                f"{result!r} is a parameter of {experiment}; give a result: "
                f"{', '.join(r.name for r in d.results) or 'none'}"
            )
        if not by:
            raise UsageError("give the parameter to aggregate by with --by PARAM")
        if len(by) > 2 or len(set(by)) != len(by):
            raise UsageError("--by takes one or two different parameters")
        params = []
        for name in by:
            p = _variable(d, name, "--by")
            if p.is_result:
                raise UsageError(
                    f"--by {name!r} is a result of {experiment}; give a parameter: "
                    f"{', '.join(x.name for x in d.parameters) or 'none'}"
                )
            params.append(p)
        if res.datatype not in NUMERIC:
            # booleans have no order in PostgreSQL (no min/max): they are counted only
            allowed = ("count",) if res.datatype == "boolean" else _ORDER_ONLY
            wrong = [s for s in stats if s not in allowed]
            if wrong:
                raise UsageError(
                    f"{result!r} is a {res.datatype} result: no {', '.join(wrong)}; give --stat {','.join(allowed)}"
                )
        filters = parse_where(where or [], d)
        source, col = from_clause(store, exp_id, d, [res.name, *by, *filters])
        conds = [col(res.name).is_not(None)]
        for name, values in filters.items():
            v = d.variable(name)
            conds.append(col(name).in_([_to_db(v, x) for x in values]))
        # data-set queries aggregate through the run column in two steps where they can (_two_step)
        dataset = any(d.variable(n).occurrence == "multiple" for n in [res.name, *by, *filters])
        run = store.runs.c.idx if dataset else None
        q = aggregate(source, conds, [col(n) for n in by], col(res.name), res.datatype in NUMERIC, stats, run)
        got = store._run(lambda: conn.execute(q).all())
    out = []
    for row in got:
        keys = [_from_db(p, x) for p, x in zip(params, row[: len(by)], strict=True)]
        raw = row[len(by) : len(by) + len(stats)]
        values = [
            stddev(x, row[-1]) if s == "stddev" else _stat_value(s, res, x) for s, x in zip(stats, raw, strict=True)
        ]
        out.append((*keys, *values))
    if any(p.datatype == "version" for p in params):  # SQL sorted them as text: "1.10" before "1.9"
        out.sort(key=lambda row: sort_key(row[: len(params)]))
    return QueryResult(experiment, res, params, stats, out)


def sort_key(values: tuple) -> tuple:
    """The order of a row's key values: versions part by part as numbers
    (Version.key), everything else as it compares; an empty value last."""
    return tuple((x is None, x.key() if isinstance(x, Version) else x if x is not None else 0) for x in values)


def from_clause(store: Store, exp_id: int, d: Definition, names: list[str]):
    """The tables a query over the variables `names` reads (the once-table,
    joined to the data-set table if one of them occurs multiple times, and
    to the runs that are not deleted), and a function giving a variable's
    column."""
    once, rows = store._tables(exp_id, d)
    r = store.runs
    if any(d.variable(n).occurrence == "multiple" for n in names):
        source = rows.join(once, once.c[RUN] == rows.c[RUN])
    else:
        source = once
    source = source.join(r, sa.and_(r.c.idx == once.c[RUN], r.c.experiment == exp_id, r.c.deleted.is_(False)))

    def col(name: str) -> sa.ColumnElement:
        return (rows if d.variable(name).occurrence == "multiple" else once).c[name]

    return source, col


def aggregate(
    source,
    conds,
    keys: list[sa.ColumnElement],
    value: sa.ColumnElement,
    numeric: bool,
    stats: list[str],
    run: sa.ColumnElement | None = None,
) -> sa.Select:
    """SELECT keys, statistics ... GROUP BY keys: an inner select adds each
    row's group mean, rank within its group and group size (windows), the
    outer one aggregates.  A data-set query (run: the run column) with
    statistics that combine from partial ones is done in two steps instead
    (_two_step)."""
    x = sa.cast(value, sa.Float(precision=53)) if numeric else value
    if run is not None and set(stats) <= set(_PARTIAL):
        return _two_step(source, conds, keys, x, stats, run)
    cols = [k.label(f"k{i}") for i, k in enumerate(keys)]
    part = list(keys)
    extra = [x.label("x")]
    if "stddev" in stats:
        extra.append(sa.func.avg(x).over(partition_by=part).label("gm"))
    if "median" in stats:
        extra += [
            sa.func.row_number().over(partition_by=part, order_by=x).label("rn"),
            sa.func.count().over(partition_by=part).label("n"),
        ]
    inner = sa.select(*cols, *extra).select_from(source).where(*conds).subquery()
    gk = [inner.c[f"k{i}"] for i in range(len(keys))]
    xi = inner.c.x
    agg = {
        "mean": lambda: sa.func.avg(xi),
        "count": lambda: sa.func.count(xi),
        "sum": lambda: sa.func.sum(xi),
        "min": lambda: sa.func.min(xi),
        "max": lambda: sa.func.max(xi),
        # sum of squared deviations and n: the square root is taken in Python (SQLite has no sqrt)
        "stddev": lambda: sa.func.sum((xi - inner.c.gm) * (xi - inner.c.gm)),
        # the middle value (odd n) or the two middle ones (even n): 2*rn in [n, n+2]
        "median": lambda: sa.func.avg(
            sa.case((sa.and_(2 * inner.c.rn >= inner.c.n, 2 * inner.c.rn <= inner.c.n + 2), xi))
        ),
    }
    sel = [agg[s]().label(s) for s in stats]
    if "stddev" in stats:
        sel.append(sa.func.count(xi).label("stddev_n"))
    return sa.select(*gk, *sel).group_by(*gk).order_by(*(k.asc().nulls_last() for k in gk))


# per (run, keys) partial aggregate, and how the partials combine per keys
_PARTIAL = {
    "mean": (("s", sa.func.sum), ("n", sa.func.count)),
    "count": (("n", sa.func.count),),
    "min": (("mn", sa.func.min),),
    "max": (("mx", sa.func.max),),
}


def _two_step(source, conds, keys: list[sa.ColumnElement], x: sa.ColumnElement, stats: list[str], run) -> sa.Select:
    """Sums, counts, minima and maxima per (run, keys) first, then per keys.
    SQLite aggregates by sorting: one GROUP BY over all data-set rows sorts
    them all, while the first step here streams through the store's index of
    the data set by run (Store: the data-set table's covering index), one
    run after another, and leaves a few groups per run to sort.  The
    standard deviation (two passes over the rows, for its digits) and the
    median (every value in order) have no such partial form and stay with
    the one-step query."""
    parts = {name: fn(x).label(name) for s in stats for name, fn in _PARTIAL[s]}
    per = (
        sa.select(*(k.label(f"k{i}") for i, k in enumerate(keys)), *parts.values())
        .select_from(source)
        .where(*conds)
        .group_by(run, *keys)
        .subquery()
    )
    gk = [per.c[f"k{i}"] for i in range(len(keys))]
    n = sa.cast(sa.func.sum(per.c.n), sa.Float(precision=53)) if "n" in parts else None
    agg = {
        "mean": lambda: sa.func.sum(per.c.s) / n,
        "count": lambda: sa.func.sum(per.c.n),
        "min": lambda: sa.func.min(per.c.mn),
        "max": lambda: sa.func.max(per.c.mx),
    }
    return (
        sa.select(*gk, *(agg[s]().label(s) for s in stats))
        .group_by(*gk)
        .order_by(*(k.asc().nulls_last() for k in gk))
    )


def _stat_value(stat: str, res: Variable, x: object) -> object:
    if x is None:
        return None
    if stat == "count":
        return int(x)
    if stat in ("min", "max"):
        return _from_db(res, x) if res.datatype not in NUMERIC else float(x) if res.datatype != "integer" else int(x)
    return float(x)


def render(q: QueryResult, fmt: str) -> str:
    """The result as a text table, CSV or JSON (see psuite.psbase.output)."""
    from psuite.psbase import output

    return output.render(q.table(), fmt)


def stddev(sum_squares: float | None, n: int) -> float | None:
    """The sample standard deviation from the sum of squared deviations."""
    if sum_squares is None or n < 2:
        return None
    return math.sqrt(max(sum_squares, 0.0) / (n - 1))
