"""A failed exec (execl("/nonexistent") returning -1) through the real psrun
command, with per-thread reports and with profiles: one set of reports per
image, written at the program's real end, and measurement going on after
the failed exec (the reports written before it are taken back)."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import run_tool, validate
from tests.psrun.test_psrun import reports

# (psrun options, per-thread reports, what the reports measure)
MODES = {
    "per-thread": (["-p", "-e", "task-clock"], True, "count"),
    "ITIMER_PROF": (["--profile", "ITIMER_PROF", "--period", "1000"], False, "profile"),
    "ITIMER_REAL": (["--profile", "ITIMER_REAL", "--period", "1000"], False, "profile"),
    "task-clock": (["--profile", "task-clock", "--period", "1000000"], False, "profile"),
    "per-thread ITIMER_PROF": (["-p", "--profile", "ITIMER_PROF", "--period", "1000"], True, "profile"),
}

SPIN_S = 0.3  # CPU time each thread of exec_fail_after spends after the failed exec


def measured(root, kind: str) -> float:
    """Task clock in seconds (counting), or samples (profiles: 1 ms each)."""
    if kind == "count":
        [event] = [e for e in root.iter("hwpcevent") if e.get("name") == "task-clock"]
        return float(event.text) / 1e9
    return float(root.findtext("hwpcprofiledata/totalsamples"))


def run(targets, workdir, options: list[str], args: list[str], per_thread: bool) -> dict:
    """psrun on exit_paths ARGS, as a bare run does; the reports by thread
    number (0: the process), each valid, none annotated "before exec"."""
    for old in reports(workdir):
        old.unlink()
    bare = subprocess.run([targets["exit_paths"], *args], capture_output=True, text=True)
    p = run_tool("psrun", *options, targets["exit_paths"], *args)
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    assert "No such file or directory" in p.stdout  # the program sees the exec's errno
    found = reports(workdir)
    # every report announced once: the ones taken back are not announced again
    assert p.stderr.count("psrun: report:") == len(found), p.stderr
    by_thread = {}
    for report in found:
        root = validate(report, "hwpcreport-0.3.dtd")
        annotation = root.findtext("annotation") or ""
        assert "before exec" not in annotation, (report.name, annotation)
        thread = int(root.findtext("thread") or 0)
        assert thread not in by_thread, [r.name for r in found]  # one report per thread
        assert (".t" in report.name) == (thread > 0), report.name
        assert ("process total" in annotation) == (per_thread and thread == 0), annotation
        by_thread[thread] = root
    return by_thread


@pytest.mark.parametrize("mode", list(MODES))
def test_failed_exec_leaves_one_set_of_reports_and_measures_on(targets, workdir, mode):
    options, per_thread, kind = MODES[mode]
    # work only before the exec (a few milliseconds)
    before = run(targets, workdir, options, ["exec_fail"], per_thread)
    assert sorted(before) == ([0, 1] if per_thread else [0])
    # one more thread running through the failed exec, then 0.3 s of CPU
    # time in each of the two threads after it
    after = run(targets, workdir, options, ["exec_fail_after", "1"], per_thread)
    assert sorted(after) == ([0, 1, 2] if per_thread else [0])
    for root in after.values():
        assert root.get("mode") == kind
    unit = 1.0 if kind == "count" else 1000.0  # seconds, or 1 ms samples
    total_before, total_after = measured(before[0], kind), measured(after[0], kind)
    assert total_after >= 1.5 * SPIN_S * unit, (total_before, total_after)
    assert total_after > 5 * total_before, (total_before, total_after)
    if per_thread:  # each thread's own counters or sampling went on after the exec
        for thread in (1, 2):
            assert measured(after[thread], kind) >= 0.7 * SPIN_S * unit, (thread, measured(after[thread], kind))


@pytest.mark.parametrize("mode", list(MODES))
def test_successful_exec_keeps_the_reports_written_before_it(targets, workdir, mode):
    options, per_thread, kind = MODES[mode]
    p = run_tool("psrun", "-q", *options, targets["exit_paths"], "exec")
    assert p.returncode == 4, p.stderr  # the new image ran and ended as it does
    found = reports(workdir)
    assert len(found) == (2 if per_thread else 1), [r.name for r in found]
    for report in found:
        root = validate(report, "hwpcreport-0.3.dtd")
        assert root.get("mode") == kind
        assert "before exec" in (root.findtext("annotation") or "")
