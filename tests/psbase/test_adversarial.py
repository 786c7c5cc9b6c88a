"""psbase against hostile input, through the real command: input descriptions, definitions and queries
from other people, special files where regular ones belong, outputs aimed at the archive, locks held by
another user. Each case: one line, exit 2, within a bounded time, the archive unchanged, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import one_line_error

PSBASE = str(Path(sys.executable).parent / "psbase")

DEFINITION = """<?xml version="1.0"?>
<experiment>
  <name>adv</name>
  <parameter occurence="once"><name>label</name><datatype>string</datatype></parameter>
  <parameter occurence="once"><name>n</name><datatype>integer</datatype></parameter>
  <result occurence="once"><name>t</name><datatype>float</datatype></result>
</experiment>
"""


def desc(label_regexp: str = r"label (\w+)") -> str:
    return f"""<?xml version="1.0"?>
<input>
  <named_location><name>label</name><regexp>{label_regexp}</regexp></named_location>
  <named_location><name>n</name><match>n =</match></named_location>
  <named_location><name>t</name><match>t =</match></named_location>
</input>
"""


def psbase(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PSBASE_DB"}
    return subprocess.run([PSBASE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def ok(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture
def archive(tmp_path) -> Path:
    """An archive with experiment adv and one run (label x, n 3, t 1.5); the cwd is tmp_path."""
    (tmp_path / "adv.xml").write_text(DEFINITION)
    (tmp_path / "in.xml").write_text(desc())
    (tmp_path / "run1.txt").write_text("label x\nn = 3\nt = 1.5\n")
    ok(psbase("setup", "adv.xml", cwd=tmp_path))
    ok(psbase("input", "adv", "--desc", "in.xml", "run1.txt", cwd=tmp_path))
    return tmp_path / "psbase.db"


def snapshot(db: Path) -> list[str]:
    """Every table's schema and rows, as SQL."""
    import sqlite3

    with sqlite3.connect(db) as conn:
        return list(conn.iterdump())


def test_a_regexp_that_backtracks_without_end_is_stopped(archive):
    cwd = archive.parent
    (cwd / "slow.xml").write_text(desc("^label (a|aa)+$"))
    (cwd / "run2.txt").write_text("label " + "a" * 41 + "b\nn = 4\nt = 2\n")
    before = snapshot(archive)
    p = psbase("input", "adv", "--desc", "slow.xml", "run2.txt", cwd=cwd, timeout=30)
    msg = one_line_error(p, "psbase")
    assert "'^label (a|aa)+$' took more than" in msg and "simplify it" in msg
    assert snapshot(archive) == before


@pytest.mark.parametrize(("term", "problem"), [
    ("round(3, -100000000)", None),  # ends at once, and n is 0
    ("(2**63)**64 * (2**63)**64 * (2**63)**64 * (2**63)**64", "the result is too large"),  # 4,855 digits
])
def test_derived_parameters_end_and_big_integers_are_one_line(archive, term, problem):
    cwd = archive.parent
    text = desc().replace('<named_location><name>n</name><match>n =</match></named_location>',
                          f"<derived_parameter><name>n</name><term>{term}</term></derived_parameter>")
    (cwd / "derived.xml").write_text(text)
    (cwd / "run2.txt").write_text("label y\nt = 2\n")
    before = snapshot(archive)
    p = psbase("input", "adv", "--desc", "derived.xml", "run2.txt", cwd=cwd, timeout=30)
    if problem is None:
        ok(p)
        rows = [line.split()[4:6] for line in ok(psbase("ls", "adv", "--show", "label,n", cwd=cwd)).splitlines()]
        assert ["y", "0"] in rows
        return
    assert problem in one_line_error(p, "psbase")
    assert snapshot(archive) == before


@pytest.mark.parametrize("kind", ["fifo", "zero", "dir"])
@pytest.mark.parametrize("role", ["--desc", "--with", "data", "query"])
def test_special_files_where_files_belong_are_refused_at_once(archive, kind, role):
    cwd = archive.parent
    special = {"fifo": cwd / "fifo", "zero": Path("/dev/zero"), "dir": cwd}[kind]
    if kind == "fifo":
        os.mkfifo(special)  # nobody writes: reading it would wait for ever
    before = snapshot(archive)
    args = {"--desc": ["input", "adv", "--desc", str(special), "run1.txt"],
            "--with": ["input", "adv", "--with", str(special), "run1.txt"],
            "data": ["input", "adv", "--desc", "in.xml", "--force", str(special)],
            "query": ["query", "--file", str(special)]}[role]
    msg = one_line_error(psbase(*args, cwd=cwd, timeout=30), "psbase")
    assert str(special) in msg
    assert ("is a directory" if kind == "dir" else "is not a regular file") in msg
    assert snapshot(archive) == before
