"""The Fortran bindings (ps_hwpc_*_ with a trailing ierr), called from a
real Fortran program compiled with gfortran (installed by tests/run.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from psuite.libperfsuite.native import library_path
from tests.conftest import TARGETS, validate

PAGES = 2000


@pytest.fixture(scope="module")
def fortran_program(tmp_path_factory) -> str:
    gfortran = shutil.which("gfortran")
    assert gfortran, "gfortran is needed (tests/run.sh installs it)"
    exe = tmp_path_factory.mktemp("fortran") / "fortran_api"
    lib = library_path()
    subprocess.run([gfortran, "-O1", "-o", str(exe), str(TARGETS / "fortran_api.f90"), lib,
                    f"-Wl,-rpath,{os.path.dirname(lib)}"], check=True)
    return str(exe)


@pytest.mark.parametrize("backend", ["PAPI", "perf_event"])
def test_fortran_program_counts_a_region(fortran_program, tmp_path, backend):
    env = {**os.environ, "PSUITE_EVENTS": "page-faults", "PSUITE_BACKEND": backend}
    p = subprocess.run([fortran_program, str(PAGES)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    nevents, faults = map(int, p.stdout.split())
    assert nevents == 1
    # Each 4 KiB element touched is a fresh page; the runtime adds a few.
    assert PAGES <= faults <= PAGES * 1.05 + 100
    # stop(name) with a blank-padded Fortran string: the padding is not part
    # of the file name.
    [report] = [f for f in Path(tmp_path).iterdir() if f.name.startswith("fortran_region.")]
    assert report.name == f"fortran_region.{report.name.split('.')[1]}.{os.uname().nodename.split('.')[0]}.xml"
    root = validate(report, "hwpcreport-0.3.dtd")
    [event] = root.iter("hwpcevent")
    assert int(event.text) == faults
    assert root.find("hwpceventdata").get("class") == ("PAPI" if backend == "PAPI" else "perfmon")


def test_fortran_example_runs_without_an_argument(fortran_program, tmp_path):
    """The README calls it a complete example: run as is, it touches 1000 pages."""
    env = {**os.environ, "PSUITE_EVENTS": "page-faults", "PSUITE_BACKEND": "perf_event"}
    p = subprocess.run([fortran_program], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    nevents, faults = map(int, p.stdout.split())
    assert nevents == 1 and 1000 <= faults <= 1000 * 1.05 + 100
