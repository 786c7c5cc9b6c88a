"""psprocess stat: CUBE's cube_stat views of an experiment (CUBE 4.3 user
guide, 1.7.8).

- Per metric and routine: the routine's inclusive value (its call paths
  with their callees; a recursive call counted once), its exclusive value
  (its own), and the inclusive value of each function it calls directly;
  each as statistics across the locations (processes and threads): count,
  sum, mean, variance (n - 1, as cube_stat), minimum, the quartiles
  (linear interpolation) and maximum.
- A top-N flat profile, summed over call paths and locations.  Of an
  experiment with Score-P's visits and time metrics, cube_stat -t's: per
  function its calls (exclusive visits), exclusive and inclusive time and
  the exclusive value of each metric asked for, by exclusive time,
  functions never called left out.  Else (psuite's own cubes, which
  cube_stat -t refuses) the functions by the first metric's exclusive
  value, with each metric's exclusive and inclusive value.

A routine is every region of that name (a regular expression when no
region has that name); by default the call tree's roots."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from psuite.analysis.experiment_views import EXCL, INCL, View, is_integer, json_number, number, short
from psuite.errors import UsageError
from psuite.model.experiment import Experiment
from psuite.model.statistics import quartile_rows

STATISTICS = ("count", "sum", "mean", "variance", "minimum", "quartile25", "median", "quartile75", "maximum")
HEADINGS = ("Count", "Sum", "Mean", "Variance", "Minimum", "Quartile25", "Median", "Quartile75", "Maximum")


@dataclass
class Row:
    """One metric of one routine: its inclusive value (view "incl"), its
    exclusive value ("excl"), or a direct callee's inclusive value
    ("callee", named by callee); with its statistics across locations."""

    metric: str
    routine: str
    view: str
    callee: str
    stats: dict[str, float | int]
    integer: bool

    @property
    def label(self) -> str:
        if self.view == "callee":
            return f"{self.metric} {self.callee}"
        return f"{self.metric} {self.view.upper()}({self.routine})"


def statistics(values: np.ndarray, integer: bool = False) -> list[dict[str, float | int]]:
    """Per row of values (rows, locations): count, sum, mean, variance
    (sample, n - 1, as cube_stat), minimum, quartiles (linear
    interpolation, as psuite's .stat files) and maximum."""
    v = np.asarray(values)
    rows, n = v.shape
    if n == 0:
        return [dict.fromkeys(STATISTICS, 0) for _ in range(rows)]
    f = v.astype(np.float64)
    mean = f.mean(axis=1)
    variance = ((f - mean[:, None]) ** 2).sum(axis=1) / (n - 1) if n > 1 else np.zeros(rows)
    quarts = quartile_rows(np.sort(f, axis=1))
    total, lo, hi = v.sum(axis=1), v.min(axis=1), v.max(axis=1)
    cast = int if integer else float
    return [{"count": n, "sum": cast(total[r]), "mean": float(mean[r]), "variance": float(variance[r]),
             "minimum": cast(lo[r]), "quartile25": float(quarts[0][r]), "median": float(quarts[1][r]),
             "quartile75": float(quarts[2][r]), "maximum": cast(hi[r])} for r in range(rows)]


def select_metrics(exp: Experiment, names: Sequence[str] | None) -> list[str]:
    """The metrics asked for (all by default); an unknown name is one line."""
    if not names:
        return [m.name for m in exp.metrics]
    known = {m.name for m in exp.metrics}
    for n in names:
        if n not in known:
            raise UsageError(f"no metric {n!r} in this experiment; its metrics are "
                             f"{', '.join(m.name for m in exp.metrics)}")
    return list(dict.fromkeys(names))


def select_routines(exp: Experiment, names: Sequence[str] | None, called: Sequence[str]) -> list[str]:
    """The routines asked for: names of regions of the call tree (`called`),
    else the names a regular expression matches; by default the roots'."""
    if not names:
        return list(dict.fromkeys(exp.region_name(i) for i in exp.roots))
    out: list[str] = []
    for pattern in names:
        if pattern in called:
            out.append(pattern)
            continue
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise UsageError(f"-r {pattern!r}: not a region name nor a regular expression ({exc})") from None
        found = [n for n in called if rx.fullmatch(n)]
        if not found:
            raise UsageError(f"no routine {pattern!r} in this experiment's call tree (it calls "
                             f"{', '.join(called[:8])}{' ...' if len(called) > 8 else ''})")
        out += found
    return list(dict.fromkeys(out))


def routine_rows(view: View, metrics: Sequence[str], routines: Sequence[str] | None) -> list[Row]:
    """Per metric and routine: INCL, EXCL, then each direct callee (in the
    order the call tree first meets them)."""
    exp = view.exp
    group, names = view.name_groups()
    index = {n: k for k, n in enumerate(names)}
    called = [names[k] for k in dict.fromkeys(group.tolist())]
    chosen = select_routines(exp, routines, called)
    parents = exp.parents()
    has_parent = parents >= 0
    callees = {}
    for name in chosen:  # per routine: its call paths' children, grouped by name
        mine = group == index[name]
        child = np.where(has_parent & mine[np.maximum(parents, 0)], group, -1)
        callees[name] = (child, list(dict.fromkeys(child[child >= 0].tolist())))
    rows = []
    for metric in metrics:
        integer = is_integer(exp, metric)
        incl = view.grouped(metric, INCL, group, len(names))
        excl = view.grouped(metric, EXCL, group, len(names))
        for name in chosen:
            k = index[name]
            child, order = callees[name]
            block = [incl[k], excl[k]]
            if order:
                block += list(view.grouped(metric, INCL, child, len(names))[order])
            stats = statistics(np.stack(block), integer)
            rows.append(Row(metric, name, INCL, "", stats[0], integer))
            rows.append(Row(metric, name, EXCL, "", stats[1], integer))
            rows += [Row(metric, name, "callee", names[c], st, integer) for c, st in zip(order, stats[2:],
                                                                                       strict=True)]
    return rows


@dataclass
class FlatEntry:
    region: str
    exclusive: dict[str, float]
    inclusive: dict[str, float]


def flat_profile(view: View, metrics: Sequence[str], top: int, key: str | None = None,
                 calls: str | None = None) -> list[FlatEntry]:
    """The top functions (by name) by a metric's exclusive value (`key`,
    by default the first metric's); with `calls`, functions that metric
    never counted are left out (cube_stat stops at the first never called)."""
    group, names = view.name_groups()
    n = len(names)
    wanted = list(dict.fromkeys([*metrics, *(k for k in (key, calls) if k)]))
    excl = {m: view.grouped_total(m, EXCL, group, n) for m in wanted}
    incl = {m: view.grouped_total(m, INCL, group, n) for m in wanted}
    present = sorted(set(group.tolist()))
    if calls:
        present = [k for k in present if excl[calls][k] != 0]
    order = np.asarray(excl[key or metrics[0]], dtype=np.float64)
    present.sort(key=lambda k: (math.isnan(order[k]), -order[k]))  # stable: ties in the order of the regions
    return [FlatEntry(names[k], {m: excl[m][k].item() for m in metrics}, {m: incl[m][k].item() for m in metrics})
            for k in present[:top]]


def scorep_metrics(exp: Experiment) -> tuple[str, str] | None:
    """The visits and time metrics cube_stat -t takes: named exactly so, or
    else a name ending in "Visits" ("Time"); None when either is missing
    (psuite's own cubes: their flat profile is by the metrics asked for)."""
    names = [m.name for m in exp.metrics]

    def find(exact: str, suffix: str) -> str | None:
        return exact if exact in names else next((n for n in names if n.endswith(suffix)), None)

    visits, time = find("visits", "Visits"), find("time", "Time")
    return (visits, time) if visits and time else None


def cube_stat_top(view: View, extra: Sequence[str], top: int) -> tuple[list[FlatEntry], str, str] | None:
    """cube_stat -t's view where the experiment has Score-P's visits and
    time: per function its calls (visits, exclusive), exclusive and
    inclusive time, then each metric asked for (exclusive), by exclusive
    time, functions never called left out."""
    found = scorep_metrics(view.exp)
    if found is None:
        return None
    visits, time = found
    return flat_profile(view, list(dict.fromkeys([visits, time, *extra])), top, key=time, calls=visits), \
        visits, time


# ---------------------------------------------------------------- output


def render_rows(rows: Sequence[Row], fmt: str) -> str:
    stats = [r.stats for r in rows]
    if fmt == "json":
        return json.dumps({"schema": "psuite.stat/1", "rows": [
            {"metric": r.metric, "routine": r.routine, "view": r.view, "callee": r.callee,
             **{k: json_number(v) for k, v in s.items()}} for r, s in zip(rows, stats, strict=True)]},
            separators=(",", ":"), allow_nan=False) + "\n"
    if fmt == "csv":
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(("metric", "routine", "view", "callee", *STATISTICS))
        for r, s in zip(rows, stats, strict=True):
            w.writerow((r.metric, r.routine, r.view, r.callee,
                        *(number(s[k], r.integer and k in ("sum", "minimum", "maximum")) for k in STATISTICS)))
        return out.getvalue()
    table = [("MetricRoutine", *HEADINGS)]
    for r, s in zip(rows, stats, strict=True):
        table.append((r.label, *(short(s[k], r.integer and k in ("sum", "minimum", "maximum"))
                                 for k in STATISTICS)))
    return _aligned(table)


def render_flat(view: View, entries: Sequence[FlatEntry], metrics: Sequence[str], fmt: str) -> str:
    exp = view.exp
    if fmt == "json":
        return json.dumps({"schema": "psuite.flat/1", "metrics": list(metrics), "regions": [
            {"region": e.region, "exclusive": {m: _v(exp, m, e.exclusive[m]) for m in metrics},
             "inclusive": {m: _v(exp, m, e.inclusive[m]) for m in metrics}} for e in entries]},
            separators=(",", ":"), allow_nan=False) + "\n"
    heads = [f"{m} {kind}" for m in metrics for kind in (EXCL, INCL)]
    cells = [[(e.exclusive[m], e.inclusive[m]) for m in metrics] for e in entries]
    return _flat_table(exp, entries, heads, [[(m, v) for m, pair in zip(metrics, row, strict=True) for v in pair]
                                             for row in cells], fmt)


def render_cube_stat_top(view: View, entries: Sequence[FlatEntry], visits: str, time: str, extra: Sequence[str],
                         fmt: str) -> str:
    """cube_stat -t's columns: calls, exclusive time, inclusive time, then
    the metrics asked for (exclusive values)."""
    exp = view.exp
    if fmt == "json":
        return render_flat(view, entries, list(dict.fromkeys([visits, time, *extra])), fmt)
    heads = ["calls", "exclusive time", "inclusive time", *extra]
    rows = [[(visits, e.exclusive[visits]), (time, e.exclusive[time]), (time, e.inclusive[time]),
             *((m, e.exclusive[m]) for m in extra)] for e in entries]
    return _flat_table(exp, entries, heads, rows, fmt)


def _flat_table(exp: Experiment, entries: Sequence[FlatEntry], heads: Sequence[str],
                rows: Sequence[Sequence[tuple[str, float]]], fmt: str) -> str:
    if fmt == "csv":
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(("region", *heads))
        for e, row in zip(entries, rows, strict=True):
            w.writerow((e.region, *(number(v, is_integer(exp, m)) for m, v in row)))
        return out.getvalue()
    table = [("Region", *heads)]
    for e, row in zip(entries, rows, strict=True):
        table.append((e.region, *(short(v, is_integer(exp, m)) for m, v in row)))
    return _aligned(table)


def _v(exp: Experiment, metric: str, v: float):
    return json_number(int(v) if is_integer(exp, metric) and v == v and abs(v) != float("inf") else v)


def _aligned(table: Sequence[Sequence[str]]) -> str:
    """The first column left-aligned, the numbers right-aligned."""
    widths = [max(len(r[k]) for r in table) for k in range(len(table[0]))]
    lines = ["  ".join([r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:], widths[1:], strict=True))])
             .rstrip() for r in table]
    return "\n".join(lines) + "\n"


def run(exp: Experiment, metrics: Sequence[str] | None = None, routines: Sequence[str] | None = None,
        top: int | None = None, fmt: str = "text", metric_tree: str = INCL) -> str:
    """What `psprocess stat` shows."""
    view = View(exp, metric_tree)
    chosen = select_metrics(exp, metrics)
    if top is not None and routines:
        raise UsageError("-r goes without -t: -t lists the top functions, -r names the routines to show")
    extra = chosen if metrics else []  # cube_stat -t's columns after calls and time: the metrics asked for
    if top is not None and (found := cube_stat_top(view, extra, top)):
        entries, visits, time = found  # Score-P's visits and time: cube_stat's view
        return render_cube_stat_top(view, entries, visits, time, extra, fmt)
    if top is not None and not metrics:  # a column pair per metric: the measured ones, unless asked
        chosen = [m.name for m in exp.metrics if not m.derived] or chosen
    if not chosen:
        raise UsageError("this experiment has no metrics to show")
    if top is not None:
        return render_flat(view, flat_profile(view, chosen, top), chosen, fmt)
    return render_rows(routine_rows(view, chosen, routines), fmt)
