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
from tests.psbase.conftest import new_pg_database

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

    conn = sqlite3.connect(db)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


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


def test_an_output_never_replaces_the_archive_queried(archive):
    cwd = archive.parent
    before = snapshot(archive)
    (cwd / "link.db").symlink_to("psbase.db")
    for name in ("psbase.db", "./psbase.db", "link.db", str(archive)):
        msg = one_line_error(psbase("query", "adv", "t", "--by", "n", "-o", name, "--force", cwd=cwd), "psbase")
        assert "is also an input" in msg
    (cwd / "q.xml").write_text("""<query><experiment>adv</experiment>
      <source id="s"><result>t</result></source>
      <output id="o" format="text"><input>s</input><filename>psbase.db</filename></output></query>""")
    assert "is also an input" in one_line_error(psbase("query", "--file", "q.xml", "--force", cwd=cwd), "psbase")
    assert snapshot(archive) == before


# -- a shared PostgreSQL archive: what another user can hold ------------------------------------------------


@pytest.fixture
def pg_archive(pg_server, tmp_path):
    """Experiment adv with one run on a fresh PostgreSQL database, and a query-class user; (url, user url)."""
    import sqlalchemy as sa

    url = new_pg_database(pg_server)
    (tmp_path / "adv.xml").write_text(DEFINITION)
    (tmp_path / "in.xml").write_text(desc())
    (tmp_path / "run1.txt").write_text("label x\nn = 3\nt = 1.5\n")
    (tmp_path / "run2.txt").write_text("label y\nn = 4\nt = 2.5\n")
    ok(psbase("--db", url, "setup", "adv.xml", cwd=tmp_path))
    ok(psbase("--db", url, "input", "adv", "--desc", "in.xml", "run1.txt", cwd=tmp_path))
    user = "reader_" + sa.make_url(url).database
    ok(psbase("--db", url, "user", "add", user, "--class", "query", cwd=tmp_path))
    return url, sa.make_url(url).set(username=user).render_as_string(hide_password=False)


@pytest.mark.parametrize("hold", ["advisory lock", "open transaction"])
def test_a_query_user_holding_a_lock_cannot_make_psbase_wait_for_ever(pg_archive, tmp_path, hold):
    import sqlalchemy as sa

    url, reader = pg_archive
    before = snapshot_pg(url)
    engine = sa.create_engine(reader)
    try:
        with engine.connect() as conn:  # the reader's session stays open while psbase runs
            if hold == "advisory lock":  # every import into experiment 1 takes this lock first
                conn.execute(sa.text(f"SELECT pg_advisory_lock({0x70736200}, 1)"))  # psbase's lock class
                args = ["input", "adv", "--desc", "in.xml", "run2.txt"]
            else:  # a transaction that read the experiment's runs: ALTER TABLE waits for its end
                conn.execute(sa.text("SELECT count(*) FROM psb_x1_once"))
                (tmp_path / "more.xml").write_text(DEFINITION.replace(
                    "</experiment>", '<parameter occurence="once"><name>m</name><datatype>integer</datatype>'
                    "</parameter></experiment>"))
                args = ["update", "more.xml"]
            p = subprocess.run([PSBASE, "--db", url, *args], cwd=tmp_path, capture_output=True, text=True,
                               timeout=60, env={**os.environ, "PSBASE_LOCK_TIMEOUT": "2"})
            msg = one_line_error(p, "psbase")
            assert "waited 2 s for a lock another session holds" in msg and "PSBASE_LOCK_TIMEOUT" in msg
            conn.rollback()
    finally:
        engine.dispose()
    assert snapshot_pg(url) == before
    ok(psbase("--db", url, *args, cwd=tmp_path))  # and once the lock is gone, the same command goes through


def snapshot_pg(url: str) -> dict[str, list]:
    from tests.psbase.test_roles import snapshot as pg_snapshot

    return pg_snapshot(url)


@pytest.fixture
def tiny_fs(tmp_path) -> Path:
    """A 96 KiB tmpfs, unmounted after the test (the tests run as root, as CI does)."""
    assert os.geteuid() == 0, "mounting a tmpfs needs root: run the tests as root, as CI does"
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k,mode=0777", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


def fill(directory: Path, leave: int = 0) -> None:
    """Fill the file system of directory up to `leave` bytes."""
    st = os.statvfs(directory)
    (directory / "pad").write_bytes(b"\0" * max(0, st.f_bavail * st.f_frsize - leave))


def test_setup_on_a_full_disk_leaves_no_archive(tiny_fs):
    (tiny_fs / "adv.xml").write_text(DEFINITION)
    fill(tiny_fs, leave=8192)
    msg = one_line_error(psbase("setup", "adv.xml", cwd=tiny_fs), "psbase")
    assert "full" in msg
    assert sorted(p.name for p in tiny_fs.iterdir()) == ["adv.xml", "pad"]


