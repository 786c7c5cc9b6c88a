"""Invalid values of the PSUITE_* variables the README documents for the
library in the program (PSUITE_UNWINDER, PSUITE_CALLPATH_NODES,
PSUITE_SAMPLE_SIGNAL) are refused by the real psrun before the program
runs: one line naming the variable, its value and the valid values, exit
status 2.  Valid and empty values run the program.  The library without
psrun (preloaded by hand) ignores them with a note that is one clean
sentence."""

from __future__ import annotations

import os
import subprocess

import pytest

from psuite.libperfsuite.native import library_path
from tests.conftest import one_line_error, run_tool

INVALID = {
    "PSUITE_UNWINDER": ("bogus", "libunwind, libgcc or framepointer"),
    "PSUITE_CALLPATH_NODES": ("abc", "from 2 to 268435456"),
    "PSUITE_SAMPLE_SIGNAL": ("sigusr1", "sigtrap or sigprof"),
}


def run(targets, workdir, env: dict[str, str], *options: str):
    """psrun --callpath on fsize_writer, which writes own.dat when it runs."""
    return run_tool(
        "psrun", *options, "--callpath", targets["fsize_writer"], "default", "own.dat", env={**os.environ, **env}
    )


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_value_is_refused_before_the_program_runs(targets, workdir, name):
    value, valid = INVALID[name]
    p = run(targets, workdir, {name: value})
    line = one_line_error(p, "psrun")
    assert f"{name}={value}" in line and valid in line, line
    assert p.stdout == "" and not (workdir / "own.dat").exists()  # the program never ran
    assert list(workdir.iterdir()) == []  # and no report


@pytest.mark.parametrize("value", ["1", "12x", "-5", " 7", "268435457", "99999999999999999999"])
def test_callpath_nodes_out_of_range_is_refused(targets, workdir, value):
    p = run(targets, workdir, {"PSUITE_CALLPATH_NODES": value})
    line = one_line_error(p, "psrun")
    assert "PSUITE_CALLPATH_NODES=" in line and "from 2 to 268435456" in line, line
    assert not (workdir / "own.dat").exists()


@pytest.mark.parametrize(
    "env",
    [
        {"PSUITE_UNWINDER": "framepointer"},
        {"PSUITE_UNWINDER": ""},
        {"PSUITE_CALLPATH_NODES": "1000"},
        {"PSUITE_CALLPATH_NODES": "0000000000001000"},  # leading zeros: the library takes it, so psrun does too
        {"PSUITE_SAMPLE_SIGNAL": "sigprof"},
    ],
)
def test_valid_values_run_the_program(targets, workdir, env):
    p = run(targets, workdir, env, "-q")
    assert (p.returncode, p.stdout) == (0, "wrote 4096 bytes, no error\n"), p.stderr
    assert (workdir / "own.dat").stat().st_size == 4096
    assert "is not valid" not in p.stderr


def test_the_library_alone_says_what_it_ignores_in_one_sentence(targets, workdir):
    env = {
        **os.environ,
        "LD_PRELOAD": library_path(),
        "PSUITE_PRELOAD": "1",
        "PSUITE_PROFILE": "ITIMER_PROF",
        "PSUITE_PERIOD": "1000",
        "PSUITE_CALLPATH": "64",
        "PSUITE_UNWINDER": "bogus",
        "PSUITE_CALLPATH_NODES": "abc",
    }
    p = subprocess.run(
        [targets["fsize_writer"], "none", "own.dat"], capture_output=True, text=True, env=env, timeout=60
    )
    assert (p.returncode, p.stdout) == (0, "wrote 0 bytes, no error\n"), p.stderr
    assert "PSUITE_UNWINDER=bogus ignored: it must be libunwind, libgcc or framepointer)" in p.stderr, p.stderr
    assert "; )" not in p.stderr and "; ;" not in p.stderr
    nodes = [line for line in p.stderr.splitlines() if "PSUITE_CALLPATH_NODES" in line]
    assert nodes == [
        "psrun: PSUITE_CALLPATH_NODES=abc ignored: it must be a whole number from 2 to 268435456; 262144 used"
    ], p.stderr
