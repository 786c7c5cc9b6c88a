"""How an experiment (psuite.model.experiment.Experiment) is shown: psuite's
text, JSON and CSV reports of a result of the performance algebra, and the
aggregations that stat and dump share.

Values are what CUBE shows:
- along the call tree, a call path's inclusive value (its callees' with
  its own) or exclusive value (its own);
- along the metric tree, inclusive by default: each metric's values as
  stored, which in CUBE already hold its child metrics' (user guide
  2.1.1.5; Score-P's "time" holds "mpi"): CUBE's collapsed metric node,
  what Experiment.total and the algebra take; `metric_tree="excl"`: the
  metric less each child metric (CUBE's expanded node, cube_dump -x excl),
  every child subtracted as CubeLib does, at the level shown (per call
  path and location, or their aggregate less the children's aggregates);
- derived metrics are evaluated, never summed: a POSTDERIVED metric over
  the aggregated values of the metrics it names (a ratio of sums), a
  PREDERIVED one per location and then summed, as CUBE does; the metrics
  an expression names count as stored (with their child metrics), as
  Experiment.derived_values and Experiment.total take them;
- over threads, call paths and callees, values are summed, or for
  MINDOUBLE and MAXDOUBLE metrics (Metric.combine) the least or greatest.

JSON schema "psuite.experiment/1" (stable):
  {"schema", "attributes": {...},
   "metrics":   [{"id", "name", "display", "unit", "dtype", "kind", "parent",
                  "expression", "description", "total"}],
   "regions":   [{"id", "name", "module", "begin", "end"}],
   "topologies": [{"name", "dimensions": [{"name", "size", "periodic"}],
                   "coordinates": {location id: [coordinate, ...]}}],
   "locations": [{"id", "machine", "node", "process", "rank", "thread",
                  "thread_rank", "totals": {metric: value}}],
   "callpaths": [{"id", "parent", "region", "name", "depth", "line",
                  "inclusive": {metric: value}, "exclusive": {metric: value}}]}
  (call paths in tree order, values aggregated over every location; numbers
  that are not finite are null).
CSV (stable columns): kind ("metric"|"location"|"callpath"), id, parent,
depth, name, path (region names joined with ";"), metric, inclusive,
exclusive; a metric row's inclusive is the experiment's total, a location
row's is that location's total."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from psuite.model.experiment import EXCLUSIVE, INCLUSIVE, Experiment, evaluate

FORMATS = ("text", "json", "csv")
INCL, EXCL = "incl", "excl"
TEXT_LOCATIONS = 32  # the text report lists the locations' totals up to this many
TEXT_METRICS = 4  # metrics per table of the text report


# ---------------------------------------------------------------- values


class View:
    """An experiment's values as CUBE shows them, computed once per metric
    and kept: (call paths, locations) arrays, their sums over locations, and
    per-region sums.  metric_tree: INCL (a metric's values as stored, which
    in CUBE include its child metrics': the collapsed node) or EXCL (the
    metric less its child metrics: the expanded node)."""

    def __init__(self, exp: Experiment, metric_tree: str = INCL) -> None:
        if metric_tree not in (INCL, EXCL):
            raise ValueError(f"metric_tree is {INCL!r} or {EXCL!r}, not {metric_tree!r}")
        self.exp, self.metric_tree = exp, metric_tree
        self._cells: dict[tuple[str, str], np.ndarray] = {}
        self._sums: dict[tuple[str, str], np.ndarray] = {}
        # what derived metrics are evaluated on, and what EXCL subtracts from: the stored values
        self.plain = self if metric_tree == INCL else View(exp, INCL)

    def metric_children(self, name: str) -> list[str]:
        """The child metrics a metric's shown value excludes: none along an
        inclusive metric tree; along an exclusive one every child, whatever
        its unit, type or kind (derived too), as CubeLib's Cube::get_sev_adv
        subtracts them."""
        if self.metric_tree != EXCL:
            return []
        exp = self.exp
        return [exp.metrics[k].name for k in exp.metric_children(exp.metric_index(name))]

    def _less(self, metric: str, value, children: list) -> np.ndarray:
        """A metric's value less its children's (each at the same call path,
        location or aggregate): subtracted, or for MINDOUBLE and MAXDOUBLE
        metrics CubeLib's "minus" of such values (a least value less another
        is the greater of the two, a greatest value the lesser)."""
        less = {np.minimum: np.maximum, np.maximum: np.minimum}.get(self.exp.metric(metric).combine)
        out = np.asarray(value)
        for v in children:
            out = less(out, v) if less is not None else out - v
        return out

    def cells(self, metric: str, calltree: str = EXCL) -> np.ndarray:
        """(call paths, locations): every value of the metric."""
        key = (metric, calltree)
        if key not in self._cells:
            exp = self.exp
            m = exp.metric(metric)
            if self is not self.plain:
                a = self._less(metric, self.plain.cells(metric, calltree),
                               [self.plain.cells(k, calltree) for k in self.metric_children(metric)])
            elif m.derived:
                a = exp.derived_values(metric, inclusive=calltree == INCL,
                                       fetch=lambda n: self.cells(n, calltree).astype(np.float64),
                                       fetch_view=lambda n, v: self.cells(n, _view(v)).astype(np.float64))
            else:
                a = self._plain(metric, calltree)
            self._cells[key] = np.broadcast_to(a, (len(exp.cnodes), len(exp.locations)))
        return self._cells[key]

    def combine(self, metric: str) -> np.ufunc:
        """How the metric's values aggregate: summed, or the least or
        greatest (MINDOUBLE, MAXDOUBLE); derived metrics' evaluated values sum."""
        m = self.exp.metric(metric)
        return np.add if m.derived else m.combine

    def _plain(self, metric: str, calltree: str) -> np.ndarray:
        return self.exp.inclusive(metric) if calltree == INCL else self.exp.exclusive(metric)

    def sums(self, metric: str, calltree: str = EXCL, locations: Sequence[int] | None = None) -> np.ndarray:
        """Per call path, the metric over the locations (every one by default)."""
        whole = locations is None
        key = (metric, calltree)
        if whole and key in self._sums:
            return self._sums[key]
        m = self.exp.metric(metric)
        if self is not self.plain:  # the aggregate less the children's aggregates, as CubeLib computes it
            out = self._less(metric, self.plain.sums(metric, calltree, locations),
                             [self.plain.sums(k, calltree, locations) for k in self.metric_children(metric)])
        elif m.derived and m.kind == "POSTDERIVED":  # a ratio of sums, not a sum of ratios
            def get(n: str, v: str) -> np.ndarray:
                return self.sums(n, _view(v) if v else calltree, locations).astype(np.float64).reshape(-1, 1)

            out = np.broadcast_to(evaluate(m.expression, lambda n: get(n, ""), get,
                                           **context(self.exp, get, locations=False)),
                                  (len(self.exp.cnodes), 1))[:, 0]
        elif m.derived and m.aggregation.get("aggr"):  # CubeLib's aggr operator over the locations
            out = self.exp.aggregate(metric, calltree == INCL, locations)
        else:
            a = self.cells(metric, calltree)
            out = reduce(self.combine(metric), a if whole else a[:, list(locations)], 1)
        if whole:
            self._sums[key] = out
        return out

    def total(self, metric: str) -> float:
        """The metric over the whole experiment: every root, every location."""
        m = self.exp.metric(metric)
        if self is not self.plain:
            return float(self._less(metric, self.plain.total(metric),
                                    [self.plain.total(k) for k in self.metric_children(metric)]))
        if m.derived and m.kind == "POSTDERIVED":  # metric::x(e) of the whole: the roots' own values
            def get(n: str, v: str) -> float:
                return float(reduce(self.combine(n), self.sums(n, _view(v))[self.exp.roots], 0)) if v \
                    else self.total(n)

            return float(evaluate(m.expression, lambda n: get(n, ""), get,
                                  **context(self.exp, get, callpaths=False, locations=False)))
        return float(reduce(self.combine(metric), self.sums(metric, INCL)[self.exp.roots], 0))

    def location_totals(self, metric: str) -> np.ndarray:
        """Per location, the metric over every root."""
        if self is not self.plain:
            return self._less(metric, self.plain.location_totals(metric),
                              [self.plain.location_totals(k) for k in self.metric_children(metric)])
        return np.asarray(reduce(self.combine(metric), self.cells(metric, INCL)[self.exp.roots], 0))

    # -- groups of call paths: a function over all its call paths ---------
    def region_ids(self) -> np.ndarray:
        """Per call path, its region's index."""
        if not hasattr(self, "_regions"):
            self._regions = np.fromiter((c.region for c in self.exp.cnodes), dtype=np.int64,
                                        count=len(self.exp.cnodes))
        return self._regions

    def name_groups(self) -> tuple[np.ndarray, list[str]]:
        """Per call path the index of its region's name, and the names (a
        function is its name: regions of one name count as one)."""
        names: dict[str, int] = {}
        of_region = [names.setdefault(r.name, len(names)) for r in self.exp.regions]
        return np.asarray(of_region, dtype=np.int64)[self.region_ids()] if len(self.exp.cnodes) else \
            np.zeros(0, dtype=np.int64), list(names)

    def outermost(self, group: np.ndarray) -> np.ndarray:
        """Per call path, whether it is in a group (>= 0) with no call path
        of the same group above it: a group's inclusive value sums these, so
        that recursion is not counted twice."""
        keep = group >= 0
        if not keep.any():
            return keep
        g = group.tolist()
        above: list[frozenset[int]] = []
        empty: frozenset[int] = frozenset()
        for i, c in enumerate(self.exp.cnodes):
            outer = empty if c.parent is None else above[c.parent]
            if g[i] >= 0:
                if g[i] in outer:
                    keep[i] = False
                else:
                    outer = outer | {g[i]}
            above.append(outer)
        return keep

    def grouped(self, metric: str, calltree: str, group: np.ndarray, ngroups: int) -> np.ndarray:
        """(groups, locations): the metric summed over each group's call
        paths (group[i] < 0: in none) - exclusive values over all of them,
        inclusive values over the outermost; a derived metric evaluated on
        those sums per location."""
        exp = self.exp
        m = exp.metric(metric)
        shape = (ngroups, len(exp.locations))
        if self is not self.plain:
            return self._less(metric, self.plain.grouped(metric, calltree, group, ngroups),
                              [self.plain.grouped(k, calltree, group, ngroups) for k in self.metric_children(metric)])
        if m.derived:
            def get(n: str, v: str) -> np.ndarray:
                return self.grouped(n, _view(v) if v else calltree, group, ngroups).astype(np.float64)

            return np.broadcast_to(evaluate(m.expression, lambda n: get(n, ""), get,
                                            **context(exp, get, callpaths=False)), shape)
        cells = self.cells(metric, calltree)
        sel = self.outermost(group) if calltree == INCL else group >= 0
        out = np.zeros(shape, dtype=cells.dtype)
        rows = np.flatnonzero(sel)
        if len(rows):
            order = rows[np.argsort(group[rows], kind="stable")]
            keys = group[order]
            starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
            out[keys[starts]] = self.combine(metric).reduceat(np.asarray(cells)[order], starts, axis=0)
        return out

    def grouped_total(self, metric: str, calltree: str, group: np.ndarray, ngroups: int) -> np.ndarray:
        """Per group, the metric over its call paths and every location
        (POSTDERIVED: evaluated on those totals; PREDERIVED: summed)."""
        m = self.exp.metric(metric)
        if self is not self.plain:
            return self._less(metric, self.plain.grouped_total(metric, calltree, group, ngroups),
                              [self.plain.grouped_total(k, calltree, group, ngroups)
                               for k in self.metric_children(metric)])
        if m.derived and m.kind == "POSTDERIVED":
            def get(n: str, v: str) -> np.ndarray:
                return self.grouped_total(n, _view(v) if v else calltree, group, ngroups).astype(np.float64)

            return np.broadcast_to(evaluate(m.expression, lambda n: get(n, ""), get,
                                            **context(self.exp, get, callpaths=False, locations=False)),
                                   (ngroups,))
        return reduce(self.combine(metric), self.grouped(metric, calltree, group, ngroups), 1)


