"""Odd and hostile CUBE files, built here with tarfile and zlib, read
through the real command (python -m psuite.psprocess dump): what CubeLib
reads is read (missing data files, its 18-byte index, its tar padding,
wrong tar checksums, every metric type), and what is damaged or hostile is
refused with one line on stderr and exit status 2, within a second and
100 MB (decompression bombs, non-finite values, trees nested too deep)."""

from __future__ import annotations

import gzip
import io
import os
import struct
import subprocess
import sys
import tarfile
import tempfile
import zlib
from pathlib import Path

import pytest

LIMIT_S, LIMIT_MB = 1.0, 100


def anchor(metrics: str, cnodes: int = 2, locations: int = 2, system: str = "") -> bytes:
    """A small anchor.xml: the given <metric> elements, a chain of call
    paths main > f1 > ..., locations in one process."""
    tree = "".join(f'<cnode id="{i}" calleeId="{i}">' for i in range(cnodes)) + "</cnode>" * cnodes
    regions = "".join(f'<region id="{i}" mod="m.c" begin="1" end="2"><name>f{i}</name></region>' for i in range(cnodes))
    locs = "".join(
        f'<location Id="{i}"><name>thread {i}</name><rank>{i}</rank><type>thread</type></location>'
        for i in range(locations)
    )
    system = system or (
        '<systemtreenode Id="0"><name>machine</name><class>machine</class>'
        '<locationgroup Id="0"><name>rank 0</name><rank>0</rank><type>process</type>'
        f"{locs}</locationgroup></systemtreenode>"
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<cube version="4.8"><attr key="CUBE_CT_AGGR" value="SUM"/>'
        f"<metrics>{metrics}</metrics><program>{regions}{tree}</program><system>{system}</system></cube>"
    ).encode()


def metric(mid: int, name: str, dtype: str = "DOUBLE", children: str = "", kind: str = "EXCLUSIVE") -> str:
    return (
        f'<metric id="{mid}" type="{kind}"><disp_name>{name}</disp_name><uniq_name>{name}</uniq_name>'
        f"<dtype>{dtype}</dtype><uom>occ</uom><descr></descr>{children}</metric>"
    )


def dense_index() -> bytes:
    return b"CUBEX.INDEX" + struct.pack("<ihb", 1, 0, 3)


def data(values: bytes) -> bytes:
    return b"CUBEX.DATA" + values


def doubles(*v: float) -> bytes:
    return struct.pack(f"<{len(v)}d", *v)


