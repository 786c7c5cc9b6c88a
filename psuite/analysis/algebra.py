"""CUBE's performance algebra (CUBE 4.3 user guide, 1.7) over psuite's
experiments (psuite.model.experiment): diff, merge and mean of experiments,
compare (cube_cmp, plus tolerances for regression checks) and cut
(cube_cut's re-root and prune).  Every result is an Experiment again, so
operations compose.

Unification (what makes values of different experiments comparable), as
CubeLib's cube_diff, cube_merge and cube_mean do it: metrics by unique
name (the union, parents by name); regions by name and module, call paths
by region and call-site line below the same parent (the union; a value
missing in one input counts 0; two programs, whose root regions are named
after them, give two roots, as in CubeLib); locations by Location.key,
(process rank, thread rank).  Systems whose locations differ are an
AlgebraError naming the difference, unless `reduce` (cube_* -c) or
`collapse` (cube_* -C) unite them: processes matched by name and rank
(with -c also machine and node), every process of every input kept, under
one virtual machine and node with -C.  Derived metrics are not combined: a
result keeps their expression,
and the model evaluates it on the result's values.  A ratio an input holds
only as values (its formula unknown, experiments.NO_FORMULA) is left out
of a diff or mean, and named in the result's attributes[LEFT_OUT]: the
difference or mean of two ratios is not the ratio of the combined counts.
Cartesian topologies are kept, on the result's locations.

Values are aligned by numpy fancy indexing, never by Python loops over
values; when an input's dimensions already are the result's, its arrays
are used as they are.  With consume=True, diff, merge and mean reuse and
release the inputs' arrays (the inputs are emptied): the command line
needs no input after the operation, and two cubes of 80 M values each then
fit in memory beside the result."""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
import functools
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from psuite.errors import UsageError
from psuite.model.experiment import (
    EXCLUSIVE,
    INCLUSIVE,
    Cnode,
    Experiment,
    Location,
    Metric,
    Region,
    Topology,
    evaluate,
    scatter_add,
    to_exclusive,
    to_inclusive,
)

NO_FORMULA = "psuite::no_formula"  # experiments.NO_FORMULA: ratios held as values, one name a line
SAMPLED_ON = "psuite::event"  # experiments.SAMPLED_ON: a profile's sampling event
LEFT_OUT = "psuite::left_out"  # a result's: those ratios, left out of it, one name a line
GIVEN = "psuite::given"  # an input's name as the command line gave it
ROOT_DESCRIPTION = "the whole program"  # experiments.ROOT_DESCRIPTION: the description of psuite's root regions
PROGRAM_ROOT = "\0program"  # the key of psuite's root regions, which no region's name is


class AlgebraError(UsageError):
    """Experiments that cannot be combined as asked, or an operation's
    argument that names nothing in the experiment."""


def _view(e: Experiment, name: str, kind: str) -> tuple[np.ndarray, bool]:
    """The metric's values in the given kind; whether the array is new."""
    m = e.metric(name)
    a = e.stored(name)
    new = name not in e.values
    if m.kind == kind or (m.combine is not np.add and kind == EXCLUSIVE):  # a least or greatest value has no
        return a, new  # exclusive part: stored values stand for both
    if kind == INCLUSIVE:
        return to_inclusive(a, e.parents(), m.combine), True
    return to_exclusive(a, e.parents()), True


# -- unification -------------------------------------------------------------------------------


def _name(e: Experiment, i: int) -> str:
    """How an input is named in results and messages."""
    for key in (GIVEN, "source", "file", "path"):
        if e.attributes.get(key):
            return os.path.basename(e.attributes[key].rstrip("/")) or e.attributes[key]
    return e.attributes.get("operation") or f"input {i + 1}"


def _location_keys(locations: Sequence[Location]) -> list[tuple[int, int, int]]:
    """Location.key with an occurrence number, so that repeated keys still match one to one."""
    seen: dict[tuple[int, int], int] = {}
    out = []
    for loc in locations:
        k = loc.key
        n = seen.get(k, 0)
        seen[k] = n + 1
        out.append((k[0], k[1], n))
    return out


def _describe(keys: Sequence[tuple[int, int, int]]) -> str:
    shown = [f"rank {r} thread {t}" for r, t, _ in keys[:3]]
    more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
    return ", ".join(shown) + more


def _collapsed_location(experiments: Sequence[Experiment]) -> Location:
    locs = [loc for e in experiments for loc in e.locations]

    def one(attr: str, many: str) -> str:
        values = {getattr(loc, attr) for loc in locs}
        return values.pop() if len(values) == 1 else many

    return Location(machine=one("machine", "machines"), node=one("node", "all nodes"),
                    process=one("process", "all processes"), rank=0, thread=one("thread", "all threads"),
                    thread_rank=0)


# How the system trees of the inputs are unified (CubeLib's sysres_merge):
MATCH = "match"  # locations matched by (process rank, thread rank); the inputs must have the same ones
REDUCE = "reduce"  # -c: machines, nodes and processes matched by name (and rank): the union, nothing summed
COLLAPSE = "collapse"  # -C: one virtual machine and node; processes by (name, rank), threads by rank: the union
SUM = "sum"  # psuite's own: each input's locations summed into one location (compare's tolerances, folded diffs)
VIRTUAL_MACHINE, VIRTUAL_NODE = "Virtual machine", "Virtual node"  # what cube_* -C names them


def _system_mode(collapse: bool, reduce: bool) -> str:
    if collapse and reduce:
        raise AlgebraError("-c and -C exclude each other: -c reduces the system trees to their common "
                           "machines and nodes, -C to one virtual node; give one")
    return COLLAPSE if collapse else REDUCE if reduce else MATCH


def _virtual(loc: Location) -> Location:
    """A location moved under -C's virtual machine and node, which carry
    no attributes (CubeLib's collapsed_merge makes them without)."""
    return dataclasses.replace(loc, machine=VIRTUAL_MACHINE, node=VIRTUAL_NODE, machine_attributes={},
                               node_attributes={})


