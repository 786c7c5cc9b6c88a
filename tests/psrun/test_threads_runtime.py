"""Threads, forks and descriptors of the measured program under psrun:
forked children of a threaded program never hang on psuite's locks; threads
started before measurement (shared-library constructors) and C11 threads
are counted; the program's descriptors and descriptor limit stay its own;
thread reports are written at the process end, not at each thread's; the
program starts with errno as it would and keeps its other preloads; with
-R -f only the process psrun started writes the resource numbers."""

from __future__ import annotations

import collections
import os
import re
import resource
import subprocess
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import TARGETS, run_tool, validate
from tests.psrun.test_psrun import reports
from tests.psrun.test_threads_counted import assert_task_clock_is_cpu_time, task_clock_and_cputime, uncharged_seconds

SRC = TARGETS / "rt_threads.c"


@pytest.fixture(scope="module")
def ctor_target(tmp_path_factory) -> str:
    """rt_threads linked with a shared library whose constructor starts a
    thread (0.5 s of CPU) before the program, and psuite, start."""
    out = tmp_path_factory.mktemp("ctor")
    subprocess.run(
        ["cc", "-O1", "-g", "-shared", "-fPIC", "-DCTOR_LIBRARY", "-o", str(out / "librtctor.so"), str(SRC)], check=True
    )
    exe = out / "rt_ctor"
    subprocess.run(
        [
            "cc",
            "-O1",
            "-g",
            "-o",
            str(exe),
            str(SRC),
            "-Wl,--no-as-needed",
            f"-L{out}",
            "-lrtctor",
            f"-Wl,-rpath,{out}",
            "-lm",
        ],
        check=True,
    )
    return str(exe)


def parsed(path: Path):
    return validate(path, "hwpcreport-0.3.dtd")


def by_pid(found) -> dict[str, dict[str, Path]]:
    """pid -> {"total" or "t<N>": path}."""
    out: dict[str, dict[str, Path]] = collections.defaultdict(dict)
    for r in found:
        parts = r.name.split(".")
        kind = parts[2] if re.fullmatch(r"t\d+", parts[2]) else "total"
        out[parts[1]][kind] = r
    return out


def event(root, name: str) -> int:
    [e] = [e for e in root.iter("hwpcevent") if e.get("name") == name]
    return int(e.text)


# ---- fork in a threaded program ----------------------------------------------


COUNT = ("-e", "task-clock")
PROF = ("--profile", "ITIMER_PROF")
REAL = ("--profile", "ITIMER_REAL")


@pytest.mark.parametrize(
    "opts,n",
    [(COUNT, 200), (("-p", *COUNT), 200), (("-p", "-f", *COUNT), 40), (PROF, 200), (REAL, 200), (("-f", *PROF), 40)],
    ids=["plain", "p", "p-f", "itimer-prof", "itimer-real", "itimer-prof-f"],
)
def test_forked_children_of_a_threaded_program_never_hang(targets, workdir, opts, n):
    bare = subprocess.run([targets["rt_threads"], "forks", str(n)], capture_output=True, text=True, timeout=60)
    assert bare.returncode == 0 and "hung: 0" in bare.stdout, bare
    p = run_tool("psrun", "-q", *opts, targets["rt_threads"], "forks", str(n), timeout=90)
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    pids = by_pid(reports(workdir))
    if "-f" not in opts:  # children are not measured: no report of theirs
        assert len(pids) == 1, sorted(pids)
    else:
        assert len(pids) == n + 1
        for pid, found in pids.items():
            assert "total" in found and ("t1" in found or "-p" not in opts), (pid, sorted(found))


@pytest.mark.parametrize("opts", [(), ("-p",), PROF, REAL], ids=["plain", "p", "itimer-prof", "itimer-real"])
def test_unfollowed_child_keeps_no_psuite_descriptor(targets, workdir, opts):
    """Without -f a forked child is not measured: it keeps none of the
    descriptors of the parent's counters (closed in the child only)."""
    bare = subprocess.run([targets["rt_threads"], "childfds"], capture_output=True, text=True)
    assert bare.returncode == 0 and bare.stdout.startswith("child has "), bare
    events = () if "--profile" in opts else ("-e", "task-clock,page-faults")
    p = run_tool("psrun", "-q", *opts, *events, targets["rt_threads"], "childfds")
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr


def test_per_thread_child_reports_its_own_threads_only(targets, workdir):
    """psrun -p -f: the child's reports are its own threads (the one that
    forked, then its thread), under its pid; the parent's counters go on
    after the child ended (the child never switched them off)."""
    before = uncharged_seconds()
    p = run_tool("psrun", "-q", "-p", "-f", "-e", "task-clock", targets["rt_threads"], "pfork")
    uncharged = uncharged_seconds() - before
    assert p.returncode == 0 and p.stdout == "child ok\n", p.stderr
    pids = by_pid(reports(workdir))
    assert len(pids) == 2, sorted(pids)
    parent, child = sorted(pids.values(), key=len, reverse=True)
    assert sorted(parent) == ["t1", "t2", "t3", "total"]
    assert sorted(child) == ["t1", "t2", "total"]
    # the parent's main thread worked 0.3 s after its child ended: counted
    task, cpu = task_clock_and_cputime(parsed(parent["t1"]))
    assert cpu > 0.25
    assert_task_clock_is_cpu_time(task, cpu, uncharged)
    task, cpu = task_clock_and_cputime(parsed(parent["total"]))
    assert_task_clock_is_cpu_time(task, cpu, uncharged)
    task, cpu = task_clock_and_cputime(parsed(child["t2"]))
    assert cpu > 0.15
    assert_task_clock_is_cpu_time(task, cpu, uncharged)


# ---- threads started before measurement, C11 threads -------------------------


def test_constructor_thread_is_counted(ctor_target, workdir):
    before = uncharged_seconds()
    p = run_tool("psrun", "-q", "-e", "task-clock", ctor_target, "ctor")
    uncharged = uncharged_seconds() - before
    assert p.returncode == 0 and p.stdout.startswith("cpu "), (p.stdout, p.stderr)
    [report] = reports(workdir)
    task, cpu = task_clock_and_cputime(parsed(report))
    assert cpu > 0.4
    assert_task_clock_is_cpu_time(task, cpu, uncharged)


def test_constructor_thread_has_its_own_report(ctor_target, workdir):
    before = uncharged_seconds()
    p = run_tool("psrun", "-q", "-p", "-e", "task-clock", ctor_target, "ctor")
    uncharged = uncharged_seconds() - before
    assert p.returncode == 0, p.stderr
    [found] = by_pid(reports(workdir)).values()
    assert sorted(found) == ["t1", "t2", "total"]
    root = parsed(found["t2"])
    assert "running before measurement started" in root.findtext("annotation")
    task, cpu = task_clock_and_cputime(root)
    assert task > 0.4e0 and cpu > 0.4
    assert_task_clock_is_cpu_time(task, cpu, uncharged)
    total_task, total_cpu = task_clock_and_cputime(parsed(found["total"]))
    assert_task_clock_is_cpu_time(total_task, total_cpu, uncharged)


def test_more_threads_before_measurement_than_attached_says_so(ctor_target, workdir):
    """A pool of 140 threads started by a constructor: the first 128 are
    counted in the total; the others are named as not counted, not lost
    without a word."""
    env = {**os.environ, "RT_CTOR_IDLE": "140"}
    p = run_tool("psrun", "-e", "task-clock", ctor_target, "ctor", env=env)
    assert p.returncode == 0, p.stderr
    [report] = reports(workdir)
    annotation = parsed(report).findtext("annotation")
    assert "13 threads running before measurement started not counted (at most 128 are)" in annotation
    assert "not counted (at most 128 are)" in p.stderr


def test_c11_threads_are_counted_per_thread(targets, workdir):
    bare = subprocess.run([targets["rt_threads"], "c11", "3"], capture_output=True, text=True)
    before = uncharged_seconds()
    p = run_tool("psrun", "-q", "-p", "-e", "task-clock", targets["rt_threads"], "c11", "3")
    uncharged = uncharged_seconds() - before
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout) == (0, "c11 threads returned 6\n"), p.stderr
    [found] = by_pid(reports(workdir)).values()
    assert sorted(found) == ["t1", "t2", "t3", "t4", "total"]
    for t in ("t2", "t3", "t4"):
        task, cpu = task_clock_and_cputime(parsed(found[t]))
        assert cpu > 0.15, t
        assert_task_clock_is_cpu_time(task, cpu, uncharged)


# ---- descriptors ---------------------------------------------------------------


def test_reused_descriptor_is_never_closed_by_psuite(targets, workdir):
    """The program closes 3..1023 and opens its log as descriptor 3, written
    with stdio and flushed at exit, after psuite's end of measurement."""
    bare_dir = workdir / "bare"
    bare_dir.mkdir()
    bare = subprocess.run([targets["rt_threads"], "closelog"], capture_output=True, text=True, cwd=bare_dir)
    expected = (bare_dir / "log.txt").read_text()
    assert bare.returncode == 0 and expected.startswith("descriptor 3\n") and expected.count("\n") == 101
    p = run_tool("psrun", "-q", "-p", "-e", "task-clock", targets["rt_threads"], "closelog")
    assert p.returncode == 0, p.stderr
    assert (workdir / "log.txt").read_text() == expected


def _low_fd_limit():
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))


