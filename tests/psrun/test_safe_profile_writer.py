"""The profile writer is async-signal-safe by construction, like the count
report's: profiles written from a SIGALRM handler's _exit() and from a
fatal SIGALRM while other threads allocate, and from a fatal SIGALRM while
another thread holds the dynamic loader's lock (dlopen and dlclose in a
loop): the module map is kept current as modules come and go, never taken
with dl_iterate_phdr at the end."""

from __future__ import annotations

import signal
import subprocess
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import psrun_command, validate
from tests.psrun.test_safe_writer import SIGALRM_DEATH

WORKERS = 6
TIMERS = ["ITIMER_PROF", "ITIMER_REAL"]

PLUGIN_SRC = textwrap.dedent(
    """\
    #define _GNU_SOURCE
    #include <link.h>
    #include <stdlib.h>
    #include <time.h>
    /* The loader's locks held most of the time the loop runs: the
     * constructor and destructor run under dlopen's and dlclose's, and they
     * and plugin_work allocate inside dl_iterate_phdr's callback, under the
     * lock dl_iterate_phdr takes (as C++ unwinding does). */
    static void spin_us(long us)
    {
        struct timespec a, b;
        char *live[8] = {0};
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (unsigned long i = 0;; i++) {
            unsigned k = (unsigned)(i * 2654435761u >> 7) % 8;
            free(live[k]);
            live[k] = malloc(2048 + (i * 7919) % 65536);
            if (live[k])
                live[k][0] = (char)i;
            clock_gettime(CLOCK_MONOTONIC, &b);
            if ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 >= us)
                break;
        }
        for (int k = 0; k < 8; k++)
            free(live[k]);
    }
    static int spin_cb(struct dl_phdr_info *info, size_t size, void *us)
    {
        (void)info;
        (void)size;
        spin_us(*(long *)us);
        return 1;
    }
    static void spin_locked(long us) { dl_iterate_phdr(spin_cb, &us); }
    __attribute__((constructor)) static void plugin_init(void) { spin_locked(200); }
    __attribute__((destructor)) static void plugin_fini(void) { spin_locked(200); }
    int plugin_work(int us) { spin_locked(us); return 0; }
    """
)


def _one(argv: list[str], cwd: Path, timeout: float = 20) -> tuple[int | None, float, str]:
    """(returncode, seconds, stderr); None for a run that hung (killed at timeout)."""
    cwd.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - t0, "timeout"
    return p.returncode, time.monotonic() - t0, p.stderr


def _check_profiles(workdir: Path, runs: int, why: str | tuple[str, ...]) -> None:
    lost, stray, bad = [], [], []
    for i in range(runs):
        d = workdir / f"run{i}"
        files = sorted(d.iterdir())
        stray += [f.name for f in files if f.suffix != ".xml"]
        xml = [f for f in files if f.suffix == ".xml"]
        if len(xml) != 1:
            lost.append((i, [f.name for f in files]))
            continue
        root = validate(xml[0], "hwpcreport-0.3.dtd")
        note = root.findtext("annotation") or ""
        if root.get("mode") != "profile" or not any(w in note for w in ((why,) if isinstance(why, str) else why)):
            bad.append((i, root.get("mode"), root.findtext("annotation")))
        elif root.find("hwpcprofiledata/module") is None:
            bad.append((i, "no module"))
    assert not lost and not stray and not bad, (len(lost), lost[:3], stray[:3], bad[:3])


def _with_bare_runs(bare_argv, measured_argv, workdir: Path, runs: int, bare_runs: int = 30):
    """The measured runs with bare ones interleaved, under the same load:
    (bare results, measured results)."""

    def run(i):
        if i < bare_runs:
            return _one(bare_argv(i), workdir / f"bare{i}")
        k = i - bare_runs
        return _one(measured_argv(k), workdir / f"run{k}")

    order = [j for i in range(bare_runs) for j in (i, bare_runs + i)]
    order += list(range(2 * bare_runs, bare_runs + runs))
    with ThreadPoolExecutor(WORKERS) as pool:
        done = dict(zip(order, pool.map(run, order), strict=True))
    return [done[i] for i in range(bare_runs)], [done[bare_runs + k] for k in range(runs)]