def _union_locations(inputs: Sequence[Experiment], mode: str) -> tuple[list[Location], list[np.ndarray | None]]:
    """The union of the inputs' locations, as cube_* -c or -C unify them:
    a process is matched by its name and rank (with -c also its machine's
    and node's names), a thread within it by its rank; anything new is
    added, so two runs whose processes are named apart keep both.  Per
    input, the input column of each result location (-1: the input has
    none there; None: the input's columns are the result's)."""
    groups: dict[tuple, list[tuple[int, Location]]] = {}  # process key -> [(thread rank, location)] in order
    for e in inputs:
        for loc in e.locations:
            if mode == COLLAPSE:
                loc = _virtual(loc)
            elif loc.machine_attributes or loc.node_attributes:  # -c remakes machines and nodes without theirs
                loc = dataclasses.replace(loc, machine_attributes={}, node_attributes={})
            g = groups.setdefault((loc.machine, loc.node, loc.process, loc.rank), [])
            if all(t != loc.thread_rank for t, _ in g):
                g.append((loc.thread_rank, loc))
    # system-tree order: machines, nodes, processes in the order first met, each process's threads together
    locations = [loc for g in groups.values() for _, loc in g]
    at = {(loc.machine, loc.node, loc.process, loc.rank, loc.thread_rank): j for j, loc in enumerate(locations)}
    columns: list[np.ndarray | None] = []
    for e in inputs:
        # int32: one such column map per input, and psprocess -c merges thousands of one-location inputs
        col = np.full(len(locations), -1, dtype=np.int32 if len(locations) < 2**31 else np.int64)
        for k, loc in enumerate(e.locations):
            m, n = (VIRTUAL_MACHINE, VIRTUAL_NODE) if mode == COLLAPSE else (loc.machine, loc.node)
            j = at[(m, n, loc.process, loc.rank, loc.thread_rank)]
            if col[j] < 0:  # a location repeated in one input: its first one (CubeLib maps it once)
                col[j] = k
        same = len(e.locations) == len(locations) and bool(np.array_equal(col, np.arange(len(locations))))
        columns.append(None if same else col)
    return locations, columns


def _topologies(inputs: Sequence[Experiment], columns: Sequence[np.ndarray | None], count: int) -> list[Topology]:
    """The inputs' Cartesian topologies on the result's locations (CubeLib
    keeps them through its operations): each name once, the first input's
    coordinates where two inputs place a location, and a place another
    location already holds left empty."""
    out: dict[str, Topology] = {}
    taken: dict[str, set[tuple[int, ...]]] = {}
    for e, col in zip(inputs, columns, strict=True):
        if not e.topologies:
            continue
        where = np.arange(count) if col is None else col  # result location -> input location
        to_result = {int(k): j for j, k in enumerate(where.tolist()) if k >= 0}
        for t in e.topologies:
            mine = out.setdefault(t.name, Topology(t.name, list(t.dimensions), {}))
            if mine.dimensions != list(t.dimensions):
                continue  # the same name with another shape: the first one stands
            places = taken.setdefault(t.name, set(mine.coordinates.values()))
            for k, xyz in t.coordinates.items():
                xyz = tuple(xyz)
                if k in to_result and to_result[k] not in mine.coordinates and xyz not in places:
                    mine.coordinates[to_result[k]] = xyz
                    places.add(xyz)
    return list(out.values())


@dataclass
class _Plan:
    """The unified dimensions, and per input how its arrays map onto them."""

    inputs: list[Experiment]
    names: list[str]
    metrics: list[Metric]
    regions: list[Region]
    cnodes: list[Cnode]
    locations: list[Location]
    rows: list[np.ndarray | None]  # per input: each input cnode's result cnode; None when the same
    unique: list[bool]  # per input: no two input cnodes map to one result cnode
    columns: list[np.ndarray | None]  # per input: input column of each result location (-1: none); None: the same
    system: str  # MATCH, REDUCE, COLLAPSE or SUM
    consume: bool = False
    left_out: list[str] = dataclasses.field(default_factory=list)  # ratios with no formula (_no_formula)

    def experiment(self, operation: str) -> Experiment:
        attributes = {"operation": operation}
        if self.left_out:
            attributes[LEFT_OUT] = "\n".join(self.left_out)
        kept = [m.name for m in self.metrics if m.name in _named(self.inputs, NO_FORMULA)]
        if kept:  # ratios a merge kept as values: still none to subtract from a later result
            attributes[NO_FORMULA] = "\n".join(kept)
        events = [e.attributes.get(SAMPLED_ON) for e in self.inputs]  # one event (_check_events), maybe spelt twice
        if events and None not in events:  # a result of profiles is a profile of that event
            attributes[SAMPLED_ON] = events[0]
        topologies = [] if self.system == SUM else _topologies(self.inputs, self.columns, len(self.locations))
        return Experiment(metrics=[dataclasses.replace(m) for m in self.metrics], regions=list(self.regions),
                          cnodes=list(self.cnodes), locations=list(self.locations), attributes=attributes,
                          topologies=topologies)

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.cnodes), len(self.locations))

    def measured(self, i: int, name: str) -> bool:
        e = self.inputs[i]
        for m in e.metrics:
            if m.name == name:
                return not m.derived
        return False

    def covers_all(self, i: int) -> bool:
        """Whether input i has every call path and location of the result."""
        return (self.rows[i] is None or (self.unique[i] and len(self.rows[i]) == len(self.cnodes))) \
            and self.present_columns(i) is None

    def present_columns(self, i: int) -> np.ndarray | None:
        """The result locations input i has (None: all)."""
        col = self.columns[i]
        if self.system == SUM or col is None or not col.size or col.min() >= 0:
            return None
        return np.flatnonzero(col >= 0)

    def mask(self, i: int) -> np.ndarray | None:
        """Where input i has a point of the result (None: everywhere)."""
        rows, cols = (None if self.rows[i] is None else self.present(i)), self.present_columns(i)
        if rows is None and cols is None:
            return None
        out = np.zeros(self.shape, dtype=bool)
        out[np.ix_(np.arange(self.shape[0]) if rows is None else rows,
                   np.arange(self.shape[1]) if cols is None else cols)] = True
        return out

    def present(self, i: int) -> np.ndarray | None:
        """The result rows input i has (None: all)."""
        rows = self.rows[i]
        if rows is None or (self.unique[i] and len(rows) == len(self.cnodes)):
            return None
        return np.unique(rows)

    def aligned(self, i: int, name: str, kind: str) -> tuple[np.ndarray | None, bool]:
        """Input i's values of the metric on the result's dimensions, in the
        given kind; None when the input does not measure it.  The flag says
        whether the caller may write into the array (a new one, or the
        input's own when consuming)."""
        if not self.measured(i, name):
            return None, False
        e = self.inputs[i]
        a, new = _view(e, name, kind)
        combine = e.metric(name).combine
        col = self.columns[i]
        if self.system == SUM:
            a, new = combine.reduce(a, axis=1, keepdims=True), True
        elif col is not None:
            if col.size and col.min() < 0:  # locations the input lacks: 0, like a call path it lacks
                have = np.flatnonzero(col >= 0)
                out = np.zeros((a.shape[0], len(col)), dtype=a.dtype)
                out[:, have] = a[:, col[have]]
                a, new = out, True
            else:
                a, new = a[:, col], True
        rows = self.rows[i]
        if rows is not None:
            if self.unique[i]:
                out = np.zeros(self.shape, dtype=a.dtype)
                out[rows] = a
            elif combine is np.add:
                out = np.zeros(self.shape, dtype=a.dtype)
                scatter_add(out, rows, a)
            else:  # least or greatest of paths that unify: NaN where none, then 0 like any missing value
                out = np.full(self.shape, np.nan)
                scatter_add(out, rows, a, np.fmin if combine is np.minimum else np.fmax)
                np.nan_to_num(out, copy=False, nan=0.0)
            a, new = out, True
        return a, new or self.consume

    def release(self, name: str) -> None:
        """Drop the inputs' arrays of a metric once used (consume)."""
        if self.consume:
            for e in self.inputs:
                e.values.pop(name, None)


