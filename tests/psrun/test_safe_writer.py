"""The report writer is async-signal-safe by construction: reports written
from a SIGALRM handler's _exit() and from a fatal SIGALRM while other
threads allocate, from exit() on a 64 KiB thread stack, without umask(),
and where the file system has no hard links (or no renameat2 either)."""

from __future__ import annotations

import errno
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

from tests.conftest import psrun_command, run_tool, validate

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


# A fatal signal's report: written by the dying process itself (psrun -p,
# whose running threads' counters go with it), or by the collector, which
# sees how the process ended.
SIGALRM_DEATH = ("report written on SIGALRM", "killed by SIGALRM")


def _check_reports(workdir: Path, runs: int, why: str | tuple[str, ...]) -> None:
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
        if not any(w in (root.findtext("annotation") or "") for w in ((why,) if isinstance(why, str) else why)):
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


@pytest.mark.parametrize("mode", ["alarm_die", "alarm_in_read"])
def test_fatal_sigalrm_while_threads_allocate_or_hold_the_lock(targets, workdir, mode):
    """alarm() with the default action while two threads allocate (or call
    ps_hwpc_read in a loop, so that the signal lands while one holds
    psuite's lock): 200 runs, each dies of SIGALRM like the bare program,
    with its report, and none waits for psuite's watchdog (3 s): the
    slowest measured run is compared with the slowest bare run of the same
    batch, run in the same pool (the bare alarm_in_read, without psuite's
    ps_hwpc_read, runs alarm_die)."""
    exe = targets["signal_end"]
    bare_runs = 40

    def run(i):
        if i < bare_runs:  # interleaved with the measured runs, under the same load
            return _one([exe, "alarm_die", str(5 + i % 30)], workdir / f"bare{i}")
        k = i - bare_runs
        return _one([psrun_command(), "-q", exe, mode, str(5 + k % 30)], workdir / f"run{k}")

    order = [j for i in range(bare_runs) for j in (i, bare_runs + i)]
    order += list(range(2 * bare_runs, bare_runs + RUNS))
    with ThreadPoolExecutor(WORKERS) as pool:
        done = dict(zip(order, pool.map(run, order), strict=True))
    bare = [done[i] for i in range(bare_runs)]
    measured = [done[bare_runs + k] for k in range(RUNS)]
    assert all(r[0] == -signal.SIGALRM for r in bare), [r[0] for r in bare]
    wrong = [(k, r[0], r[2][-300:]) for k, r in enumerate(measured) if r[0] != -signal.SIGALRM]
    assert not wrong, wrong[:3]
    _check_reports(workdir, RUNS, SIGALRM_DEATH)
    slowest_bare = max(r[1] for r in bare)
    slowest = max(r[1] for r in measured)
    # the watchdog would add 3 s to a run; writing the report adds milliseconds
    assert slowest < slowest_bare + 2.0, (slowest, slowest_bare)


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
        p = run_tool("psrun", "-q", targets["signal_end"], "small_stack_exit", cwd=d, env=env, timeout=30)
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


# ---- a real file system without hard links, through FUSE --------------------
# Where fusepy and libfuse2 are installed and FUSE can be mounted (root,
# /dev/fuse): a passthrough file system whose link() fails with EPERM like
# vfat's; libfuse2 has no rename flags, so the kernel refuses
# renameat2(RENAME_NOREPLACE) there with EINVAL, as on many FUSE and SMB
# mounts: the report is written under its final name directly (O_EXCL).
NOLINK_FS = r"""
import errno, os, sys
from fuse import FUSE, FuseOSError, Operations

class NoLink(Operations):
    def __init__(self, root):
        self.root = root
    def _p(self, path):
        return os.path.join(self.root, path.lstrip("/"))
    def getattr(self, path, fh=None):
        try:
            st = os.lstat(self._p(path))
        except OSError as e:
            raise FuseOSError(e.errno)
        keys = ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size", "st_uid")
        return {k: getattr(st, k) for k in keys}
    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._p(path))
    def mkdir(self, path, mode):
        os.mkdir(self._p(path), mode)
    def unlink(self, path):
        os.unlink(self._p(path))
    def rmdir(self, path):
        os.rmdir(self._p(path))
    def link(self, target, source):
        raise FuseOSError(errno.EPERM)
    def symlink(self, target, source):
        raise FuseOSError(errno.EPERM)
    def rename(self, old, new):
        os.rename(self._p(old), self._p(new))
    def chmod(self, path, mode):
        os.chmod(self._p(path), mode)
    def truncate(self, path, length, fh=None):
        os.truncate(self._p(path), length)
    def utimens(self, path, times=None):
        os.utime(self._p(path), times)
    def create(self, path, mode, fi=None):
        return os.open(self._p(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    def open(self, path, flags):
        return os.open(self._p(path), flags)
    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)
    def write(self, path, data, offset, fh):
        return os.pwrite(fh, data, offset)
    def release(self, path, fh):
        os.close(fh)
        return 0

os.umask(0)
FUSE(NoLink(sys.argv[1]), sys.argv[2], foreground=True, nothreads=True, default_permissions=True)
"""


