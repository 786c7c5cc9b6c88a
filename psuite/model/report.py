"""The one in-memory report model shared by psprocess, the exporters and
the Python API.  No I/O here: readers build it, writers render it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: not imported at run time, for a quick start-up
    from collections.abc import Iterable

    from psuite.libperfsuite.machine import MachineInfo
    from psuite.model.calltree import CallPathProfile


@dataclass(slots=True)  # a report can hold a million of these
class Event:
    name: str  # canonical (psuite.hwpc.names): task-clock however the document spelt it
    count: float
    type: str = "native"  # "preset" or "native"
    derived: bool = False
    description: str = ""
    counted_as: str = ""  # the document's spelling when it is not the canonical one (perf::TASK-CLOCK)


def event_descriptions(events: list[Event]) -> list[str]:
    """What every output says of each event: the document's description,
    else psuite's catalogue's for its name (psuite.hwpc.names.descriptions,
    as the text report shows it), else ""."""
    if all(e.description for e in events):
        return [e.description for e in events]
    from itertools import repeat
    from operator import attrgetter

    from psuite.hwpc.names import canonical_names, descriptions

    # at C speed where it can be: a report can hold a million events
    catalogued = map(descriptions().get, canonical_names(list(map(attrgetter("name"), events))), repeat(""))
    return [own or known for own, known in zip(map(attrgetter("description"), events), catalogued, strict=False)]


@dataclass(slots=True)
class Metric:
    name: str
    value: float
    description: str = ""
    unit: str = ""


@dataclass
class RunInfo:
    """What every report of one process (or thread) says about the run."""

    source: str = ""
    version: str = ""
    generator: str = ""
    date: str = ""
    hostname: str = ""
    domainname: str = ""
    pid: int | None = None
    thread: int | None = None  # <thread>: 0 the process total, 1 the main thread... (docs/formats/numbering.md)
    username: str = ""
    command: str = ""
    md5sum: str = ""
    buildid: str = ""  # the executable's GNU build-id, hex
    annotation: str = ""
    wallclock: float | None = None  # seconds
    usertime: float | None = None
    systemtime: float | None = None
    machine: MachineInfo | None = None
    rank: int | None = None  # MPI rank ("MPI rank N" in <annotation>)

    def _ident(self) -> dict:
        """The identity every record of this report carries.  "thread" is
        always an int, as in every other record (docs/formats/numbering.md):
        a report without <thread> is of the whole process, 0, as
        read_experiment() numbers it."""
        return {"source": self.source, "hostname": self.hostname, "pid": self.pid,
                "thread": 0 if self.thread is None else self.thread, "rank": self.rank}

    @property
    def who(self) -> str:
        """How a report is named among others: the process (rank, else pid
        on host), then the thread."""
        if self.rank is not None:
            parts = [f"rank {self.rank}"]
        elif self.pid is not None:
            parts = [f"pid {self.pid}"]
        else:
            parts = [self.source]
        if self.thread is not None and not (self.thread == 0 and self.generator.startswith("psuite")):
            parts.append(f"thread {self.thread}")  # psuite's thread 0 is the whole process
        if self.hostname and self.rank is None:
            parts.append(f"on {self.hostname}")
        return " ".join(parts)

    @property
    def cputime(self) -> float | None:
        if self.usertime is None and self.systemtime is None:
            return None
        return (self.usertime or 0.0) + (self.systemtime or 0.0)

    def to_dict(self) -> dict:
        """Plain data for JSON and the Python API: nested dataclasses as dicts,
        without asdict's deep copies (a profile holds tens of thousands of
        locations)."""
        return _plain(self)


@dataclass
class CountReport(RunInfo):
    """One process's (or thread's) event counts: <hwpcreport mode="count">."""

    counter_class: str = ""  # "PAPI", "perfmon" (perf_event) or "null"
    counter_version: str = ""
    domain: str = "user"
    multiplexed: bool = False
    events: list[Event] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)

    def to_dict(self) -> dict:
        """As RunInfo.to_dict, each event's "description" the one every
        output shows (event_descriptions): the document's, else psuite's
        catalogue's for the event."""
        d = _plain(self)
        if not all(e.description for e in self.events):
            for e, text in zip(d["events"], event_descriptions(self.events), strict=True):
                e["description"] = text
        return d

    def to_records(self) -> list[dict]:
        """One flat row per event and per derived metric (for pandas)."""
        ident = self._ident()
        return [{**ident, "kind": "event", "name": e.name, "value": e.count} for e in self.events] + \
            [{**ident, "kind": "metric", "name": m.name, "value": m.value} for m in self.metrics]

    @property
    def collector(self) -> str:
        """Which backend counted, in words."""
        if self.counter_class == "perfmon" and self.counter_version.startswith("perf_event"):
            return "Linux perf_event"
        return f"{self.counter_class} {self.counter_version}".strip()


