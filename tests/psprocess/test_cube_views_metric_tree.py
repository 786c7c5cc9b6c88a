"""The metric tree's exclusive view as CubeLib computes it (Cube::get_sev_adv:
a metric less every child metric, at the level shown), through psprocess
dump on a cube built here: a DOUBLE parent with a stored child and a
POSTDERIVED child (both subtracted), a UINT64 parent and child, and
MINDOUBLE and MAXDOUBLE parents, where CubeLib's "minus" of a least value is
the greater of the two (of a greatest value, the lesser), per location and
over all threads (the aggregates' difference, not the sum of the
locations').  cube_dump -x incl|excl -z incl|excl [-t aggr] prints these
values on this cube, but for one: 7 - 8 visits, which CubeLib's unsigned
arithmetic shows as 18446744073709551615 and psprocess as -1."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.psprocess.cube_views_cubes import SmallMetric, small_cube

P = 3  # processes, a thread each
# per call path (main, foo, bar: main calls the others) and process
TIME = [[5.0, 7.0, 6.0], [1.5, 2.0, 0.5], [1.0, 3.0, 2.5]]
MPI = [[1.0, 2.0, 1.0], [0.5, 0.25, 0.0], [1.0, 1.0, 2.0]]
VISITS = [[3, 4, 5], [10, 1, 2], [7, 7, 7]]
CALLS = [[1, 2, 3], [5, 0, 1], [7, 8, 0]]
MIN = [[0.5, 0.4, 0.9], [0.1, 0.2, 0.3], [0.7, 0.6, 0.05]]
MIN_CHILD = [[0.6, 0.3, 0.9], [0.2, 0.1, 0.3], [0.5, 0.8, 0.01]]
MAX = [[2.0, 3.0, 1.0], [4.0, 1.0, 0.5], [0.7, 0.6, 0.05]]
MAX_CHILD = [[1.5, 3.5, 0.2], [5.0, 0.5, 0.5], [0.9, 0.1, 0.04]]
STORED = {"time": (TIME, sum), "mpi": (MPI, sum), "visits": (VISITS, sum), "calls": (CALLS, sum),
          "mint": (MIN, min), "mintc": (MIN_CHILD, min), "maxt": (MAX, max), "maxtc": (MAX_CHILD, max)}
CHILDREN = {"time": ["mpi", "half"], "visits": ["calls"], "mint": ["mintc"], "maxt": ["maxtc"]}
LESS = {sum: lambda a, b: a - b, min: max, max: min}  # CubeLib's operator-= per value type


def build(path) -> None:
    small_cube(path, [
        SmallMetric("time", None, "DOUBLE", TIME), SmallMetric("mpi", 0, "DOUBLE", MPI),
        SmallMetric("half", 0, "DOUBLE", expression="metric::mpi()/2"),
        SmallMetric("visits", None, "UINT64", VISITS), SmallMetric("calls", 3, "UINT64", CALLS),
        SmallMetric("mint", None, "MINDOUBLE", MIN), SmallMetric("mintc", 5, "MINDOUBLE", MIN_CHILD),
        SmallMetric("maxt", None, "MAXDOUBLE", MAX), SmallMetric("maxtc", 7, "MAXDOUBLE", MAX_CHILD)], P)


def stored(metric: str, calltree: str, c: int, where: int | None) -> float:
    """The metric as stored (the metric tree inclusive) at call path c, on
    one process or (where None) over all of them."""
    if metric == "half":
        return stored("mpi", calltree, c, where) / 2
    values, combine = STORED[metric]
    paths = [0, 1, 2] if calltree == "incl" and c == 0 else [c]
    procs = range(P) if where is None else [where]
    return combine(values[i][j] for i in paths for j in procs)


def expected(metric: str, metric_tree: str, calltree: str, c: int, where: int | None) -> float:
    value = stored(metric, calltree, c, where)
    if metric_tree == "excl":
        combine = STORED[metric][1] if metric in STORED else sum
        for kid in CHILDREN.get(metric, []):
            value = LESS[combine](value, stored(kid, calltree, c, where))
    return value


def test_the_cube_has_every_case():
    assert expected("time", "excl", "excl", 0, 0) == 5.0 - 1.0 - 0.5
    assert expected("visits", "excl", "excl", 2, 1) == -1  # CubeLib: 18446744073709551615
    assert expected("mint", "excl", "excl", 0, 0) == 0.6 and expected("maxt", "excl", "excl", 0, 1) == 3.0
    # over all threads the aggregates' difference: not the sum (nor least) of the processes' differences
    assert expected("mint", "excl", "excl", 1, None) == 0.1
    assert min(expected("mint", "excl", "excl", 1, j) for j in range(P)) == 0.2


@pytest.mark.parametrize("metric_tree", ["incl", "excl"])
@pytest.mark.parametrize("calltree", ["incl", "excl"])
@pytest.mark.parametrize("aggr", [False, True], ids=["threads", "aggr"])
def test_metric_tree_views(tmp_path, metric_tree, calltree, aggr):
    build(tmp_path / "mt.cubex")
    names = ["time", "mpi", "half", "visits", "calls", "mint", "mintc", "maxt", "maxtc"]
    proc = subprocess.run([sys.executable, "-m", "psuite.psprocess", "dump", "mt.cubex", "-f", "csv", "-m", "all",
                           "--metric-tree", metric_tree, "-x", calltree, *(["-t", "aggr"] if aggr else [])],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split(",") for line in proc.stdout.splitlines() if line]
    per_metric = 3 * (1 if aggr else P)
    assert len(rows) == len(names) * per_metric
    for k, name in enumerate(names):
        for c, where, value in rows[k * per_metric:(k + 1) * per_metric]:
            want = expected(name, metric_tree, calltree, int(c), None if aggr else int(where))
            assert float(value) == pytest.approx(want, rel=1e-12, abs=1e-15), (name, c, where)


def test_a_child_of_another_type_is_subtracted_as_a_number(tmp_path):
    """A DOUBLE metric (5 everywhere) with a UINT64 child (2 and 3): CubeLib
    subtracts the child's bits read as a double (a denormal: cube_dump -x
    excl shows 5); its value is 3 and 2."""
    small_cube(tmp_path / "mixed.cubex", [SmallMetric("t", None, "DOUBLE", [[5.0, 5.0]] * 3),
                                          SmallMetric("n", 0, "UINT64", [[2, 3]] * 3)], 2)
    proc = subprocess.run([sys.executable, "-m", "psuite.psprocess", "dump", "mixed.cubex", "-f", "csv", "-m", "t",
                           "-c", "1", "--metric-tree", "excl"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [line.split(",") for line in proc.stdout.split()] == [["1", "0", "3"], ["1", "1", "2"]]
