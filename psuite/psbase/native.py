"""psuite's own documents as runs, without an input description.

`psbase setup --psuite NAME` creates an experiment with the variables every
psuite document has (definition()); each counting report's events and
derived metrics become result variables of their own, added to the
experiment the first time a document brings them (event_variable()), in
the same transaction as the runs.

  counting report  once-values: kind, host, command, ranks, threads, date, machine,
                   wallclock, usertime, systemtime, and one value per event/metric
  profile          once-values as above plus profile_event and total_samples; the
                   function summary as data-set rows (function, module, samples) and the
                   line summary (psprocess's Function:File:Line Summary) as rows of the same
                   data set with variables of their own (line_function, line_file, line,
                   line_samples) and the function columns empty: the data set is one table
                   per run, and a query of `samples` sees only rows where samples is set
                   (the function rows), one of `line_samples` only the line rows, so neither
                   summary counts the other's samples
  multi-report     (psprocess combine) one run: counts and samples summed over its reports

  resource report  (psrun -R) once-values: maxrss, maxvm, faults, CPU times, start
  CUBE file        (.cubex: psprocess --cube, Score-P, the CUBE tools) once-values:
                   kind, host, command, ranks, threads, and each metric's total over the
                   whole call tree and every location as a result (derived metrics
                   computed from those totals, as psprocess's summary does); one run per file

Several documents given with merge=True (e.g. the per-rank reports of one
MPI run, or psrun -p's per-thread reports) make one run the same way; a
process total whose threads are among them is left out (psprocess's rule).
Events add up over the reports; derived metrics are combined as psprocess
-c prints them (see _combine_metric).

Dates are filed in UTC, as text inputs are: a document's date without a
zone (counting reports and profiles write the local time, psuite's CUBE
files copy it) is taken as the local time of the machine filing it, which
is the machine that wrote it when psrun/psprocess file straight away
(--archive); a date with an offset (resource reports) is converted."""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
from collections import Counter

from psuite.cli_common import read_input
from psuite.errors import InputError, UsageError
from psuite.hwpc.names import canonical
from psuite.model.experiment import Experiment, ExpressionError
from psuite.model.report import CountReport, MultiReport, ProfileReport, ResourceReport
from psuite.psbase.model import BadValue, Definition, RunData, Variable, convert

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
    Variable("total_samples", "integer", "profile samples summed over the run's reports", unit="sample",
             is_result=True),
    # psrun writes hwm_kb / 1024 with units="MB": kibibytes / 1024 are mebibytes (MiB), not 10^6 bytes
    Variable("maxrss", "float", "largest resident set size (psrun -R)", unit="MiB", is_result=True),
    Variable("maxvm", "float", "largest virtual memory size (psrun -R)", unit="MiB", is_result=True),
    Variable("major_faults", "integer", "major page faults (psrun -R)", unit="fault", is_result=True),
    Variable("minor_faults", "integer", "minor page faults (psrun -R)", unit="fault", is_result=True),
    Variable("function", "string", "a profiled function", occurrence="multiple"),
    Variable("module", "string", "the module (executable or library) of the function", occurrence="multiple"),
    Variable("samples", "integer", "the function's samples summed over the run's reports", unit="sample",
             occurrence="multiple", is_result=True),
]
# the line summary: rows of their own in the profile's data set (see the module's docstring)
_LINES = [
    Variable("line_function", "string", "the function of a profiled source line", occurrence="multiple"),
    Variable("line_file", "string", "the source file of a profiled line ('??' when unknown)",
             occurrence="multiple"),
    Variable("line", "integer", "a profiled source line (0 when unknown)", occurrence="multiple"),
    Variable("line_samples", "integer", "the line's samples summed over the run's reports", unit="sample",
             occurrence="multiple", is_result=True),
]
_BASE += _LINES
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
    from psuite.analysis import calltree_resolve, experiments, metrics, srcmap
    from psuite.analysis.inputs import load

    if experiments.is_cube(path):
        return experiments.load(path)  # readers/cube.py: an Experiment
    doc = load(path)
    for r in _reports(doc):
        if isinstance(r, ProfileReport) and not r.locations:
            srcmap.resolve_into(r)
            calltree_resolve.resolve_into(r)
        if isinstance(r, CountReport) and not r.metrics:
            metrics.derive_standard(r)  # psuite's standard derived metrics, as psprocess shows them
    return doc


def _measures(r: CountReport) -> list[tuple[str, str, float]]:
    """(variable name, event or metric name, value) of each event and
    metric; events are under their canonical names (the reader's), so
    task-clock is task_clock whichever backend counted it."""
    out = [(column_name(e.name), e.name, float(e.count)) for e in r.events]
    out += [(column_name(m.name), m.name, float(m.value)) for m in r.metrics if m.value == m.value]
    return out