def write(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, blob in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return path


# The command runs under a small fresh Python that measures it: a child forked straight from pytest would
# count pytest's own pages (resident before its exec) in its peak memory.  Its time is CPU time (user and
# system), which a loaded machine does not stretch as it stretches wall time.
MEASURE = """
import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(p.pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss / 1024}")
"""


def psprocess(*args: str) -> tuple[subprocess.CompletedProcess, float, float]:
    """The command's result, its CPU time and its peak memory (MB, its
    own maximum resident set, from wait4)."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report")
        proc = subprocess.run(
            [sys.executable, "-c", MEASURE, report, sys.executable, "-m", "psuite.psprocess", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        with open(report) as f:
            code, elapsed, rss = f.read().split()
    proc.returncode = int(code)
    return proc, float(elapsed), float(rss)


def values(path: Path, *args: str) -> tuple[list[list[tuple[int, int, float]]], str]:
    proc, _, _ = psprocess("dump", "-f", "csv", *args, str(path))
    assert proc.returncode == 0, proc.stderr
    blocks = [
        [(int(c), int(t), float(v)) for c, t, v in (line.split(",") for line in block.splitlines())]
        for block in proc.stdout.strip().split("\n\n")
    ]
    return blocks, proc.stderr


def two_metrics(tmp_path: Path, name: str = "c.cubex") -> dict[str, bytes]:
    return {
        "anchor.xml": anchor(metric(0, "time") + metric(1, "visits", "UINT64")),
        "0.index": dense_index(),
        "0.data": data(doubles(1.5, 2.5, 3.5, 4.5)),
        "1.index": dense_index(),
        "1.data": data(struct.pack("<4Q", 1, 2, 3, 4)),
    }


# -- what CubeLib reads ------------------------------------------------------------
def test_metric_without_data_files_is_zeros(tmp_path):
    """Score-P writes no index or data for an all-zero metric; CubeLib reads zeros."""
    members = two_metrics(tmp_path)
    del members["1.index"], members["1.data"]
    blocks, err = values(write(tmp_path / "c.cubex", members))
    assert blocks[1] == [(0, 0, 0), (0, 1, 0), (1, 0, 0), (1, 1, 0)]
    assert blocks[0][3] == (1, 1, 4.5)


def test_cubelib_18_byte_index_of_an_all_zero_metric(tmp_path):
    members = two_metrics(tmp_path)
    members["1.index"] = b"CUBEX.INDEX" + struct.pack("<ihb", 1, 0, 1)  # sparse, no count: 18 bytes
    members["1.data"] = data(b"")
    assert len(members["1.index"]) == 18
    blocks, _ = values(write(tmp_path / "c.cubex", members))
    assert [v for _, _, v in blocks[1]] == [0, 0, 0, 0]


def test_sparse_index_zlib_data_and_big_endian(tmp_path):
    members = two_metrics(tmp_path)
    rows = struct.pack(">2d", 7.0, 8.0)  # one row (call path 1), big-endian
    members["0.index"] = b"CUBEX.INDEX" + struct.pack(">ihbi", 1, 0, 1, 1) + struct.pack(">i", 1)
    block = zlib.compress(rows)
    members["0.data"] = b"ZCUBEX.DATA" + struct.pack(">q", 1) + struct.pack(">3q", 0, 0, len(block)) + block
    members["1.index"] = b"CUBEX.INDEX" + struct.pack(">ihb", 1, 0, 3)
    members["1.data"] = data(struct.pack(">4Q", 1, 2, 3, 4))
    blocks, _ = values(write(tmp_path / "c.cubex", members))
    assert blocks[0] == [(0, 0, 0), (0, 1, 0), (1, 0, 7), (1, 1, 8)]
    assert blocks[1][3] == (1, 1, 4)


def test_wrong_tar_checksums_and_cubelib_padding_are_read(tmp_path):
    """CubeLib's TarReader reads a header's name and size and never its
    checksum (cubes with a wrong one are read by its tools); CubeLib and
    cubew pad a file whose size is a multiple of 512 with one more block."""
    members = two_metrics(tmp_path)
    members["0.data"] = data(doubles(*range(4)) + b"")  # 42 bytes
    path = write(tmp_path / "c.cubex", members)
    blob = bytearray(path.read_bytes())
    for at in range(0, len(blob), 512):  # every header's checksum wrong
        if blob[at : at + 5] not in (b"\0" * 5,) and blob[at + 257 : at + 262] == b"ustar":
            blob[at + 148 : at + 156] = b"000001\0 "
    path.write_bytes(bytes(blob))
    with pytest.raises(tarfile.ReadError):  # a strict tar reader refuses it
        tarfile.open(path).getmembers()
    blocks, _ = values(path)
    assert [v for _, _, v in blocks[0]] == [0, 1, 2, 3]
    # the CubeLib layout: a 512-byte member followed by a block of zeros before the next header
    padded = two_metrics(tmp_path)
    padded["anchor.xml"] = padded["anchor.xml"] + b" " * (1024 - len(padded["anchor.xml"]))
    raw = io.BytesIO()
    for name, member in padded.items():
        info = tarfile.TarInfo(name)
        info.size = len(member)
        raw.write(info.tobuf(tarfile.USTAR_FORMAT))
        raw.write(member + b"\0" * ((len(member) // 512 + 1) * 512 - len(member)))
    raw.write(b"\0" * 1024)
    (tmp_path / "p.cubex").write_bytes(raw.getvalue())
    blocks, _ = values(tmp_path / "p.cubex")
    assert blocks[1][2] == (1, 0, 3)


@pytest.mark.parametrize(
    "dtype, value, expected, said",
    [
        ("RATE", doubles(6.0, 2.0), 3.0, "RATE: shown as main value / duration"),
        ("COMPLEX", doubles(3.0, 4.0), 5.0, "COMPLEX: shown as its modulus"),
        ("TAU_ATOMIC", struct.pack("<I4d", 4, 1.0, 5.0, 10.0, 30.0), 2.5, "TAU_ATOMIC: shown as its mean"),
        ("HISTOGRAM(3)", doubles(0.0, 9.0, 1.0, 2.0, 3.0), 6.0, "HISTOGRAM: shown as the sum of its 3 bins"),
        ("NDOUBLES(2)", doubles(1.25, 2.0), 3.25, "NDOUBLES: shown as the sum of its 2 numbers"),
    ],
)
def test_every_metric_type_is_carried_and_said(tmp_path, dtype, value, expected, said):
    """What CubeLib's Value::getDouble() gives, which cube_dump prints."""
    members = two_metrics(tmp_path)
    members["anchor.xml"] = anchor(metric(0, "time") + metric(1, "odd", dtype))
    members["1.data"] = data(value * 4)
    blocks, err = values(write(tmp_path / "c.cubex", members))
    assert [v for _, _, v in blocks[1]] == [expected] * 4
    assert f"metric 'odd' is {said}" in err and err.count("'odd'") == 1, err


def test_integer_widths_and_scale_func(tmp_path):
    members = two_metrics(tmp_path)
    members["anchor.xml"] = anchor(
        metric(0, "a", "INT8") + metric(1, "b", "UINT16") + metric(2, "c", "INT32") + metric(3, "s", "SCALE_FUNC")
    )
    members["0.data"] = data(struct.pack("<4b", -1, 2, -3, 4))
    members["1.data"] = data(struct.pack("<4H", 65535, 1, 2, 3))
    members["2.index"], members["2.data"] = dense_index(), data(struct.pack("<4i", -(2**31), 0, 1, 2**31 - 1))
    blocks, err = values(write(tmp_path / "c.cubex", members))
    assert [v for _, _, v in blocks[0]] == [-1, 2, -3, 4]
    assert [v for _, _, v in blocks[1]] == [65535, 1, 2, 3]
    assert [v for _, _, v in blocks[2]] == [-(2**31), 0, 1, 2**31 - 1]
    assert [v for _, _, v in blocks[3]] == [0, 0, 0, 0]
    assert "metric 's' is SCALE_FUNC: shown as 0" in err


def test_deep_metric_and_system_trees_are_read(tmp_path):
    """1,500 levels: a recursive program's call tree can be that deep."""
    deep = ""
    for i in reversed(range(1, 1500)):
        deep = metric(i, f"m{i}", "DOUBLE", deep)
    members = two_metrics(tmp_path)
    members["anchor.xml"] = anchor(metric(0, "time", "DOUBLE", deep), cnodes=1500)
    members["0.data"] = data(doubles(*range(3000)))
    del members["1.index"], members["1.data"]
    proc, _, _ = psprocess("dump", "-m", "time", "-c", "1499", "-f", "csv", str(write(tmp_path / "d.cubex", members)))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1499,0,2998", "1499,1,2999"]


# -- what is refused: one line, exit 2, well within a second and 100 MB -------------
def bounded(path: Path, *words: str) -> None:
    proc, elapsed, rss = psprocess("dump", str(path))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for w in words:
        assert w in lines[0], lines[0]
    print(f"{path.name}: {elapsed:.2f} s, {rss:.0f} MB")
    assert elapsed < LIMIT_S and rss < LIMIT_MB, (elapsed, rss)


def test_zlib_bomb_is_refused_at_once(tmp_path):
    """A 1 MB cube whose one zlib block inflates to 1 GiB."""
    z = zlib.compressobj(9)
    chunk = b"\0" * (64 << 20)
    block = b"".join(z.compress(chunk) for _ in range(16)) + z.flush()
    members = two_metrics(tmp_path)
    members["0.data"] = b"ZCUBEX.DATA" + struct.pack("<q", 1) + struct.pack("<3q", 0, 0, len(block)) + block
    path = write(tmp_path / "bomb.cubex", members)
    assert path.stat().st_size < 1.5e6
    bounded(path, "inflates beyond", "0.data")


def test_gzip_anchor_bomb_is_refused_at_once(tmp_path):
    """A 0.5 MB gzip anchor.xml of 512 MiB."""
    members = two_metrics(tmp_path)
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9) as g:
        g.write(members["anchor.xml"][:-7])
        pad = b" " * (64 << 20)
        for _ in range(8):
            g.write(pad)
        g.write(b"</cube>")
    members["anchor.xml"] = raw.getvalue()
    path = write(tmp_path / "bomb.cubex", members)
    assert path.stat().st_size < 1e6
    bounded(path, "anchor.xml inflates beyond")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_values_are_refused(tmp_path, bad):
    members = two_metrics(tmp_path)
    members["0.data"] = data(doubles(1.0, bad, 2.0, 3.0))
    bounded(write(tmp_path / "nan.cubex", members), "metric 'time' holds a non-finite value")


