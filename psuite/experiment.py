"""One experiment in CUBE's performance space (CUBE 4.3 user guide, 1.2):
a metric tree, a program dimension (regions and the call tree), a system
tree (machine, node, process, thread) and one value per (metric, call path,
location).  Every document psuite reads becomes one (psuite.psprocess.
experiments), CUBE files are read into one and written from one, and the
performance algebra (psuite.psprocess.algebra) takes and gives them.

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

This module only imports numpy; nothing here reads or writes files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

INTEGER_TYPES = ("UINT64", "INT64", "UINT32", "INT32", "UINT16", "INT16", "UINT8", "INT8")
EXCLUSIVE, INCLUSIVE = "EXCLUSIVE", "INCLUSIVE"
DERIVED_KINDS = ("POSTDERIVED", "PREDERIVED_INCLUSIVE", "PREDERIVED_EXCLUSIVE")


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


@dataclass
class Cnode:
    """A call path: a region entered from its parent call path."""

    region: int  # index in Experiment.regions
    parent: int | None  # index in Experiment.cnodes, None for a root
    line: int = -1  # call-site line, -1 when unknown


@dataclass
class Location:
    """A thread (CUBE's <location>) with the process and node it ran in."""

    machine: str = "machine"
    node: str = "localhost"
    process: str = "process 0"
    rank: int = 0  # the process's rank (MPI rank, else its position)
    thread: str = "thread 0"
    thread_rank: int = 0

    @property
    def key(self) -> tuple[int, int]:
        """What matches a location across experiments: (process rank, thread rank)."""
        return (self.rank, self.thread_rank)

    @property
    def label(self) -> str:
        return f"{self.node}/{self.process}/{self.thread}"


@dataclass
class Topology:
    """A Cartesian topology (CUBE's <cart>): named dimensions, each with a
    size and whether it wraps around, and the coordinates of the locations
    placed in it (CUBE 4.3 user guide 2.3.2, the topology view)."""

    name: str = ""
    dimensions: list[tuple[str, int, bool]] = field(default_factory=list)  # (name, size, periodic)
    coordinates: dict[int, tuple[int, ...]] = field(default_factory=dict)  # location index -> coordinates


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

    def check(self) -> None:
        """Raise ValueError unless every stored array fits the dimensions."""
        shape = (len(self.cnodes), len(self.locations))
        names = {m.name for m in self.metrics}
        for name, a in self.values.items():
            if name not in names:
                raise ValueError(f"values for {name!r}, which is not a metric")
            if a.shape != shape:
                raise ValueError(f"metric {name!r}: values shaped {a.shape}, dimensions are {shape}")
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
        """A derived metric computed from its expression: over the other
        metrics' inclusive (or exclusive) values, or over what `fetch`
        gives for a metric name (aggregated values, say)."""
        m = self.metric(metric)

        def view(name: str, variant: str | None = None) -> np.ndarray:
            incl = inclusive if variant is None else variant == "i"
            return (self.inclusive if incl else self.exclusive)(name).astype(np.float64)

        if fetch is not None:
            return evaluate(m.expression, fetch, fetch_view)
        return evaluate(m.expression, view, view)

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

    def total(self, metric: str) -> float:
        """The metric over the whole experiment (every root, every location)."""
        m = self.metric(metric)
        if m.derived:
            return float(self.derived_values(metric, fetch=lambda n: self.total(n)))
        a = self.stored(metric) if m.kind == INCLUSIVE else self.inclusive(metric)
        return float(m.combine.reduce(a[self.roots], axis=None))


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



# -- derived metrics: a safe subset of CubePL ---------------------------------
_TOKEN = re.compile(r"\s*(?:(metric::(?:context::|fixed::|call::)?([A-Za-z_][\w.:@-]*)"
                    r"\s*\(\s*(?:([ie])\s*(?:,[^)]*)?)?\))|(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|([-+*/()]))")


class ExpressionError(ValueError):
    """A derived metric's expression outside the CubePL subset psuite evaluates."""


def metric_names(expression: str) -> list[str]:
    """The metrics an expression refers to."""
    return [m.group(2) for m in _TOKEN.finditer(expression) if m.group(2)]


def evaluate(expression: str, fetch: Callable[[str], np.ndarray | float],
             fetch_view: Callable[[str, str], np.ndarray | float] | None = None) -> np.ndarray:
    """CubePL's arithmetic: metric::name() references, numbers, + - * / and
    parentheses.  `fetch(name)` gives a metric's values in the view asked
    for; a reference with an argument, metric::name(i) or metric::name(e)
    (Score-P's avg_time: time(i)/visits(e)), is fetched as
    `fetch_view(name, "i" | "e")` when that is given (else as fetch(name)).
    A division by zero gives 0, as CUBE shows it."""
    tokens: list[tuple[str, object]] = []
    pos = 0
    text = expression.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ExpressionError(f"cannot evaluate derived metric expression at {text[pos:pos + 20]!r}")
        if m.group(2):
            tokens.append(("v", (m.group(2), m.group(3))))
        elif m.group(4):
            tokens.append(("v", float(m.group(4))))
        else:
            tokens.append(("op", m.group(5)))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    def get(name: str, variant: str | None) -> np.ndarray | float:
        return fetch(name) if variant is None or fetch_view is None else fetch_view(name, variant)

    result, end = _sum(tokens, 0, get)
    if end != len(tokens):
        raise ExpressionError(f"unexpected {tokens[end][1]!r} in derived metric expression {expression!r}")
    return np.asarray(result, dtype=np.float64)


def _sum(t: Sequence, i: int, fetch) -> tuple:
    left, i = _product(t, i, fetch)
    while i < len(t) and t[i] in (("op", "+"), ("op", "-")):
        right, j = _product(t, i + 1, fetch)
        left = left + right if t[i][1] == "+" else left - right
        i = j
    return left, i


def _product(t: Sequence, i: int, fetch) -> tuple:
    left, i = _unary(t, i, fetch)
    while i < len(t) and t[i] in (("op", "*"), ("op", "/")):
        right, j = _unary(t, i + 1, fetch)
        if t[i][1] == "*":
            left = left * right
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                q = np.true_divide(left, right)
            left = np.where(np.asarray(right) == 0, 0.0, q)
        i = j
    return left, i


def _unary(t: Sequence, i: int, fetch) -> tuple:
    if i >= len(t):
        raise ExpressionError("derived metric expression ends too early")
    kind, v = t[i]
    if (kind, v) == ("op", "-"):
        value, j = _unary(t, i + 1, fetch)
        return -value, j
    if (kind, v) == ("op", "("):
        value, j = _sum(t, i + 1, fetch)
        if j >= len(t) or t[j] != ("op", ")"):
            raise ExpressionError("unbalanced parentheses in derived metric expression")
        return value, j + 1
    if kind == "v":
        if isinstance(v, tuple):  # a metric: metric::name(i) asks for its inclusive value, (e) exclusive
            return fetch(*v), i + 1
        return v, i + 1
    raise ExpressionError(f"unexpected {v!r} in derived metric expression")


def system_tree(locations: Iterable[Location]) -> dict[str, dict[str, dict[tuple[int, str], list[int]]]]:
    """machine -> node -> (rank, process) -> location indices, in order met."""
    tree: dict[str, dict[str, dict[tuple[int, str], list[int]]]] = {}
    for i, loc in enumerate(locations):
        tree.setdefault(loc.machine, {}).setdefault(loc.node, {}).setdefault((loc.rank, loc.process), []).append(i)
    return tree
