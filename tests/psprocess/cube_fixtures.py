"""Hand-built CUBE 4 files in the shape Score-P writes them, for tests.

Written byte by byte here (struct, zlib, tarfile), from the format as
cubelib and pycubexr read it, not through psuite's writer, with values the
caller knows: `scorep_cube(path)` returns them per metric as exclusive and
inclusive (call paths, locations) arrays, computed here from the call tree.

The cube (the default):
- metric tree: time (INCLUSIVE, DOUBLE, sec) > mpi (INCLUSIVE, DOUBLE, sec);
  visits (EXCLUSIVE, UINT64); bytes_sent (EXCLUSIVE, INT64); avg_time
  (POSTDERIVED, CubePL "metric::time(i)/metric::visits(e)", no data);
- call tree with two roots: main (line 1) > init, solve (line 20) >
  [MPI_Send (line 31), compute (line 35)], finalize; worker > compute
  (line 7).  Cnode ids in the file are not in depth-first order (the
  tree, not the ids, orders the rows);
- system tree: machine "Linux" > node "node0" > "MPI Rank 0" (threads
  "Master thread" 0, "Pthread thread 1" 1), node "node1" > "MPI Rank 1"
  (thread 0): three locations (or `ranks` x `threads` of them);
- sparse index: call paths with no value anywhere (finalize, and every
  MPI_Send for `bytes_sent` but one) are left out of the index and data;
- data compressed (ZCUBEX.DATA, blocks of two rows) unless compressed=False,
  little-endian unless big_endian=True."""

from __future__ import annotations

import io
import struct
import tarfile
import zlib
from dataclasses import dataclass, field

import numpy as np

# (name, region, parent index, call-site line), depth first
CALL_TREE = [
    ("main", "main", None, 1),
    ("init", "init", 0, -1),
    ("solve", "solve", 0, 20),
    ("MPI_Send", "MPI_Send", 2, 31),
    ("compute", "compute", 2, 35),
    ("finalize", "finalize", 0, -1),
    ("worker", "worker", None, -1),
    ("compute", "compute", 6, 7),
]
REGIONS = ["main", "init", "solve", "MPI_Send", "compute", "finalize", "worker"]
FILE_IDS = [3, 0, 6, 1, 7, 2, 5, 4]  # the <cnode id> of each call path: any order will do
EXPRESSION = "metric::time(i)/metric::visits(e)"


@dataclass
class Metric:
    name: str
    kind: str  # EXCLUSIVE, INCLUSIVE or POSTDERIVED
    dtype: str  # UINT64, INT64, DOUBLE
    unit: str
    parent: str | None = None
    expression: str = ""


METRICS = [
    Metric("time", "INCLUSIVE", "DOUBLE", "sec"),
    Metric("mpi", "INCLUSIVE", "DOUBLE", "sec", parent="time"),
    Metric("visits", "EXCLUSIVE", "UINT64", "occ"),
    Metric("bytes_sent", "EXCLUSIVE", "INT64", "bytes"),
    Metric("avg_time", "POSTDERIVED", "DOUBLE", "sec", expression=EXPRESSION),
]


@dataclass
class Cube:
    """What a hand-built cube holds, as the test knows it."""

    path: str
    paths: list[tuple[str, ...]]  # each call path's region names, depth first (psuite's cnode order)
    parents: list[int | None]
    lines: list[int]
    locations: list[tuple[str, int, str, int]]  # (process, rank, thread, thread rank), by location id
    nodes: list[str]  # each location's node
    metrics: list[Metric]
    exclusive: dict[str, np.ndarray] = field(default_factory=dict)  # stored metric -> (paths, locations)
    inclusive: dict[str, np.ndarray] = field(default_factory=dict)


def inclusive_of(exclusive: np.ndarray, parents: list[int | None]) -> np.ndarray:
    """Each call path's value with every descendant's (a plain loop over ancestors)."""
    out = np.zeros_like(exclusive)
    for c in range(len(parents)):
        a: int | None = c
        while a is not None:
            out[a] += exclusive[c]
            a = parents[a]
    return out


def deep_order(parents: list[int | None]) -> list[int]:
    """Depth-first call paths; with CALL_TREE's order this is 0, 1, 2 ..."""
    kids: dict[int | None, list[int]] = {}
    for c, p in enumerate(parents):
        kids.setdefault(p, []).append(c)
    out: list[int] = []

    def visit(c: int) -> None:
        out.append(c)
        for k in kids.get(c, []):
            visit(k)

    for r in kids.get(None, []):
        visit(r)
    return out


