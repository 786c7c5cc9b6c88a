"""CUBE 4 (.cubex), as the CUBE 4.3 user guide and pycubexr describe it: a
tar of anchor.xml (metrics, program, system) and per metric <id>.index and
<id>.data, plus the guide's statistics file (<name>.stat) beside it.

- Metrics: for profiles "samples" (UINT64) and "time" (DOUBLE, seconds:
  samples x period) for timer profiles or "events" (samples x threshold)
  for event overflow; for counting reports each counted event (UINT64)
  and each derived metric (DOUBLE).  All are EXCLUSIVE: a call path's
  value excludes its children's.  Units (<uom>) are the two the guide
  allows: "sec" for times, "occ" (occurrences) for everything else; a
  derived metric's own unit (ratio, percent, MB/s ...) is named in its
  description.
- Program: one region per function (module file, first and last sampled
  line).  A profile recorded with call paths (psrun --callpath) gives the
  real call tree: under the program's root, one cnode per calling context
  of the threads' resolved trees merged (a context every thread reached
  once), each naming its function's region (an inlined function has a
  region of its own, "f [inlined]"); values are the context's exclusive
  samples per thread, so CUBE's inclusive view of a cnode sums its
  subtree.  Cnodes have no call-site lines: a resolved tree merges a
  function's calls from different lines into one context.  Without call
  paths (or when a profile of a combination has none) the tree is flat -
  the root with one child per function.  Counting reports have only the
  root.
- System: machine -> node (host) -> process (MPI rank, else pid) ->
  thread; combined reports give one cube with every rank and thread.  With
  call paths the threads are the call-path document's, one location each.
- Data: uncompressed CUBEX.DATA, one value per call path and location,
  call paths in index order (depth first), locations in tree order."""

from __future__ import annotations

import io
import math
import re
import struct
import tarfile
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax import saxutils

from psuite.calltree import BLOCKED_FUNCTION, ROOT_FRAME, TRUNCATED_FUNCTION, Frame, thread_trees
from psuite.errors import UsageError
from psuite.psprocess import combine
from psuite.psprocess.exporters.calltree_common import SourceTree, frame_file, frame_name, source_trees, text
from psuite.report import CountReport, MultiReport, ProfileReport

EXTENSION = ".cubex"
UINT64_MAX = 2**64 - 1


SECONDS = ("sec", "s", "second", "seconds")
PLACEHOLDERS = (TRUNCATED_FUNCTION, BLOCKED_FUNCTION)  # frames standing for no function


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # characters XML 1.0 cannot hold


def escape(s: str, entities: dict[str, str] | None = None) -> str:
    """s as XML character data: escaped, undecodable bytes as U+FFFD, and
    characters XML cannot hold (control characters a symbol may have) as
    spaces."""
    return saxutils.escape(_NOT_XML.sub(" ", text(s)), entities or {})


class _Metric:
    def __init__(self, name: str, display: str, dtype: str, unit: str, descr: str) -> None:
        """unit: the metric's own (seconds, ratio, percent ...), written as
        the guide's "sec" or "occ", and named in the description otherwise."""
        self.name, self.display, self.dtype, self.descr = name, display, dtype, descr
        self.uom = "sec" if unit.lower() in SECONDS else "occ"
        if self.uom == "occ" and unit and unit.lower() not in ("occ", "events", "samples"):
            self.descr = f"{descr} (unit: {unit})"
        self.values: dict[tuple[int, int], float] = {}  # (cnode, location) -> value


def _reports(obj) -> list:
    if isinstance(obj, MultiReport):
        return list(obj.reports)
    if isinstance(obj, (ProfileReport, CountReport)):
        return [obj]
    raise UsageError("--cube takes counting reports or profiles, not resource reports (they have no call paths)")


def _thread_number(thread: str) -> int:
    """A thread's rank in the system tree: its number, or 0 when <thread>
    is not one (a name, non-ASCII digits, a numeral beyond 64 bits)."""
    return int(thread) if thread.isascii() and thread.isdigit() and len(thread) <= 18 else 0


