"""psrun counting through PAPI stays out of the way of a program that uses
PAPI itself (tests/targets/papi_user.c): the program's PAPI calls give what
they give without psrun, and psrun's report and stderr say what psrun did
about it.  Processes psrun -f follows are measured, or psrun says why not."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import psuite
from tests.conftest import run_tool, validate
from tests.psrun.test_psrun import reports
from tests.psrun.test_threads_counted import uncharged_seconds

STOPPED = "counting stopped at the program's own PAPI_start"


def test_libpapi_is_installed():
    """tests/run.sh installs libpapi7.0: the tests below need it."""
    ctypes.CDLL("libpapi.so.7.0")


def bare(exe: str, *args: str) -> str:
    p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


@pytest.fixture
def papi_user(targets) -> str:
    exe = targets["papi_user"]
    # PAPI's perf_event component counts perf::TASK-CLOCK on any Linux
    assert "main.start=0" in bare(exe), "the program cannot count perf::TASK-CLOCK through PAPI here"
    return exe


def task_clock(root) -> int:
    [event] = [e for e in root.iter("hwpcevent") if "task-clock" in e.get("name").lower()]
    return int(event.text)


def cpu_seconds(root) -> float:
    return float(root.findtext("cputime/usertime")) + float(root.findtext("cputime/systemtime"))


@pytest.mark.papi  # the program itself counts with PAPI
def test_program_papi_start_and_read_as_without_psrun(papi_user, workdir):
    before = uncharged_seconds()
    p = run_tool("psrun", "--backend", "PAPI", "-e", "task-clock", papi_user)
    uncharged = uncharged_seconds() - before
    assert p.returncode == 0, p.stderr
    out = bare(papi_user)
    assert p.stdout == out
    assert "main.start=0" in out and "main.counted=1" in out and "main.grew=1" in out
    notes = [line for line in p.stderr.splitlines() if "its own PAPI counters" in line]
    assert len(notes) == 1 and notes[0].startswith("psrun: "), p.stderr
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    assert STOPPED in root.findtext("annotation")
    # psrun counted up to the program's PAPI_start (0.02 s of work), not
    # past it (0.09 s more); the report's CPU time covers the same interval
    task, cpu = task_clock(root) / 1e9, cpu_seconds(root)
    assert 0.015 < cpu < 0.06, cpu
    assert cpu - 0.01 < task < cpu + 0.01 + uncharged, (task, cpu, uncharged)


@pytest.mark.papi  # the program itself counts with PAPI
def test_failed_exec_after_the_program_took_papi(papi_user, workdir):
    """After psrun stepped aside for the program's PAPI_start, an exec that
    fails leaves the one report (counts up to that PAPI_start), and psuite's
    counting is not restarted behind the program's back."""
    p = run_tool("psrun", "--backend", "PAPI", "-e", "task-clock", papi_user, "papi-exec-fail")
    assert p.returncode == 0, p.stderr
    assert p.stdout == bare(papi_user, "papi-exec-fail")
    assert "main.start=0" in p.stdout and "exec.failed=1" in p.stdout
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    annotation = root.findtext("annotation")
    assert STOPPED in annotation and "before exec" not in annotation
    # up to the program's PAPI_start (0.02 s), not the 0.12 s after it
    assert 0.015 < cpu_seconds(root) < 0.06, cpu_seconds(root)


@pytest.mark.papi  # the program itself counts with PAPI
def test_program_papi_untouched_by_perf_event_backend(papi_user, workdir):
    p = run_tool("psrun", "--backend", "perf_event", "-e", "task-clock", papi_user)
    assert p.returncode == 0, p.stderr
    assert p.stdout == bare(papi_user)
    assert "its own PAPI counters" not in p.stderr
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    assert STOPPED not in (root.findtext("annotation") or "")


@pytest.mark.papi  # the program itself counts with PAPI
@pytest.mark.parametrize("domain", ["user", "kernel", "all"])
def test_program_default_domain_is_its_own(papi_user, workdir, domain):
    """psrun's domain applies to its own event set, not to the program's
    default (PAPI_get_opt(PAPI_DEFDOM) as without psrun)."""
    p = run_tool("psrun", "--backend", "PAPI", "--domain", domain, "-e", "task-clock", papi_user)
    assert p.returncode == 0, p.stderr
    out = bare(papi_user)
    assert p.stdout == out
    assert re.search(r"^main\.defdom=\d+$", out, re.M)
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    assert root.find("hwpceventdata").get("domain") == domain