def wide_order(parents: list[int | None]) -> list[int]:
    """cubelib's WideSearchEnumerator: a root, then every child of a call
    path before the children's own subtrees, recursively."""
    kids: dict[int | None, list[int]] = {}
    for c, p in enumerate(parents):
        kids.setdefault(p, []).append(c)
    out: list[int] = []

    def traverse(c: int) -> None:
        out.extend(kids.get(c, []))
        for k in kids.get(c, []):
            traverse(k)

    for r in kids.get(None, []):
        out.append(r)
        traverse(r)
    return out


def _values(paths: int, nloc: int, seed: int) -> dict[str, np.ndarray]:
    """Exclusive values of the stored metrics, with the zeros the sparse
    index leaves out."""
    rng = np.random.default_rng(seed)
    time = rng.integers(1, 1000, (paths, nloc)) / 64.0  # exact in binary
    mpi = np.zeros((paths, nloc))
    mpi[3] = time[3]  # MPI_Send is all MPI
    visits = rng.integers(1, 50, (paths, nloc)).astype(np.int64)
    visits[0] = 1
    sent = np.zeros((paths, nloc), dtype=np.int64)
    sent[3] = rng.integers(0, 1 << 40, nloc)
    sent[3, 0] = -5  # a signed metric may be negative
    for a in (time, mpi, visits, sent):
        a[5] = 0  # finalize: never measured
    return {"time": time, "mpi": mpi, "visits": visits, "bytes_sent": sent}


