"""Which frames a profile names: a library opened by a relative path is
resolved wherever psprocess runs, samples in the kernel's vdso are named by
its symbols (on the profiled kernel only), and no frame of psuite's own
code is in any call path (the tree reads as a bare run's: main under
__libc_start_call_main, a thread's function under start_thread)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

from psuite.libperfsuite.native import library_path
from tests.conftest import run_tool

PERIOD_US = "1000"

PLUGIN = r"""
volatile double plugin_sink;
__attribute__((noinline)) double plugin_burn(long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)i * 1.0000001;
    plugin_sink = s;
    return s;
}
"""

# argv[1] "close": dlclose the plugin and leave its directory before the end
HOST = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv)
{
    void *h = dlopen("./plugin.so", RTLD_NOW);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    double (*burn)(long) = (double (*)(long))dlsym(h, "plugin_burn");
    printf("%g\n", burn(150000000L));
    if (argc > 1 && strcmp(argv[1], "close") == 0) {
        dlclose(h);
        if (chdir("/") != 0) return 1;
    }
    return 0;
}
"""

CLOCK = r"""
#include <stdio.h>
#include <time.h>
int main(void)
{
    struct timespec ts;
    long long sum = 0;
    for (long i = 0; i < 8000000; i++) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        sum += ts.tv_nsec;
    }
    printf("%lld\n", sum & 1);
    return 0;
}
"""

LIB = r"""
volatile double lib_sink;
__attribute__((constructor)) static void lib_ctor(void) { lib_sink = 1; }
"""

# psuite's wrappers and hooks on every side of the program: constructors,
# threads, dlopen/dlclose, atexit handlers, destructors, an explicit exit()
THREADED = r"""
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
volatile double sink;
__attribute__((noinline)) static void burn(long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)i * 1.0000001;
    sink = s;
}
static void *worker(void *arg) { burn((long)arg); return NULL; }
static void at_end(void) { burn(20000000L); }
__attribute__((destructor)) static void dtor(void) { burn(20000000L); }
__attribute__((constructor)) static void ctor(void) { burn(20000000L); }
int main(int argc, char **argv)
{
    pthread_t t[2];
    atexit(at_end);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker, (void *)60000000L);
    burn(60000000L);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 300; i++) {
        void *h = dlopen(argv[1], RTLD_NOW);
        if (!h)
            return 1;
        dlclose(h);
    }
    puts("done");
    exit(0);
}
"""


def cc(out: Path, source: str, name: str, *flags: str) -> str:
    src = out / f"{name.removesuffix('.so')}.c"
    src.write_text(source)
    exe = out / name
    subprocess.run(["cc", "-O2", "-g", *flags, "-o", str(exe), str(src)], check=True)
    return str(exe)


def profile(*args: str, cwd: Path, callpath: bool = False, env: dict | None = None) -> Path:
    """psrun --profile of a program run in cwd; the flat report's path."""
    before = set(cwd.glob("*.xml"))
    p = run_tool("psrun", "--profile", "ITIMER_PROF", "--period", PERIOD_US, *(["--callpath"] if callpath else []),
                 "-d", str(cwd), *args, cwd=cwd, env=dict(os.environ, **(env or {})), timeout=300)
    assert p.returncode == 0, p.stderr
    flats = [f for f in set(cwd.glob("*.xml")) - before if not f.name.endswith(".callpaths.xml")]
    assert len(flats) == 1, (flats, p.stderr)
    return flats[0]


def report_json(report: Path, cwd: Path) -> dict:
    p = run_tool("psprocess", "-f", "json", str(report), cwd=cwd)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["reports"][0]


