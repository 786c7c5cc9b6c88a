"""A profile is resolved against the very binary that was profiled: psrun
records the executable's GNU build-id, psprocess checks the file at the
recorded path against it.  Another build at that path, or none, gives one
warning line naming the module and --binaries / PSUITE_BINARY_PATH, and the
module's samples marked in every report and export instead of given to the
new binary's functions; the profiled binary (or its debug file, in gdb's
.build-id layout) in a directory named so resolves as the original did.

Everything through the real psrun and psprocess on programs built here."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import tarfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_tool

PROFILED = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) double profiled_spin(long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += i * 0.5 / (i + 1.0);
    return s;
}
int main(int argc, char **argv)
{
    printf("%f\n", profiled_spin(argc > 1 ? atol(argv[1]) : 40000000L));
    return 0;
}
"""

# Another program built at the same path: its functions cover the addresses
# the profiled one was sampled at, so resolving against it would name them.
IMPOSTOR = "#include <stdio.h>\nstatic volatile long sink;\n" + "".join(
    f"__attribute__((noinline)) void impostor_{i}(void) {{ for (int k = 0; k < {i + 3}; k++) sink += k * {i}; }}\n"
    for i in range(64)) + "int main(void) {\n" + "".join(f"    impostor_{i}();\n" for i in range(64)) + \
    '    printf("%ld\\n", sink);\n    return 0;\n}\n'

MISMATCH, NOT_FOUND = "[app: build-id mismatch]", "[app: binary not found]"
WRONG = re.compile(r"impostor_\d+|profiled_spin")  # what a wrong resolution, or a right one, would show


def build(source: str, target: Path, *flags: str) -> None:
    src = target.with_suffix(".c")
    src.write_text(source)
    subprocess.run(["cc", "-g", "-O1", *flags, "-o", str(target), str(src)], check=True)


@dataclass
class Run:
    directory: Path
    app: Path
    profile: Path
    text: str  # psprocess's report before anything changed
    calltree: str | None


def profiled_run(directory: Path, *psrun_args: str) -> Run:
    app = directory / "app"
    build(PROFILED, app)
    p = run_tool("psrun", "-q", *psrun_args, str(app), cwd=directory)
    assert p.returncode == 0, p.stderr
    [profile] = [f for f in directory.glob("app.*.xml") if not f.name.endswith(".callpaths.xml")]
    text = psprocess(profile)
    assert text.returncode == 0 and not text.stderr, text.stderr
    assert "profiled_spin" in text.stdout
    assert re.search(r"build-id [0-9a-f]{40}", profile.read_text()), "cc gave no build-id"
    calltree = None
    if "--callpath" in psrun_args:
        tree = psprocess(profile, "--calltree")
        assert tree.returncode == 0 and not tree.stderr, tree.stderr
        calltree = tree.stdout
    return Run(directory, app, profile, text.stdout, calltree)


