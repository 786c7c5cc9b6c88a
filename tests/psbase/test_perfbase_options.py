"""perfbase's options of input and query that psbase takes as perfbase does (psuite.psbase.perfbase_cli),
through the real psbase command with perfbase's own test files from ../shared/perfbase/test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.psbase.conftest import BACKENDS, new_pg_database
from tests.psbase.test_cli import ok, psbase
from tests.psbase.test_cli_perfbase import refused

SUITE = Path(__file__).resolve().parents[2] / ".." / "shared" / "perfbase" / "test"



def directory(tmp_path: Path, name: str, db: str | None = None) -> tuple[Path, dict]:
    """perfbase's test directory NAME copied, with an archive of its own (db: that one)."""
    shutil.copytree(SUITE / name, tmp_path / name)
    return tmp_path / name, {"PSBASE_DB": db or str(tmp_path / "a.db")}


@pytest.fixture(params=BACKENDS)
def db(request, tmp_path) -> str:
    """An archive's URL: an SQLite file, or a database on the test session's PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "a.db")
    return new_pg_database(request.getfixturevalue("pg_server"))


@pytest.fixture
def fixed(tmp_path) -> tuple[Path, dict]:
    """perfbase's fixed directory: its experiment with both its input files filed."""
    cwd, env = directory(tmp_path, "fixed")
    ok(psbase("setup", "-d", "fixed_exp.xml", cwd=cwd, env=env))
    for f in ("latency.dat", "latency2.dat"):
        ok(psbase("input", "-d", "fixed_inp.xml", f, cwd=cwd, env=env))
    return cwd, env


def _column(out: str, k: int) -> list[str]:
    """The k-th column of a text table's numeric rows."""
    return [line.split()[k] for line in out.splitlines() if line[:1].isdigit()]


def test_query_f_gives_a_fixed_value(fixed):
    """perfbase's query -f NAME=VALUE sets a <fixed> of the query: fixed_plain_qry.xml filters the runs by
    MPI_version = f.version (1.24 in the file: latency.dat's run; 1.23: latency2.dat's)."""
    cwd, env = fixed
    plain = ok(psbase("query", "-d", "fixed_plain_qry.xml", cwd=cwd, env=env))
    other = ok(psbase("query", "-d", "fixed_plain_qry.xml", "-f", "f.version=1.23", cwd=cwd, env=env))
    # perfbase's raw_text: floats as Python 2 printed them ("24.0")
    assert _column(plain, 1)[:2] == ["24.0", "24.1"] and _column(other, 1)[:2] == ["23.0", "23.1"]
    # --fixed, psbase's own spelling, in either form; -f stays psbase's output format in psbase's form
    assert ok(psbase("query", "--file", "fixed_plain_qry.xml", "--fixed", "f.version=1.23", cwd=cwd, env=env)) == other
    assert ok(psbase("query", "-d", "fixed_plain_qry.xml", "--fixed=f.version=1.23", cwd=cwd, env=env)) == other
    # f.scale multiplies T_pp in fixed_scale_qry.xml (2 in the file); two -f together
    scaled = ok(psbase("query", "-d", "fixed_scale_qry.xml", "-f", "f.scale=4", "-f", "f.version=1.23",
                       cwd=cwd, env=env))
    assert scaled == (cwd / "verify" / "test_5.vfy").read_text() and "92.4 \t" in scaled
    refused(psbase("query", "-d", "fixed_plain_qry.xml", "-f", "f.version", cwd=cwd, env=env), "NAME=VALUE")
    refused(psbase("query", "fixed_TEST", "T_pp", "--by", "S_msg", "--fixed", "a=1", cwd=cwd, env=env),
            "goes with --file")


