"""The report writer is async-signal-safe by construction: reports written
from a SIGALRM handler's _exit() and from a fatal SIGALRM while other
threads allocate, from exit() on a 64 KiB thread stack, without umask(),
and where the file system has no hard links (or no renameat2 either)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import pytest

from tests.conftest import psrun_command, validate

RUNS = 200
WORKERS = 6


def _one(argv: list[str], cwd: Path, timeout: float = 20, **kw) -> tuple[int | None, float, str]:
    """(returncode, seconds, stderr); None for a run that hung (killed at timeout)."""
    cwd.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - t0, "timeout"
    return p.returncode, time.monotonic() - t0, p.stderr


def _xml(d: Path) -> list[Path]:
    return sorted(f for f in d.iterdir() if f.suffix == ".xml")


def _check_reports(workdir: Path, runs: int, why: str) -> None:
    lost, stray, bad = [], [], []
    for i in range(runs):
        d = workdir / f"run{i}"
        files = sorted(d.iterdir())
        stray += [f.name for f in files if f.suffix != ".xml"]
        xml = _xml(d)
        if len(xml) != 1:
            lost.append((i, [f.name for f in files]))
            continue
        root = validate(xml[0], "hwpcreport-0.3.dtd")
        if why not in (root.findtext("annotation") or ""):
            bad.append((i, root.findtext("annotation")))
    assert not lost and not stray and not bad, (len(lost), lost[:3], stray[:3], bad[:3])


def test_sigalrm_handler_exit_while_threads_allocate(targets, workdir):
    """_exit(0) from a SIGALRM handler while two threads malloc and free:
    200 runs, each ends promptly with status 0 and one valid report."""
    exe = targets["signal_end"]

    def run(i):
        return _one([psrun_command(), "-q", exe, "alarm_exit", str(5 + i % 30)], workdir / f"run{i}")

    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(run, range(RUNS)))
    hung = [i for i, r in enumerate(results) if r[0] is None]
    failed = [(i, r) for i, r in enumerate(results) if r[0] not in (0, None)]
    assert not hung and not failed, (hung[:5], failed[:3])
    _check_reports(workdir, RUNS, "the program ended with _exit()")


def test_fatal_sigalrm_while_threads_allocate(targets, workdir):
    """alarm() with the default action while two threads allocate: 200 runs,
    each dies of SIGALRM like the bare program, with its report, and none
    waits for psuite's watchdog (3 s): the slowest measured run is compared
    with the slowest bare run of the same batch, run in the same pool."""
    exe = targets["signal_end"]
    bare_runs = 40

    def run(i):
        if i < bare_runs:  # interleaved with the measured runs, under the same load
            return _one([exe, "alarm_die", str(5 + i % 30)], workdir / f"bare{i}")
        k = i - bare_runs
        return _one([psrun_command(), "-q", exe, "alarm_die", str(5 + k % 30)], workdir / f"run{k}")

    order = [j for i in range(bare_runs) for j in (i, bare_runs + i)]
    order += list(range(2 * bare_runs, bare_runs + RUNS))
    with ThreadPoolExecutor(WORKERS) as pool:
        done = dict(zip(order, pool.map(run, order), strict=True))
    bare = [done[i] for i in range(bare_runs)]
    measured = [done[bare_runs + k] for k in range(RUNS)]
    assert all(r[0] == -signal.SIGALRM for r in bare), [r[0] for r in bare]
    wrong = [(k, r[0], r[2][-300:]) for k, r in enumerate(measured) if r[0] != -signal.SIGALRM]
    assert not wrong, wrong[:3]
    _check_reports(workdir, RUNS, "report written on SIGALRM")
    slowest_bare = max(r[1] for r in bare)
    slowest = max(r[1] for r in measured)
    # the watchdog would add 3 s to a run; writing the report adds milliseconds
    assert slowest < slowest_bare + 1.5, (slowest, slowest_bare)


@pytest.mark.parametrize("md5", ["0", "1"])
def test_exit_from_a_thread_with_a_64k_stack(targets, workdir, md5):
    """exit(3) from a thread with a 64 KiB stack (the report is written on
    the writer's own stack; the executable's md5 needs no 64 KiB buffer)."""
    exe = targets["signal_end"]
    bare = subprocess.run([exe, "small_stack_exit"], capture_output=True, text=True, timeout=30)
    p = subprocess.run(
        [psrun_command(), "-q", exe, "small_stack_exit"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PSUITE_MD5": md5},
    )
    assert bare.returncode == 3
    assert p.returncode == bare.returncode, p.stderr
    [report] = _xml(workdir)
    command = validate(report, "hwpcreport-0.3.dtd").find("command")
    assert ("md5sum" in command.attrib) == (md5 == "1")


@pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")
def test_no_umask_call_and_the_reports_mode(targets, workdir):
    """The report is created 0666 and the kernel applies the umask: no
    umask() system call in the process (it is process-wide)."""
    trace = workdir / "trace.txt"

    def mask():
        os.umask(0o027)

    p = subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-e",
            "trace=umask",
            "-o",
            str(trace),
            psrun_command(),
            "-q",
            targets["signal_end"],
            "small_stack_exit",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=mask,
    )
    assert p.returncode == 3, p.stderr
    calls = [line for line in trace.read_text().splitlines() if "umask(" in line]
    assert not calls, calls[:5]
    [report] = _xml(workdir)
    assert report.stat().st_mode & 0o777 == 0o666 & ~0o027


def test_local_date_without_localtime_at_the_end(targets, workdir):
    """<date> is local time from the UTC offset taken at the start, with
    integer arithmetic at the end: the same as the C library's local time,
    for offsets east and west of UTC and off the hour."""
    for tz in ("Asia/Kolkata", "America/St_Johns", "UTC"):
        if tz != "UTC" and not Path("/usr/share/zoneinfo", tz).exists():
            continue
        d = workdir / tz.replace("/", "_")
        d.mkdir()
        env = {**os.environ, "TZ": tz}
        before = time.time()
        p = subprocess.run(
            [psrun_command(), "-q", targets["signal_end"], "small_stack_exit"],
            cwd=d,
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
        )
        after = time.time()
        assert p.returncode == 3, p.stderr
        [report] = _xml(d)
        date = validate(report, "hwpcreport-0.3.dtd").findtext("date")
        script = (
            "import sys, time\nfor t in sys.argv[1:]: print(time.strftime('%Y %m %d %H %M %S', time.localtime(int(t))))"
        )
        lines = subprocess.run(
            [sys.executable, "-c", script, str(int(before)), str(int(after) + 1)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        first, last = (datetime(*map(int, line.split())) for line in lines)
        assert first <= datetime.strptime(date, "%a %b %d %H:%M:%S %Y") <= last, (tz, date, first, last)
        assert len(date.split()) == 5 and len(date.split()[2]) == 2, date


# ---- file systems without hard links -------------------------------------
# A loop-mounted vfat image would be the natural test, but this kernel has
# no vfat (nor modules to load): the shim below makes link() fail as vfat
# does (EPERM), and with NOLINK_NORENAME=1 renameat2 as file systems
# without RENAME_NOREPLACE do (EINVAL), in the measured process only.
SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int link(const char *from, const char *to) { (void)from; (void)to; errno = EPERM; return -1; }

long syscall(long n, ...)
{
    static long (*real)(long, ...);
    va_list ap;
    long a[6];
    va_start(ap, n);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (n == SYS_renameat2 && getenv("NOLINK_NORENAME")) {
        errno = EINVAL;
        return -1;
    }
    if (!real)
        real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
"""