@pytest.fixture
def nolink_mount(tmp_path):
    # tests/run.sh installs libfuse2 and the test extras fusepy
    import fuse  # noqa: F401

    assert os.geteuid() == 0 and os.path.exists("/dev/fuse"), "mounting FUSE needs root and /dev/fuse"
    back, mnt = tmp_path / "back", tmp_path / "mnt"
    back.mkdir()
    mnt.mkdir()
    fs = subprocess.Popen([sys.executable, "-c", NOLINK_FS, str(back), str(mnt)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60  # a loaded machine starts Python slowly
    while time.monotonic() < deadline:
        if os.path.ismount(mnt) or fs.poll() is not None:
            break
        time.sleep(0.05)
    if not os.path.ismount(mnt):
        fs.kill()
        raise AssertionError(f"FUSE cannot be mounted here: {fs.communicate()[1][-300:]}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
        try:
            fs.wait(timeout=10)
        except subprocess.TimeoutExpired:
            fs.kill()


def test_reports_land_on_a_file_system_without_hard_links(targets, nolink_mount):
    run = nolink_mount / "run"
    run.mkdir()
    # the file system really has no hard links
    (run / "probe").write_text("x")
    with pytest.raises(OSError) as e:
        os.link(run / "probe", run / "probe2")
    assert e.value.errno == errno.EPERM
    (run / "probe").unlink()
    for _ in range(2):
        p = subprocess.run(
            [psrun_command(), targets["signal_end"], "small_stack_exit"],
            cwd=run,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert p.returncode == 3, p.stderr
        assert p.stderr.count("psrun: report:") == 1, p.stderr
    files = sorted(run.iterdir())
    assert [f.suffix for f in files] == [".xml", ".xml"], files  # no temporary file left
    for f in files:
        validate(f, "hwpcreport-0.3.dtd")
    # a name taken: the next free one, the existing file untouched
    (run / "region.xml").write_text("taken")
    script = textwrap.dedent("""
        from psuite.hwpc import Counting
        c = Counting(["task-clock"])
        c.init()
        c.start()
        c.stop("region.xml")
        c.shutdown()
    """)
    env = {k: v for k, v in os.environ.items() if k != "PSUITE_OUTPUT_DIR"}
    p = subprocess.run([sys.executable, "-c", script], cwd=run, capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    assert (run / "region.xml").read_text() == "taken"
    validate(run / "region.1.xml", "hwpcreport-0.3.dtd")


def test_date_after_a_daylight_saving_change_during_the_run(targets, workdir):
    """Daylight saving starts 2 s into a 4 s run (a POSIX TZ rule made for
    the moment): <date> is in the new offset, found when measurement
    started (no time-zone reading at the end)."""
    start = time.time() + 2
    utc = time.gmtime(start)
    # POSIX TZ "n" rule: zero-based day of the year, February 29 counted
    day = utc.tm_yday - 1
    # summer time for two days (more than the day steps the runtime looks ahead by: a window shorter than a
    # day, ending at noon, was missed when the test ran between 11:00 and 12:00 UTC)
    tz = f"STD0DST-1,{day}/{utc.tm_hour:02d}:{utc.tm_min:02d}:{utc.tm_sec:02d},{(day + 2) % 365}/12:00:00"
    env = {**os.environ, "TZ": tz}
    p = run_tool("psrun", "-q", targets["signal_end"], "alarm_exit", "4000", cwd=workdir, env=env, timeout=60)
    after = time.time()
    assert p.returncode == 0, p.stderr
    [report] = _xml(workdir)
    date = datetime.strptime(validate(report, "hwpcreport-0.3.dtd").findtext("date"), "%a %b %d %H:%M:%S %Y")
    utc_end = datetime(*time.gmtime(after)[:6])
    # one hour ahead of UTC (DST-1), not UTC (STD0)
    assert 3590 <= (date - utc_end).total_seconds() <= 3600, (tz, date, utc_end)


def test_fatal_sigalrm_with_per_thread_reports(targets, workdir):
    """psrun -p, SIGALRM's default action while both threads allocate: the
    process total and each thread's report are written from the signal
    handler (no stdio, no lock a thread may hold), 100 runs of 100."""
    exe = targets["signal_end"]
    runs = 100

    def run(k):
        return _one([psrun_command(), "-q", "-p", exe, "alarm_die", str(5 + k % 30)], workdir / f"run{k}")

    with ThreadPoolExecutor(WORKERS) as pool:
        done = list(pool.map(run, range(runs)))
    assert all(r[0] == -signal.SIGALRM for r in done), [r[0] for r in done if r[0] != -signal.SIGALRM][:5]
    incomplete = []
    for k in range(runs):
        xml = _xml(workdir / f"run{k}")
        names = sorted(".".join(f.name.split(".")[2:-2]) for f in xml)  # "", "t1", "t2"
        if names != ["", "t1", "t2"]:
            incomplete.append((k, [f.name for f in xml]))
            continue
        for f in xml:
            root = validate(f, "hwpcreport-0.3.dtd")
            if root.findtext("thread") == "0":
                assert "report written on SIGALRM" in root.findtext("annotation")
    assert not incomplete, incomplete[:3]


@pytest.mark.parametrize("follow", [False, True], ids=["old-image", "follow"])
def test_exec_from_a_signal_handler_while_threads_allocate(targets, workdir, follow):
    """A SIGALRM handler re-execs the program (a daemon reloading) while two
    threads malloc and free: the old image's report is written inside the
    handler, 100 runs of 100, no hang; with -f the new image writes its own
    too."""
    exe = targets["signal_end"]
    runs = 100
    extra = ["-f"] if follow else []

    def run(k):
        return _one([psrun_command(), "-q", *extra, exe, "alarm_exec", str(5 + k % 30)], workdir / f"run{k}")

    with ThreadPoolExecutor(WORKERS) as pool:
        done = list(pool.map(run, range(runs)))
    assert all(r[0] == 0 for r in done), [r for r in done if r[0] != 0][:3]
    wrong = []
    for k in range(runs):
        xml = _xml(workdir / f"run{k}")
        notes = sorted(validate(f, "hwpcreport-0.3.dtd").findtext("annotation") or "" for f in xml)
        if len(xml) != 1 + follow or sum("written before exec" in n for n in notes) != 1:
            wrong.append((k, [f.name for f in xml], notes))
    assert not wrong, wrong[:3]


@pytest.mark.parametrize("mode", [[], ["-p"], ["--profile", "ITIMER_PROF"], ["--profile", "ITIMER_REAL"]])
def test_thread_with_the_smallest_stack(targets, workdir, mode):
    """PTHREAD_STACK_MIN (16 KiB): psuite takes no static TLS worth
    mentioning out of it and runs nothing big on it."""
    exe = targets["signal_end"]
    bare = subprocess.run([exe, "tiny_stack_thread"], capture_output=True, text=True, timeout=30)
    p = subprocess.run(
        [psrun_command(), "-q", *mode, exe, "tiny_stack_thread"], capture_output=True, text=True, timeout=30
    )
    assert bare.returncode == 0
    assert p.returncode == 0, p.stderr
    reports = _xml(workdir)  # the workdir fixture is the current directory
    assert reports
    for report in reports:
        validate(report, "hwpcreport-0.3.dtd")
