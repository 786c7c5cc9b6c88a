"""psuite's own documents as runs, without an input description.

`psbase setup --psuite NAME` creates an experiment with the variables every
psuite document has (definition()); each counting report's events and
derived metrics become result variables of their own, added to the
experiment the first time a document brings them (event_variable()), in
the same transaction as the runs.

  counting report  once-values: kind, host, command, ranks, threads, date, machine,
                   wallclock, usertime, systemtime, and one value per event/metric
  profile          once-values as above plus profile_event and total_samples; the
                   function summary as data-set rows (function, module, samples)
  multi-report     (psprocess combine) one run: counts and samples summed over its reports

  resource report  (psrun -R) once-values: maxrss, maxvm, faults, CPU times, start
  CUBE file        (.cubex: psprocess --cube, Score-P, the CUBE tools) once-values:
                   kind, host, command, ranks, threads, and each metric's total over the
                   whole call tree and every location as a result (derived metrics
                   computed from those totals, as psprocess's summary does); one run per file

Several documents given with merge=True (e.g. the per-rank reports of one
MPI run, or psrun -p's per-thread reports) make one run the same way; a
process total whose threads are among them is left out (psprocess's rule)."""

from __future__ import annotations

import hashlib
import re
from collections import Counter

from psuite.cli_common import read_input
from psuite.errors import InputError, UsageError
from psuite.experiment import Experiment, ExpressionError
from psuite.psbase.model import BadValue, Definition, RunData, Variable, convert
from psuite.report import CountReport, MultiReport, ProfileReport, ResourceReport

KIND_COUNT, KIND_PROFILE, KIND_RESOURCE, KIND_CUBE = "count", "profile", "resource", "cube"

_BASE = [
    Variable("kind", "string", "psuite document kind", valid=[KIND_COUNT, KIND_PROFILE, KIND_RESOURCE, KIND_CUBE]),
    Variable("host", "string", "host name the program ran on"),
    Variable("command", "text", "the command line measured"),
    Variable("ranks", "integer", "MPI ranks (1 without MPI)", unit="process"),
    Variable("threads", "integer", "threads measured per process (the most of any process)", unit="thread"),
    Variable("date", "timestamp", "when the measurement started"),
    Variable("machine", "string", "processor brand"),
    Variable("profile_event", "string", "what a profile sampled (empty for counts)"),
    Variable("wallclock", "float", "wall-clock time (the longest of the run's reports)", unit="s",
             is_result=True),
    Variable("usertime", "float", "user CPU time summed over the run's reports", unit="s", is_result=True),
    Variable("systemtime", "float", "system CPU time summed over the run's reports", unit="s", is_result=True),
    Variable("total_samples", "integer", "profile samples summed over the run's reports", is_result=True),
    Variable("maxrss", "float", "largest resident set size (psrun -R)", unit="MB", is_result=True),
    Variable("maxvm", "float", "largest virtual memory size (psrun -R)", unit="MB", is_result=True),
    Variable("major_faults", "integer", "major page faults (psrun -R)", is_result=True),
    Variable("minor_faults", "integer", "minor page faults (psrun -R)", is_result=True),
    Variable("function", "string", "a profiled function", occurrence="multiple"),
    Variable("module", "string", "the module (executable or library) of the function", occurrence="multiple"),
    Variable("samples", "integer", "the function's samples summed over the run's reports",
             occurrence="multiple", is_result=True),
]
_BASE_NAMES = {v.name.lower() for v in _BASE}
_MARK = "psuite documents"  # in the project of definitions made here: native input is refused elsewhere


def definition(name: str) -> Definition:
    return Definition(name=name, synopsis="psuite measurements", project=_MARK,
                      description="Runs filed from psuite's documents (counting reports and profiles); "
                                  "events and derived metrics are added as results when first seen.",
                      variables=[Variable(**vars(v)) for v in _BASE])


def check_native(d: Definition) -> None:
    if d.project != _MARK:
        raise UsageError(f"experiment {d.name!r} was not set up for psuite documents; "
                         f"create one with psbase setup --psuite NAME")