# units of the events psuite counts through perf_event (software events and the cycle counts); the
# name without a PMU prefix ("perf::") or modifiers (":u"), lower case; other events have no known unit
_EVENT_UNITS = {
    "task-clock": "ns", "cpu-clock": "ns",  # perf's clocks count nanoseconds
    "page-faults": "fault", "faults": "fault", "minor-faults": "fault", "major-faults": "fault",
    "context-switches": "switch", "cs": "switch", "cpu-migrations": "migration", "migrations": "migration",
    "cycles": "cycle", "cpu-cycles": "cycle", "ref-cycles": "cycle", "papi_tot_cyc": "cycle",
    "papi_ref_cyc": "cycle",
}
# units of psuite's standard derived metrics (configs/metrics.xml), by the type the definition gives,
# else by name for the rates; "ratio" has none
_METRIC_TYPE_UNITS = {"seconds": "s", "percent": "percent", "MB/s": "MB/s"}
_RATE_UNITS = {"MFLOPS": "Mflop/s", "MIPS": "Mega instruction/s", "Page faults per second": "fault/s",
               "Context switches per second": "switch/s"}


def event_unit(name: str) -> str:
    base = name.rsplit("::", 1)[-1].split(":", 1)[0].lower()
    return _EVENT_UNITS.get(base, "")


def metric_unit(name: str, kind: str) -> str:
    if kind in _METRIC_TYPE_UNITS:
        return _METRIC_TYPE_UNITS[kind]
    if kind == "rate":
        return next((u for prefix, u in _RATE_UNITS.items() if name.startswith(prefix)), "")
    return ""


def event_variable(column: str, original: str, unit: str = "", description: str = "") -> Variable:
    return Variable(column, "float", synopsis=original, description=description, unit=unit, is_result=True)


# how psprocess -c's statistics combine a derived metric over a run's reports (ranks, threads), and
# which of the statistics it prints is filed: the wall clock time is the longest report's (its "max",
# as wallclock is), the CPU time adds up (its "sum"), every other metric (ratios, percentages, rates)
# is its "mean" per report: CPU utilization of 4 ranks at 15 % each is 15 %, not 60 %
_WALL, _CPU = ("ci", "wallsecs"), ("ci", "cpusecs")


def _metric_rule(name: str) -> str:
    from psuite.analysis.metrics import standard_definitions

    for d in standard_definitions():
        if d.name == name:
            if d.alternatives == (_WALL,):
                return "max"
            if d.alternatives == (_CPU,):
                return "sum"
    return "mean"


_RULE_WORDS = {"max": "the longest of the run's reports", "sum": "summed over the run's reports",
               "mean": "the mean over the run's reports (psprocess -c's mean)"}


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
    from psuite.analysis.combine import split_totals

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
    dates = [d for d in (_utc(r.date) for r in reports) if d is not None]
    if dates:
        values["date"] = min(dates)
    if first.machine is not None and first.machine.brand:
        values["machine"] = first.machine.brand
    rows: list[dict[str, object]] = []
    needed: dict[str, Variable] = {}
    if kind == KIND_COUNT:
        from psuite.analysis.combine import compute

        # the statistics psprocess -c prints of the same reports, over their experiment: an event's
        # sum, a derived metric's mean, longest or sum (_metric_rule)
        stats = {(s.kind, s.name): s for s in compute(reports)}
        for r in reports:
            for col, original, _ in _measures(r):
                prev = needed.get(col)
                if prev is not None and prev.synopsis != original:
                    raise UsageError(f"events {prev.synopsis!r} and {original!r} both become variable "
                                     f"{col!r}; file them in separate experiments")
                needed[col] = _measure_variable(r, col, original)
                is_metric = any(m.name == original for m in r.metrics)
                s = stats[("metric" if is_metric else "event", original)]
                if not is_metric:
                    values[col] = s.sum  # events add up
                else:
                    values[col] = {"max": s.max, "sum": s.sum, "mean": s.mean}[_metric_rule(original)]
    else:
        events = {r.event for r in reports}
        values["profile_event"] = ",".join(sorted(events))
        values["total_samples"] = sum(r.total_samples for r in reports)
        from psuite.analysis.experiments import source_lines

        # the model's flat view of the profiles (Experiment.lines), which psprocess's profile report renders
        table = source_lines(reports)
        by_function: Counter = Counter()
        for f, m, n in zip(table.functions, table.modules, table.samples, strict=True):
            by_function[(f, m)] += n
        rows = [{"function": f, "module": m, "samples": n}
                for (f, m), n in sorted(by_function.items(), key=lambda kv: (-kv[1], kv[0]))]
        # psprocess's Function:File:Line Summary: samples per (function, file, line)
        by_line: Counter = Counter()
        for f, fl, ln, n in zip(table.functions, table.files, table.lines, table.samples, strict=True):
            by_line[(f, fl, ln)] += n
        rows += [{"line_function": f, "line_file": fl, "line": ln, "line_samples": n}
                 for (f, fl, ln), n in sorted(by_line.items(), key=lambda kv: (-kv[1], kv[0]))]
        for v in _LINES:  # an experiment set up before the line summary was filed gets them now
            needed[v.name] = Variable(**vars(v))
    return RunData(values=values, rows=rows, sources=list(paths), content_hash=content_hash(paths)), \
        list(needed.values())