def _view(variant: str) -> str:
    """The call-tree view a derived metric's reference asks for: metric::x(i)
    inclusive, metric::x(e) exclusive."""
    return INCL if variant == "i" else EXCL


Get = Callable[[str, str], "np.ndarray | float"]


def context(exp: Experiment, get: Get, callpaths: bool = True,
            locations: bool = True) -> dict[str, Any]:
    """evaluate()'s fixed= and variables= for values get(name, "" | "i" |
    "e") gives, as Experiment.derived_values gives them to a POSTDERIVED
    metric: metric::fixed::x(i|e) is metric::x(i|e), metric::fixed::x() the
    value over every location.  callpaths/locations: whether the values
    are laid out (call paths, locations), so that the per-call-path and
    per-location variables fit them (a group of call paths or an aggregate
    has no ${calculation::callpath::id}: unset, 0, as CubeLib leaves it)."""

    def fixed(name: str, variant: str) -> np.ndarray | float:
        a = get(name, variant)
        if variant or not locations:
            return a
        a = np.asarray(a, dtype=np.float64)
        return a.sum(axis=1, keepdims=True) if a.ndim == 2 else a

    def variables(name: str) -> object:
        if (not callpaths and name.startswith("calculation::callpath::")) or \
                (not locations and name.startswith("calculation::sysres::")):
            return None
        return exp._variable(name)

    return {"fixed": fixed, "variables": variables, "metrics": exp.metric_names()}