def _unify_metrics(inputs: Sequence[Experiment], prefer_last: bool) -> list[Metric]:
    first: dict[str, int] = {}  # name -> position in the result (first met)
    chosen: dict[str, tuple[Metric, str | None]] = {}  # name -> definition, its parent's name
    floating: set[str] = set()
    for e in inputs:
        for m in e.metrics:
            parent = e.metrics[m.parent].name if m.parent is not None else None
            first.setdefault(m.name, len(first))
            if m.name not in chosen or prefer_last:
                chosen[m.name] = (m, parent)
            if not m.derived and not m.integer:
                floating.add(m.name)
    # CubeLib's metric_merge copies every input's attributes onto the metric it matches, in input order:
    # their union, a key the inputs disagree on taking the last input's value
    attributes: dict[str, dict[str, str]] = {}
    for e in inputs:
        for m in e.metrics:
            if m.attributes:
                attributes.setdefault(m.name, {}).update(m.attributes)
    order = sorted(first, key=first.get)
    out = []
    for name in order:
        m, parent = chosen[name]
        m = dataclasses.replace(m, parent=first[parent] if parent is not None else None,
                                attributes=attributes.get(name, {}))
        if not m.derived and name in floating and m.combine is np.add:  # MINDOUBLE, MAXDOUBLE stay what they are
            m.dtype = "DOUBLE"
        out.append(m)
    return out


def _unify_calltrees(inputs: Sequence[Experiment]):
    regions: list[Region] = []
    region_of: dict[tuple[str, str], int] = {}
    node_of: dict[tuple[int, int, int], int] = {}  # (parent node or -1, region, line) -> node, in creation order
    parent_of: list[int] = []
    region_at: list[int] = []
    line_at: list[int] = []
    kids: list[list[int]] = [[]]  # kids[0]: the roots; kids[n + 1]: node n's children
    maps: list[list[int]] = []
    # CubeLib's identities (cube::Region and cube::Cnode operator==): a region is its name and module
    # (CubeLib also compares its lines, which in psuite's sampled profiles are where samples fell, so
    # differ from run to run); a call path its region and call-site line below the same parent (but for
    # psuite's sampled profiles, whose call paths' lines are sampled ones too: exporters/cube.py writes
    # them apart, SAMPLED_CALL_LINES, so that CubeLib unifies them alike).
    # Programs named apart (Score-P's root region is the program's main) keep apart, as in cube_diff,
    # except psuite's artificial roots: "the whole program" of two builds of one code named apart (app
    # and app-O3) is one root, named after both, and the functions of their executables without a
    # source file (_start) are the program's, so that their call paths meet.
    program_names: list[str] = []
    basename = functools.lru_cache(maxsize=None)(os.path.basename)  # thousands of inputs, a few modules
    for e in inputs:
        rmap = []
        roots = {c.region for c in e.cnodes if c.parent is None}
        programs = {r.name for i, r in enumerate(e.regions)
                    if i in roots and r.role == "artificial" and r.description == ROOT_DESCRIPTION}
        for i, r in enumerate(e.regions):
            program = i in roots and r.name in programs and r.description == ROOT_DESCRIPTION
            if program:
                k = (PROGRAM_ROOT, "")
            elif programs and basename(r.module) in programs:  # in the program's executable
                k = (r.name, PROGRAM_ROOT)
            else:
                k = (r.name, r.module)
            if k not in region_of:
                region_of[k] = len(regions)
                regions.append(r)
            if program and r.name not in program_names:
                program_names.append(r.name)
            rmap.append(region_of[k])
        nodes: list[int] = []
        sampled = SAMPLED_ON in e.attributes  # its lines are where samples fell, no identity: the first kept
        for c in e.cnodes:
            p = -1 if c.parent is None else nodes[c.parent]
            k = (p, rmap[c.region], -1 if sampled else c.line)
            n = node_of.get(k)
            if n is None:
                n = node_of[k] = len(parent_of)
                parent_of.append(p)
                region_at.append(k[1])
                line_at.append(c.line)
                kids.append([])
                kids[p + 1].append(n)
            nodes.append(n)
        maps.append(nodes)
    if len(program_names) > 1:
        at = region_of[(PROGRAM_ROOT, "")]
        regions[at] = dataclasses.replace(regions[at], name=" | ".join(program_names))
    if len(parent_of) == len(inputs[0].cnodes):
        # nothing new after the first input: keep its order, so that its arrays need no reindexing
        order = range(len(parent_of))
    else:  # depth-first, children in the order first met
        order = []
        stack = list(reversed(kids[0]))
        while stack:
            n = stack.pop()
            order.append(n)
            stack.extend(reversed(kids[n + 1]))
    position = np.empty(len(parent_of), dtype=np.int64)
    cnodes: list[Cnode] = []
    for n in order:
        position[n] = len(cnodes)
        p = parent_of[n]
        cnodes.append(Cnode(region_at[n], None if p < 0 else int(position[p]), line_at[n]))
    rows: list[np.ndarray | None] = []
    unique: list[bool] = []
    for nodes in maps:
        r = position[np.asarray(nodes, dtype=np.int64)] if nodes else np.empty(0, dtype=np.int64)
        same = len(r) == len(cnodes) and bool(np.array_equal(r, np.arange(len(cnodes))))
        rows.append(None if same else r)
        unique.append(len(np.unique(r)) == len(r))
    return regions, cnodes, rows, unique


