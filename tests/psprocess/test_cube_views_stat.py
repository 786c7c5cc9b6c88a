"""psprocess stat against CubeLib's cube_stat on the real cubes under
data/scorep: the top-N flat profile (cube_stat -t N: calls, exclusive and
inclusive time, by exclusive time) and the statistics across locations
per metric and routine (cube_stat -%), number by number; and where
cube_stat is wrong or refuses, what psprocess does instead: a variance of
0 for identical values (cube_stat: -1.38778e-17), a flat profile of a cube
without Score-P's visits (cube_stat -t: "Cannot find metric 'Visits'").

The cube_stat outputs below were printed by CubeLib 4.8.2's cube_stat on
these files (the commands above each); every run of psprocess goes
through the real command."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.psprocess.cube_views_cubes import guide_cube

DATA = Path(__file__).parent / "data" / "scorep"

# cube_stat -t 100 -m bytes_sent mpi1.cubex
MPI1_TOP = """\
cube::Region,Number of Calls,Exclusive Time,Inclusive Time,bytes_sent
"MPI_Init",2,0.479669,0.479669,0
"work",2,0.0337443,0.0337443,0
"MPI_Allreduce",2,0.0141470,0.0141470,32
"MPI_Finalize",2,0.00226911,0.00226911,0
"mpi_work",2,0.000253133,0.530375,0
"main",2,0.000220811,0.530122,0
"MPI_Sendrecv",2,4.49674e-05,4.49674e-05,16
"MPI_Barrier",2,1.48891e-05,1.48891e-05,0
"MPI_Comm_rank",2,9.61192e-06,9.61192e-06,0
"MPI_Comm_size",2,2.41559e-06,2.41559e-06,0
"""

# cube_stat -t 100 omp.cubex
OMP_TOP = """\
cube::Region,Number of Calls,Exclusive Time,Inclusive Time
"main",1,0.0156285,0.0395739
"work",2,0.0122569,0.0122569
"!$omp implicit barrier @omp_work.c:21",2,0.00642602,0.00642602
"!$omp barrier @omp_work.c:20",2,0.00522674,0.00522674
"omp_work",1,0.00155023,0.0411241
"!$omp parallel @omp_work.c:17",2,3.57325e-05,0.0239454
"""

# cube_stat -% -m time,visits,bytes_sent mpi1.cubex
MPI1_STAT = """\
cube::Metric,Routine,Count,Sum,Mean,Variance,Minimum,Quartile 25,Median,Quartile 75,Maximum
time,INCL(mpi_work),2,0.530375,0.265187,1.43250e-06,0.264341,,0.265187,,0.266034
time,EXCL(mpi_work),2,0.000253133,0.000126567,3.65575e-10,0.000113047,,0.000126567,,0.000140086
time,INCL(main),2,0.530122,0.265061,1.38709e-06,0.264228,,0.265061,,0.265894

visits,INCL(mpi_work),2,20,10.0000,0.00000,10,,10.0000,,10
visits,EXCL(mpi_work),2,2,1.00000,0.00000,1,,1.00000,,1
visits,INCL(main),2,18,9.00000,0.00000,9,,9.00000,,9

bytes_sent,INCL(mpi_work),2,48,24.0000,0.00000,24,,24.0000,,24
bytes_sent,EXCL(mpi_work),2,0,0.00000,0.00000,0,,0.00000,,0
bytes_sent,INCL(main),2,48,24.0000,0.00000,24,,24.0000,,24

"""

# cube_stat -% -m time,visits omp.cubex
OMP_STAT = """\
cube::Metric,Routine,Count,Sum,Mean,Variance,Minimum,Quartile 25,Median,Quartile 75,Maximum
time,INCL(omp_work),2,0.0411241,0.0205621,4.23889e-05,0.0159583,,0.0205621,,0.0251658
time,EXCL(omp_work),2,0.00155023,0.000775117,1.20161e-06,0.00000,,0.000775117,,0.00155023
time,INCL(main),2,0.0395739,0.0197869,2.93167e-05,0.0159583,,0.0197869,,0.0236156

visits,INCL(omp_work),2,10,5.00000,2.00000,4,,5.00000,,6
visits,EXCL(omp_work),2,1,0.500000,0.500000,0,,0.500000,,1
visits,INCL(main),2,9,4.50000,0.500000,4,,4.50000,,5

