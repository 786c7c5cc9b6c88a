"""perfbase's other commands (attach, info, update, ...) through the real psbase command, with perfbase's own
test files from ../shared/perfbase/test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.psbase.test_cli import ok, psbase
from tests.psbase.test_cli_perfbase import refused

SUITE = Path(__file__).resolve().parents[2] / ".." / "shared" / "perfbase" / "test"


def directory(tmp_path: Path, name: str) -> tuple[Path, dict]:
    """perfbase's test directory NAME copied, with an archive of its own."""
    shutil.copytree(SUITE / name, tmp_path / name)
    return tmp_path / name, {"PSBASE_DB": str(tmp_path / "a.db")}


@pytest.fixture
def attach(tmp_path) -> tuple[Path, dict]:
    cwd, env = directory(tmp_path, "attach")
    ok(psbase("setup", "-d", "attach_exp.xml", cwd=cwd, env=env))
    return cwd, env


def test_attach_put_takes_the_name_from_the_id_or_n(attach):
    cwd, env = attach
    assert ok(psbase("attach", "--put", "--xml=attach_inp_1.xml", cwd=cwd, env=env)) == ""
    # attach_inp_2.xml has no id: perfbase needs -n
    refused(psbase("attach", "--put", "--xml=attach_inp_2.xml", cwd=cwd, env=env), "--name")
    ok(psbase("attach", "--put", "-n", "named", "--xml=attach_inp_2.xml", cwd=cwd, env=env))
    # the same name again only with --force
    refused(psbase("attach", "--put", "-n", "named", "--xml=attach_inp_2.xml", cwd=cwd, env=env),
            "'named'", "--force")
    ok(psbase("attach", "--put", "-n", "named", "--force", "--xml=attach_inp_2.xml", cwd=cwd, env=env))
    listed = ok(psbase("attach", "-e", "attach_TEST", "--list", cwd=cwd, env=env)).splitlines()
    assert listed[0].split() == ["#", "name", "type", "synopsis"]
    assert [x.split()[:2] for x in listed[1:]] == [["full", "input"], ["named", "input"]]
    assert "Parse the only-once values." in listed[2]


def test_attach_refuses_files_that_are_not_perfbase_xml(attach):
    cwd, env = attach
    refused(psbase("attach", "--put", "-n", "invalid", "-e", "attach_TEST", "--xml=invalid.xml", cwd=cwd, env=env),
            "invalid.xml", "<invalid>")
    refused(psbase("attach", "--put", "-n", "binary", "-e", "attach_TEST", "--xml=zero.bin", cwd=cwd, env=env),
            "zero.bin", "not well-formed")
    assert ok(psbase("attach", "attach_TEST", "--list", cwd=cwd, env=env)) == ""


def test_attach_get_writes_the_file_as_it_was_and_delete_removes_it(attach):
    cwd, env = attach
    ok(psbase("attach", "--put", "--xml=attach_qry.xml", cwd=cwd, env=env))
    # no experiment given: the one with an attachment of that name
    ok(psbase("attach", "--get", "--name=latency", "--xml=test.xml", cwd=cwd, env=env))
    assert (cwd / "test.xml").read_bytes() == (cwd / "attach_qry.xml").read_bytes()
    refused(psbase("attach", "--get", "--name=notfound", "-e", "attach_TEST", "--xml=t2.xml", cwd=cwd, env=env),
            "'notfound'", "latency")
    assert not (cwd / "t2.xml").exists()
    refused(psbase("attach", "-e", "attach_TEST", "--delete", "--name=latency", cwd=cwd, env=env), "--dontask")
    ok(psbase("attach", "-e", "attach_TEST", "--delete", "--name=latency", "--dontask", cwd=cwd, env=env))
    assert ok(psbase("attach", "attach_TEST", "--list", cwd=cwd, env=env)) == ""


def test_input_and_query_read_attached_descriptions(attach):
    """input -n NAME reads the attached input description; two -n make one run; query -n the attached query."""
    cwd, env = attach
    for f in ("attach_inp_1.xml", "attach_inp_3.xml", "attach_qry.xml"):
        ok(psbase("attach", "--put", f"--xml={f}", cwd=cwd, env=env))
    ok(psbase("attach", "--put", "-n", "named", "--xml=attach_inp_2.xml", cwd=cwd, env=env))
    assert ok(psbase("input", "-n", "full", "input/data_1.dat", cwd=cwd, env=env)) == ""
    ok(psbase("input", "-n", "named", "input/data_2.dat", "-n", "tabular", "input/data_3.dat", cwd=cwd, env=env))
    runs = ok(psbase("ls", "attach_TEST", "--show", "MPI_version", cwd=cwd, env=env)).splitlines()[1:]
    assert len(runs) == 2 and runs[0].split()[-2:] == ["1.3", "input/data_1.dat"]
    assert "input/data_2.dat input/data_3.dat" in runs[1] and " 1.2 " in runs[1]
    out = ok(psbase("query", "-e", "attach_TEST", "-n", "latency", cwd=cwd, env=env))
    assert out == (cwd / "verify" / "test_13.vfy").read_text()  # perfbase's raw_text: a block per MPI_version
    # a query description is not an input description
    refused(psbase("input", "-n", "latency", "input/data_1.dat", cwd=cwd, env=env), "not an input description")
    # psbase's own form
    same = ok(psbase("query", "attach_TEST", "--file", "attached:latency", cwd=cwd, env=env))
    assert same == out