def scorep_cube(
    path,
    ranks: int = 0,
    threads: int = 0,
    compressed: bool = True,
    big_endian: bool = False,
    seed: int = 15,
    derived: bool = True,
    single_root: bool = False,
) -> Cube:
    """Write the cube to path (a .cubex) and say what it holds.  ranks and
    threads (both > 0): that many processes on one node each, with that
    many threads each, instead of the three default locations.  derived
    False leaves avg_time out (pycubexr cannot read a POSTDERIVED metric),
    single_root True the worker's tree (nor one with two roots)."""
    metrics = [m for m in METRICS if derived or m.kind != "POSTDERIVED"]
    tree = CALL_TREE[:6] if single_root else CALL_TREE
    parents = [p for _, _, p, _ in tree]
    paths = []
    for _, region, p, _ in tree:
        paths.append((region,) if p is None else paths[p] + (region,))
    if ranks and threads:
        locations = [
            (f"MPI Rank {r}", r, "Master thread" if t == 0 else f"Pthread thread {t}", t)
            for r in range(ranks)
            for t in range(threads)
        ]
        nodes = [f"node{r}" for r in range(ranks) for _ in range(threads)]
    else:
        locations = [
            ("MPI Rank 0", 0, "Master thread", 0),
            ("MPI Rank 0", 0, "Pthread thread 1", 1),
            ("MPI Rank 1", 1, "Master thread", 0),
        ]
        nodes = ["node0", "node0", "node1"]
    exclusive = _values(len(tree), len(locations), seed)
    cube = Cube(
        str(path),
        paths,
        parents,
        [line for *_, line in tree],
        locations,
        nodes,
        metrics,
        exclusive,
        {name: inclusive_of(a, parents) for name, a in exclusive.items()},
    )
    order = ">" if big_endian else "<"
    members = [("anchor.xml", _anchor(cube).encode())]
    for file_id, m in enumerate(metrics):
        if m.kind == "POSTDERIVED":
            continue
        stored = cube.inclusive[m.name] if m.kind == "INCLUSIVE" else cube.exclusive[m.name]
        enumeration = wide_order(parents) if m.kind == "INCLUSIVE" else deep_order(parents)
        rows = [t for t, c in enumerate(enumeration) if np.any(stored[c] != 0)]  # sparse: nonzero rows only
        code = {"DOUBLE": "f8", "UINT64": "u8", "INT64": "i8"}[m.dtype]
        data = b"".join(stored[enumeration[t]].astype(order + code).tobytes() for t in rows)
        index = (
            b"CUBEX.INDEX"
            + struct.pack(order + "ihb", 1, 0, 1)
            + struct.pack(f"{order}i{len(rows)}i", len(rows), *rows)
        )
        members += [
            (f"{file_id}.index", index),
            (f"{file_id}.data", _compress(data, len(locations) * 8 * 2, order) if compressed else b"CUBEX.DATA" + data),
        ]
    with tarfile.open(str(path), "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return cube


def _compress(data: bytes, block: int, order: str) -> bytes:
    """ZCUBEX.DATA: int64 n, n (uncompressed position, compressed position,
    compressed size) triples, then the n zlib blocks."""
    blocks = [zlib.compress(data[i : i + block]) for i in range(0, len(data), block)]
    table, at = [], 0
    for i, b in enumerate(blocks):
        table += [i * block, at, len(b)]
        at += len(b)
    return b"ZCUBEX.DATA" + struct.pack(f"{order}q{len(table)}q", len(blocks), *table) + b"".join(blocks)


def _anchor(cube: Cube) -> str:
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<cube version="4.5">',
        '<attr key="CUBE_CT_AGGR" value="SUM"/>',
        '<attr key="Score-P::Version" value="8.4"/>',
        "<doc><mirrors><murl>http://www.scalasca.org/</murl></mirrors></doc>",
        '<metrics title="Metric tree">',
    ]

    def metric(i: int) -> None:
        m = cube.metrics[i]
        out.append(
            f'<metric id="{i}" type="{m.kind}" viztype="PLAIN" convertible="true" cacheable="true">'
            f"<disp_name>{m.name.title()}</disp_name><uniq_name>{m.name}</uniq_name><dtype>{m.dtype}</dtype>"
            f"<uom>{m.unit}</uom><url>@mirror@scorep_metrics.html#{m.name}</url><descr>{m.name} &amp; co"
            "</descr>" + (f"<cubepl>{m.expression}</cubepl>" if m.expression else "")
        )
        for k, child in enumerate(cube.metrics):
            if child.parent == m.name:
                metric(k)
        out.append("</metric>")

    for i, m in enumerate(cube.metrics):
        if m.parent is None:
            metric(i)
    out.append('</metrics><program title="Call tree">')
    for i, name in enumerate(REGIONS):
        paradigm = "mpi" if name.startswith("MPI_") else "compiler"
        out.append(
            f'<region id="{i}" mod="{name}.c" begin="{10 * i + 1}" end="{10 * i + 9}"><name>{name}</name>'
            f"<mangled_name>_Z{len(name)}{name}v</mangled_name><paradigm>{paradigm}</paradigm>"
            f"<role>function</role><url></url><descr></descr></region>"
        )
    kids: dict[int | None, list[int]] = {}
    for c, p in enumerate(cube.parents):
        kids.setdefault(p, []).append(c)

    ids = [sorted(FILE_IDS[: len(cube.parents)]).index(i) for i in FILE_IDS[: len(cube.parents)]]

    def cnode(c: int) -> None:
        line = f' line="{cube.lines[c]}" mod="{CALL_TREE[c][1]}.c"' if cube.lines[c] >= 0 else ""
        out.append(f'<cnode id="{ids[c]}"{line} calleeId="{REGIONS.index(CALL_TREE[c][1])}">')
        for k in kids.get(c, []):
            cnode(k)
        out.append("</cnode>")

    for r in kids.get(None, []):
        cnode(r)
    out.append('</program><system title="System tree">')
    out.append('<systemtreenode Id="0"><name>Linux</name><class>machine</class><descr></descr>')
    stn, group, loc = 1, 0, 0
    nodes = list(dict.fromkeys(cube.nodes))
    for node in nodes:
        out.append(f'<systemtreenode Id="{stn}"><name>{node}</name><class>node</class><descr></descr>')
        stn += 1
        here = [i for i, n in enumerate(cube.nodes) if n == node]
        for process in dict.fromkeys(cube.locations[i][0] for i in here):
            members = [i for i in here if cube.locations[i][0] == process]
            out.append(
                f'<locationgroup Id="{group}"><name>{process}</name><rank>{cube.locations[members[0]][1]}'
                "</rank><type>process</type>"
            )
            group += 1
            for i in members:
                assert i == loc, "locations must be listed in tree order"
                out.append(
                    f'<location Id="{loc}"><name>{cube.locations[i][2]}</name><rank>{cube.locations[i][3]}'
                    "</rank><type>thread</type></location>"
                )
                loc += 1
            out.append("</locationgroup>")
        out.append("</systemtreenode>")
    out.append("</systemtreenode></system></cube>")
    return "\n".join(out)


def assert_same_experiment(a, b) -> None:
    """Two psuite.model.experiment.Experiments hold the same dimensions, values
    (dtype included) and attributes (b may have more: a reader adds its
    source)."""
    assert [vars(m) for m in a.metrics] == [vars(m) for m in b.metrics]
    assert a.regions == b.regions and a.cnodes == b.cnodes and a.locations == b.locations
    assert set(a.values) == set(b.values)
    for name, v in a.values.items():
        assert v.dtype == b.values[name].dtype and np.array_equal(v, b.values[name]), name
    assert {k: v for k, v in a.attributes.items() if k != "source"}.items() <= b.attributes.items()