def _cnode_attributes(inputs: Sequence[Experiment], cnodes: list[Cnode], rows: list[np.ndarray | None]) -> None:
    """The unified call paths' attributes, as CubeLib gives them: a call
    path's are those of the input that brought it (def_cnode copies them
    when it creates one; a later input's matching one adds nothing).
    Regions are the first input's objects already, attributes with them."""
    if not any(c.attributes for e in inputs for c in e.cnodes):
        return
    brought = np.zeros(len(cnodes), dtype=bool)
    for e, r in zip(inputs, rows, strict=True):
        target = np.arange(len(e.cnodes)) if r is None else r
        for i, c in enumerate(e.cnodes):
            j = int(target[i])
            if c.attributes and not brought[j]:
                cnodes[j].attributes = dict(c.attributes)
        brought[target] = True


def _unify_systems(inputs: Sequence[Experiment], names: Sequence[str], system: str):
    if system == SUM:
        return [_collapsed_location(inputs)], [None] * len(inputs)
    if system in (REDUCE, COLLAPSE):
        return _union_locations(inputs, system)
    # cube_*'s default: the systems may differ when one holds every location of the others (a run on
    # fewer ranks, its processes named alike): the result has the largest one's locations, 0 where an
    # input has none.  Systems of the same locations match by rank alone, whatever their names (psuite
    # names a process after its pid)
    big = max(range(len(inputs)), key=lambda i: len(inputs[i].locations))
    keys0 = _location_keys(inputs[big].locations)
    at = {k: j for j, k in enumerate(keys0)}
    columns: list[np.ndarray | None] = []
    for i, e in enumerate(inputs):
        keys = _location_keys(e.locations)
        if keys == keys0:
            columns.append(None)
            continue
        only_here = [k for k in keys if k not in at]
        if not only_here:  # a part of the largest system: as in CubeLib, its processes must be named alike
            big_locs = inputs[big].locations
            only_here = [k for k, loc in zip(keys, e.locations, strict=True)
                         if big_locs[at[k]].process != loc.process]
        if only_here:
            mine = set(keys)
            only_big = [k for k in keys0 if k not in mine]
            parts = [f"{names[big]} has {len(keys0)} locations, {names[i]} {len(keys)}",
                     f"only in {names[i]}: {_describe(only_here)}"]
            if only_big:
                parts.append(f"only in {names[big]}: {_describe(only_big)}")
            raise AlgebraError(f"system trees differ, neither holding the other's ({'; '.join(parts)}): use -c to "
                               "unite them (processes matched by name and rank) or -C to put every process under "
                               "one virtual node")
        here = {k: j for j, k in enumerate(keys)}
        columns.append(np.fromiter((here.get(k, -1) for k in keys0), dtype=np.int64, count=len(keys0)))
    return list(inputs[big].locations), columns


def _check_events(inputs: Sequence[Experiment], names: Sequence[str]) -> None:
    """Profiles sampled on different events (experiments.SAMPLED_ON) are
    not combined: their samples are of different units."""
    seen = [(n, e.attributes[SAMPLED_ON]) for n, e in zip(names, inputs, strict=True) if SAMPLED_ON in e.attributes]
    from psuite.analysis.combine import same_event

    for name, event in seen[1:]:
        if not same_event(event, seen[0][1]):
            raise AlgebraError(f"{seen[0][0]} was sampled on {seen[0][1] or 'no event'} and {name} on "
                               f"{event or 'no event'}: samples of different events do not add up; give profiles "
                               "of one event")


def _no_formula(inputs: Sequence[Experiment], metrics: list[Metric]) -> list[str]:
    """The ratios some input holds only as values (not derived in any), that
    no other metric hangs below."""
    named = _named(inputs, NO_FORMULA)
    parents = {m.parent for m in metrics if m.parent is not None}
    return [m.name for i, m in enumerate(metrics) if m.name in named and not m.derived and i not in parents]


def _named(inputs: Sequence[Experiment], key: str) -> set[str]:
    """The names an attribute lists, one a line, over the inputs."""
    return {n for e in inputs for n in e.attributes.get(key, "").split("\n") if n}


def _without(metrics: list[Metric], names: Sequence[str]) -> list[Metric]:
    """The metric tree without the given leaves, parents renumbered."""
    keep = [i for i, m in enumerate(metrics) if m.name not in names]
    new = {old: k for k, old in enumerate(keep)}
    return [dataclasses.replace(metrics[i], parent=None if metrics[i].parent is None else new[metrics[i].parent])
            for i in keep]