@pytest.mark.parametrize("where", ["metric", "cnode", "system"])
def test_trees_nested_too_deep_are_refused(tmp_path, where):
    members = two_metrics(tmp_path)
    del members["1.index"], members["1.data"]
    n = 3000
    if where == "metric":
        deep = ""
        for i in reversed(range(2, n)):
            deep = metric(i, f"m{i}", "DOUBLE", deep)
        members["anchor.xml"] = anchor(metric(0, "time", "DOUBLE", deep))
    elif where == "cnode":
        members["anchor.xml"] = anchor(metric(0, "time"), cnodes=n)
    else:
        nodes = "".join(f'<systemtreenode Id="{i}"><name>n{i}</name>' for i in range(n))
        members["anchor.xml"] = anchor(
            metric(0, "time"),
            system=nodes + '<locationgroup Id="0"><name>p</name><rank>0</rank>'
            '<location Id="0"><name>t</name><rank>0</rank></location>'
            '<location Id="1"><name>t</name><rank>1</rank></location></locationgroup>'
            + "</systemtreenode>" * n,
        )
    bounded(write(tmp_path / "deep.cubex", members), "deeper than 2,048 levels")


def test_damaged_archives_are_refused(tmp_path):
    good = write(tmp_path / "good.cubex", two_metrics(tmp_path)).read_bytes()
    (tmp_path / "cut.cubex").write_bytes(good[:1536])  # ends after the anchor: no end-of-archive blocks
    bounded(tmp_path / "cut.cubex", "cut short")
    members = two_metrics(tmp_path)
    members["0.data"] = data(doubles(1.0))  # fewer values than the index says
    bounded(write(tmp_path / "short.cubex", members), "0.data holds 8 bytes of values")
    members = two_metrics(tmp_path)
    members["0.index"] = b"CUBEX.INDEX" + struct.pack("<ihbi", 1, 0, 1, 5) + struct.pack("<5i", 0, 1, 2, 3, 4)
    bounded(write(tmp_path / "index.cubex", members), "index file says 5 rows")


def test_derived_metrics_on_a_left_out_one_are_left_out_too(tmp_path):
    """A derived metric naming one that is left out (here: CubePL psuite
    refuses) is left out as well, said, not a traceback.  (A metric the
    file lacks is 0, as in CubeLib: not a reason.)"""
    members = two_metrics(tmp_path)

    def derived(mid: int, name: str, cubepl: str) -> str:
        return metric(mid, name, kind="POSTDERIVED").replace("</metric>", f"<cubepl>{cubepl}</cubepl></metric>")

    members["anchor.xml"] = anchor(
        metric(0, "time")
        + metric(1, "visits", "UINT64")
        + derived(2, "a", "arg1 + metric::nosuch()")
        + derived(3, "b", "metric::a() * 2")
        + derived(4, "c", "metric::b() + metric::time()")
    )
    blocks, err = values(write(tmp_path / "c.cubex", members))
    assert len(blocks) == 2 and [v for _, _, v in blocks[0]] == [1.5, 2.5, 3.5, 4.5]
    assert "derived metrics psuite cannot evaluate are left out: a, b, c" in err, err
