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
from sqlalchemy.sql import visitors
from sqlalchemy.sql.util import ClauseAdapter

from psuite.errors import UsageError
from psuite.psbase.model import Definition, Variable, Version, convert
from psuite.psbase.result import Column, ResultTable
from psuite.psbase.store import RUN, Store, from_db, to_db

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
                                   datatype="integer" if s == "count" else r.datatype, statistic=s))
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
            allowed = allowed_stats(res.datatype)
            wrong = [s for s in stats if s not in allowed]
            if wrong:
                raise UsageError(
                    f"{result!r} is a {res.datatype} result: no {', '.join(wrong)}; give --stat {','.join(allowed)}"
                )
        filters = parse_where(where or [], d)
        source, col, run = from_clause(store, exp_id, d, [res.name, *by, *filters])
        conds = [col(res.name).is_not(None)]
        for name, values in filters.items():
            v = d.variable(name)
            conds.append(col(name).in_([to_db(v, x) for x in values]))
        q = aggregate(source, conds, [col(n) for n in by], col(res.name), res.datatype in NUMERIC, stats, run,
                      store.engine.dialect.name)
        got = store._run(lambda: conn.execute(q).all())
    out = []
    for row in got:
        keys = [from_db(p, x) for p, x in zip(params, row[: len(by)], strict=True)]
        raw = row[len(by) : len(by) + len(stats)]
        values = [
            stddev(x, row[-1]) if s == "stddev" else _stat_value(s, res, x) for s, x in zip(stats, raw, strict=True)
        ]
        out.append((*keys, *values))
    if any(p.datatype == "version" for p in params):  # SQL sorted them as text: "1.10" before "1.9"
        out.sort(key=lambda row: sort_key(row[: len(params)]))
    return QueryResult(experiment, res, params, stats, out)


def allowed_stats(datatype: str) -> tuple[str, ...]:
    """The statistics a result of a non-numeric datatype has: count, and
    min and max where it has an order (booleans have none in PostgreSQL)."""
    return ("count",) if datatype == "boolean" else _ORDER_ONLY


def sort_key(values: tuple) -> tuple:
    """The order of a row's key values: versions part by part as numbers
    (Version.key), everything else as it compares; an empty value last."""
    return tuple((x is None, x.key() if isinstance(x, Version) else x if x is not None else 0) for x in values)


def from_clause(store: Store, exp_id: int, d: Definition, names: list[str]):
    """The tables a query over the variables `names` reads (the once-table,
    joined to the data-set table if one of them occurs multiple times, and
    to the runs that are not deleted), a function giving a variable's
    column, and the run column a data-set query aggregates through in two
    steps (aggregate's run; None when no data set is read)."""
    once, rows = store._tables(exp_id, d)
    store._dataset_index(exp_id, d, rows)  # the index the archive has, in rows.indexes (_per_run_spread reads it)
    r = store.runs
    dataset = any(d.variable(n).occurrence == "multiple" for n in names)
    source = rows.join(once, once.c[RUN] == rows.c[RUN]) if dataset else once
    source = source.join(r, sa.and_(r.c.idx == once.c[RUN], r.c.experiment == exp_id, r.c.deleted.is_(False)))

    def col(name: str) -> sa.ColumnElement:
        return (rows if d.variable(name).occurrence == "multiple" else once).c[name]

    return source, col, (r.c.idx if dataset else None)


def aggregate(
    source,
    conds,
    keys: list[sa.ColumnElement],
    value: sa.ColumnElement,
    numeric: bool,
    stats: list[str],
    run: sa.ColumnElement | None = None,
    dialect: str = "sqlite",
) -> sa.Select:
    """SELECT keys, statistics ... GROUP BY keys: an inner select adds each
    row's group mean, rank within its group and group size (windows), the
    outer one aggregates.  A data-set query (run: the run column) with
    statistics that combine from partial ones is done in two steps instead
    (_two_step).  dialect: the database's (store.engine.dialect.name), for
    the form of the standard deviation's first step."""
    x = sa.cast(value, sa.Float(precision=53)) if numeric else value
    if run is not None and set(stats) <= {*_PARTIAL, "stddev"}:
        two = _two_step(source, conds, keys, value, x, stats, run, dialect)
        if two is not None:
            return two
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