def _checked(experiments: Sequence[Experiment]) -> tuple[list[Experiment], list[str]]:
    """The inputs, each checked, with their names; profiles of different
    sampling events refused (_check_events)."""
    inputs = list(experiments)
    if not inputs:
        raise AlgebraError("no experiments given: give at least one input")
    for e in inputs:
        e.check()
    names = [_name(e, i) for i, e in enumerate(inputs)]
    if len(set(names)) < len(names):  # a result keeps its source's name: say which input is meant
        names = [f"{n} (input {i + 1})" for i, n in enumerate(names)]
    _check_events(inputs, names)
    return inputs, names


def _plan(inputs: Sequence[Experiment], collapse: bool = False, prefer_last: bool = False,
          consume: bool = False, drop_ratios: bool = False, system: str | None = None) -> _Plan:
    """The unification of the inputs.  system: how their system trees are
    unified (MATCH, REDUCE, COLLAPSE, SUM); without it, collapse=True is
    SUM (each input summed into one location) and False MATCH."""
    system = system or (SUM if collapse else MATCH)
    inputs, names = _checked(inputs)
    metrics = _unify_metrics(inputs, prefer_last)
    left_out = _no_formula(inputs, metrics) if drop_ratios else []
    if left_out:
        metrics = _without(metrics, left_out)
    regions, cnodes, rows, unique = _unify_calltrees(inputs)
    _cnode_attributes(inputs, cnodes, rows)
    locations, columns = _unify_systems(inputs, names, system)
    return _Plan(inputs, names, metrics, regions, cnodes, locations, rows, unique, columns, system, consume,
                 left_out)


def unify(experiments: Sequence[Experiment], collapse: bool = False, reduce: bool = False) -> list[Experiment]:
    """The experiments on common dimensions (same metrics, regions, call
    paths and locations, in the same order), each with its own values
    (zeros where it has none; a metric it does not measure has no values).
    Arrays of an input whose dimensions already are the common ones are
    shared, not copied.  collapse and reduce: cube_* -C and -c (_union_locations)."""
    plan = _plan(experiments, system=_system_mode(collapse, reduce))
    out = []
    for i, e in enumerate(plan.inputs):
        x = plan.experiment(e.attributes.get("operation", ""))
        x.attributes = dict(e.attributes)
        for m in x.metrics:
            if m.derived:
                continue
            a, _ = plan.aligned(i, m.name, m.kind)
            if a is not None:
                x.values[m.name] = a.astype(np.int64 if m.integer else np.float64, copy=False)
        out.append(x)
    return out


# -- diff, merge, mean ---------------------------------------------------------------------------


def _operation(op: str, plan: _Plan, extra: str = "") -> str:
    return f"{op}({', '.join(plan.names)}{extra})"


def diff(minuend: Experiment, subtrahend: Experiment, collapse: bool = False, *, reduce: bool = False,
         consume: bool = False) -> Experiment:
    """minuend - subtrahend at every point (cube_diff).  Integer metrics
    stay integers, typed INT64 since a difference can be negative.  A
    MINDOUBLE or MAXDOUBLE metric is combined as CubeLib combines such
    values: the subtrahend negated, then the least or greatest of the two
    (max(A, -B) for Score-P's max_time); a point only one input has keeps
    its (negated) value.  collapse and reduce: cube_diff -C and -c."""
    plan = _plan([minuend, subtrahend], consume=consume, drop_ratios=True, system=_system_mode(collapse, reduce))
    result = plan.experiment(_operation("diff", plan))
    for m in result.metrics:
        if m.derived:
            continue
        if m.integer:
            m.dtype = "INT64"
        dtype = np.int64 if m.integer else np.float64
        a, writable = plan.aligned(0, m.name, m.kind)
        b, _ = plan.aligned(1, m.name, m.kind)
        if a is None and b is None:
            continue
        if a is None:
            out = np.negative(b, dtype=dtype)
        elif b is None:
            out = a if writable and a.dtype == dtype else a.astype(dtype)
        elif m.combine is not np.add:  # CubeLib's MIN/MAX value: -B, then A "+=" -B keeps the least/greatest
            out = m.combine(a, np.negative(b), dtype=dtype)
            here, there = plan.mask(0), plan.mask(1)
            if there is not None:
                out[~there] = a[~there]
            if here is not None:
                out[~here] = -b[~here]
        elif writable and a.dtype == dtype:
            out = np.subtract(a, b, out=a)
        else:
            out = np.subtract(a, b, dtype=dtype)
        del a, b
        plan.release(m.name)
        result.values[m.name] = out
    return result


def mean(experiments: Sequence[Experiment], collapse: bool = False, *, reduce: bool = False,
         consume: bool = False) -> Experiment:
    """The elementwise mean of the experiments (cube_mean), as DOUBLE; a
    point an input lacks counts 0 for it.  Unlike cube_mean, which scales
    each input's value by 1/n in the metric's own type, integers are not
    truncated per input, and a MINDOUBLE/MAXDOUBLE metric is the mean of
    the inputs' values (cube_mean keeps the greatest of the halved values,
    half of max_time for two equal runs).  collapse and reduce: cube_mean
    -C and -c."""
    plan = _plan(experiments, consume=consume, drop_ratios=True, system=_system_mode(collapse, reduce))
    result = plan.experiment(_operation("mean", plan))
    n = len(plan.inputs)
    for m in result.metrics:
        if m.derived:
            continue
        if m.combine is np.add:  # MINDOUBLE, MAXDOUBLE keep how they aggregate
            m.dtype = "DOUBLE"
        out = None
        for i in range(n):
            a, writable = plan.aligned(i, m.name, m.kind)
            if a is None:
                continue
            if out is None:
                out = a if writable and a.dtype == np.float64 else a.astype(np.float64)
            else:
                np.add(out, a, out=out)
            del a
        plan.release(m.name)
        if out is not None:
            out /= n
            result.values[m.name] = out
    return result