"""


def psprocess(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "psuite.psprocess", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def close(value: float, printed: str) -> bool:
    """value as cube_stat prints it: six significant digits."""
    want = float(printed)
    return abs(value - want) <= 5e-6 * abs(want) + 1e-15


@pytest.mark.parametrize(("cube", "extra", "reference"), [
    ("mpi1", ["-m", "bytes_sent"], MPI1_TOP),
    ("omp", [], OMP_TOP),
])
def test_top_equals_cube_stat(cube, extra, reference):
    proc = psprocess("stat", str(DATA / f"{cube}.cubex"), "-t", "100", *extra, "-f", "csv")
    assert proc.returncode == 0, proc.stderr
    got = list(csv.reader(io.StringIO(proc.stdout)))
    want = list(csv.reader(io.StringIO(reference)))
    assert got[0] == ["region", "calls", "exclusive time", "inclusive time", *extra[1:]]
    assert len(got) == len(want)  # the same functions: every one called
    for g, w in zip(got[1:], want[1:], strict=True):
        assert g[0] == w[0]  # in cube_stat's order: by exclusive time
        assert int(g[1]) == int(w[1])
        assert all(close(float(a), b) for a, b in zip(g[2:], w[2:], strict=True)), (g, w)
    top3 = psprocess("stat", str(DATA / f"{cube}.cubex"), "-t", "3")
    assert top3.returncode == 0, top3.stderr
    assert [line.split()[0] for line in top3.stdout.splitlines()[1:]] == [w[0].split()[0] for w in want[1:4]]


def stat_rows(reference: str) -> dict[tuple[str, str], list[str]]:
    """cube_stat -%'s csv: (metric, routine label) -> the statistics."""
    out = {}
    for row in csv.reader(io.StringIO(reference)):
        if row and row[0] != "cube::Metric":
            out[(row[0], row[1])] = row[2:]
    return out


@pytest.mark.parametrize(("cube", "metrics", "reference"), [
    ("mpi1", "time,visits,bytes_sent", MPI1_STAT),
    ("omp", "time,visits", OMP_STAT),
])
def test_statistics_equal_cube_stat(cube, metrics, reference):
    """count, sum, mean, variance, minimum, median and maximum across the
    locations, for the roots: inclusive, exclusive, and each callee's
    inclusive value (cube_stat's INCL(name) or LEAF(name) row)."""
    want = stat_rows(reference)
    proc = psprocess("stat", str(DATA / f"{cube}.cubex"), "-m", metrics, "-f", "csv")
    assert proc.returncode == 0, proc.stderr
    seen = set()
    for r in csv.DictReader(io.StringIO(proc.stdout)):
        name = r["routine"] if r["view"] != "callee" else r["callee"]
        label = {"incl": "INCL", "excl": "EXCL"}.get(r["view"])
        key = (r["metric"], f"{label}({name})") if label else next(
            k for k in ((r["metric"], f"INCL({name})"), (r["metric"], f"LEAF({name})")) if k in want)
        w = want[key]
        seen.add(key)
        assert int(r["count"]) == int(w[0])
        for stat, printed in zip(("sum", "mean", "variance", "minimum", "median", "maximum"),
                                 (w[1], w[2], w[3], w[4], w[6], w[8]), strict=True):
            assert close(float(r[stat]), printed), (key, stat, r[stat], printed)
    assert seen == set(want)


def test_identical_values_have_no_variance(tmp_path):
    """Five locations each 0.1: cube_stat's one-pass variance gives
    -1.38778e-17 for main's inclusive time (and 1.73472e-18 for its
    exclusive time); the variance is 0."""
    guide_cube(tmp_path / "tenth.cubex", (0.1, 0.1, 0.1), processes=5)
    proc = psprocess("stat", "tenth.cubex", "-m", "Time", "-f", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    assert len(rows) == 4 and all(r["count"] == 5 for r in rows)
    assert [r["variance"] for r in rows] == [0, 0, 0, 0]
    assert [r["minimum"] == r["maximum"] == r["median"] for r in rows] == [True] * 4


def test_top_of_a_cube_without_scorep_metrics(tmp_path):
    """cube_stat -t refuses a cube without Score-P's visits metric; psprocess
    gives the flat profile of the metrics it has, by the first one's
    exclusive value."""
    guide_cube(tmp_path / "example.cubex")
    proc = psprocess("stat", "example.cubex", "-t", "2", "-f", "csv", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert [r["region"] for r in rows] == ["main", "foo"]  # ties: in the order of the regions
    assert [float(rows[0][f"Time {v}"]) for v in ("excl", "incl")] == [8.0, 24.0]
    assert [float(rows[0][f"User time {v}"]) for v in ("excl", "incl")] == [2.0, 6.0]
