"""The sampler inside real programs, through the real psrun: threads that
exist before sampling starts (a library constructor's), threads that block
SIGPROF (the sigwait server layout), ITIMER_REAL and the program's sleeps
and namespaces, thousands of sequential threads under an address-space
limit, and a plugin unloaded with dlclose while another one takes its
place.  Behaviour is compared with the bare run, data with the CPU or wall
time the report states (sampling counts CPU time, so the tolerances hold on
a loaded machine)."""

from __future__ import annotations

import os
import re
import resource
import subprocess
from pathlib import Path

import pytest

from psuite.analysis import srcmap
from psuite.analysis.inputs import load
from tests.conftest import TARGETS, run_tool, validate
from tests.psrun.test_psrun import reports
from tests.psrun.test_threads_counted import uncharged_seconds

PROFILE_SRC = TARGETS / "profile"
PERIOD_US = 1000


def profiled(timer: str, *args: str, **kw):
    """psrun -q --profile TIMER --period PERIOD_US ARGS..., through the real command."""
    return run_tool("psrun", "-q", "--profile", timer, "--period", str(PERIOD_US), *args, **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    """The programs that need a shared library of their own, built here."""
    out = tmp_path_factory.mktemp("runtime")

    def cc(*args: str) -> None:
        subprocess.run(["cc", "-O1", "-g", *args], check=True)

    cc("-shared", "-fPIC", "-o", str(out / "libctor_pool_lib.so"), str(PROFILE_SRC / "ctor_pool_lib.c"), "-lpthread")
    cc(
        "-o",
        str(out / "ctor_pool_main"),
        str(PROFILE_SRC / "ctor_pool_main.c"),
        f"-L{out}",
        "-lctor_pool_lib",
        f"-Wl,-rpath,{out}",
    )
    for name in ("plugin_a", "plugin_b"):
        cc("-shared", "-fPIC", "-o", str(out / f"{name}.so"), str(PROFILE_SRC / f"{name}.c"))
    cc("-o", str(out / "plugin_main"), str(PROFILE_SRC / "plugin_main.c"), "-ldl")
    cc("-shared", "-fPIC", "-o", str(out / "libnoperf_shim.so"), str(PROFILE_SRC / "noperf_shim.c"), "-ldl")
    return {p.name: str(p) for p in out.iterdir()}


def profile_roots(workdir: Path) -> dict[int, object]:
    """The reports psrun wrote, valid, by thread number (0: the process)."""
    found = {}
    for report in reports(workdir):
        root = validate(report, "hwpcreport-0.3.dtd")
        found[int(root.findtext("thread") or 0)] = root
    return found


def samples(root) -> int:
    return int(root.findtext("hwpcprofiledata/totalsamples"))


def lost(root) -> int:
    return int(re.search(r"(\d+) samples lost", root.findtext("annotation")).group(1))


def cpu_seconds(root) -> float:
    return float(root.findtext("cputime/usertime") or 0) + float(root.findtext("cputime/systemtime") or 0)


def functions(path: Path) -> dict[str, int]:
    totals: dict[str, int] = {}
    for loc in srcmap.resolve(load(str(path))):
        totals[loc.function] = totals.get(loc.function, 0) + loc.samples
    return totals


def test_thread_started_by_a_library_constructor_is_sampled(built, workdir):
    """OpenBLAS's layout: a library constructor starts a thread before
    psuite starts sampling (on main it was never sampled: 0 samples for
    its 0.5 s of CPU)."""
    env = dict(os.environ, CTOR_POOL_CPU_MS="500")
    bare = subprocess.run([built["ctor_pool_main"]], capture_output=True, text=True, env=env)
    before = uncharged_seconds()
    p = profiled("ITIMER_PROF", built["ctor_pool_main"], env=env)
    uncharged = uncharged_seconds() - before  # steal and interrupts: in the task clock sampled, not in CPU time
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout) == (0, "pool done\n"), p.stderr
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    cpu = cpu_seconds(root)
    assert cpu > 0.45
    # one sample per ms of CPU time, the constructor's thread's included
    assert 0.85 * cpu <= samples(root) * PERIOD_US / 1e6 <= 1.1 * cpu + 0.02 + uncharged, (samples(root), cpu)
    assert functions(report).get("pool_work", 0) >= 0.8 * 500
    # seen starting (every signal blocked for a moment), yet not blocking the sampling signal
    assert "blocked SIG" not in root.findtext("annotation")


