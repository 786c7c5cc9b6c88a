"""psbase files an event under its canonical name whatever spelling or
backend counted it: a run of psrun's default event list (perf::TASK-CLOCK)
and one of `psrun -e task-clock` are one result, task_clock, and the
README's `psbase query myapp task_clock --by ranks` answers for both."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import TARGETS, run_tool
from tests.psbase.test_cli import ok, psbase


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("psbase_event_names")
    subprocess.run(["cc", "-O1", "-o", str(out / "work"), str(TARGETS / "work.c")], check=True)
    return out / "work"


def names_and_counts(doc: Path) -> dict[str, float]:
    return {e.get("name"): float(e.text) for e in etree.parse(str(doc)).iter("hwpcevent")}


def test_default_list_and_e_task_clock_file_one_result(program, tmp_path, db_url):
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", "--psuite", "myapp", cwd=tmp_path, env=env))
    clocks = []
    for name, events in (("default", []), ("asked", ["-e", "task-clock"])):
        p = run_tool("psrun", "-q", "-o", name, "--archive", "myapp", "--db", db_url, *events, str(program),
                     "100", "20", "0", cwd=tmp_path)
        assert (p.returncode, p.stderr) == (0, "")
        [doc] = tmp_path.glob(f"{name}*.xml")
        counts = names_and_counts(doc)
        clocks.append(counts.get("perf::TASK-CLOCK", counts.get("task-clock")))
    assert None not in clocks

    doc = json.loads(ok(psbase("query", "myapp", "task_clock", "--by", "ranks", "--stat", "mean,count", "-f", "json",
                               cwd=tmp_path, env=env)))
    [row] = doc["rows"]
    assert row["ranks"] == 1 and row["task_clock count"] == 2
    assert row["task_clock mean"] == pytest.approx(sum(clocks) / 2, rel=1e-12)
    info = ok(psbase("info", "myapp", cwd=tmp_path, env=env))
    assert "task_clock" in info and "TASK_CLOCK" not in info and "perf::" not in info


def test_two_spellings_in_one_report_stay_two_results(tmp_path, db_url):
    """A report that counted cycles twice (PAPI_TOT_CYC and perf::CYCLES)
    files two values: the second under its own spelling, never summed
    with the first."""
    from tests.psprocess.test_counting_reports import report_xml

    doc = tmp_path / "both.xml"
    doc.write_text(report_xml({"PAPI_TOT_CYC": 100, "perf::CYCLES": 200}))
    env = {"PSBASE_DB": db_url}
    ok(psbase("setup", "--psuite", "x", cwd=tmp_path, env=env))
    ok(psbase("input", "x", str(doc), cwd=tmp_path, env=env))
    for result, value in (("PAPI_TOT_CYC", 100), ("perf_CYCLES", 200)):
        doc = json.loads(ok(psbase("query", "x", result, "--by", "ranks", "--stat", "mean", "-f", "json",
                                   cwd=tmp_path, env=env)))
        assert doc["rows"][0][f"{result} mean"] == value
