"""What psrun cannot measure is refused before anything runs, through the
real psrun on real files: a 32-bit program, a statically linked one (also
a static PIE), a shared library, an object file, a core dump, a program for
another machine, a set-user-ID program, a script without a #! line, an
empty or a non-executable file.  Each is one line on stderr naming the
file, the problem and what to do, exit status 2, no report, and the program
did not run.  A script with a #! line is measured as its interpreter, and
psrun says so."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_tool
from tests.psrun.test_psrun import reports

SOURCE = Path(__file__).resolve().parents[1] / "targets" / "marks_its_run.c"
EM_SPARCV9 = 43  # a machine no test host is
ET_CORE = 4


def patched(original: Path, out: Path, offset: int, value: int) -> str:
    """A copy of `original` with the 16-bit ELF header field at `offset` set."""
    data = bytearray(original.read_bytes())
    data[offset:offset + 2] = value.to_bytes(2, "little")
    out.write_bytes(bytes(data))
    out.chmod(0o755)
    return str(out)


@pytest.fixture(scope="module")
def builds(tmp_path_factory) -> dict[str, str]:
    """marks_its_run built every way psrun must judge; name -> file."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed (tests/run.sh installs gcc)"
    out = tmp_path_factory.mktemp("program_checks")
    ways = {
        "dynamic": [],
        "32-bit": ["-m32"],
        "x32": ["-mx32"],
        "static": ["-static"],
        "static-pie": ["-static-pie"],
        "shared library": ["-shared", "-fPIC"],
        "object file": ["-c"],
    }
    built = {}
    for name, flags in ways.items():
        exe = out / name.replace(" ", "_")
        p = subprocess.run([cc, "-O1", *flags, "-o", str(exe), str(SOURCE)], capture_output=True, text=True)
        assert p.returncode == 0, f"cc {' '.join(flags)} failed (tests/run.sh installs gcc-multilib): {p.stderr}"
        exe.chmod(0o755)  # an object file or a library the kernel would be asked to run
        built[name] = str(exe)
    dynamic = Path(built["dynamic"])
    built["another machine"] = patched(dynamic, out / "sparc", 18, EM_SPARCV9)
    built["core dump"] = patched(dynamic, out / "core", 16, ET_CORE)
    not_executable = out / "not_executable"
    shutil.copyfile(dynamic, not_executable)
    not_executable.chmod(0o644)
    built["not executable"] = str(not_executable)
    return built


# what psrun must say, word for word in part: the problem and the fix
REFUSALS = {
    "32-bit": ["is a 32-bit (ELFCLASS32) program", "psrun measures 64-bit programs", "without -m32"],
    "x32": ["is a 32-bit (ELFCLASS32) program", "without -m32 or -mx32"],
    "static": ["is statically linked", "relink it dynamically (without -static)", "perf stat"],
    "static-pie": ["is statically linked", "relink it dynamically (without -static)", "perf stat"],
    "shared library": ["is a shared library, not a program", "the program that loads it"],
    "object file": ["is an object file", "link it into a program"],
    "another machine": ["is a program for another machine (SPARC V9)", "rebuild it for this one"],
    "core dump": ["is a core dump, not a program"],
    "not executable": ["is not executable", "chmod +x"],
}


def refused(args: list[str], program: str, needles: list[str], marker: Path, workdir: Path, **kw) -> str:
    """psrun ARGS PROGRAM MARKER: one line naming PROGRAM and each needle,
    exit 2, no report (nor resource report), the program never ran."""
    line = one_line_error(run_tool("psrun", *args, program, str(marker), **kw), "psrun")
    assert program in line, line
    for needle in needles:
        assert needle in line, (needle, line)
    assert not marker.exists(), line
    assert not list(workdir.glob("*.xml")), line
    return line


def test_a_measurable_program_runs(builds, workdir):
    """The same source built as a dynamic program: measured, as a control."""
    p = run_tool("psrun", "-e", "task-clock", builds["dynamic"], str(workdir / "ran"))
    assert p.returncode == 0, p.stderr
    assert (workdir / "ran").read_text() == "ran\n"
    assert len(reports(workdir)) == 1


MODES = {"count": ["-e", "task-clock"], "-R": ["-R", "-e", "task-clock"], "profile": ["--profile", "ITIMER_PROF"]}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("kind", list(REFUSALS))
def test_what_psrun_cannot_measure_is_refused(builds, workdir, kind, mode):
    refused(MODES[mode], builds[kind], REFUSALS[kind], workdir / "ran", workdir)


def test_dynamic_loader_run_as_a_program_is_measured(builds, workdir):
    """The dynamic loader is a shared object without an interpreter, but
    with an entry point, and it honours LD_PRELOAD: not refused as a
    library, the program it loads runs and the run is measured."""
    loader = re.search(rb"/lib[^\0]*/ld-linux[^\0]*", Path(builds["dynamic"]).read_bytes()).group(0).decode()
    p = run_tool("psrun", "-e", "task-clock", loader, builds["dynamic"], str(workdir / "ran"))
    assert p.returncode == 0, p.stderr
    assert (workdir / "ran").exists()
    assert len(reports(workdir)) == 1, p.stderr


