"""The view (see psuite.psprocess.html for its schema) of anything psuite
reads: `build(subject)` for a report (CountReport, ProfileReport,
MultiReport of either) or an Experiment (a CUBE file, a result of the
algebra).  `load_view(source)` reads an input as psprocess does first.

Values go out as whole arrays (numpy's tolist), never a Python loop per
cell: a 64-rank, 2,000-function profile is 128,000 cells per metric.
Integer metrics stay ints; other values are rounded to 12 significant
digits of the metric's largest value (0.30000000000000004 costs bytes
and says nothing more); a value that is not a number (NaN, inf) is null,
which the page shows as "-" and leaves out of sums and charts."""

from __future__ import annotations

import os
from operator import attrgetter

import numpy as np

from psuite.errors import UsageError
from psuite.experiment import Experiment
from psuite.psprocess.html import context as ctx
from psuite.psprocess.html import sources as src

VERSION = 1
SIGNIFICANT = 12  # digits kept of a float metric's largest value
_FUNCTION, _MODULE = attrgetter("function"), attrgetter("module")


def build(subject, *, title: str | None = None, read_sources: bool = True,
          sources: list[dict] | None = None) -> dict:
    """The view of a report or an experiment.  read_sources=False leaves
    the source files unread (their samples per line are still given).
    sources: an experiment's sources section (sources.result_sources for
    an algebra result of profiles); an experiment has none otherwise."""
    if isinstance(subject, Experiment):
        view = _from_experiment(subject, title)
        view["sources"] = sources or []
        return view
    return _from_report(subject, title, read_sources)


def _members(report) -> tuple[list, int]:
    """The single reports of a report (a MultiReport's), and how many
    process totals were set apart."""
    from psuite.report import CountReport, MultiReport, ProfileReport

    reports, totals = ([*report.reports], len(report.totals)) if isinstance(report, MultiReport) else ([report], 0)
    if not reports:
        raise UsageError("the combination holds no reports; give counting reports or profiles")
    for r in reports:
        if not isinstance(r, (CountReport, ProfileReport)):
            kind = "a resource report (psrun -R)" if type(r).__name__ == "ResourceReport" else \
                f"a {type(r).__name__}"
            raise UsageError(f"{r.source or 'the input'} is {kind}; the HTML report shows counting reports and "
                             "profiles (use -f text for it)")
    return reports, totals


def _from_report(report, title: str | None, read_sources: bool) -> dict:
    from psuite.psprocess import experiments
    from psuite.report import CountReport

    reports, totals = _members(report)
    exp = experiments.from_report(report)
    counts = isinstance(reports[0], CountReport)
    derived = {d.name.replace(" ", "_") for r in reports for d in r.metrics} if counts else set()
    if counts:
        kind = "counts"
    else:
        kind = "calltree" if any(c.parent is not None and exp.cnodes[c.parent].parent is not None
                                 for c in exp.cnodes) else "profile"
    view = _skeleton(exp, title or _report_title(reports), kind, derived)
    view["context"] = ctx.run_context(reports, totals)
    view["dropped"] = ctx.dropped_events(reports)
    if not counts:
        view["sources"] = src.build_sources(reports, read=read_sources)
        _object_files(view["regions"], reports)
    return view


def _object_files(regions: list[dict], reports: list) -> None:
    """A profile's regions with their object files as "module", and no
    "file" where the experiment could only name the object file (a call
    path's frame without line information)."""
    modules: dict[str, str] = {}
    for r in reversed(reports):  # the first report's object file for a function, as its locations list them
        locs = r.locations[::-1]
        modules.update(zip(map(_FUNCTION, locs), map(_MODULE, locs), strict=True))
    objects = set(modules.values())
    for r in reports:
        if r.callpaths is not None:
            objects.update(m.file for m in r.callpaths.modules.values())
    for reg in regions:
        if reg["file"] in objects:
            reg["file"] = None
        reg["module"] = modules.get(reg["name"], reg["module"])


def _report_title(reports: list) -> str:
    first = reports[0]
    name = first.command or os.path.basename(first.source) or "psuite report"
    ranks = {r.rank for r in reports if r.rank is not None}
    if len(ranks) > 1:
        return f"{name} ({len(ranks)} ranks)"
    return f"{name} ({len(reports)} threads)" if len(reports) > 1 else name


