"""psrun --archive and psprocess --archive (and PSUITE_ARCHIVE): real psrun
runs of a small program filed into an archive; the runs' values checked
against the documents' XML, read here with lxml."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree

from psuite.psbase.store import Store
from tests.conftest import TARGETS, one_line_error, psrun_command, run_tool
from tests.psbase.conftest import absent_archive, archive_exists, new_pg_database

# Writes what it finds of psrun's and psbase's variables to argv[1], then
# exits with argv[2]: the measured program's own view of its environment.
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    volatile double x = 0;
    for (long i = 0; i < 2000000; i++)
        x += i * 0.5;
    FILE *f = fopen(argv[1], "w");
    const char *names[] = {"PSUITE_MANIFEST", "PSUITE_ARCHIVE", "PSBASE_DB"};
    for (int k = 0; k < 3; k++) {
        const char *v = getenv(names[k]);
        fprintf(f, "%s=%s\n", names[k], v ? v : "(unset)");
    }
    fclose(f);
    return argc > 2 ? atoi(argv[2]) : 0;
}
"""
EVENTS = "task-clock,page-faults"


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> dict[str, str]:
    """The program above, and the shared targets these tests run (only
    those: the conftest's targets fixture builds them all)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed (tests/run installs gcc)"
    out = tmp_path_factory.mktemp("filing")
    (out / "envprog.c").write_text(PROGRAM)
    sources = {"envprog": out / "envprog.c", **{n: TARGETS / f"{n}.c" for n in ("threads", "killself", "fork_chain")}}
    for name, src in sources.items():
        subprocess.run([cc, "-O1", "-pthread", "-o", str(out / name), str(src)], check=True)
    return {name: str(out / name) for name in sources}


@pytest.fixture
def program(built) -> str:
    return built["envprog"]


def setup_experiment(db: str, name: str = "exp") -> None:
    p = run_tool("psbase", "--db", db, "setup", "--psuite", name)
    assert p.returncode == 0, p.stderr


def seen_env(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


def column(name: str) -> str:
    """An event's variable name, as the archive's documentation says: runs of
    other characters become one underscore."""
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def xml_values(path: Path) -> dict[str, object]:
    """What a counting report says: its events by variable name, and the
    run values taken from it as they are."""
    root = etree.parse(str(path)).getroot()
    values: dict[str, object] = {column(e.get("name")): float(e.text) for e in root.iter("hwpcevent")}
    values["host"] = root.findtext("hostname")
    values["command"] = root.findtext("command")
    values["usertime"] = float(root.findtext("cputime/usertime"))
    return values


def counting_reports(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.xml") if ".resource." not in p.name)


def assert_run_matches(run, expected: dict[str, object]) -> None:
    for name, value in expected.items():
        got = run.values[name]
        if isinstance(value, float):
            assert got == pytest.approx(value, rel=1e-12), name
        else:
            assert got == value, name


def filing_lines(p: subprocess.CompletedProcess) -> list[str]:
    """psrun's lines about filing, among the library's notes."""
    return [line for line in p.stderr.splitlines() if line.startswith(("psrun: filed", "psrun: not filed"))]


def store_run(db: str, index: int, name: str = "exp"):
    store = Store(db)
    try:
        return store.run(name, index), [r.index for r in store.list_runs(name)]
    finally:
        store.close()


def run_indexes(db: str, name: str = "exp") -> list[int]:
    store = Store(db)  # closed at once: a server's connections are not left to the garbage collector
    try:
        return [r.index for r in store.list_runs(name)]
    finally:
        store.close()


# ---- psrun --archive -----------------------------------------------------------


def test_psrun_archive_files_the_report_and_keeps_the_exit_status(program, workdir, db_url):
    setup_experiment(db_url)
    p = run_tool("psrun", "-e", EVENTS, "--archive", "exp", "--db", db_url, program, "env.txt", "3")
    assert p.returncode == 3, p.stderr
    assert p.stdout == ""
    [doc] = counting_reports(workdir)
    [filed] = filing_lines(p)
    assert filed.startswith("psrun: filed run 1 in experiment exp of archive "), p.stderr
    run, indexes = store_run(db_url, 1)
    assert indexes == [1]
    assert run.sources == [str(doc)]
    expected = xml_values(doc)
    assert expected["task_clock"] > 0
    assert_run_matches(run, {**expected, "kind": "count", "threads": 1, "ranks": 1})
    # nothing of the filing in the program: no manifest variable, the caller's PSBASE_DB and PSUITE_ARCHIVE
    env = seen_env(workdir / "env.txt")
    assert env["PSUITE_MANIFEST"] == "(unset)"
    assert env["PSUITE_ARCHIVE"] == os.environ.get("PSUITE_ARCHIVE", "(unset)")
    assert env["PSBASE_DB"] == os.environ.get("PSBASE_DB", "(unset)")


def test_psrun_archive_from_the_environment(program, workdir, db_url):
    db = db_url
    setup_experiment(db)
    setup_experiment(db, "other")
    env = {**os.environ, "PSUITE_ARCHIVE": "exp", "PSBASE_DB": db}
    p = run_tool("psrun", "-e", EVENTS, program, "env.txt", env=env)
    assert p.returncode == 0, p.stderr
    assert filing_lines(p) == [f"psrun: filed run 1 in experiment exp of archive {db}"]
    # the program sees the caller's variables as they were; the manifest not at all
    assert seen_env(workdir / "env.txt") == {"PSUITE_MANIFEST": "(unset)", "PSUITE_ARCHIVE": "exp", "PSBASE_DB": db}
    run, _ = store_run(db, 1)
    assert_run_matches(run, xml_values(counting_reports(workdir)[0]))
    # the option wins over the variable; -q: nothing said when filing succeeds
    p = run_tool("psrun", "-q", "-e", EVENTS, "--archive", "other", program, "env2.txt", env=env)
    assert (p.returncode, p.stderr) == (0, "")
    assert run_indexes(db, "exp") == [1]
    assert run_indexes(db, "other") == [1]


def test_psrun_archive_with_stderr_closed(program, workdir, db_url):
    """The filer's line has nowhere to go: never onto stdout, the program's."""
    db = db_url
    setup_experiment(db)
    for experiment, status in (("exp", 0), ("nope", 2)):
        p = subprocess.run(["sh", "-c", 'exec "$@" 2>&-', "sh", psrun_command(), "-e", EVENTS, "--archive",
                            experiment, "--db", db, program, "env.txt"], capture_output=True, text=True, timeout=120)
        assert (p.returncode, p.stdout) == (status, "")
    assert run_indexes(db) == [1]


def test_psrun_archive_per_thread_and_resources(built, workdir, db_url):
    """-p: one process's thread reports make one run (the total left out as
    a double count); -R: the resource report is a run of its own."""
    db = db_url
    setup_experiment(db)
    p = run_tool("psrun", "-p", "-R", "--interval", "0.1", "-e", EVENTS, "--archive", "exp", "--db", db,
                 built["threads"], "3")
    assert p.returncode == 0, p.stderr
    assert filing_lines(p) == [f"psrun: filed runs 1, 2 in experiment exp of archive {db}"]
    docs = counting_reports(workdir)
    threads = [d for d in docs if etree.parse(str(d)).getroot().findtext("thread") != "0"]
    assert len(threads) == 4 and len(docs) == 5  # main and 3 workers, and the process total
    counts, _ = store_run(db, 1)
    per_thread = [xml_values(d) for d in threads]
    assert counts.values["threads"] == 4
    for name in ("task_clock", "page_faults"):
        assert counts.values[name] == pytest.approx(sum(v[name] for v in per_thread), rel=1e-12)
    assert sorted(counts.sources) == sorted(map(str, docs))
    [resource] = workdir.glob("*.resource.xml")
    res, _ = store_run(db, 2)
    root = etree.parse(str(resource)).getroot()
    assert res.sources == [str(resource)]
    assert res.values["kind"] == "resource"
    assert res.values["maxrss"] == pytest.approx(float(root.findtext("maxrss")), rel=1e-12)
    assert res.values["minor_faults"] == int(root.findtext("faults/minor"))


def test_psrun_archive_of_a_profile_with_call_paths(program, workdir, db_url):
    """The profile is one run; its call-path companion is read with it, not
    filed as a run of its own."""
    db = db_url
    setup_experiment(db)
    p = run_tool("psrun", "-q", "--callpath", "--period", "100", "--archive", "exp", "--db", db, program,
                 "env.txt")
    assert (p.returncode, p.stderr) == (0, "")
    [companion] = workdir.glob("*.callpaths.xml")
    [profile] = [d for d in workdir.glob("*.xml") if d != companion]
    root = etree.parse(str(profile)).getroot()
    assert root.get("mode") == "profile"
    run, indexes = store_run(db, 1)
    assert indexes == [1] and run.sources == [str(profile)]
    assert run.values["kind"] == "profile"
    assert run.values["total_samples"] == int(root.findtext(".//totalsamples")) > 0


def test_psrun_archive_follows_forks_and_execs(built, workdir, db_url):
    """-f: the processes the program forks, and the program a child execs,
    list their reports too (the manifest variable stays for them, as
    LD_PRELOAD does): one run each."""
    db = db_url
    setup_experiment(db)
    p = run_tool("psrun", "-q", "-f", "-e", EVENTS, "--archive", "exp", "--db", db, built["fork_chain"])
    assert (p.returncode, p.stderr) == (0, "")
    docs = counting_reports(workdir)
    assert len(docs) == 4  # parent, child, grandchild before its exec, and the shell it became
    store = Store(db)
    try:
        runs = store.list_runs("exp")
        assert sorted(s for r in runs for s in r.sources) == sorted(map(str, docs))
        by_source = {store.run("exp", r.index).sources[0]: store.run("exp", r.index) for r in runs}
    finally:
        store.close()
    for doc in docs:
        assert_run_matches(by_source[str(doc)], xml_values(doc))


def test_psrun_archive_of_a_killed_program(built, workdir, db_url):
    """The program's signal is psrun's, and its report is filed still."""
    db = db_url
    setup_experiment(db)
    p = run_tool("psrun", "-e", EVENTS, "--archive", "exp", "--db", db, built["killself"],
                 str(int(signal.SIGTERM)))
    assert p.returncode == -signal.SIGTERM, p.stderr
    [doc] = counting_reports(workdir)
    assert filing_lines(p) == [f"psrun: filed run 1 in experiment exp of archive {db}"]
    run, _ = store_run(db, 1)
    assert_run_matches(run, xml_values(doc))


def test_psrun_filing_failure(program, workdir, db_url):
    """One line (-q silences notes, not this), the documents on disk, status 2
    after a program that exited 0, else the program's."""
    db = db_url
    setup_experiment(db)
    p = run_tool("psrun", "-q", "-e", EVENTS, "--archive", "nope", "--db", db, program, "env.txt")
    line = one_line_error(p, "psrun")
    [doc] = counting_reports(workdir)
    assert line.startswith("psrun: not filed in nope: no experiment 'nope'"), line
    assert line.endswith(f"the reports stay: {doc}"), line
    assert xml_values(doc)["task_clock"] > 0
    # a program's own failure stays its status
    p = run_tool("psrun", "-q", "-e", EVENTS, "--archive", "nope", "--db", db, program, "env.txt", "5")
    assert p.returncode == 5 and len(p.stderr.splitlines()) == 1, p.stderr
    assert len(counting_reports(workdir)) == 2
    assert run_indexes(db) == []
    # no archive there: not made either
    absent, says = absent_archive(db)
    p = run_tool("psrun", "-q", "-e", EVENTS, "--archive", "exp", "--db", absent, program, "env.txt")
    line = one_line_error(p, "psrun")
    assert line.startswith("psrun: not filed in exp: ") and says in line, line
    assert not archive_exists(absent)


