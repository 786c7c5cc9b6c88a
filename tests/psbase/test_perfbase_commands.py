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
    rows = [x.split() for x in out.splitlines() if x[:1].isdigit()]
    assert [r[0] for r in rows] == ["0", "1", "2", "4"] and "3.3" in rows[3] and "1.3" in rows[3]
    # a query description is not an input description
    refused(psbase("input", "-n", "latency", "input/data_1.dat", cwd=cwd, env=env), "not an input description")
    # psbase's own form
    same = ok(psbase("query", "attach_TEST", "--file", "attached:latency", cwd=cwd, env=env))
    assert same == out
