"""The view (see psuite.psprocess.html for its schema) of anything psuite
reads: `build(subject)` for a report (CountReport, ProfileReport,
MultiReport of either) or an Experiment (a CUBE file, a result of the
algebra).  `load_view(source)` reads an input as psprocess does first.

Values go out sparse (encode: the non-zero cells, as varints or packed
floats in base64), made by whole-array numpy operations, never a Python
loop per cell: 1,024 ranks x 10,000 call paths are 10 million cells per
metric.  Whole numbers stay whole; other values are rounded to 12
significant digits of the metric's largest value (0.30000000000000004
says nothing more) and stored as float32 where that is exact; a value that
is not a number (NaN, inf) is listed apart,
which the page shows as "-" and leaves out of sums and charts."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from operator import attrgetter

import numpy as np

from psuite.analysis import run_context as ctx
from psuite.analysis.experiments import RUN_TIMES
from psuite.errors import UsageError
from psuite.model.experiment import Experiment
from psuite.model.report import ProfileReport
from psuite.psprocess.html import sources as src

VERSION = 1
WALL_CLOCK, CPU_TIME = (RUN_TIMES[k][0] for k in ("wallsecs", "cpusecs"))  # a counting report's run times
UNNAMED_MACHINE = "machine"  # what experiments names the machine of reports' locations
_ALIAS = re.compile(r"metric::([A-Za-z_][A-Za-z0-9_:]*)\(\)")
SIGNIFICANT = 12  # digits kept of a float metric's largest value
_FUNCTION, _MODULE = attrgetter("function"), attrgetter("module")


def build(subject, *, title: str | None = None, read_sources: bool = True,
          inputs: list[list | None] | None = None, source_dirs: Sequence[str] = (),
          statistics: str | None = None) -> dict:
    """The view of a report or an experiment.  read_sources=False leaves
    the source files unread (their samples per line are still given);
    source_dirs: directories whose files may be shown besides the
    program's build tree (sources.SourceDirs).
    statistics: a CUBE statistics file (.stat) whose patterns the page
    shows; by default a CUBE file's own, beside it (as CUBE finds it).
    inputs: for an algebra result, per input the reports it was made from
    (load_input; None for a CUBE file): named in the context, and their
    profiles' lines combined as the operation combined the values."""
    given_statistics = statistics is not None
    if isinstance(subject, Experiment):
        from psuite.model.report import CountReport

        # a result of counting reports alone (a difference, a mean ...) is shown as counting reports are
        counts = bool(inputs) and all(r and isinstance(r[0], CountReport) for r in inputs)
        # the reports' derived metrics, by the unique names experiments gave them (displayed as named)
        shown = {d.name for reports in inputs or [] if reports for r in reports for d in r.metrics} if counts else set()
        derived = {m.name for m in subject.metrics if m.display in shown}
        view = _from_experiment(subject, title, counts=counts, derived=derived)
        if view["difference"] and inputs and len(inputs) == 2 and inputs[1]:
            view["external"] = _external(view, inputs[1])
        if inputs:
            operation = subject.attributes.get("operation", "").split("(", 1)[0]
            view["context"] += ctx.input_context(inputs, operation)
            profiles = [r if r and isinstance(r[0], ProfileReport) else None for r in inputs]
            view["sources"] = src.result_sources(operation, profiles, read=read_sources, source_dirs=source_dirs)
        _name_machine(view["locations"], next((r for r in inputs or [] if r), None))  # a CUBE file psuite wrote too
        source = subject.attributes.get("source", "")
        if not given_statistics and not inputs and source.endswith(".cubex"):
            from psuite.formats.readers import cubestat

            statistics = cubestat.beside(source)
    else:
        view = _from_report(subject, title, read_sources, source_dirs)
    if statistics:
        view["statistics"] = pattern_statistics(statistics, view["metrics"], given=given_statistics)
    return view


