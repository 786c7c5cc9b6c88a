"""Profiling driven from the C and Fortran APIs, as the PerfSuite paper
describes it: a <ps_hwpc_profile> configuration makes ps_hwpc_init set up
sampling, ps_hwpc_suspend stops it in every thread, ps_hwpc_start resumes
it, ps_hwpc_stop writes the profile as psrun writes one; under psrun
--profile the same calls act on psrun's sampling.  Real programs
(tests/targets/api/api_profile.c, tests/targets/fortran_profile.f90) spin
in spin_a, suspend, spin in spin_b, resume, spin in spin_c: spin_b must get
no sample at all, spin_a and spin_c their share of the CPU time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from psuite.analysis import srcmap
from psuite.analysis.inputs import load
from psuite.libperfsuite.native import include_dir, library_path
from tests.conftest import TARGETS, run_tool, validate

UNITS = "1500"  # PROF_LOOP units per function: a few hundred ms of CPU time
PERIOD_US = 1000
CODES = "init 0 start 0 suspend 0 start 0 stop 0 shutdown 0\n"
HOST = os.uname().nodename.split(".")[0]


def profile_config(path: Path, timer: str = "ITIMER_PROF") -> Path:
    """A <ps_hwpc_profile> in the PerfSuite paper's form: the event as text."""
    path.write_text(f'<ps_hwpc_profile class="itimer">\n  <ps_hwpc_event threshold="{PERIOD_US}">{timer}'
                    "</ps_hwpc_event>\n</ps_hwpc_profile>\n")
    return path


def linked(out: Path, compiler: str, source: Path, *extra: str) -> str:
    """source built against libpshwpc.so (the copy psrun preloads)."""
    lib = library_path()
    exe = out / source.stem
    subprocess.run([compiler, "-O1", "-g", f"-I{include_dir()}", "-o", str(exe), str(source), lib,
                    f"-Wl,-rpath,{os.path.dirname(lib)}", *extra], check=True)
    return str(exe)


@pytest.fixture(scope="module")
def api_profile(tmp_path_factory) -> str:
    return linked(tmp_path_factory.mktemp("api"), "cc", TARGETS / "api" / "api_profile.c", "-lpthread")


@pytest.fixture(scope="module")
def fortran_profile(tmp_path_factory) -> str:
    gfortran = shutil.which("gfortran")
    assert gfortran, "gfortran is needed (tests/run.sh installs it)"
    return linked(tmp_path_factory.mktemp("fortran"), gfortran, TARGETS / "fortran_profile.f90")


def functions(path: Path) -> dict[str, int]:
    """Samples per function of a raw profile, resolved as psprocess does."""
    totals: dict[str, int] = {}
    for loc in srcmap.resolve(load(str(path))):
        totals[loc.function] = totals.get(loc.function, 0) + loc.samples
    return totals


def one(workdir: Path, prefix: str) -> Path:
    """The report PREFIX.PID.HOST.xml."""
    found = [f for f in workdir.iterdir() if f.name.startswith(prefix + ".") and f.name.split(".")[1].isdigit()]
    assert len(found) == 1, sorted(f.name for f in workdir.iterdir())
    return found[0]


def check_profile(report: Path, threads: bool) -> dict[str, int]:
    """Valid, with nothing of spin_b; spin_a and spin_c sampled (spin_c
    twice the work with a second thread); samples matching the CPU time the
    report states, which leaves the suspended time out."""
    root = validate(report, "hwpcreport-0.3.dtd")
    assert root.get("mode") == "profile"
    by_function = functions(report)
    assert "spin_b" not in by_function, by_function
    assert by_function.get("spin_a", 0) >= 50 and by_function.get("spin_c", 0) >= 50, by_function
    if threads:
        assert by_function["spin_c"] > 1.3 * by_function["spin_a"], by_function
    note = root.findtext("annotation")
    assert "sampling suspended by the program (ps_hwpc_suspend)" in note, note
    samples = int(root.findtext("hwpcprofiledata/totalsamples"))
    cpu = float(root.findtext("cputime/usertime")) + float(root.findtext("cputime/systemtime"))
    assert 0.7 * cpu <= samples * PERIOD_US / 1e6 <= 1.2 * cpu + 0.05, (samples, cpu, note)
    return by_function


@pytest.mark.parametrize("threads", [False, True], ids=["one_thread", "threads"])
def test_api_profiles_without_psrun(api_profile, workdir, threads):
    """Linked against libpshwpc.so, PS_HWPC_CONFIG naming a profile: no psrun."""
    env = {**os.environ, "PS_HWPC_CONFIG": str(profile_config(workdir / "prof.xml"))}
    args = [api_profile, UNITS, "region"] + (["threads"] if threads else [])
    p = subprocess.run(args, cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout, p.stderr) == (0, CODES, ""), p.stderr
    report = one(workdir, "region")
    assert report.name == f"region.{report.name.split('.')[1]}.{HOST}.xml"
    check_profile(report, threads)
    assert sorted(f.name for f in workdir.iterdir()) == sorted(["prof.xml", report.name])