def test_constructor_thread_sampled_by_cpu_timers_without_perf_event(built, workdir):
    """Without perf_event, the thread a library constructor started gets a
    POSIX CPU-time timer on its own CPU clock (on main: no samples)."""
    env = dict(os.environ, CTOR_POOL_CPU_MS="500", LD_PRELOAD=built["libnoperf_shim.so"])
    p = profiled("ITIMER_PROF", built["ctor_pool_main"], env=env)
    assert (p.returncode, p.stdout) == (0, "pool done\n"), p.stderr
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    note = root.findtext("annotation")
    assert "POSIX CPU-time timer" in note, note
    # Tick-driven timers deliver less than the rate on a loaded machine (the
    # rate is the perf_event test's business): the thread is sampled, and
    # its samples are nearly all there is (main only waits for it).
    found = functions(report)
    assert found.get("pool_work", 0) >= 10 and found["pool_work"] >= 0.8 * samples(root), (found, note)


def test_itimer_real_never_cuts_sleeps_short(targets, workdir):
    """1,500 nanosleep(1 ms) and 1,500 poll(1 ms): no EINTR under
    ITIMER_REAL at 1 kHz, as bare (main: 9 and 88); the sleeps are sampled."""
    bare = subprocess.run([targets["rt_naps"], "1500"], capture_output=True, text=True)
    assert bare.stdout == "nanosleep EINTR 0 poll EINTR 0\n"
    p = profiled("ITIMER_REAL", targets["rt_naps"], "1500")
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    wall = load(str(report)).wallclock
    # wall-clock samples: the sleeps (read from /proc) and the work between
    assert 0.7 * wall <= samples(root) * PERIOD_US / 1e6 <= 1.05 * wall, (samples(root), wall)


@pytest.mark.parametrize("signame", ["SIGTRAP", "SIGPROF"])
@pytest.mark.parametrize("timer", ["ITIMER_PROF", "ITIMER_REAL"])
def test_threads_blocking_sigprof_are_reported_and_counted_lost(targets, workdir, timer, signame):
    """main blocks every signal, starts two workers (0.4 s of CPU each) and
    sigwait()s: the workers cannot be sampled; the report names them and
    counts their samples as lost; main's samples are its own (none while it
    sleeps under ITIMER_PROF, its sleeping time under ITIMER_REAL).  With
    either delivery: SIGTRAP (perf_event sigtrap, the default here) or
    SIGPROF (F_SETSIG, PSUITE_SAMPLE_SIGNAL=sigprof)."""
    bare = subprocess.run([targets["rt_sigwait_server"], "0.4"], capture_output=True, text=True)
    env = dict(os.environ, PSUITE_SAMPLE_SIGNAL=signame.lower())
    argv = ["-q", "-p", "--profile", timer, "--period", str(PERIOD_US), targets["rt_sigwait_server"], "0.4"]
    p = run_tool("psrun", *argv, env=env)
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    roots = profile_roots(workdir)
    assert sorted(roots) == [0, 1, 2, 3]
    process = roots[0].findtext("annotation")
    for worker in (2, 3):
        root = roots[worker]
        cpu = cpu_seconds(root)
        assert cpu > 0.35
        note = root.findtext("annotation")
        assert f"samples delivered by {signame}" in note, note
        assert f"thread {worker} blocked {signame}: not sampled" in note, note
        assert f"thread {worker} blocked {signame}: not sampled" in process, process
        # (under ITIMER_REAL, the moments it was blocked - on the mutex, say - are sampled from /proc)
        assert samples(root) == 0 if timer == "ITIMER_PROF" else samples(root) <= 0.05 * cpu * 1e6 / PERIOD_US
        # the samples its source would have given: CPU time under ITIMER_PROF;
        # user time under ITIMER_REAL, whose task clock excludes the kernel
        # (on a loaded machine a spinning thread's system time reaches 15 %)
        basis = cpu if timer == "ITIMER_PROF" else float(root.findtext("cputime/usertime"))
        assert 0.85 * basis <= lost(root) * PERIOD_US / 1e6 <= 1.1 * basis + 0.02, (lost(root), basis, cpu)
    main = roots[1]  # it blocks SIGPROF too, and may be seen doing so: its CPU time is a few ms
    assert lost(roots[0]) == sum(lost(r) for k, r in roots.items() if k)
    assert samples(roots[0]) == samples(main)
    if timer == "ITIMER_PROF":
        assert samples(main) * PERIOD_US / 1e6 <= cpu_seconds(main) + 0.02
    else:  # its wall time, no more
        wall = load(str([r for r in reports(workdir) if ".t1." in r.name][0])).wallclock
        assert 0.5 * wall <= samples(main) * PERIOD_US / 1e6 <= 1.05 * wall, (samples(main), wall, process)


