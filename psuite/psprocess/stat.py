"""psprocess stat: CUBE's cube_stat views of an experiment (CUBE 4.3 user
guide, 1.7.8).

- Per metric and routine: the routine's inclusive value (its call paths
  with their callees; a recursive call counted once), its exclusive value
  (its own), and the inclusive value of each function it calls directly;
  each as statistics across the locations (processes and threads): count,
  sum, mean, variance (n - 1, as cube_stat), minimum, the quartiles
  (linear interpolation) and maximum.
- A top-N flat profile: the functions by the first metric's exclusive
  value, with every metric's exclusive and inclusive value summed over
  call paths and locations.

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

from psuite.errors import UsageError
from psuite.experiment import Experiment
from psuite.psprocess.combine import quartiles
from psuite.psprocess.experiment_views import EXCL, INCL, View, is_integer, json_number, number, short

STATISTICS = ("count", "sum", "mean", "variance", "minimum", "quartile25", "median", "quartile75", "maximum")
HEADINGS = ("Count", "Sum", "Mean", "Variance", "Minimum", "Quartile25", "Median", "Quartile75", "Maximum")


@dataclass
class Row:
    """One metric of one routine: its inclusive value (view "incl"), its
    exclusive value ("excl"), or a direct callee's inclusive value
    ("callee", named by callee)."""

    metric: str
    routine: str
    view: str
    callee: str
    values: np.ndarray  # per location
    integer: bool

    @property
    def label(self) -> str:
        if self.view == "callee":
            return f"{self.metric} {self.callee}"
        return f"{self.metric} {self.view.upper()}({self.routine})"


def statistics(values: np.ndarray, integer: bool = False) -> dict[str, float | int]:
    """count, sum, mean, variance (sample, n - 1), minimum, quartiles and
    maximum of the values."""
    v = np.asarray(values)
    n = len(v)
    if n == 0:
        return dict.fromkeys(STATISTICS, 0)
    f = v.astype(np.float64)
    total = int(v.sum()) if integer else float(f.sum())
    mean = float(f.mean())
    variance = float(((f - mean) ** 2).sum() / (n - 1)) if n > 1 else 0.0
    q1, median, q3 = quartiles(f.tolist())
    lo, hi = v.min(), v.max()
    return {"count": n, "sum": total, "mean": mean, "variance": variance,
            "minimum": int(lo) if integer else float(lo), "quartile25": q1, "median": median, "quartile75": q3,
            "maximum": int(hi) if integer else float(hi)}


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


def select_routines(exp: Experiment, names: Sequence[str] | None) -> list[tuple[str, list[int]]]:
    """(name, region indices) per routine asked for: regions of that name,
    else those whose name the pattern matches; by default the roots'."""
    if not names:
        names = list(dict.fromkeys(exp.region_name(i) for i in exp.roots))
    out = []
    for pattern in names:
        regions = [k for k, r in enumerate(exp.regions) if r.name == pattern]
        if regions:
            out.append((pattern, regions))
            continue
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise UsageError(f"-r {pattern!r}: not a region name nor a regular expression ({exc})") from None
        by_name: dict[str, list[int]] = {}
        for k, r in enumerate(exp.regions):
            if rx.fullmatch(r.name):
                by_name.setdefault(r.name, []).append(k)
        if not by_name:
            sample = ", ".join(list(dict.fromkeys(r.name for r in exp.regions))[:8])
            raise UsageError(f"no routine {pattern!r} in this experiment (its regions include {sample})")
        out += by_name.items()
    return out


def routine_rows(view: View, metrics: Sequence[str], routines: Sequence[tuple[str, list[int]]]) -> list[Row]:
    """Per metric and routine: INCL, EXCL, then each direct callee (in the
    order the call tree first meets them)."""
    exp = view.exp
    rows = []
    for metric in metrics:
        integer = is_integer(exp, metric)
        for name, regions in routines:
            rows.append(Row(metric, name, INCL, "", view.masked(metric, INCL, view.region_mask(regions, INCL)),
                            integer))
            mine = view.region_mask(regions, EXCL)
            rows.append(Row(metric, name, EXCL, "", view.masked(metric, EXCL, mine), integer))
            for callee, callee_regions in _callees(exp, mine):
                mask = view.region_mask(callee_regions, INCL, parents=mine)
                rows.append(Row(metric, name, "callee", callee, view.masked(metric, INCL, mask), integer))
    return rows


def _callees(exp: Experiment, callers: np.ndarray) -> list[tuple[str, list[int]]]:
    """The functions the call paths in `callers` call directly, by name."""
    by_name: dict[str, list[int]] = {}
    for c in exp.cnodes:
        if c.parent is not None and callers[c.parent]:
            regions = by_name.setdefault(exp.regions[c.region].name, [])
            if c.region not in regions:
                regions.append(c.region)
    return list(by_name.items())


@dataclass
class FlatEntry:
    region: str
    exclusive: dict[str, float]
    inclusive: dict[str, float]


def flat_profile(view: View, metrics: Sequence[str], top: int) -> list[FlatEntry]:
    """The top functions (by name) by the first metric's exclusive value."""
    exp = view.exp
    by_name: dict[str, list[int]] = {}
    for k, r in enumerate(exp.regions):
        by_name.setdefault(r.name, []).append(k)
    present = set(view.region_ids().tolist())
    entries = []
    for name, regions in by_name.items():
        if not present.intersection(regions):
            continue
        excl, incl = view.region_mask(regions, EXCL), view.region_mask(regions, INCL)
        entries.append(FlatEntry(name, {m: view.masked_total(m, EXCL, excl) for m in metrics},
                                 {m: view.masked_total(m, INCL, incl) for m in metrics}))
    first = metrics[0]
    entries.sort(key=lambda e: (math.isnan(e.exclusive[first]), -e.exclusive[first]))  # stable: ties by id
    return entries[:top]


# ---------------------------------------------------------------- output


def render_rows(rows: Sequence[Row], fmt: str) -> str:
    stats = [statistics(r.values, r.integer) for r in rows]
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
    if fmt == "csv":
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(("region", *heads))
        for e, row in zip(entries, cells, strict=True):
            w.writerow((e.region, *(number(v, is_integer(exp, m)) for m, pair in zip(metrics, row, strict=True)
                                    for v in pair)))
        return out.getvalue()
    table = [("Region", *heads)]
    for e, row in zip(entries, cells, strict=True):
        table.append((e.region, *(short(v, is_integer(exp, m)) for m, pair in zip(metrics, row, strict=True)
                                  for v in pair)))
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
    if not chosen:
        raise UsageError("this experiment has no metrics to show")
    if top is not None:
        if routines:
            raise UsageError("-r goes without -t: -t lists the top functions, -r names the routines to show")
        return render_flat(view, flat_profile(view, chosen, top), chosen, fmt)
    return render_rows(routine_rows(view, chosen, select_routines(exp, routines)), fmt)
