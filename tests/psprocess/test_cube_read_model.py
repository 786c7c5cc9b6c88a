"""Cubes made by the real CubeLib for what the Score-P profiles do not hold
(data/scorep/model, made by make-model.sh with the values libcube4 computes
for them, model/NAME.tsv.gz): TAU_ATOMIC and COMPLEX metrics, shown as
CubeLib shows them (the mean of the aggregated counts and sums, the modulus
of the summed parts, along both trees), a RATE one; derived
metrics with CubePL aggregation operators (<cubeplaggr>: plus along the
call tree, minus for exclusive values, aggr over the locations); derived
metrics whose CubePL loops over a metric's value or asks for metric::fixed::,
which psuite keeps and evaluates as CubeLib does.  Through the real command:
psprocess dump, per metric, call path and location (and over all
locations), every view of the metric and call trees, relative 1e-9."""

from __future__ import annotations

import gzip
import io
import math
import re
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from .cubelib_reference import VIEWS, dump, psprocess

MODEL = Path(__file__).parent / "data" / "scorep" / "model"
MODEL_CUBES = sorted(p.stem for p in MODEL.glob("*.cubex"))


@dataclass
class Anchor:
    cnodes: list[int]  # CubeLib's cnode ids in depth-first order (psuite's call path index)
    locations: list[int]  # location ids in system-tree order (psuite's location index)
    derived: set[str]


def anchor(path: Path) -> Anchor:
    """What the tests need of an anchor.xml, read with ElementTree after
    quoting the two attributes CubeLib writes unquoted (cubeplaggrtype=,
    rowwise=), as no XML parser reads them."""
    with tarfile.open(path) as tar:
        xml = tar.extractfile("anchor.xml").read()
    xml = re.sub(rb"(cubeplaggrtype|rowwise)=([a-z]+)>", rb'\1="\2">', xml)
    root = ET.fromstring(xml)
    return Anchor([int(c.get("id")) for c in root.find("program").iter("cnode")],
                  [int(loc.get("Id")) for loc in root.iter("location")],
                  {m.findtext("uniq_name") for m in root.iter("metric") if "DERIVED" in (m.get("type") or "")})


def values(name: str) -> dict[tuple[str, str, str, int, str], float]:
    with gzip.open(MODEL / f"{name}.tsv.gz", "rt") as f:
        lines = f.read().splitlines()
    assert lines[0].split("\t") == ["metric_tree", "call_tree", "metric", "cnode", "location", "value"]
    out = {}
    for line in lines[1:]:
        x, z, metric, cnode, loc, value = line.split("\t")
        out[(x, z, metric, int(cnode), loc)] = float(value)
    return out



def edited(src: Path, dst: Path, old: bytes, new: bytes) -> None:
    """src with `old` replaced by `new` in its anchor.xml (which must hold it)."""
    with tarfile.open(src) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
    with tarfile.open(dst, "w", format=tarfile.USTAR_FORMAT) as out:
        for m, data in members:
            if m.name == "anchor.xml":
                assert old in data
                data = data.replace(old, new)
                m.size = len(data)
            out.addfile(m, io.BytesIO(data))


def test_the_model_cubes_are_there():
    assert set(MODEL_CUBES) == {"tau", "aggr", "composite", "derive-while", "derive-fixed", "derive-ticks"}