def _two_step(
    source,
    conds,
    keys: list[sa.ColumnElement],
    value: sa.ColumnElement,
    x: sa.ColumnElement,
    stats: list[str],
    run,
    dialect: str,
) -> sa.Select | None:
    """Partial statistics per (run, keys) first, then combined per keys.
    SQLite aggregates by sorting: one GROUP BY over all data-set rows sorts
    them all, while the first step here streams through the store's index of
    the data set by run (Store: the data-set table's covering index), one
    run after another, and leaves a few groups per run to sort.  When the
    result and every condition on the data set are columns of the data-set
    table, the first step reads that table alone (an index scan with no
    join per row: 1.7 times faster measured on SQLite) and the runs' own
    columns and conditions join its groups; the standard deviation is then
    combined too, from each group's count, mean and sum of squared
    deviations (Chan et al.'s pairwise update, as stable as two passes).
    None when the statistics have no partial form here (the median, or the
    standard deviation without the split): the one-step query does them."""
    data = value.table if isinstance(value, sa.Column) else None
    inner_conds = [c for c in conds if _tables(c) == {data}]
    outer_conds = [c for c in conds if data not in _tables(c)]
    inner_keys = [k for k in keys if _tables(k) == {data}]
    if data is not None and RUN in data.c and len(inner_conds) + len(outer_conds) == len(conds) and all(
        data not in _tables(k) for k in keys if k not in inner_keys
    ):
        return _split_two_step(source, data, inner_conds, outer_conds, keys, inner_keys, value, x, stats, dialect)
    if not set(stats) <= set(_PARTIAL):
        return None
    parts = {name: fn(x).label(name) for s in stats for name, fn in _PARTIAL[s]}
    per = (
        sa.select(*(k.label(f"k{i}") for i, k in enumerate(keys)), *parts.values())
        .select_from(source)
        .where(*conds)
        .group_by(run, *keys)
        .subquery()
    )
    return _combine(per, len(keys), stats)


def _split_two_step(source, data, inner_conds, outer_conds, keys, inner_keys, value, x, stats, dialect) -> sa.Select:
    """The first step over the data-set table alone, grouped by its run
    column and the data-set keys; the source's other tables joined to it."""
    want = [*stats, "mean"] if "stddev" in stats else stats  # the spread combines through the means
    parts = {name: fn for s in want if s != "stddev" for name, fn in _PARTIAL[s]}
    by = [data.c[RUN], *inner_keys]
    if "stddev" not in stats:
        cols = [(fn(value) if name == "n" else fn(x)).label(name) for name, fn in parts.items()]
        per_run = sa.select(*by, *cols).where(*inner_conds).group_by(*by).subquery("per_run")
    else:
        per_run = _per_run_spread(data, inner_conds, by, x, parts, dialect)
    adapt = ClauseAdapter(per_run)  # the data-set table's columns become per_run's
    names = [*parts, "m2"] if "stddev" in stats else list(parts)
    per = (
        sa.select(*(adapt.traverse(k).label(f"k{i}") for i, k in enumerate(keys)),
                  *(per_run.c[name].label(name) for name in names))
        .select_from(adapt.traverse(source))
        .where(*outer_conds)
        .subquery()
    )
    return _combine(per, len(keys), stats)


