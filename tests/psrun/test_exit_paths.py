"""Every way a program ends writes its report, and the program ends
exactly as it does without psrun: same status, same signal, same output."""

from __future__ import annotations

import signal
import subprocess

import pytest

from tests.conftest import run_tool, validate
from tests.psrun.test_psrun import reports

CASES = [
    (["return", "3"], 3, None),
    (["exit", "4"], 4, None),
    (["_exit", "5"], 5, "_exit()"),
    (["_Exit", "6"], 6, "_exit()"),
    (["thread_exit", "7"], 7, None),
    (["exec"], 4, "before exec"),
    (["segv"], -signal.SIGSEGV, "SIGSEGV"),
    (["fpe"], -signal.SIGFPE, "SIGFPE"),
    (["abort"], -signal.SIGABRT, "SIGABRT"),
    (["raise", str(int(signal.SIGBUS))], -signal.SIGBUS, "SIGBUS"),
    (["raise", str(int(signal.SIGTERM))], -signal.SIGTERM, "SIGTERM"),
    (["raise", str(int(signal.SIGINT))], -signal.SIGINT, "SIGINT"),
    (["raise", str(int(signal.SIGHUP))], -signal.SIGHUP, "SIGHUP"),
    (["ignored_int"], 0, None),
    (["own_term"], 0, "_exit()"),
    (["query"], 0, None),
]


@pytest.mark.parametrize("mode", ["count", "profile"])
@pytest.mark.parametrize("args,status,note", CASES, ids=[c[0][0] + "".join(c[0][1:]) for c in CASES])
def test_every_exit_path_writes_its_report(targets, workdir, mode, args, status, note):
    bare = subprocess.run([targets["exit_paths"], *args], capture_output=True, text=True)
    assert bare.returncode == status
    how = ["-e", "task-clock"] if mode == "count" else ["--profile", "ITIMER_PROF", "--period", "1000"]
    p = run_tool("psrun", "-q", *how, targets["exit_paths"], *args)
    # psrun execs the program: the same status or the same signal (a waiting
    # parent sees WIFSIGNALED), the same output, nothing added under -q
    assert (p.returncode, p.stdout, p.stderr) == (bare.returncode, bare.stdout, bare.stderr), p.stderr
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    annotation = root.findtext("annotation") or ""
    if note:
        assert note in annotation, annotation
    else:
        assert "report written on" not in annotation and "_exit" not in annotation
    assert root.get("mode") == mode


def test_failed_exec_goes_on_counting(targets, workdir):
    bare = subprocess.run([targets["exit_paths"], "exec_fail"], capture_output=True, text=True)
    p = run_tool("psrun", "-q", "-e", "task-clock", targets["exit_paths"], "exec_fail")
    assert p.returncode == 5, p.stderr
    assert p.stdout == bare.stdout and "No such file or directory" in p.stdout  # errno as without psrun
    [report] = reports(workdir)  # one per image: the one before the failed exec was taken back
    root = validate(report, "hwpcreport-0.3.dtd")
    assert "before exec" not in (root.findtext("annotation") or "")
    assert root.find("hwpceventdata/hwpcevent") is not None
