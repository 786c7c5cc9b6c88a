"""psbase end to end as a user runs it: the installed command, exit status
0 or 2, one-line errors, nothing half-done."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from lxml import etree

from tests.conftest import TARGETS, one_line_error, run_tool
from tests.psbase.conftest import archive_tables
from tests.psbase.test_definition import BEFF_IO

PSBASE = str(Path(sys.executable).parent / "psbase")


def psbase(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "PSBASE_DB"}
    e.update(env or {})
    return subprocess.run([PSBASE, *args], cwd=cwd, env=e, capture_output=True, text=True, timeout=120)


def ok(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    return p.stdout


@pytest.fixture(scope="module")
def count_doc(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("psbase_cli_runs")
    subprocess.run(["cc", "-O1", "-o", str(out / "work"), str(TARGETS / "work.c")], check=True)
    p = run_tool("psrun", "-q", "-d", str(out), "-e", "task-clock", str(out / "work"), "100", "5", "0")
    assert p.returncode == 0, p.stderr
    (doc,) = out.glob("*.xml")
    return doc


def test_help_reads_well(tmp_path):
    out = ok(psbase("--help", cwd=tmp_path))
    for word in ("setup", "update", "input", "query", "ls", "info", "delete", "restore", "--db", "PSBASE_DB"):
        assert word in out
    assert "--merge" in ok(psbase("input", "--help", cwd=tmp_path))


def test_missing_archive_is_a_clear_error_and_not_created(tmp_path):
    # SQLite on purpose: the default psbase.db and PSBASE_DB naming a file that is not there
    for args in (["ls"], ["info", "x"], ["ls", "--deleted", "x"], ["delete", "x", "1"]):
        msg = one_line_error(psbase(*args, cwd=tmp_path), "psbase")
        assert "no archive psbase.db; create one with `psbase setup" in msg
    msg = one_line_error(psbase("--db", str(tmp_path / "other.db"), "ls", cwd=tmp_path), "psbase")
    assert "other.db" in msg
    msg = one_line_error(psbase("ls", cwd=tmp_path, env={"PSBASE_DB": str(tmp_path / "env.db")}), "psbase")
    assert "env.db" in msg
    assert list(tmp_path.iterdir()) == []


def test_setup_without_db_creates_psbase_db_here(tmp_path):
    # SQLite on purpose: the default archive, psbase.db in the current directory
    (tmp_path / "beff.xml").write_bytes(BEFF_IO)
    out = ok(psbase("setup", "beff.xml", cwd=tmp_path))
    assert "experiment b_eff_io created in psbase.db (5 parameters, 1 results)" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["beff.xml", "psbase.db"]
    assert ok(psbase("ls", cwd=tmp_path)).splitlines()[1].split()[:3] == ["b_eff_io", "0", "0"]


def test_definition_setup_update_and_info(tmp_path, db_url):
    (tmp_path / "beff.xml").write_bytes(BEFF_IO)
    db = ("--db", db_url)
    out = ok(psbase(*db, "setup", "beff.xml", cwd=tmp_path))
    assert out == f"psbase: experiment b_eff_io created in {db_url} (5 parameters, 1 results)\n"
    assert "exists" in one_line_error(psbase(*db, "setup", "beff.xml", cwd=tmp_path), "psbase")
    listing = ok(psbase(*db, "ls", cwd=tmp_path))
    assert listing.splitlines()[1].split()[:3] == ["b_eff_io", "0", "0"]
    info = ok(psbase(*db, "info", "b_eff_io", cwd=tmp_path))
    assert "B_scatter" in info and "MB/s" in info and "Joachim Worringen" in info
    # info --xml gives the definition back; editing it and updating changes the experiment
    xml = ok(psbase(*db, "info", "b_eff_io", "--xml", cwd=tmp_path))
    root = etree.fromstring(xml.encode())
    (tmp_path / "same.xml").write_text(xml)
    assert ok(psbase(*db, "update", "same.xml", cwd=tmp_path)) == "psbase: nothing changed\n"
    extra = etree.SubElement(root, "result", occurrence="multiple")
    etree.SubElement(extra, "name").text = "B_read"
    etree.SubElement(extra, "datatype").text = "float"
    (tmp_path / "new.xml").write_bytes(etree.tostring(root))
    assert ok(psbase(*db, "update", "new.xml", cwd=tmp_path)) == "psbase: added B_read\n"
    assert "B_read" in ok(psbase(*db, "info", "b_eff_io", cwd=tmp_path))
    assert not (tmp_path / "psbase.db").exists()  # --db named the archive: no default one made beside it


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"<experiment>", "not well-formed XML"),
        (
            b"<experiment><name>e</name><parameter><name>x</name><datatype>real</datatype></parameter></experiment>",
            "datatype 'real'",
        ),
    ],
)
def test_malformed_definition_creates_nothing(tmp_path, db_url, data, message):
    (tmp_path / "bad.xml").write_bytes(data)
    msg = one_line_error(psbase("--db", db_url, "setup", "bad.xml", cwd=tmp_path), "psbase")
    assert message in msg and "bad.xml" in msg
    assert "no such file" in one_line_error(psbase("--db", db_url, "setup", "none.xml", cwd=tmp_path), "psbase")
    before = [] if "://" in db_url else None  # the server's database was there, empty; no SQLite file was
    assert archive_tables(db_url) == before


def test_psuite_documents_end_to_end(tmp_path, count_doc, db_url):
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", "--psuite", "app", cwd=tmp_path, env=env))
    assert ok(psbase("input", "app", str(count_doc), cwd=tmp_path, env=env)) == "psbase: 1 run filed in app (1)\n"
    msg = one_line_error(psbase("input", "app", str(count_doc), cwd=tmp_path, env=env), "psbase")
    assert "already run 1 of app; import it again only with --force" in msg
    assert "(2)" in ok(psbase("input", "--force", "app", str(count_doc), cwd=tmp_path, env=env))
    task_clock = float(next(etree.parse(str(count_doc)).getroot().iter("hwpcevent")).text)
    info = ok(psbase("info", "app", "1", cwd=tmp_path, env=env))
    line = next(x for x in info.splitlines() if x.startswith("task_clock "))
    assert float(line.split()[1]) == task_clock
    runs = ok(psbase("ls", "app", cwd=tmp_path, env=env)).splitlines()
    assert [r.split()[0] for r in runs[1:]] == ["1", "2"]
    assert str(count_doc) in runs[1]


def test_delete_restore_purge(tmp_path, count_doc, db_url):
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", "--psuite", "app", cwd=tmp_path, env=env))
    ok(psbase("input", "app", str(count_doc), cwd=tmp_path, env=env))
    ok(psbase("input", "--force", "app", str(count_doc), cwd=tmp_path, env=env))
    assert ok(psbase("delete", "app", "1", cwd=tmp_path, env=env)) == "psbase: deleted run 1 of app\n"
    assert [r.split()[0] for r in ok(psbase("ls", "app", cwd=tmp_path, env=env)).splitlines()[1:]] == ["2"]
    deleted = ok(psbase("ls", "app", "--deleted", cwd=tmp_path, env=env)).splitlines()
    assert deleted[1].split()[0] == "1" and deleted[1].endswith("(deleted)")
    # what each did, and which runs already were so
    assert ok(psbase("delete", "app", "1-2", cwd=tmp_path, env=env)) == \
        "psbase: deleted run 2 of app; run 1 was already deleted\n"
    assert ok(psbase("restore", "app", "1-2", cwd=tmp_path, env=env)) == "psbase: restored runs 1-2 of app\n"
    assert ok(psbase("restore", "app", "1", cwd=tmp_path, env=env)) == "psbase: run 1 was not deleted\n"
    assert len(ok(psbase("ls", "app", cwd=tmp_path, env=env)).splitlines()) == 3
    assert ok(psbase("delete", "--purge", "app", "1-2", cwd=tmp_path, env=env)) == "psbase: purged runs 1-2 of app\n"
    assert ok(psbase("ls", "app", "--deleted", cwd=tmp_path, env=env)).splitlines()[1:] == []
    assert "has no run 1" in one_line_error(psbase("info", "app", "1", cwd=tmp_path, env=env), "psbase")


def test_bad_input_files_nothing_half_imported(tmp_path, count_doc, db_url):
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", "--psuite", "app", cwd=tmp_path, env=env))
    (tmp_path / "junk.xml").write_text("this is not a report\n")
    msg = one_line_error(psbase("input", "app", str(count_doc), "junk.xml", cwd=tmp_path, env=env), "psbase")
    assert "junk.xml" in msg
    assert ok(psbase("ls", "app", "--deleted", cwd=tmp_path, env=env)).splitlines()[1:] == []
    assert "no such file" in one_line_error(psbase("input", "app", "gone.xml", cwd=tmp_path, env=env), "psbase")
    msg = one_line_error(psbase("input", "nope", str(count_doc), cwd=tmp_path, env=env), "psbase")
    assert "no experiment 'nope'" in msg
    (tmp_path / "beff.xml").write_bytes(BEFF_IO)
    ok(psbase("setup", "beff.xml", cwd=tmp_path, env=env))
    msg = one_line_error(psbase("input", "b_eff_io", str(count_doc), cwd=tmp_path, env=env), "psbase")
    assert "not set up for psuite documents" in msg


def test_usage_errors_are_one_line(tmp_path, db_url):
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", "--psuite", "app", cwd=tmp_path, env=env))
    assert "'x' is not a run index" in one_line_error(psbase("delete", "app", "x", cwd=tmp_path, env=env), "psbase")
    assert "empty" in one_line_error(psbase("delete", "app", "5-2", cwd=tmp_path, env=env), "psbase")
    assert "has no run 3" in one_line_error(psbase("restore", "app", "3", cwd=tmp_path, env=env), "psbase")
    assert "is not usable" in one_line_error(psbase("setup", "--psuite", "my app", cwd=tmp_path, env=env), "psbase")
    for args in (["frobnicate"], ["setup"], ["info"], ["setup", "x.xml", "--psuite", "y"]):
        p = psbase(*args, cwd=tmp_path, env=env)  # argparse's own errors: "psbase [COMMAND]: ... (see ... --help)"
        assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and p.stderr.startswith("psbase")
        assert "--help" in p.stderr and "Traceback" not in p.stderr
    assert "not supported" in one_line_error(psbase("--db", "mysql://h/db", "ls", cwd=tmp_path, env=env), "psbase")


def test_unreachable_server_is_one_line(tmp_path):
    # port 1 on the loopback: refused at once, no server needed
    p = psbase("--db", "postgresql+psycopg://nobody@127.0.0.1:1/none", "ls", cwd=tmp_path)
    msg = one_line_error(p, "psbase")
    assert "127.0.0.1" in msg and "--db" in msg


def test_missing_server_database_is_one_line(tmp_path, pg_server):
    # PostgreSQL on purpose: the server answers, the database named is not on it (SQLite's missing file is above)
    url = f"postgresql+psycopg://psb@/nosuch?host={quote(pg_server, safe='')}"
    for args in (["ls"], ["setup", "--psuite", "app"]):
        msg = one_line_error(psbase("--db", url, *args, cwd=tmp_path), "psbase")
        assert "nosuch" in msg and "--db" in msg, msg
    assert list(tmp_path.iterdir()) == []


DATA = Path(__file__).resolve().parent / "data"


def test_text_output_through_an_input_description(tmp_path, db_url):
    """psbase input --desc: the b_eff_io summaries of the paper, the stored
    data set equal to the text's table, read here with split()."""
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", str(DATA / "b_eff_io.experiment.xml"), cwd=tmp_path, env=env))
    files = sorted(str(p) for p in DATA.glob("*.sum"))
    out = ok(psbase("input", "b_eff_io", "--desc", str(DATA / "b_eff_io.input.xml"), *files, cwd=tmp_path, env=env))
    assert out == f"psbase: {len(files)} runs filed in b_eff_io (1-4)\n"
    text = Path(files[0]).read_text().splitlines()
    table = [line.split() for line in text if re.match(r"\s*\d+ PEs \d+ ", line)]  # not the total- lines
    shown = ok(psbase("info", "b_eff_io", "1", cwd=tmp_path, env=env)).splitlines()
    start = next(i for i, line in enumerate(shown) if line.startswith("data set:"))
    assert shown[start] == f"data set: {len(table)} rows"
    rows = [line.split() for line in shown[start + 2 :]]
    # N_proc pos S_chunk access and the five bandwidths, as the text has them
    assert [[r[0], r[1], r[2], r[3], *map(float, r[4:])] for r in rows] == [
        [t[0], t[2], t[3], t[4], *map(float, t[5:10])] for t in table
    ]
    line = next(x for x in text if "b_eff_io of these measurements =" in x)
    expected = float(line.split("=")[1].split()[0])
    assert float(next(x for x in shown if x.startswith("b_eff_io ")).split()[1]) == expected
    # the same files again: refused, nothing filed
    msg = one_line_error(
        psbase("input", "b_eff_io", "--desc", str(DATA / "b_eff_io.input.xml"), *files, cwd=tmp_path, env=env),
        "psbase",
    )
    assert "already run 1 of b_eff_io" in msg
    # a fixed value of the wrong type is one line, nothing filed
    msg = one_line_error(
        psbase(
            "input",
            "b_eff_io",
            "--desc",
            str(DATA / "b_eff_io.input.xml"),
            "--fixed",
            "T=ten",
            "--force",
            files[0],
            cwd=tmp_path,
            env=env,
        ),
        "psbase",
    )
    assert "'ten' is not an integer" in msg
    assert len(ok(psbase("ls", "b_eff_io", "--deleted", cwd=tmp_path, env=env)).splitlines()) == 1 + len(files)
    # description options need a description
    msg = one_line_error(psbase("input", "b_eff_io", "--fixed", "T=1", files[0], cwd=tmp_path, env=env), "psbase")
    assert "go with --desc" in msg


