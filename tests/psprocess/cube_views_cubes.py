"""Small CUBE 4 files built byte by byte (tarfile, struct) for the views'
tests: the CUBE user guide's example (2.1.2) and variations of it."""

from __future__ import annotations

import io
import struct
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

CALL_PATHS = 3  # main > [foo, bar]


@dataclass
class SmallMetric:
    """A metric of a small cube: its values per (call path, process), call
    paths main, foo, bar (exclusive along the call tree), or a CubePL
    expression (a POSTDERIVED metric, no data)."""

    name: str
    parent: int | None = None  # index in the list of metrics
    dtype: str = "DOUBLE"
    values: list[list[float]] = field(default_factory=list)
    expression: str = ""


def guide_cube(path: Path, values: tuple[float, float, float] = (4.0, 1.0, 1.0), processes: int = 2) -> None:
    """The CUBE user guide's example (2.1.2), as CubeLib writes it: Time >
    [User time, System time], main > [foo, bar], two processes of a
    thread each; every Time value 4, every User and System time value 1
    (set_sev stores values inclusive along the metric tree, exclusive
    along the call tree).  Other values and more processes on demand."""
    small_cube(path, [SmallMetric(name, parent, "FLOAT", [[v] * processes for _ in range(CALL_PATHS)])
                      for (name, parent), v in zip((("Time", None), ("User time", 0), ("System time", 0)),
                                                   values, strict=True)], processes)


def small_cube(path: Path, metrics: list[SmallMetric], processes: int = 2) -> None:
    """A cube with the guide's call tree and system tree (one thread per
    process) and these metrics; dense indexes, uncompressed data."""

    def metric(i: int) -> str:
        m = metrics[i]
        kids = "".join(metric(k) for k, c in enumerate(metrics) if c.parent == i)
        kind = "POSTDERIVED" if m.expression else "EXCLUSIVE"
        cubepl = f"<cubepl>{m.expression}</cubepl>" if m.expression else ""
        return (f'<metric id="{i}" type="{kind}"><disp_name>{m.name}</disp_name><uniq_name>{m.name}</uniq_name>'
                f"<dtype>{m.dtype}</dtype><uom>sec</uom><url></url><descr></descr>{cubepl}{kids}</metric>")

    regions = [("main", 21, 100), ("foo", 1, 10), ("bar", 11, 20)]
    anchor = "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>', '<cube version="4.0">',
        '<attr key="description" value="a simple example"/>',
        "<doc><mirrors></mirrors></doc>", "<metrics>",
        *(metric(i) for i, m in enumerate(metrics) if m.parent is None), "</metrics>", "<program>",
        *(f'<region id="{i}" mod="/ICL/CUBE/example.c" begin="{b}" end="{e}"><name>{n}</name><url></url>'
          f"<descr></descr></region>" for i, (n, b, e) in enumerate(regions)),
        '<cnode id="0" line="21" mod="/ICL/CUBE/example.c" calleeId="0">',
        '<cnode id="1" line="60" mod="/ICL/CUBE/example.c" calleeId="1"></cnode>',
        '<cnode id="2" line="80" mod="/ICL/CUBE/example.c" calleeId="2"></cnode>',
        "</cnode>", "</program>", "<system>",
        '<systemtreenode Id="0"><name>MSC</name><class>machine</class><descr></descr>',
        '<systemtreenode Id="1"><name>Athena</name><class>node</class><descr></descr>',
        *(f'<locationgroup Id="{p}"><name>Process {p}</name><rank>{p}</rank><type>process</type>'
          f'<location Id="{p}"><name>Thread {p}</name><rank>0</rank><type>thread</type></location>'
          "</locationgroup>" for p in range(processes)),
        "</systemtreenode></systemtreenode>", "</system>", "</cube>"])
    members = [("anchor.xml", anchor.encode())]
    for file_id, m in enumerate(metrics):  # a dense index: every call path, in order
        if m.expression:
            continue
        code = {"UINT64": "Q", "INT64": "q"}.get(m.dtype, "d")
        cells = [v for row in m.values for v in row]
        assert len(cells) == CALL_PATHS * processes
        members.append((f"{file_id}.index", b"CUBEX.INDEX" + struct.pack("<ihb", 1, 0, 3)))
        members.append((f"{file_id}.data", b"CUBEX.DATA" + struct.pack(f"<{len(cells)}{code}", *cells)))
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
