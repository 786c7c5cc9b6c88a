"""psprocess diff, merge, mean, cut and compare against CubeLib's own
cube_diff, cube_merge, cube_mean, cube_cut and cube_cmp on real Score-P
profiles (tests/psprocess/data/scorep: mpi1, mpi2 of a 2-rank MPI
program, mpi3r of a 3-rank run, omp of a 2-thread OpenMP one).  Every
operation CubeLib ran there (commands.tsv: plain, -c and -C; 2 ranks
against 3; cuts with several roots and prunes) is run through the real
command with the same options, and the result, dumped by psprocess in
all four views (metric tree and call tree, inclusive and exclusive), is
compared per metric x call path x location and over all locations with
CubeLib's full-precision values of its own output (values/*.tsv.gz,
relative 1e-9).

CubeLib's values are located by the ids in its output's anchor.xml
(parsed here, not by psuite's reader): a call path is its regions' names
from the root (with its occurrence among equal paths), a location its
process name, process rank and thread rank.  Where CubeLib is documented
to be wrong (data/scorep/README.md: cube_mean divides integer metrics
per input in integers and halves max_time; cube_cut zeroes min_time
beyond the first location, and so does cube_mean), the test asserts
CubeLib's wrong value as that defect gives it and psuite's right one.
(No unsigned difference wraps in these cubes: no value of values/diff*
reaches 2**63, so no such case is allowed for.)"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from tests.psprocess.cubelib_reference import DATA, VIEWS, Anchor, anchor, close, cubelib_values, dump

Point = tuple[str, str, str, tuple, tuple | str]  # metric tree, call tree, metric, call path, location or "all"


def psprocess(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONWARNINGS": "error::RuntimeWarning"}
    return subprocess.run([sys.executable, "-m", "psuite.psprocess", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def commands() -> dict[str, list[str]]:
    """commands.tsv's successful cube_diff/merge/mean/cut rows: output name -> the command's words."""
    out = {}
    for line in (DATA / "commands.tsv").read_text().splitlines()[1:]:
        output, status, command = line.split("\t")
        words = command.split()
        # summary/summary-cut's input, CubeLib's example summary.cubex, is not here
        if status == "0" and not output.startswith("summary/") and words[0] in (
                "cube_diff", "cube_merge", "cube_mean", "cube_cut"):
            out[output.removesuffix(".cubex")] = words
    return out


COMMANDS = commands()


def run_like_cubelib(name: str, tmp_path: Path) -> Path:
    """CubeLib's command for NAME.cubex, run as psprocess's: the same subcommand, options and inputs."""
    words = COMMANDS[name]
    args = [words[0].removeprefix("cube_")]
    rest = iter(words[1:])
    for w in rest:
        if w == "-o":
            next(rest)
        elif w.endswith(".cubex"):
            args.append(str(DATA / w))
        else:
            args.append(w)
    out = tmp_path / "out.cubex"
    p = psprocess(*args, "-o", str(out), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    return out


def keyed_cubelib(name: str) -> tuple[dict[Point, float], Anchor]:
    """CubeLib's values of NAME.cubex keyed by call path and location (0 where values/ has no row)."""
    a = anchor(DATA / f"{name}.cubex")
    raw = cubelib_values(name)
    paths = dict(zip(a.cnodes, a.paths, strict=True))
    locs = {str(i): k for i, k in zip(a.locations, a.location_keys, strict=True)}
    out: dict[Point, float] = {}
    for x, z in VIEWS:
        for m in a.metrics:
            for c in a.cnodes:
                for loc in [*locs, "all"]:
                    out[(x, z, m, paths[c], locs.get(loc, "all"))] = raw.get((x, z, m, c, loc), 0.0)
    return out, a


ROOTS = "[roots]"  # psuite writes a cut with several roots under one added call path of this name


def keyed_psuite(path: Path, metrics: list[str]) -> dict[Point, float]:
    """psprocess dump of PATH (every view, per location and over all), keyed as keyed_cubelib's; the ids from
    the file's own anchor.xml.  A cut with several roots: CubeLib writes the roots side by side; psuite's file
    has them under an added call path, [roots], which its reader takes away again (psprocess dump lists the
    roots side by side, as CubeLib's file has them): left out of the anchor's paths here too."""
    a = anchor(path)
    paths = a.paths
    if paths[0][0] == (ROOTS,):
        assert sum(p[0] == (ROOTS,) for p in paths) == 1 and all(p[0][0] == ROOTS for p in paths)
        paths = [(names[1:], n) for names, n in paths[1:]]
    out: dict[Point, float] = {}
    for x, z in VIEWS:
        for aggr in (False, True):
            for m, block in zip(metrics, dump(path, metrics, x, z, aggr), strict=True):
                assert {c for c, _ in block} == set(range(len(paths))), m
                for (c, t), v in block.items():
                    out[(x, z, m, paths[c], "all" if t == "aggr" else a.location_keys[t])] = v
    return out


