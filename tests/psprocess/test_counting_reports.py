"""psprocess on counting reports: derived metrics against hand
computation, original-PerfSuite documents, formats and bad input."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from tests.conftest import one_line_error, run_tool, validate

MACHINE = """<machineinfo><cpucount>4</cpucount><cpuinfo><vendor>GenuineIntel</vendor>
<cpuidinfo>Family 6 Model 85 Stepping 4</cpuidinfo><revision>4</revision>
<clockspeed units="MHz">2000.000</clockspeed><cacheinfo><levels>2</levels>
<cache type="data" level="1"><size units="KB">32</size><linesize units="B">64</linesize>
<associativity type="set">8</associativity></cache>
<cache type="unified" level="2"><size units="KB">1024</size><linesize units="B">128</linesize>
<associativity type="set">16</associativity></cache></cacheinfo><tlbinfo/></cpuinfo>
<memoryinfo units="MB">16384</memoryinfo><syspagesize units="KB">4</syspagesize></machineinfo>"""

COUNTS = {"PAPI_TOT_CYC": 4_000_000_000, "PAPI_TOT_INS": 6_000_000_000, "PAPI_FP_OPS": 1_000_000_000,
          "PAPI_FP_INS": 800_000_000, "PAPI_LD_INS": 1_500_000_000, "PAPI_SR_INS": 500_000_000,
          "PAPI_L1_DCM": 40_000_000, "PAPI_L2_DCM": 4_000_000, "PAPI_BR_INS": 700_000_000,
          "PAPI_BR_MSP": 7_000_000, "PAPI_STL_ICY": 1_000_000_000, "PAPI_RES_STL": 2_000_000_000}
WALL, USER, SYS, MHZ = 2.5, 2.0, 0.25, 2000.0


def report_xml(counts: dict, wall: str = f'<wallclock units="seconds">{WALL}</wallclock>') -> str:
    events = "".join(f'<hwpcevent type="{"preset" if n.startswith("PAPI_") else "native"}" name="{n}" '
                     f'derived="no">{v}</hwpcevent>' for n, v in counts.items())
    return (f'<?xml version="1.0"?>\n<hwpcreport version="0.3" generator="test" mode="count"><date>d</date>'
            f"<hostname>h</hostname><domainname>x</domainname><pid>42</pid>{wall}"
            f"<cputime><usertime>{USER}</usertime><systemtime>{SYS}</systemtime></cputime>{MACHINE}"
            f'<hwpceventdata class="PAPI" domain="user" multiplexed="no">{events}</hwpceventdata></hwpcreport>')


def expected_metrics() -> dict[str, float]:
    c = COUNTS
    cpu = USER + SYS
    return {
        "Instructions per cycle": c["PAPI_TOT_INS"] / c["PAPI_TOT_CYC"],
        "Floating point operations per cycle": c["PAPI_FP_OPS"] / c["PAPI_TOT_CYC"],
        "Floating point instructions (% of all)": 100 * c["PAPI_FP_INS"] / c["PAPI_TOT_INS"],
        "Loads per cycle": c["PAPI_LD_INS"] / c["PAPI_TOT_CYC"],
        "Stores per cycle": c["PAPI_SR_INS"] / c["PAPI_TOT_CYC"],
        "Loads per floating point instruction": c["PAPI_LD_INS"] / c["PAPI_FP_INS"],
        "Stores per floating point instruction": c["PAPI_SR_INS"] / c["PAPI_FP_INS"],
        "Mispredicted branches per correctly predicted branch":
            c["PAPI_BR_MSP"] / (c["PAPI_BR_INS"] - c["PAPI_BR_MSP"]),
        "Level 1 data cache line reuse":
            (c["PAPI_LD_INS"] + c["PAPI_SR_INS"] - c["PAPI_L1_DCM"]) / c["PAPI_L1_DCM"],
        "Level 2 data cache line reuse": (c["PAPI_L1_DCM"] - c["PAPI_L2_DCM"]) / c["PAPI_L2_DCM"],
        "Bandwidth used to level 2 cache (MB/s)": c["PAPI_L1_DCM"] * 128 / WALL / 1e6,
        "Bandwidth used beyond level 2 cache (MB/s)": c["PAPI_L2_DCM"] * 128 / WALL / 1e6,
        "Cycles with no instruction issue (%)": 100 * c["PAPI_STL_ICY"] / c["PAPI_TOT_CYC"],
        "Cycles stalled on any resource (%)": 100 * c["PAPI_RES_STL"] / c["PAPI_TOT_CYC"],
        "MFLOPS (cycles)": c["PAPI_FP_OPS"] / (c["PAPI_TOT_CYC"] / (MHZ * 1e6)) / 1e6,
        "MFLOPS (wall clock)": c["PAPI_FP_OPS"] / WALL / 1e6,
        "MIPS (cycles)": c["PAPI_TOT_INS"] / (c["PAPI_TOT_CYC"] / (MHZ * 1e6)) / 1e6,
        "MIPS (wall clock)": c["PAPI_TOT_INS"] / WALL / 1e6,
        "CPU time (seconds)": cpu,
        "Wall clock time (seconds)": WALL,
        "CPU utilization (%)": 100 * cpu / WALL,
    }


def four_digits(x: float) -> str:
    return f"{x:.4g}"


@pytest.fixture
def report_file(tmp_path):
    path = tmp_path / "run.xml"
    path.write_text(report_xml(COUNTS))
    return path


def test_every_derived_metric_matches_hand_computation(report_file):
    p = run_tool("psprocess", "--format", "json", str(report_file))
    assert p.returncode == 0, p.stderr
    got = {m["name"]: m["value"] for m in json.loads(p.stdout)["reports"][0]["metrics"]}
    want = expected_metrics()
    assert set(want) <= set(got)
    for name, value in want.items():
        assert four_digits(got[name]) == four_digits(value), name


def test_text_report_prints_each_metric_to_four_digits(report_file):
    p = run_tool("psprocess", str(report_file))
    assert p.returncode == 0, p.stderr
    for section in ("Execution Information", "Processor and System Information", "Cache Information",
                    "Event Counts", "Statistics"):
        assert section in p.stdout
    lines = {ln.split(" ..")[0].strip(): ln.rsplit(" ", 1)[1] for ln in p.stdout.splitlines() if " .." in ln}
    for name, value in expected_metrics().items():
        shown = float(lines[name].replace(",", ""))
        assert shown == pytest.approx(value, rel=5e-4), name


def test_unmeasured_metrics_are_left_out(tmp_path):
    path = tmp_path / "sw.xml"
    path.write_text(report_xml({"perf::TASK-CLOCK": 2_000_000_000, "perf::PAGE-FAULTS": 5000,
                                "perf::CONTEXT-SWITCHES": 25}))
    data = json.loads(run_tool("psprocess", "-f", "json", str(path)).stdout)
    got = {m["name"]: m["value"] for m in data["reports"][0]["metrics"]}
    assert "Instructions per cycle" not in got and "MFLOPS (wall clock)" not in got
    assert got["CPUs utilized"] == pytest.approx(2e9 / (WALL * 1e9))
    assert got["Page faults per second"] == pytest.approx(5000 / WALL)
    assert got["Context switches per second"] == pytest.approx(25 / WALL)
    text = run_tool("psprocess", str(path)).stdout
    assert not re.search(r"\b(nan|inf)\b", text, re.I) and "Instructions per cycle" not in text


def test_reads_original_perfsuite_documents(tmp_path):
    """Old generation: DOCTYPE to a path that does not exist here, ticks
    wallclock, <family>/<model>, an element the DTDs omit."""
    mhz = 1500.0
    doc = f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE hwpcreport SYSTEM "/usr/share/perfsuite/dtds/pshwpc/hwpcreport.dtd">
<hwpcreport version="0.2" generator="psrun" mode="count"><date>Tue Apr 12 10:44:10 2005</date>
<hostname>tg-c001</hostname><domainname>ncsa.teragrid.org</domainname><pid>1234</pid>
<command>./a.out</command><wallclock units="ticks">{int(3 * mhz * 1e6)}</wallclock>
<cputime><usertime>2.9</usertime><systemtime>0.05</systemtime></cputime>
<machineinfo><cpucount>2</cpucount><cpuinfo><vendor>GenuineIntel</vendor><family>Itanium 2</family>
<model>1</model><revision>5</revision><clockspeed units="MHz">{mhz}</clockspeed><cacheinfo><levels>1</levels>
<cache type="data" level="1"><size units="KB">16</size><linesize units="B">64</linesize>
<associativity type="set">4</associativity></cache></cacheinfo><tlbinfo/></cpuinfo>
<memoryinfo units="MB">4096</memoryinfo><syspagesize units="KB">16</syspagesize><extra>x</extra></machineinfo>
<hwpceventdata class="PAPI" version="3.0.7" domain="user" multiplexed="no">
<hwpcevent type="preset" name="PAPI_TOT_CYC" derived="no">4500000000</hwpcevent>
<hwpcevent type="preset" name="PAPI_TOT_INS" derived="no">9000000000</hwpcevent></hwpceventdata></hwpcreport>"""
    path = tmp_path / "old.xml"
    path.write_text(doc)
    p = run_tool("psprocess", "-f", "json", str(path))
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)["reports"][0]
    assert r["wallclock"] == pytest.approx(3.0)
    assert {m["name"]: m["value"] for m in r["metrics"]}["Instructions per cycle"] == pytest.approx(2.0)
    # and it converts to the -0.3 generation, valid against its DTD
    x = run_tool("psprocess", "-f", "xml", str(path))
    validate(x.stdout.encode(), "hwpcreport-0.3.dtd")