def _per_run_spread(data, inner_conds, by, x, parts, dialect: str):
    """Each (run, data-set keys) group's partials with its sum of squared
    deviations from its own mean (m2), in one of three forms, each as stable
    as two passes (deviations from the group's mean, never sum(x*x)):
      - PostgreSQL: var_samp per group (Youngs and Cramer's update);
      - SQLite, when the keys are the index's columns after the run: the
        means per group first, then each group's deviations by a search of
        the covering index (psb_run, keys): two ordered passes instead of
        a window's buffered partitions (bench/psbase.py's query with the
        standard deviation: 8.6 s before, 4.3 s after on a loaded machine);
      - otherwise the group's mean beside each row (a window)."""
    names = {c.name for c in by}
    if dialect == "postgresql":
        # var_samp is NULL for one value, whose deviation is 0
        m2 = sa.func.coalesce(sa.func.var_samp(x) * (sa.func.count(x) - 1), 0.0)
        cols = [fn(x).label(name) for name, fn in parts.items()]
        return sa.select(*by, *cols, m2.label("m2")).where(*inner_conds).group_by(*by).subquery("per_run")
    if any({c.name for c in list(ix.columns)[: len(by)]} == names for ix in data.indexes):
        cols = [fn(x).label(name) for name, fn in parts.items()]
        groups = sa.select(*by, *cols).where(*inner_conds).group_by(*by).subquery("groups")
        row = data.alias("row")
        in_row = ClauseAdapter(row)
        mean = groups.c.s / sa.cast(groups.c.n, sa.Float(precision=53))
        dev = in_row.traverse(x) - mean
        m2 = (
            sa.select(sa.func.sum(dev * dev))
            .where(in_row.traverse(by[0]) == groups.c[RUN])
            .where(*(in_row.traverse(c).is_not_distinct_from(groups.c[c.name]) for c in by[1:]))  # SQLite: IS
            .where(*(in_row.traverse(c) for c in inner_conds))
            .scalar_subquery()
        )
        return sa.select(*groups.c, m2.label("m2")).subquery("per_run")
    # each row with its (run, keys) group's mean: the deviations of the first step
    rows = sa.select(*by, x.label("x"), sa.func.avg(x).over(partition_by=by).label("gm")).where(*inner_conds)
    rows = rows.subquery("rows")
    adapt_rows = ClauseAdapter(rows)
    by = [adapt_rows.traverse(c) for c in by]
    cols = [fn(rows.c.x).label(name) for name, fn in parts.items()]
    cols.append(sa.func.sum((rows.c.x - rows.c.gm) * (rows.c.x - rows.c.gm)).label("m2"))
    return sa.select(*by, *cols).group_by(*by).subquery("per_run")


def _combine(per, nkeys: int, stats: list[str]) -> sa.Select:
    """Partials per (run, keys) in `per` combined per keys.  The standard
    deviation's sum of squared deviations: the groups' own (m2) plus each
    group's count times its mean's squared deviation from the keys' mean
    (a window over the partials, few rows), with its count as stddev_n."""
    gk = [per.c[f"k{i}"] for i in range(nkeys)]
    if "stddev" in stats:
        n_all = sa.cast(sa.func.sum(per.c.n).over(partition_by=gk), sa.Float(precision=53))
        mean_all = sa.func.sum(per.c.s).over(partition_by=gk) / n_all
        mean_run = per.c.s / sa.cast(per.c.n, sa.Float(precision=53))
        per = sa.select(*per.c, ((mean_run - mean_all) * (mean_run - mean_all) * per.c.n).label("between")).subquery()
        gk = [per.c[f"k{i}"] for i in range(nkeys)]
    n = sa.cast(sa.func.sum(per.c.n), sa.Float(precision=53)) if "n" in per.c else None
    agg = {
        "mean": lambda: sa.func.sum(per.c.s) / n,
        "count": lambda: sa.func.sum(per.c.n),
        "min": lambda: sa.func.min(per.c.mn),
        "max": lambda: sa.func.max(per.c.mx),
        "stddev": lambda: sa.func.sum(per.c.m2) + sa.func.sum(per.c.between),
    }
    sel = [agg[s]().label(s) for s in stats]
    if "stddev" in stats:
        sel.append(sa.func.sum(per.c.n).label("stddev_n"))
    return sa.select(*gk, *sel).group_by(*gk).order_by(*(k.asc().nulls_last() for k in gk))


def _tables(clause: sa.ColumnElement) -> set:
    """The tables whose columns a clause reads."""
    return {e.table for e in visitors.iterate(clause) if isinstance(e, sa.Column)}


def _stat_value(stat: str, res: Variable, x: object) -> object:
    if x is None:
        return None
    if stat == "count":
        return int(x)
    if stat in ("min", "max"):
        return from_db(res, x) if res.datatype not in NUMERIC else float(x) if res.datatype != "integer" else int(x)
    return float(x)


def render(q: QueryResult, fmt: str) -> str:
    """The result as a text table, CSV or JSON (see psuite.psbase.output)."""
    from psuite.psbase import output

    return output.render(q.table(), fmt)


def stddev(sum_squares: float | None, n: int) -> float | None:
    """The sample standard deviation from the sum of squared deviations."""
    if sum_squares is None or n is None or n < 2:
        return None
    return math.sqrt(max(float(sum_squares), 0.0) / (int(n) - 1))  # PostgreSQL sums counts as numeric