def test_live_threads_leave_the_program_its_descriptors(targets, workdir):
    """400 threads alive at once with three events each, under a limit of
    1024 descriptors: the program still opens its files as bare, and every
    thread's report has counts or says why it has none."""
    events = "task-clock,page-faults,context-switches"
    bare = subprocess.run(
        [targets["rt_threads"], "live", "400", "100"], capture_output=True, text=True, preexec_fn=_low_fd_limit
    )
    assert bare.stdout == "opened 100 of 100\n", bare
    p = run_tool(
        "psrun", "-q", "-p", "-e", events, targets["rt_threads"], "live", "400", "100", preexec_fn=_low_fd_limit
    )
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    [found] = by_pid(reports(workdir)).values()
    assert len(found) == 402  # the total, main and 400 threads
    with_counts = without = 0
    for name, path in found.items():
        if name == "total":
            continue
        root = etree.parse(str(path)).getroot()
        if event(root, "task-clock") > 0:
            with_counts += 1
        else:
            assert "no counters of its own" in root.findtext("annotation"), (name, root.findtext("annotation"))
            without += 1
    assert with_counts >= 50, (with_counts, without)


# ---- thread reports at the process end -------------------------------------------


def _total_task_clock(workdir, *opts) -> float:
    for r in reports(workdir):
        r.unlink()
    p = run_tool("psrun", "-q", *opts, "-e", "task-clock", str(workdir.parent / "rt_threads_empty"), "empty", "500")
    assert p.returncode == 0 and p.stdout == "500 threads done\n", p.stderr
    found = by_pid(reports(workdir))
    [mine] = found.values()
    if "-p" in opts:
        assert len(mine) == 502  # main, 500 threads, the total
    return event(parsed(mine["total"]), "task-clock") / 1e9


def test_per_thread_reports_cost_the_program_little(targets, workdir):
    """500 empty threads: with -p the process's task clock stays within
    twice that of the plain run (no report is written while counting)."""
    exe = workdir.parent / "rt_threads_empty"
    exe.write_bytes(Path(targets["rt_threads"]).read_bytes())
    exe.chmod(0o755)
    plain, per_thread = [], []
    for _ in range(3):  # alternated, the least of each: like with like on a loaded machine
        plain.append(_total_task_clock(workdir))
        per_thread.append(_total_task_clock(workdir, "-p"))
    assert min(per_thread) <= 2 * min(plain), (plain, per_thread)


# ---- start-up and environment -------------------------------------------------------


def test_errno_at_main_is_as_bare(targets, workdir):
    bare = subprocess.run([targets["rt_threads"], "errno"], capture_output=True, text=True)
    assert bare.stdout == "errno 0\n"
    for opts in ((), ("-p",), ("-f",)):
        p = run_tool("psrun", "-q", *opts, "-e", "task-clock", targets["rt_threads"], "errno")
        assert p.stdout == bare.stdout, (opts, p.stderr)


def test_long_ld_preload_keeps_the_other_libraries(targets, workdir):
    lib = workdir / "libempty.so"
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(lib), "-x", "c", "-"], input="int rt_empty;\n", text=True, check=True
    )
    # the same library under five long names (a path may hold ./ parts)
    entries = [str(workdir) + "/." * (400 + k) + "/libempty.so" for k in range(5)]
    preload = ":".join(entries)
    assert len(preload) > 4096
    env = {"PATH": "/usr/bin:/bin", "LD_PRELOAD": preload}
    bare = subprocess.run([targets["rt_threads"], "env"], capture_output=True, text=True, env=env)
    assert bare.stdout == f"LD_PRELOAD={preload}\n", bare.stderr
    p = run_tool("psrun", "-q", "-e", "task-clock", targets["rt_threads"], "env", env=env)
    assert p.stdout == bare.stdout, p.stderr


def test_followed_processes_leave_the_resource_numbers_alone(targets, workdir):
    """-R -f: a child touching 200 MiB ends before its parent, which is
    killed (it writes no number of its own): the peak is the parent's."""
    bare = subprocess.run([targets["rt_threads"], "rfork", "200"], capture_output=True, text=True)
    p = run_tool("psrun", "-q", "-R", "-f", "-e", "task-clock", targets["rt_threads"], "rfork", "200")
    assert p.returncode == bare.returncode == -9, p.stderr
    [path] = workdir.glob("*.resource.xml")
    maxrss = float(etree.parse(str(path)).getroot().findtext("maxrss"))
    assert maxrss < 100, maxrss


def test_threads_beyond_the_report_limit_are_said(targets, workdir):
    """More threads than PS_MAX_THREADS (16384): the total says how many have
    no report of their own, and psrun says it once."""
    n = 16384 + 20
    p = run_tool("psrun", "-p", "-e", "task-clock", targets["rt_threads"], "empty", str(n), timeout=300)
    assert p.returncode == 0 and p.stdout == f"{n} threads done\n", p.stderr
    [found] = by_pid(reports(workdir)).values()
    assert len(found) == 16384 + 1
    note = "21 threads beyond the first 16384 have no report of their own"  # main is the first of them
    assert note in parsed(found["total"]).findtext("annotation")
    assert p.stderr.count(note) == 1, p.stderr