def test_csv_rows(report_file):
    rows = list(csv.DictReader(io.StringIO(run_tool("psprocess", "-f", "csv", str(report_file)).stdout)))
    events = {r["name"]: float(r["value"]) for r in rows if r["kind"] == "event"}
    assert events == {k: float(v) for k, v in COUNTS.items()}


def test_user_metric_file(report_file, tmp_path):
    m = tmp_path / "cpi.xml"
    m.write_text('<psmetrics class="PAPI"><metric namespace="t"><name>Cycles per instruction</name>'
                 "<description>CPI</description><definition><apply><divide><ci>PAPI_TOT_CYC</ci>"
                 "<ci>PAPI_TOT_INS</ci></divide></apply></definition></metric></psmetrics>")
    data = json.loads(run_tool("psprocess", "-f", "json", "-m", str(m), str(report_file)).stdout)
    got = {x["name"]: x["value"] for x in data["reports"][0]["metrics"]}
    assert got["Cycles per instruction"] == pytest.approx(4 / 6)


@pytest.mark.parametrize("body,needle", [
    ("<apply><divide><ci>PAPI_NOPE</ci><ci>PAPI_TOT_INS</ci></divide></apply>", "PAPI_NOPE"),
    ("<apply><divide><ci>PAPI_TOT_CYC</ci></divide></apply>", "two operands"),
    ("<apply><power><ci>PAPI_TOT_CYC</ci></power></apply>", "not an operator"),
    ("<apply><cn>abc</cn></apply>", "number"),
])
def test_bad_metric_files_are_clear_errors(report_file, tmp_path, body, needle):
    m = tmp_path / "bad.xml"
    m.write_text(f'<psmetrics class="PAPI"><metric namespace="t"><name>x</name><description>d</description>'
                 f"<definition>{body}</definition></metric></psmetrics>")
    assert needle in one_line_error(run_tool("psprocess", "-m", str(m), str(report_file)), "psprocess")


