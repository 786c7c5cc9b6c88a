"""perfbase's command line accepted by psbase beside its own (psuite.psbase.perfbase_cli): perfbase's files as
written, from ../shared/perfbase/test/default, through the real psbase command."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.psbase.conftest import archive_tables
from tests.psbase.test_cli import ok, psbase

DEFAULT = Path(__file__).resolve().parents[2] / ".." / "shared" / "perfbase" / "test" / "default"


@pytest.fixture
def exp(tmp_path) -> tuple[Path, dict]:
    """perfbase's default test directory copied, an experiment set up in it with `setup -d`."""
    shutil.copytree(DEFAULT, tmp_path / "t")
    cwd, env = tmp_path / "t", {"PSBASE_DB": str(tmp_path / "a.db")}
    out = ok(psbase("setup", "-d", "default_exp_float_1.xml", cwd=cwd, env=env))
    assert "experiment default_TEST created" in out
    return cwd, env


def refused(p, *words: str) -> str:
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stdout == "" and len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in p.stderr, p.stderr
    return p.stderr


def test_input_query_info_ls_delete_as_perfbase_writes_them(exp):
    cwd, env = exp
    # perfbase's input says nothing when it succeeds (its scripts compare that)
    assert ok(psbase("input", "-d", "default_inp_1.xml", "input_1.dat", cwd=cwd, env=env)) == ""
    # the same run as psbase's own form files it: the two forms are one command
    ok(psbase("input", "default_TEST", "--desc", "default_inp_1.xml", "input_1.dat", "--force", cwd=cwd, env=env))
    assert ok(psbase("info", "--exp=default_TEST", "-r", "1", cwd=cwd, env=env)).split("\n", 1)[1] == \
        ok(psbase("info", "default_TEST", "2", cwd=cwd, env=env)).split("\n", 1)[1]
    # perfbase's info -e: its own layout, which psbase's info --perfbase prints
    assert ok(psbase("info", "-e", "default_TEST", "-v", cwd=cwd, env=env)) == \
        ok(psbase("info", "default_TEST", "--perfbase", "--verbose", cwd=cwd, env=env))
    assert ok(psbase("ls", "-e", "default_TEST", cwd=cwd, env=env)) == \
        ok(psbase("ls", "default_TEST", cwd=cwd, env=env))
    assert ok(psbase("query", "-d", "default_qry_1.xml", cwd=cwd, env=env)) == \
        ok(psbase("query", "--file", "default_qry_1.xml", cwd=cwd, env=env))
    out = ok(psbase("delete", "--exp=default_TEST", "--dontask", "--force", cwd=cwd, env=env))
    assert out == "psbase: removed experiment default_TEST and its 2 runs\n"
    assert "default_TEST" not in ok(psbase("ls", cwd=cwd, env=env))
    assert archive_tables(env["PSBASE_DB"]) == [
        "psb_attachments", "psb_experiments", "psb_psets", "psb_purged", "psb_runs", "psb_variables"]
    # set up again under the same name, as perfbase's scripts do after delete -e
    ok(psbase("setup", "--desc=default_exp_int_1.xml", cwd=cwd, env=env))


def test_use_default_and_missing_policies(exp):
    cwd, env = exp
    # perfbase aborts on a value the file lacks unless -u (the definition's default) is given
    refused(psbase("input", "-d", "default_inp_1.xml", "input_2.dat", cwd=cwd, env=env))
    assert "0     0" in ok(psbase("ls", cwd=cwd, env=env)).replace("default_TEST", "")


def test_unsupported_options_are_one_line_and_change_nothing(exp):
    cwd, env = exp
    before = ok(psbase("ls", "default_TEST", cwd=cwd, env=env))
    refused(psbase("input", "-i", "-d", "default_inp_1.xml", "input_1.dat", cwd=cwd, env=env), "input --stdin")
    refused(psbase("input", "--maxmem=10", "-d", "default_inp_1.xml", "input_1.dat", cwd=cwd, env=env),
            "input --maxmem")
    refused(psbase("input", "--pset-use=p1", "-d", "default_inp_1.xml", "input_1.dat", cwd=cwd, env=env),
            "no parameter set 'p1'")
    refused(psbase("input", "-Z", "-d", "default_inp_1.xml", "input_1.dat", cwd=cwd, env=env), "no option -Z")
    refused(psbase("query", "-d", "default_qry_1.xml", "-r", "1", cwd=cwd, env=env), "query --run")
    refused(psbase("info", "-e", "default_TEST", "--sort=name", cwd=cwd, env=env), "info --sort")
    refused(psbase("input", "--dbhost=h", "-d", "default_inp_1.xml", "input_1.dat", cwd=cwd, env=env), "--db URL")
    refused(psbase("setup", "-d", cwd=cwd, env=env), "-d needs a value")
    # an experiment is removed only when asked not to ask
    refused(psbase("delete", "-e", "default_TEST", cwd=cwd, env=env), "--dontask")
    assert ok(psbase("ls", "default_TEST", cwd=cwd, env=env)) == before
    assert "default_TEST" in ok(psbase("ls", cwd=cwd, env=env))


def test_two_descriptions_make_one_run(exp):
    """-d A a.dat -d B b.dat: each file read with the description before it, one run of both (perfbase's
    manual); here input_2.dat lacks the speed that input_1.dat gives."""
    cwd, env = exp
    ok(psbase("input", "-d", "default_inp_1.xml", "input_1.dat", "-d", "default_inp_1.xml", "input_2.dat",
              cwd=cwd, env=env))
    assert "default_TEST  1 " in ok(psbase("ls", cwd=cwd, env=env))
    assert len(ok(psbase("ls", "default_TEST", cwd=cwd, env=env)).splitlines()) == 2  # header and one run


def test_version():
    out = ok(psbase("version", cwd=Path.cwd()))
    assert out.startswith("psbase (psuite) ")


def test_delete_experiment_in_psbase_form(exp):
    cwd, env = exp
    refused(psbase("delete", "default_TEST", cwd=cwd, env=env), "name the runs")
    refused(psbase("delete", "default_TEST", "1", "--experiment", cwd=cwd, env=env), "drop the RUNs")
    refused(psbase("delete", "nosuch", "--experiment", cwd=cwd, env=env), "no experiment 'nosuch'")
    assert ok(psbase("delete", "default_TEST", "--experiment", cwd=cwd, env=env)).startswith(
        "psbase: removed experiment default_TEST")
    refused(psbase("info", "-e", "default_TEST", cwd=cwd, env=env), "no experiment 'default_TEST'")
