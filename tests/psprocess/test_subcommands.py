"""psprocess's subcommands end to end, as real processes: diff, merge,
mean, compare, cut, stat and dump on CUBE files written from experiments
built here and on psuite's own documents; outputs parsed and checked
against values computed in the test, exit statuses, help texts, refusal
to overwrite, and `psprocess FILE` as before."""

from __future__ import annotations

import csv
import io
import json
import os

import pytest

from psuite.formats.exporters import cube
from psuite.model.experiment import Experiment, Location, Metric, Region
from tests.conftest import one_line_error, run_tool
from tests.psprocess.test_counting_reports import COUNTS, report_xml
from tests.psprocess.test_experiment_views import subtree

NAMES = ("diff", "merge", "mean", "compare", "cut", "stat", "dump")
# main(0) -> foo(1) -> bar(2); main -> bar(3)
TREE = [("main", None), ("foo", 0), ("bar", 1), ("bar", 0)]
PATHS = ["main", "main;foo", "main;foo;bar", "main;bar"]
RANKS = 2


def values(scale_foo: float = 1.0, offset: int = 0) -> dict[str, list[list[float]]]:
    """Exclusive values per metric, call path and rank; foo's own time
    scaled (a run where foo got slower)."""
    time = [[1.0 + r, (4.0 + r) * scale_foo, 2.5 + r, 0.5 * (r + 1)] for r in range(RANKS)]
    samples = [[10 * (1 + r) + offset, 40 + r, 25 + 3 * r, 5 + r] for r in range(RANKS)]
    # stored as (call paths, ranks)
    return {"time": [list(col) for col in zip(*time, strict=True)],
            "samples": [list(col) for col in zip(*samples, strict=True)]}


def write_cube(path, vals: dict[str, list[list[float]]], ranks: int = RANKS, derived: bool = False) -> str:
    e = Experiment(attributes={"source": os.path.basename(str(path))})
    for name in vals:
        e.add_metric(Metric(name, unit="sec" if name == "time" else "occ",
                            dtype="DOUBLE" if name == "time" else "UINT64"))
    if derived:
        e.add_metric(Metric("rate", kind="POSTDERIVED", expression="metric::samples()/metric::time()"))
    regions = {}
    for name, _ in TREE:
        regions.setdefault(name, e.add_region(Region(name)))
    for name, parent in TREE:
        e.add_cnode(regions[name], parent)
    e.locations = [Location(rank=r, process=f"rank {r}") for r in range(ranks)]
    for name, table in vals.items():
        e.zeros(name)[:] = [row[:ranks] for row in table]
    cube.write(e, str(path))
    return str(path)


def psprocess(*args: str, cwd=None):
    return run_tool("psprocess", *args, cwd=cwd)




def callpaths(stdout: str) -> dict[str, dict]:
    doc = json.loads(stdout)
    assert doc["schema"] == "psuite.experiment/1"
    paths: dict[int, str] = {}
    out = {}
    for cp in doc["callpaths"]:
        paths[cp["id"]] = cp["name"] if cp["parent"] is None else f"{paths[cp['parent']]};{cp['name']}"
        out[paths[cp["id"]]] = cp
    return out


@pytest.fixture
def cubes(workdir):
    return {"a": write_cube(workdir / "a.cubex", values()),
            "b": write_cube(workdir / "b.cubex", values(scale_foo=1.2, offset=3)),
            "c": write_cube(workdir / "c.cubex", values(offset=9))}


# ---------------------------------------------------------------- help


@pytest.mark.parametrize("name", NAMES)
def test_help_of_each_subcommand(name):
    proc = psprocess(name, "--help")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert text.startswith(f"usage: psprocess {name} ")
    assert "examples:" in text and f"\n  psprocess {name} " in text
    assert "exit status:" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "Traceback" not in proc.stderr


def test_psprocess_help_lists_the_subcommands():
    proc = psprocess("--help")
    assert proc.returncode == 0
    for name in NAMES:
        assert f"\n  {name} " in proc.stdout


# ---------------------------------------------------------------- operations