def pattern_statistics(path: str, metrics: list[dict], given: bool = True) -> list[dict]:
    """A statistics file's patterns for the view, each with the index of
    the view's metric it names (by name: psuite's CUBE writer names a
    pattern after its metric, spaces as underscores), or null.  given (the
    user named the file): one without any pattern is refused, where a
    file found beside a cube is then just empty."""
    from psuite.errors import InputError
    from psuite.formats.readers import cubestat

    patterns = cubestat.read(path)
    if given and not patterns:
        raise InputError(f"{path}: no performance pattern in this statistics file (CUBE's .stat: a heading "
                         "line, then a line per pattern: its name, metric id and count); give one that "
                         "psprocess --cube or CubeLib wrote")
    names = {}
    for i, m in enumerate(metrics):
        for name in (m["display"], m["name"]):
            names[name.replace(" ", "_")] = i
    return [{"pattern": p.name, "metric": names.get(p.name), "metric_id": p.metric_id, "count": p.count,
             "figures": p.figures,
             "instances": [[x.cnode, x.enter, x.exit, x.duration] for x in p.instances]}
            for p in patterns]


def _members(report) -> tuple[list, int]:
    """The single reports of a report (a MultiReport's), and how many
    process totals were set apart."""
    from psuite.model.report import CountReport, MultiReport

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


def _from_report(report, title: str | None, read_sources: bool, source_dirs: Sequence[str] = ()) -> dict:
    from psuite.analysis import experiments
    from psuite.model.report import CountReport

    reports, totals = _members(report)
    exp = experiments.from_report(report)
    counts = isinstance(reports[0], CountReport)
    shown = {d.name for r in reports for d in r.metrics} if counts else set()
    derived = {m.name for m in exp.metrics if m.display in shown}
    if counts:
        kind = "counts"
    else:
        kind = "calltree" if any(c.parent is not None and exp.cnodes[c.parent].parent is not None
                                 for c in exp.cnodes) else "profile"
    view = _skeleton(exp, title or _report_title(reports), kind, derived)
    _name_machine(view["locations"], reports)
    view["context"] = ctx.run_context(reports, totals)
    view["dropped"] = ctx.dropped_events(reports)
    if not counts:
        view["sources"] = src.build_sources(reports, read=read_sources, source_dirs=source_dirs)
        _object_files(view["regions"], reports)
    return view


def _external(view: dict, reports: list) -> dict:
    """CUBE's external percent for a difference: the subtrahend's value of
    each metric the view shows (over its root call paths and locations,
    combined as the page combines the difference's), what 100 % is."""
    from psuite.analysis import experiments
    from psuite.model.report import MultiReport

    exp = experiments.from_report(reports[0] if len(reports) == 1 else MultiReport(reports=list(reports)))
    roots = np.flatnonzero(exp.parents() < 0)
    names = {m.name for m in exp.metrics}
    over = {"sum": np.nansum, "mean": np.nanmean, "max": np.nanmax, "min": np.nanmin}
    totals = {}
    for m in view["metrics"]:
        if m["name"] in names:
            combine = over[m["over"]]
            per_root = combine(np.asarray(exp.inclusive(m["name"]), dtype=float)[roots], axis=1)
            totals[m["name"]] = float(combine(per_root))
    return {"name": reports[0].source or "the subtrahend", "totals": totals}


def _name_machine(locations: list[dict], reports: list | None) -> None:
    """The system tree's root named when psuite knows a name for it:
    experiments calls every report's machine "machine"; here it is the
    hosts' common domain, else the one host, else how many hosts."""
    unnamed = [loc for loc in locations if loc["machine"] == UNNAMED_MACHINE]
    if not unnamed:
        return
    domains = {r.domainname for r in reports or []}
    hosts = sorted({loc["node"] for loc in unnamed})
    if len(domains) == 1 and (domain := domains.pop()) and domain != "(none)":
        name = domain
    elif len(hosts) == 1:
        name = hosts[0]
    else:
        name = f"{len(hosts)} hosts"
    for loc in unnamed:
        loc["machine"] = name


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