def test_bad_inputs(tmp_path):
    assert "no such file" in one_line_error(run_tool("psprocess", str(tmp_path / "none.xml")), "psprocess")
    broken = tmp_path / "broken.xml"
    broken.write_text("<hwpcreport><date>")
    assert "well-formed" in one_line_error(run_tool("psprocess", str(broken)), "psprocess")
    other = tmp_path / "other.xml"
    other.write_text("<somethingelse/>")
    assert "not supported" in one_line_error(run_tool("psprocess", str(other)), "psprocess")


def test_entity_expansion_is_not_performed(tmp_path):
    bomb = tmp_path / "bomb.xml"
    bomb.write_text('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">'
                    '<!ENTITY x SYSTEM "file:///etc/passwd">]><hwpcreport mode="count"><date>&b;&x;</date>'
                    "<hostname>h</hostname><domainname/><wallclock units='seconds'>1</wallclock><cputime>"
                    "<usertime>1</usertime><systemtime>0</systemtime></cputime><hwpceventdata class='PAPI' "
                    "domain='user' multiplexed='no'/></hwpcreport>")
    p = run_tool("psprocess", "-f", "json", str(bomb))
    assert p.returncode == 0, p.stderr
    date = json.loads(p.stdout)["reports"][0]["date"]
    assert "root:" not in date and "aaaaa" not in date


def test_psrun_then_psprocess_end_to_end(targets, workdir):
    run = run_tool("psrun", targets["work"], "3000", "20", "0")
    assert run.returncode == 0, run.stderr
    [report] = [p for p in workdir.iterdir() if p.name.startswith("work.")]
    p = run_tool("psprocess", str(report))
    assert p.returncode == 0, p.stderr
    assert "Event Counts" in p.stdout and "CPUs utilized" in p.stdout