def column_name(name: str) -> str:
    """A variable name for an event or metric: 'perf::CYCLES:u' -> 'perf_CYCLES_u'."""
    s = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")
    if not s or not s[0].isalpha() or s.lower() in _BASE_NAMES or s.lower().startswith("psb_"):
        s = "e_" + s
    return s[:63]


def _reports(doc) -> list:
    if isinstance(doc, Experiment):
        return [doc]
    if isinstance(doc, MultiReport):
        return list(doc.reports)
    if isinstance(doc, (CountReport, ProfileReport, ResourceReport)):
        return [doc]
    raise InputError(f"{getattr(doc, 'source', 'input')}: a {type(doc).__name__} cannot be filed yet; "
                     "give counting reports, profiles, resource reports or psprocess combinations")


def _load(path: str):
    from psuite.psprocess import calltree_resolve, experiments, srcmap
    from psuite.psprocess.inputs import load

    if experiments.is_cube(path):
        return experiments.load(path)  # readers/cube.py: an Experiment
    doc = load(path)
    for r in _reports(doc):
        if isinstance(r, ProfileReport) and not r.locations:
            srcmap.resolve_into(r)
            calltree_resolve.resolve_into(r)
        if isinstance(r, CountReport) and not r.metrics:
            experiments._derive(r)  # psuite's standard derived metrics, as psprocess shows them
    return doc


def _measures(r: CountReport) -> list[tuple[str, str, float]]:
    """(variable name, original name, value) of each event and metric."""
    out = [(column_name(e.name), e.name, float(e.count)) for e in r.events]
    out += [(column_name(m.name), m.name, float(m.value)) for m in r.metrics if m.value == m.value]
    return out


def event_variable(column: str, original: str) -> Variable:
    return Variable(column, "float", synopsis=original, is_result=True)


def run_of(paths: list[str], reports: list) -> tuple[RunData, list[Variable]]:
    """One run from the reports of the documents at paths, and the result
    variables it needs for its events and metrics."""
    kinds = {_kind(r) for r in reports}
    if KIND_CUBE in kinds:
        if len(reports) != 1:
            raise UsageError(f"{', '.join(paths)}: CUBE files are filed one per run; leave out --merge "
                             "(or combine them first: psprocess -c --cube)")
        return _cube_run(paths, reports[0])
    if len(kinds) != 1:
        raise UsageError(f"{', '.join(paths)}: {' and '.join(sorted(kinds))} reports cannot make one run; "
                         "file them as separate runs")
    kind = kinds.pop()
    if kind == KIND_RESOURCE:
        if len(reports) != 1:
            raise UsageError(f"{', '.join(paths)}: resource reports are filed one per run; leave out --merge")
        return _resource_run(paths, reports[0]), []
    from psuite.psprocess.combine import split_totals

    # `psrun -p` writes each thread's report and the process total: the total would count everything twice
    reports = split_totals(reports)[0]
    first = reports[0]
    ranks = {r.rank for r in reports if r.rank is not None}
    per_process = Counter((r.hostname, r.pid) for r in reports)
    values: dict[str, object] = {
        "kind": kind, "host": ",".join(sorted({r.hostname for r in reports})), "command": first.command,
        "ranks": len(ranks) or 1, "threads": max(per_process.values()),
        "usertime": sum(r.usertime or 0.0 for r in reports),
        "systemtime": sum(r.systemtime or 0.0 for r in reports),
    }
    walls = [r.wallclock for r in reports if r.wallclock is not None]
    if walls:
        values["wallclock"] = max(walls)
    dates = []
    for r in reports:
        try:
            dates.append(convert(Variable("date", "timestamp"), r.date))
        except BadValue:
            pass  # an unreadable date is left empty rather than refusing the measurement
    if dates:
        values["date"] = min(dates)
    if first.machine is not None and first.machine.brand:
        values["machine"] = first.machine.brand
    rows: list[dict[str, object]] = []
    needed: dict[str, Variable] = {}
    if kind == KIND_COUNT:
        sums: dict[str, float] = {}
        for r in reports:
            for col, original, value in _measures(r):
                prev = needed.get(col)
                if prev is not None and prev.synopsis != original:
                    raise UsageError(f"events {prev.synopsis!r} and {original!r} both become variable "
                                     f"{col!r}; file them in separate experiments")
                needed[col] = event_variable(col, original)
                sums[col] = sums.get(col, 0.0) + value
        values.update(sums)
    else:
        events = {r.event for r in reports}
        values["profile_event"] = ",".join(sorted(events))
        values["total_samples"] = sum(r.total_samples for r in reports)
        by_function: Counter = Counter()
        for r in reports:
            for loc in r.locations:
                by_function[(loc.function, loc.module)] += loc.samples
        rows = [{"function": f, "module": m, "samples": n}
                for (f, m), n in sorted(by_function.items(), key=lambda kv: (-kv[1], kv[0]))]
    return RunData(values=values, rows=rows, sources=list(paths), content_hash=content_hash(paths)), \
        list(needed.values())