def reduce(f: np.ufunc, a: np.ndarray, axis: int) -> np.ndarray:
    """f over an axis of a (np.add, np.minimum or np.maximum); nothing to
    reduce gives zeros, as an empty sum does."""
    a = np.asarray(a)
    if a.shape[axis] == 0:
        return np.zeros(a.shape[:axis] + a.shape[axis + 1:], dtype=a.dtype)
    return f.reduce(a, axis=axis)


# ---------------------------------------------------------------- numbers


def number(value: float, integer: bool = False) -> str:
    """A value for text and CSV: integers exactly, other numbers with the
    shortest text that reads back the same; nan and inf as such."""
    v = float(value)
    if not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if integer or v.is_integer() and abs(v) < 2**53:
        return str(int(value)) if isinstance(value, (int, np.integer)) else str(int(v))
    return repr(v)


def short(value: float, integer: bool = False) -> str:
    """A value for human tables: nine significant digits at most."""
    v = float(value)
    if integer or (math.isfinite(v) and v.is_integer() and abs(v) < 1e15):
        return number(value, True) if math.isfinite(v) else number(v)
    return f"{v:.9g}" if math.isfinite(v) else number(v)


def json_number(value: float) -> float | int | None:
    """Strict JSON: integers as integers, nan and inf as null."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    v = float(value)
    return v if math.isfinite(v) else None


def is_integer(exp: Experiment, metric: str) -> bool:
    m = exp.metric(metric)
    return m.integer and not m.derived


def metric_kind(exp: Experiment, metric: str) -> str:
    m = exp.metric(metric)
    return "derived" if m.derived else {EXCLUSIVE: "exclusive", INCLUSIVE: "inclusive"}.get(m.kind, m.kind.lower())


# ---------------------------------------------------------------- reports


def render(exp: Experiment, fmt: str = "text", metric_tree: str = INCL) -> Iterator[str]:
    """The experiment as a report in one of FORMATS, in pieces."""
    view = View(exp, metric_tree)
    if fmt == "json":
        return iter([render_json(view)])
    if fmt == "csv":
        return render_csv(view)
    return render_text(view)


def _describe(exp: Experiment) -> str:
    nproc = len({(loc.node, loc.rank) for loc in exp.locations})
    return (f"{len(exp.metrics)} metric{'s' * (len(exp.metrics) != 1)}, {len(exp.cnodes):,} call "
            f"path{'s' * (len(exp.cnodes) != 1)}, {len(exp.locations):,} location"
            f"{'s' * (len(exp.locations) != 1)} ({nproc} process{'es' * (nproc != 1)})")


def render_text(view: View) -> Iterator[str]:
    exp = view.exp
    names = [m.name for m in exp.metrics]
    title = exp.attributes.get("operation") or "experiment"
    lines = [f"{title}: {_describe(exp)}"]
    for key in sorted(exp.attributes):
        if key != "operation":
            lines.append(f"  {key}: {exp.attributes[key]}")
    lines += ["", "Metrics" + (" (each metric less its child metrics)" if view.metric_tree == EXCL
                               and any(m.parent is not None for m in exp.metrics) else "") + ":"]
    rows = [("metric", "unit", "type", "kind", "total")]
    for m in exp.metrics:
        depth, p = 0, m.parent
        while p is not None:
            depth, p = depth + 1, exp.metrics[p].parent
        rows.append(("  " * depth + m.name, m.unit, m.dtype, metric_kind(exp, m.name),
                     short(view.total(m.name), is_integer(exp, m.name))))
    lines += _table(rows, right=(4,))
    yield "\n".join(lines) + "\n"
    yield from _topologies_text(exp)
    if 1 < len(exp.locations) <= TEXT_LOCATIONS and names:
        parts = []
        for chunk in _chunks(names, TEXT_METRICS):
            totals = [view.location_totals(n) for n in chunk]
            rows = [("location", *chunk)]
            for j, loc in enumerate(exp.locations):
                rows.append((loc.label, *(short(t[j], is_integer(exp, n)) for t, n in zip(totals, chunk,
                                                                                          strict=True))))
            parts.append("\n".join(_table([(*r, "") for r in rows], right=range(1, len(chunk) + 1))))
        yield "\nPer location (totals):\n" + "\n\n".join(parts) + "\n"
    elif len(exp.locations) > TEXT_LOCATIONS and names:
        yield (f"\n{len(exp.locations):,} locations: `psprocess stat` gives their statistics, `psprocess dump` "
               "their values.\n")
    if len(exp.cnodes) < 2 or not names:  # one call path: its values are the totals above
        return
    labels = [f"{'  ' * d}{exp.region_name(i)} (id={i})" for i, d in enumerate(exp.depths())]
    where = f"summed over {len(exp.locations):,} location{'s' * (len(exp.locations) != 1)}"
    for chunk in _chunks(names, TEXT_METRICS - 1):
        header = [f"{n} {kind}" for n in chunk for kind in (INCL, EXCL)]
        cols = [(view.sums(n, INCL), view.sums(n, EXCL), is_integer(exp, n)) for n in chunk]
        rows = [(*header, "call path")]
        for i in range(len(exp.cnodes)):
            cells = [short(v[i], integer) for incl, excl, integer in cols for v in (incl, excl)]
            rows.append((*cells, labels[i]))
        yield (f"\nCall tree, {', '.join(chunk)} (inclusive and exclusive, {where}):\n"
               + "\n".join(_table(rows, right=range(len(header)))) + "\n")


def _topologies_text(exp: Experiment) -> Iterator[str]:
    """Each Cartesian topology: its dimensions, and where the locations sit
    in it (up to TEXT_LOCATIONS of them: CUBE's topology view in words)."""
    for t in exp.topologies:
        dims = " x ".join(f"{name or 'dim'} {size}{' (periodic)' if periodic else ''}"
                          for name, size, periodic in t.dimensions)
        lines = [f"\nTopology {t.name or '(unnamed)'}: {dims}; {len(t.coordinates):,} of "
                 f"{len(exp.locations):,} locations placed"]
        for j in sorted(t.coordinates)[:TEXT_LOCATIONS]:
            lines.append(f"  {exp.locations[j].label}  ({', '.join(map(str, t.coordinates[j]))})")
        if len(t.coordinates) > TEXT_LOCATIONS:
            lines.append(f"  ... {len(t.coordinates) - TEXT_LOCATIONS:,} more (-f json lists every one)")
        yield "\n".join(lines) + "\n"


def _chunks(items: Sequence[str], size: int) -> list[Sequence[str]]:
    """Metrics a few at a time, so that tables stay readable."""
    return [items[k:k + size] for k in range(0, len(items), size)]


def _table(rows: Sequence[Sequence[str]], right: Iterable[int] = ()) -> list[str]:
    """Rows as aligned columns; the columns in `right` right-aligned, the
    last column left as it is."""
    right = set(right)
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(widths[k]) if k in right else c.ljust(widths[k]) for k, c in enumerate(r[:-1])]
        out.append("  ".join([*cells, r[-1]]).rstrip())
    return out


