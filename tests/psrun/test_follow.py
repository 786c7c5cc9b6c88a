"""psrun -f: forked children and exec'd images measured, each under its
own pid; without -f only the program itself, its children's work not in
its counts."""

from __future__ import annotations

import pytest

from tests.conftest import run_tool, validate
from tests.psrun.test_psrun import reports
from tests.psrun.test_threads_counted import assert_task_clock_is_cpu_time, task_clock_and_cputime, uncharged_seconds


def test_without_follow_only_the_program(targets, workdir):
    before = uncharged_seconds()
    p = run_tool("psrun", "-q", "-e", "task-clock", targets["fork_chain"])
    uncharged = uncharged_seconds() - before
    assert p.returncode == 0 and p.stdout == "chain done\n", p.stderr
    [report] = reports(workdir)
    task, cpu = task_clock_and_cputime(validate(report, "hwpcreport-0.3.dtd"))
    # one unit of work, not six: task-clock is the program's own CPU time, plus
    # what the machine charged to no task meanwhile (steal, interrupts)
    assert_task_clock_is_cpu_time(task, cpu, uncharged, rel=0.1)


def test_follow_measures_children_and_exec(targets, workdir):
    p = run_tool("psrun", "-f", "-e", "task-clock", targets["fork_chain"])
    assert p.returncode == 0 and p.stdout == "chain done\n", p.stderr
    found = reports(workdir)
    roots = {r.name: validate(r, "hwpcreport-0.3.dtd") for r in found}
    pids = {root.findtext("pid") for root in roots.values()}
    assert len(pids) == 3  # parent, child, grandchild (whose exec'd shell reports under the same pid)
    clocks = sorted(task_clock_and_cputime(root)[0] for root in roots.values()
                    if "before exec" not in (root.findtext("annotation") or "") and "fork_chain" in
                    root.findtext("command"))
    assert len(clocks) == 2  # parent and child ended normally; the grandchild's report came before exec
    assert clocks[1] == pytest.approx(2 * clocks[0], rel=0.25)  # child does twice the parent's work
    assert any("before exec" in (root.findtext("annotation") or "") for root in roots.values())
    assert any(root.findtext("command").startswith("sh -c") for root in roots.values())  # the exec'd image
    assert p.stderr.count("psrun: report:") == len(found)


def test_follow_profiles_children(targets, workdir):
    from psuite.analysis.inputs import load

    p = run_tool("psrun", "-q", "-f", "--profile", "ITIMER_PROF", "--period", "1000", targets["fork_chain"])
    assert p.returncode == 0 and p.stdout == "chain done\n", p.stderr
    samples = sorted(load(str(r)).total_samples for r in reports(workdir)
                     if "fork_chain" in load(str(r)).command)
    assert len(samples) == 3  # parent, child, grandchild: 1, 2 and 3 units of work
    assert samples[1] == pytest.approx(2 * samples[0], rel=0.3)
    assert samples[2] == pytest.approx(3 * samples[0], rel=0.3)
