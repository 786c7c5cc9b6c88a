"""psprocess dump: an experiment's values, as CUBE's cube_dump prints them
(CUBE 4.3 user guide, 1.7.12).

- Metrics (-m): unique names, `all`, CubePL expressions defining new
  metrics (`ipc:metric::ins()/metric::cyc()`; a whole expression, `2*3`
  too, is "New Metric1" ...), or `@FILE` (an expression read from FILE,
  named after it), parsed by psuite.model.cubepl, evaluated as cube_dump's new
  metrics are (POSTDERIVED): per location on that location's values, and
  over all threads (`-t aggr`) or a region on the aggregated values, not
  the sum of per-location results; metric::x(i) and (e) in the view they
  name, metric::fixed:: and CUBE's predefined variables as
  Experiment.derived_values gives them.
- Call paths (-c): ids and ranges (0,3,5-10), `all`, `leafs`, `roots`,
  `level=N` (`level<N`, `level>N`; roots are level 0), `name=REGEX`
  (or name=/REGEX/).  With regions=True (-r), the flat profile: one row per
  region, its call paths summed.
- Along the call tree inclusive or exclusive values (-x; cube_dump's -z);
  along the metric tree each metric's values as stored, which include its
  child metrics' (the default, as cube_dump's), or the metric less its
  child metrics (--metric-tree excl; cube_dump's -x).
- Locations: every thread, the ones given by id or range, or their
  aggregate (`aggr`).
- Output: human text, csv (one block per metric: cnode,thread,value),
  csv2 (one row per call path and thread, one column per metric), gnuplot
  data blocks, or R: a script that `source()` turns into one matrix per
  metric, named after it (rows call paths, columns threads)."""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from psuite.analysis.experiment_views import EXCL, INCL, View, context, is_integer, number, short
from psuite.errors import UsageError
from psuite.model import cubepl
from psuite.model.experiment import Experiment, ExpressionError, evaluate

FORMATS = ("text", "csv", "csv2", "gnuplot", "R")
AGGREGATE = "aggr"


@dataclass
class Column:
    """A metric to dump: one of the experiment's, or a new one from an
    expression."""

    label: str
    metric: str = ""  # the experiment's metric, or ""
    expression: str = ""  # a new metric's CubePL expression
    integer: bool = False


def ranges(text: str, count: int, what: str) -> list[int]:
    """'0,3,5-10' as indices below count; one line when it is not."""
    out: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise UsageError(f"{what} {text!r}: give ids and ranges such as 0,3,5-10")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if lo > hi or hi >= count:
            raise UsageError(f"{what} {part.strip()!r}: ids go from 0 to {count - 1}")
        out += range(lo, hi + 1)
    return list(dict.fromkeys(out))


def select_callpaths(exp: Experiment, spec: str) -> list[int]:
    """The call paths -c names, in id order."""
    spec = spec.strip()
    n = len(exp.cnodes)
    if spec == "all":
        return list(range(n))
    if spec in ("leafs", "leaves"):
        kids = exp.children()
        return [i for i in range(n) if not kids[i]]
    if spec == "roots":
        return exp.roots
    m = re.fullmatch(r"level\s*([<=>])\s*(\d+)", spec)
    if m:
        op, level = m.group(1), int(m.group(2))
        depths = exp.depths()
        test = {"<": level.__gt__, "=": level.__eq__, ">": level.__lt__}[op]
        return [i for i in range(n) if test(depths[i])]
    if spec.startswith("name="):
        pattern = spec[5:]
        if len(pattern) >= 2 and pattern.startswith("/") and pattern.endswith("/"):
            pattern = pattern[1:-1]
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise UsageError(f"-c {spec!r}: not a regular expression ({exc})") from None
        return [i for i in range(n) if rx.search(exp.region_name(i))]
    if not n:
        raise UsageError("this experiment has no call paths")
    if not re.fullmatch(r"[\d\s,-]+", spec):
        raise UsageError(f"-c {spec!r}: give all, ids and ranges (0,3,5-10), leafs, roots, level=N, level<N, "
                         "level>N or name=REGEX")
    return ranges(spec, n, "-c")


