"""psuite's profiles as LLNL hatchet GraphFrames and Thicket ensembles,
where many HPC analysts compare runs in notebooks.

    import psuite
    gf = psuite.read_experiment("app.1234.host.xml").to_hatchet()   # one process
    gf = psuite.read_document("app.1234.host.xml").to_hatchet()     # the same, from the document
    gf = psuite.hatchet.from_psuite("run/")                  # every rank of a run
    th = psuite.hatchet.to_thicket(["base/", "opt/"])        # runs side by side

A GraphFrame renders psuite's analysis model: the profile's experiment
(psuite.analysis.experiments.from_report of a document; one given, such
as psuite.read_experiment's, as it is).  The graph is its call tree (profiles
recorded with `psrun --callpath`; the threads' trees merged by frame, as
`psprocess -c --calltree` merges them), or for flat profiles one node per
function, from the profile's samples by source line.  Nodes are named as
`psprocess --calltree` names them (frame "name", "type": "function"; an
inlined frame "f [inlined]", an unknown function with its object "??
(libx.so)"); the dataframe has "name", "module" and "file" columns too.

The dataframe is indexed by (node, rank, thread), as hatchet's own readers
index multi-rank data, with a row for every node at every thread (0 where
the thread never was there): one row per location of the experiment, rank
its process's rank (the MPI rank, else the process's position) and thread
psuite's thread number.  Metrics, named as hatchet names them, are the
experiment's: "samples" and "samples (inc)", and "time" and "time (inc)"
(seconds: samples times the sampling period) for the ITIMER_ sources,
else "events" and "events (inc)" (samples times the overflow threshold),
as psprocess's CUBE export names them.  The run's command, host, date,
sampling event and sources are in gf.metadata.

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
    import numpy as np
    import thicket

    from psuite.model.experiment import Experiment, SourceLines
    from psuite.model.report import MultiReport, ProfileReport

ROOT_NAME = "<program root>"  # as hatchet's HPCToolkit reader names it: one name for every program, so runs unite
Source = str | os.PathLike


def to_graphframe(x: Experiment | ProfileReport | MultiReport) -> hatchet.GraphFrame:
    """The GraphFrame of a profile's analysis model: an Experiment
    (psuite.read_experiment's, with a "samples" metric), or a profile
    (psuite.read_document's ProfileReport, call paths resolved) or
    profiles combined (a MultiReport, e.g. of every rank of a run),
    rendered from their experiment (psuite.analysis.experiments.
    from_report).  UsageError for what is not a profile."""
    _refuse(x)
    ht = _import("hatchet")
    exp, runs, lines = _model(x)
    columns = _calltree_columns(exp) if lines is None else _flat_columns(exp, lines)
    return _graphframe(ht, columns, _metadata(runs) if runs else _model_metadata(exp))


def from_psuite(sources: Source | Iterable[Source]) -> hatchet.GraphFrame:
    """The GraphFrame of one run: a document (file or http(s) URL), or
    many - files, directories (their *.xml) and glob patterns, as
    `psprocess -c` takes them - combined, each profile with its call-path
    companion (X.callpaths.xml beside X.xml)."""
    return to_graphframe(_read(sources))


def to_thicket(runs: Sequence[Source | Iterable[Source] | hatchet.GraphFrame | Experiment],
               names: Sequence[str] | None = None) -> thicket.Thicket:
    """One Thicket of several runs: each run a GraphFrame, a profile's
    Experiment, or what from_psuite reads.  Each run is a profile of the Thicket, named by
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
        gf = run.deepcopy() if given else to_graphframe(run) if _is_experiment(run) else from_psuite(run)
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
        from psuite.api import read_document

        return read_document(expanded[0])
    return combine.combine(expanded, _load, lambda report: None, _resolve)


def _load(source: str):
    from psuite.api import read_document

    return read_document(source, resolve=False)


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


# -- the model -------------------------------------------------------------------
def _refuse(x) -> None:
    """UsageError unless x is a profile, profiles, or a profile's experiment."""
    from psuite.model.experiment import Experiment
    from psuite.model.report import MultiReport, ProfileReport

    if isinstance(x, Experiment):
        if any(m.name == "samples" for m in x.metrics):
            return
    else:
        members = list(x.reports) if isinstance(x, MultiReport) else [x]
        if members and all(isinstance(r, ProfileReport) for r in members):
            return
    raise UsageError(f"{_name(x)}: a hatchet GraphFrame is made of profiles (psrun --profile, --callpath), not "
                     "of counting or resource reports")


def _model(x) -> tuple[Experiment, list | None, SourceLines | None]:
    """The experiment to render, the run descriptions its metadata come
    from (None: the experiment's own attributes), and for profiles without
    call paths the samples by source line whose object modules name the
    unknown functions (None: the call tree, or the regions of a CUBE file)."""
    from psuite.analysis import experiments
    from psuite.model.calltree import thread_trees
    from psuite.model.experiment import Experiment
    from psuite.model.report import MultiReport

    if isinstance(x, Experiment):
        _places(x)  # refused as a document of the same places is
        return x, _runs(x), x.lines if x.attributes.get(experiments.FLAT_PROFILE) else None
    members = list(x.reports) if isinstance(x, MultiReport) else [x]
    with_trees = [r for r in members if thread_trees(r)]
    if with_trees and len(with_trees) < len(members):
        without = next(r for r in members if not thread_trees(r))
        raise UsageError(f"{without.source or 'a profile'} has no call paths and others have: give profiles "
                         "recorded alike (all with psrun --callpath, or all without)")
    exp = experiments.from_report(x, for_reports=True)
    _places(exp, members)
    # a combination's merged experiment keeps no run descriptions: its documents' are the runs'
    runs = _runs(exp) or members
    if with_trees:
        return exp, runs, None
    lines = exp.lines
    if lines is None:  # a combination's merge keeps no source lines: the members' own, at their locations
        lines = experiments.source_lines(members, experiments.report_locations(exp, members))
    return exp, runs, lines


def _runs(exp: Experiment) -> list:
    """The run descriptions of the experiment's locations (Location.run),
    each once, in location order."""
    out = {id(loc.run): loc.run for loc in exp.locations if loc.run is not None}
    return list(out.values())


def _places(exp: Experiment, documents: list = ()) -> list[tuple[int, int]]:
    """(rank, thread) of each location: its process's rank (the MPI rank,
    else its position) and its thread's number (the run attribute psuite
    gives a document's location, else the thread's rank in the system
    tree).  UsageError for two profiles of one place (runs of the same
    ranks: the conversion gives the second its own rank, which would mix
    two runs in one frame), naming the document it came from (one of
    `documents` where the experiment keeps no run descriptions)."""
    from psuite.analysis.experiments import location_key

    out: list[tuple[int, int]] = []
    seen: set = set()
    for loc in exp.locations:
        a = loc.attributes
        place = (loc.rank, int(a["thread"]) if "thread" in a else loc.thread_rank)
        keys = [place, ("run", *location_key(loc))] if "thread" in a else [place]
        if any(k in seen for k in keys):
            shown = (int(a["rank"]) if "rank" in a else loc.rank, place[1])
            raise UsageError(f"{_who(loc, documents)} is rank {shown[0]} thread {shown[1]} as another profile is: "
                             "give the profiles of one run (compare runs with psuite.hatchet.to_thicket)")
        seen.update(keys)
        out.append(place)
    return out


def _who(loc, documents: list) -> str:
    """The profile a location came from, as an error names it."""
    a = loc.attributes
    process = (a.get("host"), a.get("pid"))
    source = getattr(loc.run, "source", "") or next(
        (r.source for r in documents if (r.hostname or "localhost", str(r.pid)) == process and r.source), "")
    if source:
        return source
    return f"the profile of pid {a['pid']} on {a.get('host', loc.node)}" if "pid" in a else "a profile"


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
    """The graph's nodes and, per node (rows) and location (columns), the
    samples and the second metric ("time" or "events"), exclusive and
    inclusive."""

    nodes: list[_Node]
    places: list[tuple[int, int]]  # (rank, thread) per location
    samples: np.ndarray
    samples_inc: np.ndarray
    values: np.ndarray
    values_inc: np.ndarray
    second: str


def _second(exp: Experiment) -> str:
    """The profile's second metric: "time" (ITIMER_ sources), else "events"."""
    return "time" if any(m.name == "time" for m in exp.metrics) else "events"


def _metric(exp: Experiment, name: str, inclusive: bool):
    """The metric's (call paths, locations) values as float64 (zeros when the
    experiment has no such metric)."""
    import numpy as np

    if not any(m.name == name for m in exp.metrics):
        return np.zeros((len(exp.cnodes), len(exp.locations)), dtype=np.float64)
    a = exp.inclusive(name) if inclusive else exp.exclusive(name)
    return a.astype(np.float64, copy=False)


def _calltree_columns(exp: Experiment) -> _Columns:
    """The experiment's call tree, hatchet's root its program root: call
    paths named alike under one node merged (as psprocess --calltree shows
    them: an unknown function with its object), each location's exclusive
    and inclusive values summed."""
    import numpy as np

    from psuite.analysis.experiments import FLAT_PROFILE, OBJECT, RECORDED_FUNCTION
    from psuite.formats.exporters.calltree_common import INLINED, added_root
    from psuite.formats.writers.text_calltree import label
    from psuite.model.calltree import Frame

    flat = bool(exp.attributes.get(FLAT_PROFILE))
    shown = []  # per region: (name, module, file), read as documents._calltree_rows reads them
    for r in exp.regions:
        a = r.attributes
        function = a[RECORDED_FUNCTION] if RECORDED_FUNCTION in a else r.name
        if OBJECT in a:  # the region's module is its source file
            module, file = a[OBJECT], r.module
        elif flat:  # a profile without call paths: its functions' module is their source file
            module, file = "", r.module
        else:
            module, file = r.module, ""
        shown.append((label(Frame(function, module, inlined=r.description == INLINED)), module, file))
    graph = _Graph()
    node_of = np.zeros(len(exp.cnodes), dtype=np.int64)
    tops = []  # call paths without a parent that are the program's own (a CUBE file's): under hatchet's root
    for c, cn in enumerate(exp.cnodes):  # parents first
        if cn.parent is None:
            if added_root(exp, c):
                continue  # hatchet's root, node 0
            tops.append(c)
        name, module, file = shown[cn.region]
        node_of[c] = graph.node(0 if cn.parent is None else int(node_of[cn.parent]), name, module, file)
    by_node = _Summed(node_of, len(graph.nodes))
    second = _second(exp)
    columns = []
    for name in ("samples", second):
        columns.append(by_node(_metric(exp, name, False)))
        inclusive = _metric(exp, name, True)
        summed = by_node(inclusive)
        if tops:  # hatchet's root holds what the program's roots hold
            summed[0] += inclusive[tops].sum(axis=0)
        columns.append(summed)
    return _Columns(graph.nodes, _places(exp), *columns, second)


class _Summed:
    """Rows of (call paths, locations) values summed per node: the call
    paths' order by node worked out once for all the metrics, and none
    needed where no two call paths share a node (siblings named alike)."""

    def __init__(self, node_of, n: int) -> None:
        import numpy as np

        self.node_of, self.n = node_of, n
        self.order = self.starts = None
        if len(node_of) and np.bincount(node_of, minlength=n).max() > 1:
            self.order = np.argsort(node_of, kind="stable")
            keys = node_of[self.order]
            self.starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
            self.nodes = keys[self.starts]

    def __call__(self, values):
        import numpy as np

        out = np.zeros((self.n, values.shape[1]), dtype=np.float64)
        if self.order is None:
            out[self.node_of] = values
        else:
            out[self.nodes] = np.add.reduceat(values[self.order], self.starts, axis=0)
        return out


def _flat_columns(exp: Experiment, lines: SourceLines) -> _Columns:
    """One node per function under the root (named as `psprocess` lists
    them: an unknown function with its object), from the samples by source
    line; a node's time (or events) is its function's in the model, shared
    by samples where the function is several nodes (unknown code in several
    objects)."""
    import numpy as np

    from psuite.formats.writers.text_calltree import label
    from psuite.model.calltree import Frame

    graph = _Graph()
    node_function: dict[int, str] = {}
    known: dict[tuple[str, str], int] = {}  # (function, module) -> node: a function has many lines
    at_node = []
    for key, file in zip(zip(lines.functions, lines.modules, strict=True), lines.files, strict=True):
        node = known.get(key)
        if node is None:
            node = known[key] = graph.node(0, label(Frame(*key)), key[1], file)
            node_function.setdefault(node, key[0])
        at_node.append(node)
    rows = np.asarray(at_node, dtype=np.int64)
    n, m = len(graph.nodes), len(exp.locations)
    at = np.asarray(lines.location, dtype=np.int64)
    mine = at >= 0  # a row at -1 is a whole process's whose threads are the locations: not a flat profile's
    samples = np.zeros((n, m), dtype=np.float64)
    np.add.at(samples, (rows[mine], at[mine]), np.asarray(lines.samples, dtype=np.float64)[mine])
    samples_inc = samples.copy()
    samples_inc[0] = samples[1:].sum(axis=0)  # the root has none of its own
    # each function's samples and time in the model (its call paths under the root: one, or one per file a
    # merge of profiles kept apart), and each node's share of them
    second = _second(exp)
    functions = {name: i for i, name in enumerate(dict.fromkeys(node_function.values()))}
    of_cnode = np.full(len(exp.cnodes), len(functions), dtype=np.int64)  # the last row: no function of a node
    for c, cn in enumerate(exp.cnodes):
        if cn.parent is not None:
            of_cnode[c] = functions.get(exp.regions[cn.region].name, len(functions))
    by_function = _Summed(of_cnode, len(functions) + 1)
    own = by_function(_metric(exp, "samples", False))
    time = by_function(_metric(exp, second, False))
    function_of = np.full(n, len(functions), dtype=np.int64)  # the root: the row of no function
    for node, function in node_function.items():
        function_of[node] = functions[function]
    own, time = own[function_of], time[function_of]
    share = np.divide(samples, own, out=np.zeros((n, m)), where=own != 0)
    values = np.where(samples == own, time, time * share)  # a function's one node: its time as it is
    values[0] = 0.0  # the root has none of its own
    values_inc = values.copy()
    roots = [c for c, cn in enumerate(exp.cnodes) if cn.parent is None]
    values_inc[0] = _metric(exp, second, True)[roots].sum(axis=0)
    return _Columns(graph.nodes, _places(exp), samples, samples_inc, values, values_inc, second)


class _Graph:
    """The nodes being built, node 0 the root: a child per name under each
    node (hatchet merges siblings of one frame)."""

    def __init__(self) -> None:
        self.nodes = [_Node(ROOT_NAME, None, "", "")]
        self.index: dict[tuple[int, str], int] = {}  # (parent, name) -> node

    def node(self, parent: int, name: str, module: str, file: str) -> int:
        i = self.index.get((parent, name))
        if i is None:
            i = self.index[(parent, name)] = len(self.nodes)
            self.nodes.append(_Node(name, parent, module if module != UNKNOWN else "",
                                    file if file != UNKNOWN else ""))
        return i


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

    n_nodes, n_locations = len(hnodes), len(columns.places)
    ranks = np.asarray([r for r, _ in columns.places], dtype=np.int64)
    threads = np.asarray([t for _, t in columns.places], dtype=np.int64)
    second = columns.second
    frame = pd.DataFrame({
        "node": np.repeat(np.asarray(hnodes, dtype=object), n_locations),
        "rank": np.tile(ranks, n_nodes),
        "thread": np.tile(threads, n_nodes),
        "name": np.repeat([n.name for n in columns.nodes], n_locations),
        "samples": _counts(columns.samples).ravel(),
        "samples (inc)": _counts(columns.samples_inc).ravel(),
        second: columns.values.ravel(),
        f"{second} (inc)": columns.values_inc.ravel(),
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


def _model_metadata(exp: Experiment) -> dict:
    """The metadata an experiment without run descriptions (psuite.
    read_experiment's, a CUBE file's) gives: its attributes, its locations'
    run attributes, its sampled addresses' event and period, its samples;
    None where it does not say."""
    from psuite._version import __version__
    from psuite.analysis.experiments import SAMPLED_ON

    a = exp.attributes
    sampled = exp.addresses
    return {
        "command": a.get("command", ""),
        "hostname": ", ".join(dict.fromkeys(loc.attributes.get("host", loc.node) for loc in exp.locations)),
        "date": a.get("date", ""),
        "event": a.get(SAMPLED_ON) or (sampled.event if sampled is not None else ""),
        "threshold": sampled.threshold if sampled is not None else None,
        "domain": None,
        "ranks": len({(loc.node, loc.rank) for loc in exp.locations}),
        "samples": int(exp.stored("samples").sum()),
        "source": a.get("source", ""),
        "generator": None,
        "reader": f"psuite {__version__}",
    }


def _name(x) -> str:
    source = x.attributes.get("source", "") if hasattr(x, "attributes") else getattr(x, "source", "")
    return source or type(x).__name__


def _is_experiment(run) -> bool:
    from psuite.model.experiment import Experiment

    return isinstance(run, Experiment)


def _label(run) -> str:
    if _is_experiment(run):
        return run.attributes.get("source", "")
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