@pytest.mark.parametrize("name, metrics", [
    ("tau", ["msgsize", "time"]),
    ("aggr", ["max_like", "minus_like", "per_visit"]),
    ("composite", ["bandwidth", "amplitude"]),  # RATE: CubeLib sums the rates; COMPLEX: the modulus of sums
    ("derive-while", ["visit_digits", "visits"]),
    ("derive-fixed", ["time_share", "time"]),
    ("derive-ticks", ["ticks"]),
])
@pytest.mark.parametrize("metric_tree, call_tree", VIEWS)
def test_values_equal_cubelib(name, metrics, metric_tree, call_tree):
    path = MODEL / f"{name}.cubex"
    a = anchor(path)
    want = values(name)
    compared = 0
    for aggr in (False, True):
        for metric, got in zip(metrics, dump(path, metrics, metric_tree, call_tree, aggr), strict=True):
            assert got, metric
            for (c, t), v in got.items():
                loc = "all" if t == "aggr" else str(a.locations[t])
                w = want.get((metric_tree, call_tree, metric, a.cnodes[c], loc), 0.0)
                assert math.isclose(v, w, rel_tol=1e-9, abs_tol=1e-300), (metric, c, t, v, w)
                compared += 1
    assert compared > 0


def test_tau_atomic_said_once_and_written_as_cubelib_evaluates_it(tmp_path):
    p = psprocess("cut", "-r", "main", str(MODEL / "tau.cubex"), "-o", "out.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    said = [line for line in p.stderr.splitlines() if "TAU_ATOMIC" in line]
    assert len(said) == 1 and "msgsize_count" in said[0] and "msgsize_sum" in said[0], p.stderr
    # written as a POSTDERIVED metric over the counts and sums: the same values read back
    a = anchor(tmp_path / "out.cubex")
    assert "msgsize" in a.derived
    for aggr in (False, True):
        again = dump(tmp_path / "out.cubex", ["msgsize"], "incl", "incl", aggr)[0]
        first = dump(MODEL / "tau.cubex", ["msgsize"], "incl", "incl", aggr)[0]
        assert again == first


@pytest.mark.parametrize("name, metric", [("derive-while", "visit_digits"), ("derive-fixed", "time_share"),
                                          ("derive-ticks", "ticks")])
def test_derived_metrics_kept(name, metric):
    """Evaluability is decided by parsing: nothing is left out of these."""
    p = psprocess("dump", str(MODEL / f"{name}.cubex"), "-f", "csv", "-m", metric, "-c", "0")
    assert p.returncode == 0, p.stderr
    assert "left out" not in p.stderr
    assert p.stdout.strip()


def test_what_psuite_cannot_evaluate_is_still_left_out(tmp_path):
    """A derived metric psuite's CubePL does not evaluate (metric::call::)
    is left out with one line on stderr; the rest of the cube is read."""
    edited(MODEL / "derive-fixed.cubex", tmp_path / "call.cubex", b"metric::time() / metric::fixed::time()",
           b"metric::call::time(i)")
    p = psprocess("dump", "call.cubex", "-f", "csv", "-m", "time", "-c", "0", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    said = [line for line in p.stderr.splitlines() if "left out" in line]
    assert len(said) == 1 and "time_share" in said[0], p.stderr
    assert "Traceback" not in p.stderr


def test_aggr_operator_over_the_locations():
    """Experiment.aggregate gives CubeLib's aggregates over the locations:
    max_like's "aggr" operator (the greatest) folded over the locations,
    then its "plus" along the call tree for the inclusive values;
    minus_like's exclusive aggregate its inclusive one less twice its
    children's; a metric without operators summed."""
    from psuite.formats.readers import cube as reader

    exp = reader.read(str(MODEL / "aggr.cubex"))
    a = anchor(MODEL / "aggr.cubex")
    want = values("aggr")
    for metric in ("max_like", "minus_like", "time"):
        for call_tree in ("excl", "incl"):
            got = exp.aggregate(metric, call_tree == "incl")
            for c, v in enumerate(got.tolist()):
                w = want.get(("incl", call_tree, metric, a.cnodes[c], "all"), 0.0)
                assert math.isclose(v, w, rel_tol=1e-9), (metric, call_tree, c, v, w)
    some = exp.aggregate("max_like", False, [0, 2])
    assert np.allclose(some, np.maximum(0, exp.exclusive("max_like")[:, [0, 2]].max(axis=1)))


def test_aggregation_operators_written_as_cubelib_reads_them(tmp_path):
    p = psprocess("cut", "-r", "main", str(MODEL / "aggr.cubex"), "-o", "out.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    with tarfile.open(tmp_path / "out.cubex") as tar:
        xml = tar.extractfile("anchor.xml").read().decode()
    # unquoted: CubeLib's scanner reads this form only (and writes it)
    assert xml.count("<cubeplaggr cubeplaggrtype=plus>max(arg1, arg2)</cubeplaggr>") == 1
    assert xml.count("<cubeplaggr cubeplaggrtype=minus>arg1 - 2 * arg2</cubeplaggr>") == 1
    assert xml.count("<cubeplaggr cubeplaggrtype=aggr>max(arg1, arg2)</cubeplaggr>") == 2
    for metric_tree, call_tree in VIEWS:
        again = dump(tmp_path / "out.cubex", ["max_like", "minus_like"], metric_tree, call_tree, False)
        first = dump(MODEL / "aggr.cubex", ["max_like", "minus_like"], metric_tree, call_tree, False)
        assert again == first


@pytest.mark.parametrize("operator", ["metric::time()", "arg3 + 1", "max(arg1"])
def test_a_bad_aggregation_operator_leaves_its_metric_out(tmp_path, operator):
    with tarfile.open(MODEL / "aggr.cubex") as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
    with tarfile.open(tmp_path / "bad.cubex", "w", format=tarfile.USTAR_FORMAT) as out:
        for m, data in members:
            if m.name == "anchor.xml":
                data = data.replace(b"arg1 - 2 * arg2", operator.encode())
                m.size = len(data)
            out.addfile(m, io.BytesIO(data))
    p = psprocess("dump", "bad.cubex", "-f", "csv", "-m", "max_like", "-c", "0", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    said = [line for line in p.stderr.splitlines() if "left out" in line]
    assert len(said) == 1 and "minus_like" in said[0], p.stderr


def test_unquoted_rowwise_read(tmp_path):
    """<cubepl rowwise=false>, as CubeLib writes a metric not computed row by
    row (unquoted, like cubeplaggrtype=): read, the metric evaluated."""
    edited(MODEL / "aggr.cubex", tmp_path / "rowwise.cubex", b"<cubepl>metric::time(e)</cubepl>",
           b"<cubepl rowwise=false>metric::time(e)</cubepl>")
    for name in ("rowwise.cubex", str(MODEL / "aggr.cubex")):
        p = psprocess("dump", name, "-f", "csv", "-m", "max_like", "-c", "all", "-x", "incl", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert "left out" not in p.stderr
    first = dump(MODEL / "aggr.cubex", ["max_like"], "incl", "incl", False)
    assert dump(tmp_path / "rowwise.cubex", ["max_like"], "incl", "incl", False) == first


def test_a_looping_aggregation_operator_is_refused_at_once(tmp_path):
    """An operator runs once per pair of values folded: one that loops is
    stopped after a few statements, one line on stderr, exit 2."""
    import time

    with tarfile.open(MODEL / "aggr.cubex") as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
    loop = b"{ ${i} = 0; while (${i} &lt; 1000000000) { ${i} = ${i} + 1; }; return arg1 + arg2; }"
    with tarfile.open(tmp_path / "loop.cubex", "w", format=tarfile.USTAR_FORMAT) as out:
        for m, data in members:
            if m.name == "anchor.xml":
                data = data.replace(b"<cubeplaggr cubeplaggrtype=plus>max(arg1, arg2)",
                                    b"<cubeplaggr cubeplaggrtype=plus>" + loop)
                assert loop in data
                m.size = len(data)
            out.addfile(m, io.BytesIO(data))
    start = time.monotonic()
    p = psprocess("dump", "loop.cubex", "-f", "csv", "-m", "max_like", "-c", "all", "-x", "incl", cwd=tmp_path)
    assert time.monotonic() - start < 20
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "aggregation operator" in lines[0] and "Traceback" not in p.stderr, p.stderr