def test_diff_report_is_minuend_minus_subtrahend(cubes):
    proc = psprocess("diff", cubes["b"], cubes["a"], "-f", "json")
    assert proc.returncode == 0, proc.stderr
    got = callpaths(proc.stdout)
    a, b = values(), values(scale_foo=1.2, offset=3)
    assert sorted(got) == sorted(PATHS)
    for i, path in enumerate(PATHS):
        for metric in ("time", "samples"):
            assert got[path]["exclusive"][metric] == pytest.approx(sum(b[metric][i]) - sum(a[metric][i]))
            want = sum(sum(b[metric][k]) - sum(a[metric][k]) for k in subtree(i, TREE))
            assert got[path]["inclusive"][metric] == pytest.approx(want)


def test_diff_of_a_run_with_itself_is_zero(cubes):
    proc = psprocess("diff", cubes["a"], cubes["a"], "-f", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in csv.DictReader(io.StringIO(proc.stdout)) if r["kind"] == "callpath"]
    assert len(rows) == 2 * len(TREE)
    assert all(float(r["inclusive"]) == 0 and float(r["exclusive"]) == 0 for r in rows)


def test_diff_written_as_cube_read_back(cubes, workdir):
    proc = psprocess("diff", cubes["b"], cubes["a"], "-o", "d.cubex")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert "wrote d.cubex" in proc.stderr
    assert (workdir / "d.cubex").is_file() and (workdir / "d.stat").is_file()
    a, b = values(), values(scale_foo=1.2, offset=3)
    # an independent reader
    from pycubexr import CubexParser

    with CubexParser(str(workdir / "d.cubex")) as parsed:
        metric = parsed.get_metric_by_name("samples")
        mv = parsed.get_metric_values(metric)
        for cnode in parsed.all_cnodes():
            path = parsed.get_region(cnode).name
            c = cnode
            while c.parent is not None:
                c = c.parent
                path = f"{parsed.get_region(c).name};{path}"
            i = PATHS.index(path)
            assert [int(v) for v in mv.cnode_values(cnode, convert_to_exclusive=True)] == \
                [b["samples"][i][r] - a["samples"][i][r] for r in range(RANKS)]
    # and every subcommand reads the result again
    dumped = psprocess("dump", "d.cubex", "-m", "samples", "-f", "csv2")
    assert dumped.returncode == 0, dumped.stderr
    rows = list(csv.reader(io.StringIO(dumped.stdout)))
    assert rows[0] == ["Cnode ID", "Thread ID", "samples"]
    assert len(rows) == 1 + len(TREE) * RANKS