def _info(cwd: Path, env: dict) -> str:
    """update/'s runtest: info -e EXP -v -i, then info -e EXP -v --val=, without the lines it greps away."""
    out = ok(psbase("info", "-e", "update_TEST", "-v", "-i", cwd=cwd, env=env)) + \
        ok(psbase("info", "-e", "update_TEST", "-v", "--val=", cwd=cwd, env=env))
    return "".join(x for x in out.splitlines(keepends=True)
                   if not any(d in x for d in ("Connecting", "Created", "Modified", "admin_access")))


def test_info_after_experiment_updates_is_perfbases(tmp_path):
    """update/: after each <experiment_update>, perfbase's info -v -i and --val= give verify/test_N.vfy byte
    for byte (the description as written, units as perfbase writes them, sizes of integer and float, the
    variables in the server's collation order, run indexes)."""
    cwd, env = directory(tmp_path, "update")
    ok(psbase("setup", "-d", "update_exp.xml", cwd=cwd, env=env))
    for n in (1, 2, 3, 4):
        assert ok(psbase("update", "-d", f"update_upd_{n}.xml", cwd=cwd, env=env)) != ""
        assert _info(cwd, env) == (cwd / "verify" / f"test_{n}.vfy").read_text()
    ok(psbase("input", "-d", "update_inp.xml", "-u", *sorted(p.name for p in cwd.glob("input_?.dat")), cwd=cwd,
              env=env))
    for n in (5, 6):  # an update that does not fit is one line and changes nothing
        refused(psbase("update", "-d", f"update_upd_{n}.xml", cwd=cwd, env=env))
        assert _info(cwd, env) == (cwd / "verify" / "test_8.vfy").read_text()


def test_info_short_forms(attach):
    """info -e EXP without -v: the meta information only; --value without -v: one line per variable."""
    cwd, env = attach
    out = ok(psbase("info", "-e", "attach_TEST", cwd=cwd, env=env))
    assert out.startswith("Experiment attach_TEST (db_version 5)\n Creator     : Joachim Worringen\n")
    assert " Users" not in out and "runs" not in out
    lines = ok(psbase("info", "-e", "attach_TEST", "--value=^[IS]", cwd=cwd, env=env)).splitlines()
    assert [x.split()[0] for x in lines] == ["I", "S_msg"]
    assert lines[1].split("\t")[0].split() == ["S_msg", ":"] and "[byte]" in lines[1] and "PM " in lines[1]
    verbose = ok(psbase("info", "-e", "attach_TEST", "-v", "--value=I", cwd=cwd, env=env))
    assert "    Valid values: { SCI,Myrinet}\n" in verbose
    # attachments and run counts in the long form
    ok(psbase("attach", "--put", "--xml=attach_inp_1.xml", cwd=cwd, env=env))
    ok(psbase("input", "-n", "full", "input/data_1.dat", cwd=cwd, env=env))
    long = ok(psbase("info", "-e", "attach_TEST", "-v", cwd=cwd, env=env))
    assert "Attached input descriptions:\n   full\n\nNo query descriptions attached.\n" in long
    assert "\n Active runs : 1\n" in long and "Indices" not in long
    refused(psbase("info", "attach_TEST", "--inventory", cwd=cwd, env=env), "--verbose")


def test_access_directory_on_postgresql(pg_server, tmp_path):
    """access/ as its runtest does it, each step as its database user: who may file, query and update follows
    the experiment's access lists and the updates' <access_add>, <access_change> and <access_revoke>."""
    from tests.psbase.conftest import new_pg_database
    from tests.psbase.perfbase_suite import run_directory

    checks = run_directory("access", tmp_path / "access", new_pg_database(pg_server))
    print("\n".join(f"{c.verdict:8} {c.name} {c.reason}" for c in checks))
    assert len(checks) == 14
    # the queries' refusals of an <output> element psbase's query files lack are not the users' doing
    wrong = [c for c in checks if c.verdict != "exact" and not c.name.startswith("query")]
    assert not wrong, wrong