def select_locations(exp: Experiment, spec: str | None) -> list[int] | None:
    """Location indices, or None for their aggregate."""
    if spec is None or spec == "all":
        return list(range(len(exp.locations)))
    if spec == AGGREGATE:
        return None
    if not re.fullmatch(r"[\d\s,-]+", spec):
        raise UsageError(f"-t {spec!r}: give aggr (the sum over every thread) or thread ids and ranges (0,2-3)")
    return ranges(spec, len(exp.locations), "-t")


def select_metrics(exp: Experiment, spec: str | None) -> list[Column]:
    """-m: names, all, CubePL expressions (NAME:EXPRESSION names them),
    @FILE (an expression read from FILE, named after it)."""
    if not spec or spec == "all":
        return [Column(m.name, m.name, integer=is_integer(exp, m.name)) for m in exp.metrics]
    known = {m.name for m in exp.metrics}
    out: list[Column] = []
    new = 0
    for item in split_items(spec):
        if item == "all":
            out += [Column(m.name, m.name, integer=is_integer(exp, m.name)) for m in exp.metrics]
        elif item in known:
            out.append(Column(item, item, integer=is_integer(exp, item)))
        else:
            label, expression = _expression(exp, item)
            if not label:
                new += 1
                label = f"New Metric{new}"
            for name in cubepl.metric_names(expression):
                # CubeLib evaluates an unknown metric to 0 without a word: a typo would pass unseen
                if name not in known:
                    raise UsageError(f"-m {item!r}: no metric {name!r} in this experiment; its metrics are "
                                     f"{', '.join(m.name for m in exp.metrics)}")
            out.append(Column(label, expression=expression))
    return out


def _expression(exp: Experiment, item: str) -> tuple[str, str]:
    """(label, CubePL text) of an -m item that is not a metric's name:
    @FILE; a whole expression (label "", as cube_dump tries it first, so
    `2*3` and `${cube::#locations}` are expressions); NAME:EXPRESSION."""
    if item.startswith("@"):  # cube_dump takes a bare path; @ cannot be mistaken for a metric or expression
        path = item[1:].strip()
        try:
            return path, cubepl.read_expression(path)
        except ExpressionError as exc:
            raise UsageError(f"-m {item!r}: {exc}") from None
    try:
        cubepl.parse(item)  # only parsed: a while over a metric is not run to see if it is valid
        return "", item
    except ExpressionError as whole:
        m = re.match(r"\s*([^:(){}\[\]$\"]+?)\s*:(?!:)(.*)$", item, re.S)
        if re.fullmatch(r"[\w.=-]+", item):  # a bare word: a metric's name mistyped, most likely
            raise UsageError(f"no metric {item!r} in this experiment; its metrics are "
                             f"{', '.join(m.name for m in exp.metrics)} (or give a CubePL expression, "
                             "NAME:EXPRESSION or @FILE)") from None
        if not m and os.path.isfile(item.strip()):  # cube_dump -m FILE; here @FILE, so a file never shadows a name
            raise UsageError(f"-m {item!r}: a file; give -m @{item.strip()} to read the CubePL expression "
                             "in it") from None
        if not m or m.group(1) == "metric":
            raise UsageError(f"-m {item!r}: not a metric of this experiment, nor a CubePL expression ({whole}); "
                             "give NAME, NAME:EXPRESSION or @FILE") from None
        try:
            cubepl.parse(m.group(2))
        except ExpressionError as exc:
            raise UsageError(f"-m {item!r}: {exc}") from None
        return m.group(1), m.group(2).strip()


_REGEX_AFTER = re.compile(r"=~\s*/(?:[^/\\]|\\.)*/")