def test_filing_line_hides_the_password(program, workdir, pg_server):
    # PostgreSQL on purpose: an SQLite file has no password.  The private server trusts its
    # socket, so a password in the URL is accepted and unused; the lines on stderr must not show it.
    secret = "s3cret-pw"
    url = new_pg_database(pg_server).replace("psb@", f"psb:{secret}@", 1)
    shown = url.replace(secret, "***")
    p = run_tool("psbase", "--db", url, "setup", "--psuite", "exp")
    assert p.returncode == 0 and secret not in p.stdout + p.stderr, p.stdout + p.stderr
    assert p.stdout.startswith(f"psbase: experiment exp created in {shown} ("), p.stdout
    p = run_tool("psrun", "-e", EVENTS, "--archive", "exp", "--db", url, program, "env.txt")
    assert p.returncode == 0 and secret not in p.stdout + p.stderr, p.stderr
    assert filing_lines(p) == [f"psrun: filed run 1 in experiment exp of archive {shown}"]
    assert run_indexes(url) == [1]
    # nor the lines that say why not: a database not on the server, a port nothing listens on
    for db, says in (absent_archive(url), (f"postgresql+psycopg://psb:{secret}@127.0.0.1:1/none", "127.0.0.1")):
        p = run_tool("psprocess", "--archive", "exp", "--db", db, *map(str, counting_reports(workdir)))
        line = one_line_error(p, "psprocess")
        assert line.startswith("psprocess: --archive exp: not filed: ") and says in line, line
        assert secret not in line