def floor(theirs: dict[Point, float], key: Point, name: str) -> float:
    """The absolute floor below which a difference counts as 0: none where both sides add the same stored
    numbers; where a subtraction is involved (diff, the exclusive views: a value less its callees' or its
    child metrics') a result near 0 is rounding noise of the operands, 1e-12 of the metric's largest."""
    if not (name.startswith("diff") or "excl" in key[:2]):
        return 0.0
    return 1e-12 * max(abs(v) for k, v in theirs.items() if k[:3] == key[:3])


def inputs(name: str) -> list[dict[Point, float]]:
    return [keyed_cubelib(w.removesuffix(".cubex"))[0] for w in COMMANDS[name] if w.endswith(".cubex")
            and w != f"{name}.cubex"]


def defect(name: str, key: Point, ours: float, theirs: float, ins: list[dict[Point, float]],
           integers: set[str]) -> str | None:
    """Which documented CubeLib defect explains theirs != ours at KEY, checked against the inputs' values;
    None if none does."""
    metric = key[2]
    if name.startswith("cut") and metric == "min_time" and theirs == 0 and ours > 0:
        return "cut zeroes min_time"  # beyond the first location, so that the least over all locations is 0
    if name.startswith("mean"):
        got = [i.get(key, 0.0) for i in ins]
        if metric in integers and theirs < ours and theirs == int(theirs) and close(ours, sum(got) / 2):
            # the exact integer arithmetic is checked on the stored values below
            return "mean truncates integers"
        if metric == "max_time" and close(theirs, max(got) / 2):
            return "mean halves max_time"
        if metric == "min_time" and close(theirs, min(got) / 2):
            return "mean halves min_time"
        if metric == "min_time" and theirs == 0 and ours > 0:
            return "mean zeroes min_time"  # beyond the first location (as cube_cut does), so over all too
    return None


def compare(name: str, ours: dict[Point, float], theirs: dict[Point, float],
            integers: set[str]) -> tuple[int, dict[str, int]]:
    assert {k[3:] for k in ours} == {k[3:] for k in theirs}, "call paths or locations differ"
    assert {k[2] for k in ours} == {k[2] for k in theirs}, "metrics differ"
    ins = inputs(name) if name.startswith("mean") else []
    defects: dict[str, int] = {}
    bad = []
    for key, y in theirs.items():
        x = ours[key]
        if close(x, y, floor(theirs, key, name)):
            continue
        why = defect(name, key, x, y, ins, integers)
        if why:
            defects[why] = defects.get(why, 0) + 1
        else:
            bad.append((key, x, y))
    assert not bad, f"{len(bad)} of {len(theirs)} values differ (point, psuite, CubeLib), first {bad[:3]}"
    return len(theirs), defects


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_operation_equals_cubelib(tmp_path, name):
    theirs, a = keyed_cubelib(name)
    ours = keyed_psuite(run_like_cubelib(name, tmp_path), a.metrics)
    n, defects = compare(name, ours, theirs, a.integers)
    assert n == 4 * len(a.metrics) * len(a.cnodes) * (len(a.locations) + 1)
    if name.startswith("mean"):
        # cube_mean halves max_time (and min_time) instead of taking the mean: every point where the runs differ
        assert defects.get("mean halves max_time", 0) > 0, defects
        assert defects.get("mean truncates integers", 0) > 0, defects
        assert defects.get("mean zeroes min_time", 0) > 0, defects
    if name.startswith("cut") and not name.startswith("cut-omp"):
        assert defects.get("cut zeroes min_time", 0) > 0, defects
    assert set(defects) <= {"cut zeroes min_time", "mean halves max_time",
                            "mean halves min_time", "mean zeroes min_time", "mean truncates integers"}


@pytest.mark.parametrize("name", sorted(n for n in COMMANDS if n.startswith("mean")))
def test_mean_of_integers_is_the_plain_mean_where_cube_mean_truncates(tmp_path, name):
    """cube_mean divides an integer metric per input before adding, in integers: 1 visit in both runs gives 0.
    psuite: the mean of the inputs' values."""
    theirs, a = keyed_cubelib(name)
    ours = keyed_psuite(run_like_cubelib(name, tmp_path), ["visits"])
    one, two = inputs(name)
    truncated = 0
    for key, x in ours.items():
        assert close(x, (one.get(key, 0.0) + two.get(key, 0.0)) / 2), key
        if key[:2] == ("incl", "excl") and key[4] != "all":
            # CubeLib's stored value: each input's halved in integers, then added
            assert theirs[key] == one.get(key, 0.0) // 2 + two.get(key, 0.0) // 2, key
            truncated += theirs[key] != x
    assert truncated > 0


@pytest.mark.parametrize("pair,text", [(("mpi1", "mpi1"), "cmp-same"), (("mpi1", "mpi1-copy"), "cmp-copy"),
                                       (("mpi1", "mpi2"), "cmp-runs"), (("mpi1", "mpi3r"), "cmp-ranks"),
                                       (("omp", "omp"), "cmp-omp")])