def render_json(view: View) -> str:
    exp = view.exp
    names = [m.name for m in exp.metrics]
    doc = {
        "schema": "psuite.experiment/1",
        "attributes": dict(exp.attributes),
        "metrics": [{"id": k, "name": m.name, "display": m.display or m.name, "unit": m.unit, "dtype": m.dtype,
                     "kind": m.kind, "parent": m.parent, "expression": m.expression,
                     "description": m.description, "total": _total(view, m.name)}
                    for k, m in enumerate(exp.metrics)],
        "regions": [{"id": k, "name": r.name, "module": r.module, "begin": r.begin, "end": r.end}
                    for k, r in enumerate(exp.regions)],
    }
    totals = {n: view.location_totals(n) for n in names}
    doc["locations"] = [{"id": j, "machine": loc.machine, "node": loc.node, "process": loc.process, "rank": loc.rank,
                         "thread": loc.thread, "thread_rank": loc.thread_rank,
                         "totals": {n: _value(exp, n, totals[n][j]) for n in names}}
                        for j, loc in enumerate(exp.locations)]
    doc["topologies"] = [{"name": t.name, "dimensions": [{"name": n, "size": size, "periodic": periodic}
                                                         for n, size, periodic in t.dimensions],
                          "coordinates": {str(j): list(c) for j, c in sorted(t.coordinates.items())}}
                         for t in exp.topologies]
    incl = {n: view.sums(n, INCL) for n in names}
    excl = {n: view.sums(n, EXCL) for n in names}
    doc["callpaths"] = [{"id": i, "parent": c.parent, "region": c.region, "name": exp.regions[c.region].name,
                         "depth": exp.depth(i), "line": c.line,
                         "inclusive": {n: _value(exp, n, incl[n][i]) for n in names},
                         "exclusive": {n: _value(exp, n, excl[n][i]) for n in names}}
                        for i, c in enumerate(exp.cnodes)]
    return json.dumps(doc, separators=(",", ":"), allow_nan=False) + "\n"