def _locations(reports: Sequence) -> tuple[list, list[int]]:
    """System tree: host -> process -> thread; returns the tree and, per
    report, its location id (ids in tree order)."""
    hosts: dict[str, dict[tuple, list[int]]] = {}
    for i, r in enumerate(reports):
        process = ("rank", r.rank) if r.rank is not None else ("pid", r.pid or 0)
        hosts.setdefault(r.hostname or "localhost", {}).setdefault(process, []).append(i)
    tree, where, next_id = [], [0] * len(reports), 0
    for host in sorted(hosts):
        groups = []
        for process in sorted(hosts[host], key=lambda p: (p[0], p[1])):
            members = sorted(hosts[host][process], key=lambda i: _thread_number(reports[i].thread))
            locations = []
            for i in members:
                where[i] = next_id
                thread = reports[i].thread or "0"
                locations.append((next_id, f"thread {thread}", _thread_number(thread)))
                next_id += 1
            groups.append((f"{process[0]} {process[1]}", process[1], locations))
        tree.append((host, groups))
    return tree, where


def _profile_model(reports: list[ProfileReport]):
    regions: dict[str, dict] = {}  # function -> {file, begin, end}
    for r in reports:
        for loc in r.locations:
            reg = regions.setdefault(loc.function, {"file": loc.file, "begin": loc.line or -1, "end": loc.line or -1})
            if loc.line:
                reg["begin"] = loc.line if reg["begin"] < 0 else min(reg["begin"], loc.line)
                reg["end"] = max(reg["end"], loc.line)
    names = sorted(regions)
    cnode_of = {f: i + 1 for i, f in enumerate(names)}  # 0 is the program's root
    metrics, timer = _profile_metrics(reports[0])
    return names, regions, cnode_of, metrics, timer


def _profile_metrics(first: ProfileReport | SourceTree) -> tuple[list[_Metric], bool]:
    """The two metrics of a profile (or of call paths): samples, and time
    (timer sources) or estimated events; and whether the source is a timer."""
    timer = bool(first.is_timer and first.threshold)
    samples = _Metric("samples", "Samples", "UINT64", "occ", "Samples taken in the call path")
    second = _Metric("time", "Time", "DOUBLE", "sec", "Samples times the sampling period") if timer else \
        _Metric("events", f"{first.event} (estimated)", "DOUBLE", "events", "Samples times the overflow threshold")
    return [samples, second], timer


def _per_sample(r: ProfileReport | SourceTree, timer: bool) -> float:
    """What one sample of r adds to the second metric: seconds, or events."""
    return (r.threshold / 1e6 if timer else r.threshold or 1) if r.threshold else 0


def _fill_profiles(reports, where, cnode_of, metrics, timer) -> None:
    samples, second = metrics
    for r, loc_id in zip(reports, where, strict=True):
        scale = _per_sample(r, timer)
        for loc in r.locations:
            key = (cnode_of[loc.function], loc_id)
            samples.values[key] = samples.values.get(key, 0) + loc.samples
            second.values[key] = second.values.get(key, 0.0) + loc.samples * scale


@dataclass
class _Where:
    """Where a thread's tree ran, as _locations takes reports."""

    hostname: str
    rank: int | None
    pid: int
    thread: str

    @classmethod
    def of(cls, st: SourceTree) -> _Where:
        t = st.thread
        return cls(t.hostname, t.rank, t.pid, str(t.thread))


def _calltrees(reports: list[ProfileReport]) -> list[SourceTree] | None:
    """Every thread's resolved tree, when every profile has call paths."""
    if not all(thread_trees(r) for r in reports):
        return None
    return source_trees(MultiReport(reports=reports) if len(reports) > 1 else reports[0], "--cube")