def split_items(spec: str) -> list[str]:
    """-m's comma-separated items: a comma inside parentheses, braces or
    brackets (max(a, b), a block's arguments), a "string" or an =~ /regex/
    belongs to its expression (cube_dump cuts at every comma)."""
    items: list[str] = []
    depth, start, k, n = 0, 0, 0, len(spec)
    while k < n:
        ch = spec[k]
        if ch == '"':  # a string: up to its closing quote (an escaped quote does not close it)
            m = re.compile(r'"(?:[^"\\]|\\.)*"').match(spec, k)
            k = m.end() if m else n
            continue
        if spec.startswith("=~", k):
            m = _REGEX_AFTER.match(spec, k)
            if m:
                k = m.end()
                continue
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0:
            items.append(spec[start:k].strip())
            start = k + 1
        k += 1
    items.append(spec[start:].strip())
    return [i for i in items if i]


# ---------------------------------------------------------------- values


@dataclass
class Dump:
    """What is printed: per column a (rows, threads) matrix; rows are call
    paths (or regions with regions=True); threads are location indices, or
    one aggregate column (threads None)."""

    columns: list[Column]
    rows: list[tuple[int, str]]  # (id, label)
    threads: list[int] | None
    matrices: list[np.ndarray]
    calltree: str
    labels: list[str]  # the threads' column headings
    regions: bool = False  # rows are regions (the flat profile), not call paths
    legend: str = ""  # which thread each id is


def compute(exp: Experiment, metrics: str | None = None, callpaths: str = "all", calltree: str = EXCL,
            metric_tree: str = INCL, threads: str | None = None, regions: bool = False) -> Dump:
    view = View(exp, metric_tree)
    columns = select_metrics(exp, metrics)
    where = select_locations(exp, threads)
    plain = view.plain  # what new metrics are evaluated on: the stored values (as derived metrics are)
    if regions:  # the flat profile: a region's call paths summed (recursion counted once)
        group, ngroups = view.region_ids(), len(exp.regions)
        present = sorted(set(group.tolist()))
        rows = [(k, f"{exp.regions[k].name}(id={k})") for k in present]
        picked: list[int] = present

        def per_location(v: View, metric: str, tree: str = calltree) -> np.ndarray:
            return np.asarray(v.grouped(metric, tree, group, ngroups))

        def aggregate(v: View, metric: str, tree: str = calltree) -> np.ndarray:
            return np.asarray(v.grouped_total(metric, tree, group, ngroups))
    else:
        picked = select_callpaths(exp, callpaths)
        rows = [(i, f"{exp.region_name(i)}(id={i})") for i in picked]

        def per_location(v: View, metric: str, tree: str = calltree) -> np.ndarray:
            return np.asarray(v.cells(metric, tree))

        def aggregate(v: View, metric: str, tree: str = calltree) -> np.ndarray:
            return np.asarray(v.sums(metric, tree))

    matrices = []
    for col in columns:
        if col.expression:
            matrices.append(_new_metric(exp, col.expression, per_location if where is not None else aggregate,
                                        plain, calltree, regions, where)[picked])
        elif where is None:
            matrices.append(aggregate(view, col.metric)[picked].reshape(-1, 1))
        else:
            matrices.append(per_location(view, col.metric)[picked][:, where])
    labels = ["All threads"] if where is None else [str(j) for j in where]
    legend = "" if where is None else \
        "Threads: " + "; ".join(f"{j} = {exp.locations[j].label}" for j in where) + "\n"
    return Dump(columns, rows, where, matrices, calltree, labels, regions, legend)


def _new_metric(exp: Experiment, expression: str, values: Callable[..., np.ndarray], plain: View, calltree: str,
                regions: bool, where: list[int] | None) -> np.ndarray:
    """A new metric, POSTDERIVED as cube_dump defines it, over every row:
    per location on that location's values, with -t aggr on the
    aggregates (a ratio of sums); metric::x() in the call-tree view shown,
    metric::x(i) and (e) inclusive and exclusive whatever is shown (the
    view shown given to both made time(i)/visits(e) a ratio of exclusive
    values)."""
    def get(name: str, variant: str) -> np.ndarray:
        tree = calltree if not variant else INCL if variant == "i" else EXCL
        a = values(plain, name, tree).astype(np.float64)
        return a.reshape(-1, 1) if a.ndim == 1 else a

    nrows = len(exp.regions) if regions else len(exp.cnodes)
    full = evaluate(expression, lambda n: get(n, ""), get,
                    **context(exp, get, callpaths=not regions, locations=where is not None))
    if where is None:
        return np.broadcast_to(full, (nrows, 1))
    return np.broadcast_to(full, (nrows, len(exp.locations)))[:, where]


