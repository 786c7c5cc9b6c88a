"""One canonical name per event whatever the spelling or backend that
counted it (psuite.hwpc.names): psrun's default event list writes
perf::TASK-CLOCK, `psrun -e task-clock` writes task-clock, and psprocess's
text, JSON, CSV, XML, combination and cube all call both task-clock, the
document's spelling kept as "counted_as".  Metric definitions match events
by canonical name, written in either spelling, the original PerfSuite's
PAPI presets included."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest
from lxml import etree

import psuite
from psuite.hwpc import names
from psuite.hwpc.names import PERF_EVENTS, canonical
from tests.conftest import TARGETS, run_tool
from tests.psprocess.test_counting_reports import report_xml


@pytest.fixture(scope="module")
def two_spellings(tmp_path_factory) -> tuple[Path, Path]:
    """Real runs of one program: psrun's default event list, and -e task-clock."""
    out = tmp_path_factory.mktemp("event_names")
    subprocess.run(["cc", "-O1", "-o", str(out / "work"), str(TARGETS / "work.c")], check=True)
    docs = []
    for name, events in (("default", []), ("asked", ["-e", "task-clock"])):
        p = run_tool("psrun", "-q", "-d", str(out), "-o", name, *events, str(out / "work"), "100", "20", "0")
        assert p.returncode == 0, p.stderr
        [doc] = out.glob(f"{name}*.xml")
        docs.append(doc)
    spelt = [[e.get("name") for e in etree.parse(str(d)).iter("hwpcevent")] for d in docs]
    # the documents as psrun wrote them: the same event in two spellings
    assert "perf::TASK-CLOCK" in spelt[0] and spelt[1] == ["task-clock"], spelt
    return docs[0], docs[1]


def raw_count(doc: Path, spelling: str) -> float:
    [count] = [float(e.text) for e in etree.parse(str(doc)).iter("hwpcevent") if e.get("name") == spelling]
    return count


def test_every_output_calls_task_clock_one_name(two_spellings, tmp_path):
    default, asked = two_spellings
    expected = {"default": raw_count(default, "perf::TASK-CLOCK"), "asked": raw_count(asked, "task-clock")}
    for doc, counted_as in ((default, "perf::TASK-CLOCK"), (asked, "")):
        data = json.loads(run_tool("psprocess", "-f", "json", str(doc)).stdout)
        [event] = [e for e in data["reports"][0]["events"] if e["name"] == "task-clock"]
        assert event["counted_as"] == counted_as
        assert not [e for e in data["reports"][0]["events"] if "TASK-CLOCK" in e["name"]]
        text = run_tool("psprocess", str(doc)).stdout
        assert "task-clock" in text and "TASK-CLOCK" not in text
        rows = list(csv.reader(io.StringIO(run_tool("psprocess", "-f", "csv", str(doc)).stdout)))
        assert any("task-clock" in row for row in rows) and not any("perf::TASK-CLOCK" in row for row in rows)
        xml = run_tool("psprocess", "-f", "xml", str(doc)).stdout
        assert "task-clock" in [e.get("name") for e in etree.fromstring(xml.encode()).iter("hwpcevent")]

    # combined: one statistic over both runs, not one per spelling
    data = json.loads(run_tool("psprocess", "-c", "-f", "json", str(default), str(asked)).stdout)
    clocks = [s for s in data["statistics"] if s["kind"] == "event" and "clock" in s["name"].lower()]
    assert [(s["name"], s["count"]) for s in clocks] == [("task-clock", 2)]
    assert clocks[0]["sum"] == pytest.approx(sum(expected.values()), rel=1e-12)

    # the CUBE export: one metric
    cube = tmp_path / "both.cubex"
    p = run_tool("psprocess", "-c", "--cube", str(cube), str(default), str(asked))
    assert p.returncode == 0, p.stderr
    metrics = psuite.read_experiment(str(cube)).metrics
    # one metric: unique name a CubePL name, display name perf's spelling
    clocks = [(m.name, m.display) for m in metrics if "task" in m.name.lower()]
    assert clocks == [("task_clock", "task-clock")], clocks