def test_access_lists_need_users(tmp_path):
    """On SQLite (no users) a definition or update with access lists is one line; nothing is created."""
    cwd, env = directory(tmp_path, "access")
    refused(psbase("setup", "-d", "access_exp_2.xml", cwd=cwd, env=env), "<admin_access>", "SQLite")
    assert not (tmp_path / "a.db").exists()
    ok(psbase("setup", "-d", "access_exp_1.xml", cwd=cwd, env=env))
    refused(psbase("update", "-d", "access_upd_1.xml", cwd=cwd, env=env), "SQLite")


def test_access_updates_change_what_a_user_may_do(pg_server, tmp_path):
    """<access_add> gives pb_input_usr_1_ input access (it files a run), <access_change> makes it a query
    user (its import is refused by its class, its query answers), <access_revoke> takes it away."""
    from tests.psbase.conftest import new_pg_database
    from tests.psbase.perfbase_suite import _as_user, _create_user

    db = new_pg_database(pg_server)
    cwd, env = directory(tmp_path, "access")
    env = {"PSBASE_DB": db}
    user = {"PSBASE_DB": _as_user(db, "pb_input_usr_1_")}
    _create_user(db, "pb_input_usr_1_")
    ok(psbase("setup", "-d", "access_exp_1.xml", cwd=cwd, env=env))
    refused(psbase("input", "-u", "-d", "access_inp.xml", "input_1.dat", cwd=cwd, env=user), "pb_input_usr_1_")
    assert "class input" in ok(psbase("update", "-d", "access_upd_1.xml", cwd=cwd, env=env))
    assert ok(psbase("input", "-u", "-d", "access_inp.xml", "input_1.dat", cwd=cwd, env=user)) == ""
    assert ok(psbase("user", "ls", cwd=cwd, env=env)).split()[2:] == ["pb_input_usr_1_", "input"]
    ok(psbase("update", "-d", "access_upd_2.xml", cwd=cwd, env=env))
    refused(psbase("input", "-u", "-d", "access_inp.xml", "input_2.dat", cwd=cwd, env=user), "may only query")
    assert "1" in ok(psbase("ls", "access_TEST", cwd=cwd, env=user))
    ok(psbase("update", "-d", "access_upd_3.xml", cwd=cwd, env=env))
    refused(psbase("ls", "access_TEST", cwd=cwd, env=user))
    assert ok(psbase("user", "ls", cwd=cwd, env=env)).split()[2:] == []


def test_dump_and_restore_an_experiment(attach, tmp_path):
    """perfbase's dump -e EXP writes EXP__YYYYMMDD_HHMM.*; restore -f DUMP [-e NAME] creates the experiment
    again with its runs (indexes, deleted flags), values and attachments, in this archive or another."""
    cwd, env = attach
    ok(psbase("attach", "--put", "--xml=attach_inp_1.xml", cwd=cwd, env=env))
    ok(psbase("input", "-n", "full", "input/data_1.dat", cwd=cwd, env=env))
    ok(psbase("input", "-d", "attach_inp_1.xml", "input/data_2.dat", cwd=cwd, env=env))
    ok(psbase("delete", "attach_TEST", "1", cwd=cwd, env=env))
    ok(psbase("dump", "-e", "attach_TEST", cwd=cwd, env=env))
    (dump,) = cwd.glob("attach_TEST__*")
    assert len(dump.name.split("__")[1].split(".")[0]) == len("20240101_1200")
    refused(psbase("restore", "-f", dump.name, cwd=cwd, env=env), "exists")
    ok(psbase("restore", "-f", dump.name, "-e", "copy", cwd=cwd, env=env))
    other = {"PSBASE_DB": str(tmp_path / "other.db")}
    ok(psbase("restore", "--file", dump.name, cwd=cwd, env=other))  # psbase's form; the archive is made
    for e, name in ((env, "copy"), (other, "attach_TEST")):
        assert ok(psbase("ls", name, "--deleted", "--show", "MPI_version", cwd=cwd, env=e)).split("\n", 1)[1] == \
            ok(psbase("ls", "attach_TEST", "--deleted", "--show", "MPI_version", cwd=cwd, env=env)).split("\n", 1)[1]
        assert ok(psbase("info", name, "2", cwd=cwd, env=e)).split("\n", 1)[1] == \
            ok(psbase("info", "attach_TEST", "2", cwd=cwd, env=env)).split("\n", 1)[1]
        assert "full" in ok(psbase("attach", name, "--list", cwd=cwd, env=e))
    refused(psbase("restore", "-f", dump.name, "--force", cwd=cwd, env=env), "restore --force")
    (cwd / "bad.gz").write_bytes(b"\x1f\x8bnot gzip")
    refused(psbase("restore", "--file", "bad.gz", "x", cwd=cwd, env=env), "bad.gz", "psbase dump")
    assert "x " not in ok(psbase("ls", cwd=cwd, env=env))