# ---------------------------------------------------------------- output


def render(d: Dump, fmt: str = "text") -> Iterator[str]:
    return {"text": _text, "csv": _csv, "csv2": _csv2, "gnuplot": _gnuplot, "R": _r}[fmt](d)


def _thread_ids(d: Dump) -> list[str]:
    return [AGGREGATE] if d.threads is None else [str(j) for j in d.threads]


def _text(d: Dump) -> Iterator[str]:
    view = "inclusive" if d.calltree == INCL else "exclusive"
    for col, mat in zip(d.columns, d.matrices, strict=True):
        table = [("", *d.labels)]
        for (_, label), values in zip(d.rows, mat, strict=True):
            table.append((label, *(short(v, col.integer) for v in values)))
        widths = [max(len(r[k]) for r in table) for k in range(len(table[0]))]
        lines = [f"Print out the data of the metric {col.label} ({view} along the call tree)", ""]
        for k, r in enumerate(table):
            lines.append("  ".join([r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:], widths[1:],
                                                                                         strict=True))]).rstrip())
            if k == 0:
                lines.append("-" * len(lines[-1]))
        yield "\n".join(lines) + "\n\n"
    yield d.legend


def _csv(d: Dump) -> Iterator[str]:
    ids = _thread_ids(d)
    for k, (col, mat) in enumerate(zip(d.columns, d.matrices, strict=True)):
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        if k:
            out.write("\n")
        for (row, _), values in zip(d.rows, mat, strict=True):
            for t, v in zip(ids, values, strict=True):
                w.writerow((row, t, number(v, col.integer)))
        yield out.getvalue()


def _csv2(d: Dump) -> Iterator[str]:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(("Cnode ID", "Thread ID", *(c.label for c in d.columns)))
    ids = _thread_ids(d)
    for r, (row, _) in enumerate(d.rows):
        for t, tid in enumerate(ids):
            w.writerow((row, tid, *(number(m[r, t], c.integer) for c, m in zip(d.columns, d.matrices, strict=True))))
    yield out.getvalue()


def _gnuplot(d: Dump) -> Iterator[str]:
    ids = _thread_ids(d)
    for col, mat in zip(d.columns, d.matrices, strict=True):
        lines = [f"# Print out the data of the metric {col.label}"]
        for (row, label), values in zip(d.rows, mat, strict=True):
            lines.append(f"#{label}")
            if d.threads is None:
                lines.append(f"{row} {number(values[0], col.integer)}")
            else:
                lines += [f"{row} {t} {number(v, col.integer)}" for t, v in zip(ids, values, strict=True)]
        yield "\n".join(lines) + "\n\n\n"  # two blank lines: gnuplot's index separates the metrics


def _r_number(v, integer: bool) -> str:
    x = float(v)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    return number(v, integer)


def _r_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _r(d: Dump) -> Iterator[str]:
    yield (f"# psprocess dump: source() this file in R; it defines one matrix per metric, named after it:\n"
           f"# rows the {'regions' if d.regions else 'call paths'}, columns the threads\n")
    ids = _thread_ids(d)
    rownames = "c(" + ", ".join(_r_string(label) for _, label in d.rows) + ")"
    colnames = "c(" + ", ".join(_r_string(t) for t in ids) + ")"
    for col, mat in zip(d.columns, d.matrices, strict=True):
        values = ", ".join(_r_number(v, col.integer) for v in np.asarray(mat).ravel())
        name = "`" + col.label.replace("\\", "\\\\").replace("`", "\\`") + "`"
        yield (f"{name} <- matrix(c({values}), nrow = {len(d.rows)}, ncol = {len(ids)}, byrow = TRUE,\n"
               f"  dimnames = list({rownames}, {colnames}))\n")


def run(exp: Experiment, fmt: str = "text", **options) -> Iterator[str]:
    """What `psprocess dump` prints (options as compute takes them)."""
    return render(compute(exp, **options), fmt)