def _value(exp: Experiment, metric: str, v) -> float | int | None:
    return json_number(int(v) if is_integer(exp, metric) else float(v))


def _total(view: View, metric: str) -> float | int | None:
    v = view.total(metric)
    return json_number(int(v) if is_integer(view.exp, metric) and math.isfinite(v) else v)


CSV_COLUMNS = ("kind", "id", "parent", "depth", "name", "path", "metric", "inclusive", "exclusive")


def render_csv(view: View) -> Iterator[str]:
    exp = view.exp
    names = [m.name for m in exp.metrics]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for k, m in enumerate(exp.metrics):
        w.writerow(("metric", k, "" if m.parent is None else m.parent, "", m.display or m.name, "", m.name,
                    number(view.total(m.name), False), ""))
    for n in names:
        t = view.location_totals(n)
        for j, loc in enumerate(exp.locations):
            w.writerow(("location", j, "", "", loc.label, "", n, number(t[j], is_integer(exp, n)), ""))
    yield out.getvalue()
    paths = exp.paths()
    for n in names:
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        incl, excl, integer = view.sums(n, INCL), view.sums(n, EXCL), is_integer(exp, n)
        for i, c in enumerate(exp.cnodes):
            w.writerow(("callpath", i, "" if c.parent is None else c.parent, len(paths[i]) - 1,
                        exp.regions[c.region].name, ";".join(paths[i]), n, number(incl[i], integer),
                        number(excl[i], integer)))
        yield out.getvalue()