def _measure_variable(r: CountReport, col: str, original: str) -> Variable:
    """The variable of an event or derived metric, with its unit when known."""
    for m in r.metrics:
        if m.name == original:
            return event_variable(col, original, metric_unit(m.name, m.unit),
                                  f"derived metric: {_RULE_WORDS[_metric_rule(original)]}")
    return event_variable(col, original, event_unit(original), "event: summed over the run's reports")


def _utc(text: str | None) -> _dt.datetime | None:
    """A document's date in UTC without a zone (the archive's form); one
    written without an offset is the local time of this machine (see the
    module's docstring).  None when unreadable: the date is left empty
    rather than refusing the measurement."""
    if not text:
        return None
    s = text.strip()
    try:
        t = _dt.datetime.fromisoformat(s.replace("Z", "+00:00") if s.endswith("Z") else s)
    except ValueError:
        try:
            t = convert(Variable("date", "timestamp"), s)  # psuite's "%a %b %d %H:%M:%S %Y" and the like
        except BadValue:
            return None
        if re.search(r"[+-]\d\d:?\d\d$|\b(UTC|GMT|Z)\b", s):
            return t  # convert() has taken the offset into account: already UTC
    if t.tzinfo is None:
        t = t.astimezone()  # naive: the local time zone's (TZ), DST included
    return t.astimezone(_dt.timezone.utc).replace(tzinfo=None)


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
    # the date under whatever key the producer wrote it (psuite: "date"; Score-P and others: DATE_KEYS)
    from psuite.analysis.run_context import DATE_KEYS

    for key, text in exp.attributes.items():
        if key.rsplit("::", 1)[-1].strip().lower().replace("_", " ") in DATE_KEYS and text:
            date = _utc(str(text))
            if date is not None:
                values["date"] = date
                break
    # the system tree's machine name; "machine" is what psuite writes (and the reader gives) for none
    machines = sorted({loc.machine for loc in exp.locations if loc.machine and loc.machine != "machine"})
    if machines:
        values["machine"] = ",".join(machines)
    needed: dict[str, Variable] = {}
    for m in exp.metrics:
        try:
            total = exp.total(m.name)
        except (ExpressionError, KeyError, ZeroDivisionError, ValueError):
            continue  # a derived metric whose expression cannot be computed from totals: no value
        if total != total or total in (float("inf"), float("-inf")):
            continue  # NaN or infinite (e.g. a ratio over a zero total): no value rather than a wrong one
        # an event's metric under the event's canonical name, as counting reports file it (a cube
        # written before psuite's names were canonical says perf::TASK-CLOCK), unless another metric
        # of the cube has that name already
        name = canonical(m.name)
        if column_name(name) in needed:
            name = m.name
        col = column_name(name)
        prev = needed.get(col)
        if prev is not None and prev.synopsis != name:
            raise UsageError(f"metrics {prev.synopsis!r} and {name!r} both become variable {col!r}; "
                             "file them in separate experiments")
        unit = "s" if m.unit == "sec" else event_unit(name)  # CUBE's uom: "sec" or "occ" (a count)
        needed[col] = event_variable(col, name, unit)
        values[col] = float(total)
    return RunData(values=values, sources=list(paths), content_hash=content_hash(paths)), list(needed.values())


def _resource_run(paths: list[str], r: ResourceReport) -> RunData:
    values: dict[str, object] = {
        "kind": KIND_RESOURCE, "host": r.hostname, "command": r.command, "ranks": 1,
        "usertime": r.usertime, "systemtime": r.systemtime, "maxrss": r.maxrss_mb, "maxvm": r.maxvm_mb,
        "major_faults": r.major_faults, "minor_faults": r.minor_faults,
    }
    start = _utc(r.starttime)  # written with its offset: converted to UTC
    if start is not None:
        values["date"] = start
    return RunData(values=values, sources=list(paths), content_hash=content_hash(paths))


def content_hash(paths: list[str]) -> str:
    """sha256 over the files' own hashes, in sorted order: the same files
    given in another order are the same import."""
    parts = sorted(hashlib.sha256(read_input(p)).hexdigest() for p in paths)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def documents(inputs: list[str]) -> list[str]:
    """The documents `psbase input` files for its FILEs: directories (their
    *.xml) and globs expanded as psprocess -c expands them; a call-path
    companion X.callpaths.xml is read with its profile X.xml, never filed as
    a run of its own: left out when X.xml is among the inputs, replaced by
    X.xml when that is beside it, else refused."""
    from psuite.analysis.combine import expand
    from psuite.analysis.inputs import pair_companions
    from psuite.formats.readers import callpaths

    out: list[str] = []
    for path in pair_companions(expand(inputs)):
        profile = callpaths.profile_name(path)
        if profile is None:
            out.append(path)
        elif "://" not in path and os.path.isfile(profile):
            out.append(profile)
        else:
            base = os.path.basename(profile)
            raise UsageError(f"{path} is a call-path companion without its profile {base} beside it; psbase "
                             f"files call paths with their profile: put {base} beside it and give that")
    return out


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