def _from_experiment(exp: Experiment, title: str | None) -> dict:
    operation = exp.attributes.get("operation", "")
    difference = operation.startswith("diff(")
    kind = "difference" if difference else "cube"
    name = title or operation or exp.attributes.get("command") or \
        os.path.basename(exp.attributes.get("source", "")) or "experiment"
    view = _skeleton(exp, name, kind, set())
    view["difference"] = difference
    view["context"] = ctx.experiment_context(exp)
    view["dropped"] = ctx.skipped_metrics(exp)
    return view


def _skeleton(exp: Experiment, title: str, kind: str, derived_names: set[str]) -> dict:
    """Every key of the view from the experiment; context, dropped and
    sources empty."""
    return {
        "psuite_view": VERSION,
        "title": title,
        "kind": kind,
        "difference": False,
        "context": [],
        "dropped": [],
        "metrics": [{"name": m.name, "display": m.display or m.name, "unit": m.unit, "description": m.description,
                     "parent": m.parent, "integer": m.integer,
                     "derived": m.derived or m.name in derived_names} for m in exp.metrics],
        "regions": [{"name": r.name, "module": r.module, "file": r.module if r.module not in ("", "??") else None,
                     "line": r.begin if r.begin > 0 else None} for r in exp.regions],
        "cnodes": {"region": [c.region for c in exp.cnodes], "parent": exp.parents().tolist(),
                   "line": [c.line for c in exp.cnodes]},
        "locations": [{"machine": loc.machine, "node": loc.node, "rank": loc.rank, "thread": loc.thread_rank,
                       "label": loc.label} for loc in exp.locations],
        "values": {m.name: _metric_values(exp, m, m.name in derived_names) for m in exp.metrics},
        "sources": [],
    }


def _metric_values(exp: Experiment, m, derived: bool) -> dict:
    """exclusive, and inclusive where summing exclusive values up the tree
    would be wrong: derived metrics (ratios) and least or greatest values."""
    exclusive = exp.exclusive(m.name)
    inclusive = None
    if m.derived or derived or m.combine is not np.add:
        inclusive = encode(exp.inclusive(m.name), m.integer)
    return {"exclusive": encode(exclusive, m.integer), "inclusive": inclusive}


def encode(a: np.ndarray, integer: bool = False) -> list:
    """A (cnodes, locations) array as a flat row-major list for JSON."""
    flat = np.asarray(a).reshape(-1)
    if flat.dtype.kind in "iub":
        return flat.astype(np.int64, copy=False).tolist()
    f = flat.astype(np.float64, copy=False)
    finite = np.isfinite(f)
    every = bool(finite.all())
    if integer and every and np.array_equal(f, np.round(f)) and (np.abs(f) < 2**53).all():
        return f.astype(np.int64).tolist()  # an integer metric's values after an operation that kept them whole
    f = _rounded(f, finite)
    if every:
        return f.tolist()
    o = f.astype(object)
    o[~finite] = None
    return o.tolist()


def _rounded(f: np.ndarray, finite: np.ndarray) -> np.ndarray:
    if not finite.any():
        return f
    big = float(np.abs(f[finite]).max())
    if big == 0.0:
        return f
    decimals = SIGNIFICANT - int(np.ceil(np.log10(big)))
    if decimals > 300:  # 10**decimals would overflow: values this small are left as they are
        return f
    with np.errstate(invalid="ignore", over="ignore"):
        return np.round(f, decimals)


def load_input(source: str, warn=None) -> tuple[Experiment, list | None]:
    """An input as experiments.load reads it, and its profiles (a
    MultiReport's members; None for a CUBE file or counting reports), for
    the sources of an algebra result."""
    from psuite.psprocess import experiments

    if experiments.is_cube(source):
        return experiments.load(source, warn=warn), None
    from psuite.psprocess import inputs, srcmap
    from psuite.psprocess.cli import _prepare
    from psuite.report import ProfileReport

    report = _prepare(inputs.load(source, warn=warn, on_module=srcmap.prefetch), experiments._derive)
    exp = experiments.from_report(report)
    exp.attributes.setdefault("source", source)  # as experiments.load names it
    reports, _ = _members(report)
    return exp, reports if isinstance(reports[0], ProfileReport) else None


def load_view(source: str, warn=None, *, read_sources: bool = True) -> dict:
    """The view of one input as psprocess reads it: a CUBE file, or a
    PerfSuite document (profiles resolved, metrics derived)."""
    from psuite.psprocess import experiments

    if experiments.is_cube(source):
        return build(experiments.load(source, warn=warn))
    from psuite.psprocess import inputs, srcmap
    from psuite.psprocess.cli import _prepare

    report = inputs.load(source, warn=warn, on_module=srcmap.prefetch)
    return build(_prepare(report, experiments._derive), read_sources=read_sources)
