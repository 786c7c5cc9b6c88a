"""perfbase's options of input and query that psbase takes as perfbase does (psuite.psbase.perfbase_cli),
through the real psbase command with perfbase's own test files from ../shared/perfbase/test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.psbase.test_cli import ok, psbase

SUITE = Path(__file__).resolve().parents[2] / ".." / "shared" / "perfbase" / "test"


def refused(p, *words: str) -> str:
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stdout == "" and len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in p.stderr, p.stderr
    return p.stderr


def directory(tmp_path: Path, name: str) -> tuple[Path, dict]:
    """perfbase's test directory NAME copied, with an archive of its own."""
    shutil.copytree(SUITE / name, tmp_path / name)
    return tmp_path / name, {"PSBASE_DB": str(tmp_path / "a.db")}


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
    assert _column(plain, 1)[:2] == ["24", "24.1"] and _column(other, 1)[:2] == ["23", "23.1"]
    # --fixed, psbase's own spelling, in either form; -f stays psbase's output format in psbase's form
    assert ok(psbase("query", "--file", "fixed_plain_qry.xml", "--fixed", "f.version=1.23", cwd=cwd, env=env)) == other
    assert ok(psbase("query", "-d", "fixed_plain_qry.xml", "--fixed=f.version=1.23", cwd=cwd, env=env)) == other
    # f.scale multiplies T_pp in fixed_scale_qry.xml (2 in the file); two -f together
    scaled = ok(psbase("query", "-d", "fixed_scale_qry.xml", "-f", "f.scale=4", "-f", "f.version=1.23",
                       cwd=cwd, env=env))
    assert _column(scaled, 2)[:2] == ["92", "92.4"]
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
    assert "4" in _column(first, 1)
    out.write_text("old\n")
    assert ok(psbase("query", "-d", "exist_qry_1.xml", cwd=cwd, env=env)) == ""
    assert out.read_text() == first
    refused(psbase("query", "--file", "exist_qry_1.xml", cwd=cwd, env=env), f"{out.name} exists", "--force")
    # an output named as the archive queried is refused, --force or not, and the archive stays
    (cwd / "q.xml").write_text((cwd / "exist_qry_1.xml").read_text().replace("qry_result", "../a.db"))
    size = (tmp_path / "a.db").stat().st_size
    refused(psbase("query", "-d", "q.xml", cwd=cwd, env=env), "a.db is also an input")
    refused(psbase("query", "exist_TEST", "r", "--by", "p", "-o", str(tmp_path / "a.db"), "--force",
                   cwd=cwd, env=env), "also an input")
    assert (tmp_path / "a.db").stat().st_size == size
    assert "exist_TEST" in ok(psbase("ls", cwd=cwd, env=env))