def test_psrun_archive_option_errors(program, workdir, db_url):
    for args, says in ((["--db", "a.db"], "--db goes with --archive"), (["--archive", ""], "--archive needs")):
        p = run_tool("psrun", *args, program, "env.txt")
        assert says in one_line_error(p, "psrun")
        assert not (workdir / "env.txt").exists()  # refused before the program ran
    assert "--archive EXPERIMENT" in run_tool("psrun", "--help").stdout
    # the library refuses the configuration before the program runs: its one line, nothing to file
    db = db_url
    setup_experiment(db)
    p = run_tool("psrun", "-e", "NO_SUCH_EVENT", "--archive", "exp", "--db", db, program, "env.txt")
    assert "unknown event NO_SUCH_EVENT" in one_line_error(p, "psrun")
    assert not (workdir / "env.txt").exists() and run_indexes(db) == []


# ---- psprocess --archive ---------------------------------------------------------


def two_reports(program: str, directory: Path) -> list[Path]:
    for k in range(2):
        p = run_tool("psrun", "-q", "-e", EVENTS, program, f"env{k}.txt", cwd=directory)
        assert p.returncode == 0, p.stderr
    docs = counting_reports(directory)
    assert len(docs) == 2
    return docs


def test_psprocess_archive_one_run_per_input(program, workdir, db_url):
    setup_experiment(db_url)
    docs = two_reports(program, workdir)
    plain = run_tool("psprocess", *map(str, docs))
    p = run_tool("psprocess", "--archive", "exp", "--db", db_url, *map(str, docs))
    assert p.returncode == 0, p.stderr
    assert p.stdout == plain.stdout  # the report, untouched; what was filed only on stderr
    assert p.stderr.splitlines() == [f"psprocess: filed runs 1, 2 in experiment exp of archive {db_url}"]
    for index, doc in enumerate(docs, 1):
        run, _ = store_run(db_url, index)
        assert run.sources == [str(doc)]
        assert_run_matches(run, xml_values(doc))


