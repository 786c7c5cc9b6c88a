"""One experiment in CUBE's performance space (CUBE 4.3 user guide, 1.2):
a metric tree, a program dimension (regions and the call tree), a system
tree (machine, node, process, thread) and one value per (metric, call path,
location).  Every document psuite reads becomes one (psuite.psprocess.
experiments), CUBE files are read into one and written from one, and the
performance algebra (psuite.analysis.algebra) takes and gives them.

Values are dense numpy arrays, one per metric, shaped (call paths,
locations): a cube of 10,000 call paths on 1,024 threads is 80 MB per
metric, and the algebra's operations are whole-array arithmetic.  Integer
metrics (CUBE's UINT64 and INT64) are held as int64, so counts stay exact
and a difference may go negative; DOUBLE as float64.

A metric is stored EXCLUSIVE (a call path's value excludes its callees',
what psuite's exports write) or INCLUSIVE (what Score-P writes for some),
as its file says; `exclusive()` and `inclusive()` give either view.  A
derived metric holds no values: its CubePL expression is kept and
evaluated when a view asks (`derived_values`), so an operation's result
recomputes it instead of combining it.

A document's experiment carries what CUBE's space has no dimension for,
beside it: each location's run description (Location.run); a counting
report's events as metric columns (MetricColumns: a report can count a
million); a profile's samples by source line (SourceLines) and the
addresses it sampled (Addresses), which its reports and gprof's and
vprof's files are made of.

This module only imports numpy; nothing here reads or writes files.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from psuite.model import cubepl as _cubepl
from psuite.model.cubepl import ExpressionError

INTEGER_TYPES = ("UINT64", "INT64", "UINT32", "INT32", "UINT16", "INT16", "UINT8", "INT8")
EXCLUSIVE, INCLUSIVE = "EXCLUSIVE", "INCLUSIVE"
DERIVED_KINDS = ("POSTDERIVED", "PREDERIVED_INCLUSIVE", "PREDERIVED_EXCLUSIVE")
# metric attribute: a counting report's derived metric (psmetrics'), beside the attributes "psuite::unit"
# and "psuite::description" giving its own unit and description where CUBE's uom and descr cannot
REPORT_METRIC = "psuite::psmetrics"


@dataclass
class Metric:
    """A node of the metric tree (CUBE's <metric>)."""

    name: str  # unique name (uniq_name): how metrics are matched across experiments
    display: str = ""
    unit: str = "occ"  # CUBE's uom: "sec" or "occ"
    dtype: str = "DOUBLE"  # CUBE's dtype: UINT64, INT64 or DOUBLE
    kind: str = EXCLUSIVE  # EXCLUSIVE, INCLUSIVE, or one of DERIVED_KINDS
    description: str = ""
    parent: int | None = None  # index of the parent metric in Experiment.metrics
    expression: str = ""  # a derived metric's CubePL expression
    init: str = ""  # its <cubeplinit>: CubePL run once per experiment, before any evaluation
    # a derived metric's <cubeplaggr> operators, CubePL over arg1 and arg2: "plus" sums a call path's value
    # with its callees' (its inclusive value), "minus" takes them off (exclusive), "aggr" combines locations
    aggregation: dict[str, str] = field(default_factory=dict)
    # CUBE's <attr key value> pairs; not part of a metric's identity (matching is by name)
    attributes: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def derived(self) -> bool:
        return self.kind in DERIVED_KINDS

    @property
    def integer(self) -> bool:
        return self.dtype.upper() in INTEGER_TYPES

    @property
    def combine(self) -> np.ufunc:
        """How values aggregate over callees and locations: summed, or the
        least or greatest for CUBE's MINDOUBLE and MAXDOUBLE (Score-P's
        min_time and max_time)."""
        return {"MINDOUBLE": np.minimum, "MAXDOUBLE": np.maximum}.get(self.dtype.upper(), np.add)


@dataclass
class Region:
    """A region of code (CUBE's <region>): a function, or the program's root."""

    name: str
    module: str = ""  # CUBE's mod: the source or object file
    begin: int = -1
    end: int = -1
    description: str = ""
    role: str = "function"
    paradigm: str = "compiler"
    attributes: dict[str, str] = field(default_factory=dict, compare=False)  # CUBE's <attr>s


@dataclass(slots=True)  # a profile can have a million call paths
class Cnode:
    """A call path: a region entered from its parent call path."""

    region: int  # index in Experiment.regions
    parent: int | None  # index in Experiment.cnodes, None for a root
    line: int = -1  # call-site line, -1 when unknown
    attributes: dict[str, str] = field(default_factory=dict, compare=False)  # CUBE's <attr>s


@dataclass
class Location:
    """A thread (CUBE's <location>) with the process and node it ran in."""

    machine: str = "machine"
    node: str = "localhost"
    process: str = "process 0"
    rank: int = 0  # the process's rank (MPI rank, else its position)
    thread: str = "thread 0"
    thread_rank: int = 0
    # CUBE's <attr>s of the location and of the process, node and machine holding it (Score-P puts
    # "platform" on the machine); not part of a location's identity
    attributes: dict[str, str] = field(default_factory=dict, compare=False)
    process_attributes: dict[str, str] = field(default_factory=dict, compare=False)
    node_attributes: dict[str, str] = field(default_factory=dict, compare=False)
    machine_attributes: dict[str, str] = field(default_factory=dict, compare=False)
    # the run's description when the location came from a PerfSuite document (its report without the
    # numbers, psuite.model.report): what psprocess's reports print of it beside the experiment's values;
    # machine, caches and rusage have no place in CUBE's space, so a CUBE file does not keep it
    run: object = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple[int, int]:
        """What matches a location across experiments: (process rank, thread rank)."""
        return (self.rank, self.thread_rank)

    @property
    def label(self) -> str:
        return f"{self.node}/{self.process}/{self.thread}"


@dataclass(eq=False)  # numpy columns: equal when the same table
class SourceLines:
    """A profile's samples by source line, as its addresses were resolved:
    the flat view PerfSuite's profile report summarizes by module, file,
    function and line, and psbase files.  A call path's region merges all
    of a function's lines (and a cnode its lines in every module), so they
    are kept here beside the metric x call path x location space, one row
    per (module, file, function, line) of a document, in the document's
    order: `samples` its samples there, `location` the row's location in
    Experiment.locations (-1: the whole process, when its threads are the
    locations and the document's flat view is the process's)."""

    modules: list[str]
    files: list[str]
    functions: list[str]
    lines: list[int]
    samples: list[int]  # Python ints: a count a 64-bit integer cannot hold stays exact
    location: np.ndarray  # int64 per row

    def __len__(self) -> int:
        return len(self.functions)


@dataclass
class Topology:
    """A Cartesian topology (CUBE's <cart>): named dimensions, each with a
    size and whether it wraps around, and the coordinates of the locations
    placed in it (CUBE 4.3 user guide 2.3.2, the topology view)."""

    name: str = ""
    dimensions: list[tuple[str, int, bool]] = field(default_factory=list)  # (name, size, periodic)
    coordinates: dict[int, tuple[int, ...]] = field(default_factory=dict)  # location index -> coordinates


@dataclass
class MetricColumns:
    """Many metrics held as columns instead of one Metric and one array
    each: the events of counting reports, whose values are at one call path
    (the program's root).  A report can count a million events, and a
    Metric with its (call paths, locations) array per event would take a
    gigabyte; here they take a few arrays.  Every one is a root of the
    metric tree, EXCLUSIVE, "occ", UINT64 or DOUBLE; they come before the
    experiment's other metrics (`position` of them), and `Experiment.metric`
    and `stored` find them as they find the others.  `Experiment.expand()`
    makes them ordinary metrics, which the algebra and the writers of CUBE
    files and pages want."""

    cnode: int  # the call path holding every value
    position: int  # where they stand among the experiment's metrics
    names: list[str]  # unique names, as Metric.name
    displays: list[str]
    descriptions: list[str]
    integer: np.ndarray  # bool per metric: UINT64, its values in ints, else DOUBLE, in floats
    ints: np.ndarray  # (metrics, locations) int64
    floats: np.ndarray | None  # (metrics, locations) float64; None when every metric is UINT64 (ints hold all)
    # a few metrics' CUBE <attr>s, by metric index (most have none)
    attributes: dict[int, dict[str, str]] = field(default_factory=dict)
    # whole counts a float64 cannot hold exactly (PerfSuite's counters are unsigned 64-bit: from 2**63 on),
    # by metric index, per location (None where its float is exact): what the reports print
    exact: dict[int, list[int | None]] = field(default_factory=dict)
    # Where the reports listed each event, (metrics, locations) bool; None: every event at every location.
    # Reports combined need not count the same events, and an event a run did not count is no count of 0:
    # its value there is 0 but its report shows no such event, and statistics leave it out.
    listed: np.ndarray | None = None
    # Likewise the reports' other metrics (psmetrics' derived ones, REPORT_METRIC) that not every location
    # has: per metric name, bool per location
    metrics_listed: dict[str, np.ndarray] = field(default_factory=dict)
    _index: dict[str, int] | None = field(default=None, init=False, repr=False)  # built by index() when needed
    _asked: int = field(default=0, init=False, repr=False)

    def __len__(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int | None:
        """The metric's row, or None.  The first few are looked up along the
        names (at C speed, and without a dictionary of a million names,
        when a report's derived metrics ask for a few events); an index is
        built when many are."""
        if self._index is None:
            self._asked += 1
            if self._asked <= 64:
                try:
                    return self.names.index(name)
                except ValueError:
                    return None
            self._index = dict(zip(self.names, range(len(self.names)), strict=True))
        return self._index.get(name)

    def metric(self, i: int) -> Metric:
        return Metric(self.names[i], self.displays[i], "occ", "UINT64" if self.integer[i] else "DOUBLE", EXCLUSIVE,
                      self.descriptions[i], attributes=dict(self.attributes.get(i, {})))

    def at(self, j: int) -> np.ndarray | None:
        """The rows of the events location j's report listed, in order
        (None: all of them)."""
        return None if self.listed is None else np.flatnonzero(self.listed[:, j])

    def row(self, i: int) -> np.ndarray:
        """The metric's values per location, int64 or float64."""
        return self.ints[i] if self.integer[i] else self.floats[i]

    def values(self, i: int, shape: tuple[int, int]) -> np.ndarray:
        """The metric's (call paths, locations) array."""
        row = self.row(i)
        a = np.zeros(shape, dtype=row.dtype)
        a[self.cnode] = row
        return a


@dataclass
class LoadedModule:
    """An object file as a profiled process loaded it (executable, shared
    library, the loader): an address in the file is a sampled pc less
    `offset`."""

    file: str
    offset: int = 0
    buildid: str = ""  # the GNU build-id psrun recorded, hex ("" when none)


@dataclass(eq=False)  # numpy columns: equal when the same table
class Addresses:
    """A profile's sampled addresses, beside the metric x call path x
    location space: what gprof's gmon.out and vprof's vmon.out are made of.
    CUBE has no dimension for an address, and a call path merges all of a
    function's addresses and call sites into one cnode, so they are kept
    here as the profile recorded them, in numpy columns (a profile can
    have a million distinct PCs: no Python object per address).

    Sampled PCs, one row per (module, pc, location): `modules` are the
    profile's modules in document order (those without samples too: the
    exporters choose one by name), `module` indexes them, `pc` is the
    sampled address as recorded (file address: pc - the module's offset),
    `location` indexes Experiment.locations (-1: the whole process, when
    its threads are the locations), `samples` the samples there (a count
    beyond int64 is held at its maximum).

    Call paths (psrun --callpath), None without them: each thread's
    recorded frames, outermost first, one row per frame (the threads'
    roots left out): `frame_modules` are the companion's modules,
    `frame_module` indexes them (-1: one it does not list), `frame_parent`
    is the calling frame's row (-1: the thread's outermost frames; a
    parent comes before its children), `frame_pc` the address recorded (a
    caller's return address, a leaf's sampled pc), `frame_kind` psuite.
    model.calltree's KIND_* (call, sample, truncated, blocked),
    `frame_samples` the samples taken in the frame itself and
    `frame_location` the thread's location (-1: a thread psuite could not
    resolve).  gmon's call arcs are computed from them at export, against
    the module's symbol table.

    An operation of the algebra gives none: its values are no longer one
    profile's samples."""

    event: str = ""  # the sampling event, as the profile names it (ITIMER_PROF, PAPI_TOT_CYC ...)
    threshold: int | None = None  # the sampling period: microseconds for timers, events otherwise
    modules: list[LoadedModule] = field(default_factory=list)
    module: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    pc: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    location: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    samples: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    frame_modules: list[LoadedModule] | None = None
    frame_parent: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    frame_module: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    frame_pc: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    frame_kind: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    frame_samples: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    frame_location: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))

    @property
    def is_timer(self) -> bool:
        return self.event.startswith("ITIMER_")

    def check(self, locations: int) -> None:
        """Raise ValueError unless the columns agree with each other and
        with an experiment of `locations` locations."""
        for group, columns in (("sampled pcs", ("module", "pc", "location", "samples")),
                               ("frames", ("frame_parent", "frame_module", "frame_pc", "frame_kind",
                                           "frame_samples", "frame_location"))):
            sizes = {name: len(getattr(self, name)) for name in columns}
            if len(set(sizes.values())) > 1:
                raise ValueError(f"addresses: the columns of the {group} differ in length ({sizes})")
        for name, lowest, size in (("module", 0, len(self.modules)), ("location", -1, locations),
                                   ("frame_module", -1, len(self.frame_modules or ())),
                                   ("frame_location", -1, locations)):
            index = getattr(self, name)
            if len(index) and not (lowest <= index.min() and index.max() < size):
                raise ValueError(f"addresses: {name} indexes beyond its {size} entries")
        rows = np.arange(len(self.frame_parent))
        if len(rows) and not np.all((self.frame_parent >= -1) & (self.frame_parent < rows)):
            raise ValueError("addresses: a frame's parent does not come before it")