def _died_of_sigalrm_promptly(bare, measured) -> None:
    assert all(r[0] == -signal.SIGALRM for r in bare), [r[0] for r in bare]
    hung = [k for k, r in enumerate(measured) if r[0] is None]
    wrong = [(k, r[0], r[2][-300:]) for k, r in enumerate(measured) if r[0] != -signal.SIGALRM]
    assert not hung and not wrong, (hung[:5], wrong[:3])
    slowest_bare = max(r[1] for r in bare)
    slowest = max(r[1] for r in measured)
    # psuite's watchdog (3 s) would add 3 s to a run; writing the profile adds milliseconds
    assert slowest < slowest_bare + 2.0, (slowest, slowest_bare)


@pytest.mark.parametrize("timer", TIMERS)
def test_profile_from_sigalrm_handler_exit_while_threads_allocate(targets, workdir, timer):
    """_exit(0) from a SIGALRM handler while two threads malloc and free:
    200 runs, none hangs, each exits 0 with one valid profile."""
    exe = targets["signal_end"]
    runs = 200

    def run(i):
        return _one(
            [psrun_command(), "-q", "--profile", timer, exe, "alarm_exit", str(5 + i % 30)], workdir / f"run{i}"
        )

    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(run, range(runs)))
    hung = [i for i, r in enumerate(results) if r[0] is None]
    failed = [(i, r) for i, r in enumerate(results) if r[0] not in (0, None)]
    assert not hung and not failed, (hung[:5], failed[:3])
    _check_profiles(workdir, runs, "the program ended with _exit()")


@pytest.mark.parametrize("timer", TIMERS)
def test_profile_on_fatal_sigalrm_while_threads_allocate(targets, workdir, timer):
    """SIGALRM's default action while two threads malloc and free: 200
    runs, each dies of SIGALRM like the bare program, with its profile, and
    none waits for psuite's watchdog (the slowest measured run against the
    slowest bare one of the same pool)."""
    exe = targets["signal_end"]
    bare, measured = _with_bare_runs(
        lambda i: [exe, "alarm_die", str(5 + i % 30)],
        lambda k: [psrun_command(), "-q", "--profile", timer, exe, "alarm_die", str(5 + k % 30)],
        workdir,
        200,
    )
    _died_of_sigalrm_promptly(bare, measured)
    _check_profiles(workdir, 200, SIGALRM_DEATH)


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("plugin")
    src = out / "lock_plugin.c"
    src.write_text(PLUGIN_SRC)
    so = out / "lock_plugin.so"
    subprocess.run(["cc", "-O1", "-g", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    return str(so)


@pytest.mark.parametrize("timer", TIMERS)
def test_profile_on_fatal_sigalrm_while_a_thread_holds_the_loaders_lock(targets, workdir, plugin, timer):
    """One thread dlopens and dlcloses a plugin in a loop (its constructor,
    destructor and function allocate under the loader's locks) while
    SIGALRM's default action ends the program on that thread: 100 runs,
    each dies of SIGALRM promptly with its profile (a writer that allocated
    or took the loader's state at the end would wait for psuite's watchdog,
    3 s, and end without a profile)."""
    exe = targets["dlopen_end"]
    bare, measured = _with_bare_runs(
        lambda i: [exe, plugin, str(5 + i % 30)],
        lambda k: [psrun_command(), "-q", "--profile", timer, exe, plugin, str(5 + k % 30)],
        workdir,
        100,
        bare_runs=20,
    )
    _died_of_sigalrm_promptly(bare, measured)
    _check_profiles(workdir, 100, SIGALRM_DEATH)