def _calltree_model(calltrees: list[SourceTree], where: list[int]):
    """Regions (one per function, Frame.key), cnodes (region, depth) in
    depth-first order for the threads' trees merged, and the two metrics
    filled with each thread's exclusive values."""
    # The merged tree as flat lists (a CallNode each would cost more than
    # the rest of the export): node u has frame[u] and kids[u], Frame.key ->
    # node; 0 is the root.
    frame: list[Frame] = [ROOT_FRAME]
    kids: list[dict[tuple[str, str, bool], int]] = [{}]
    per_thread: list[list[tuple[int, float]]] = []  # (merged node, exclusive) of each thread's contexts
    for st in calltrees:
        values = []
        stack = [(st.thread.tree.root, 0)]
        while stack:
            node, u = stack.pop()
            for key, child in node.children.items():
                c = kids[u].get(key)
                if c is None:
                    c = kids[u][key] = len(frame)
                    frame.append(child.frame)
                    kids.append({})
                if child.exclusive:
                    values.append((c, child.exclusive))
                if child.children:
                    stack.append((child, c))
        per_thread.append(values)
    regions: dict[tuple[str, str, bool], dict] = {}
    names: list[tuple[str, str, bool]] = []
    cnodes: list[tuple[int, int]] = []
    cnode_of = [0] * len(frame)
    todo = [(c, 1) for c in reversed(kids[0].values())]
    while todo:  # depth first, children in the order met: the cube's cnode order
        u, depth = todo.pop()
        f = frame[u]
        key = f.key
        r = regions.get(key)
        if r is None:
            name = frame_name(f)
            r = regions[key] = {"id": len(names) + 1, "name": f"{name} [inlined]" if f.inlined else name,
                                "mangled": name, "file": frame_file(f) or f.module,
                                "begin": -1, "end": -1, "role": "artificial" if f.function in PLACEHOLDERS
                                else "function", "descr": "inlined into its caller" if f.inlined else ""}
            names.append(key)
        if f.line > 0:
            r["begin"] = f.line if r["begin"] < 0 else min(r["begin"], f.line)
            r["end"] = max(r["end"], f.line)
        cnodes.append((r["id"], depth))
        cnode_of[u] = len(cnodes)
        todo.extend((c, depth + 1) for c in reversed(kids[u].values()))
    (samples, second), timer = _profile_metrics(calltrees[0])
    for st, loc_id, values in zip(calltrees, where, per_thread, strict=True):
        scale = _per_sample(st, timer)
        for u, v in values:
            key = (cnode_of[u], loc_id)
            samples.values[key] = samples.values.get(key, 0) + v
            second.values[key] = second.values.get(key, 0.0) + v * scale
    return names, regions, cnodes, [samples, second]


def _count_metrics(reports: list[CountReport], where) -> list[_Metric]:
    metrics: dict[tuple[str, str], _Metric] = {}
    for r, loc_id in zip(reports, where, strict=True):
        for e in r.events:
            m = metrics.setdefault(("event", e.name), _Metric(e.name, e.name, "UINT64" if float(e.count).is_integer()
                                                             else "DOUBLE", "events", e.description or e.name))
            m.values[(0, loc_id)] = e.count
        for d in r.metrics:
            m = metrics.setdefault(("metric", d.name), _Metric(
                d.name.replace(" ", "_"), d.name, "DOUBLE", d.unit or "", d.description or d.name))
            m.values[(0, loc_id)] = d.value
    return list(metrics.values())


def _integer_metrics_fit(metrics: list[_Metric]) -> None:
    """An integer metric stays one only if every value is a whole number
    that UINT64 holds (a count may be 2^64 itself; summed samples more)."""
    for m in metrics:
        if m.dtype == "UINT64" and any(not float(v).is_integer() or not 0 <= v <= UINT64_MAX
                                       for v in m.values.values()):
            m.dtype = "DOUBLE"