@dataclass
class ModuleSamples:
    """Sampled PCs of one loaded object; file address = pc - offset."""

    file: str
    offset: int
    samples: dict[int, int] = field(default_factory=dict)  # pc -> count
    buildid: str = ""  # the GNU build-id psrun recorded for the module, hex ("" when none)


@dataclass(slots=True)
class Location:
    """Samples resolved to a source location ("??" and line 0 when unknown)."""

    module: str
    file: str
    function: str
    line: int
    samples: int


@dataclass
class ProfileReport(RunInfo):
    """One process's (or thread's) statistical profile: raw
    <hwpcreport mode="profile"> (modules and PCs) or a processed
    <hwpcprofilereport> (locations)."""

    profile_class: str = ""  # itimer, PAPI, perfmon, profil
    profile_version: str = ""
    event: str = ""  # canonical, as Event.name
    event_counted_as: str = ""  # the document's spelling when it is not the canonical one
    event_type: str = "native"
    domain: str = "user"
    threshold: int | None = None  # microseconds for timers, events otherwise
    total_samples: int = 0
    modules: list[ModuleSamples] = field(default_factory=list)
    locations: list[Location] = field(default_factory=list)  # filled by resolution
    mapper: str = ""  # what resolved the locations
    callpaths: CallPathProfile | None = None  # the companion <callpaths> document, when recorded

    @property
    def is_timer(self) -> bool:
        return self.event.startswith("ITIMER_")

    def to_records(self) -> list[dict]:
        """One flat row per resolved location: the run's identity (source,
        hostname, pid, rank, "thread" an int), "module", "file", "function",
        "line" and "samples".

        The thread is the one that took the samples, as in calltree_records()
        and read_experiment(...).to_records(): a whole-process report with
        call paths (a `psrun -p --callpath` process total, or a companion
        read alone) gives each thread's rows from its recorded call paths
        (ThreadCallPaths.locations, filled by psuite.read_document), under that
        thread's number (1 the main thread), when they hold every sample of
        the flat profile.  Otherwise (no per-thread data, samples the call
        paths lost) the rows are the document's flat profile under its own
        <thread>: 0 the whole process (docs/formats/numbering.md)."""
        ident = self._ident()
        threads = self._thread_profiles()
        if threads is not None:
            return [{**ident, "thread": t.thread, "module": loc.module, "file": loc.file, "function": loc.function,
                     "line": loc.line, "samples": loc.samples} for t in threads for loc in t.locations]
        return [{**ident, "module": loc.module, "file": loc.file, "function": loc.function, "line": loc.line,
                 "samples": loc.samples} for loc in self.locations]

    def _thread_profiles(self) -> list | None:
        """The threads whose flat profiles stand for this report's (see
        to_records), or None: a report of one thread, no call paths, or
        call paths not resolved into flat profiles, or call paths that do
        not hold every sample of the flat profile (samples lost to the
        recording, threads it never saw): the flat profile then, whole."""
        cp = self.callpaths
        if self.thread not in (0, None) or cp is None or not cp.threads or \
                any(t.locations is None for t in cp.threads):
            return None
        flat = sum(loc.samples for loc in self.locations)  # none: a companion read alone
        if flat and sum(loc.samples for t in cp.threads for loc in t.locations) != flat:
            return None
        return cp.threads

    def calltree_records(self) -> list[dict]:
        """One flat row per calling context of every thread's resolved call
        tree (empty without call paths): the run's identity, "thread" (an
        int, the thread's number as in to_records()) and "tid", "path"
        (function names, outermost first), "function" (the leaf), "module",
        "inlined", "inclusive" and "exclusive" samples and "depth" (1 for an
        outermost frame).  Parents come before children."""
        if self.callpaths is None:  # nothing to import psuite.model.calltree for (milliseconds at start-up)
            return []
        from psuite.model.calltree import thread_trees, tree_records

        ident = self._ident()
        return [{**ident, "thread": t.thread, "tid": t.tid, **row}
                for t in thread_trees(self) for row in tree_records(t.tree)]

    def to_hatchet(self):
        """This profile as an LLNL hatchet GraphFrame: see psuite.hatchet."""
        from psuite.hatchet import to_graphframe

        return to_graphframe(self)

    def to_dict(self, calltree: list[dict] | None = None) -> dict:
        """As RunInfo.to_dict, the call paths summarized ("callpaths": the
        companion's facts per thread, or null) and the resolved call trees
        as "calltree" records (see calltree_records; `calltree`: those
        records given, the model's), paths as lists."""
        d = {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name != "callpaths"}
        cp = self.callpaths
        d["callpaths"] = None if cp is None else {
            "source": cp.source, "profile_file": cp.profile_file, "event": cp.event, "threshold": cp.threshold,
            "maxdepth": cp.maxdepth, "unwinder": cp.unwinder, "samples": cp.samples, "truncated": cp.truncated,
            "lost": cp.lost, "modules": [{"id": m.id, "file": m.file, "offset": m.offset} for m in cp.modules.values()],
            "threads": [{"thread": t.thread, "tid": t.tid, "samples": t.samples, "truncated": t.truncated,
                         "lost": t.lost, "contexts": len(t)} for t in cp.threads]}
        ident = {"source", "hostname", "pid", "rank"}  # the report's own; "thread" is the tree's
        d["calltree"] = [{k: list(v) if k == "path" else v for k, v in row.items() if k not in ident}
                         for row in (self.calltree_records() if calltree is None else calltree)]
        return d