def test_query_replaces_its_outputs_as_perfbase_does(tmp_path):
    """perfbase's query writes its output files whether they exist or not (exist_qry_1.xml writes
    qry_result); psbase's own form still wants --force; the archive itself is never an output."""
    cwd, env = directory(tmp_path, "exist")
    ok(psbase("setup", "-d", "exist_exp.xml", cwd=cwd, env=env))
    ok(psbase("input", "-d", "exist_inp.xml", "input_1.dat", cwd=cwd, env=env))
    assert ok(psbase("query", "-d", "exist_qry_1.xml", cwd=cwd, env=env)) == ""
    (out,) = cwd.glob("qry_result*")  # the name the output's <filename> gives
    first = out.read_text()
    assert "4.0" in _column(first, 1)
    out.write_text("old\n")
    assert ok(psbase("query", "-d", "exist_qry_1.xml", cwd=cwd, env=env)) == ""
    assert out.read_text() == first
    refused(psbase("query", "--file", "exist_qry_1.xml", cwd=cwd, env=env), f"{out.name} exists", "--force")
    # perfbase's raw_text <filename>NAME</filename> writes NAME.dat: never the archive queried (a.db)
    (cwd / "q.xml").write_text((cwd / "exist_qry_1.xml").read_text().replace("qry_result", "../a.db"))
    size = (tmp_path / "a.db").stat().st_size
    assert ok(psbase("query", "-d", "q.xml", cwd=cwd, env=env)) == "" and (tmp_path / "a.db.dat").is_file()
    # an output named as the archive queried is refused, --force or not, and the archive stays
    refused(psbase("query", "exist_TEST", "r", "--by", "p", "-o", str(tmp_path / "a.db"), "--force",
                   cwd=cwd, env=env), "also an input")
    assert (tmp_path / "a.db").stat().st_size == size
    assert "exist_TEST" in ok(psbase("ls", cwd=cwd, env=env))


@pytest.fixture
def runs(tmp_path, db) -> tuple[Path, dict]:
    """perfbase's runs directory with its experiment set up."""
    cwd, env = directory(tmp_path, "runs", db)
    ok(psbase("setup", "-d", "runs_exp_desc.xml", cwd=cwd, env=env))
    return cwd, env


def test_synopsis_and_performed_date(runs):
    """perfbase's runs/runtest: input -s synopsis_D -p D-Dec-2004; info and ls show both."""
    cwd, env = runs
    for d in (1, 2):
        assert ok(psbase("input", "-d", "runs_inp_desc.xml", "-s", f"synopsis_{d}", "-p", f"{d}-Dec-2004",
                         f"data_{d}.dat", cwd=cwd, env=env)) == ""
    # the long forms, and psbase's own
    ok(psbase("input", "--desc=runs_inp_desc.xml", "--synopsis=third run", "--performed=2004-12-03 10:30",
              "data_3.dat", cwd=cwd, env=env))
    ok(psbase("input", "runs_TEST", "--desc", "runs_inp_desc.xml", "--synopsis", "fourth", "data_4.dat",
              cwd=cwd, env=env))
    info = ok(psbase("info", "-e", "runs_TEST", "-r", "1", cwd=cwd, env=env))
    assert "performed: 2004-12-01 00:00:00\n" in info and "synopsis: synopsis_1\n" in info
    ls = ok(psbase("ls", "runs_TEST", cwd=cwd, env=env)).splitlines()
    assert ls[0].split() == ["run", "filed", "(UTC)", "performed", "who", "synopsis", "sources"]
    assert "2004-12-02 00:00:00" in ls[2] and "synopsis_2" in ls[2]
    assert "2004-12-03 10:30:00" in ls[3] and "third run" in ls[3]
    # no date given: the run was performed when it was filed (blank), as without perfbase's options
    assert "fourth" in ls[4] and "2004-12" not in ls[4]
    assert "performed:" not in ok(psbase("info", "runs_TEST", "4", cwd=cwd, env=env))


def test_performed_date_refused_and_nothing_filed(runs):
    cwd, env = runs
    for bad in ("31-Foo-2004", "yesterday", "2004-13-01"):
        refused(psbase("input", "-d", "runs_inp_desc.xml", "-p", bad, "data_1.dat", cwd=cwd, env=env),
                f"--performed {bad!r} is not a date")
    refused(psbase("input", "-d", "runs_inp_desc.xml", "-s", "-", "data_1.dat", cwd=cwd, env=env), "input -s -")
    assert len(ok(psbase("ls", "runs_TEST", cwd=cwd, env=env)).splitlines()) == 1


def test_use_mtime_dates_a_run_by_its_file(runs):
    """perfbase's input -m (--use-mtime): the run is dated by its input file's modification time (the newest
    of its files, as pb_input.py's code does; its comment says the oldest); -p wins over it."""
    import datetime as dt
    import os

    cwd, env = runs
    when = dt.datetime(2005, 2, 3, 4, 5, 6)
    os.utime(cwd / "data_1.dat", (when.timestamp(), when.timestamp()))
    later = dt.datetime(2006, 7, 8, 9, 10, 11)
    os.utime(cwd / "data_2.dat", (later.timestamp(), later.timestamp()))
    ok(psbase("input", "-m", "-d", "runs_inp_desc.xml", "data_1.dat", cwd=cwd, env=env))
    ok(psbase("input", "--use-mtime", "-j", "-d", "runs_inp_desc.xml", "data_1.dat", "data_2.dat", "--force",
              cwd=cwd, env=env))
    ok(psbase("input", "-m", "-p", "1-Dec-2004", "-d", "runs_inp_desc.xml", "data_3.dat", cwd=cwd, env=env))
    assert "performed: 2005-02-03 04:05:06" in ok(psbase("info", "runs_TEST", "1", cwd=cwd, env=env))
    assert "performed: 2006-07-08 09:10:11" in ok(psbase("info", "runs_TEST", "2", cwd=cwd, env=env))
    assert "performed: 2004-12-01 00:00:00" in ok(psbase("info", "runs_TEST", "3", cwd=cwd, env=env))