@pytest.mark.parametrize(
    "args, flag",
    [
        (["--db", "", "ls"], "--db"),
        (["ls", "--db", ""], "--db"),
        (["query", "x", "y", "--by", "z", "-f", "csv", "-o", ""], "-o"),
        (["query", "--file", ""], "--file"),
        (["input", "x", "--desc", "", "f.out"], "--desc"),
        (["query", "x", "y", "--by", "z", "--unit", ""], "--unit"),
    ],
)
def test_an_empty_value_is_refused_not_taken_as_the_default(tmp_path, args, flag):
    # without the check, `-o ""` printed to standard output and `--db ""` opened ./psbase.db
    msg = one_line_error(psbase(*args, cwd=tmp_path), "psbase")
    assert f"{flag} needs a value, not an empty one" in msg
    assert list(tmp_path.iterdir()) == []


def test_update_removing_a_variable_with_values_needs_force(tmp_path, db_url):
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", str(DATA / "b_eff_io.experiment.xml"), cwd=tmp_path, env=env))
    run = sorted(DATA.glob("*.sum"))[0]
    ok(psbase("input", "b_eff_io", "--desc", str(DATA / "b_eff_io.input.xml"), str(run), cwd=tmp_path, env=env))
    root = etree.fromstring(ok(psbase("info", "b_eff_io", "--xml", cwd=tmp_path, env=env)).encode())
    [host] = [p for p in root.iter("parameter") if p.findtext("name") == "host"]
    host.getparent().remove(host)
    (tmp_path / "new.xml").write_bytes(etree.tostring(root))
    msg = one_line_error(psbase("update", "new.xml", cwd=tmp_path, env=env), "psbase")
    assert "removes 'host', which run 1 has values for; give --force" in msg
    assert "host" in ok(psbase("info", "b_eff_io", "1", cwd=tmp_path, env=env))  # nothing changed
    assert "removed host" in ok(psbase("update", "--force", "new.xml", cwd=tmp_path, env=env))
    assert "host" not in ok(psbase("info", "b_eff_io", "1", cwd=tmp_path, env=env)).split()