def test_metric_definitions_match_events_in_any_spelling(two_spellings, tmp_path):
    """A user's metric written with either spelling (or PERF_COUNT_*) gives
    its value for reports written with either."""
    spellings = ("perf::TASK-CLOCK", "task-clock", "PERF_COUNT_SW_TASK_CLOCK")
    metrics = tmp_path / "mine.xml"
    metrics.write_text('<psmetrics class="PAPI">' + "".join(
        f'<metric namespace="mine"><name>clock {i}</name><description>{s} in seconds</description>'
        f"<definition><apply><divide><ci>{s}</ci><cn>1e9</cn></divide></apply></definition></metric>"
        for i, s in enumerate(spellings)) + "</psmetrics>")
    for doc, spelling in zip(two_spellings, ("perf::TASK-CLOCK", "task-clock"), strict=True):
        p = run_tool("psprocess", "-f", "json", "-m", str(metrics), str(doc))
        assert p.returncode == 0, p.stderr
        got = {m["name"]: m["value"] for m in json.loads(p.stdout)["reports"][0]["metrics"]}
        for i in range(len(spellings)):
            assert got[f"clock {i}"] == pytest.approx(raw_count(doc, spelling) / 1e9, rel=1e-12)


def test_papi_presets_and_perf_names_of_one_event_are_the_preset(tmp_path):
    """The original PerfSuite's documents speak PAPI presets; PAPI's perf
    component writes perf::CYCLES: both are PAPI_TOT_CYC, and the standard
    metrics come out the same from either."""
    original = tmp_path / "original.xml"
    original.write_text(report_xml({"PAPI_TOT_CYC": 4_000_000, "PAPI_TOT_INS": 6_000_000}))
    perf = tmp_path / "perf.xml"
    perf.write_text(report_xml({"perf::CYCLES": 4_000_000, "perf::INSTRUCTIONS": 6_000_000}))
    reports = []
    for doc in (original, perf):
        data = json.loads(run_tool("psprocess", "-f", "json", str(doc)).stdout)["reports"][0]
        reports.append(data)
        assert [e["name"] for e in data["events"]] == ["PAPI_TOT_CYC", "PAPI_TOT_INS"]
        ipc = {m["name"]: m["value"] for m in data["metrics"]}["Instructions per cycle"]
        assert ipc == pytest.approx(1.5)
    assert [e["counted_as"] for e in reports[0]["events"]] == ["", ""]
    assert [e["counted_as"] for e in reports[1]["events"]] == ["perf::CYCLES", "perf::INSTRUCTIONS"]


def test_one_event_counted_in_two_spellings_stays_two_measurements(tmp_path):
    """A report that counted cycles as PAPI_TOT_CYC and as perf::CYCLES has
    two measurements: the second keeps its own spelling, nothing is lost or
    summed."""
    doc = tmp_path / "both.xml"
    doc.write_text(report_xml({"PAPI_TOT_CYC": 100, "perf::CYCLES": 200}))
    data = json.loads(run_tool("psprocess", "-f", "json", str(doc)).stdout)["reports"][0]
    assert [(e["name"], e["count"]) for e in data["events"]] == [("PAPI_TOT_CYC", 100), ("perf::CYCLES", 200)]


def test_canonical_names_agree_with_the_runtime_catalogue():
    """names.py's table of perf's generic events is the C runtime's
    (csrc/runtime/events.c, as psinv -e lists it): same names, same PAPI
    presets."""
    p = run_tool("psinv", "-e", "--json")
    assert p.returncode == 0, p.stderr
    catalogue: dict[str, str | None] = {}
    for e in json.loads(p.stdout)["events"]:
        if e["backend"] == "perf_event":
            d = e["description"]
            catalogue[e["name"]] = d.rsplit("(PAPI: ", 1)[1].rstrip(")") if "(PAPI: " in d else None
    assert catalogue == PERF_EVENTS
    for perf_name, preset in catalogue.items():
        want = preset or perf_name
        for spelling in (perf_name, f"perf::{perf_name.upper()}", perf_name.upper(), want,
                         f"PERF_COUNT_HW_{perf_name.upper().replace('-', '_')}"):
            assert canonical(spelling) == want, spelling
            # what the reader renames is picked out before canonical() is asked
            assert spelling == want or spelling.lower() in names._SPELLINGS, spelling
    # native names of other components, raw events and modifiers are as written
    for other in ("rapl::RAPL_ENERGY_PKG", "r01c2", "INST_RETIRED:ANY_P", "perf::CYCLES:u", "ITIMER_PROF"):
        assert canonical(other) == other