@dataclass
class Experiment:
    """Metrics x call paths x locations.  Cnodes are in depth-first order
    (a parent before its children), locations in system-tree order."""

    metrics: list[Metric] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    cnodes: list[Cnode] = field(default_factory=list)
    locations: list[Location] = field(default_factory=list)
    values: dict[str, np.ndarray] = field(default_factory=dict)  # metric name -> (cnodes, locations)
    attributes: dict[str, str] = field(default_factory=dict)  # provenance: source, command, operation ...
    topologies: list[Topology] = field(default_factory=list)
    columns: MetricColumns | None = None  # many root metrics held as columns (a counting report's events)
    lines: SourceLines | None = None  # a profile document's samples by source line (its flat view)
    # a profile's sampled addresses (Addresses), beside the space: None for anything else and for the
    # algebra's results
    addresses: Addresses | None = None

    # -- building --------------------------------------------------------
    def add_metric(self, metric: Metric) -> int:
        self.metrics.append(metric)
        return len(self.metrics) - 1

    def add_region(self, region: Region) -> int:
        self.regions.append(region)
        return len(self.regions) - 1

    def add_cnode(self, region: int, parent: int | None, line: int = -1) -> int:
        if parent is not None and not 0 <= parent < len(self.cnodes):
            raise ValueError(f"cnode parent {parent} does not exist yet (parents come first)")
        self.cnodes.append(Cnode(region, parent, line))
        return len(self.cnodes) - 1

    def zeros(self, metric: Metric | str) -> np.ndarray:
        """A new (cnodes, locations) array for the metric, stored and returned."""
        m = self.metric(metric) if isinstance(metric, str) else metric
        a = np.zeros((len(self.cnodes), len(self.locations)), dtype=np.int64 if m.integer else np.float64)
        self.values[m.name] = a
        return a

    def expand(self) -> Experiment:
        """The experiment with its metric columns made ordinary metrics, in
        their place among the others; returned for chaining."""
        cols = self.columns
        if cols is None:
            return self
        self.columns = None
        n = len(cols)
        for m in self.metrics:
            if m.parent is not None and m.parent >= cols.position:
                m.parent += n
        shape = (len(self.cnodes), len(self.locations))
        self.metrics[cols.position:cols.position] = [cols.metric(i) for i in range(n)]
        values = {cols.names[i]: cols.values(i, shape) for i in range(n)}
        values.update(self.values)
        self.values = values
        return self

    def expanded(self) -> Experiment:
        """A copy with its metric columns made ordinary metrics (expand()),
        this experiment left as it is; the same experiment when it has none.
        Cnodes, regions and locations are shared, the metrics copied."""
        if self.columns is None:
            return self
        return dataclasses.replace(self, metrics=[dataclasses.replace(m, attributes=dict(m.attributes))
                                                  for m in self.metrics],
                                   values=dict(self.values), attributes=dict(self.attributes)).expand()

    def check(self) -> None:
        """Raise ValueError unless every stored array fits the dimensions."""
        shape = (len(self.cnodes), len(self.locations))
        cols = self.columns
        if cols is not None:
            if cols.ints.shape != (len(cols), shape[1]) or \
                    (cols.floats.shape if cols.floats is not None else cols.ints.shape) != (len(cols), shape[1]):
                raise ValueError(f"metric columns shaped {cols.ints.shape}, not ({len(cols)}, {shape[1]})")
            if cols.floats is None and not cols.integer.all():
                raise ValueError("metric columns with DOUBLE metrics and no float values")
            if cols.listed is not None and cols.listed.shape != cols.ints.shape:
                raise ValueError(f"metric columns listed shaped {cols.listed.shape}, not {cols.ints.shape}")
            if not 0 <= cols.cnode < shape[0] or not 0 <= cols.position <= len(self.metrics):
                raise ValueError("metric columns at a call path or position that does not exist")
        names = {m.name for m in self.metrics}
        for name, a in self.values.items():
            if name not in names:
                raise ValueError(f"values for {name!r}, which is not a metric")
            if a.shape != shape:
                raise ValueError(f"metric {name!r}: values shaped {a.shape}, dimensions are {shape}")
        if self.addresses is not None:
            self.addresses.check(len(self.locations))
        for i, c in enumerate(self.cnodes):
            if c.parent is not None and not 0 <= c.parent < i:
                raise ValueError(f"cnode {i}: parent {c.parent} does not come before it")
            if not 0 <= c.region < len(self.regions):
                raise ValueError(f"cnode {i}: region {c.region} does not exist")

    # -- dimensions ------------------------------------------------------
    def metric(self, name: str) -> Metric:
        for m in self.metrics:
            if m.name == name:
                return m
        if self.columns is not None and (i := self.columns.index(name)) is not None:
            return self.columns.metric(i)
        raise KeyError(f"no metric {name!r} (metrics: {', '.join(m.name for m in self.metrics)})")

    def metric_index(self, name: str) -> int:
        return self.metrics.index(self.metric(name))

    def metric_children(self, index: int | None) -> list[int]:
        return [i for i, m in enumerate(self.metrics) if m.parent == index]

    @property
    def roots(self) -> list[int]:
        return [i for i, c in enumerate(self.cnodes) if c.parent is None]

    def children(self) -> list[list[int]]:
        """Per cnode, its children's indices, in order."""
        kids: list[list[int]] = [[] for _ in self.cnodes]
        for i, c in enumerate(self.cnodes):
            if c.parent is not None:
                kids[c.parent].append(i)
        return kids

    def parents(self) -> np.ndarray:
        """Per cnode its parent's index, -1 for a root."""
        return np.fromiter((-1 if c.parent is None else c.parent for c in self.cnodes), dtype=np.int64,
                           count=len(self.cnodes))

    def depths(self) -> list[int]:
        """Per cnode its depth, 0 for a root."""
        return depths(self.parents()).tolist()

    def depth(self, cnode: int) -> int:
        d = 0
        while (cnode := self.cnodes[cnode].parent) is not None:
            d += 1
        return d

    def region_name(self, cnode: int) -> str:
        return self.regions[self.cnodes[cnode].region].name

    def path(self, cnode: int) -> tuple[str, ...]:
        """The call path's region names, outermost first."""
        names = []
        c: int | None = cnode
        while c is not None:
            names.append(self.region_name(c))
            c = self.cnodes[c].parent
        return tuple(reversed(names))

    def paths(self) -> list[tuple[str, ...]]:
        """Every cnode's path, computed in one pass (parents come first)."""
        out: list[tuple[str, ...]] = []
        for c in self.cnodes:
            name = self.regions[c.region].name
            out.append((name,) if c.parent is None else out[c.parent] + (name,))
        return out

    def find(self, pattern: str) -> list[int]:
        """Cnodes whose region name equals pattern, or matches it as a
        regular expression when no name equals it."""
        exact = [i for i, c in enumerate(self.cnodes) if self.regions[c.region].name == pattern]
        if exact:
            return exact
        rx = re.compile(pattern)
        return [i for i, c in enumerate(self.cnodes) if rx.fullmatch(self.regions[c.region].name)]

    # -- values ----------------------------------------------------------
    def stored(self, metric: str) -> np.ndarray:
        """The metric's values as stored (zeros when it has none)."""
        a = self.values.get(metric)
        if a is None:
            if self.columns is not None and (i := self.columns.index(metric)) is not None:
                return self.columns.values(i, (len(self.cnodes), len(self.locations)))
            m = self.metric(metric)
            if m.derived:
                raise ValueError(f"metric {metric!r} is derived: use derived_values")
            return np.zeros((len(self.cnodes), len(self.locations)),
                            dtype=np.int64 if m.integer else np.float64)
        return a

    def exclusive(self, metric: str) -> np.ndarray:
        """(cnodes, locations): each call path's own value, callees excluded."""
        m = self.metric(metric)
        if m.derived:
            return self.derived_values(metric, inclusive=False)
        a = self.stored(metric)
        if m.kind == EXCLUSIVE or m.combine is not np.add:  # a least or greatest value has no exclusive part
            return a
        return to_exclusive(a, self.parents())

    def inclusive(self, metric: str) -> np.ndarray:
        """(cnodes, locations): each call path's value with its callees'."""
        m = self.metric(metric)
        if m.derived:
            return self.derived_values(metric, inclusive=True)
        a = self.stored(metric)
        if m.kind == INCLUSIVE:
            return a
        return to_inclusive(a, self.parents(), m.combine)

    def derived_values(self, metric: str, inclusive: bool = True,
                       fetch: Callable[[str], np.ndarray | float] | None = None,
                       fetch_view: Callable[[str, str], np.ndarray | float] | None = None) -> np.ndarray:
        """A derived metric computed from its CubePL expression, as CUBE
        does: POSTDERIVED over the other metrics' inclusive (or exclusive)
        values; PREDERIVED_EXCLUSIVE over exclusive values, its inclusive
        values their sums over the callees; PREDERIVED_INCLUSIVE over
        inclusive values, its exclusive values each call path's less its
        children's.  metric::x(i) and metric::x(e) take the view they name.
        With `fetch` (and `fetch_view`), the other metrics' values are what
        those give (a view's cells, say) instead of this experiment's.
        The derived metrics it needs are computed first, each once, so a
        chain of any length costs no recursion; a metric that needs its
        own value raises ExpressionError."""
        order = derived_order(self, metric)
        if fetch is not None:
            for name in order[:-1]:  # the caller's values, deepest first: each its own needs ready
                if fetch_view is not None:
                    fetch_view(name, "e")
                    fetch_view(name, "i")
                else:
                    fetch(name)
            return self._derive(self.metric(metric), inclusive, lambda n, v: fetch(n) if v is None or
                                fetch_view is None else fetch_view(n, v), fetch_view is not None)
        cache: dict[tuple[str, str], np.ndarray] = {}

        def view(inclusive: bool) -> Callable[[str, str | None], np.ndarray]:
            # one function per view, closing over it: what cubepl's fetch memo keys on
            def get(name: str, variant: str | None) -> np.ndarray:
                v = variant or ("i" if inclusive else "e")
                got = cache.get((name, v))
                if got is not None:
                    return got
                return (self.inclusive if v == "i" else self.exclusive)(name).astype(np.float64)
            return get

        for name in order[:-1]:
            for v in ("e", "i"):
                cache[(name, v)] = self._derive(self.metric(name), v == "i", view(v == "i"), True)
        return self._derive(self.metric(metric), inclusive, view(inclusive), True)

    def _derive(self, m: Metric, inclusive: bool, get: Callable[[str, str | None], np.ndarray | float],
                cells: bool) -> np.ndarray:
        """One derived metric from get(name, None | "i" | "e"); `cells`:
        get gives (call paths, locations) values, so prederived metrics
        can be summed up or taken apart along the call tree."""
        kind = m.kind if cells else "POSTDERIVED"
        default = {"PREDERIVED_EXCLUSIVE": "e", "PREDERIVED_INCLUSIVE": "i"}.get(kind)

        def fixed(name: str, variant: str) -> np.ndarray | float:
            # CubeLib: metric::fixed::x(i|e) is metric::x(i|e); metric::fixed::x() the call
            # path's value over every location (POSTDERIVED), the experiment's total (PREDERIVED)
            if variant:
                return get(name, variant)
            if kind != "POSTDERIVED":
                return self.total(name)
            a = np.asarray(get(name, None), dtype=np.float64)
            return a.sum(axis=1, keepdims=True) if a.ndim == 2 else a

        a = evaluate(m.expression, lambda n: get(n, default), get, fixed=fixed, variables=self._variable,
                     metrics=self.metric_names())
        if not cells:
            return a
        if np.ndim(a) == 1:  # get gave one value per call path (summed over the locations, say): a column
            return self._along_calltree(m, kind, inclusive, np.asarray(a, dtype=np.float64).reshape(-1, 1)).ravel()
        full = np.broadcast_to(a, (len(self.cnodes), len(self.locations))).astype(np.float64)
        return self._along_calltree(m, kind, inclusive, full)

    def _along_calltree(self, m: Metric, kind: str, inclusive: bool, a: np.ndarray) -> np.ndarray:
        """A prederived metric's values in the other call-tree view: an
        exclusive one's inclusive values, an inclusive one's exclusive
        values; with CubeLib's fold of its <cubeplaggr> operators when it
        has them (CubeLib's get_sev_aggregated: a call path's value plus
        each child's inclusive value in turn; its value minus the plus of
        its children's, for a call path with children)."""
        plus, minus = m.aggregation.get("plus"), m.aggregation.get("minus")
        if kind == "PREDERIVED_EXCLUSIVE" and inclusive:
            if not plus:
                return to_inclusive(a, self.parents())
            out = a.copy()
            kids = self.children()
            for c in range(len(self.cnodes) - 1, -1, -1):  # children come after their parent: done first
                for k in kids[c]:
                    out[c] = _cubepl.combine(plus, out[c], out[k])
            return out
        if kind == "PREDERIVED_INCLUSIVE" and not inclusive:
            if not plus and not minus:
                return to_exclusive(a, self.parents())
            out = a.copy()
            for c, kids in enumerate(self.children()):
                if not kids:
                    continue
                under = np.zeros(a.shape[1])
                for k in kids:
                    under = _cubepl.combine(plus, under, a[k]) if plus else under + a[k]
                out[c] = _cubepl.combine(minus, a[c], under) if minus else a[c] - under
            return out
        return a

    def aggregate(self, metric: str, inclusive: bool, locations: Sequence[int] | None = None) -> np.ndarray:
        """Per call path, the metric over the locations (all by default) as
        CubeLib's get_sev_aggregated gives it.  A prederived metric with an
        "aggr" operator folds it over the locations, from 0, in turn; then,
        along the call tree, an exclusive one's inclusive value folds in its
        children's aggregates with "plus", an inclusive one's exclusive
        value takes them off with "minus".  Any other metric: its values
        summed (the least or greatest for MINDOUBLE and MAXDOUBLE), a
        POSTDERIVED one evaluated per location and summed (views evaluate
        it on the aggregates instead)."""
        m = self.metric(metric)
        op = m.aggregation.get("aggr") if m.derived and m.kind != "POSTDERIVED" else None
        cols = slice(None) if locations is None else list(locations)
        if not op:
            a = (self.inclusive if inclusive else self.exclusive)(metric)[:, cols]
            return (np.add if m.derived else m.combine).reduce(a, axis=1)
        own = m.kind == "PREDERIVED_EXCLUSIVE"  # its own (exclusive) values are the stored ones; else inclusive
        a = (self.exclusive if own else self.inclusive)(metric)[:, cols]
        out = np.zeros(a.shape[0])
        for j in range(a.shape[1]):
            out = _cubepl.combine(op, out, a[:, j])
        column = np.broadcast_to(np.asarray(out, dtype=np.float64), (a.shape[0],)).reshape(-1, 1)
        return self._along_calltree(m, m.kind, inclusive, column.copy()).ravel()

    def _fixed(self, name: str, variant: str) -> np.ndarray | float:
        """metric::fixed::name() of a whole-experiment value: the total."""
        if not variant:
            return self.total(name)
        return float(np.sum((self.inclusive if variant == "i" else self.exclusive)(name)[self.roots]))

    def metric_names(self) -> Container[str]:
        """The names of the metrics: what CubePL can refer to (any other is 0)."""
        names = {m.name for m in self.metrics}
        cols = self.columns
        if cols is None:
            return names
        return _Names(names, cols)

    def init_state(self) -> _cubepl.InitState:
        """What the metrics' <cubeplinit> programs leave (global variables),
        run once, in the file's order, as CubeLib runs them before
        evaluating any derived metric; remembered while the metrics, call
        paths and regions stay the same."""
        programs = [m.init for m in self.metrics if m.init]
        key = (tuple(programs), id(self.cnodes), len(self.cnodes), id(self.regions), len(self.regions))
        got = self.__dict__.get("_init")
        if got is None or got[0] != key:
            def whole(name: str) -> object:  # run once, not per cell: no call path, no location
                return None if name.startswith("calculation::") else self._predefined(name)
            got = (key, _cubepl.run_init(programs, whole) if programs else _cubepl.InitState())
            self.__dict__["_init"] = got
        return got[1]

    def _variable(self, name: str) -> object:
        """CubePL's variables in a derived metric: CUBE's predefined ones,
        then the global ones the <cubeplinit> programs set."""
        got = self._predefined(name)
        if got is None and any(m.init for m in self.metrics):
            got = self.init_state().globals.get(name)
        return got

    def _predefined(self, name: str) -> object:
        """CUBE's predefined CubePL variables that psuite's model holds,
        as CubeLib 4.8 (CubePL 1) sets them: per call path (call paths, 1),
        per location (1, locations), arrays as lists.  A region's name is
        ${cube::region::name}[${cube::callpath::calleeid}[${calculation::
        callpath::id}]]: CubeLib leaves calculation::region::name unset."""
        c, n = len(self.cnodes), len(self.locations)

        def column(values: Iterable, dtype: type = np.float64) -> np.ndarray:
            return np.asarray(list(values), dtype=dtype).reshape(c, 1)

        kids = np.zeros(c)
        for x in self.cnodes:
            if x.parent is not None:
                kids[x.parent] += 1
        table: dict[str, Callable[[], object]] = {
            "calculation::callpath::id": lambda: column(np.arange(c)),
            "calculation::callpath::#children": lambda: column(kids),
            "calculation::callpath::line": lambda: column([x.line for x in self.cnodes]),
            "calculation::sysres::id": lambda: np.arange(n, dtype=np.float64).reshape(1, n),
            "cube::#callpaths": lambda: float(c),
            "cube::#root::callpaths": lambda: float(len(self.roots)),
            "cube::#regions": lambda: float(len(self.regions)),
            "cube::#metrics": lambda: float(len(self.metrics)),
            "cube::#root::metrics": lambda: float(sum(1 for m in self.metrics if m.parent is None)),
            "cube::#locations": lambda: float(n),
            "cube::#threads": lambda: float(n),
            "cube::#locationgroups": lambda: float(len({loc.key for loc in self.locations})),
            "cube::callpath::parent::id": lambda: [float(-1 if x.parent is None else x.parent) for x in self.cnodes],
            "cube::callpath::calleeid": lambda: [float(x.region) for x in self.cnodes],
            "cube::region::name": lambda: [r.name for r in self.regions],
            "cube::region::mod": lambda: [r.module for r in self.regions],
            "cube::region::paradigm": lambda: [r.paradigm for r in self.regions],
            "cube::region::role": lambda: [r.role for r in self.regions],
        }
        got = table.get(name)
        return None if got is None else got()

    def to_records(self, inclusive: bool = False) -> list[dict]:
        """One row per metric, call path and thread with a value other than
        0 (for pandas): metric, path (region names, outermost first), depth,
        process rank, thread rank, node and value; exclusive values unless
        `inclusive`; derived metrics evaluated."""
        paths = self.paths()
        rows = []
        for m in self.metrics:
            if not m.derived and m.name not in self.values:
                continue
            a = (self.inclusive if inclusive else self.exclusive)(m.name)
            for c, j in zip(*np.nonzero(a), strict=True):
                loc = self.locations[j]
                rows.append({"metric": m.name, "path": paths[c], "depth": len(paths[c]), "rank": loc.rank,
                             "thread": loc.thread_rank, "node": loc.node, "value": a[c, j].item()})
        return rows

    def to_hatchet(self):
        """A profile's experiment as one LLNL hatchet GraphFrame (indexed by
        node, rank and thread): see psuite.hatchet."""
        from psuite.hatchet import to_graphframe

        return to_graphframe(self)

    def total(self, metric: str) -> float:
        """The metric over the whole experiment (every root, every location):
        a POSTDERIVED metric evaluated on the other metrics' totals (metric::
        x(e): the roots' own values), a prederived one summed."""
        m = self.metric(metric)
        if m.derived and m.kind == "POSTDERIVED":
            memo: dict[str, float] = {}

            def tot(name: str, variant: str | None = None) -> float:
                if variant == "e":
                    return float(np.sum(self.exclusive(name)[self.roots]))
                if name in memo:
                    return memo[name]
                return self.total(name)

            def whole(name: str) -> object:  # no call path, no location: CubeLib leaves their ids unset
                return None if name.startswith("calculation::") else self._variable(name)

            for name in derived_order(self, metric):
                d = self.metric(name)
                if d.kind == "POSTDERIVED":
                    memo[name] = float(evaluate(d.expression, tot, tot, fixed=self._fixed, variables=whole,
                                                metrics=self.metric_names()))
            return memo[metric]
        if m.derived:
            return float(np.sum(self.inclusive(metric)[self.roots]))
        a = self.stored(metric) if m.kind == INCLUSIVE else self.inclusive(metric)
        return float(m.combine.reduce(a[self.roots], axis=None))


