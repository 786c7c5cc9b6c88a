"""psuite's profiles as LLNL hatchet GraphFrames and Thicket ensembles,
where many HPC analysts compare runs in notebooks.

    import psuite
    gf = psuite.read("app.1234.host.xml").to_hatchet()      # one process
    gf = psuite.hatchet.from_psuite("run/")                  # every rank of a run
    th = psuite.hatchet.to_thicket(["base/", "opt/"])        # runs side by side

The graph is psuite's call tree (profiles recorded with `psrun
--callpath`; the threads' trees merged by frame, as `psprocess -c
--calltree` merges them), or for flat profiles one node per function.
Nodes are named as `psprocess --calltree` names them (frame "name",
"type": "function"; an inlined frame "f [inlined]", an unknown function
with its object "?? (libx.so)"); the dataframe has "name", "module" and
"file" columns too.

The dataframe is indexed by (node, rank, thread), as hatchet's own readers
index multi-rank data, with a row for every node at every thread (0 where
the thread never was there).  rank is the MPI rank, else the process's
position among the profiles; thread is psuite's thread number.  Metrics,
named as hatchet names them: "samples" and "samples (inc)", and "time" and
"time (inc)" (seconds: samples times the sampling period) for the
ITIMER_ sources, else "events" and "events (inc)" (samples times the
overflow threshold), as psprocess's CUBE export names them.  The run's
command, host, date, sampling event and sources are in gf.metadata.

hatchet and Thicket are not psuite dependencies: `pip install
'psuite[hatchet]'` installs them; they are imported only here."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from psuite.errors import UsageError, missing_extra
from psuite.model.calltree import UNKNOWN

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: hatchet and thicket are optional
    import hatchet
    import thicket

    from psuite.model.report import MultiReport, ProfileReport

ROOT_NAME = "<program root>"  # as hatchet's HPCToolkit reader names it: one name for every program, so runs unite
Source = str | os.PathLike


def to_graphframe(report: ProfileReport | MultiReport) -> hatchet.GraphFrame:
    """The GraphFrame of a profile (psuite.read's ProfileReport, call
    paths resolved) or of profiles combined (a MultiReport, e.g. of every
    rank of a run).  UsageError for documents that are not profiles."""
    from psuite.model.report import MultiReport, ProfileReport

    members = list(report.reports) if isinstance(report, MultiReport) else [report]
    if not members or not all(isinstance(r, ProfileReport) for r in members):
        raise UsageError(f"{_name(report)}: a hatchet GraphFrame is made of profiles (psrun --profile, "
                         "--callpath), not of counting or resource reports")
    ht = _import("hatchet")
    from psuite.model.calltree import thread_trees

    with_trees = [r for r in members if thread_trees(r)]
    if with_trees and len(with_trees) < len(members):
        without = next(r for r in members if not thread_trees(r))
        raise UsageError(f"{without.source or 'a profile'} has no call paths and others have: give profiles "
                         "recorded alike (all with psrun --callpath, or all without)")
    columns = _calltree_columns(report) if with_trees else _flat_columns(members)
    return _graphframe(ht, columns, _metadata(members))


def from_psuite(sources: Source | Iterable[Source]) -> hatchet.GraphFrame:
    """The GraphFrame of one run: a document (file or http(s) URL), or
    many - files, directories (their *.xml) and glob patterns, as
    `psprocess -c` takes them - combined, each profile with its call-path
    companion (X.callpaths.xml beside X.xml)."""
    return to_graphframe(_read(sources))


def to_thicket(runs: Sequence[Source | Iterable[Source] | hatchet.GraphFrame],
               names: Sequence[str] | None = None) -> thicket.Thicket:
    """One Thicket of several runs: each run a GraphFrame or what
    from_psuite reads.  Each run is a profile of the Thicket, named by
    `names` (default: the run's source as given), its metadata a row of
    th.metadata; the call trees are united."""
    _import("hatchet")
    th_module = _import("thicket")
    runs = list(runs)
    if names is not None and len(names) != len(runs):
        raise UsageError(f"{len(names)} names for {len(runs)} runs; give one name per run")
    if not runs:
        raise UsageError("no runs to make a Thicket of; give at least one")
    labels = list(names) if names is not None else [_label(run) for run in runs]
    if len(set(labels)) < len(labels):
        raise UsageError(f"two runs are named {_first_repeat(labels)!r}; give each run its own name (names=...)")
    thickets = []
    for run, label in zip(runs, labels, strict=True):
        given = hasattr(run, "dataframe") and hasattr(run, "graph")
        # Thicket re-indexes the GraphFrame's dataframe in place: the caller's own stays as it was
        gf = run.deepcopy() if given else from_psuite(run)
        thickets.append(th_module.Thicket.thicketize_graphframe(gf, label))
    if len(thickets) == 1:
        return thickets[0]
    return th_module.Thicket.concat_thickets(thickets=thickets, axis="index", calltree="union",
                                             disable_tqdm=True)


# -- reading -------------------------------------------------------------------
def _read(sources: Source | Iterable[Source]):
    """The report of one input, or the combination of several."""
    from psuite.analysis import combine
    from psuite.analysis.inputs import pair_companions

    given = [os.fspath(sources)] if isinstance(sources, (str, os.PathLike)) else [os.fspath(s) for s in sources]
    if not given:
        raise UsageError("no documents given; give profiles (files, directories, globs or URLs)")
    expanded = pair_companions(combine.expand(given))
    if len(expanded) == 1:
        import psuite

        return psuite.read(expanded[0])
    return combine.combine(expanded, _load, lambda report: None, _resolve)


def _load(source: str):
    import psuite

    return psuite.read(source, resolve=False)


def _resolve(report) -> None:
    from psuite.analysis import calltree_resolve, srcmap

    srcmap.resolve_into(report)
    calltree_resolve.resolve_into(report)


def _import(name: str):
    """hatchet or thicket, or the one line naming the extra that installs them."""
    import importlib

    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        error = missing_extra(exc)
        if error is None:  # something hatchet itself needs: its own message says what
            raise
        raise error from None


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
def _graphframe(ht, columns: _Columns, metadata: dict) -> hatchet.GraphFrame:
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


def _name(report) -> str:
    return getattr(report, "source", "") or type(report).__name__


def _label(run) -> str:
    if hasattr(run, "dataframe"):
        return str(run.metadata.get("source", "")) if isinstance(getattr(run, "metadata", None), dict) else ""
    if isinstance(run, (str, os.PathLike)):
        return os.fspath(run)
    return ", ".join(os.fspath(s) for s in run)


def _first_repeat(labels: list[str]) -> str:
    seen: set[str] = set()
    for label in labels:
        if label in seen:
            return label
        seen.add(label)
    return ""


__all__ = ["ROOT_NAME", "from_psuite", "to_graphframe", "to_thicket"]