def test_info_shows_a_duration_in_its_unit(tmp_path):
    (tmp_path / "def.xml").write_text(
        '<experiment><name>d</name><parameter occurrence="once"><name>n</name><datatype>integer</datatype>'
        '</parameter><result occurrence="once"><name>t</name><datatype>duration</datatype><unit><base_unit>s'
        '</base_unit></unit></result><result occurrence="once"><name>tm</name><datatype>duration</datatype><unit>'
        '<base_unit>min</base_unit></unit></result><result occurrence="once"><name>tx</name><datatype>duration'
        '</datatype></result></experiment>')
    (tmp_path / "in.xml").write_text(
        "<input>" + "".join(f"<named_location><name>{v}</name><match>{m}</match></named_location>"
                            for v, m in (("n", "n="), ("t", "t="), ("tm", "t="), ("tx", "t="))) + "</input>")
    (tmp_path / "out.txt").write_text("n=3\nt=0:01:30\n")
    ok(psbase("setup", "def.xml", cwd=tmp_path))
    ok(psbase("input", "d", "--desc", "in.xml", "out.txt", cwd=tmp_path))
    rows = {r.split()[0]: r.split()[1:] for r in ok(psbase("info", "d", "1", cwd=tmp_path)).splitlines()[2:]}
    assert rows["t"] == ["90", "s"] and rows["tm"] == ["1.5", "min"] and rows["tx"] == ["0:01:30"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["info", "app", "99999999999999999999"], "an experiment holds at most 2,147,483,647 runs"),
        (["delete", "app", "1-2000000000"], "names 2,000,000,000 runs; give at most 1,000,000 at once"),
        (["info", "\udcff"], "bytes that are not UTF-8 (b'\\xff')"),
        (["ls", "app", "--where", "host=\udcff"], "bytes that are not UTF-8"),
    ],
)
def test_huge_indexes_and_undecodable_arguments_are_one_line(tmp_path, db_url, args, message):
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", "--psuite", "app", cwd=tmp_path, env=env))
    assert message in one_line_error(psbase(*args, cwd=tmp_path, env=env), "psbase")


def test_a_pipe_or_device_given_as_input_is_refused_not_read(tmp_path, db_url):
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", "--psuite", "app", cwd=tmp_path, env=env))
    os.mkfifo(tmp_path / "pipe")
    for path, kind in ((str(tmp_path / "pipe"), "a named pipe"), ("/dev/zero", "a character device")):
        assert f"is not a regular file ({kind})" in one_line_error(psbase("input", "app", path, cwd=tmp_path,
                                                                            env=env), "psbase")