@pytest.mark.papi  # the program itself counts with PAPI
def test_forked_child_is_measured(papi_user, workdir):
    before = uncharged_seconds()
    p = run_tool("psrun", "-f", "--backend", "PAPI", "-e", "task-clock", papi_user, "fork")
    uncharged = uncharged_seconds() - before
    assert p.returncode == 0, p.stderr
    assert p.stdout == bare(papi_user, "fork")
    found = reports(workdir)
    assert len(found) == 2, (found, p.stderr)
    roots = [validate(r, "hwpcreport-0.3.dtd") for r in found]
    [child] = [r for r in roots if "_exit()" in r.findtext("annotation")]
    [parent] = [r for r in roots if r is not child]
    # each counted its own work (0.05 s of CPU time), the parent's counters
    # untouched by the child's setting PAPI up again
    for root in (parent, child):
        task, cpu = task_clock(root) / 1e9, cpu_seconds(root)
        assert cpu > 0.045, cpu
        assert cpu - 0.01 < task < cpu + 0.01 + uncharged, (task, cpu, uncharged)


@pytest.mark.papi  # the program itself counts with PAPI
def test_forked_child_using_papi_as_without_psrun(papi_user, workdir):
    p = run_tool("psrun", "-f", "--backend", "PAPI", "-e", "task-clock", papi_user, "fork-papi")
    assert p.returncode == 0, p.stderr
    out = bare(papi_user, "fork-papi")
    assert p.stdout == out and "child.start=0" in out
    found = reports(workdir)
    assert len(found) == 2, (found, p.stderr)
    roots = [validate(r, "hwpcreport-0.3.dtd") for r in found]
    [child] = [r for r in roots if "_exit()" in r.findtext("annotation")]
    assert STOPPED in child.findtext("annotation")
    assert len([line for line in p.stderr.splitlines() if "its own PAPI counters" in line]) == 1, p.stderr


@pytest.mark.papi  # the program itself counts with PAPI
def test_forked_child_of_a_papi_user_not_measured_says_so(papi_user, workdir):
    """Setting PAPI up again in the child would discard the event sets the
    program made before forking: the child is not measured through PAPI,
    and psrun says so on one line."""
    p = run_tool("psrun", "-f", "--backend", "PAPI", "-e", "task-clock", papi_user, "papi-fork")
    assert p.returncode == 0, p.stderr
    assert p.stdout == bare(papi_user, "papi-fork")
    lines = [line for line in p.stderr.splitlines() if "not measured" in line]
    assert len(lines) == 1 and lines[0].startswith("psrun: forked child "), p.stderr
    assert "--backend perf_event" in lines[0]
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    assert STOPPED in root.findtext("annotation")


def test_library_has_no_large_thread_local_storage():
    """Static TLS is allocated in every thread of the measured program."""
    readelf = shutil.which("readelf")
    assert readelf, "tests/run.sh installs binutils"
    lib = Path(psuite.__file__).parent / "_native" / "libpshwpc.so"
    out = subprocess.run([readelf, "-lW", str(lib)], capture_output=True, text=True, check=True).stdout
    sizes = [int(line.split()[5], 16) for line in out.splitlines() if line.split()[:1] == ["TLS"]]
    assert all(size <= 1024 for size in sizes), sizes


@pytest.mark.papi  # the program itself counts with PAPI
def test_program_counting_in_another_thread_as_without_psrun(papi_user, workdir):
    """psrun's set runs on the main thread: a thread of the program counts
    with PAPI as without psrun, and psrun's counting goes on."""
    p = run_tool("psrun", "--backend", "PAPI", "-e", "task-clock", papi_user, "papi-thread")
    assert p.returncode == 0, p.stderr
    out = bare(papi_user, "papi-thread")
    assert p.stdout == out and "thread.start=0" in out
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    assert STOPPED not in root.findtext("annotation")
    assert "its own PAPI counters" not in p.stderr
