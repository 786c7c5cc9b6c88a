"""psuite's hatchet GraphFrame as psuite.hatchet built it from the
PerfSuite documents (ProfileReport, MultiReport: thread_trees and each
report's locations) before it rendered the analysis model: the reference
the model's GraphFrames must equal (test_hatchet_model).  Kept as it was
(hatchet imported directly)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from psuite.errors import UsageError
from psuite.hatchet import ROOT_NAME
from psuite.model.calltree import UNKNOWN


def to_graphframe(report):
    """The GraphFrame of a profile (psuite.read's ProfileReport, call
    paths resolved) or of profiles combined (a MultiReport, e.g. of every
    rank of a run).  UsageError for documents that are not profiles."""
    from psuite.model.report import MultiReport, ProfileReport

    members = list(report.reports) if isinstance(report, MultiReport) else [report]
    if not members or not all(isinstance(r, ProfileReport) for r in members):
        name = getattr(report, "source", "") or type(report).__name__
        raise UsageError(f"{name}: a hatchet GraphFrame is made of profiles (psrun --profile, "
                         "--callpath), not of counting or resource reports")
    import hatchet as ht

    from psuite.model.calltree import thread_trees

    with_trees = [r for r in members if thread_trees(r)]
    if with_trees and len(with_trees) < len(members):
        without = next(r for r in members if not thread_trees(r))
        raise UsageError(f"{without.source or 'a profile'} has no call paths and others have: give profiles "
                         "recorded alike (all with psrun --callpath, or all without)")
    columns = _calltree_columns(report) if with_trees else _flat_columns(members)
    return _graphframe(ht, columns, _metadata(members))


# -- the columns of the dataframe ------------------------------------------------
@dataclass
class _Node:
    """A node of the graph being built: its name, its parent's index (None
    for the root), its object and its source file ("" when unknown)."""

    name: str
    parent: int | None
    module: str
    file: str


@dataclass
class _Columns:
    nodes: list[_Node]
    locations: list[tuple[int, int]]  # (rank, thread), sorted
    samples: list[dict[int, tuple[float, float]]]  # per node: location's index -> (exclusive, inclusive)
    per_sample: list[float]  # per location: seconds (timer) or events one sample stands for
    second: str  # "time" or "events"


def _calltree_columns(report) -> _Columns:
    """The threads' trees merged under the root; each thread's own
    exclusive and inclusive samples per node."""
    from psuite.formats.exporters.calltree_common import frame_file, source_trees
    from psuite.formats.writers.text_calltree import label

    trees = source_trees(report, "to_hatchet")
    graph = _Graph()
    for member, st in enumerate(trees):
        tree = st.thread.tree
        inclusive = tree.inclusive_values()
        graph.add(0, member, tree.root.exclusive, inclusive[id(tree.root)])
        stack = [(c, 0) for c in tree.root.children.values()]
        while stack:
            node, parent = stack.pop()
            frame = node.frame
            i = graph.node(parent, label(frame), frame.module, frame_file(frame))
            graph.add(i, member, node.exclusive, inclusive[id(node)])
            stack.extend((c, i) for c in node.children.values())
    return graph.columns([(st.report, st.thread.thread) for st in trees], [st.threshold for st in trees],
                         trees[0].is_timer and bool(trees[0].threshold))


def _flat_columns(reports: list) -> _Columns:
    """One node per function under the root (named as `psprocess` lists
    them: an unknown function with its object), each report's samples in it."""
    from psuite.formats.writers.text_calltree import label
    from psuite.model.calltree import Frame

    graph = _Graph()
    for member, r in enumerate(reports):
        for location in r.locations:
            i = graph.node(0, label(Frame(location.function, location.module)), location.module, location.file)
            graph.add(i, member, location.samples, location.samples)
            graph.add(0, member, 0, location.samples)
    return graph.columns([(r, r.thread or 0) for r in reports], [r.threshold for r in reports],
                         reports[0].is_timer and bool(reports[0].threshold))


class _Graph:
    """The nodes being built, node 0 the root: a child per name under each
    node (hatchet merges siblings of one frame), samples added per member
    (a thread's tree, or a flat profile)."""

    def __init__(self) -> None:
        self.nodes = [_Node(ROOT_NAME, None, "", "")]
        self.samples: list[dict[int, tuple[float, float]]] = [{}]
        self.index: dict[tuple[int, str], int] = {}  # (parent, name) -> node

    def node(self, parent: int, name: str, module: str, file: str) -> int:
        i = self.index.get((parent, name))
        if i is None:
            i = self.index[(parent, name)] = len(self.nodes)
            self.nodes.append(_Node(name, parent, module if module != UNKNOWN else "",
                                    file if file != UNKNOWN else ""))
            self.samples.append({})
        return i

    def add(self, node: int, member: int, exclusive: float, inclusive: float) -> None:
        e, inc = self.samples[node].get(member, (0.0, 0.0))
        self.samples[node][member] = (e + exclusive, inc + inclusive)

    def columns(self, members: list[tuple[object, int]], thresholds: list[int | None], timer: bool) -> _Columns:
        where = _places(members)
        locations = sorted(where)
        position = {place: i for i, place in enumerate(locations)}
        order = [position[place] for place in where]
        per_sample = [0.0] * len(locations)
        for member, threshold in enumerate(thresholds):
            per_sample[order[member]] = _per_sample(threshold, timer)
        return _Columns(self.nodes, locations, [{order[k]: v for k, v in s.items()} for s in self.samples],
                        per_sample, "time" if timer else "events")