def test_an_older_archive_gets_the_columns(tmp_path):
    """An archive made before runs had a performed date and a synopsis: opened, it gets them, empty; its runs
    stay as they were."""
    import sqlite3

    cwd, env = directory(tmp_path, "runs")
    ok(psbase("setup", "-d", "runs_exp_desc.xml", cwd=cwd, env=env))
    ok(psbase("input", "-d", "runs_inp_desc.xml", "data_1.dat", cwd=cwd, env=env))
    with sqlite3.connect(env["PSBASE_DB"]) as c:
        c.execute("ALTER TABLE psb_runs DROP COLUMN performed")
        c.execute("ALTER TABLE psb_runs DROP COLUMN synopsis")
        c.execute("DROP TABLE psb_psets")
    before = ok(psbase("ls", "runs_TEST", cwd=cwd, env=env))
    assert before.splitlines()[0].split()[:4] == ["run", "filed", "(UTC)", "who"]
    ok(psbase("input", "-d", "runs_inp_desc.xml", "-s", "new", "-p", "2004-12-02", "data_2.dat", cwd=cwd, env=env))
    ls = ok(psbase("ls", "runs_TEST", cwd=cwd, env=env)).splitlines()
    assert ls[1].split()[:3] == before.splitlines()[1].split()[:3] and "new" in ls[2] and "2004-12-02" in ls[2]
    ok(psbase("input", "--pset-store=s", "-d", "runs_inp_desc.xml", "data_3.dat", cwd=cwd, env=env))
    assert ok(psbase("info", "runs_TEST", "--pset", "s", cwd=cwd, env=env)) == "parameter set 's':\n"


def _vfy(d: str, n: int) -> str:
    return (SUITE / d / "verify" / f"test_{n}.vfy").read_text()