def _anchor(metrics, names, regions, program: str, tree, cnodes: Sequence[tuple[int, int]] | None = None) -> bytes:
    """anchor.xml. Region i (from 1) is regions[names[i - 1]], named by its
    "name" if it has one, else by its key; cnodes: (region id, depth) of
    cnodes 1, 2 ... in depth-first order (depth 1: a child of the root),
    else one cnode per region under the root."""
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n<cube version="4.4">',
           '<attr key="CUBE_CT_AGGR" value="SUM"/>', '<attr key="Creator" value="psuite"/>', "<metrics>"]
    for k, m in enumerate(metrics):
        out.append(f'<metric id="{k}" type="EXCLUSIVE"><disp_name>{escape(m.display)}</disp_name>'
                   f"<uniq_name>{escape(m.name)}</uniq_name><dtype>{m.dtype}</dtype><uom>{escape(m.uom)}</uom>"
                   f"<url></url><descr>{escape(m.descr)}</descr></metric>")
    out.append("</metrics><program>")
    out.append(f'<region id="0" mod="" begin="-1" end="-1"><name>{escape(program)}</name>'
               f"<mangled_name>{escape(program)}</mangled_name><paradigm>user</paradigm><role>artificial</role>"
               "<url></url><descr>the whole program</descr></region>")
    for i, f in enumerate(names, 1):
        r = regions[f]
        name = r.get("name", f)
        out.append(f'<region id="{i}" mod="{escape(r["file"], {chr(34): "&quot;"})}" begin="{r["begin"]}" '
                   f'end="{r["end"]}"><name>{escape(name)}</name><mangled_name>{escape(r.get("mangled", name))}'
                   f'</mangled_name><paradigm>compiler</paradigm><role>{r.get("role", "function")}</role><url></url>'
                   f'<descr>{escape(r.get("descr", ""))}</descr></region>')
    out.append('<cnode id="0" calleeId="0">')
    if cnodes is None:
        out += [f'<cnode id="{i}" calleeId="{i}"></cnode>' for i in range(1, len(names) + 1)]
    else:
        depth = 0  # of the innermost open cnode below the root
        for i, (region, d) in enumerate(cnodes, 1):
            out.append("</cnode>" * (depth - d + 1) + f'<cnode id="{i}" calleeId="{region}">')
            depth = d
        out.append("</cnode>" * depth)
    out.append("</cnode></program><system>")
    out.append('<systemtreenode Id="0"><name>machine</name><class>machine</class>')
    node_id, group_id = 1, 0
    for host, groups in tree:
        out.append(f'<systemtreenode Id="{node_id}"><name>{escape(host)}</name><class>node</class>')
        node_id += 1
        for name, rank, locations in groups:
            out.append(f'<locationgroup Id="{group_id}"><name>{escape(name)}</name><rank>{rank}</rank>'
                       "<type>process</type>")
            group_id += 1
            out += [f'<location Id="{lid}"><name>{escape(lname)}</name><rank>{lrank}</rank><type>thread</type>'
                    "</location>" for lid, lname, lrank in locations]
            out.append("</locationgroup>")
        out.append("</systemtreenode>")
    out.append("</systemtreenode></system></cube>\n")
    return "\n".join(out).encode()


def grid(metric: _Metric, ncnodes: int, nlocations: int) -> array:
    """The metric's values, dense: ncnodes x nlocations, call path major."""
    g = array("Q" if metric.dtype == "UINT64" else "d", bytes(8 * ncnodes * nlocations))
    cast = int if metric.dtype == "UINT64" else float
    for (cnode, loc), v in metric.values.items():
        g[cnode * nlocations + loc] = cast(v)
    return g


def _index(ncnodes: int) -> bytes:
    # native byte order throughout (the data too): readers learn it from the 1 here
    return b"CUBEX.INDEX" + struct.pack("=ihbi", 1, 0, 1, ncnodes) + array("i", range(ncnodes)).tobytes()


def location_totals(g: array, nlocations: int) -> list[float]:
    """Per location, the sum over call paths (columns of the grid)."""
    totals = [0.0] * nlocations
    for start in range(0, len(g), nlocations):
        totals = list(map(float.__add__, totals, map(float, g[start:start + nlocations])))
    return totals