def _from_experiment(exp: Experiment, title: str | None, *, counts: bool = False,
                     derived: set[str] | None = None) -> dict:
    operation = exp.attributes.get("operation", "")
    difference = operation.startswith("diff(")
    kind = "counts" if counts else "difference" if difference else "cube"
    name = title or operation or exp.attributes.get("command") or \
        os.path.basename(exp.attributes.get("source", "")) or "experiment"
    view = _skeleton(exp, name, kind, derived or set())
    view["difference"] = difference
    view["context"] = ctx.experiment_context(exp)
    view["dropped"] = ctx.skipped_metrics(exp)
    return view


def _skeleton(exp: Experiment, title: str, kind: str, derived_names: set[str]) -> dict:
    """Every key of the view from the experiment; context, dropped and
    sources empty."""
    shown, parents = _shown_metrics(exp)
    return {
        "psuite_view": VERSION,
        "title": title,
        "kind": kind,
        "difference": False,
        "context": [],
        "dropped": [],
        "metrics": [{"name": m.name, "display": m.display or m.name, "unit": _unit(m), "description": m.description,
                     "parent": parents[i], "integer": m.integer,
                     "derived": m.derived or m.name in derived_names,
                     "over": _over(m, m.derived or m.name in derived_names)}
                    for i, m in ((i, exp.metrics[i]) for i in shown)],
        "regions": [{"name": r.name, "module": r.module, "file": r.module if r.module not in ("", "??") else None,
                     "line": r.begin if r.begin > 0 else None} for r in exp.regions],
        "cnodes": {"region": [c.region for c in exp.cnodes], "parent": exp.parents().tolist(),
                   "line": [c.line for c in exp.cnodes]},
        "locations": [{"machine": loc.machine, "node": loc.node, "rank": loc.rank, "thread": loc.thread_rank,
                       "label": loc.label} for loc in exp.locations],
        "values": {exp.metrics[i].name: _metric_values(exp, exp.metrics[i], exp.metrics[i].name in derived_names)
                   for i in shown},
        "sources": [],
        "external": None,
        "statistics": [],
        "topologies": [_topology(t, len(exp.locations)) for t in exp.topologies],
    }


def _topology(t, locations: int) -> dict:
    """A Cartesian topology for the view: its dimensions, and per location
    of the view its coordinates (null where it has no place)."""
    coordinates: list[list[int] | None] = [None] * locations
    for loc, xyz in t.coordinates.items():
        if 0 <= loc < locations:
            coordinates[loc] = [int(x) for x in xyz]
    return {"name": t.name or None,
            "dimensions": [{"name": name or None, "size": int(size), "periodic": bool(periodic)}
                           for name, size, periodic in t.dimensions],
            "coordinates": coordinates}


# A metric's own unit where CUBE's unit of measurement says only "occ" (occurrences): a psmetrics
# metric's percent or rate, and the perf clocks' events, counted in nanoseconds.
_OWN_UNITS = {"percent": "%", "rate": "/s"}
_NANOSECOND_EVENTS = {"task-clock", "cpu-clock", "duration_time"}


def _unit(m) -> str:
    """The unit the page shows with a metric's values."""
    if m.unit != "occ":
        return m.unit
    own = m.attributes.get("psuite::unit", "").lower()
    if own in _OWN_UNITS:
        return _OWN_UNITS[own]
    from psuite.hwpc.names import canonical

    return "ns" if canonical(m.display or m.name) in _NANOSECOND_EVENTS else m.unit


def _alias_of(m) -> str | None:
    """The metric a derived metric only repeats ("CPU time (seconds)" =
    metric::cpu_seconds()), else None."""
    if not m.derived:
        return None
    found = _ALIAS.fullmatch(m.expression.replace(" ", ""))
    return found.group(1) if found else None