def _archive(db: str) -> list:
    """Every row of every table of an SQLite archive."""
    import sqlite3

    with sqlite3.connect(db) as c:
        tables = [t for (t,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return [(t, sorted(c.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr)) for t in tables]


@pytest.mark.parametrize(("directory_name", "args", "vfy"), [
    ("count", ["-a", "ignore", "-d", "count_inp.xml", "input/input_1.dat"], 1),
    ("count", ["-a", "ignore", "-d", "count_inp.xml", "input/input_6.dat"], 6),
    # a data set: each row as perfbase's Python 2 printed a dict
    ("plain_table", ["-d", "plain_table_inp.xml", "latency_1.dat"], 1),
    # -u: a default is filled in at the end; -f: a fixed value comes first
    ("missing", ["-u", "-d", "missing_inp.xml", "input_1.dat"], 1),
    ("missing", ["-f", "MPI_version=1.25", "-d", "missing_inp.xml", "input_4.dat"], 5),
])
def test_test_import_prints_what_perfbase_prints_and_files_nothing(tmp_path, directory_name, args, vfy):
    """perfbase's input -t (--test): the runs as perfbase's test import prints them, byte for byte; the archive
    stays as it was."""
    cwd, env = directory(tmp_path, directory_name)
    ok(psbase("setup", "-d", f"{directory_name}_exp.xml", cwd=cwd, env=env))
    before = _archive(env["PSBASE_DB"])
    assert ok(psbase("input", "-t", *args, cwd=cwd, env=env)) == _vfy(directory_name, vfy)
    assert _archive(env["PSBASE_DB"]) == before
    # --test, and psbase's own form, print the same
    desc = args[args.index("-d") + 1]
    own = ["--fixed" if a == "-f" else a for a in args if a not in ("-d", desc, "-a", "ignore", "-u")]
    policy = ["--missing", "default" if "-u" in args else "empty" if "ignore" in args else "refuse"]
    name = directory_name + "_TEST"
    assert ok(psbase("input", name, "--desc", desc, *own, *policy, "--test", cwd=cwd, env=env)) == \
        _vfy(directory_name, vfy)
    assert _archive(env["PSBASE_DB"]) == before


def test_test_import_of_a_bad_file_is_one_line(tmp_path):
    """A test import that fails (a value missing, abort) is psbase's one line and exit status 2 (perfbase
    prints the rows read before it, then its message, and exits 1); nothing filed either way."""
    cwd, env = directory(tmp_path, "missing")
    ok(psbase("setup", "-d", "missing_exp.xml", cwd=cwd, env=env))
    before = _archive(env["PSBASE_DB"])
    refused(psbase("input", "-t", "--missing=abort", "-d", "missing_inp.xml", "input_2.dat", cwd=cwd, env=env),
            "input_2.dat", "no value for")
    assert _archive(env["PSBASE_DB"]) == before


def test_py2_dict_order():
    """The key order of perfbase's printed rows: Python 2's dict order, checked against its recorded outputs
    (map/verify/test_1.vfy: fs before T; split/verify/test_1.vfy: t_0, t, func)."""
    from psuite.psbase.dryrun import py2_dict_order

    assert "{'fs': 'XFS', 'T': '1'}" in _vfy("map", 1) and py2_dict_order(["T", "fs"]) == ["fs", "T"]
    assert "{'t_0': '0.21', 't': '0.24', 'func': 'func2'}" in _vfy("split", 1)
    assert py2_dict_order(["func", "t", "t_0"]) == py2_dict_order(["t_0", "t", "func"]) == ["t_0", "t", "func"]
    # Python 2's well-known {'a': 1, 'c': 3, 'b': 2}; and a table grown past 8 slots keeps every key
    assert py2_dict_order("abc") == ["a", "c", "b"]
    keys = [f"value_{i}" for i in range(20)]
    assert sorted(py2_dict_order(keys)) == sorted(keys)


def test_parameter_sets(tmp_path, db):
    """perfbase's pset/runtest: --pset-store keeps the parameters a file gives as a named set (no run filed;
    a second store replaces the values it gives), --pset-use takes them as fixed values (-f wins, then the
    first set named), info -p prints a set as perfbase does (verify/test_5..7.vfy)."""
    cwd, env = directory(tmp_path, "pset", db)
    ok(psbase("setup", "-d", "pset_exp.xml", cwd=cwd, env=env))
    for p in (1, 2, 4):
        assert ok(psbase("input", f"--pset-store=pset_{p}", "-d", "pset_inp.xml", f"params_{p}.dat",
                         cwd=cwd, env=env)) == ""
    ok(psbase("input", "--pset-store=pset_1", "-d", "pset_inp.xml", "params_3.dat", cwd=cwd, env=env))
    assert len(ok(psbase("ls", "pset_TEST", cwd=cwd, env=env)).splitlines()) == 1  # no run filed
    for p, vfy in ((1, 5), (2, 6), (4, 7)):
        assert ok(psbase("info", "-e", "pset_TEST", "-p", f"pset_{p}", cwd=cwd, env=env)) == _vfy("pset", vfy)
    assert ok(psbase("info", "pset_TEST", "--pset", "pset_4", cwd=cwd, env=env)) == _vfy("pset", 7)
    # input_1.dat gives no P_1: refused without a set
    refused(psbase("input", "-d", "pset_inp.xml", "input_1.dat", cwd=cwd, env=env), "no value for 'P_1'")
    for n, use in enumerate((["--pset-use=pset_1"], ["--pset-use=pset_1", "-f", "P_2=tiny"],
                             ["--pset-use=pset_4,pset_1"], ["--pset-use=pset_4", "--pset-use=pset_2"]), 1):
        ok(psbase("input", *use, "-d", "pset_inp.xml", f"input_{n}.dat", cwd=cwd, env=env))
    ls = [line.split()[4:6] for line in ok(psbase("ls", "pset_TEST", "--show", "P_1,P_2", cwd=cwd,
                                                  env=env)).splitlines()[1:]]
    assert ls == [["1", "large"], ["1", "tiny"], ["1", "small"], ["2", "small"]]
    refused(psbase("info", "-e", "pset_TEST", "-p", "pset_0", cwd=cwd, env=env), "no parameter set 'pset_0'",
            "pset_1, pset_2, pset_4")
    refused(psbase("input", "--pset-use=pset_9", "-d", "pset_inp.xml", "input_5.dat", cwd=cwd, env=env),
            "no parameter set 'pset_9'")
    assert len(ok(psbase("ls", "pset_TEST", cwd=cwd, env=env)).splitlines()) == 5