def test_psprocess_combine_archive_is_one_run(program, workdir, db_url):
    db = db_url
    setup_experiment(db)
    docs = two_reports(program, workdir)
    env = {**os.environ, "PSUITE_ARCHIVE": "exp"}  # the variable asks as the option does
    p = run_tool("psprocess", "-c", "--db", db, str(workdir / "envprog.*.xml"), env=env)
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines() == [f"psprocess: filed run 1 in experiment exp of archive {db}"]
    run, indexes = store_run(db, 1)
    assert indexes == [1]
    values = [xml_values(d) for d in docs]
    assert sorted(run.sources) == sorted(map(str, docs))
    for name in ("task_clock", "page_faults", "usertime"):
        assert run.values[name] == pytest.approx(sum(v[name] for v in values), rel=1e-12)


def test_psprocess_archive_errors(program, workdir, db_url):
    db = db_url
    setup_experiment(db)
    [doc, _] = map(str, two_reports(program, workdir))
    report = run_tool("psprocess", doc).stdout
    assert report

    def refused(*args: str, env=None) -> str:
        p = run_tool("psprocess", *args, env=env)
        return one_line_error(p, "psprocess"), p.stdout

    # after the report: it stays on stdout
    line, out = refused("--archive", "nope", "--db", db, doc)
    assert out == report and line.startswith("psprocess: --archive nope: not filed: no experiment 'nope'"), line
    absent, says = absent_archive(db)
    line, out = refused("--archive", "exp", "--db", absent, doc)
    assert out == report and line.startswith("psprocess: --archive exp: not filed: ") and says in line, line
    assert not archive_exists(absent)
    assert run_tool("psprocess", "--archive", "exp", "--db", db, doc).returncode == 0
    line, out = refused("--archive", "exp", "--db", db, doc)
    assert out == report and "is already run 1 of exp" in line
    line, out = refused("--db", db, doc, env={**os.environ, "PSBASE_DB": db, "PSUITE_ARCHIVE": "exp"})
    assert line.startswith("psprocess: PSUITE_ARCHIVE=exp: not filed: ") and out == report
    definition = Path(__file__).parent / "data" / "b_eff_io.experiment.xml"
    assert run_tool("psbase", "--db", db, "setup", str(definition)).returncode == 0
    name = etree.parse(str(definition)).getroot().findtext("name")
    line, out = refused("--archive", name, "--db", db, doc)
    assert "was not set up for psuite documents" in line and out == report
    # before anything is read
    line, out = refused("--db", db, doc)
    assert "--db goes with --archive" in line and out == ""
    line, out = refused("--archive", "exp", "--db", db, "https://example.invalid/app.xml")
    assert "is a URL" in line and out == ""
    cube = workdir / "app.cubex"
    assert run_tool("psprocess", "--cube", str(cube), doc).returncode == 0
    line, out = refused("--archive", "exp", "--db", db, str(cube))
    assert "is a CUBE file" in line and out == ""
    assert run_indexes(db) == [1]


def test_filing_module_is_the_one_psrun_runs():
    """psrun runs `python -m psuite.psbase.filing`: it must stay importable as a module."""
    p = subprocess.run([sys.executable, "-m", "psuite.psbase.filing", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "EXPERIMENT" in p.stdout.upper()