def _plain(value):
    if is_dataclass(value):
        if type(value) is ModuleSamples:  # its samples: one int per PC, copied at C speed
            samples = value.samples
            return {"file": value.file, "offset": value.offset,
                    "samples": dict(samples) if _all_scalars(samples) else _plain(samples)}
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list):
        if value and type(value[0]) in _LEAVES:  # scalars only: no recursion needed
            return _LEAVES[type(value[0])](value)
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _all_scalars(table: dict) -> bool:
    return set(map(type, table.values())) <= _SCALARS


_SCALARS = {int, float, str, bool, type(None)}


def _leaf_lister(cls):
    """A function turning a list of `cls` into a list of dicts of its fields,
    each dict written out as a literal: the lists of a report are long."""
    names = [f.name for f in fields(cls)]
    return eval("lambda items: [{" + ", ".join(f"{n!r}: v.{n}" for n in names) + "} for v in items]")


_LEAVES = {cls: _leaf_lister(cls) for cls in (Event, Metric, Location)}


@dataclass
class Statistic:
    """One event or derived metric across the reports of a combination."""

    name: str
    kind: str  # "event", "metric" or "function" (samples per profile)
    count: int
    sum: float
    mean: float
    min: float
    min_who: str
    max: float
    max_who: str
    stddev: float  # population standard deviation (the reports are all the ranks/threads)
    q1: float
    median: float
    q3: float
    imbalance: float | None  # max / mean; None when the mean is 0


@dataclass
class PathSpread:
    """One calling context of combined call trees: its frames' function
    names (outermost first), its depth, and its inclusive and exclusive
    samples across the threads combined (0 where a thread has none)."""

    path: tuple[str, ...]
    depth: int
    inclusive: Statistic
    exclusive: Statistic


