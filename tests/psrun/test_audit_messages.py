"""psrun's refusals name the real problem (through the real psrun, before
the program's own code runs): an unknown --profile source is an unknown
event, not a missing --period; a missing directory from PSUITE_OUTPUT_DIR
names the variable, not -d; an empty or broken -c configuration names the
file and says how to get a good one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_tool


def run(targets, *options: str, env: dict[str, str] | None = None):
    """psrun OPTIONS fsize_writer, which writes own.dat when it runs."""
    return run_tool("psrun", *options, targets["fsize_writer"], "default", "own.dat", env={**os.environ, **(env or {})})


@pytest.mark.parametrize("period", [[], ["--period", "100000"]])
def test_unknown_profile_source_is_an_unknown_event(targets, workdir, period):
    p = run(targets, "--profile", "BOGUS", *period)
    line = one_line_error(p, "psrun")
    assert "BOGUS" in line and "no such event" in line and "psinv -e" in line, line
    assert "--period" not in line and "threshold" not in line, line
    assert not (workdir / "own.dat").exists()  # the program's main never ran


def test_a_known_event_without_period_still_asks_for_the_threshold(targets, workdir):
    p = run(targets, "--profile", "task-clock")
    line = one_line_error(p, "psrun")
    assert line == "psrun: --period: sampling on task-clock needs an overflow threshold (a count of events)"
    assert not (workdir / "own.dat").exists()


def test_missing_directory_names_where_it_came_from(targets, workdir):
    missing = str(workdir / "nonexist")
    line = one_line_error(run(targets, env={"PSUITE_OUTPUT_DIR": missing}), "psrun")
    assert line == f"psrun: PSUITE_OUTPUT_DIR={missing}: no such directory (create it first)"
    line = one_line_error(run(targets, "-d", missing, env={"PSUITE_OUTPUT_DIR": str(workdir)}), "psrun")
    assert line == f"psrun: -d {missing}: no such directory (create it first)"
    assert not (workdir / "own.dat").exists()


@pytest.mark.parametrize(
    ("content", "problem"),
    [("", "is empty"), ("\n  \n", "is empty"), ("<ps_hwpc_eventlist><ps_hwpc_event", "is not well-formed XML")],
)
def test_bad_configuration_names_the_file_and_the_fix(targets, workdir, content, problem):
    cfg = workdir / "conf.xml"
    cfg.write_text(content)
    line = one_line_error(run(targets, "-c", str(cfg)), "psrun")
    assert line.startswith(f"psrun: configuration {cfg} {problem}"), line
    assert "psprocess --calibrate --write-config FILE" in line, line
    # the example it names exists and is a counting configuration psrun takes
    example = Path(line.split("start from the event list ")[1].split(" ")[0])
    assert example.name == "default.xml" and "<ps_hwpc_eventlist" in example.read_text()
    assert not (workdir / "own.dat").exists()
    p = run(targets, "-q", "-c", str(example))
    assert (p.returncode, p.stdout) == (0, "wrote 4096 bytes, no error\n"), p.stderr