def test_diff_folded_stacks(cubes, workdir):
    proc = psprocess("diff", cubes["b"], cubes["a"], "--folded", "d.folded", "-m", "samples", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    a, b = values(), values(scale_foo=1.2, offset=3)
    lines = {line.rsplit(" ", 2)[0]: line.rsplit(" ", 2)[1:] for line in
             (workdir / "d.folded").read_text().splitlines()}
    assert set(lines) == set(PATHS)
    for i, path in enumerate(PATHS):
        assert lines[path] == [str(sum(a["samples"][i])), str(sum(b["samples"][i]))]


def test_mean_and_merge(cubes, workdir):
    proc = psprocess("mean", cubes["a"], cubes["b"], cubes["c"], "-f", "json")
    assert proc.returncode == 0, proc.stderr
    got = callpaths(proc.stdout)
    runs = [values(), values(scale_foo=1.2, offset=3), values(offset=9)]
    for i, path in enumerate(PATHS):
        for metric in ("time", "samples"):
            assert got[path]["exclusive"][metric] == pytest.approx(sum(sum(v[metric][i]) for v in runs) / 3)
    x = write_cube(workdir / "x.cubex", {"PAPI_X": values()["samples"]})
    y = write_cube(workdir / "y.cubex", {"PAPI_Y": values(offset=100)["samples"]})
    proc = psprocess("merge", x, y, "-o", "xy.cubex")
    assert proc.returncode == 0, proc.stderr
    dumped = psprocess("dump", "xy.cubex", "-f", "csv2", "-t", "aggr")
    rows = list(csv.DictReader(io.StringIO(dumped.stdout)))
    assert [r["Cnode ID"] for r in rows] == ["0", "1", "2", "3"]
    for r in rows:
        i = int(r["Cnode ID"])
        assert int(r["PAPI_X"]) == sum(values()["samples"][i])
        assert int(r["PAPI_Y"]) == sum(values(offset=100)["samples"][i])


def test_compare_exit_status_and_moved_regions(cubes):
    same = psprocess("compare", cubes["a"], cubes["a"])
    assert (same.returncode, same.stdout) == (0, f"{cubes['a']} and {cubes['a']} are equal.\n")
    a, b = values(), values(scale_foo=1.2)
    slower = write_cube(os.path.join(os.path.dirname(cubes["a"]), "slow.cubex"), b)
    differ = psprocess("compare", cubes["a"], slower)
    assert differ.returncode == 1, differ.stderr
    assert "are not equal" in differ.stdout
    moved = [line.split() for line in differ.stdout.splitlines()[3:]]
    assert [(m[0], m[-1]) for m in moved] == [("time", "main;foo")]
    assert float(moved[0][3]) == pytest.approx(sum(b["time"][1]) - sum(a["time"][1]))
    assert moved[0][4] == "+20.00%"
    within = psprocess("compare", cubes["a"], slower, "--tolerance", "25%")
    assert within.returncode == 0, within.stdout
    assert "within the tolerances (every metric 25%)" in within.stdout
    beyond = psprocess("compare", cubes["a"], slower, "--tolerance", "time=10%", "-f", "json")
    assert beyond.returncode == 1
    doc = json.loads(beyond.stdout)
    assert doc["verdict"] == "moved" and [(m["metric"], m["path"]) for m in doc["moved"]] == \
        [("time", ["main", "foo"])]
    assert doc["moved"][0]["relative"] == pytest.approx(0.2)
    # c: main's samples 9 higher on each of the two ranks, the rest equal
    absolute = psprocess("compare", cubes["a"], cubes["c"], "--tolerance", "samples=17", "-f", "csv")
    assert absolute.returncode == 1, absolute.stdout
    rows = list(csv.DictReader(io.StringIO(absolute.stdout)))
    assert rows == [{"verdict": "moved", "metric": "samples", "path": "main", "a": "30", "b": "48",
                     "delta": "18", "relative": "0.6"}]
    assert psprocess("compare", cubes["a"], cubes["c"], "--tolerance", "samples=18").returncode == 0


def test_cut_prune_keeps_root_total_and_reroot(cubes):
    proc = psprocess("cut", "--prune", "foo", cubes["a"], "-f", "json")
    assert proc.returncode == 0, proc.stderr
    got = callpaths(proc.stdout)
    a = values()
    assert sorted(got) == ["main", "main;bar"]
    for metric in ("time", "samples"):
        total = sum(sum(row) for row in a[metric])
        assert got["main"]["inclusive"][metric] == pytest.approx(total)
        assert got["main"]["exclusive"][metric] == pytest.approx(sum(sum(a[metric][k]) for k in (0, 1, 2)))
    proc = psprocess("cut", "--root", "foo", cubes["a"], "-f", "json")
    got = callpaths(proc.stdout)
    assert sorted(got) == ["foo", "foo;bar"]
    assert got["foo"]["inclusive"]["samples"] == sum(a["samples"][1]) + sum(a["samples"][2])



def test_cut_root_of_a_region_with_two_call_sites_makes_two_roots(cubes, workdir):
    """bar is called from main and from foo: re-rooted there, each call
    site is a root of its own, as cube_cut makes them (psuite once summed
    them under one root), written as two roots (no artificial one)."""
    proc = psprocess("cut", "--root", "bar", cubes["a"], "-o", "bar.cubex")
    assert proc.returncode == 0, proc.stderr
    from psuite.formats.readers import cube as reader

    a = values()
    cut = reader.read(str(workdir / "bar.cubex"))
    assert [cut.region_name(c) for c in cut.roots] == ["bar", "bar"] and len(cut.cnodes) == 2
    assert cut.values["samples"].tolist() == [[a["samples"][k][r] for r in range(RANKS)] for k in (2, 3)]


def test_stat_and_dump_of_a_cube(cubes):
    a = values()
    proc = psprocess("stat", cubes["a"], "-m", "samples")
    assert proc.returncode == 0, proc.stderr
    lines = [line.split() for line in proc.stdout.splitlines()]
    assert lines[0][0] == "MetricRoutine" and [x[1] for x in lines[1:]] == ["INCL(main)", "EXCL(main)", "foo", "bar"]
    per_rank = [sum(a["samples"][k][r] for k in range(4)) for r in range(RANKS)]
    assert [int(lines[1][2]), int(lines[1][3])] == [RANKS, sum(per_rank)]
    assert int(lines[1][6]) == min(per_rank) and int(lines[1][-1]) == max(per_rank)
    top = psprocess("stat", cubes["a"], "-t", "1", "-m", "time", "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(top.stdout)))
    excl = {"main": [0], "foo": [1], "bar": [2, 3]}
    best = max(excl, key=lambda r: sum(sum(a["time"][i]) for i in excl[r]))
    assert [r["region"] for r in rows] == [best]
    gp = psprocess("dump", cubes["a"], "-m", "time", "-c", "leafs", "-x", "incl", "-f", "gnuplot")
    data = [line.split() for line in gp.stdout.splitlines() if line and not line.startswith("#")]
    assert {(int(c), int(t)): float(v) for c, t, v in data} == \
        {(i, r): pytest.approx(a["time"][i][r]) for i in (2, 3) for r in range(RANKS)}


# ---------------------------------------------------------------- psuite's documents


def test_counting_reports_as_inputs(workdir):
    (workdir / "r1.xml").write_text(report_xml(COUNTS))
    doubled = {k: 2 * v for k, v in COUNTS.items()}
    (workdir / "r2.xml").write_text(report_xml(doubled))
    proc = psprocess("diff", "r2.xml", "r1.xml", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    totals = {m["name"]: m["total"] for m in doc["metrics"]}
    for event, count in COUNTS.items():
        assert totals[event] == count
    same = psprocess("compare", "r1.xml", "r1.xml")
    assert same.returncode == 0, same.stderr + same.stdout
    slower = psprocess("compare", "r1.xml", "r2.xml", "--tolerance", "PAPI_TOT_CYC=50%")
    assert slower.returncode == 1 and "PAPI_TOT_CYC" in slower.stdout
    # a document and a cube in one operation: the cube of r1 equals r1
    written = psprocess("mean", "r1.xml", "r1.xml", "-o", "r1.cubex")
    assert written.returncode == 0, written.stderr
    back = psprocess("compare", "r1.xml", "r1.cubex", "--tolerance", "PAPI_*=0")
    assert back.returncode == 0, back.stdout + back.stderr


def test_legacy_psprocess_file_unchanged(workdir):
    (workdir / "stat").write_text(report_xml(COUNTS))
    legacy = psprocess("./stat")
    assert legacy.returncode == 0, legacy.stderr
    assert "PAPI_TOT_CYC" in legacy.stdout
    assert psprocess(str(workdir / "stat"), "-f", "json").returncode == 0
    missing = psprocess("stat")
    line = one_line_error(missing, "psprocess stat")
    assert "the following arguments are required: IN" in line


# ---------------------------------------------------------------- bad input


def test_bad_input_is_one_line(cubes, workdir):
    cases = [
        (("diff", "nothere.cubex", cubes["a"]), "nothere.cubex"),
        (("diff", cubes["a"], cubes["b"], "-o", "d.txt"), "ending in .cubex"),
        (("compare", cubes["a"], cubes["b"], "--tolerance", "fast"), "--tolerance 'fast'"),
        (("compare", cubes["a"], cubes["b"], "--tolerance", "cycles=5%"), "no metric 'cycles'"),
        (("compare", cubes["a"], cubes["b"], "--tolerance", "PAPI_*=5%"), "no metric 'PAPI_*'"),
        (("compare", cubes["a"], cubes["b"], "--tolerance", "5%", "--tolerance", "2%"), "already has"),
        (("cut", cubes["a"]), "--root REGION, --prune REGION"),
        (("cut", "--prune", "nowhere", cubes["a"]), "--prune nowhere"),
        (("dump", cubes["a"], "-m", "cycles"), "no metric 'cycles'"),
        (("dump", cubes["a"], "-c", "9"), "ids go from 0 to 3"),
        (("stat", cubes["a"], "-r", "solve"), "no routine 'solve'"),
        (("merge", cubes["a"]), "two or more"),
        (("diff", cubes["a"], cubes["b"], "--force"), "--force goes with"),
        (("diff", cubes["a"], cubes["b"], "-o", cubes["a"], "--force"), "also an input"),
    ]
    for args, expected in cases:
        line = one_line_error(psprocess(*args), f"psprocess {args[0]}")
        assert expected in line, (args, line)


def test_a_system_holding_the_others_combines_as_cube_diff(cubes, workdir):
    """A one-rank run against a four-rank one: the four ranks hold the one
    (same process names and rank), so diff combines them without -C, as
    cube_diff does, and -C (every process under one virtual node) gives the
    same sums; systems neither holds are refused (test_cube_algebra_options)."""
    one = write_cube(workdir / "one.cubex", values(), ranks=1)
    a = values()
    for options in ((), ("-C",)):
        proc = psprocess("diff", *options, cubes["a"], one, "-f", "json")
        assert proc.returncode == 0, proc.stderr
        got = callpaths(proc.stdout)
        assert got["main;foo"]["exclusive"]["samples"] == sum(a["samples"][1]) - a["samples"][1][0], options


def test_existing_output_kept_without_force(cubes, workdir):
    target = workdir / "out.cubex"
    target.write_bytes(b"precious")
    refused = psprocess("mean", cubes["a"], cubes["b"], "-o", "out.cubex")
    line = one_line_error(refused, "psprocess mean")
    assert "out.cubex exists" in line and "--force" in line
    assert target.read_bytes() == b"precious"
    assert not (workdir / "out.stat").exists()
    forced = psprocess("mean", cubes["a"], cubes["b"], "-o", "out.cubex", "--force")
    assert forced.returncode == 0, forced.stderr
    assert target.read_bytes()[:8] != b"precious"
    (workdir / "d.folded").write_text("keep\n")
    refused = psprocess("diff", cubes["b"], cubes["a"], "--folded", "d.folded")
    assert "d.folded exists" in one_line_error(refused, "psprocess diff")
    assert (workdir / "d.folded").read_text() == "keep\n"
    (workdir / "stat.txt").write_text("keep\n")
    refused = psprocess("stat", cubes["a"], "-o", "stat.txt")
    assert "stat.txt exists" in one_line_error(refused, "psprocess stat")
    assert (workdir / "stat.txt").read_text() == "keep\n"


def test_real_profile_stat_and_compare(programs, workdir):
    """A real psrun profile: stat's top functions have the samples psprocess's
    own report gives them; the profile equals itself."""
    p = run_tool("psrun", "-q", "--profile", "ITIMER_PROF", "--period", "1000", programs["prof_split"], "60")
    assert p.returncode == 0, p.stderr
    [xml] = [str(x) for x in workdir.glob("*.xml")]
    legacy = json.loads(psprocess("-f", "json", xml).stdout)
    by_function: dict[str, int] = {}
    for loc in legacy["reports"][0]["locations"]:
        by_function[loc["function"]] = by_function.get(loc["function"], 0) + loc["samples"]
    top = psprocess("stat", xml, "-t", "3", "-m", "samples", "-f", "json")
    assert top.returncode == 0, top.stderr
    regions = json.loads(top.stdout)["regions"]
    assert [r["region"] for r in regions] == sorted(by_function, key=lambda f: -by_function[f])[:3]
    for r in regions:
        assert r["exclusive"]["samples"] == by_function[r["region"]]
    assert psprocess("compare", xml, xml).returncode == 0
    zero = psprocess("diff", xml, xml, "-f", "csv")
    rows = [r for r in csv.DictReader(io.StringIO(zero.stdout)) if r["kind"] == "callpath"]
    assert rows and all(float(r["inclusive"]) == 0 for r in rows)


def test_scorep_style_cube_views(workdir):
    """A cube as Score-P writes them (INCLUSIVE metrics, mpi under time, two
    roots, sparse compressed data): stat and dump against the values the
    fixture computed from its own call tree."""
    from tests.psprocess.cube_fixtures import scorep_cube

    c = scorep_cube(workdir / "s.cubex")
    nloc = len(c.locations)
    proc = psprocess("dump", "s.cubex", "-m", "time,visits", "-x", "incl", "-t", "aggr", "-f", "csv2")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(rows) == len(c.paths)
    for r in rows:
        i = int(r["Cnode ID"])
        assert float(r["time"]) == pytest.approx(c.inclusive["time"][i].sum())
        assert int(r["visits"]) == c.inclusive["visits"][i].sum()
    collapsed = psprocess("dump", "s.cubex", "-m", "time", "-c", "3", "--metric-tree", "incl", "-f", "csv")
    got = [line.split(",") for line in collapsed.stdout.split()]
    assert [(int(a), int(b)) for a, b, _ in got] == [(3, j) for j in range(nloc)]
    # CUBE's stored time already holds mpi's (the metric tree is inclusive): collapsed is the stored value,
    # expanded (--metric-tree excl) time less mpi - nothing at MPI_Send, which is all MPI
    assert [float(v) for _, _, v in got] == pytest.approx(list(c.exclusive["time"][3]))
    expanded = psprocess("dump", "s.cubex", "-m", "time", "-c", "3", "--metric-tree", "excl", "-f", "csv")
    got = [line.split(",") for line in expanded.stdout.split()]
    assert [float(v) for _, _, v in got] == pytest.approx(list(c.exclusive["time"][3] - c.exclusive["mpi"][3]))
    assert any(c.exclusive["mpi"][3]) and not any(float(v) for _, _, v in got)
    proc = psprocess("stat", "s.cubex", "-m", "time", "-f", "csv")
    assert proc.returncode == 0, proc.stderr
    got = {(r["routine"], r["view"], r["callee"]): r for r in csv.DictReader(io.StringIO(proc.stdout))}
    index = {path: i for i, path in enumerate(c.paths)}
    want = {("main", "incl", ""): c.inclusive["time"][index[("main",)]],
            ("main", "excl", ""): c.exclusive["time"][index[("main",)]],
            ("main", "callee", "solve"): c.inclusive["time"][index[("main", "solve")]],
            ("worker", "incl", ""): c.inclusive["time"][index[("worker",)]],
            ("worker", "callee", "compute"): c.inclusive["time"][index[("worker", "compute")]]}
    for key, values in want.items():
        v = [float(x) for x in values]
        assert float(got[key]["sum"]) == pytest.approx(sum(v)), key
        assert float(got[key]["maximum"]) == pytest.approx(max(v)), key
        assert int(got[key]["count"]) == nloc


def test_derived_metric_views_by_region_honour_inclusive_and_exclusive(workdir):
    """avg_time = time(i)/visits(e): the flat profile by region (dump -r)
    gives main the value its call path has (one call path: the same)."""
    from tests.psprocess.cube_fixtures import scorep_cube

    scorep_cube(str(workdir / "s.cubex"))
    by_path = psprocess("dump", "s.cubex", "-m", "avg_time", "-t", "aggr", "-c", "roots", "-f", "csv2")
    by_region = psprocess("dump", "s.cubex", "-r", "-m", "avg_time", "-t", "aggr", "-f", "csv2")
    assert by_path.returncode == 0 and by_region.returncode == 0, (by_path.stderr, by_region.stderr)
    root = [r for r in csv.reader(io.StringIO(by_path.stdout))][1]
    main = [r for r in csv.reader(io.StringIO(by_region.stdout))][1]
    assert root[0] == main[0] == "0" and float(main[2]) == pytest.approx(float(root[2]))


def test_several_roots_are_written_as_several_roots(cubes, workdir):
    """cut --root at a pattern naming two regions leaves two roots: the
    file has them as roots, as CubeLib and Score-P write several (no
    artificial root above them), with the roots' values."""
    import tarfile

    from lxml import etree

    from psuite.formats.readers import cube as cube_reader

    proc = psprocess("cut", "--root", "foo|bar", cubes["a"], "-o", "two.cubex")
    assert proc.returncode == 0, proc.stderr
    with tarfile.open(workdir / "two.cubex") as tar:
        anchor = etree.fromstring(tar.extractfile("anchor.xml").read())
    top = anchor.find("program").findall("cnode")
    assert len(top) >= 2 and "[roots]" not in {r.findtext("name") for r in anchor.iter("region")}
    back = cube_reader.read(str(workdir / "two.cubex"))
    assert len(back.roots) == len(top)
    a = values()
    assert back.inclusive("samples")[back.roots].sum(axis=0).tolist() == [
        sum(a["samples"][k][r] for k in (1, 2, 3)) for r in range(RANKS)]