def merge(experiments: Sequence[Experiment], collapse: bool = False, *, reduce: bool = False,
          consume: bool = False) -> Experiment:
    """The metrics of every experiment in one (cube_merge): a point measured
    by several inputs takes the last one's value, as CUBE does; a metric
    only one input measures keeps its values.  Where the last input of a
    metric lacks some call paths, the points are merged in the exclusive
    view, so that an INCLUSIVE metric's tree stays consistent.  collapse
    and reduce: cube_merge -C and -c, which keep the processes of every
    input that differ in name or rank (_union_locations)."""
    plan = _plan(experiments, prefer_last=True, consume=consume, system=_system_mode(collapse, reduce))
    result = plan.experiment(_operation("merge", plan))
    parents = result.parents()
    placed = _disjoint(plan)
    if placed is not None:
        _merge_disjoint(plan, result, placed, parents)
        return result
    for m in result.metrics:
        if m.derived:
            continue
        dtype = np.int64 if m.integer else np.float64
        having = [i for i in range(len(plan.inputs)) if plan.measured(i, m.name)]
        if not having:
            continue
        full = [i for i in having if plan.covers_all(i)]
        start = max(full) if full else None
        kind = m.kind if start is not None and start == having[-1] else EXCLUSIVE
        out = None
        for i in having:
            if start is not None and i < start:
                continue  # wholly overwritten by a later input
            a, writable = plan.aligned(i, m.name, kind)
            if out is None or i == start:
                out = a if writable and a.dtype == dtype else a.astype(dtype)  # astype copies
            else:
                where = plan.mask(i)  # the call paths and locations it has
                if where is None:
                    out[...] = a
                else:
                    out[where] = a[where]
            del a
        plan.release(m.name)
        if kind != m.kind:  # merged exclusive values of an INCLUSIVE metric
            out = to_inclusive(out, parents)
        result.values[m.name] = out
    return result


def _disjoint(plan: _Plan) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """Per input, (its columns, their result columns), when -c or -C gave
    every input result locations of its own (psprocess -c's members: one
    document's ranks and threads each); else None."""
    if plan.system not in (REDUCE, COLLAPSE) or len(plan.inputs) < 2:
        return None
    taken = np.zeros(len(plan.locations), dtype=bool)
    out = []
    for e, col in zip(plan.inputs, plan.columns, strict=True):
        at = np.arange(len(plan.locations)) if col is None else np.flatnonzero(col >= 0)
        if taken[at].any():
            return None
        taken[at] = True
        out.append((np.arange(len(e.locations)) if col is None else col[at], at))
    return out


def _merge_disjoint(plan: _Plan, result: Experiment, placed: list[tuple[np.ndarray, np.ndarray]],
                    parents: np.ndarray) -> None:
    """merge's values when no two inputs share a location: no point is
    overwritten, so each input's block is put in place as it is, without
    an array of the result's size per input (thousands of inputs stay
    linear).  The same values as merge's general way: in the exclusive
    view where call paths are unified, made inclusive at the end."""
    for m in result.metrics:
        if m.derived:
            continue
        having = [i for i in range(len(plan.inputs)) if plan.measured(i, m.name)]
        if not having:
            continue
        dtype = np.int64 if m.integer else np.float64
        kind = m.kind if all(plan.rows[i] is None for i in having) else EXCLUSIVE
        out = np.zeros(plan.shape, dtype=dtype)
        for i in having:
            a, _ = _view(plan.inputs[i], m.name, kind)
            own, at = placed[i]
            block = a[:, own]
            rows = plan.rows[i]
            if rows is None:
                out[:, at] = block
            elif plan.unique[i]:
                out[np.ix_(rows, at)] = block
            elif m.combine is np.add:  # input call paths that unify: summed, as merge's alignment does
                part = np.zeros((len(plan.cnodes), len(at)), dtype=block.dtype)
                scatter_add(part, rows, block)
                out[:, at] = part
            else:  # their least or greatest value; 0 where none (_Plan.aligned)
                part = np.full((len(plan.cnodes), len(at)), np.nan)
                scatter_add(part, rows, block, np.fmin if m.combine is np.minimum else np.fmax)
                out[:, at] = np.nan_to_num(part, nan=0.0)
            del a, block
        plan.release(m.name)
        if kind != m.kind:
            out = to_inclusive(out, parents)
        result.values[m.name] = out


def side_by_side(experiments: Sequence[Experiment]) -> Experiment:
    """Every input's locations in one experiment, each with its own values
    (psprocess -c of CUBE files: the ranks and threads of several cubes in
    one view, as -c shows PerfSuite documents).  Metrics and call paths are
    unified as for the other operations; locations are not matched but
    kept apart: an input whose process ranks an earlier input already uses
    (two runs' rank 0, whatever their threads) gets the next free ranks."""
    inputs, names = _checked(experiments)
    metrics = _unify_metrics(inputs, False)
    regions, cnodes, rows, unique = _unify_calltrees(inputs)
    _cnode_attributes(inputs, cnodes, rows)
    locations: list[Location] = []
    offsets: list[int] = []
    for e in inputs:
        offsets.append(len(locations))
        used = {loc.rank for loc in locations}
        own = sorted({loc.rank for loc in e.locations})
        if not used.intersection(own):  # ranks of one job given as cubes of their own stay as they were
            locations += e.locations
            continue
        ranks = {r: max(used) + 1 + k for k, r in enumerate(own)}
        locations += [dataclasses.replace(loc, rank=ranks[loc.rank]) for loc in e.locations]
    attributes = {"operation": f"combine({', '.join(names)})"}
    events = [e.attributes.get(SAMPLED_ON) for e in inputs]
    if events and None not in events:
        attributes[SAMPLED_ON] = events[0]
    result = Experiment(metrics=metrics, regions=regions, cnodes=cnodes, locations=locations, attributes=attributes)
    for m in result.metrics:
        if m.derived:
            continue
        if not m.integer and m.combine is np.add:
            m.dtype = "DOUBLE"
        out = result.zeros(m)
        for i, e in enumerate(inputs):
            if not any(x.name == m.name and not x.derived for x in e.metrics):
                continue
            a, _ = _view(e, m.name, m.kind)
            block = out[:, offsets[i]:offsets[i] + len(e.locations)]
            if rows[i] is None:
                block[...] = a
            elif unique[i]:
                block[rows[i]] = a
            else:
                scatter_add(block, rows[i], a.astype(out.dtype, copy=False), m.combine)
    result.check()
    return result