def _shown_metrics(exp: Experiment) -> tuple[list[int], dict[int, int | None]]:
    """The metrics the view shows (indices in exp.metrics) and each one's
    parent as an index in the view: a counting report's run times
    (experiments' wall_seconds and cpu_seconds, which its derived metrics
    refer to) are left out where psmetrics' own "Wall clock time
    (seconds)" and "CPU time (seconds)" repeat them, so each time is shown
    once, under the name the text report gives it."""
    names = {m.name: i for i, m in enumerate(exp.metrics)}
    has_kids = {m.parent for m in exp.metrics if m.parent is not None}
    repeated = {names[a] for m in exp.metrics if (a := _alias_of(m)) in names}
    shown = [i for i in range(len(exp.metrics)) if i not in repeated or i in has_kids]
    position = {i: k for k, i in enumerate(shown)}
    return shown, {i: position.get(exp.metrics[i].parent) for i in shown}


def _over(m, derived: bool) -> str:
    """How the page combines a metric's values over locations (ranks,
    threads): a run's wall clock is its longest rank's (the context's
    "Wall clock" too), never their sum; its CPU time all ranks' together;
    CUBE's MIN/MAXDOUBLE the least/greatest; other derived metrics (ratios,
    rates) the mean; counts and samples the sum."""
    name = _alias_of(m) or m.name
    if name == WALL_CLOCK:
        return "max"
    if name == CPU_TIME:
        return "sum"
    if m.combine is np.maximum:
        return "max"
    if m.combine is np.minimum:
        return "min"
    return "mean" if derived else "sum"


def _metric_values(exp: Experiment, m, derived: bool) -> dict:
    """exclusive, and inclusive where summing exclusive values up the tree
    would be wrong: derived metrics (ratios) and least or greatest values."""
    exclusive = exp.exclusive(m.name)
    inclusive = None
    if m.derived or derived or m.combine is not np.add:
        inclusive = encode(exp.inclusive(m.name), m.integer)
    return {"exclusive": encode(exclusive, m.integer), "inclusive": inclusive}


def encode(a: np.ndarray, integer: bool = False) -> dict:
    """A (cnodes, locations) array, row-major, as the view stores values
    (see psuite.psprocess.html): the non-zero cells only, their positions
    as gaps and their values as whole numbers (varints), float32 where
    every value is one exactly, else float64; cells that are no number
    (NaN, inf) listed apart.  A sampled run is non-zero on a few percent
    of its cells, and its values are small counts: 1,024 ranks x 10,000
    call paths take some 1 MB a metric here, 40 MB as a JSON list."""
    flat = np.asarray(a).reshape(-1)
    if flat.dtype.kind in "iub":
        flat = flat.astype(np.int64, copy=False)
        nulls = np.zeros(0, np.int64)
    else:
        f = flat.astype(np.float64, copy=False)
        finite = np.isfinite(f)
        nulls = np.flatnonzero(~finite)
        flat = np.where(finite, f, 0.0)
        every = not len(nulls)
        # an integer metric's values after an operation that kept them whole
        whole = integer and every and np.array_equal(flat, np.round(flat)) and bool((np.abs(flat) < 2**53).all())
        flat = flat.astype(np.int64) if whole else _rounded(flat, finite)
    at = np.flatnonzero(flat)
    values = flat[at]
    out = {"n": int(len(flat)), "at": _b64(_varints(_gaps(at)))}
    if values.dtype.kind == "f" and np.array_equal(values, np.round(values)) and bool((np.abs(values) < 2**53).all()):
        values = values.astype(np.int64)  # whole numbers go as varints whatever the metric's type
    if values.dtype.kind == "i":
        out["int"] = _b64(_varints((values << 1) ^ (values >> 63)))  # zigzag: small negatives stay short
    elif np.array_equal(values.astype(np.float32).astype(np.float64), values):
        out["f32"] = _b64(values.astype("<f4").tobytes())
    else:
        out["f64"] = _b64(values.astype("<f8").tobytes())
    if len(nulls):
        out["null"] = _b64(_varints(_gaps(nulls)))
    return out


