"""psbase query, the short form: a result against one or two parameters,
aggregated over repetitions by the database, checked on both backends
against statistics computed here from the inputs; and the issue's case:
task clock against MPI ranks from real psrun runs at 1, 2 and 4 ranks."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree

from psuite.errors import PsuiteError
from psuite.psbase.model import Definition, RunData, Variable, Version
from psuite.psbase.query import render, run_query
from psuite.psbase.store import Store
from tests.conftest import TARGETS, one_line_error
from tests.psbase.test_cli import ok, psbase

# (nodes, compiler, repetition) -> time; and per run a data set of (size, bw) rows
TIMES = {
    (1, "gcc"): [10.0, 10.5, 9.75],
    (1, "icc"): [8.0, 8.25, 8.5],
    (2, "gcc"): [5.5, 5.0, 5.25],
    (2, "icc"): [4.0, 4.75, 4.5],
    (4, "gcc"): [3.0, 2.5, 2.75],
    (4, "icc"): [2.0],  # one repetition: no standard deviation
}


def bandwidths(time: float) -> list[dict]:
    return [{"size": s, "bw": s / time + 0.5 * i} for i, s in enumerate((1024, 4096, 1024))]


@pytest.fixture
def sweep(db_url) -> Store:
    s = Store(db_url, create=True)
    s.setup(
        Definition(
            name="sweep",
            synopsis="a parameter sweep",
            variables=[
                Variable("nodes", "integer", unit="node"),
                Variable("compiler", "string"),
                Variable("time", "float", unit="s", is_result=True),
                Variable("label", "string", is_result=True),
                Variable("ok", "boolean", is_result=True),
                Variable("size", "integer", unit="B", occurrence="multiple"),
                Variable("bw", "float", unit="MB/s", occurrence="multiple", is_result=True),
            ],
        )
    )
    runs = [
        RunData(values={"nodes": n, "compiler": c, "time": t, "label": f"{c}{n}", "ok": t < 9}, rows=bandwidths(t))
        for (n, c), ts in TIMES.items()
        for t in ts
    ]
    # a run without the result, and a deleted one: neither is a data point
    runs.append(RunData(values={"nodes": 1, "compiler": "gcc"}))
    runs.append(RunData(values={"nodes": 1, "compiler": "gcc", "time": 1000.0}))
    [*_, deleted] = s.add_runs("sweep", runs)
    s.set_deleted("sweep", [deleted], True)
    yield s
    s.close()


def test_mean_stddev_count_over_repetitions(sweep):
    q = run_query(sweep, "sweep", "time", ["nodes"])
    assert q.stats == ["mean", "stddev", "count"]
    assert [r[0] for r in q.rows] == [1, 2, 4]
    for nodes, mean, sd, count in q.rows:
        xs = [t for (n, _), ts in TIMES.items() if n == nodes for t in ts]
        assert mean == pytest.approx(statistics.mean(xs), rel=1e-12)
        assert sd == pytest.approx(statistics.stdev(xs), rel=1e-9)
        assert count == len(xs)


def test_two_parameters_where_and_all_statistics(sweep):
    stats = ["mean", "stddev", "count", "min", "max", "median"]
    q = run_query(sweep, "sweep", "time", ["nodes", "compiler"], stats=stats)
    assert [tuple(r[:2]) for r in q.rows] == sorted(TIMES)
    for nodes, compiler, mean, sd, count, lo, hi, median in q.rows:
        xs = TIMES[(nodes, compiler)]
        assert (count, lo, hi) == (len(xs), min(xs), max(xs))
        assert mean == pytest.approx(statistics.mean(xs), rel=1e-12)
        assert median == pytest.approx(statistics.median(xs), rel=1e-12)
        assert sd is None if len(xs) == 1 else sd == pytest.approx(statistics.stdev(xs), rel=1e-9)
    q = run_query(
        sweep, "sweep", "time", ["nodes"], where=["compiler=icc", "nodes=1", "nodes=4"], stats=["mean", "count"]
    )
    assert q.rows == [(1, pytest.approx(statistics.mean(TIMES[(1, "icc")])), 3), (4, 2.0, 1)]


def test_data_set_result_aggregates_rows_of_all_runs(sweep):
    q = run_query(sweep, "sweep", "bw", ["size"], where=["nodes=2"], stats=["mean", "stddev", "count", "median"])
    for size, mean, sd, count, median in q.rows:
        xs = [
            row["bw"]
            for (n, _), ts in TIMES.items()
            if n == 2
            for t in ts
            for row in bandwidths(t)
            if row["size"] == size
        ]
        assert count == len(xs) == (12 if size == 1024 else 6)
        assert mean == pytest.approx(statistics.mean(xs), rel=1e-12)
        assert sd == pytest.approx(statistics.stdev(xs), rel=1e-9)
        assert median == pytest.approx(statistics.median(xs), rel=1e-12)
    assert [r[0] for r in q.rows] == [1024, 4096]
    # a once-parameter against a data-set result: bw per compiler over all rows of its runs
    q = run_query(sweep, "sweep", "bw", ["compiler"], stats=["count"])
    assert q.rows == [(c, 3 * sum(len(ts) for (_, cc), ts in TIMES.items() if cc == c)) for c in ("gcc", "icc")]


def test_string_result_has_count_min_max_only(sweep):
    q = run_query(sweep, "sweep", "label", ["nodes"], stats=["count", "min", "max"])
    assert q.rows[0] == (1, 6, "gcc1", "icc1")
    with pytest.raises(PsuiteError, match="string result: no mean"):
        run_query(sweep, "sweep", "label", ["nodes"])
    # a boolean is counted only (PostgreSQL has no min or max of booleans)
    q = run_query(sweep, "sweep", "ok", ["nodes"], where=["compiler=gcc"], stats=["count"])
    assert q.rows == [(1, 3), (2, 3), (4, 3)]
    with pytest.raises(PsuiteError, match="boolean result: no min; give --stat count"):
        run_query(sweep, "sweep", "ok", ["nodes"], stats=["count", "min"])


def test_formats(sweep):
    q = run_query(sweep, "sweep", "time", ["nodes"], where=["compiler=gcc"])
    text = render(q, "text").splitlines()
    assert text[0].split() == ["nodes", "[node]", "time", "mean", "[s]", "time", "stddev", "[s]", "time", "count"]
    assert len(text) == 4 and text[1].split()[0] == "1"
    rows = list(csv.reader(io.StringIO(render(q, "csv"))))
    assert rows[0] == ["nodes", "time mean", "time stddev", "time count"]
    assert float(rows[1][1]) == statistics.mean(TIMES[(1, "gcc")]) and rows[1][3] == "3"
    doc = json.loads(render(q, "json"))
    units = {c["name"]: (c["role"], c["unit"]) for c in doc["columns"]}
    assert units == {"nodes": ("key", "node"), "time mean": ("value", "s"), "time stddev": ("error", "s"),
                     "time count": ("value", "")}
    assert doc["rows"][2] == {"nodes": 4, "time mean": pytest.approx(2.75), "time stddev": pytest.approx(0.25),
                              "time count": 3}


# -- the case: real MPI runs at 1, 2 and 4 ranks, 3 repetitions each ----------------

MPI_ENV = {"OMPI_MCA_plm_rsh_agent": "", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


@pytest.fixture(scope="module")
def rank_runs(tmp_path_factory) -> dict[int, list[Path]]:
    """ranks -> the directories of its 3 runs, each holding one psrun report per rank."""
    mpicc, mpirun = shutil.which("mpicc"), shutil.which("mpirun")
    assert mpicc and mpirun, "Open MPI is needed (tests/run.sh installs openmpi-bin and libopenmpi-dev)"
    d = tmp_path_factory.mktemp("psbase_query_mpi")
    exe = d / "mpi_work"
    subprocess.run([mpicc, "-O1", "-o", str(exe), str(TARGETS / "mpi" / "mpi_work.c")], check=True)
    out: dict[int, list[Path]] = {}
    for ranks in (1, 2, 4):
        for rep in range(3):
            run_dir = d / f"r{ranks}_{rep}"
            run_dir.mkdir()
            p = subprocess.run(
                [
                    mpirun,
                    "--oversubscribe",
                    "--allow-run-as-root",
                    "-np",
                    str(ranks),
                    "--mca",
                    "btl",
                    "self,vader",
                    sys.executable,
                    "-m",
                    "psuite.psrun",
                    "-q",
                    "-d",
                    str(run_dir),
                    "-e",
                    "task-clock",
                    str(exe),
                ],
                capture_output=True,
                text=True,
                timeout=300,
                env={**os.environ, **MPI_ENV},
            )
            assert p.returncode == 0, p.stdout + p.stderr
            assert len(list(run_dir.glob("*.xml"))) == ranks
            out.setdefault(ranks, []).append(run_dir)
    return out


def task_clock(run_dir: Path) -> float:
    """A run's task clock: its ranks' counts summed, read from the XML."""
    return sum(
        float(e.text)
        for doc in run_dir.glob("*.xml")
        for e in etree.parse(str(doc)).getroot().iter("hwpcevent")
        if e.get("name") == "task-clock"
    )


def test_task_clock_against_ranks_from_real_mpi_runs(rank_runs, db_url, tmp_path):
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", "--psuite", "mpi", cwd=tmp_path, env=env))
    for dirs in rank_runs.values():
        for run_dir in dirs:  # the per-rank reports of one mpirun make one run
            ok(psbase("input", "mpi", "--merge", *map(str, sorted(run_dir.glob("*.xml"))), cwd=tmp_path, env=env))
    doc = json.loads(ok(psbase("query", "mpi", "task_clock", "--by", "ranks", "-f", "json", cwd=tmp_path, env=env)))
    assert [r["ranks"] for r in doc["rows"]] == [1, 2, 4]
    for row in doc["rows"]:
        xs = [task_clock(d) for d in rank_runs[row["ranks"]]]
        assert row["task_clock count"] == 3
        assert row["task_clock mean"] == pytest.approx(statistics.mean(xs), rel=1e-12)
        assert row["task_clock stddev"] == pytest.approx(statistics.stdev(xs), rel=1e-9)
    # the text table says the same, one line per rank count
    lines = ok(psbase("query", "mpi", "task_clock", "--by", "ranks", cwd=tmp_path, env=env)).splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["1", "2", "4"]


def test_help_names_the_query(tmp_path):
    assert "psbase query" in ok(psbase("--help", cwd=tmp_path))
    out = ok(psbase("query", "--help", cwd=tmp_path))
    assert all(word in out for word in ("--by", "--where", "--stat", "median", "--format"))


# -- bad input: one line, exit 2 ---------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["nosuch", "time", "--by", "nodes"], "no experiment 'nosuch'"),
        (["sweep", "nosuch", "--by", "nodes"], "result 'nosuch'"),
        (["sweep", "nodes", "--by", "compiler"], "is a parameter"),
        (["sweep", "time", "--by", "nosuch"], "--by 'nosuch'"),
        (["sweep", "time", "--by", "time"], "is a result"),
        (["sweep", "time"], "--by"),
        (["sweep", "time", "--by", "nodes", "--where", "nodes"], "write NAME=VALUE"),
        (["sweep", "time", "--by", "nodes", "--where", "=3"], "write NAME=VALUE"),
        (["sweep", "time", "--by", "nodes", "--where", "nodes=many"], "nodes"),
        (["sweep", "time", "--by", "nodes", "--where", "nosuch=1"], "--where 'nosuch'"),
        (["sweep", "time", "--by", "nodes", "--stat", "mean,mode"], "unknown mode"),
        (["sweep", "time", "--by", "nodes", "-f", "xml"], "invalid choice"),
    ],
)
def test_bad_query_is_one_line_exit_2(sweep, tmp_path, args, message):
    url = sweep.url.database if sweep.url.get_backend_name() == "sqlite" else sweep.url.render_as_string(False)
    p = psbase("query", *args, cwd=tmp_path, env={"PSBASE_DB": url})
    # argparse's own errors name the sub-command: "psbase query: ..."
    msg = one_line_error(p, "psbase query" if p.stderr.startswith("psbase query:") else "psbase")
    assert message in msg


# -- versions sort as versions, not as text ----------------------------------------------------

# library version -> times of its runs; as text "1.10" < "1.2" < "1.9" < "10.0" < "2.0"
VERSION_TIMES = {"1.9": [3.0, 3.5], "1.10": [2.0], "2.0": [1.5, 1.25], "1.2": [4.0], "10.0": [0.5]}
VERSION_ORDER = ["1.2", "1.9", "1.10", "2.0", "10.0"]  # by their numbers


@pytest.fixture
def versions(db_url) -> Store:
    s = Store(db_url, create=True)
    s.setup(
        Definition(
            name="libs",
            variables=[
                Variable("lib", "version"),
                Variable("time", "float", unit="s", is_result=True),
                Variable("size", "integer", occurrence="multiple"),
                Variable("bw", "float", occurrence="multiple", is_result=True),
            ],
        )
    )
    s.add_runs(
        "libs",
        [
            RunData({"lib": Version(v), "time": t}, [{"size": 1, "bw": 10 / t}], [f"{v}-{t}"], f"{v}-{t}")
            for v, ts in VERSION_TIMES.items()
            for t in ts
        ],
    )
    yield s
    s.close()


def test_short_form_sorts_version_keys_as_versions(versions, tmp_path):
    assert sorted(VERSION_TIMES) != VERSION_ORDER  # text order is not the version order
    q = run_query(versions, "libs", "time", ["lib"], stats=["mean", "count"])
    assert q.rows == [(v, pytest.approx(statistics.mean(VERSION_TIMES[v])), len(VERSION_TIMES[v]))
                      for v in VERSION_ORDER]  # fmt: skip
    # a data-set result (the two-step aggregation) and a version as the second key
    q = run_query(versions, "libs", "bw", ["size", "lib"], stats=["count"])
    assert [r[1] for r in q.rows] == VERSION_ORDER
    out = ok(psbase("query", "libs", "time", "--by", "lib", "--stat", "count", cwd=tmp_path,
                    env={"PSBASE_DB": str(versions.url.render_as_string(False))}))  # fmt: skip
    assert [line.split()[0] for line in out.splitlines()[1:]] == VERSION_ORDER


def test_query_file_sorts_version_keys_as_versions(versions, tmp_path):
    from psuite.psbase import queryexec, queryfile

    path = tmp_path / "q.xml"
    path.write_text(
        "<query><experiment>libs</experiment>"
        '<source id="s"><result>time</result><parameter><value>lib</value></parameter></source>'
        '<source id="w"><result>time</result><parameter><value>lib</value><sweep/></parameter></source>'
        '<operator id="a" type="avg"><input>s</input></operator>'
        '<operator id="m" type="max"><input>s</input></operator>'
        '<output id="raw"><input>s</input></output><output id="avg"><input>a</input><input>m</input></output>'
        '<operator id="wm" type="max"><input>w</input></operator><output id="swept"><input>wm</input></output>'
        "</query>"
    )
    got = {out.id: t for out, t in queryexec.execute(versions, queryfile.parse(str(path)))}
    # the source as it is: every run in the order filed (perfbase's), not sorted by version
    assert got["raw"].rows == [(v, t) for v in VERSION_TIMES for t in VERSION_TIMES[v]]
    # SQL's aggregate (max) and the element-wise join of two operators
    assert [r[0] for r in got["avg"].rows] == VERSION_ORDER
    for v, mean, _, top in got["avg"].rows:
        assert (mean, top) == (pytest.approx(statistics.mean(VERSION_TIMES[v])), max(VERSION_TIMES[v]))
    # a sweep over every version: one column per version, in version order
    assert [c.name for c in got["swept"].columns] == [f"time max [lib={v}]" for v in VERSION_ORDER]
    assert got["swept"].rows == [tuple(max(VERSION_TIMES[v]) for v in VERSION_ORDER)]