@pytest.mark.parametrize("where", ["ctor", "main", "child"])
def test_unshare_user_namespace_under_itimer_real(targets, workdir, where):
    """unshare(CLONE_NEWUSER) needs a single-threaded process: from the
    program's constructor (no sampler thread yet), from main (the sampler
    thread steps aside) and from a child main forks (the thread is not
    there) it gives what it gives bare (main: EINVAL); sampling goes on
    after it."""
    env = dict(os.environ, RT_UNSHARE=where)
    bare = subprocess.run([targets["rt_unshare"], "200"], capture_output=True, text=True, env=env)
    assert bare.stdout == f"{where} 0 ok\n"  # root in a VM: it works bare
    p = profiled("ITIMER_REAL", targets["rt_unshare"], "200", env=env)
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    # 200 ms running, then 200 ms asleep after the call
    assert samples(root) * PERIOD_US / 1e6 >= 0.6 * 0.4, samples(root)


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_sequential_threads_reuse_sample_tables(targets, workdir):
    """3,000 threads one after another under a 2 GiB address-space limit:
    the program can still allocate 512 MiB after them, as bare (main kept a
    1 MiB table per thread and the allocation failed)."""
    bare = subprocess.run(
        [targets["rt_seq_threads"], "3000"], capture_output=True, text=True, preexec_fn=_limit_address_space
    )
    assert bare.stdout == "3000 threads done, 512 MiB allocated\n"
    p = profiled(
        "ITIMER_PROF",
        targets["rt_seq_threads"],
        "3000",
        preexec_fn=_limit_address_space,
    )
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout), p.stderr
    [report] = reports(workdir)
    root = validate(report, "hwpcreport-0.3.dtd")
    assert lost(root) == 0
    # the ended threads' samples are all there
    assert sum(functions(report).values()) == samples(root) > 0
    assert samples(root) * PERIOD_US / 1e6 <= cpu_seconds(root) + 0.02


def test_samples_of_an_unloaded_plugin_stay_with_it(built, workdir):
    """Plugin A burns 0.3 s of CPU and is dlclose'd; plugin B is loaded
    (at A's address, as a rule) and burns as long: each keeps its own
    samples (on main, A's went to B, which was loaded there at the end).
    Their destructors dlopen and dlclose a library: a dlclose within
    dlclose goes through psuite's dlclose too."""
    p = profiled(
        "ITIMER_PROF",
        built["plugin_main"],
        built["plugin_a.so"],
        built["plugin_b.so"],
        "0.3",
    )
    assert p.returncode == 0, p.stderr
    assert re.fullmatch(r"A 0x[0-9a-f]+ B 0x[0-9a-f]+\n", p.stdout), p.stdout
    [report] = reports(workdir)
    validate(report, "hwpcreport-0.3.dtd")
    found = functions(report)
    assert found.get("plugin_a_burn", 0) >= 0.8 * 300, found
    assert found.get("plugin_b_burn", 0) >= 0.8 * 300, found
    modules = {Path(m.file).name: sum(m.samples.values()) for m in load(str(report)).modules}
    assert modules.get("plugin_a.so", 0) >= 0.8 * 300 and modules.get("plugin_b.so", 0) >= 0.8 * 300, modules