class _Names(Container[str]):
    """Metric names, those of the columns looked up in their index (a
    million names are not copied into a set for each evaluation)."""

    def __init__(self, names: set[str], columns: MetricColumns) -> None:
        self.names, self.columns = names, columns

    def __contains__(self, name: object) -> bool:
        return name in self.names or (isinstance(name, str) and self.columns.index(name) is not None)


# -- tree arithmetic over (cnodes, locations) arrays ---------------------------
def scatter_add(out: np.ndarray, rows: np.ndarray, values: np.ndarray, combine: np.ufunc = np.add) -> None:
    """out[rows[i]] += values[i] for every i, repeated rows summed (np.add.at's
    meaning, with a sort and one reduceat instead of its slow element loop);
    with combine np.minimum or np.maximum (MINDOUBLE, MAXDOUBLE metrics), the
    least or greatest instead of the sum."""
    if len(rows) == 0:
        return
    order = np.argsort(rows, kind="stable")
    ordered = rows[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    at = ordered[starts]
    out[at] = combine(out[at], combine.reduceat(values[order], starts, axis=0))


def depths(parents: np.ndarray) -> np.ndarray:
    """Per cnode its depth (0 for a root), from parents listed parents first."""
    depth = np.zeros(len(parents), dtype=np.int64)
    for i, p in enumerate(parents.tolist()):  # parents come first: one pass over the cnodes
        if p >= 0:
            depth[i] = depth[p] + 1
    return depth


def to_inclusive(a: np.ndarray, parents: np.ndarray, combine: np.ufunc = np.add) -> np.ndarray:
    """Inclusive values from exclusive ones: sums (or least or greatest
    values) flow up one tree level at a time."""
    out = a.copy()
    depth = depths(parents)
    for d in range(int(depth.max(initial=0)), 0, -1):
        level = np.flatnonzero(depth == d)
        scatter_add(out, parents[level], out[level], combine)
    return out


def to_exclusive(a: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Exclusive values from inclusive ones: each call path less its children."""
    out = a.copy()
    children = np.flatnonzero(parents >= 0)
    scatter_add(out, parents[children], -a[children])
    return out



# -- derived metrics: CubePL (psuite.model.cubepl) ------------------------------------
def metric_names(expression: str) -> list[str]:
    """The metrics an expression refers to; none when it is not CubePL
    (evaluate says why).  CubePL names a metric with letters, digits, _ :
    and = only, so metric::task-clock() is not CubePL."""
    try:
        return _cubepl.metric_names(expression)
    except ExpressionError:
        return []


def evaluate(expression: str, fetch: Callable[[str], np.ndarray | float],
             fetch_view: Callable[[str, str], np.ndarray | float] | None = None, *,
             fixed: Callable[[str, str], np.ndarray | float] | None = None,
             variables: Callable[[str], object] | None = None,
             metrics: Container[str] | None = None) -> np.ndarray:
    """A CubePL expression (psuite.model.cubepl) over fetched values: fetch(name)
    gives metric::name() in the view asked for, fetch_view(name, "i" | "e")
    metric::name(i) and (e) (Score-P's avg_time: time(i)/visits(e)),
    fixed(name, "" | "i" | "e") metric::fixed:: references, variables CUBE's
    predefined ${...} ones, metrics (when given) the metrics there are: any
    other is 0.  Division as CubeLib's: 0/x is 0, x/0 NaN."""
    return _cubepl.evaluate(expression, fetch, fetch_view, fixed=fixed, variables=variables, metrics=metrics)


def derived_order(exp: Experiment, metric: str) -> list[str]:
    """The derived metrics a derived metric needs, itself last, each after
    the ones it refers to; an iterative walk, so chains of any length and
    cycles are met without recursion.  Raises ExpressionError for a metric
    that refers to itself, directly or through others."""
    derived = {m.name: m for m in exp.metrics if m.derived}
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the walk's path, 2: done
    path: list[str] = [metric]
    stack = [(metric, iter(_refs(derived[metric])))]
    state[metric] = 1
    while stack:
        name, it = stack[-1]
        for ref in it:
            if ref not in derived or state.get(ref) == 2:
                continue
            if state.get(ref) == 1:
                loop = path[path.index(ref):] + [ref]
                raise ExpressionError(f"derived metric {ref} refers to itself ({' → '.join(loop)}); "
                                      "change its expression so that no metric needs its own value")
            if len(path) >= _cubepl.MAX_CHAIN:
                raise ExpressionError(f"derived metrics refer to each other more than {_cubepl.MAX_CHAIN} deep "
                                      f"({path[0]} → {path[1]} → ... → {ref}); shorten the chain")
            state[ref] = 1
            path.append(ref)
            stack.append((ref, iter(_refs(derived[ref]))))
            break
        else:
            stack.pop()
            path.pop()
            state[name] = 2
            order.append(name)
    return order


def _refs(m: Metric) -> list[str]:
    try:
        return list(dict.fromkeys(_cubepl.metric_names(m.expression)))
    except ExpressionError as exc:
        raise ExpressionError(f"derived metric {m.name!r}: {exc}") from None


def system_tree(locations: Iterable[Location]) -> dict[str, dict[str, dict[tuple[int, str], list[int]]]]:
    """machine -> node -> (rank, process) -> location indices, in order met."""
    tree: dict[str, dict[str, dict[tuple[int, str], list[int]]]] = {}
    for i, loc in enumerate(locations):
        tree.setdefault(loc.machine, {}).setdefault(loc.node, {}).setdefault((loc.rank, loc.process), []).append(i)
    return tree