@pytest.fixture(scope="module")
def nolink_shim(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("shim")
    (d / "nolink.c").write_text(SHIM)
    cc = shutil.which("cc") or shutil.which("gcc")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(d / "nolink.so"), str(d / "nolink.c"), "-ldl"], check=True)
    return str(d / "nolink.so")


@pytest.mark.parametrize("norename", [False, True], ids=["renameat2", "exclusive-create"])
def test_reports_land_without_hard_links(targets, workdir, nolink_shim, norename):
    env = {**os.environ, "LD_PRELOAD": nolink_shim}
    if norename:
        env["NOLINK_NORENAME"] = "1"

    def mask():
        os.umask(0o022)

    p = subprocess.run(
        [psrun_command(), targets["signal_end"], "small_stack_exit"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        preexec_fn=mask,
    )
    assert p.returncode == 3, p.stderr
    files = sorted(workdir.iterdir())
    assert [f.suffix for f in files] == [".xml"], files  # no temporary file left
    validate(files[0], "hwpcreport-0.3.dtd")
    assert files[0].stat().st_mode & 0o777 == 0o644
    assert p.stderr.count("psrun: report:") == 1, p.stderr


@pytest.mark.parametrize("norename", [False, True], ids=["renameat2", "exclusive-create"])
def test_no_hard_links_never_overwrites(workdir, nolink_shim, norename):
    """ps_hwpc_stop("region.xml") over a planted symlink, through the
    fallbacks: the next free name, the symlink's target untouched."""
    victim = workdir / "victim.txt"
    victim.write_text("do not touch")
    (workdir / "region.xml").symlink_to(victim)
    script = textwrap.dedent("""
        from psuite.hwpc import Counting
        c = Counting(["task-clock"])
        c.init()
        c.start()
        c.stop("region.xml")
        c.shutdown()
    """)
    env = {**os.environ, "LD_PRELOAD": nolink_shim}
    env.pop("PSUITE_OUTPUT_DIR", None)
    if norename:
        env["NOLINK_NORENAME"] = "1"
    p = subprocess.run([sys.executable, "-c", script], cwd=workdir, capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert victim.read_text() == "do not touch"
    validate(workdir / "region.1.xml", "hwpcreport-0.3.dtd")
    assert sorted(f.name for f in workdir.iterdir()) == ["region.1.xml", "region.xml", "victim.txt"]