def statistics_text(metrics: list[_Metric], totals_per_metric: list[list[float]]) -> str:
    """The guide's statistics file (appendix 3.1): per metric, its per-location
    totals' count, mean, median, minimum, maximum, sum, then variance and the
    quartiles when there are at least two values (the rules: a value may be
    left out only with all that follow it)."""
    lines = ["PatternName MetricID Count Mean Median Minimum Maximum Sum Variance Quartil25 Quartil75"]
    for k, (m, totals) in enumerate(zip(metrics, totals_per_metric, strict=True)):
        row = [m.name.replace(" ", "_"), str(k), str(len(totals))]
        if totals:
            total, mean = _figure(combine.total_and_mean, totals) or (math.nan, math.nan)
            q1, median, q3 = combine.quartiles(totals)
            row += [f"{v:.9g}" for v in (mean, median, min(totals), max(totals), total)]
        if len(totals) >= 2:
            sd = _figure(combine.pstdev, totals, mean)
            sd = math.nan if sd is None else sd
            row += [f"{v:.9g}" for v in (sd * sd, q1, q3)]
        lines += [" ".join(row), ""]
    return "\n".join(lines)


def _figure(function, *args):
    """A statistic of location totals, None where they are not all finite
    (a total beyond float's range, or of opposite infinities)."""
    try:
        return function(*args)
    except (ValueError, OverflowError):
        return None


def targets(path: str) -> list[str]:
    """The files write(..., path) creates: the cube and its statistics."""
    if not path.endswith(EXTENSION):
        raise UsageError(f"--cube {path}: the file name must end in {EXTENSION}")
    return [path, path[: -len(EXTENSION)] + ".stat"]


def write(obj, path: str, module: str | None = None, force: bool = False) -> str:
    """Write the .cubex and, beside it, the .stat (every module: module is
    for the single-module formats): the call tree when every profile has
    resolved call paths, else flat; says what was written."""
    reports = _reports(obj)
    cnodes = None
    calltrees = _calltrees(reports) if isinstance(reports[0], ProfileReport) else None
    if calltrees:
        tree, where = _locations([_Where.of(st) for st in calltrees])
        nloc = len(calltrees)
        names, regions, cnodes, metrics = _calltree_model(calltrees, where)
    else:
        tree, where = _locations(reports)
        nloc = len(reports)
        if isinstance(reports[0], ProfileReport):
            names, regions, cnode_of, metrics, timer = _profile_model(reports)
            _fill_profiles(reports, where, cnode_of, metrics, timer)
        else:
            names, regions, metrics = [], {}, _count_metrics(reports, where)
    _integer_metrics_fit(metrics)
    program = (reports[0].command.split() or ["program"])[0].rsplit("/", 1)[-1] if reports[0].command else "program"
    ncnodes = (len(names) if cnodes is None else len(cnodes)) + 1
    stat = write_grids(path, metrics, [grid(m, ncnodes, nloc) for m in metrics], names, regions, program, tree,
                       force, cnodes)
    shape = f"call tree of {ncnodes - 1} calling contexts" if cnodes is not None else "flat"
    return f"CUBE 4 ({shape}), statistics in {stat}"


def write_grids(path: str, metrics: list[_Metric], grids: list[array], names: list, regions: dict,
                program: str, tree: list, force: bool = False,
                cnodes: Sequence[tuple[int, int]] | None = None) -> str:
    """The cube from dense grids (one per metric, call path major), and its
    statistics file; returns the .stat path.  Regions and cnodes as
    _anchor takes them (cnodes None: flat, one per region)."""
    from psuite.cli_common import atomic_outputs

    path, stat_path = targets(path)
    nloc = sum(len(locations) for _, groups in tree for _, _, locations in groups)
    ncnodes = (len(names) if cnodes is None else len(cnodes)) + 1
    index = _index(ncnodes)
    totals = []
    with atomic_outputs([path, stat_path], force, binary=[True, False]) as (f, stat), \
            tarfile.open(fileobj=f, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        def add(name: str, *parts: bytes) -> None:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = sum(len(p) for p in parts), int(time.time())
            tar.addfile(info, io.BytesIO(b"".join(parts)) if len(parts) > 1 else io.BytesIO(parts[0]))

        add("anchor.xml", _anchor(metrics, names, regions, program, tree, cnodes))
        for k, g in enumerate(grids):
            add(f"{k}.index", index)
            add(f"{k}.data", b"CUBEX.DATA", g.tobytes())
            totals.append(location_totals(g, nloc))
        stat.write(statistics_text(metrics, totals))
    return stat_path