@dataclass
class MultiReport:
    """Reports combined: counting reports (<multihwpcreport>) with statistics
    per event and metric, or profiles (<multihwpcprofilereport>) with each
    function's spread (statistics of kind "function")."""

    reports: list = field(default_factory=list)  # CountReport or ProfileReport, not mixed
    statistics: list[Statistic] = field(default_factory=list)
    # Process totals of `psrun -p` runs whose thread reports are among the
    # reports: kept for reference, left out of the statistics (their
    # samples and counts are their threads').
    totals: list = field(default_factory=list)
    # Combined profiles with call paths: every context of the merged call
    # tree in tree order (parents first, the larger first among siblings),
    # with its spread across the threads of every profile.
    callpath_statistics: list[PathSpread] = field(default_factory=list)
    # The combination's analysis model (psuite.analysis.experiments.from_report: its members' experiments
    # merged), which the statistics were computed over and the model's outputs render; None until combined
    experiment: object = field(default=None, repr=False, compare=False)
    # Each member's and each total's own document experiment (from_report(..., for_reports=True)), made as
    # iterated (psuite.analysis.combine.Converted): what a combination's reports list of its profiles (their
    # source lines and sampled PCs are no part of the merge) and of its totals; None until combined
    member_experiments: Iterable | None = field(default=None, repr=False, compare=False)
    total_experiments: Iterable | None = field(default=None, repr=False, compare=False)

    @property
    def of_profiles(self) -> bool:
        return bool(self.reports) and isinstance(self.reports[0], ProfileReport)

    def to_records(self) -> list[dict]:
        """The rows of every report combined."""
        return [row for r in self.reports for row in r.to_records()]

    def calltree_records(self) -> list[dict]:
        """The call-tree rows of every profile combined (see
        ProfileReport.calltree_records)."""
        return [row for r in self.reports if isinstance(r, ProfileReport) for row in r.calltree_records()]

    def to_hatchet(self):
        """These profiles (e.g. every rank of a run) as one LLNL hatchet
        GraphFrame: see psuite.hatchet."""
        from psuite.hatchet import to_graphframe

        return to_graphframe(self)

    def to_dict(self, members: bool = True) -> dict:
        """The combination as a dict; without its members' and totals'
        documents when members is False (their lists empty)."""
        d = {"reports": [r.to_dict() for r in self.reports] if members else [],
             "statistics": [dict(vars(s)) for s in self.statistics],
             "totals": [r.to_dict() for r in self.totals] if members else []}
        if self.callpath_statistics:
            d["callpath_statistics"] = [{"path": list(p.path), "depth": p.depth, "inclusive": dict(vars(p.inclusive)),
                                         "exclusive": dict(vars(p.exclusive))} for p in self.callpath_statistics]
        return d


@dataclass
class ResourceReport:
    """psrun -R: the program's resource usage, sampled while it ran and
    summed at its end (<resourcereport>)."""

    source: str = ""
    pid: int | None = None
    starttime: str = ""
    command: str = ""
    hostname: str = ""
    exit_type: str = "exit"  # "exit" or "signal"
    exit_code: int = 0  # the status, or the signal number
    frequency: float = 1.0  # samples per second
    samples: int = 0
    load_min: float = 0.0  # histogram of the sampled 1-minute load average
    load_max: float = 0.0
    load_resolution: float = 0.5
    load_outofrange: int = 0
    loads: dict[float, int] = field(default_factory=dict)  # bin start -> samples
    maxloads: dict[int, float] = field(default_factory=dict)  # interval in minutes (1, 5, 15) -> max
    maxrss_mb: float = 0.0
    maxvm_mb: float = 0.0
    usertime: float = 0.0
    systemtime: float = 0.0
    major_faults: int = 0
    minor_faults: int = 0
    swaps: int = 0

    def to_dict(self) -> dict:
        return _plain(self)

    def to_records(self) -> list[dict]:
        """One row: the scalar figures."""
        return [{k: v for k, v in self.to_dict().items() if not isinstance(v, dict)}]