def test_compare_gives_cube_cmp_verdicts(tmp_path, pair, text):
    """cube_cmp's verdict (text/cmp-*.txt and its exit status in commands.tsv) on the same pairs."""
    row = next(r.split("\t") for r in (DATA / "commands.tsv").read_text().splitlines() if r.startswith(
        f"text/{text}.txt\t"))
    printed = (DATA / "text" / f"{text}.txt").read_text()
    equal = "Experiments are equal." in printed
    assert equal == ("not equal" not in printed) and int(row[1]) == (0 if equal else 1)
    (tmp_path / "mpi1-copy.cubex").write_bytes((DATA / "mpi1.cubex").read_bytes())
    files = [str(tmp_path / "mpi1-copy.cubex") if n == "mpi1-copy" else str(DATA / f"{n}.cubex") for n in pair]
    p = psprocess("compare", *files, cwd=tmp_path)
    assert p.returncode == int(row[1]), p.stdout + p.stderr
    assert ("are equal" in p.stdout) == equal


def test_diff_of_max_time_is_the_greatest_of_a_and_minus_b(tmp_path):
    """cube_diff of a MAXDOUBLE metric: B negated, then the greatest of A
    and -B (CubeLib's MaxDoubleValue +=), not A - B."""
    ours = keyed_psuite(run_like_cubelib("diff", tmp_path), ["max_time", "min_time"])
    (a, shape), b = keyed_cubelib("mpi2"), keyed_cubelib("mpi1")[0]
    checked = 0
    for key, x in ours.items():
        if key[:2] == ("incl", "excl") and key[4] != "all":
            pick = max if key[2] == "max_time" else min
            assert close(x, pick(a[key], -b[key])), key
            checked += 1
    assert checked == 2 * len(shape.cnodes) * len(shape.locations)
    assert any(not close(ours[k], a[k] - b[k]) for k in ours if k[2] == "max_time")


def _nan_cube(path: Path) -> None:
    from psuite.formats.exporters import cube
    from psuite.model.experiment import Experiment, Location, Metric, Region

    e = Experiment(attributes={"source": "nan"})
    e.add_metric(Metric("time", unit="sec", dtype="DOUBLE"))
    e.add_cnode(e.add_region(Region("main", module="m.c")), None)
    e.locations.append(Location())
    e.zeros("time")[0, 0] = 1.0
    cube.write(e, str(path))
    # the value's 8 bytes replaced by a NaN's, in the tar member as written (uncompressed data only)
    raw = bytearray(path.read_bytes())
    one = np.float64(1.0).tobytes()
    at = raw.find(one)
    assert at >= 0, "the writer wrote no plain double 1.0 to replace"
    raw[at:at + 8] = np.float64(np.nan).tobytes()
    path.write_bytes(bytes(raw))


def test_byte_identical_cubes_holding_nan_compare_equal(tmp_path):
    """cube_cmp compares values; two copies of one file are equal, NaN or
    not.  If the reader refuses non-finite values, both are refused alike
    (exit 2, one line); never 'not equal'."""
    _nan_cube(tmp_path / "a.cubex")
    (tmp_path / "b.cubex").write_bytes((tmp_path / "a.cubex").read_bytes())
    p = psprocess("compare", "a.cubex", "b.cubex", cwd=tmp_path)
    if p.returncode == 2:
        assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    else:
        assert p.returncode == 0 and "are equal" in p.stdout, p.stdout + p.stderr


def test_compare_of_experiments_holding_nan_in_the_library():
    from psuite.analysis import algebra
    from psuite.model.experiment import Experiment, Location, Metric, Region

    def one(v: float) -> Experiment:
        e = Experiment()
        e.add_metric(Metric("time", dtype="DOUBLE"))
        e.add_cnode(e.add_region(Region("main")), None)
        e.locations.append(Location())
        e.zeros("time")[0, 0] = v
        return e

    assert algebra.compare(one(math.nan), one(math.nan)).equal
    assert not algebra.compare(one(math.nan), one(1.0)).equal
    assert algebra.compare(one(math.nan), one(math.nan), [algebra.Tolerance("time", relative=0.1)]).within


def region_names(path: Path) -> list[str]:
    with tarfile.open(path) as tar:
        root = ET.fromstring(tar.extractfile("anchor.xml").read())
    return [r.findtext("name") for r in root.iter("region")]


@pytest.mark.parametrize("name", sorted(n for n in COMMANDS if n.startswith("cut")))
def test_cut_keeps_the_regions_its_call_paths_call_as_cube_cut(tmp_path, name):
    """cube_cut writes the regions the kept call paths call, in the order the call tree meets them."""
    assert region_names(run_like_cubelib(name, tmp_path)) == region_names(DATA / f"{name}.cubex")
