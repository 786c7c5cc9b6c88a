"""Reports that survive however the program ends: the raw exit_group system
call (as Go's runtime ends a program), SIGKILL (a batch system's time
limit, the OOM killer), a whole job killed with psuite's collector, a
program that gave up its privileges or its root, -f children killed right
after fork, programs that redirect or close their stderr.  Behaviour
(exit status, stdout and stderr bytes) is compared with the bare run; the
report must be there and its numbers must cover the CPU time the kernel
charged to the program (measured from outside: wait4's rusage)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import psrun_command, validate
from tests.psrun.test_callpath_runtime import companion_root, totals
from tests.psrun.test_psrun import reports
from tests.psrun.test_threads_counted import assert_task_clock_is_cpu_time, uncharged_seconds

PERIOD_US = 1000
# Reports of processes that end without their exit path are written by
# psuite's collector after the process has died: a test waits for them
# (a bound on waiting, not a timing assertion).
REPORT_WAIT = 120.0

MODES = {
    "count": ["-e", "task-clock"],
    "per-thread": ["-p", "-e", "task-clock"],
    "itimer-prof": ["--profile", "ITIMER_PROF", "--period", str(PERIOD_US)],
    "itimer-real": ["--profile", "ITIMER_REAL", "--period", str(PERIOD_US)],
    "callpath": ["--callpath", "--period", str(PERIOD_US)],
}
KILL_MODES = ["count", "itimer-prof", "callpath"]


# --- running a program to its end, with the CPU time it used --------------------------------------


@dataclass
class Ended:
    """How a process ended, as a parent waiting for it sees it."""

    pid: int
    returncode: int  # negative: killed by that signal (subprocess's convention)
    stdout: str
    stderr: str
    cpu: float  # user + system seconds the kernel charged to it (wait4)
    user: float
    wall: float  # from start to its end, psrun's own start included


def wait_ended(proc: subprocess.Popen, started: float, timeout: float = 300.0) -> tuple[int, float, float, float]:
    """wait4 the process (psrun execs the program: proc's pid is the
    program's): (returncode, cpu, user, wall).  The collector is not a
    child of the program, so rusage is the program's own."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"{proc.args} still running after {timeout} s")
        time.sleep(0.005)
    wall = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime, usage.ru_utime, wall


def run_to_end(argv: list[str], **kw) -> Ended:
    """Run argv (a program, or psrun and a program) to its end, reading its
    stdout and stderr to their end as subprocess.run does: until every
    process holding them (psuite's collector included) has closed them."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    read: dict[str, bytes] = {}

    def drain(name: str, stream) -> None:
        with stream:
            read[name] = stream.read()

    readers = [threading.Thread(target=drain, args=(name, stream), daemon=True)
               for name, stream in (("out", proc.stdout), ("err", proc.stderr))]
    for reader in readers:
        reader.start()
    code, cpu, user, wall = wait_ended(proc, started)
    for reader in readers:
        reader.join(REPORT_WAIT)
    assert not any(r.is_alive() for r in readers), f"stdout/stderr still open {REPORT_WAIT:.0f} s after {argv} ended"
    return Ended(proc.pid, code, read["out"].decode(errors="replace"), read["err"].decode(errors="replace"), cpu, user,
                 wall)


def psrun(*args: str) -> list[str]:
    return [psrun_command(), *args]


def wait_for(what: str, found, bound: float = REPORT_WAIT):
    """Poll `found()` until it returns something true; fail after `bound` s."""
    deadline = time.monotonic() + bound
    while True:
        value = found()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {bound:.0f} s")
        time.sleep(0.05)


def complete_reports(directory: Path, mode: str) -> list[Path] | None:
    """The run's documents once every one of them is there: a report for
    each mode, plus its call-path companion under --callpath."""
    found = reports(directory)
    flats = [r for r in found if not r.name.endswith(".callpaths.xml")]
    if not flats:
        return None
    if mode == "callpath" and not all(r.with_name(r.name[:-4] + ".callpaths.xml").exists() for r in flats):
        return None
    return found


def process_report(directory: Path, mode: str) -> Path:
    """The one report of the whole process (under -p, its process total,
    beside the threads' .tN. reports), once the run's documents are there."""

    def ready() -> list[Path] | None:
        docs = complete_reports(directory, mode) or []
        return [r for r in docs if not r.name.endswith(".callpaths.xml") and not re.search(r"\.t\d+\.", r.name)]

    found = wait_for("report", ready)
    assert len(found) == 1, [r.name for r in reports(directory)]
    return found[0]


def task_clock(root) -> float:
    [event] = [e for e in root.iter("hwpcevent") if "task-clock" in e.get("name").lower()]
    return int(event.text) / 1e9


def sampled_seconds(root) -> float:
    return int(root.findtext("hwpcprofiledata/totalsamples")) * PERIOD_US / 1e6


def annotation(root) -> str:
    return root.findtext("annotation") or ""


def check_numbers(report: Path, mode: str, ended: Ended, uncharged: float, one_thread: bool = True) -> None:
    """The report's measure of the program's time against the CPU time the
    kernel charged to it: task clock or samples of CPU time (within the
    machine's uncharged time: steal, interrupts), wall-clock samples at
    least its user time and, for a program of one thread, at most its wall
    time (every thread's wall time is sampled: Go's idle runtime threads
    too)."""
    root = validate(report, "hwpcreport-0.3.dtd")
    if mode in ("count", "per-thread"):
        assert root.get("mode") == "count"
        assert_task_clock_is_cpu_time(task_clock(root), ended.cpu, uncharged, rel=0.1, margin=0.02)
        return
    assert root.get("mode") == "profile"
    sampled = sampled_seconds(root)
    if mode == "itimer-real":
        assert 0.85 * ended.user <= sampled, (sampled, ended)
        assert not one_thread or sampled <= 1.05 * ended.wall + 0.02, (sampled, ended)
    else:
        assert 0.85 * ended.cpu <= sampled <= 1.1 * ended.cpu + 0.02 + uncharged, (sampled, ended, uncharged)
    if mode == "callpath":
        comp = companion_root(report.with_name(report.name[:-4] + ".callpaths.xml"))
        total, samples, lost = totals(root, comp)
        assert total == samples + lost and samples >= 0.9 * total, (total, samples, lost)


# --- exit_group: Go's runtime, and a C program calling it raw -------------------------------------

GO_PROGRAM = r"""
package main

// static int twice(int x) { return 2 * x; }
import "C"

import (
	"fmt"
	"os"
	"syscall"
)

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func main() {
	x := 0.0
	for cpuSeconds() < 0.5 {
		for i := 0; i < 1000000; i++ {
			x += float64(i) * 0.5
		}
	}
	fmt.Println("go spent its CPU time:", int(C.twice(21)), x > 0)
	os.Exit(3)
}
"""


@pytest.fixture(scope="module")
def go_program(tmp_path_factory) -> str:
    """A cgo program (so libc is linked dynamically and psuite's library is
    preloaded into it), built as its users build it: go build."""
    go = shutil.which("go")
    assert go, "go is needed (tests/run.sh installs golang-go)"
    out = tmp_path_factory.mktemp("go")
    (out / "main.go").write_text(GO_PROGRAM)
    env = dict(os.environ, GOCACHE=str(out / "cache"), GOPATH=str(out / "gopath"), CGO_ENABLED="1",
               GO111MODULE="off", GOFLAGS="")
    subprocess.run([go, "build", "-o", str(out / "spin_go"), "main.go"], cwd=out, env=env, check=True,
                   capture_output=True, timeout=600)
    exe = str(out / "spin_go")
    interp = subprocess.run(["readelf", "-l", exe], capture_output=True, text=True, check=True).stdout
    assert "Requesting program interpreter" in interp, "the cgo program must be dynamically linked"
    return exe


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("program", ["go", "c"])
def test_exit_group_gets_its_report(targets, go_program, workdir, program, mode):
    argv = [go_program] if program == "go" else [targets["hard_endings"], "exit_group", "3", "0.5"]
    bare = run_to_end(argv)
    assert bare.returncode == 3 and bare.cpu >= 0.5, bare
    before = uncharged_seconds()
    p = run_to_end(psrun("-q", *MODES[mode], *argv))
    # the program ended as bare: same status, same bytes on stdout and stderr
    assert (p.returncode, p.stdout, p.stderr) == (bare.returncode, bare.stdout, bare.stderr), p.stderr
    report = process_report(workdir, mode)
    check_numbers(report, mode, p, uncharged_seconds() - before, one_thread=program == "c")
    # it did not end through exit or return, and the report says so
    note = annotation(validate(report, "hwpcreport-0.3.dtd"))
    assert "ended without running its exit path (exit status 3)" in note, note


# --- SIGKILL --------------------------------------------------------------------------------------


def cpu_used(pid: int) -> float:
    """CPU time (user + system) the kernel has charged to a live process so far."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_spinning(argv: list[str], seconds: float, **kw) -> tuple[subprocess.Popen, float]:
    """Start argv (ending in `hard_endings spin`) and wait until the program
    has used `seconds` of CPU time (not wall time: on a loaded machine it
    may get less than a CPU)."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    line = proc.stdout.readline().decode()
    assert line == f"running {proc.pid}\n", line  # psrun exec'd it: the program has psrun's pid
    wait_for(f"{seconds} s of CPU time used", lambda: cpu_used(proc.pid) >= seconds, bound=300)
    return proc, started


@pytest.mark.parametrize("mode", KILL_MODES)
def test_sigkill_leaves_a_report_of_everything_measured(targets, workdir, mode):
    before = uncharged_seconds()
    proc, started = start_spinning(psrun("-q", *MODES[mode], targets["hard_endings"], "spin"), 1.0)
    os.kill(proc.pid, signal.SIGKILL)
    code, cpu, user, wall = wait_ended(proc, started)
    proc.stdout.close()
    proc.stderr.close()
    assert code == -signal.SIGKILL  # as a parent of the bare program sees it
    report = process_report(workdir, mode)
    check_numbers(report, mode, Ended(proc.pid, code, "", "", cpu, user, wall), uncharged_seconds() - before)
    root = validate(report, "hwpcreport-0.3.dtd")
    assert "killed by SIGKILL" in annotation(root), annotation(root)
    # everything measured up to the kill: at least 90 % of the CPU time it used
    covered = task_clock(root) if mode == "count" else sampled_seconds(root)
    assert covered >= 0.9 * cpu, (covered, cpu)


def run_killed_by_subreaper(argv: list[str], env: dict) -> dict:
    """tests/psrun/subreaper.py: start argv, SIGKILL the process started
    once the program printed its first line, and see how each process of
    the run ended (orphans reparented to the subreaper)."""
    import json

    helper = Path(__file__).with_name("subreaper.py")
    out = subprocess.run([sys.executable, str(helper), "60", *argv], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    result["ended"] = {int(k): v for k, v in result["ended"].items()}
    return result


def test_sigkill_to_psrun_resources_ends_the_program_as_bare(targets, workdir, tmp_path_factory):
    """psrun -R waits for the program: SIGKILL to psrun (what the user's
    parent sees) ends the program as SIGKILL ends it bare, not leaving it
    running as an orphan, and leaves no temporary file (psrun keeps its
    peak-memory file in TMPDIR)."""
    tmpdir = tmp_path_factory.mktemp("tmpdir")
    env = dict(os.environ, TMPDIR=str(tmpdir))
    bare = run_killed_by_subreaper([targets["hard_endings"], "spin"], env)
    pid = int(bare["first_line"].split()[1])
    assert bare["ended"] == {pid: -signal.SIGKILL} and not bare["left"], bare

    run = run_killed_by_subreaper([psrun_command(), "-q", "-R", "-e", "task-clock", targets["hard_endings"], "spin"],
                                  env)
    program = int(run["first_line"].split()[1])
    assert not run["left"], run  # nothing of the run outlives it
    assert run["ended"][run["started"]] == -signal.SIGKILL, run
    assert run["ended"][program] == -signal.SIGKILL, run  # the program: as bare
    assert list(tmpdir.iterdir()) == []


# --- a job killed whole, collector included -------------------------------------------------------


def processes_of_the_run(token: str) -> list[int]:
    """Every live process (but this one) whose command line or environment
    holds `token`: the program and psuite's collector, whichever way the
    collector is made (forked from psrun: psrun's command line and
    environment; exec'd: psrun's environment)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            seen = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if token.encode() in seen:
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("how", ["option", "environment"])
def test_job_killed_whole_keeps_its_checkpoint(targets, workdir, how):
    """A batch system ending a job: SIGKILL to psuite's collector (which
    runs in a session of its own, so the group's signal misses it; a batch
    system killing a cgroup or mpirun aborting reaches it anyway) and to
    the job's process group.  What remains is the last
    checkpoint: with a 1 s period, after 5 s of CPU time, it covers at
    least 3 s."""
    token = f"survival-job-{os.getpid()}-{time.monotonic_ns()}"
    env = dict(os.environ, SURVIVAL_TEST_RUN=token)
    checkpoint = ["--checkpoint", "1"]
    if how == "environment":
        env["PSUITE_CHECKPOINT"] = "1"
        checkpoint = []
    argv = psrun("-q", *checkpoint, "-e", "task-clock", targets["hard_endings"], "spin", token)
    before = uncharged_seconds()
    proc, started = start_spinning(argv, 5.0, env=env, start_new_session=True)
    run = processes_of_the_run(token)
    assert proc.pid in run and len(run) >= 2, run  # the program and its collector
    # The collector first: once kill() has returned it runs no more code, so
    # what remains is its last checkpoint, not a report it wrote on seeing
    # the program die (which a batch system's order may or may not allow).
    for pid in run:
        if pid != proc.pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    os.killpg(proc.pid, signal.SIGKILL)  # the job's process group (psrun started it: the program leads it)
    code, cpu, user, wall = wait_ended(proc, started)
    proc.stdout.close()
    proc.stderr.close()
    assert code == -signal.SIGKILL
    wait_for("end of every process of the run", lambda: not processes_of_the_run(token), bound=60)
    report = process_report(workdir, "count")
    root = validate(report, "hwpcreport-0.3.dtd")
    assert "checkpoint" in annotation(root), annotation(root)
    # task-clock counts the time a hypervisor steals from the vCPU, which CPU
    # time leaves out: the machine's steal over the run bounds the difference
    uncharged = uncharged_seconds() - before
    assert 3.0 <= task_clock(root) <= cpu + 0.05 + uncharged, (task_clock(root), cpu, uncharged)


# --- privileges and root given up before the end --------------------------------------------------


@pytest.mark.parametrize("mode", ["count", "itimer-prof"])
@pytest.mark.parametrize("where", ["cwd", "-d"])
@pytest.mark.parametrize("change", ["setuid", "chroot"])
def test_report_written_after_setuid_or_chroot(targets, workdir, tmp_path, change, where, mode):
    """setuid(nobody) (the report's directory is root's alone) or chroot to
    an empty directory, then return: the report is where psrun was asked
    to write it, -d DIR or the working directory."""
    assert os.geteuid() == 0, "these cases need root (tests/run.sh runs as root)"
    newroot = tmp_path / "newroot"
    newroot.mkdir()
    outdir = tmp_path / "out"
    outdir.mkdir()
    for d in (workdir, outdir):
        d.chmod(0o700)
    args = ["setuid", "0.3"] if change == "setuid" else ["chroot", str(newroot), "0.3"]
    argv = [targets["hard_endings"], *args]
    bare = run_to_end(argv)
    assert bare.returncode == 0 and bare.stdout in ("now uid 65534\n", "now in the new root\n"), bare
    options = ["-d", str(outdir)] if where == "-d" else []
    before = uncharged_seconds()
    p = run_to_end(psrun("-q", *options, *MODES[mode], *argv))
    assert (p.returncode, p.stdout, p.stderr) == (bare.returncode, bare.stdout, bare.stderr)
    expected = outdir if where == "-d" else workdir
    report = process_report(expected, mode)
    check_numbers(report, mode, p, uncharged_seconds() - before)
    assert list(newroot.iterdir()) == []  # nothing written inside the program's new root
    if where == "-d":
        assert reports(workdir) == []


# --- -f: the program's redirected stderr stays the program's --------------------------------------


def noted_reports(stderr: str) -> list[str]:
    return [line.split(": ", 2)[2] for line in stderr.splitlines() if line.startswith("psrun: report: ")]


def check_notes_name_the_reports(stderr: str, directory: Path) -> None:
    """psrun's notes (on its own stderr) name every report written, once."""
    noted = noted_reports(stderr)
    assert noted and len(noted) == len(set(noted)), stderr
    written = sorted(p.name for p in reports(directory))
    assert sorted(Path(n).name for n in noted) == written, (noted, written)


AUTOCONF_CHECK = """
"$1" say 2>said.err
"$1" quiet 2>quiet.err
if test -s quiet.err; then echo "compiler wrote to stderr"; else echo "stderr empty"; fi
"""


def test_follow_never_writes_into_a_redirected_stderr(targets, workdir):
    """autoconf's check (`cc ... 2>conftest.err; test -s conftest.err`)
    under psrun -f: the children's files hold what they hold bare."""
    script = workdir / "check.sh"
    script.write_text(AUTOCONF_CHECK)
    argv = ["/bin/sh", str(script), targets["hard_endings"]]
    bare = run_to_end(argv, cwd=workdir)
    files = {name: (workdir / name).read_bytes() for name in ("said.err", "quiet.err")}
    assert bare.stdout == "to stdout\nstderr empty\n" and files["said.err"] == b"to stderr\n", (bare, files)
    for name in files:
        (workdir / name).unlink()
    p = run_to_end(psrun("-f", "-e", "task-clock", *argv), cwd=workdir)
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    assert {name: (workdir / name).read_bytes() for name in files} == files
    # the notes went to psrun's stderr instead, one for each report (the
    # shell's, its forked children's before exec, the programs')
    assert all(line.startswith("psrun: ") for line in p.stderr.splitlines()), p.stderr
    check_notes_name_the_reports(p.stderr, workdir)
    assert len(reports(workdir)) >= 3


CAPTURE = """
import subprocess, sys
r = subprocess.run([sys.argv[1], "say"], capture_output=True)
print(r.returncode, repr(r.stdout), repr(r.stderr))
"""


@pytest.mark.parametrize("mode", ["count", "itimer-prof"])
def test_follow_child_captured_by_python_sees_its_own_stderr(targets, workdir, tmp_path_factory, mode):
    script = tmp_path_factory.mktemp("capture") / "capture.py"
    script.write_text(CAPTURE)
    argv = [sys.executable, str(script), targets["hard_endings"]]
    bare = run_to_end(argv)
    assert bare.stdout == "0 b'to stdout\\n' b'to stderr\\n'\n", bare
    p = run_to_end(psrun("-f", *MODES[mode], *argv))
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    check_notes_name_the_reports(p.stderr, workdir)
    assert len(reports(workdir)) >= 2  # python and the child it ran


# --- -f: children killed right after fork ---------------------------------------------------------


@dataclass
class KilledChildren:
    pid: int  # the parent's
    children: set[int]
    reports: dict[int, Path]  # pid -> report, once every child has one (or the wait ended)


KILLED_CHILDREN = 300


@pytest.fixture(scope="module", params=["count", "itimer-prof"])
def killed_children(request, targets, tmp_path_factory) -> KilledChildren:
    """Python's Pool.terminate(), a shell's timeout: a program under psrun
    -f forks 300 children and kills each by SIGKILL, waiting for it: the
    first 260 after 20 ms (each has a collector of its own by then, more
    of them than the parent's table of children has places), the last 40
    1 ms after fork (most before their own collector starts).  It runs as
    bare (status, output); the reports it leaves."""
    mode = request.param
    directory = tmp_path_factory.mktemp(f"killed-children-{mode}")
    pidfile = directory.parent / f"{directory.name}.pids"
    argv = [targets["hard_endings"], "kill_children", str(KILLED_CHILDREN), str(pidfile), "260", "20"]
    bare = run_to_end(argv, cwd=directory)
    assert (bare.returncode, bare.stdout) == (0, "300 of 300 children killed by SIGKILL\n"), bare
    p = run_to_end(psrun("-q", "-f", *MODES[mode], *argv), cwd=directory)
    assert (p.returncode, p.stdout, p.stderr) == (bare.returncode, bare.stdout, bare.stderr)
    children = {int(line) for line in pidfile.read_text().split()}
    assert len(children) == KILLED_CHILDREN

    def by_pid() -> dict[int, Path]:  # (hard_endings.PID.HOST.xml)
        return {int(report.name.split(".")[1]): report for report in reports(directory)}

    deadline = time.monotonic() + REPORT_WAIT
    while not children <= set(by_pid()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return KilledChildren(p.pid, children, by_pid())


def test_follow_children_killed_a_millisecond_after_fork_all_get_a_report(killed_children):
    run = killed_children
    reported = len(run.children & set(run.reports))
    assert reported == KILLED_CHILDREN, f"{reported} children of {KILLED_CHILDREN} have a report"
    assert set(run.reports) == run.children | {run.pid}  # and the parent's, no other
    for pid, report in run.reports.items():
        assert validate(report, "hwpcreport-0.3.dtd").findtext("pid") == str(pid)


def test_follow_children_killed_a_millisecond_after_fork_say_so(killed_children):
    """Each child's report says how it ended, however soon that was, and
    though its parent reaped it at once (its collector may find neither
    a zombie nor, on older kernels, the pidfd's record of the end: the
    parent's wait tells it)."""
    run = killed_children
    notes = {pid: annotation(validate(run.reports[pid], "hwpcreport-0.3.dtd"))
             for pid in run.children & set(run.reports)}
    unsaid = {pid: note for pid, note in notes.items() if "killed by SIGKILL" not in note}
    assert not unsaid, f"{len(unsaid)} of {len(notes)} child reports do not say it: {next(iter(unsaid.values()))}"


# --- programs that close their stderr at exit -----------------------------------------------------


@pytest.mark.parametrize("mode", ["count", "itimer-prof"])
@pytest.mark.parametrize("program", ["fclose", "close", "sort"])
def test_program_closing_stderr_still_gets_psrun_lines(targets, workdir, tmp_path, program, mode):
    """coreutils (close_stdout), tar and xz close stderr before they
    return: psrun's report line still reaches psrun's stderr."""
    if program == "sort":  # coreutils: atexit(close_stdout) closes stdout and stderr
        data = tmp_path / "lines.txt"
        data.write_text("b\na\nc\n")
        argv = [shutil.which("sort"), str(data)]
    else:
        argv = [targets["hard_endings"], "close_stderr", program]
    bare = run_to_end(argv)
    assert bare.returncode == 0 and bare.stderr == "", bare
    p = run_to_end(psrun(*MODES[mode], *argv))
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    wait_for("report", lambda: reports(workdir))
    check_notes_name_the_reports(p.stderr, workdir)


def test_sigkill_under_per_thread_keeps_the_ended_threads_reports(targets, workdir):
    """psrun -p, SIGKILL: the threads that ended before the kill have their
    counts, final, in the shared records: their reports are written by the
    collector; the threads still running lost their own counters with the
    process, and the process total says how many (their counts are in it)."""
    proc, started = start_spinning(psrun("-q", *MODES["per-thread"], targets["spin_threads"], "1", "3"), 0.5)
    os.kill(proc.pid, signal.SIGKILL)
    code, cpu, _, _ = wait_ended(proc, started)
    proc.stdout.close()
    proc.stderr.close()
    assert code == -signal.SIGKILL
    total = validate(process_report(workdir, "per-thread"), "hwpcreport-0.3.dtd")
    assert "killed by SIGKILL" in annotation(total), annotation(total)
    assert "process total" in annotation(total)
    assert "own counts of the 2 threads still running went with the process" in annotation(total), annotation(total)

    def ended_threads() -> list[Path] | None:
        found = [r for r in reports(workdir) if re.search(r"\.t\d+\.", r.name)]
        return found if len(found) == 3 else None

    threads = wait_for("three thread reports", ended_threads)
    time.sleep(0.5)  # nothing more comes: the running threads have none
    assert len([r for r in reports(workdir) if re.search(r"\.t\d+\.", r.name)]) == 3
    # the main thread is 1, the three ended workers 2-4, the spinner 5 (none)
    assert sorted(re.search(r"\.t(\d+)\.", r.name).group(1) for r in threads) == ["2", "3", "4"]
    ended = 0.0
    for report in threads:
        root = validate(report, "hwpcreport-0.3.dtd")
        # each worked 0.1 s of its own CPU time before it ended
        assert 0.095 <= task_clock(root) <= cpu, (report.name, task_clock(root))
        assert "killed" not in annotation(root), annotation(root)
        ended += task_clock(root)
    # the total holds the ended threads and the spinning after them: all the CPU time used
    assert task_clock(total) >= max(ended, 0.9 * cpu), (task_clock(total), ended, cpu)