def _per_sample(threshold: int | None, timer: bool) -> float:
    """Seconds (the ITIMER_ sources' threshold is in microseconds) or events
    one sample stands for, as the CUBE export counts them."""
    if not threshold:
        return 0.0
    return threshold / 1e6 if timer else float(threshold)


def _places(members: list[tuple[object, int]]) -> list[tuple[int, int]]:
    """(rank, thread) of each (report, thread number): the MPI rank, else
    the process's position among the processes no MPI rank names (as
    psprocess's CUBE export numbers them)."""
    taken = {r.rank for r, _ in members if r.rank is not None}
    free = (n for n in range(len(members) + len(taken) + 1) if n not in taken)
    ranks: dict[tuple, int] = {}
    out: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    for r, thread in members:
        process = (r.hostname, r.pid)
        if process not in ranks:
            ranks[process] = r.rank if r.rank is not None else next(free)
        place = (ranks[process], thread)
        if place in seen:
            raise UsageError(f"{r.source or 'a profile'} is rank {place[0]} thread {place[1]} as another profile "
                             "is: give the profiles of one run (compare runs with psuite.hatchet.to_thicket)")
        seen.add(place)
        out.append(place)
    return out


# -- the GraphFrame --------------------------------------------------------------
def _graphframe(ht, columns: _Columns, metadata: dict):
    import numpy as np
    import pandas as pd
    from hatchet.frame import Frame
    from hatchet.graph import Graph
    from hatchet.node import Node

    hnodes: list = []
    roots = []
    for n in columns.nodes:
        parent = hnodes[n.parent] if n.parent is not None else None
        hnode = Node(Frame({"name": n.name, "type": "function"}), parent)
        if parent is None:
            roots.append(hnode)
        else:
            parent.add_child(hnode)
        hnodes.append(hnode)
    graph = Graph(roots)
    graph.enumerate_traverse()  # a Node's hash is its number: numbered before it goes into the index

    n_nodes, n_locations = len(hnodes), len(columns.locations)
    excl = np.zeros((n_nodes, n_locations), dtype=np.float64)
    incl = np.zeros((n_nodes, n_locations), dtype=np.float64)
    for i, per_location in enumerate(columns.samples):
        for loc, (e, inc) in per_location.items():
            excl[i, loc], incl[i, loc] = e, inc
    scale = np.asarray(columns.per_sample, dtype=np.float64)
    ranks = np.asarray([r for r, _ in columns.locations], dtype=np.int64)
    threads = np.asarray([t for _, t in columns.locations], dtype=np.int64)
    second = columns.second
    frame = pd.DataFrame({
        "node": np.repeat(np.asarray(hnodes, dtype=object), n_locations),
        "rank": np.tile(ranks, n_nodes),
        "thread": np.tile(threads, n_nodes),
        "name": np.repeat([n.name for n in columns.nodes], n_locations),
        "samples": _counts(excl).ravel(),
        "samples (inc)": _counts(incl).ravel(),
        second: (excl * scale).ravel(),
        f"{second} (inc)": (incl * scale).ravel(),
        "module": np.repeat([n.module for n in columns.nodes], n_locations),
        "file": np.repeat([n.file for n in columns.nodes], n_locations),
    })
    frame.set_index(["node", "rank", "thread"], inplace=True)
    frame.sort_index(inplace=True)
    return ht.GraphFrame(graph, frame, exc_metrics=["samples", second], inc_metrics=["samples (inc)",
                         f"{second} (inc)"], default_metric=f"{second} (inc)" if second == "time" else "samples (inc)",
                         metadata=metadata)


def _counts(values):
    """Samples as integers where they are whole (a tree holds floats so that
    it can be scaled)."""
    import numpy as np

    return values.astype(np.int64) if np.all(values == np.floor(values)) else values


def _metadata(reports: list) -> dict:
    """What the runs say about themselves: one value each (Thicket makes a
    row of them), several hosts or sources joined by ", "."""
    from psuite._version import __version__

    first = reports[0]
    cp = first.callpaths

    def joined(values: Iterable) -> str:
        return ", ".join(dict.fromkeys(v for v in values if v))

    return {
        "command": first.command,
        "hostname": joined(r.hostname for r in reports),
        "date": first.date,
        "event": (cp.event if cp and cp.event else "") or first.event,
        "threshold": (cp.threshold if cp and cp.threshold else None) or first.threshold,
        "domain": first.domain,
        "ranks": len({(r.hostname, r.pid) for r in reports}),
        "samples": sum(r.total_samples for r in reports),
        "source": joined(r.source for r in reports),
        "generator": first.generator,
        "reader": f"psuite {__version__}",
    }