def decode(values: dict | list) -> list:
    """The plain row-major list of cells of values the view stores
    (encode's inverse; a plain list, as a hand-written view may give, is
    returned as it is): ints, floats, None for no number."""
    if isinstance(values, list):
        return values
    n = values["n"]
    at = np.cumsum(_unvarints(_unb64(values["at"])) + 1) - 1
    if "int" in values:
        z = _unvarints(_unb64(values["int"])).view(np.uint64)
        cells: list = np.zeros(n, np.int64)
        cells[at] = ((z >> np.uint64(1)) ^ (np.uint64(0) - (z & np.uint64(1)))).view(np.int64)
    else:
        cells = np.zeros(n, np.float64)
        dtype = "<f4" if "f32" in values else "<f8"
        cells[at] = np.frombuffer(_unb64(values.get("f32") or values["f64"]), dtype)
    cells = cells.tolist()
    if "null" in values:
        for i in (np.cumsum(_unvarints(_unb64(values["null"])) + 1) - 1).tolist():
            cells[i] = None
    return cells


def _gaps(at: np.ndarray) -> np.ndarray:
    """Sorted positions as the cells skipped before each (0: the next cell)."""
    return np.diff(at, prepend=-1) - 1


def _varints(a: np.ndarray) -> bytes:
    """Non-negative integers (below 2**63) as LEB128 varints: 7 bits a byte,
    the high bit set on every byte but a number's last."""
    a = np.asarray(a, np.int64).astype(np.uint64)
    if not len(a):
        return b""
    size = np.ones(len(a), np.int64)
    rest = a >> np.uint64(7)
    while rest.any():
        size += rest != 0
        rest >>= np.uint64(7)
    start = np.cumsum(size) - size
    out = np.zeros(int(size.sum()), np.uint8)
    for k in range(int(size.max())):
        on = size > k
        more = (size[on] > k + 1).astype(np.uint8) << 7
        out[start[on] + k] = ((a[on] >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8) | more
    return out.tobytes()


def _unvarints(data: bytes) -> np.ndarray:
    b = np.frombuffer(data, np.uint8)
    last = np.flatnonzero(b < 0x80)  # each number's last byte
    first = np.concatenate(([0], last[:-1] + 1)).astype(np.int64)
    out = np.zeros(len(last), np.uint64)
    for k in range(int((last - first).max(initial=-1)) + 1):
        on = first + k <= last
        out[on] |= (b[first[on] + k].astype(np.uint64) & np.uint64(0x7F)) << np.uint64(7 * k)
    return out.view(np.int64)


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    import base64

    return base64.b64decode(text)


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


def _read_report(source: str, warn=None):
    """A PerfSuite document made ready as psprocess makes it (profiles
    resolved, metrics derived), as experiments.load reads one."""
    from psuite.analysis import inputs, metrics, srcmap
    from psuite.analysis.prepare import prepare

    return prepare(inputs.load(source, warn=warn, on_module=srcmap.prefetch), metrics.derive_standard)


def load_input(source: str, warn=None) -> tuple[Experiment, list | None]:
    """An input as experiments.load reads it, and its reports (a
    MultiReport's members; None for a CUBE file), for build(inputs=...)."""
    from psuite.analysis import experiments

    if experiments.is_cube(source):
        return experiments.load(source, warn=warn), None
    report = _read_report(source, warn)
    exp = experiments.from_report(report)
    exp.attributes.setdefault("source", source)  # as experiments.load names it
    return exp, _members(report)[0]


def load_view(source: str, warn=None, *, read_sources: bool = True, source_dirs: Sequence[str] = ()) -> dict:
    """The view of one input as psprocess reads it: a CUBE file, or a
    PerfSuite document."""
    from psuite.analysis import experiments

    if experiments.is_cube(source):
        return build(experiments.load(source, warn=warn))
    return build(_read_report(source, warn), read_sources=read_sources, source_dirs=source_dirs)