def test_program_found_on_path_is_judged(builds, workdir):
    """PROGRAM without a slash is looked up as execvp does: a non-executable
    file earlier on PATH is passed over, the 32-bit one found later is
    refused under the name given."""
    first, second = workdir / "first", workdir / "second"
    first.mkdir()
    second.mkdir()
    shutil.copyfile(builds["dynamic"], first / "prog")
    (first / "prog").chmod(0o644)
    shutil.copyfile(builds["32-bit"], second / "prog")
    (second / "prog").chmod(0o755)
    env = {**os.environ, "PATH": f"{first}:{second}"}
    refused(["-e", "task-clock"], "prog", REFUSALS["32-bit"], workdir / "ran", workdir, env=env)
    env = {**os.environ, "PATH": str(first)}
    line = one_line_error(run_tool("psrun", "prog", str(workdir / "ran"), env=env), "psrun")
    assert "prog: command not found" in line


@pytest.mark.parametrize("mode", list(MODES))
def test_script_without_shebang_is_refused(builds, workdir, mode):
    """A shell would hand it to /bin/sh, and psrun would measure /bin/sh
    instead of the program it starts: refused, with the two ways out."""
    script = workdir / "steps"
    script.write_text(f"{builds['dynamic']} \"$1\"\n")
    script.chmod(0o755)
    line = refused(MODES[mode], str(script), ["a script without a #! line", "#!/bin/sh",
                                                                f"psrun sh {script}", "the interpreter is measured",
                                                                "-f also measures the programs the script starts"],
                   workdir / "ran", workdir)
    assert "/bin/sh" in line


def test_set_user_id_program_is_refused(builds, workdir):
    """A set-user-ID program that changes the user runs in the loader's
    secure-execution mode, which ignores psuite's library: refused.  As
    root, a copy owned by nobody; otherwise a set-user-ID root program.
    A set-user-ID script is measured."""
    if os.geteuid() == 0:
        program = workdir / "setuid_nobody"
        shutil.copyfile(builds["dynamic"], program)
        os.chown(program, 65534, 65534)
        program.chmod(0o4755)
    else:
        found = [p for p in map(shutil.which, ("passwd", "su", "mount")) if p and os.stat(p).st_mode & 0o4000]
        assert found, "a set-user-ID root program (passwd, su or mount) is needed"
        program = Path(found[0])
    refused(["-e", "task-clock"], str(program), ["is set-user-ID or set-group-ID",
                                                 "the loader ignores psuite's library", f"cp {program} ./copy"],
            workdir / "ran", workdir)
    # the kernel ignores the bit on a script: measured as any script
    script = workdir / "setuid_script"
    script.write_text(f"#!/bin/sh\n{builds['dynamic']} \"$1\"\n")
    if os.geteuid() == 0:
        os.chown(script, 65534, 65534)
    script.chmod(0o4755)
    p = run_tool("psrun", "-q", "-e", "task-clock", str(script), str(workdir / "ran"))
    assert (p.returncode, p.stderr) == (0, "")
    assert (workdir / "ran").exists() and len(reports(workdir)) == 1


def test_empty_file_is_refused(workdir):
    empty = workdir / "empty"
    empty.write_bytes(b"")
    empty.chmod(0o755)
    refused(["-e", "task-clock"], str(empty), ["is an empty file, not a program"], workdir / "ran", workdir)


def test_script_is_measured_as_its_interpreter(builds, workdir):
    """A #! script runs and its interpreter is measured; a note (none with
    -q, none with -f, which follows what the script starts) says so."""
    script = workdir / "job"
    script.write_text(f"#!/bin/sh\n{builds['dynamic']} \"$1\"\n")
    script.chmod(0o755)
    interpreter = Path(os.path.realpath("/bin/sh")).name

    p = run_tool("psrun", "-e", "task-clock", str(script), str(workdir / "ran"))
    assert p.returncode == 0, p.stderr
    assert (workdir / "ran").exists()
    [note] = [line for line in p.stderr.splitlines() if "is a script" in line]
    assert note == (f"psrun: {script} is a script: psrun measures its interpreter (#!/bin/sh), not the programs "
                    "the script starts; -f measures those too, each in its own report")
    assert any(r.name.startswith(f"{interpreter}.") for r in reports(workdir)), p.stderr

    for old in reports(workdir):
        old.unlink()
    (workdir / "ran").unlink()
    p = run_tool("psrun", "-q", "-e", "task-clock", str(script), str(workdir / "ran"))
    assert (p.returncode, p.stderr) == (0, "")
    assert (workdir / "ran").exists()

    p = run_tool("psrun", "-f", "-e", "task-clock", str(script), str(workdir / "ran2"))
    assert p.returncode == 0, p.stderr
    assert "is a script" not in p.stderr
    assert any(r.name.startswith("dynamic.") for r in reports(workdir)), p.stderr  # -f: the program it started
