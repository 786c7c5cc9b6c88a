"""Modules that go with dlclose (tests/targets/dlclose), through psrun and
psprocess: a plugin loaded and unloaded thousands of times is profiled with
none of psuite's code in the profile and its samples charged to it, and the
samples a library's destructor takes inside the dlclose that unloads it keep
their whole call path (main -> dlclose -> ... -> the destructor), none of
them counted as truncated."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from psuite.analysis.inputs import load
from tests.conftest import TARGETS, run_tool

SRC = TARGETS / "dlclose"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("dlclose")

    def cc(*args: str) -> None:
        subprocess.run(["cc", "-O2", "-g", *args], check=True)

    cc("-o", str(out / "loop"), str(SRC / "loop.c"), "-ldl")
    cc("-shared", "-fPIC", "-o", str(out / "step.so"), str(SRC / "step.c"))
    cc("-o", str(out / "fini_main"), str(SRC / "fini_main.c"), "-ldl")
    cc("-shared", "-fPIC", "-o", str(out / "fini.so"), str(SRC / "fini.c"))
    cc("-o", str(out / "stay"), str(SRC / "stay.c"), "-ldl")
    return {p.name: str(p) for p in out.iterdir()}


def profile_of(workdir: Path, exe: str) -> Path:
    found = [p for p in workdir.glob(f"{exe}.*.xml") if not p.name.endswith(".callpaths.xml")]
    assert len(found) == 1, found
    return found[0]


def module_samples(profile: Path) -> dict[str, int]:
    report = load(str(profile))
    out: dict[str, int] = {}
    for module in report.modules:
        out[module.file] = out.get(module.file, 0) + sum(module.samples.values())
    return out


def test_loop_of_dlopen_and_dlclose_shows_no_psuite_code(built, workdir):
    """20,000 loads of one plugin (mostly mapped where the last one was):
    the samples of every load go to the plugin's file, none to psuite's
    library or to an unknown module, and the program's output is the bare
    run's."""
    args = [built["loop"], built["step.so"], "20000"]
    bare = subprocess.run(args, capture_output=True, text=True, check=True)
    p = run_tool("psrun", "--profile", "ITIMER_PROF", "--period", "500", *args, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout == bare.stdout
    samples = module_samples(profile_of(workdir, "loop"))
    total = sum(samples.values())
    assert total > 200, samples
    assert not [f for f in samples if "libpshwpc" in f or f == "[unknown]"], samples
    assert samples.get(built["step.so"], 0) > 0, samples
    text = run_tool("psprocess", str(profile_of(workdir, "loop"))).stdout
    summaries = text.split("Module Summary", 1)[1]
    assert "libpshwpc" not in summaries and "ps_modules" not in summaries and "ps_sampler" not in summaries


def folded(workdir: Path, exe: str) -> dict[tuple[str, ...], int]:
    out = workdir / "stacks.folded"
    p = run_tool("psprocess", "--folded", str(out), str(profile_of(workdir, exe)))
    assert p.returncode == 0, p.stderr
    stacks: dict[tuple[str, ...], int] = {}
    for line in out.read_text().splitlines():
        path, count = line.rsplit(" ", 1)
        stacks[tuple(path.split(";"))] = stacks.get(tuple(path.split(";")), 0) + int(count)
    return stacks


@pytest.mark.parametrize(
    "options, env",
    [
        ((), {}),
        (("--profile", "ITIMER_PROF"), {}),
        (("--profile", "ITIMER_PROF"), {"PSUITE_SAMPLE_SIGNAL": "sigprof"}),
    ],
    ids=["default", "ITIMER_PROF", "sigprof"],
)
def test_destructor_samples_keep_their_path_under_dlclose(built, workdir, options, env):
    """The plugin's destructor burns 0.4 s of CPU in fini_work while main
    dlcloses it: those samples sit under _start -> main -> close_plugin ->
    dlclose, and none is truncated."""
    import os

    args = [built["fini_main"], built["fini.so"], "0.4"]
    bare = subprocess.run(args, capture_output=True, text=True)
    p = run_tool(
        "psrun", "--callpath", "--period", "1000", *options, *args, env=dict(os.environ, **env), timeout=120
    )
    assert p.returncode == bare.returncode == 0, p.stderr
    assert " 0 truncated" in p.stderr, p.stderr
    stacks = folded(workdir, "fini_main")
    in_fini = {k: v for k, v in stacks.items() if "fini_work" in k}
    total = sum(in_fini.values())
    assert total > 200, stacks
    whole = sum(
        v
        for k, v in in_fini.items()
        if k[0] == "_start" and "main" in k and "close_plugin" in k and k.index("close_plugin") < k.index("fini_work")
    )
    assert whole >= 0.98 * total, in_fini
    assert not [k for k in stacks if "[truncated stack]" in k], stacks


@pytest.mark.parametrize("name", ["absolute", "relative"])
def test_destructor_samples_of_a_flat_profile_go_to_the_plugin(built, workdir, name):
    """A flat profile numbers a dlopen'd plugin only once a sample falls in
    it; a plugin first sampled in its destructor, inside the dlclose that
    unloads it, still has those samples: charged to its file and function,
    none to an unknown module.  (A plugin opened by a relative name is
    numbered before the dlclose, the usual way.)"""
    plugin = built["fini.so"]
    if name == "relative":  # (the tests run in workdir)
        plugin = str(shutil.copy(plugin, workdir / "fini.so"))
    args = [built["fini_main"], plugin if name == "absolute" else "./fini.so", "0.4"]
    bare = subprocess.run(args, capture_output=True, text=True)
    p = run_tool("psrun", "--profile", "ITIMER_PROF", "--period", "1000", *args, timeout=120)
    assert p.returncode == bare.returncode == 0, p.stderr
    samples = module_samples(profile_of(workdir, "fini_main"))
    assert samples.get(plugin, 0) >= 0.8 * sum(samples.values()) and sum(samples.values()) > 200, samples
    assert "[unknown]" not in samples, samples
    text = run_tool("psprocess", str(profile_of(workdir, "fini_main"))).stdout
    assert "fini_work" in text.split("Function Summary", 1)[1], text


def test_flat_profile_of_a_program_killed_in_a_plugin_charges_the_plugin(built, workdir):
    """A flat profile numbers a dlopen'd plugin at the program's next
    dlopen, dlclose or end; killed by SIGKILL before any, the program's
    report is written by its collector, which saw the plugin in the
    program's mappings: its samples go to its file, none to an unknown
    module."""
    import os
    import signal
    import time

    from tests.conftest import psrun_command

    proc = subprocess.Popen([psrun_command(), "-q", "--profile", "ITIMER_PROF", "--period", "1000", built["stay"],
                             built["step.so"]], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "running\n"
    time.sleep(1.5)  # more than the collector's look at the mappings (once a second)
    os.kill(proc.pid, signal.SIGKILL)  # psrun execs the program: its pid is the program's
    assert proc.wait(timeout=60) == -signal.SIGKILL
    proc.stdout.close()
    deadline = time.monotonic() + 60
    while not list(workdir.glob("stay.*.xml")) and time.monotonic() < deadline:
        time.sleep(0.1)
    samples = module_samples(profile_of(workdir, "stay"))
    assert "[unknown]" not in samples, samples
    assert samples.get(built["step.so"], 0) >= 0.9 * sum(samples.values()) and sum(samples.values()) > 300, samples