def test_find_runs_by_values_and_meta_data(attach):
    """perfbase's find -e EXP -s NAME -c NAME<op>VALUE -m LABELS: one tab-separated line per run found."""
    cwd, env = attach
    ok(psbase("input", "-d", "attach_inp_1.xml", "input/data_1.dat", cwd=cwd, env=env))  # 1.3, SCI, S_msg 0..4
    ok(psbase("input", "-d", "attach_inp_1.xml", "input/data_2.dat", cwd=cwd, env=env))  # 1.2
    out = ok(psbase("find", "-e", "attach_TEST", "-s", "MPI_version", "-m", "indx", "-v", cwd=cwd, env=env))
    assert out == "# MPI_version \tindex\n1.2 \t2\n1.3 \t1\n"
    # a data-set condition: a run some row of which meets it; its distinct values shown up to --nvals
    out = ok(psbase("find", "-e", "attach_TEST", "-s", "S_msg", "-c", "S_msg>0", "-m", "indx", "--nvals=5",
                    cwd=cwd, env=env))
    assert out == "1|2|4 \t1\n"
    assert ok(psbase("find", "-e", "attach_TEST", "-s", "S_msg", "-m", "indx", cwd=cwd, env=env)).startswith(
        "#4values# \t1\n")
    assert ok(psbase("find", "-e", "attach_TEST", "-c", "MPI_version=1.2,I=Myrinet", cwd=cwd, env=env)) == ""
    assert ok(psbase("find", "attach_TEST", "--meta", "indx", "--created-by", "nobody_here", cwd=cwd, env=env)) == ""
    refused(psbase("find", "-e", "attach_TEST", "-c", "S_msg~3", cwd=cwd, env=env), "NAME<op>VALUE")
    refused(psbase("find", "-e", "attach_TEST", "-d", "search.xml", cwd=cwd, env=env), "find --desc")


def test_check_reports_and_cleans(attach):
    cwd, env = attach
    ok(psbase("input", "-d", "attach_inp_1.xml", "input/data_1.dat", cwd=cwd, env=env))
    ok(psbase("input", "-d", "attach_inp_1.xml", "input/data_2.dat", cwd=cwd, env=env))
    assert ok(psbase("check", "-a", cwd=cwd, env=env)) == "psbase: attach_TEST: consistent\n"
    ok(psbase("delete", "attach_TEST", "1", cwd=cwd, env=env))
    assert ok(psbase("check", "-e", "attach_TEST", "--clean", cwd=cwd, env=env)) == \
        "psbase: attach_TEST: purged run 1\n"
    assert "1 " not in ok(psbase("ls", "attach_TEST", "--deleted", cwd=cwd, env=env)).split("\n", 1)[1][:2]
    refused(psbase("check", "-e", "attach_TEST", "--tune", cwd=cwd, env=env), "check --tune")
    import sqlite3

    with sqlite3.connect(env["PSBASE_DB"]) as c:  # a run's values lost behind psbase's back
        c.execute("DELETE FROM psb_x1_once")
    refused(psbase("check", "attach_TEST", cwd=cwd, env=env), "run 2 has no row in psb_x1_once")


def test_version_and_unknown_options(attach):
    cwd, env = attach
    assert ok(psbase("version", cwd=cwd, env=env)).startswith("psbase")
    refused(psbase("version", "-w", cwd=cwd, env=env), "version -w")
    refused(psbase("dump", "-e", "attach_TEST", "--gaga", cwd=cwd, env=env), "--gaga")
    refused(psbase("attach", "--put", "--xml=attach_qry.xml", "-i", cwd=cwd, env=env), "attach --interactive")


def test_delete_p_removes_a_parameter_set_and_info_x_prints_an_attachment(tmp_path):
    cwd, env = directory(tmp_path, "pset")
    ok(psbase("setup", "-d", "pset_exp.xml", cwd=cwd, env=env))
    for p in (1, 2):
        ok(psbase("input", f"--pset-store=pset_{p}", "-d", "pset_inp.xml", f"params_{p}.dat", cwd=cwd, env=env))
    ok(psbase("delete", "-e", "pset_TEST", "-p", "pset_1", cwd=cwd, env=env))
    assert "Available parameter sets:\n   pset_2\n\n" in ok(psbase("info", "-e", "pset_TEST", "-v", cwd=cwd, env=env))
    refused(psbase("delete", "-e", "pset_TEST", "-p", "pset_1", cwd=cwd, env=env), "no parameter set 'pset_1'")
    ok(psbase("attach", "--put", "-n", "inp", "--xml=pset_inp.xml", cwd=cwd, env=env))
    assert ok(psbase("info", "-e", "pset_TEST", "-x", "inp", cwd=cwd, env=env)) == (cwd / "pset_inp.xml").read_text()