def test_api_profiles_again_after_shutdown(api_profile, workdir):
    """A second init after shutdown samples anew: the second profile holds
    only what ran after it, the first nothing of that."""
    env = {**os.environ, "PS_HWPC_CONFIG": str(profile_config(workdir / "prof.xml"))}
    p = subprocess.run([api_profile, UNITS, "region", "twice"], cwd=workdir, env=env, capture_output=True,
                       text=True, timeout=120)
    assert (p.returncode, p.stdout) == (0, CODES + "init 0 start 0 stop 0 shutdown 0\n"), p.stderr
    check_profile(one(workdir, "region"), threads=False)
    again = functions(workdir / "region.again.xml")
    assert again.get("spin_b", 0) >= 50 and "spin_a" not in again and "spin_c" not in again, again


@pytest.mark.parametrize("timer", ["ITIMER_PROF", "ITIMER_REAL"])
def test_program_suspends_psruns_sampling(api_profile, workdir, timer):
    """Under psrun --profile the program's calls act on psrun's sampling:
    each returns PS_HWPC_OK, its stop writes its profile, and psrun's own
    profile at the end has nothing of the suspended part either."""
    p = run_tool("psrun", "-q", "--profile", timer, "--period", str(PERIOD_US), api_profile, UNITS, "region",
                 "threads", cwd=workdir)
    assert (p.returncode, p.stdout, p.stderr) == (0, CODES, ""), p.stderr
    for prefix in ("region", "api_profile"):
        report = one(workdir, prefix)
        if timer == "ITIMER_PROF":
            check_profile(report, threads=True)
        else:  # wall-clock time: the waits for the threads are sampled too
            by_function = functions(report)
            assert "spin_b" not in by_function, by_function
            assert by_function.get("spin_a", 0) >= 50 and by_function.get("spin_c", 0) >= 50, by_function


def test_failed_exec_keeps_sampling_suspended(api_profile, workdir):
    """psrun holds sampling around an exec and resumes it when the exec
    fails; what the program suspended stays suspended."""
    p = run_tool("psrun", "-q", "--profile", "ITIMER_PROF", "--period", str(PERIOD_US), api_profile, UNITS, "region",
                 "exec", cwd=workdir)
    assert (p.returncode, p.stdout, p.stderr) == (0, CODES, ""), p.stderr
    for prefix in ("region", "api_profile"):
        check_profile(one(workdir, prefix), threads=False)


def test_profile_configuration_errors_reach_the_program(api_profile, workdir):
    """A profile that cannot be: ps_hwpc_init returns PS_HWPC_ECONFIG and says why, once."""
    path = workdir / "prof.xml"
    path.write_text('<ps_hwpc_profile class="itimer"><ps_hwpc_event>cycles</ps_hwpc_event></ps_hwpc_profile>')
    p = subprocess.run([api_profile, "1", "region"], cwd=workdir, env={**os.environ, "PS_HWPC_CONFIG": str(path)},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and p.stdout.startswith("init -3 start -2 suspend -2 start -2 stop -2"), p.stdout
    assert p.stderr == f"pshwpc: {path}: class itimer takes ITIMER_PROF, ITIMER_VIRTUAL, ITIMER_REAL, not cycles\n"
    assert not [f for f in workdir.iterdir() if f.name.startswith("region")]


def test_fortran_bindings_drive_a_profile(fortran_profile, workdir):
    env = {**os.environ, "PS_HWPC_CONFIG": str(profile_config(workdir / "prof.xml"))}
    p = subprocess.run([fortran_profile], cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stdout.split(), p.stderr) == (0, ["0"] * 6, ""), p.stdout + p.stderr
    # stop('fortran_profile') with Fortran's blank padding: the padding is not part of the name
    report = one(workdir, "fortran_profile")
    assert report.name == f"fortran_profile.{report.name.split('.')[1]}.{HOST}.xml"
    validate(report, "hwpcreport-0.3.dtd")
    by_function = {name.rstrip("_"): n for name, n in functions(report).items()}
    assert "spin_b" not in by_function, by_function
    assert by_function.get("spin_a", 0) >= 50 and by_function.get("spin_c", 0) >= 50, by_function


def test_python_counting_refuses_a_profile(workdir):
    """Counting counts: a profile configuration is one clear error, and the
    library is left ready to count (in a process of its own: the profile's
    set-up takes the sampling signals for the process)."""
    config = profile_config(workdir / "prof.xml")
    code = ("import sys\nfrom psuite.errors import ConfigError\nfrom psuite.hwpc import Counting\n"
            "try:\n    Counting(environment={'PS_HWPC_CONFIG': sys.argv[1]}).init()\n"
            "except ConfigError as e:\n    print(e)\n"
            "with Counting(['task-clock']) as c:\n    pass\nprint(c.counts['task-clock'] > 0)\n")
    p = subprocess.run([sys.executable, "-c", code, str(config)], cwd=workdir, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout.splitlines() == [
        "the configuration is a profile (<ps_hwpc_profile> or psrun --profile); Counting counts events: give it "
        "events or a <ps_hwpc_eventlist> configuration", "True"]
    assert sorted(f.name for f in workdir.iterdir()) == ["prof.xml"]
