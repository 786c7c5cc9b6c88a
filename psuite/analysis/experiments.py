"""Every input psuite reads as one psuite.model.experiment.Experiment.

- `from_report(report)`: a counting report (one root call path; each event
  a UINT64 metric, DOUBLE when a count is not a whole number int64 holds,
  its unique name one CubePL can name (cubepl_name: task-clock as
  task_clock), its display name the event's;
  each derived metric a POSTDERIVED metric whose CubePL expression is
  built from its psmetrics definition, else its value stored as DOUBLE
  and named in attributes[NO_FORMULA];
  the run's wall clock and CPU times are metrics too, wall_seconds and
  cpu_seconds, which psmetrics' wallsecs and cpusecs refer to, so that a
  result recomputes MIPS and the like from combined times; machine
  constants such as cpumhz are folded in), a profile (flat:
  the program's root with one child per function; with call paths the
  threads' resolved trees merged), or a MultiReport (every rank and thread
  one location; system tree machine -> node (host) -> process ("MPI Rank
  N", else "Process" by position, as Score-P names them) -> thread).  A
  MultiReport (psprocess -c) is its member reports, each converted as
  --cube converts one document, merged by the algebra keeping every
  process (algebra.merge with reduce, psprocess merge -c): one combining
  implementation, so -c --cube of N documents is --cube of each merged.
  Every location carries its run's attributes (RUN_ATTRIBUTES: host,
  pid, rank, thread, command, date, build-ids), which the merge keeps.
  Profiles have "samples" (UINT64) and "time" (DOUBLE seconds, timer
  sources) or "events" (samples x threshold), EXCLUSIVE.  One profile
  document's experiment also keeps its sampled addresses and recorded
  frames (Experiment.addresses, what gmon and vprof write); a
  combination's has none.
- `load(source)`: a CUBE 4 file (readers/cube.py) or any document
  psuite.analysis.inputs.load reads, made ready as psprocess makes it
  (call-path companions attached, symbols resolved, metrics derived)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING

from psuite.errors import UsageError
from psuite.formats.readers import is_cube  # noqa: F401  (experiments.is_cube: its callers' name)
from psuite.model.cube_names import cubepl_name, with_cubepl_names  # unique names CubePL can name
from psuite.model.experiment import (
    EXCLUSIVE,
    REPORT_METRIC,
    Addresses,
    Cnode,
    Experiment,
    LoadedModule,
    Location,
    Metric,
    Region,
    SourceLines,
    metric_names,
)

if TYPE_CHECKING:
    import numpy as np

SECONDS = ("sec", "s", "second", "seconds")
INT64_MAX = 2**63 - 1
ROOT_DESCRIPTION = "the whole program"  # formats/exporters/calltree_common.PROGRAM_ROOT: leave the two alike
# experiment attribute: its call paths are the functions of profiles without call paths (flat), which the
# call-path exports (folded, speedscope) refuse as they refuse the profiles (calltree_common.FLAT_PROFILE)
FLAT_PROFILE = "psuite::flat"
# experiment attribute: the derived metrics stored with their values because no expression over the
# stored metrics gives them (a -m definition psuite cannot translate, alternatives that differ between
# reports ...), one name a line.  A CUBE file keeps it; the algebra leaves them out of a diff or mean.
NO_FORMULA = "psuite::no_formula"
SAMPLED_ON = "psuite::event"  # experiment attribute: a profile's sampling event (algebra refuses to mix them)


# experiment attribute prefix: psuite::stand_in::visits = samples says the cube's "visits" only repeats
# "samples", written for CubeLib's cube_stat (exporters/cube.py for_cube_stat), and psuite reads it without it
STAND_IN = "psuite::stand_in::"


SAMPLED_LINES = "psuite::sampled_lines"  # exporters/cube.py: a profile's regions' lines, written as unknown
# exporters/cube.py: a profile's call paths' lines ("cnode line" a line), written as unknown for the same reason
SAMPLED_CALL_LINES = "psuite::sampled_call_lines"
# region attribute: the object file (executable, shared library) of a profile's function whose region's
# module is its source file (calltree_common.OBJECT: pprof's mappings)
OBJECT = "psuite::object"
# location attribute: the seconds of wall clock the location's run took (calltree_common.WALLCLOCK: pprof's duration)
WALLCLOCK = "wallclock"
# region attribute: the function as the call paths recorded it where the region's name is not it
RECORDED_FUNCTION = "psuite::function"  # (calltree_common.RECORDED_FUNCTION: the reports' call-tree rows)


def as_written(exp: Experiment) -> Experiment:
    """A cube psuite wrote, read back as the experiment it wrote: without
    the metrics it added only for CubeLib's tools (STAND_IN), and with its
    regions' and call paths' sampled lines (SAMPLED_LINES,
    SAMPLED_CALL_LINES), which the file leaves out so that CubeLib unifies
    the regions and call paths of two runs."""
    if exp.attributes.get("Creator") == "psuite":  # older psuite's names (task-clock) as psuite names them now
        exp = with_cubepl_names(exp)
    for line in exp.attributes.pop(SAMPLED_LINES, "").splitlines():
        try:
            i, begin, end = (int(x) for x in line.split())
        except ValueError:
            continue  # not psuite's: the regions stay as the file has them
        if 0 <= i < len(exp.regions) and exp.regions[i].begin < 0 and exp.regions[i].end < 0:
            exp.regions[i].begin, exp.regions[i].end = begin, end
    for line in exp.attributes.pop(SAMPLED_CALL_LINES, "").splitlines():
        try:
            i, at = (int(x) for x in line.split())
        except ValueError:
            continue
        if 0 <= i < len(exp.cnodes) and exp.cnodes[i].line < 0:
            exp.cnodes[i].line = at
    names = {k[len(STAND_IN):] for k in exp.attributes if k.startswith(STAND_IN)}
    if not names:
        return exp
    for k in [k for k in exp.attributes if k.startswith(STAND_IN)]:
        del exp.attributes[k]
    drop = {i for i, m in enumerate(exp.metrics) if m.name in names and not m.derived
            and not exp.metric_children(i) and m.name not in {n for d in exp.metrics if d.derived
                                                               for n in metric_names(d.expression)}}
    if not drop:
        return exp
    new_index = {}
    kept = []
    for i, m in enumerate(exp.metrics):
        if i not in drop:
            new_index[i] = len(kept)
            kept.append(m)
    for m in kept:
        m.parent = None if m.parent is None else new_index[m.parent]
    for i in drop:
        exp.values.pop(exp.metrics[i].name, None)
    exp.metrics = kept
    return exp


# -- loading -------------------------------------------------------------------
def load(source: str, warn=None) -> Experiment:
    """The experiment of any input psuite reads: a .cubex file, or a
    PerfSuite document (file or URL).  InputError/UsageError on bad input."""
    from psuite.analysis import inputs, metrics, prepare, srcmap

    report = inputs.load(source, warn=warn, on_module=srcmap.prefetch, cubes=True)
    if isinstance(report, Experiment):  # a CUBE file, read by readers/cube.py
        return report
    exp = from_report(prepare.prepare(report, metrics.derive_standard))
    exp.attributes.setdefault("source", source)
    return exp


# -- reports -------------------------------------------------------------------
def from_report(report, definitions: list | None = None, for_reports: bool = False,
                call_paths: bool = True, consume: bool = False) -> Experiment:
    """The experiment of a CountReport, ProfileReport or MultiReport of
    either.  definitions: the psmetrics definitions the derived metrics
    came from (default: psuite's standard set); a metric not among them is
    stored with its values.  for_reports: one document's experiment as
    psprocess's reports render it: each location's run description
    (Location.run), a counting report's events kept as the experiment's
    metric columns (a report can count a million events), a profile's
    samples by source line (Experiment.lines); without it the events are
    ordinary metrics.  call_paths=False: a profile's experiment without its
    call paths and its sampled addresses, flat by function (what its text
    report needs: a call tree of a million contexts is not converted for
    it).  consume (with for_reports, for a caller that lets the document
    go): a counting report's Event objects are let go as they are
    converted, its events then read from the experiment's columns."""
    from psuite.model.report import CountReport, MultiReport, ProfileReport

    if isinstance(report, MultiReport) and report.experiment is not None and definitions is None:
        # a combination's, made once for its statistics and reports (combine.summarize)
        return report.experiment if for_reports else report.experiment.expanded()
    if isinstance(report, MultiReport):
        reports = list(report.reports)
    elif isinstance(report, (ProfileReport, CountReport)):
        reports = [report]
    else:
        raise UsageError(
            f"a {type(report).__name__} has no call paths or counts to make a CUBE experiment of; "
            "give counting reports or profiles"
        )
    if not reports:
        raise UsageError("an empty combination has nothing to make a CUBE experiment of")
    if not all(type(r) is type(reports[0]) for r in reports):
        raise UsageError("a combination mixes counting reports and profiles; give one kind")
    if isinstance(reports[0], ProfileReport):
        _one_event(reports)  # before any conversion: one line naming both events
    if isinstance(report, MultiReport) and len(reports) > 1:
        return _combined(reports, definitions, for_reports)
    # one profile document keeps its sampled addresses; a combination's are no one profile's
    return _experiment(reports, definitions, for_reports=for_reports,
                       addresses=isinstance(report, ProfileReport) and call_paths,
                       call_paths=call_paths, consume=consume and for_reports)


def _experiment(reports: list, definitions: list | None, given: dict | list | None = None,
                check: bool = True, for_reports: bool = False, addresses: bool = False,
                call_paths: bool = True, consume: bool = False) -> Experiment:
    """One experiment of reports of one kind; given: the locations'
    identities in a combination (_identities), else their own; check:
    False for a combination's members (the merge checks them); for_reports,
    call_paths, consume: see from_report; addresses: a profile's sampled
    addresses kept (_addresses)."""
    from psuite.model.report import ProfileReport

    exp = Experiment()
    exp.attributes.update({"CUBE_CT_AGGR": "SUM", "Creator": "psuite"})
    if reports[0].command:
        exp.attributes["command"] = reports[0].command
    if reports[0].source:
        exp.attributes["source"] = reports[0].source
    if reports[0].date:  # the run's date, as the document gives it (a CUBE file keeps it as an attribute)
        exp.attributes["date"] = reports[0].date
    program = _program(reports[0])
    if isinstance(reports[0], ProfileReport):
        exp.attributes[SAMPLED_ON] = _one_event(reports)
        calltrees = _calltrees(reports) if call_paths else None
        if calltrees:
            where = _locations(exp, [_Where.of(st) for st in calltrees], given)
            _calltree_model(exp, program, calltrees, where)
        else:
            where = _locations(exp, reports, given)
            _profile_model(exp, program, reports, where)
        if for_reports:
            _source_lines(exp, reports, where, calltrees)
        if addresses:
            exp.addresses = _addresses(reports[0], calltrees, where)
    else:
        where = _locations(exp, reports, given)
        if definitions is None:
            from psuite.analysis.metrics import standard_definitions

            definitions = standard_definitions()
        _count_model(exp, program, reports, where, definitions, consume)
        if not for_reports:
            exp.expand()
    if check:
        exp.check()
    return exp


def _combined(reports: list, definitions: list | None, for_reports: bool = False) -> Experiment:
    """psprocess -c's experiment: each member report converted as one
    document is (_experiment, named as in the whole combination), merged
    keeping every process (algebra.merge with reduce: what psprocess merge
    -c does to their cubes).  A profile without call paths whose thread
    another member's call paths hold (a psrun -p thread report beside its
    process's companion) is left out: its samples are those call paths'
    flat view, and merged beside them they would count twice."""
    from psuite.analysis import algebra
    from psuite.model.calltree import thread_trees
    from psuite.model.report import CountReport, ProfileReport

    trees = {id(r): thread_trees(r) for r in reports if isinstance(r, ProfileReport)}
    covered = {_key(t) for ts in trees.values() for t in ts}
    members = [r for r in reports if trees.get(id(r)) or _key(r) not in covered]
    placed = [trees.get(id(r)) or [r] for r in members]  # what each member puts in the system tree
    # A member whose places an earlier member took already (a second run of the same ranks, documents
    # without pid or rank) is a run of its own: its processes are others, never merged into the first's.
    seen: dict[tuple, int] = {}
    runs = []
    for items in placed:
        keys = [_key(item) for item in items]
        runs.append(max(seen.get(k, 0) for k in keys))
        for k in keys:
            seen[k] = seen.get(k, 0) + 1
    every = _identities([item for items in placed for item in items],
                        [run for items, run in zip(placed, runs, strict=True) for _ in items])
    given = [{_key(item): every[(*_key(item), run)] for item in items} for items, run in zip(placed, runs,
                                                                                          strict=True)]
    if not trees and isinstance(members[0], CountReport):
        # Counting reports each put their values at the root of a location of their own (runs of the same
        # places too: each run's processes are others): merging their experiments is laying them side by
        # side, which one conversion of all of them does directly (for thousands of ranks, without
        # building and aligning thousands of experiments)
        places = [g[_key(m)] for g, m in zip(given, members, strict=True)]
        return _experiment(members, definitions, places, for_reports=for_reports)
    # members in system-tree order, so that the merge meets processes and threads in that order
    ranked = sorted(range(len(members)), key=lambda i: min(g[0] for g in given[i].values()))
    parts = [_experiment([members[i]], definitions, given[i], check=False) for i in ranked]  # the merge checks
    flat = [e.attributes.get(FLAT_PROFILE) for e in parts]
    exp = algebra.merge(parts, reduce=True, consume=True)
    exp.attributes.pop("operation", None)  # a report's experiment, as one document's is
    if all(flat):  # the merge keeps no such attribute; no member had call paths
        exp.attributes[FLAT_PROFILE] = flat[0]
    exp.attributes.update({"CUBE_CT_AGGR": "SUM", "Creator": "psuite"})
    for key in ("command", "source", "date"):  # the first report's, as one document's experiment has them
        if getattr(reports[0], key, ""):
            exp.attributes.setdefault(key, getattr(reports[0], key))
    exp.check()
    return exp


def _one_event(reports: list) -> str:
    """The event the profiles were sampled on (combine.same_sampling refuses
    profiles of different events: their samples are not one unit)."""
    from psuite.analysis.combine import same_sampling

    same_sampling(reports)
    return reports[0].event


def _program(report) -> str:
    words = report.command.split() if report.command else []
    return words[0].rsplit("/", 1)[-1] if words else "program"


def _root(exp: Experiment, program: str) -> int:
    r = exp.add_region(Region(program, "", -1, -1, ROOT_DESCRIPTION, "artificial", "user"))
    return exp.add_cnode(r, None)


def _key(item) -> tuple:
    """Where a report or a thread's tree ran: (host, process, thread), the
    process its MPI rank, else its pid."""
    process = ("rank", item.rank) if item.rank is not None else ("pid", item.pid or 0)
    return (item.hostname or "localhost", process, item.thread or 0)  # thread none: the whole process


def _identities(items: Sequence, runs: Sequence[int] | None = None) -> dict[tuple, tuple[int, Location]]:
    """Each place items ran (_key, and the item's run: 0 unless a
    combination holds several runs of the same places) as a location, in
    system-tree order (hosts sorted, then processes by rank or pid, then
    threads by number), keyed by (host, process, thread, run).  A process's
    rank is its MPI rank, else its position (0, 1 ... among the ranks no
    MPI process has), and its name says only that, as Score-P names them:
    "MPI Rank 3", else "Process" (one process) or "Process 1"; a later run
    of an MPI rank takes a free rank and says so, "MPI Rank 3 (run 2)".
    CubeLib's tools match processes by name and rank (cube_diff refuses
    system trees that differ), so two runs of one program, whatever their
    pids, combine there as in psuite."""
    runs = runs if runs is not None else [0] * len(items)
    hosts: dict[str, dict[tuple, set[int]]] = {}
    for item, run in zip(items, runs, strict=True):
        host, process, thread = _key(item)
        hosts.setdefault(host, {}).setdefault((*process, run), set()).add(thread)
    taken = {item.rank for item, run in zip(items, runs, strict=True) if item.rank is not None and not run}
    free = (n for n in range(len(items) + len(taken) + 1) if n not in taken)
    unranked = sum(1 for processes in hosts.values() for p in processes if p[0] == "pid")
    out: dict[tuple, tuple[int, Location]] = {}
    for host in sorted(hosts):
        for process in sorted(hosts[host], key=lambda p: (p[2], p[0], p[1])):
            kind, number, run = process
            rank = number if kind == "rank" and not run else next(free)
            if kind == "rank":
                name = f"MPI Rank {number}" + (f" (run {run + 1})" if run else "")
            else:
                name = "Process" if unranked == 1 else f"Process {rank}"
            for thread in sorted(hosts[host][process]):
                out[(host, (kind, number), thread, run)] = (len(out), Location("machine", host, name, rank,
                                                                               f"thread {thread}", thread))
    return out


def _locations(exp: Experiment, items: Sequence,
               given: dict[tuple, tuple[int, Location]] | list[tuple[int, Location]] | None = None) -> list[int]:
    """exp.locations for the items (reports, or threads' trees), in
    system-tree order, each with its run's attributes; returns each item's
    location.  given: the identities of a whole combination (_identities
    of all its members) by _key, so that a member's locations are named as
    in the combination, or each item's identity in a list (items of
    several runs of the same places); else the items' own."""
    import dataclasses

    if given is None:
        given = {key[:3]: place for key, place in _identities(items).items()}
    places = given if isinstance(given, list) else [given[_key(item)] for item in items]
    where = [0] * len(items)
    for i in sorted(range(len(items)), key=lambda i: places[i][0]):
        where[i] = len(exp.locations)
        exp.locations.append(dataclasses.replace(places[i][1], attributes=run_attributes(items[i])))
    return where


def location_key(loc: Location) -> tuple:
    """Where a location of an experiment made from documents ran, as _key
    gives it for the report or thread it came from (from its run
    attributes)."""
    a = loc.attributes
    process = ("rank", int(a["rank"])) if "rank" in a else ("pid", int(a.get("pid", 0)))
    return (a.get("host", "localhost"), process, int(a.get("thread", 0)))


def report_locations(exp: Experiment, reports: Sequence) -> list[int]:
    """The location of each report in the experiment made of them
    (from_report of their combination); reports of one place (runs of the
    same ranks) take that place's locations in turn, as the combination
    placed them."""
    at: dict[tuple, list[int]] = {}
    for k, loc in enumerate(exp.locations):
        at.setdefault(location_key(loc), []).append(k)
    taken: dict[tuple, int] = {}
    out = []
    for r in reports:
        key = _key(r)
        n = taken.get(key, 0)
        places = at.get(key, [])
        if n >= len(places):
            raise ValueError(f"{r.source or 'a report'}: no location of its own in the experiment")
        out.append(places[n])
        taken[key] = n + 1
    return out


def root_values(exp: Experiment) -> Callable[[str, str], np.ndarray]:
    """A function giving, per location, the value at the root of a counting
    report's event (kind "event") or derived metric ("metric"), named as the
    reports name it (the metric's display name): stored, or computed from
    its expression.  The metrics are indexed once: a report can hold a
    million events."""
    by_display: dict[str, list[Metric]] = {}
    for m in exp.metrics:
        by_display.setdefault(m.display, []).append(m)
    root = exp.roots[0]

    def value(name: str, kind: str = "event") -> np.ndarray:
        found = by_display.get(name)
        if not found:
            raise KeyError(f"no metric {name!r}")
        m = found[0] if kind == "event" else found[-1]  # events come first, derived metrics last
        return exp.derived_values(m.name)[root] if m.derived else exp.stored(m.name)[root]

    return value


def run_attributes(item) -> dict[str, str]:
    """The run attributes of a location (CUBE <attr>s, kept by the
    algebra, which keeps locations): host, pid, MPI rank, thread, the
    machine (processor, CPUs, clock, memory), command, date, and the
    build-ids psrun recorded ("file build-id" a line), of a report or of a
    thread's tree (_Where, with its report)."""
    report = getattr(item, "report", item)
    out = {"host": item.hostname or "localhost"}
    if item.pid:
        out["pid"] = str(item.pid)
    if item.rank is not None:
        out["rank"] = str(item.rank)
    out["thread"] = str(item.thread or 0)
    if getattr(item, "tid", None) is not None:  # a thread's tree: its thread id
        out["tid"] = str(item.tid)
    machine = getattr(report, "machine", None)
    if machine is not None:  # what ran it, in one line: the processor, its count and clock, the memory
        parts = [machine.brand or machine.vendor, f"{machine.cpu_count} CPUs" if machine.cpu_count else "",
                 f"{machine.mhz:.0f} MHz" if machine.mhz else "",
                 f"{machine.memory_mb:.0f} MB" if machine.memory_mb else ""]
        if any(parts):
            out["machine"] = ", ".join(p for p in parts if p)
    if report.command:
        out["command"] = report.command
    if report.date:
        out["date"] = report.date
    ids = []
    if report.buildid:
        words = report.command.split() if report.command else []
        ids.append(f"{words[0] if words else 'executable'} {report.buildid}")
    # a thread's tree: the modules its call-path document lists (one list for the process, whichever of
    # its reports carries it); a flat profile: the modules its samples fell in
    modules = report.callpaths.modules.values() if item is not report and report.callpaths else \
        getattr(report, "modules", [])
    ids += [f"{m.file} {m.buildid}" for m in modules if m.buildid]
    if ids:
        out["build-ids"] = "\n".join(dict.fromkeys(ids))
    return out


def _metric(name: str, display: str, dtype: str, unit: str, descr: str) -> Metric:
    """unit: the metric's own (seconds, ratio, percent ...), written as the
    CUBE guide's "sec" or "occ", and named in the description otherwise."""
    uom = "sec" if unit.lower() in SECONDS else "occ"
    if uom == "occ" and unit and unit.lower() not in ("occ", "events", "samples"):
        descr = f"{descr} (unit: {unit})"
    return Metric(name, display, uom, dtype, EXCLUSIVE, descr)


# -- profiles ------------------------------------------------------------------
def _profile_metrics(first) -> tuple[list[Metric], bool]:
    """samples, and time (timer sources) or estimated events; and whether
    the source is a timer."""
    timer = bool(first.is_timer and first.threshold)
    samples = _metric("samples", "Samples", "UINT64", "occ", "Samples taken in the call path")
    second = (
        _metric("time", "Time", "DOUBLE", "sec", "Samples times the sampling period")
        if timer
        else _metric("events", f"{first.event} (estimated)", "DOUBLE", "events", "Samples times the overflow threshold")
    )
    return [samples, second], timer


def _per_sample(r, timer: bool) -> float:
    """What one sample of r adds to the second metric: seconds, or events."""
    return (r.threshold / 1e6 if timer else r.threshold or 1) if r.threshold else 0


def _fill(exp: Experiment, metrics: list[Metric], parts: list[tuple], unique: bool) -> None:
    """The two profile metrics from parts (cnodes, location, samples,
    second), each an array or a number: the cells of one location each
    once (unique, a thread's call paths: stored directly), or cells that
    may repeat (summed)."""
    import numpy as np

    for m in metrics:
        exp.add_metric(m)
    samples, second = (exp.zeros(m) for m in metrics)
    parts = [(np.asarray(c, dtype=np.int64), loc if np.isscalar(loc) else np.asarray(loc, dtype=np.int64),
              np.asarray(n), np.asarray(v, dtype=np.float64)) for c, loc, n, v in parts if len(c)]
    if any(n.dtype == object or n.max() > INT64_MAX for _, _, n, _ in parts):
        metrics[0].dtype = "DOUBLE"  # summed samples beyond int64: kept as doubles
        samples = exp.zeros(metrics[0])
    for c, loc, n, v in parts:
        if unique:
            samples[c, loc] = n.astype(samples.dtype)
            second[c, loc] = v
        else:
            np.add.at(samples, (c, loc), n.astype(samples.dtype))
            np.add.at(second, (c, loc), v)


def _profile_model(exp: Experiment, program: str, reports: list, where: list[int]) -> None:
    regions: dict[str, list] = {}  # function -> [file, first line, last line]: one list per function, not per
    for r in reports:               # location (a profile of a million PCs resolves to 100,000s of them)
        for loc in r.locations:
            line = loc.line
            reg = regions.get(loc.function)
            if reg is None:
                regions[loc.function] = [loc.file, line or -1, line or -1]
            elif line:
                if reg[1] < 0 or line < reg[1]:
                    reg[1] = line
                if line > reg[2]:
                    reg[2] = line
    root = _root(exp, program)
    exp.attributes[FLAT_PROFILE] = "functions of profiles without call paths"
    cnode_of = {}
    for f in sorted(regions):
        file, begin, end = regions[f]
        cnode_of[f] = exp.add_cnode(exp.add_region(Region(f, file or "", begin, end)), root)
    metrics, timer = _profile_metrics(reports[0])
    cnodes: list[int] = []  # the cells, a column each
    at: list[int] = []
    samples: list[int] = []
    second: list[float] = []
    for r, loc_id in zip(reports, where, strict=True):
        scale = _per_sample(r, timer)
        n = [loc.samples for loc in r.locations]
        cnodes += [cnode_of[loc.function] for loc in r.locations]
        at += [loc_id] * len(n)
        samples += n
        second += [k * scale for k in n]
    _fill(exp, metrics, [(cnodes, at, samples, second)] if cnodes else [], unique=False)


def _addresses(report, calltrees: list | None, where: list[int]) -> Addresses:
    """The profile's sampled PCs and recorded frames (Addresses), placed at
    the experiment's locations: the report's samples at its location (at
    none, -1, when its threads are several locations), each thread's
    frames at its thread's."""
    import numpy as np

    if calltrees is None:
        at = where[0]
    else:
        at = where[0] if len(calltrees) == 1 else -1
    out = Addresses(report.event, report.threshold,
                    [LoadedModule(m.file, m.offset, m.buildid) for m in report.modules])
    sizes = [len(m.samples) for m in report.modules]
    out.module = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    # each module's dict read by numpy directly (a million PCs: no Python loop over them)
    out.pc = np.concatenate([np.fromiter(m.samples, dtype=np.uint64, count=len(m.samples))
                             for m in report.modules] or [np.zeros(0, dtype=np.uint64)])
    out.location = np.full(sum(sizes), at, dtype=np.int32)
    out.samples = np.concatenate([_counts(m.samples.values, len(m.samples)) for m in report.modules] or
                                 [np.zeros(0, dtype=np.int64)])
    cp = report.callpaths
    if cp is None:
        return out
    out.frame_modules = [LoadedModule(m.file, m.offset, m.buildid) for m in cp.modules.values()]
    ids = np.fromiter(cp.modules, dtype=np.int64, count=len(cp.modules))
    by_id = np.argsort(ids, kind="stable")  # frame_modules' positions in the order of their ids
    sorted_ids = ids[by_id]
    # each thread's location, by its resolved tree (none: the flat profile's location is no thread's)
    located = {} if calltrees is None else {id(st.thread.tree): loc for st, loc in zip(calltrees, where, strict=True)}
    parts: list[tuple] = []
    start = 0
    for t in cp.threads:
        n = len(t.parent) - 1  # node 0, the root, is left out: its children have no calling frame
        parent = np.asarray(t.parent[1:], dtype=np.int64) - 1
        # rows follow on from the threads before: an outermost frame (parent -1) stays -1
        parent[parent >= 0] += start
        # the companion's module ids as positions in frame_modules, -1 for an id it does not list
        ids_here = np.asarray(t.module[1:], dtype=np.int64)
        if len(ids):
            pos = np.minimum(np.searchsorted(sorted_ids, ids_here), len(ids) - 1)
            module = np.where(sorted_ids[pos] == ids_here, by_id[pos], -1).astype(np.int32)
        else:
            module = np.full(n, -1, dtype=np.int32)
        parts.append((parent, module, np.asarray(t.addr[1:], dtype=np.uint64),
                      np.asarray(t.kind[1:], dtype=np.int8), _counts(lambda t=t: iter(t.exclusive[1:]), n),
                      np.full(n, located.get(id(t.tree), -1), dtype=np.int32)))
        start += n
    if parts:
        (out.frame_parent, out.frame_module, out.frame_pc, out.frame_kind, out.frame_samples,
         out.frame_location) = (np.concatenate(column) for column in zip(*parts, strict=True))
    return out


def _counts(values: Callable[[], Iterable[int]], n: int) -> np.ndarray:
    """Sample counts (values() gives them) as int64, a count beyond it
    held at int64's greatest (the exporters tell no such counts apart)."""
    import numpy as np

    try:
        return np.fromiter(values(), dtype=np.int64, count=n)
    except OverflowError:
        return np.fromiter((min(int(v), INT64_MAX) for v in values()), dtype=np.int64, count=n)


@dataclass
class _Where:
    """Where a thread's tree ran, as _locations takes reports."""

    hostname: str
    rank: int | None
    pid: int
    thread: int
    report: object = None  # the profile whose companion held the tree: its run attributes
    tid: int | None = None  # the thread's id in the kernel, as the companion recorded it

    @classmethod
    def of(cls, st) -> _Where:
        t = st.thread
        return cls(t.hostname, t.rank, t.pid, t.thread, st.report, t.tid)


def _calltrees(reports: list):
    """Every thread's resolved tree, when every profile has call paths."""
    from psuite.formats.exporters.calltree_common import source_trees
    from psuite.model.calltree import thread_trees
    from psuite.model.report import MultiReport

    if not all(thread_trees(r) for r in reports):
        return None
    return source_trees(MultiReport(reports=reports) if len(reports) > 1 else reports[0], "--cube")


def _calltree_model(exp: Experiment, program: str, calltrees: list, where: list[int]) -> None:
    """Regions (one per function, Frame.key; an inlined function has its
    own, "f [inlined]"), cnodes for the threads' trees merged, depth first
    in the order met, and each thread's exclusive samples.  What pprof
    needs is kept too: each cnode's line (Frame.line, the sampled line of
    a leaf, the call site in a caller; the first thread's where threads
    differ), the object module of a region whose module is its source
    file (attribute OBJECT), and each location's run wall clock
    (WALLCLOCK).

    A call-path profile can have millions of nodes, so this is one lean
    pass per tree: one thread's tree is already merged and becomes the
    cnodes directly; several are merged first into flat lists (node u has
    frame[u] and kids[u], Frame.key -> node) rather than CallNodes."""
    import numpy as np

    root = _root(exp, program)
    cnodes, new_cnode = exp.cnodes, Cnode
    regions = _CalltreeRegions(exp)
    region_of, add_region = regions.index, regions.add
    if len(calltrees) == 1:
        ids: list[int] = []  # the cnodes with samples of their own, and those samples
        own: list = []
        todo = [(c, root) for c in reversed(calltrees[0].thread.tree.root.children.values())]
        pop, extend = todo.pop, todo.extend
        while todo:  # depth first, children in the order met
            node, parent = pop()
            f = node.frame
            r = region_of.get((f.function, f.module, f.inlined))  # Frame.key
            if r is None:
                r = add_region(f)
            c = len(cnodes)
            cnodes.append(new_cnode(r, parent, f.line if f.line > 0 else -1))
            if node.exclusive:
                ids.append(c)
                own.append(node.exclusive)
            if node.children:
                extend(zip(reversed(node.children.values()), repeat(c)))
        per_thread = [(ids, own)]
    else:
        per_thread = _merged_calltrees(exp, calltrees, root, regions)
    regions.settle_lines()
    for st, loc_id in zip(calltrees, where, strict=True):  # the run's duration (pprof's)
        if st.report.wallclock is not None:
            exp.locations[loc_id].attributes[WALLCLOCK] = repr(float(st.report.wallclock))
    metrics, timer = _profile_metrics(calltrees[0])
    parts = []
    for st, loc_id, (ids, own) in zip(calltrees, where, per_thread, strict=True):
        n = np.asarray(own)
        parts.append((ids, loc_id, n, n.astype(np.float64) * _per_sample(st, timer) if len(own) else n))
    _fill(exp, metrics, parts, unique=True)


class _CalltreeRegions:
    """The regions of a call-path profile, one per Frame.key, and their
    first and last lines (computed once at the end from the cnodes')."""

    def __init__(self, exp: Experiment) -> None:
        from psuite.model.calltree import BLOCKED_FUNCTION, TRUNCATED_FUNCTION

        self.exp = exp
        self.index: dict[tuple, int] = {}
        self.placeholders = (TRUNCATED_FUNCTION, BLOCKED_FUNCTION)
        self.first = len(exp.regions)

    def add(self, f) -> int:
        from psuite.formats.exporters.calltree_common import frame_file, frame_name

        name = frame_name(f)
        shown = f"{name} [inlined]" if f.inlined else name
        source = frame_file(f)
        r = self.index[(f.function, f.module, f.inlined)] = self.exp.add_region(
            Region(
                shown,
                source or f.module,
                -1,
                -1,
                "inlined into its caller" if f.inlined else "",
                "artificial" if f.function in self.placeholders else "function",
                # the module holds the source file: the object file is said apart (pprof's mappings); the
                # function as recorded where the name is not it ("??" shown as "[libc.so.6]")
                attributes={**({OBJECT: f.module} if source else {}),
                            **({RECORDED_FUNCTION: f.function} if shown != f.function else {})},
            )
        )
        return r

    def settle_lines(self) -> None:
        """Each region's first and last line: the least and greatest of its
        cnodes' lines."""
        import numpy as np

        cnodes = self.exp.cnodes
        region = np.fromiter((c.region for c in cnodes), dtype=np.int64, count=len(cnodes))
        line = np.fromiter((c.line for c in cnodes), dtype=np.int64, count=len(cnodes))
        keep = (line > 0) & (region >= self.first)
        if not keep.any():
            return
        region, line = region[keep], line[keep]
        n = len(self.exp.regions)
        begin = np.full(n, np.iinfo(np.int64).max)
        end = np.full(n, -1)
        np.minimum.at(begin, region, line)
        np.maximum.at(end, region, line)
        for r in np.flatnonzero(end > 0).tolist():
            self.exp.regions[r].begin, self.exp.regions[r].end = int(begin[r]), int(end[r])


def _merged_calltrees(exp: Experiment, calltrees: list, root: int, regions: _CalltreeRegions) -> list[tuple]:
    """The cnodes of several threads' trees merged (Frame.key under one
    parent is one call path), depth first with children in the order met;
    per thread, its cnodes with samples of their own and those samples."""
    from psuite.model.calltree import ROOT_FRAME

    frame = [ROOT_FRAME]
    kids: list[dict] = [{}]
    per_thread: list[tuple[list[int], list]] = []
    for st in calltrees:
        ids: list[int] = []
        own: list = []
        stack = [(st.thread.tree.root, 0)]
        while stack:
            node, u = stack.pop()
            mine = kids[u]
            for key, child in node.children.items():
                c = mine.get(key)
                if c is None:
                    c = mine[key] = len(frame)
                    frame.append(child.frame)
                    kids.append({})
                if child.exclusive:
                    ids.append(c)
                    own.append(child.exclusive)
                if child.children:
                    stack.append((child, c))
        per_thread.append((ids, own))
    cnode_of = [root] * len(frame)
    cnodes, new_cnode = exp.cnodes, Cnode
    region_of, add_region = regions.index, regions.add
    todo = [(c, root) for c in reversed(kids[0].values())]
    pop, extend = todo.pop, todo.extend
    while todo:  # depth first, children in the order met
        u, parent = pop()
        f = frame[u]
        r = region_of.get((f.function, f.module, f.inlined))  # Frame.key
        if r is None:
            r = add_region(f)
        c = cnode_of[u] = len(cnodes)
        cnodes.append(new_cnode(r, parent, f.line if f.line > 0 else -1))
        below = kids[u]
        if below:
            extend(zip(reversed(below.values()), repeat(c)))
    return [([cnode_of[u] for u in ids], own) for ids, own in per_thread]


def _source_lines(exp: Experiment, reports: list, where: list[int], calltrees: list) -> None:
    """Each profile's samples by source line (Experiment.lines) and its run
    description on its locations.  where: each report's location (a flat
    profile: its samples' rows are at it), or with call paths each thread
    tree's (the rows are then at -1, the process those threads make up)."""
    exp.lines = source_lines(reports, None if calltrees else where)
    for k, r in enumerate(reports):
        # the numbers are the model's; the call paths' facts (unwinder, depth, samples lost) stay the run's
        run = dataclasses.replace(r, locations=[], modules=[])
        for j in [j for st, j in zip(calltrees, where, strict=True) if st.report is r] if calltrees else [where[k]]:
            exp.locations[j].run = run


def source_lines(reports: list, where: list[int] | None = None) -> SourceLines:
    """The profiles' samples by source line, the model's flat view
    (Experiment.lines), each report's rows at its location in where (None:
    at -1, the whole process)."""
    import numpy as np

    modules: list[str] = []
    files: list[str] = []
    functions: list[str] = []
    lines: list[int] = []
    samples: list[int] = []
    location: list[np.ndarray] = []
    for k, r in enumerate(reports):
        locs = r.locations
        modules += map(_MODULE, locs)
        files += map(_FILE, locs)
        functions += map(_FUNCTION, locs)
        lines += map(_LINE, locs)
        samples += map(_SAMPLES, locs)
        location.append(np.full(len(locs), -1 if where is None else where[k], dtype=np.int64))
    return SourceLines(modules, files, functions, lines, samples,
                       np.concatenate(location) if location else np.zeros(0, dtype=np.int64))


_MODULE, _FILE, _FUNCTION = operator.attrgetter("module"), operator.attrgetter("file"), operator.attrgetter("function")
_LINE, _SAMPLES = operator.attrgetter("line"), operator.attrgetter("samples")


# -- counting reports ----------------------------------------------------------
def _count_model(exp: Experiment, program: str, reports: list, where: list[int], definitions: list,
                 consume: bool = False) -> None:
    """The events, run times and derived metrics of counting reports (one
    document, or a combination's side by side: _combined); consume: see
    from_report."""
    import numpy as np

    root = _root(exp, program)
    for r, loc_id in zip(reports, where, strict=True):  # the run's description, its numbers left out
        exp.locations[loc_id].run = dataclasses.replace(r, events=[], metrics=[])
    drained = len(reports) == 1 and consume and _drained_columns(exp, root, reports[0], where[0])
    events = _EventNames(exp.columns) if drained else _event_columns(exp, root, reports, where)
    _run_times(exp, root, reports, where, events)
    taken = _TakenNames(exp, events)
    events.definitions = definitions
    by_name = {d.name: d for d in definitions}
    derived: dict[str, tuple[Metric, list[tuple[int, float]]]] = {}
    names = None  # the events' names, a key of _expression's translations: made once
    for r, loc_id in zip(reports, where, strict=True):
        for d in r.metrics:
            if d.name not in derived:
                unique = cubepl_name(d.name, taken)
                taken.add(unique)
                m = _metric(unique, d.name, "DOUBLE", d.unit or "", d.description or d.name)
                # what the reports show of it: that it is a psmetrics metric, its own unit and description
                m.attributes.update({REPORT_METRIC: "yes", **({"psuite::unit": d.unit} if d.unit else {}),
                                     **({"psuite::description": d.description}
                                        if d.description != m.description else {})})
                derived[d.name] = (m, [])
            derived[d.name][1].append((loc_id, d.value))
    unknown: list[str] = []
    for name, (m, cells) in derived.items():
        if len(cells) < len(reports):  # where the reports that have it are (the others show none)
            has = exp.columns.metrics_listed[m.name] = np.zeros(len(exp.locations), dtype=bool)
            has[[loc_id for loc_id, _ in cells]] = True
        expression = None
        if len(cells) == len(reports):  # every location has it: one expression may stand for all
            if names is None:
                names = events.key()
            expression = _expression(by_name.get(name), reports, events, names)
        exp.add_metric(m)
        if expression is not None and _agrees(exp, expression, cells):
            m.kind, m.expression = "POSTDERIVED", expression
            continue
        a = exp.zeros(m)
        for loc_id, v in cells:
            a[root, loc_id] = _as_float(v)
        if not np.isfinite(a).all():
            a[~np.isfinite(a)] = 0.0
        unknown.append(m.name)
    if unknown:  # ratios stored as values: the algebra must not subtract or average them (see NO_FORMULA)
        exp.attributes[NO_FORMULA] = "\n".join(unknown)


# psmetrics' run-level keywords, held as metrics of their own so that a derived metric refers to them
# (MIPS = instructions / wallsecs) and is recomputed on an operation's result from the combined times,
# never frozen at one input's value; machine constants (cpumhz, lNcacheline) stay numbers
RUN_TIMES = {"wallsecs": ("wall_seconds", "Wall clock time"), "cpusecs": ("cpu_seconds", "CPU time")}


def _drained_columns(exp: Experiment, root: int, r, loc_id: int) -> bool:
    """One report's events as the experiment's metric columns (as
    _event_columns makes them), its Event objects let go a block at a time
    as they are read: beside the model, a million of them and their counts
    take 120 MB the caller is about to let go anyway.  r.events then reads
    the columns (_ConvertedEvents).  False, with nothing changed, where the
    general path is needed (a count that is not an int64); with r's events
    as they were, when a name repeats."""
    import numpy as np

    from psuite.model.cube_names import cubepl_names
    from psuite.model.experiment import MetricColumns
    from psuite.model.report import event_descriptions

    events = r.events
    if not events or not set(map(type, map(_COUNT, events))) <= {int} or \
            not -INT64_MAX - 1 <= min(map(_COUNT, events)) <= max(map(_COUNT, events)) <= INT64_MAX:
        return False
    whole = np.empty(len(events), dtype=np.int64)
    names: list[str] = []
    described: list[str] = []
    own: list[str] = []  # the document's descriptions (those _ConvertedEvents gives back)
    attributes: dict[int, dict[str, str]] = {}
    start = 0
    while events:
        block = events[:BLOCK]
        del events[:BLOCK]  # the Event objects go with the block
        whole[start:start + len(block)] = np.fromiter(map(_COUNT, block), dtype=np.int64, count=len(block))
        names += map(_NAME, block)
        described += event_descriptions(block)
        if own or any(map(_DESCRIPTION, block)):  # (the document's own descriptions: mostly none)
            own += [""] * (start - len(own))
            own += map(_DESCRIPTION, block)
        attributes.update(_odd_events(block, start))
        start += len(block)
    table = _ConvertedEvents(names, whole, own + [""] * (len(names) - len(own)) if own else None, attributes)
    if not _distinct(names):  # a name listed twice: the general path, on the events as they were
        r.events = list(table)
        return False
    r.events = table
    unique = cubepl_names(names, {m.name for m in exp.metrics}, distinct=True)
    if len(exp.locations) == 1:  # the counts are the column (no copy)
        ints = whole.reshape(-1, 1)
    else:
        ints = np.zeros((len(names), len(exp.locations)), dtype=np.int64)
        ints[:, loc_id] = whole
    # every event UINT64: no float column (8 bytes an event)
    exp.columns = MetricColumns(root, len(exp.metrics), unique, names, described,
                                np.ones(len(names), dtype=bool), ints, None, attributes)
    return True


BLOCK = 65_536  # events let go at a time (_drained_columns)


def _odd_events(events: list, start: int) -> dict[int, dict[str, str]]:
    """The attributes of the events whose type, derivation or spelling is
    not the default, by index (start: the first's); checked at C speed
    first, since in the common case none is."""
    odd = set(map(_TYPE, events)) - {"native"} or any(map(_DERIVED, events)) or any(map(_SPELT, events))
    out: dict[int, dict[str, str]] = {}
    for i, e in enumerate(events if odd else ()):
        if e.type != "native" or e.derived or e.counted_as:
            out[start + i] = {key: v for key, v in (("psuite::event_type", "" if e.type == "native" else e.type),
                                                    ("psuite::derived_event", "yes" if e.derived else ""),
                                                    ("psuite::counted_as", e.counted_as)) if v}
    return out


class _ConvertedEvents(Sequence):
    """A converted report's events read back from the columns they became
    (_drained_columns): an Event made when one is asked for, the few a
    derived metric's translation reads; `names` for the many."""

    def __init__(self, names: list[str], counts, descriptions: list[str] | None,
                 attributes: dict[int, dict[str, str]]) -> None:
        self.names, self.counts, self.descriptions, self.attributes = names, counts, descriptions, attributes

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        from psuite.model.report import Event

        a = self.attributes.get(i if i >= 0 else i + len(self), {})
        return Event(self.names[i], int(self.counts[i]), a.get("psuite::event_type", "native"),
                     a.get("psuite::derived_event") == "yes", self.descriptions[i] if self.descriptions else "",
                     a.get("psuite::counted_as", ""))


def _event_columns(exp: Experiment, root: int, reports: list, where: list[int]) -> _EventNames:
    """The reports' events as the experiment's metric columns, in the order
    first met; each metric's description the one every output shows (the
    document's, else psuite's catalogue's: event_descriptions), its event
    type, whether it is derived and its spelling in the document as
    attributes where they are not the defaults.  Returns each event's
    unique metric name.  A report can hold a million events: the work per
    event is done at C speed (map, dict, numpy) wherever it can be."""
    import numpy as np

    from psuite.model.cube_names import cubepl_names
    from psuite.model.experiment import MetricColumns
    from psuite.model.report import event_descriptions

    row_of: dict[str, int] = {}
    displays: list[str] = []
    descriptions: list[str] = []
    attributes: dict[int, dict[str, str]] = {}
    rows: list = []
    cols: list[int] = []
    for r, loc_id in zip(reports, where, strict=True):
        events = r.events
        names = list(map(_NAME, events))
        first = len(displays)
        if not displays and _distinct(names):  # the common case: one report, or the first
            new, described = names, event_descriptions(events)
            rows.append(range(len(names)))
        else:
            # an event a report lists twice is one metric, its last count the report's (as psmetrics takes it)
            if not row_of:
                row_of.update(zip(displays, range(first), strict=True))
            new = [n for n in dict.fromkeys(names) if n not in row_of]
            row_of.update(zip(new, range(first, first + len(new)), strict=True))
            # each new event's description, from its first occurrence
            own = dict(zip(reversed(names), reversed(event_descriptions(events)), strict=True)) if new else {}
            described = list(map(own.__getitem__, new))
            rows.append(list(map(row_of.__getitem__, names)))
        displays += new
        descriptions += described
        for i, extra in _odd_events(events, 0).items():
            attributes.setdefault(row_of[events[i].name] if row_of else i, extra)
        cols.append(np.full(len(names), loc_id, dtype=np.int64))
    del names
    # named so that CubePL can refer to them (task-clock as task_clock), displayed as counted (displays are
    # distinct: a name is added once)
    unique = cubepl_names(displays, {m.name for m in exp.metrics}, distinct=True)
    shape = (len(displays), len(exp.locations))
    ints, floats = np.zeros(shape, dtype=np.int64), np.zeros(shape, dtype=np.float64)
    integer = np.ones(len(displays), dtype=bool)
    whole = None
    exact: dict[int, list[int | None]] = {}
    total = sum(len(r.events) for r in reports)
    if all(set(map(type, map(_COUNT, r.events))) <= {int} for r in reports):  # (at C speed, no list)
        try:
            whole = np.fromiter(itertools.chain.from_iterable(map(_COUNT, r.events) for r in reports),
                                dtype=np.int64, count=total)
        except OverflowError:  # beyond int64: those events are DOUBLE
            pass
    listed = None
    if whole is not None and len(reports) == 1 and isinstance(rows[0], range):  # one report: its column
        ints[:, where[0]] = whole
        floats[:, where[0]] = whole
    else:
        rows_a = np.concatenate([np.asarray(x, dtype=np.int64) for x in rows]) if rows else np.zeros(0, np.int64)
        cols_a = np.concatenate(cols) if cols else np.zeros(0, np.int64)
        if whole is not None:
            ints[rows_a, cols_a] = whole
            floats[rows_a, cols_a] = whole
        else:
            _uneven_counts(reports, rows_a, cols_a, ints, floats, integer, exact, len(exp.locations))
        if len(reports) > 1:  # reports combined: an event one of them did not count is not listed there
            listed = np.zeros(shape, dtype=bool)
            listed[rows_a, cols_a] = True
            if listed.all():
                listed = None
    exp.columns = MetricColumns(root, len(exp.metrics), unique, displays, descriptions, integer, ints, floats,
                                attributes, exact, listed)
    return _EventNames(exp.columns)


class _TakenNames:
    """The metric names taken, for naming derived metrics: the
    experiment's metrics' and the event columns' (looked up in the columns,
    never copied into a set of a million names)."""

    def __init__(self, exp: Experiment, events: _EventNames) -> None:
        self.own = {m.name for m in exp.metrics}
        self.own.update(events.extra.values())
        self.columns = events.columns

    def __contains__(self, name: object) -> bool:
        return name in self.own or (isinstance(name, str) and self.columns.index(name) is not None)

    def __iter__(self):
        yield from self.own
        yield from self.columns.names

    def __len__(self) -> int:
        return len(self.own) + len(self.columns)

    def add(self, name: str) -> None:
        self.own.add(name)


class _EventNames:
    """Each event's unique metric name by its name (display name), read
    from the metric columns' own index rather than a second dictionary of
    a million names; run-time metrics added (_run_times) beside them."""

    def __init__(self, columns) -> None:
        self.columns = columns
        self.renamed = {d: u for d, u in zip(columns.displays, columns.names, strict=True) if d != u} \
            if columns.displays != columns.names else {}
        self.extra: dict[str, str] = {}
        self.canonical_of: dict[int, list[str]] = {}  # canonical(): by report, for this conversion only
        self.definitions: list = []  # the psmetrics definitions translated (_count_model sets them)
        self.inputs_of: dict[int, object] = {}  # inputs(): by report, for this conversion only

    def get(self, name: str, default: str | None = None) -> str | None:
        got = self.extra.get(name) or self.renamed.get(name)
        if got is not None:
            return got
        i = self.columns.index(name)
        return name if i is not None and self.columns.displays[i] == name else default

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def __getitem__(self, name: str) -> str:
        got = self.get(name)
        if got is None:
            raise KeyError(name)
        return got

    def __setitem__(self, name: str, unique: str) -> None:
        self.extra[name] = unique

    def canonical(self, report) -> list[str]:
        """The canonical names of a report's events, computed once per report
        of this conversion (each of its derived metrics' inputs is looked up
        in them, and a report can hold a million events)."""
        from psuite.hwpc.names import canonical_names

        got = self.canonical_of.get(id(report))
        if got is None:
            events = report.events
            names = events.names if isinstance(events, _ConvertedEvents) else list(map(_NAME, events))
            got = self.canonical_of[id(report)] = canonical_names(names)
        return got

    def inputs(self, report):
        """The report's values of every definition's inputs (metrics.inputs_of),
        read once per report of this conversion for all the definitions."""
        from psuite.analysis.metrics import inputs_of

        got = self.inputs_of.get(id(report))
        if got is None:
            got = self.inputs_of[id(report)] = inputs_of(report, self.definitions, self.canonical(report))
        return got

    def values(self) -> list[str]:
        return [*self.columns.names, *self.extra.values()]

    def key(self) -> tuple:
        """What a translation over these events depends on (_expression)."""
        return (tuple(self.columns.displays), tuple(self.renamed.items()), tuple(self.extra.items()))


_NAME, _COUNT, _TYPE = operator.attrgetter("name"), operator.attrgetter("count"), operator.attrgetter("type")
_DERIVED, _SPELT = operator.attrgetter("derived"), operator.attrgetter("counted_as")
_DESCRIPTION = operator.attrgetter("description")


def _run_times(exp: Experiment, root: int, reports: list, where: list[int], events: _EventNames) -> None:
    from psuite.analysis import metrics

    for keyword, (name, display) in RUN_TIMES.items():
        cells = [(loc_id, metrics.keyword_value(keyword, r)) for r, loc_id in zip(reports, where, strict=True)]
        cells = [(loc_id, _as_float(v)) for loc_id, v in cells if v is not None]
        if not cells or name in events:
            continue
        m = _metric(name, display, "DOUBLE", "sec", f"{display} of the run (psmetrics' {keyword}), seconds")
        exp.add_metric(m)
        a = exp.zeros(m)
        for loc_id, v in cells:
            a[root, loc_id] = v if math.isfinite(v) else 0.0
        events[name] = m.name


def _uneven_counts(reports: list, rows_a, cols_a, ints, floats, integer, exact: dict, locations: int) -> None:
    """Counts that are not all int64 (doubles, or whole counts beyond int64, which
    PerfSuite's unsigned counters allow) into the columns: such an event is
    DOUBLE, a whole count a float cannot hold kept exactly in `exact`."""
    import numpy as np

    counts = [c for r in reports for c in map(_COUNT, r.events)]
    lo, hi = -INT64_MAX - 1, INT64_MAX
    fits = [lo <= v <= hi if type(v) is int else _fits_int64(v) for v in counts]
    integer[rows_a[~np.asarray(fits, dtype=bool)]] = False
    for i, (v, ok) in enumerate(zip(counts, fits, strict=True)):
        if not ok and type(v) is int:  # beyond int64: its float is not the count
            exact.setdefault(int(rows_a[i]), [None] * locations)[int(cols_a[i])] = v
    ints[rows_a, cols_a] = np.asarray([int(v) if ok else 0 for v, ok in zip(counts, fits, strict=True)],
                                      dtype=np.int64)
    floats[rows_a, cols_a] = np.asarray([_as_float(v) for v in counts], dtype=np.float64)


def _distinct(names: list[str]) -> bool:
    """Whether no name repeats: their hashes sorted in numpy (8 bytes a
    name, where a set of a million names takes 50 MB), the names themselves
    compared only when two hashes are equal."""
    import numpy as np

    hashes = np.fromiter(map(hash, names), dtype=np.int64, count=len(names))
    hashes.sort()
    return not (hashes[1:] == hashes[:-1]).any() or len(set(names)) == len(names)


def _fits_int64(v) -> bool:
    try:
        return float(v).is_integer() and -INT64_MAX - 1 <= int(v) <= INT64_MAX
    except (OverflowError, ValueError, TypeError):
        return False


def _as_float(v) -> float:
    try:
        return float(v)
    except (OverflowError, ValueError, TypeError):
        return math.nan


def _expression(defn, reports: list, events: _EventNames, names: tuple) -> str | None:
    """CubePL for a psmetrics definition, the same for every report (the
    same alternative chosen, the same run-level constants), else None.
    names: events.key(), what the translation depends on."""
    if defn is None:
        return None
    from psuite.analysis import metrics

    texts = set()
    for r in reports:
        # what the text depends on: the events and their metrics' names, and the run-level keywords
        # (only whether the run times are known when they are metrics); a combination's members
        # mostly share it, so each distinct one is translated once
        key = (defn.name, tuple(defn.alternatives), names, _keywords(r, events))
        text = _EXPRESSIONS.get(key, _UNSEEN)
        if text is _UNSEEN:
            which = metrics.choice(defn, r, inputs=events.inputs(r))
            text = None if which is None else _cubepl(defn.alternatives[which], r, events)
            if len(_EXPRESSIONS) >= 4096:
                _EXPRESSIONS.clear()
            _EXPRESSIONS[key] = text
        if text is None:
            return None
        texts.add(text)
    if len(texts) != 1:
        return None
    text = texts.pop()
    # only constants (cpumhz, lNcacheline ...): no measured value to recompute it from
    return text if _measures(text) else None


_EXPRESSIONS: dict[tuple, str | None] = {}  # _expression's translations, per definition and what they depend on
_UNSEEN = object()


def _keywords(report, events: _EventNames) -> tuple:
    """The run-level keywords' values as _cubepl reads them: the run times
    only as known or not when they are metrics of their own, the machine's
    constants (cpumhz, lNcacheline) as numbers."""
    machine = report.machine
    wall, cpu = report.wallclock, report.cputime
    times = (wall is not None if RUN_TIMES["wallsecs"][0] in events else wall,
             cpu is not None if RUN_TIMES["cpusecs"][0] in events else cpu)
    caches = tuple((c.level, c.type, c.line_size) for c in machine.caches) if machine else ()
    return times, (machine.mhz if machine else None), caches


@functools.lru_cache(maxsize=1024)
def _measures(text: str) -> bool:
    """Whether an expression refers to a metric (a combination's members
    each ask it of the same few texts)."""
    return bool(metric_names(text))


def _cubepl(e: tuple, report, events: _EventNames) -> str | None:
    """CubePL of one psmetrics expression over this report's event metrics;
    None for what the expression subset psuite evaluates cannot hold."""
    from psuite.analysis import metrics
    from psuite.hwpc.names import canonical

    kind = e[0]
    if kind == "cn":
        return repr(float(e[1]))
    if kind == "ci":
        name = e[1]
        if name in RUN_TIMES and RUN_TIMES[name][0] in events:
            return f"metric::{RUN_TIMES[name][0]}()"
        if metrics.is_keyword(name):
            value = metrics.keyword_value(name, report)
            v = _as_float(value) if value is not None else math.nan
            return repr(v) if math.isfinite(v) else None
        want = canonical(name)
        for i in itertools.compress(itertools.count(), map(want.__eq__, events.canonical(report))):
            event = report.events[i]
            if event.name in events and _referable(events[event.name]):
                return f"metric::{events[event.name]}()"
        return None
    if kind in ("plus", "minus", "times", "divide"):
        left, right = (_cubepl(c, report, events) for c in e[1:])
        if left is None or right is None:
            return None
        return f"({left} {dict(plus='+', minus='-', times='*', divide='/')[kind]} {right})"
    return None  # abs: not in the subset


@functools.lru_cache(maxsize=4096)  # asked per event and report: thousands of members, a few names
def _referable(name: str) -> bool:
    """A metric name an expression can refer to: what psuite's evaluator
    reads after metric:: (psuite.model.experiment's scanner).  Unique names are
    chosen so (cubepl_name); a metric it could not name would be stored
    with its values, which diff would then subtract as if they were counts."""
    return metric_names(f"metric::{name}()") == [name]


def _agrees(exp: Experiment, expression: str, cells: list[tuple[int, float]]) -> bool:
    """The expression gives the report's values (psuite's evaluation of the
    same definition): it stands for them only then."""
    import numpy as np

    from psuite.model.experiment import ExpressionError, evaluate

    try:
        got = evaluate(expression, lambda n: exp.stored(n).astype(float)[0])
    except (ExpressionError, KeyError, ValueError):
        return False
    got = np.broadcast_to(got, (len(exp.locations),))
    return all(math.isclose(float(got[loc]), _as_float(v), rel_tol=1e-9, abs_tol=1e-300) for loc, v in cells)


# -- psprocess's report of CUBE files -------------------------------------------
def check_cube_inputs(named: Sequence[str], refused: Sequence[str], mixed: str, without: str) -> None:
    """UsageError, one line, unless the CUBE files among named can be read
    as asked: no PerfSuite document among them (mixed: what to do, with
    {cube} and {document}), no option only documents have (without: how,
    with {option}), no cube given twice."""
    from psuite.analysis import inputs

    cubes = [s for s in named if is_cube(s)]
    documents = [s for s in named if s not in cubes]
    if documents:
        raise UsageError(mixed.format(cube=cubes[0], document=documents[0]))
    if refused:
        raise UsageError(f"{refused[0]} reads PerfSuite documents, and {cubes[0]} is a CUBE file; "
                         + without.format(option=refused[0]))
    inputs.check_distinct(cubes)


def cube_report(sources: Sequence[str], fmt: str, combine: bool, refused: Sequence[str] = (),
                warn=None):
    """The report (text, json or csv, in pieces) psprocess shows when its
    inputs are CUBE files, each read by inputs.load (readers/cube.py); None
    when no input is one.  combine (-c): every cube's ranks and threads in
    one experiment (algebra.side_by_side); without it, each cube's report
    in turn.  refused: the options given that only PerfSuite documents have
    (--calltree, --gmon ...), refused by name.  UsageError, one line, for
    a mix of cubes and documents, a format cubes have no report in, or a
    cube given twice."""
    from psuite.analysis import algebra, experiment_views, inputs

    named = list(sources)  # as given, or as -c expanded its directories and globs (combine.expand)
    cubes = [s for s in named if is_cube(s)]
    if not cubes:
        return None
    check_cube_inputs(named, refused,
                      "{cube} is a CUBE file and {document} a PerfSuite document: report on one kind at a time "
                      "(psprocess --cube X.cubex {document} makes a cube of it)", "show it without {option}")
    if fmt not in experiment_views.FORMATS:
        raise UsageError(f"-f {fmt}: a CUBE file is shown as {', '.join(experiment_views.FORMATS)} or html, not {fmt}")
    if len(cubes) > 1 and not combine and fmt != "text":
        raise UsageError(f"-f {fmt} shows one report, and {len(cubes)} CUBE files were given; give one, or combine "
                         "them with -c")
    exps = [inputs.load(s, warn=warn, cubes=True) for s in cubes]
    if combine and len(exps) > 1:
        exps = [algebra.side_by_side(exps)]

    def pieces():
        for k, exp in enumerate(exps):
            if k:
                yield "\n"
            yield from experiment_views.render(exp, fmt)

    return pieces()