def _kind(r) -> str:
    if isinstance(r, Experiment):
        return KIND_CUBE
    return KIND_PROFILE if isinstance(r, ProfileReport) else KIND_RESOURCE if isinstance(r, ResourceReport) \
        else KIND_COUNT


def _cube_run(paths: list[str], exp: Experiment) -> tuple[RunData, list[Variable]]:
    """One run from a CUBE experiment: where it ran from its system tree
    (ranks: its processes; threads: the most of any process), the command
    psuite recorded (else the program: the first root's region), and each
    metric's total over every call path and location as a result."""
    per_process = Counter((loc.node, loc.rank) for loc in exp.locations)
    roots = exp.roots
    command = exp.attributes.get("command") or (exp.region_name(roots[0]) if roots else "")
    values: dict[str, object] = {
        "kind": KIND_CUBE, "host": ",".join(sorted({loc.node for loc in exp.locations})), "command": command,
        "ranks": len(per_process) or 1, "threads": max(per_process.values(), default=1),
    }
    needed: dict[str, Variable] = {}
    for m in exp.metrics:
        try:
            total = exp.total(m.name)
        except (ExpressionError, KeyError, ZeroDivisionError, ValueError):
            continue  # a derived metric whose expression cannot be computed from totals: no value
        if total != total or total in (float("inf"), float("-inf")):
            continue  # NaN or infinite (e.g. a ratio over a zero total): no value rather than a wrong one
        col = column_name(m.name)
        prev = needed.get(col)
        if prev is not None and prev.synopsis != m.name:
            raise UsageError(f"metrics {prev.synopsis!r} and {m.name!r} both become variable {col!r}; "
                             "file them in separate experiments")
        needed[col] = event_variable(col, m.name)
        values[col] = float(total)
    return RunData(values=values, sources=list(paths), content_hash=content_hash(paths)), list(needed.values())


def _resource_run(paths: list[str], r: ResourceReport) -> RunData:
    values: dict[str, object] = {
        "kind": KIND_RESOURCE, "host": r.hostname, "command": r.command, "ranks": 1,
        "usertime": r.usertime, "systemtime": r.systemtime, "maxrss": r.maxrss_mb, "maxvm": r.maxvm_mb,
        "major_faults": r.major_faults, "minor_faults": r.minor_faults,
    }
    try:
        start = convert(Variable("date", "timestamp"), r.starttime)
        # the archive's timestamps are local times without a zone, as counting reports write them
        values["date"] = start.astimezone().replace(tzinfo=None) if start.tzinfo else start
    except BadValue:
        pass
    return RunData(values=values, sources=list(paths), content_hash=content_hash(paths))


def content_hash(paths: list[str]) -> str:
    """sha256 over the files' own hashes, in sorted order: the same files
    given in another order are the same import."""
    parts = sorted(hashlib.sha256(read_input(p)).hexdigest() for p in paths)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def runs(paths: list[str], merge: bool = False) -> tuple[list[RunData], list[Variable]]:
    """The runs of psuite documents: one per document, or one for all of
    them with merge; and the event/metric variables they bring."""
    loaded = [(p, _reports(_load(p))) for p in paths]
    groups = [(paths, [r for _, rs in loaded for r in rs])] if merge else [([p], rs) for p, rs in loaded]
    out: list[RunData] = []
    variables: dict[str, Variable] = {}
    for ps, reports in groups:
        run, needed = run_of(ps, reports)
        out.append(run)
        for v in needed:
            variables.setdefault(v.name, v)
    return out, list(variables.values())