# -- compare ---------------------------------------------------------------------------------


@dataclass
class Tolerance:
    """How far a metric may move per call path: absolute (in the metric's
    unit) or relative (a fraction of the first experiment's value, 0.05 =
    5 %); within either is within.  `metric` is a name or a shell pattern."""

    metric: str = "*"
    absolute: float | None = None
    relative: float | None = None

    def allows(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        d = np.abs(b - a)
        ok = (a == b) | (np.isnan(a) & np.isnan(b))  # the same value (NaN in both too) has not moved
        if self.absolute is None and self.relative is None:
            return ok
        if self.absolute is not None:
            ok |= d <= self.absolute
        if self.relative is not None:
            ok |= d <= self.relative * np.abs(a)
        return ok


@dataclass
class Moved:
    """A call path whose metric (exclusive, summed over locations) moved beyond its tolerance."""

    metric: str
    path: tuple[str, ...]
    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a

    @property
    def relative(self) -> float:
        """delta as a fraction of a (infinite when a is 0 and b is not)."""
        if self.a:
            return self.delta / abs(self.a)
        return 0.0 if not self.delta else math.copysign(math.inf, self.delta)


@dataclass
class Comparison:
    equal: bool  # same dimensions and values (cube_cmp)
    within: bool  # every checked metric within its tolerance (equal, without tolerances)
    moved: list[Moved]


def _tolerance(tolerances: Sequence[Tolerance], metric: str) -> Tolerance | None:
    """The tolerance of a metric: one naming it, else the last whose pattern matches it."""
    for t in tolerances:
        if t.metric == metric:
            return t
    matching = [t for t in tolerances if fnmatch.fnmatchcase(metric, t.metric)]
    return matching[-1] if matching else None


def _equal(a: Experiment, b: Experiment, collapse: bool) -> bool:
    try:
        plan = _plan([a, b], collapse)
    except AlgebraError:
        return False
    same_metrics = [(m.name, m.parent, m.derived, m.expression) for m in a.metrics] == \
        [(m.name, m.parent, m.derived, m.expression) for m in b.metrics]
    if not same_metrics or any(r is not None for r in plan.rows) or len(a.cnodes) != len(b.cnodes) \
            or any(c is not None for c in plan.columns) or len(a.locations) != len(b.locations):
        return False
    for m in plan.metrics:
        if m.derived:
            continue
        x, _ = plan.aligned(0, m.name, EXCLUSIVE)
        y, _ = plan.aligned(1, m.name, EXCLUSIVE)
        if not np.array_equal(x, y, equal_nan=x.dtype.kind == "f" and y.dtype.kind == "f"):  # NaN is NaN
            return False
    return True


def compare(a: Experiment, b: Experiment, tolerances: Sequence[Tolerance] = (), collapse: bool = False) -> Comparison:
    """Whether two experiments are equal (cube_cmp: same dimensions and
    values); with tolerances, whether every metric they apply to stayed
    within its tolerance at every call path, its exclusive values summed
    over the locations (so the systems need not match), and what moved
    beyond, largest change first within each metric.  Without tolerances,
    within is equality and moved lists every call path that differs."""
    equal = _equal(a, b, collapse)
    plan = _plan([a, b], collapse=True)
    paths = plan.experiment("").paths()
    sums: list[dict[str, np.ndarray]] = [{}, {}]

    def fetch(i: int, name: str, view: str = "e") -> np.ndarray:
        """Input i's metric per call path (summed over threads), exclusive,
        or inclusive for a derived metric's metric::name(i)."""
        if view == "i":
            m = next((x for x in plan.metrics if x.name == name), None)
            v, _ = plan.aligned(i, name, INCLUSIVE) if m is not None and not m.derived else (None, False)
            return np.zeros(plan.shape[:1]) if v is None else np.asarray(v, dtype=np.float64)[:, 0]
        if name not in sums[i]:
            m = next((x for x in plan.metrics if x.name == name), None)
            if m is not None and m.derived:  # computed from the sums: one value per call path already
                v = np.broadcast_to(evaluate(m.expression, lambda n: fetch(i, n), lambda n, view: fetch(i, n, view)),
                                    plan.shape[:1])
            else:
                v, _ = plan.aligned(i, name, EXCLUSIVE) if m is not None else (None, False)
                v = np.zeros(plan.shape) if v is None else v
                v = np.broadcast_to(np.asarray(v, dtype=np.float64), plan.shape)[:, 0]
            sums[i][name] = v
        return sums[i][name]

    moved: list[Moved] = []
    for m in plan.metrics:
        if tolerances:
            t = _tolerance(tolerances, m.name)
            if t is None:
                continue
        else:
            t = Tolerance(m.name)
        x, y = fetch(0, m.name), fetch(1, m.name)
        beyond = np.flatnonzero(~t.allows(x, y))
        beyond = beyond[np.argsort(-np.abs(y[beyond] - x[beyond]), kind="stable")]
        moved.extend(Moved(m.name, paths[c], float(x[c]), float(y[c])) for c in beyond.tolist())
    within = (not moved) if tolerances else equal
    return Comparison(equal=equal, within=within, moved=moved)


# -- cut -------------------------------------------------------------------------------------


def _cnodes_of(e: Experiment, region: str, option: str) -> list[int]:
    found = [i for i, c in enumerate(e.cnodes) if e.regions[c.region].name == region]
    if not found:
        try:
            rx = re.compile(region)
            found = [i for i, c in enumerate(e.cnodes) if rx.fullmatch(e.regions[c.region].name)]
        except re.error:
            found = []
    if not found:
        called = sorted({e.regions[c.region].name for c in e.cnodes})
        close = difflib.get_close_matches(region, called, n=5, cutoff=0.5)
        hint = f"close names: {', '.join(close)}" if close else f"{len(called)} regions in the call tree"
        raise AlgebraError(f"{option} {region}: no call path in that region ({hint}); give a region of the call tree")
    return found


def _outermost(e: Experiment, marked: np.ndarray) -> np.ndarray:
    """Per cnode, its outermost marked ancestor-or-self, -1 when none."""
    owner: list[int] = []
    flags = marked.tolist()
    for i, c in enumerate(e.cnodes):
        up = owner[c.parent] if c.parent is not None else -1
        owner.append(up if up >= 0 else (i if flags[i] else -1))
    return np.asarray(owner, dtype=np.int64)


def _keep(e: Experiment, keep: np.ndarray, operation: str) -> tuple[Experiment, np.ndarray]:
    """The experiment restricted to the kept cnodes (a kept cnode whose
    parent is dropped becomes a root); the old-to-new cnode index map."""
    new = np.full(len(e.cnodes), -1, dtype=np.int64)
    kept = np.flatnonzero(keep)
    new[kept] = np.arange(len(kept))
    cnodes = []
    for i in kept.tolist():
        c = e.cnodes[i]
        p = new[c.parent] if c.parent is not None else -1
        cnodes.append(Cnode(c.region, int(p) if p >= 0 else None, c.line, c.attributes))
    out = Experiment(metrics=[dataclasses.replace(m) for m in e.metrics], regions=list(e.regions), cnodes=cnodes,
                     locations=list(e.locations), attributes={"operation": operation})
    for name, a in e.values.items():
        out.values[name] = a[kept]
    return out, new


def called_regions(exp: Experiment) -> tuple[list[Region], list[Cnode]]:
    """The regions call paths enter, in the order the call tree (depth
    first) meets them, equal regions (name, module, first and last line)
    made one, and the call paths on them: CubeLib's cube_cut and
    cube_remap2 define a region as they copy a call path, so regions no
    call path enters are not written."""
    key_index: dict[tuple, int] = {}
    regions: list[Region] = []
    cnodes: list[Cnode] = []
    for c in exp.cnodes:
        r = exp.regions[c.region]
        key = (r.name, r.module, r.begin, r.end)
        if key not in key_index:
            key_index[key] = len(regions)
            regions.append(r)
        cnodes.append(dataclasses.replace(c, region=key_index[key]))
    return regions, cnodes


def cut(experiment: Experiment, root: str | Sequence[str] | None = None, prune: Sequence[str] = (),
        collapse: bool = False, reduce: bool = False) -> Experiment:
    """cube_cut: re-root the call tree at every call path of each region in
    `root` (one name or several), dropping everything else; each such call
    path becomes a root of its own, as cube_cut makes them (a region called
    from three places gives three roots; where one such call path lies
    below another, cube_cut refuses and the outermost is kept).  Then prune
    every call path of each region in `prune` with its subtree, its
    inclusive value added to its parent's exclusive value (an INCLUSIVE
    metric's parent already holds it).  collapse: the processes under one
    virtual machine and node (cube_cut -C); reduce (-c) changes nothing in
    a single experiment."""
    e = experiment
    e.check()
    _system_mode(collapse, reduce)
    roots = [root] if isinstance(root, str) else list(root or ())
    for r in roots:
        if r in prune:
            raise AlgebraError(f"--root {r} and --prune {r}: a region cannot be both a new root and pruned; "
                               "give one of them")
    extra = "".join(f", root={r}" for r in roots) + "".join(f", prune={p}" for p in prune)
    operation = f"cut({_name(e, 0)}{extra})"
    topologies = e.topologies
    for region in prune:  # named in the input (cube_cut checks there): it may lie outside the new roots
        _cnodes_of(e, region, "--prune")
    if roots:
        marked = np.zeros(len(e.cnodes), dtype=bool)
        for r in roots:
            marked[_cnodes_of(e, r, "--root")] = True
        e, _ = _keep(e, _outermost(e, marked) >= 0, operation)
    for region in prune:
        marked = np.zeros(len(e.cnodes), dtype=bool)
        if roots:
            try:
                at = _cnodes_of(e, region, "--prune")
            except AlgebraError:
                continue  # not below the new roots: nothing to prune
        else:
            at = _cnodes_of(e, region, "--prune")
        top = [i for i in at if e.cnodes[i].parent is None]
        if top:
            raise AlgebraError(f"--prune {region}: it is a root of the call tree, which has no parent to take its "
                               f"values; give a region called from another (or use --root)")
        marked[at] = True
        owner = _outermost(e, marked)
        gone = np.flatnonzero(owner >= 0)
        parents = e.parents()
        smaller, new = _keep(e, owner < 0, operation)
        target = new[parents[owner[gone]]]  # the pruned subtree's parent, kept
        for m in e.metrics:
            if m.derived or m.name not in e.values or (m.kind != EXCLUSIVE and m.combine is np.add):
                continue
            scatter_add(smaller.values[m.name], target, e.values[m.name][gone], m.combine)
        e = smaller
    if e is experiment:  # nothing asked: a copy, so the result is a new experiment as always
        e, _ = _keep(e, np.ones(len(e.cnodes), dtype=bool), operation)
    if len({c.region for c in e.cnodes}) < len(e.regions):  # as cube_cut writes it
        e.regions, e.cnodes = called_regions(e)
    if collapse:
        e.locations = [_virtual(loc) for loc in e.locations]
    # what the input's values mean stays true of a part of them: the sampling event (a profile's regions are
    # written without their sampled lines, so cuts of two runs combine) and the ratios kept without a formula
    e.attributes = {"operation": operation, **{k: experiment.attributes[k] for k in (SAMPLED_ON, NO_FORMULA)
                                               if experiment.attributes.get(k)}}
    e.topologies = [dataclasses.replace(t, dimensions=list(t.dimensions), coordinates=dict(t.coordinates))
                    for t in topologies]  # the locations are the input's: so are their coordinates
    return e