def by_function(locations: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for loc in locations:
        out[loc["function"]] = out.get(loc["function"], 0) + loc["samples"]
    return out


# ---- a library opened by a relative path ------------------------------------------


@pytest.mark.parametrize("close", [False, True], ids=["loaded", "closed"])
def test_relative_dlopen_resolves_from_another_directory(tmp_path, close):
    """dlopen("./plugin.so"): the report names the plugin by its absolute
    path (loaded at the end, or dlclose'd after a chdir), and psprocess run
    from another directory names its function and lines."""
    prog = tmp_path / "prog"
    prog.mkdir()
    cc(prog, PLUGIN, "plugin.so", "-shared", "-fPIC")
    host = cc(prog, HOST, "host", "-ldl")
    bare = subprocess.run([host, *(["close"] if close else [])], cwd=prog, capture_output=True, text=True)
    assert bare.returncode == 0, bare.stderr
    report = profile(host, *(["close"] if close else []), cwd=prog, callpath=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = report_json(report, elsewhere)
    plugin = str(prog / "plugin.so")
    assert plugin in {m["file"] for m in r["modules"]}, r["modules"]
    assert not [m["file"] for m in r["modules"] if m["file"].startswith(".")]
    total = r["total_samples"]
    in_plugin = [loc for loc in r["locations"] if loc["module"] == plugin]
    burn = sum(loc["samples"] for loc in in_plugin if loc["function"] == "plugin_burn")
    assert total > 50 and burn >= 0.9 * total, (total, in_plugin)
    assert all(loc["file"] == str(prog / "plugin.c") and loc["line"] > 0
               for loc in in_plugin if loc["function"] == "plugin_burn"), in_plugin
    unknown = sum(loc["samples"] for loc in r["locations"] if loc["function"] == "??")
    assert unknown <= 0.02 * total, r["locations"]
    # the call tree: main calls the plugin's function
    paths = {tuple(n["path"]) for n in r["calltree"] if n["function"] == "plugin_burn"}
    assert paths and all(p[-2:] == ("main", "plugin_burn") for p in paths), paths


def test_relative_module_of_an_older_report_is_found_through_binaries(tmp_path):
    """A report that recorded "./plugin.so" (psrun before absolute paths):
    psprocess --binaries DIR finds it by name."""
    prog = tmp_path / "prog"
    prog.mkdir()
    cc(prog, PLUGIN, "plugin.so", "-shared", "-fPIC")
    host = cc(prog, HOST, "host", "-ldl")
    report = profile(host, cwd=prog)
    text = report.read_text()
    absolute = str(prog / "plugin.so")
    # as older runtimes wrote it: the relative name, no build-id for it
    text = text.replace(f'"{absolute}"', '"./plugin.so"').replace(absolute, "./plugin.so")
    text = re.sub(r', &quot;\./plugin\.so&quot; [0-9a-f]+|&quot;\./plugin\.so&quot; [0-9a-f]+(, )?', "", text)
    old = tmp_path / "old.xml"
    old.write_text(text)
    r = report_json(old, tmp_path)
    assert by_function(r["locations"]).get("plugin_burn", 0) == 0  # "./plugin.so" means nothing here
    p = run_tool("psprocess", "-f", "json", "--binaries", str(prog), str(old), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    found = by_function(json.loads(p.stdout)["reports"][0]["locations"])
    assert found.get("plugin_burn", 0) >= 0.9 * sum(found.values()), found


# ---- the vdso -------------------------------------------------------------------------


def vdso_symbols() -> set[str]:
    """The function names of this kernel's vdso, from its image in this process."""
    from psuite.formats.binaries import vdso_image

    image = vdso_image()
    assert image, "no [vdso] in /proc/self/maps: the kernel maps one into every process"
    out = subprocess.run(["nm", "-D", "--defined-only", image], capture_output=True, text=True, check=True).stdout
    return {line.split()[2].split("@")[0] for line in out.splitlines() if len(line.split()) == 3}


@pytest.mark.parametrize("callpath", [False, True], ids=["flat", "callpath"])
def test_vdso_samples_are_named(tmp_path, callpath):
    """A loop of clock_gettime stays in the vdso: its samples are named by
    the vdso's own symbol (__vdso_clock_gettime or its alias), as perf names
    them, in the flat profile and in the call tree under clock_gettime."""
    exe = cc(tmp_path, CLOCK, "clock")
    report = profile(exe, cwd=tmp_path, callpath=callpath)
    r = report_json(report, tmp_path)
    vdso_modules = [m for m in r["modules"] if m["file"] == "linux-vdso.so.1"]
    assert vdso_modules, r["modules"]
    in_vdso = [loc for loc in r["locations"] if loc["module"] == "linux-vdso.so.1"]
    total = r["total_samples"]
    named = sum(loc["samples"] for loc in in_vdso if loc["function"] in {"__vdso_clock_gettime", "clock_gettime"})
    assert total > 50 and named >= 0.3 * total, (total, in_vdso)
    assert {loc["function"] for loc in in_vdso} <= vdso_symbols(), in_vdso
    if callpath:
        leaves = [n for n in r["calltree"] if n["function"] in {"__vdso_clock_gettime", "clock_gettime"}
                  and n["module"] == "linux-vdso.so.1"]
        assert sum(n["exclusive"] for n in leaves) >= 0.3 * total
        assert all("main" in n["path"] for n in leaves), leaves


def test_vdso_of_another_kernel_is_marked_not_misnamed(tmp_path):
    """A profile whose recorded vdso build-id is not this kernel's: its vdso
    samples are marked, with one warning line saying why, never named from
    this kernel's image."""
    exe = cc(tmp_path, CLOCK, "clock")
    report = profile(exe, cwd=tmp_path, callpath=True)
    from psuite.formats.binaries import build_id, vdso_image

    mine = build_id(vdso_image())
    assert mine and mine in report.read_text()
    other = "0" * len(mine)
    for doc in (report, report.with_name(report.name[:-4] + ".callpaths.xml")):
        doc.write_text(doc.read_text().replace(mine, other))
    p = run_tool("psprocess", str(report), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    marker = "[linux-vdso.so.1: vdso of another kernel]"
    assert marker in p.stdout and "__vdso_clock_gettime" not in p.stdout
    warnings = [x for x in p.stderr.splitlines() if "linux-vdso.so.1" in x]
    assert len(warnings) == 1 and other in warnings[0] and "not this kernel's vdso" in warnings[0], p.stderr


# ---- psuite's own frames ---------------------------------------------------------------


def psuite_only_functions(others: list[str]) -> set[str]:
    """The functions of libpshwpc.so (local ones included) that no other
    module (the C library, the loader) has a function of the same name for:
    exit, dlclose ... are both."""
    def defined(path: str) -> set[str]:
        out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True).stdout
        out += subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True).stdout
        return {line.split()[2].split("@")[0] for line in out.splitlines()
                if len(line.split()) == 3 and line.split()[1] in "tTwWiI"}

    ours = defined(library_path())
    assert {"ps_modules_refresh", "measured_start", "create_hooked"} <= ours
    for other in others:
        ours -= defined(other)
    return ours


@pytest.mark.parametrize("unwinder", ["libunwind", "libgcc", "framepointer"])
def test_no_psuite_frame_in_any_call_path(tmp_path, unwinder):
    """A threaded program that meets every psuite hook (constructor,
    pthread_create, dlopen/dlclose, atexit, destructor, exit()): no frame of
    the call trees - psprocess's JSON and its CUBE export - is psuite's
    (its module, its functions, its sources under csrc/)."""
    lib = cc(tmp_path, LIB, "libhooked.so", "-shared", "-fPIC")
    exe = cc(tmp_path, THREADED, "threaded", "-pthread", "-ldl",
             *(["-fno-omit-frame-pointer"] if unwinder == "framepointer" else []))
    report = profile(exe, lib, cwd=tmp_path, callpath=True, env={"PSUITE_UNWINDER": unwinder})
    r = report_json(report, tmp_path)
    mine = str(Path(library_path()).resolve())
    nodes = r["calltree"]
    assert sum(n["exclusive"] for n in nodes) > 100
    bad = [n["path"] for n in nodes if n["module"] and os.path.realpath(n["module"]) == mine]
    assert not bad, bad
    cube = tmp_path / "out.cubex"
    p = run_tool("psprocess", "--cube", str(cube), str(report), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    with tarfile.open(cube) as tar:
        anchor = tar.extractfile("anchor.xml").read().decode()
    files = set(re.findall(r'<region [^>]*mod="([^"]*)"', anchor))
    assert not [f for f in files if "csrc/" in f or (f and os.path.realpath(f) == mine)], files
    names = {n.removesuffix(" [inlined]") for n in re.findall(r"<name>([^<]*)</name>", anchor)}
    others = [m["file"] for m in r["modules"] if m["file"].startswith("/") and os.path.realpath(m["file"]) != mine]
    assert not names & psuite_only_functions(others), names & psuite_only_functions(others)
    if unwinder != "framepointer":  # the program's paths as a bare run has them
        paths = {tuple(n["path"]) for n in nodes}
        main_paths = [p for p in paths if "main" in p]
        assert main_paths and all(p[p.index("main") - 1] == "__libc_start_call_main" for p in main_paths), main_paths
        worker_paths = [p for p in paths if "worker" in p]
        assert worker_paths and all(p[p.index("worker") - 1] == "start_thread" for p in worker_paths), worker_paths