def test_an_import_on_a_full_disk_changes_nothing(tiny_fs):
    (tiny_fs / "adv.xml").write_text(DEFINITION)
    (tiny_fs / "in.xml").write_text(desc())
    ok(psbase("setup", "adv.xml", cwd=tiny_fs))
    runs = "".join(f"label r{i}\nn = {i}\nt = {i}.5\n\n" for i in range(2000))
    (tiny_fs / "runs.txt").write_text(runs[:20000])
    before = snapshot(tiny_fs / "psbase.db")
    fill(tiny_fs)
    msg = one_line_error(psbase("input", "adv", "--desc", "in.xml", "runs.txt", cwd=tiny_fs), "psbase")
    assert "full" in msg
    assert snapshot(tiny_fs / "psbase.db") == before


@pytest.mark.parametrize("value", ["٣", "１", "1_000", "３.5"])
def test_numbers_are_ascii_digits(archive, value):
    cwd = archive.parent
    (cwd / "run2.txt").write_text(f"label y\nn = {value}\nt = 2\n")
    (cwd / "run3.txt").write_text(f"label z\nn = 5\nt = {value}\n")
    before = snapshot(archive)
    for run, var, kind in (("run2.txt", "n", "an integer"), ("run3.txt", "t", "a number")):
        msg = one_line_error(psbase("input", "adv", "--desc", "in.xml", run, cwd=cwd), "psbase")
        assert f"variable {var!r}: {value!r} is not {kind}" in msg
    assert snapshot(archive) == before


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize(("line", "problem"), [
    ("label a\0b", "variable 'label': the value holds a NUL character"),
    ("version 1." + "1" * 5000, "variable 'version': a version of 5002 characters is longer than 255"),
])
def test_values_no_database_stores_are_refused_naming_file_and_variable(request, tmp_path, backend, line, problem):
    url = new_pg_database(request.getfixturevalue("pg_server")) if backend == "postgresql" else "psbase.db"
    (tmp_path / "d.xml").write_text("""<experiment><name>strs</name>
      <parameter occurence="once"><name>label</name><datatype>string</datatype></parameter>
      <parameter occurence="once"><name>version</name><datatype>version</datatype></parameter>
      <result occurence="once"><name>t</name><datatype>float</datatype></result></experiment>""")
    (tmp_path / "i.xml").write_text("""<input>
      <named_location><name>label</name><match>label</match></named_location>
      <named_location><name>version</name><match>version</match></named_location>
      <named_location><name>t</name><match>t =</match></named_location></input>""")
    good = "label a\nversion 1.2\nt = 1\n"
    (tmp_path / "bad.txt").write_text(good.replace(line.split()[0] + " " + ("a" if "label" in line else "1.2"), line))
    ok(psbase("--db", url, "setup", "d.xml", cwd=tmp_path))
    msg = one_line_error(psbase("--db", url, "input", "strs", "--desc", "i.xml", "bad.txt", cwd=tmp_path), "psbase")
    assert msg.startswith("psbase: bad.txt:") and problem in msg
    assert ok(psbase("--db", url, "ls", cwd=tmp_path)).splitlines()[1].split() == ["strs", "0", "0"]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_purged_run_number_is_never_given_again(request, archive, backend):
    cwd = archive.parent
    url = new_pg_database(request.getfixturevalue("pg_server")) if backend == "postgresql" else str(archive)
    if backend == "postgresql":
        ok(psbase("--db", url, "setup", "adv.xml", cwd=cwd))
        ok(psbase("--db", url, "input", "adv", "--desc", "in.xml", "run1.txt", cwd=cwd))
    for i in (2, 3):
        (cwd / f"run{i}.txt").write_text(f"label r{i}\nn = {i}\nt = {i}.5\n")
        ok(psbase("--db", url, "input", "adv", "--desc", "in.xml", f"run{i}.txt", cwd=cwd))
    ok(psbase("--db", url, "delete", "--purge", "adv", "2-3", cwd=cwd))
    (cwd / "run4.txt").write_text("label r4\nn = 4\nt = 4.5\n")
    assert "(4)" in ok(psbase("--db", url, "input", "adv", "--desc", "in.xml", "run4.txt", cwd=cwd))
    ok(psbase("--db", url, "delete", "--purge", "adv", "4", cwd=cwd))  # a purge below the mark keeps it
    ok(psbase("--db", url, "delete", "--purge", "adv", "1", cwd=cwd))
    (cwd / "run5.txt").write_text("label r5\nn = 5\nt = 5.5\n")
    assert "(5)" in ok(psbase("--db", url, "input", "adv", "--desc", "in.xml", "run5.txt", cwd=cwd))
    runs = [line.split()[0] for line in ok(psbase("--db", url, "ls", "adv", cwd=cwd)).splitlines()[1:]]
    assert runs == ["5"]


def test_an_archive_made_before_the_purge_mark_gets_it(archive):
    import sqlite3

    cwd = archive.parent
    conn = sqlite3.connect(archive)
    conn.execute("DROP TABLE psb_purged")  # as an older psbase made it
    conn.commit()
    conn.close()
    ok(psbase("delete", "--purge", "adv", "1", cwd=cwd))
    (cwd / "run2.txt").write_text("label r2\nn = 2\nt = 2.5\n")
    assert "(2)" in ok(psbase("input", "adv", "--desc", "in.xml", "run2.txt", cwd=cwd))