def psprocess(*args, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_tool("psprocess", *map(str, args), env={**os.environ, **env} if env else None)


def one_warning(p: subprocess.CompletedProcess, module: Path, marker: str) -> str:
    """Exit 0 and exactly one warning line (besides an export's "wrote"
    line), naming the module and how to give the binary."""
    assert p.returncode == 0, p.stderr
    lines = [line for line in p.stderr.splitlines() if not line.startswith("psprocess: wrote ")]
    assert len(lines) == 1, p.stderr
    line = lines[0]
    assert line.startswith("psprocess: warning: ") and str(module) in line and marker in line, line
    assert "--binaries DIR" in line and "PSUITE_BINARY_PATH" in line, line
    return line


@pytest.fixture
def flat(workdir) -> Run:
    return profiled_run(workdir, "--profile", "ITIMER_PROF", "--period", "1000")


@pytest.fixture
def callpath(workdir) -> Run:
    return profiled_run(workdir, "--callpath", "--period", "1000")


def app_samples(profile: Path) -> int:
    from psuite import read_document as read

    report = read(str(profile), resolve=False)
    [app] = [m for m in report.modules if m.file.endswith("/app")]
    return sum(app.samples.values())


def test_rebuilt_program_is_marked_in_every_flat_report(flat):
    build(IMPOSTOR, flat.app)
    samples = app_samples(flat.profile)
    assert samples > 50
    for fmt in ("text", "json", "csv", "xml"):
        p = psprocess("-f", fmt, flat.profile)
        one_warning(p, flat.app, MISMATCH)
        assert MISMATCH in p.stdout, fmt
        assert not WRONG.search(p.stdout), (fmt, WRONG.search(p.stdout))
    x = psprocess("-x", flat.profile)
    assert MISMATCH in x.stdout and not WRONG.search(x.stdout)
    doc = json.loads(psprocess("-f", "json", flat.profile).stdout)
    report = doc["reports"][0] if "reports" in doc else doc
    mine = [loc for loc in report["locations"] if loc["module"] == str(flat.app)]
    assert [(loc["function"], loc["samples"]) for loc in mine] == [(MISMATCH, samples)]
    # gmon.out holds addresses, resolved later by gprof: the warning says which binary is wanted
    gmon = psprocess("--gmon", flat.directory / "gmon.out", flat.profile)
    assert str(flat.app) in gmon.stderr and "--binaries" in gmon.stderr


def test_rebuilt_program_is_marked_in_call_trees_and_exports(callpath):
    build(IMPOSTOR, callpath.app)
    d = callpath.directory
    tree = psprocess("--calltree", callpath.profile)
    one_warning(tree, callpath.app, MISMATCH)
    assert MISMATCH in tree.stdout and not WRONG.search(tree.stdout)
    assert "__libc_start" in tree.stdout  # libc's frames are still resolved
    for option, name in (("--folded", "app.folded"), ("--speedscope", "app.speedscope.json"),
                         ("--pprof", "app.pb.gz"), ("--cube", "app.cubex"), ("--html", "app.html")):
        p = psprocess(option, d / name, callpath.profile)
        one_warning(p, callpath.app, MISMATCH)
        data = exported_text(d / name)
        assert MISMATCH in data, option
        assert not WRONG.search(data), (option, WRONG.search(data))


def exported_text(path: Path) -> str:
    """An export's text: gunzipped, or every member of a CUBE tar joined."""
    if path.suffix == ".cubex":
        with tarfile.open(path) as tar:
            return "".join(tar.extractfile(m).read().decode("utf-8", "replace") for m in tar if m.isfile())
    data = path.read_bytes()
    return (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).decode("utf-8", "replace")


def test_python_api_warns_and_marks(callpath):
    import psuite
    from psuite.model.calltree import thread_trees

    build(IMPOSTOR, callpath.app)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = psuite.read_document(str(callpath.profile))
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and str(callpath.app) in said[0] and "PSUITE_BINARY_PATH" in said[0], said
    assert {loc.function for loc in report.locations if loc.module == str(callpath.app)} == {MISMATCH}
    names = {node.frame.function for tree in thread_trees(report) for node in tree.tree.nodes()
             if node.frame.module == str(callpath.app)}
    assert names == {MISMATCH}, names


def test_profiled_binary_in_a_directory_resolves_as_before(callpath):
    bins = callpath.directory / "bins"
    bins.mkdir()
    shutil.move(callpath.app, bins / "app")
    build(IMPOSTOR, callpath.app)
    p = psprocess("--binaries", bins, callpath.profile)
    assert p.returncode == 0 and not p.stderr, p.stderr
    assert p.stdout == callpath.text
    tree = psprocess("--binaries", bins, "--calltree", callpath.profile)
    assert tree.returncode == 0 and not tree.stderr, tree.stderr
    assert tree.stdout == callpath.calltree
    by_env = psprocess(callpath.profile, env={"PSUITE_BINARY_PATH": f"{callpath.directory / 'nowhere'}:{bins}"})
    assert by_env.returncode == 0 and not by_env.stderr, by_env.stderr
    assert by_env.stdout == callpath.text


def test_debug_file_in_build_id_layout_resolves(flat):
    """gdb's and debuginfod's layout: DIR/.build-id/xx/yyyy.debug, a debug
    file made with objcopy --only-keep-debug (no code, the DWARF only)."""
    wanted = re.search(r"build-id ([0-9a-f]{40})", flat.profile.read_text()).group(1)
    debug = flat.directory / "debug" / ".build-id" / wanted[:2] / f"{wanted[2:]}.debug"
    debug.parent.mkdir(parents=True)
    subprocess.run(["objcopy", "--only-keep-debug", str(flat.app), str(debug)], check=True)
    build(IMPOSTOR, flat.app)
    p = psprocess("--binaries", flat.directory / "debug", flat.profile)
    assert p.returncode == 0 and not p.stderr, p.stderr
    assert p.stdout == flat.text


def test_deleted_program_is_said_and_marked(callpath):
    callpath.app.unlink()
    p = psprocess(callpath.profile)
    line = one_warning(p, callpath.app, NOT_FOUND)
    assert "is not there" in line
    assert NOT_FOUND in p.stdout and "profiled_spin" not in p.stdout
    tree = psprocess("--calltree", callpath.profile)
    one_warning(tree, callpath.app, NOT_FOUND)
    assert NOT_FOUND in tree.stdout
    both = psprocess("--calltree", "-o", callpath.directory / "tree.txt", "--folded",
                     callpath.directory / "app.folded", callpath.profile)
    one_warning(both, callpath.app, NOT_FOUND)  # one line per module, however many outputs resolve it


def test_program_path_now_a_directory_is_not_there(flat):
    """A directory at a module's recorded path is no build of it: the
    module is not there, as if deleted."""
    flat.app.unlink()
    flat.app.mkdir()
    p = psprocess(flat.profile)
    assert "is not there" in one_warning(p, flat.app, NOT_FOUND)
    assert NOT_FOUND in p.stdout and MISMATCH not in p.stdout


@pytest.mark.parametrize("change", ["rebuilt", "directory"])
def test_failing_run_says_its_error_alone(flat, change):
    """The warnings about the profiled binary are said once the run has not
    failed: a failing run, the profile's or a subcommand's, says its one
    error line only; a successful export says them before its "wrote"
    line, as they are about what it wrote."""
    if change == "rebuilt":
        build(IMPOSTOR, flat.app)
    else:
        flat.app.unlink()
        flat.app.mkdir()
    marker = MISMATCH if change == "rebuilt" else NOT_FOUND
    gmon = flat.directory / "gmon.out"
    failed = psprocess("--gmon", gmon, "--module", "/nonexistent/libm.so.6", flat.profile)
    line = one_line_error(failed, "psprocess")
    assert "no samples in module /nonexistent/libm.so.6" in line and "warning" not in line, line
    assert not gmon.exists()
    line = one_line_error(psprocess("stat", "--metrics", "nosuch", flat.profile), "psprocess stat")
    assert "no metric 'nosuch'" in line, line
    done = psprocess("--gmon", gmon, flat.profile)
    warned = one_warning(done, flat.app, marker)
    said, wrote = done.stderr.splitlines()
    assert said == warned and wrote.startswith(f"psprocess: wrote {gmon} ("), done.stderr
    stat = psprocess("stat", flat.profile)
    assert stat.returncode == 0 and marker in stat.stdout, stat.stderr
    [line] = stat.stderr.splitlines()
    assert line.startswith("psprocess stat: warning: ") and str(flat.app) in line and marker in line, line


def test_combined_reports_warn_once_per_module(workdir):
    """Two runs of one program, combined with -c or merged: one line for the module."""
    first = profiled_run(workdir, "--profile", "ITIMER_PROF", "--period", "1000")
    p = run_tool("psrun", "-q", "--profile", "ITIMER_PROF", "--period", "1000", str(first.app), cwd=workdir)
    assert p.returncode == 0, p.stderr
    first.app.unlink()
    profiles = [str(f) for f in workdir.glob("app.*.xml")]
    assert len(profiles) == 2
    combined = psprocess("-c", *profiles)
    one_warning(combined, first.app, NOT_FOUND)
    assert NOT_FOUND in combined.stdout
    merged = psprocess("merge", *profiles)  # the algebra's subcommands say it the same way
    assert merged.returncode == 0, merged.stderr
    [line] = merged.stderr.splitlines()
    assert line.startswith("psprocess merge: warning: ") and str(first.app) in line and NOT_FOUND in line, line


def test_without_a_recorded_build_id_resolves_as_before(flat):
    """The original PerfSuite's documents record no build-id: the file at
    the recorded path is used, as it always was, without a word."""
    build(IMPOSTOR, flat.app)
    bare = flat.directory / "bare.xml"
    bare.write_text(re.sub(r";? ?build-id [0-9a-f]+", "", flat.profile.read_text()))
    p = psprocess(bare)
    assert p.returncode == 0 and not p.stderr, p.stderr
    assert MISMATCH not in p.stdout and "impostor_" in p.stdout


def test_a_binaries_directory_that_is_not_there_is_refused(flat):
    line = one_line_error(psprocess("--binaries", flat.directory / "nowhere", flat.profile), "psprocess")
    assert "nowhere" in line and "--binaries" in line


def test_stripped_program_takes_its_debug_file_from_the_search_path(flat):
    """The profiled binary itself, stripped (as deployed), with its DWARF kept
    in a directory of the search path: functions and lines come back."""
    wanted = re.search(r"build-id ([0-9a-f]{40})", flat.profile.read_text()).group(1)
    debug = flat.directory / "debug" / ".build-id" / wanted[:2] / f"{wanted[2:]}.debug"
    debug.parent.mkdir(parents=True)
    subprocess.run(["objcopy", "--only-keep-debug", str(flat.app), str(debug)], check=True)
    subprocess.run(["strip", str(flat.app)], check=True)  # the same build: its build-id stays
    bare = psprocess(flat.profile)
    assert bare.returncode == 0 and not bare.stderr, bare.stderr
    assert "profiled_spin" not in bare.stdout  # no symbols left in the file itself
    p = psprocess(flat.profile, env={"PSUITE_BINARY_PATH": str(flat.directory / "debug")})
    assert p.returncode == 0 and not p.stderr, p.stderr
    assert p.stdout == flat.text


# A shared library of the test's own holds the hot function; its directory
# has a space in its name (the recorded path is quoted in <annotation>).
LIBRARY = r"""
__attribute__((noinline)) double library_spin(long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += i * 0.5 / (i + 1.0);
    return s;
}
"""
LIBRARY_USER = r"""
#include <stdio.h>
double library_spin(long n);
int main(void)
{
    printf("%f\n", library_spin(40000000L));
    return 0;
}
"""
# Another build of the library at the same path, its functions over the addresses sampled.
LIBRARY_IMPOSTOR = "static volatile long sink;\n" + "".join(
    f"__attribute__((noinline)) void impostor_{i}(void) {{ for (int k = 0; k < {i + 3}; k++) sink += k * {i}; }}\n"
    for i in range(64)) + "double library_spin(long n) { impostor_0(); return (double)n; }\n"
LIB_MISMATCH, LIB_NOT_FOUND = "[libhot.so: build-id mismatch]", "[libhot.so: binary not found]"
LIB_WRONG = re.compile(r"impostor_\d+|library_spin")


def build_library(source: str, target: Path) -> None:
    src = target.parent / "libhot.c"
    src.write_text(source)
    subprocess.run(["cc", "-shared", "-fPIC", "-g", "-O1", "-o", str(target), str(src)], check=True)


@dataclass
class LibraryRun:
    library: Path
    flat: Path
    callpath: Path
    text: str  # psprocess's report of the flat profile before anything changed
    calltree: str


def library_run(directory: Path) -> LibraryRun:
    libdir = directory / "lib dir"
    libdir.mkdir()
    library = libdir / "libhot.so"
    build_library(LIBRARY, library)
    (directory / "app.c").write_text(LIBRARY_USER)
    subprocess.run(["cc", "-g", "-O1", "-o", str(directory / "app"), str(directory / "app.c"), f"-L{libdir}", "-lhot",
                    f"-Wl,-rpath,{libdir}"], check=True)
    profiles = []
    for args in (("--profile", "ITIMER_PROF"), ("--callpath",)):
        before = set(directory.glob("app.*.xml"))
        p = run_tool("psrun", "-q", *args, "--period", "1000", str(directory / "app"), cwd=directory)
        assert p.returncode == 0, p.stderr
        [profile] = [f for f in set(directory.glob("app.*.xml")) - before if not f.name.endswith(".callpaths.xml")]
        profiles.append(profile)
    flat, callpath = profiles
    wanted = subprocess.run(["readelf", "-n", str(library)], capture_output=True, text=True, check=True).stdout
    wanted = re.search(r"Build ID: ([0-9a-f]+)", wanted).group(1)
    # recorded for the sampled library: in the flat profile's <annotation>, on the companion's <module>
    from psuite import read_document as read

    assert re.search(rf'module build-ids: [^<]*&quot;{re.escape(str(library))}&quot; {wanted}', flat.read_text())
    [recorded] = [m.buildid for m in read(str(flat), resolve=False).modules if m.file == str(library)]
    assert recorded == wanted
    companion = callpath.with_name(callpath.name[:-4] + ".callpaths.xml").read_text()
    assert re.search(rf'<module id="\d+" file="{re.escape(str(library))}" offset="0x[0-9a-f]+" buildid="{wanted}"/>',
                     companion)
    text = psprocess(flat)
    assert text.returncode == 0 and not text.stderr, text.stderr
    assert "library_spin" in text.stdout
    tree = psprocess("--calltree", callpath)
    assert tree.returncode == 0 and not tree.stderr, tree.stderr
    assert "library_spin" in tree.stdout
    return LibraryRun(library, flat, callpath, text.stdout, tree.stdout)


def test_rebuilt_library_is_marked_and_found_by_binaries(workdir):
    run = library_run(workdir)
    original = workdir / "bins" / "libhot.so"
    original.parent.mkdir()
    shutil.move(run.library, original)
    build_library(LIBRARY_IMPOSTOR, run.library)
    for args in ((run.flat,), ("--calltree", run.callpath), ("-f", "json", run.callpath)):
        p = psprocess(*args)
        one_warning(p, run.library, LIB_MISMATCH)
        assert LIB_MISMATCH in p.stdout, args
        assert not LIB_WRONG.search(p.stdout), (args, LIB_WRONG.search(p.stdout))
    tree = psprocess("--calltree", run.callpath)
    assert "main" in tree.stdout  # the executable's frames, unchanged, are still resolved
    # the profiled library in a directory given with --binaries or PSUITE_BINARY_PATH: as before
    p = psprocess("--binaries", original.parent, run.flat)
    assert p.returncode == 0 and not p.stderr, p.stderr
    assert p.stdout == run.text
    tree = psprocess("--binaries", original.parent, "--calltree", run.callpath)
    assert tree.returncode == 0 and not tree.stderr, tree.stderr
    assert tree.stdout == run.calltree
    by_env = psprocess(run.flat, env={"PSUITE_BINARY_PATH": str(original.parent)})
    assert by_env.returncode == 0 and not by_env.stderr, by_env.stderr
    assert by_env.stdout == run.text


def test_deleted_library_is_said_and_marked(workdir):
    run = library_run(workdir)
    run.library.unlink()
    for args in ((run.flat,), ("--calltree", run.callpath)):
        p = psprocess(*args)
        assert "is not there" in one_warning(p, run.library, LIB_NOT_FOUND)
        assert LIB_NOT_FOUND in p.stdout and "library_spin" not in p.stdout, args


PLUGIN_USER = r"""
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h)
        return 1;
    double (*spin)(long) = (double (*)(long))dlsym(h, "library_spin");
    printf("%f\n", spin(40000000L));
    return dlclose(h);
}
"""


def test_library_unloaded_with_dlclose_keeps_its_build_id(workdir):
    """The id is taken while the library is mapped: a plugin dlclose'd
    before the profile is written is checked like any other module."""
    library = workdir / "libhot.so"
    build_library(LIBRARY, library)
    (workdir / "app.c").write_text(PLUGIN_USER)
    subprocess.run(["cc", "-g", "-O1", "-o", str(workdir / "app"), str(workdir / "app.c"), "-ldl"], check=True)
    p = run_tool("psrun", "-q", "--callpath", "--period", "1000", str(workdir / "app"), str(library), cwd=workdir)
    assert p.returncode == 0, p.stderr
    [profile] = [f for f in workdir.glob("app.*.xml") if not f.name.endswith(".callpaths.xml")]
    before = psprocess(profile)
    assert before.returncode == 0 and not before.stderr and "library_spin" in before.stdout, before.stderr
    assert f"&quot;{library}&quot;" in profile.read_text()
    build_library(LIBRARY_IMPOSTOR, library)
    for args in ((profile,), ("--calltree", profile)):
        p = psprocess(*args)
        one_warning(p, library, LIB_MISMATCH)
        assert LIB_MISMATCH in p.stdout and not LIB_WRONG.search(p.stdout), args
