"""psuite's messages go to the standard error psrun started the program
with, never into a file the program has since put on descriptor 2."""

from __future__ import annotations

import pytest

from tests.conftest import run_tool, validate


@pytest.mark.parametrize(
    "mode",
    [["-e", "task-clock"], ["-e", "task-clock,PAPI_FP_OPS"], ["--profile", "ITIMER_PROF"], ["-p"]],
    ids=["count", "dropped-event", "profile", "per-thread"],
)
def test_data_file_on_descriptor_2_gets_no_psrun_lines(targets, workdir, mode):
    data = workdir / "data.txt"
    p = run_tool("psrun", *mode, targets["stderr_reused"], str(data))
    assert p.returncode == 0, p.stderr
    # before the program's dup2 psuite's notes reached psrun's stderr ...
    if "PAPI_FP_OPS" in mode[-1]:
        assert "not counted: PAPI_FP_OPS" in p.stderr
    # ... after it, none reach the program's data: the report line is said
    # by the collector, on psrun's own stderr
    assert data.read_text() == "data\n"
    assert "psrun: report:" in p.stderr
    reports = sorted(workdir.glob("stderr_reused.*.xml"))
    assert reports
    for report in reports:
        validate(report, "hwpcreport-0.3.dtd")  # raw profiles are <hwpcreport mode="profile">