# ---------------------------------------------------------------- comparisons

TEXT_MOVED = 200  # the text verdict lists at most this many moved call paths (json and csv: all)


def _path(path) -> str:
    return ";".join(path) if isinstance(path, (tuple, list)) else str(path)


def _short_path(path, keep: int = 4) -> str:
    """A call path for a person: a deep one as its outermost frame, the
    number of frames left out and its innermost frames (main;...(29);level;work)."""
    if not isinstance(path, (tuple, list)) or len(path) <= keep + 2:
        return _path(path)
    return ";".join([path[0], f"...({len(path) - keep - 1})", *path[-keep:]])


def _tolerance_text(t) -> str:
    parts = []
    if t.relative is not None:
        parts.append(f"{t.relative * 100:g}%")
    if t.absolute is not None:
        parts.append(f"{t.absolute:g}")
    who = "every metric" if t.metric == "*" else t.metric
    return f"{who} {' or '.join(parts)}"


def render_comparison(result, a: str, b: str, tolerances: Sequence = (), fmt: str = "text") -> str:
    """compare's verdict (an algebra.Comparison): equal, within the
    tolerances or not, and the call paths that moved."""
    verdict = "equal" if result.equal else ("within" if tolerances and result.within else "moved")
    moved = list(result.moved)
    if fmt == "json":
        return json.dumps({"schema": "psuite.compare/1", "a": a, "b": b, "equal": bool(result.equal),
                           "within": bool(result.equal or (tolerances and result.within)), "verdict": verdict,
                           "tolerances": [{"metric": t.metric, "absolute": t.absolute, "relative": t.relative}
                                          for t in tolerances],
                           "moved": [{"metric": m.metric, "path": list(m.path) if isinstance(m.path, (tuple, list))
                                      else str(m.path), "a": json_number(m.a), "b": json_number(m.b),
                                      "delta": json_number(m.delta),
                                      "relative": None if m.relative is None else json_number(m.relative)}
                                     for m in moved]}, separators=(",", ":"), allow_nan=False) + "\n"
    if fmt == "csv":
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(("verdict", "metric", "path", "a", "b", "delta", "relative"))
        if not moved:
            w.writerow((verdict, "", "", "", "", "", ""))
        for m in moved:
            w.writerow((verdict, m.metric, _path(m.path), number(m.a), number(m.b), number(m.delta),
                        "" if m.relative is None else number(m.relative)))
        return out.getvalue()
    if result.equal:
        return f"{a} and {b} are equal.\n"
    limits = "; ".join(_tolerance_text(t) for t in tolerances)
    if tolerances and result.within:
        head = f"{a} and {b} differ, within the tolerances ({limits})."
    elif tolerances:
        head = f"{a} and {b} differ beyond the tolerances ({limits})."
    else:
        head = f"{a} and {b} are not equal."
    lines = [head]
    if moved:
        what = "moved beyond the tolerances" if tolerances else "differ"
        lines.append(f"{len(moved):,} value{'s' * (len(moved) != 1)} {what} (B - A, relative to A):")
        rows = [("metric", "A", "B", "change", "relative", "call path")]
        for m in moved[:TEXT_MOVED]:
            rel = "" if m.relative is None else (f"{m.relative * 100:+.2f}%" if math.isfinite(m.relative)
                                                 else number(m.relative))
            rows.append((m.metric, short(m.a), short(m.b), short(m.delta), rel, _short_path(m.path)))
        lines += ["  " + line for line in _table(rows, right=(1, 2, 3, 4))]
        if len(moved) > TEXT_MOVED:
            lines.append(f"  ... and {len(moved) - TEXT_MOVED:,} more (-f csv lists them all)")
    return "\n".join(lines) + "\n"
