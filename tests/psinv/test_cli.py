"""psinv through the real command."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from psuite.libperfsuite.machine import machine_info
from tests.conftest import one_line_error, run_tool, validate


def test_text_inventory_names_every_section():
    p = run_tool("psinv")
    assert p.returncode == 0, p.stderr
    for section in ("Processor", "Caches", "TLBs", "Memory", "Operating system", "Performance counters"):
        assert f"\n{section}\n" in p.stdout
    paranoid = Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
    assert f"perf_event_paranoid  {paranoid}:" in p.stdout
    m = machine_info()
    assert m.vendor in p.stdout and f"{m.memory_mb} MB" in p.stdout
    assert ("Virtual machine      yes" in p.stdout) == bool(m.hypervisor)


def test_xml_is_valid_machineinfo_03(tmp_path):
    out = tmp_path / "m.xml"
    p = run_tool("psinv", "-x", "-o", str(out))
    assert p.returncode == 0, p.stderr
    root = validate(out, "machineinfo-0.3.dtd")
    m = machine_info()
    assert int(root.findtext("cpucount")) == m.cpu_count
    assert root.findtext("cpuinfo/vendor") == m.vendor
    assert int(root.findtext("memoryinfo")) == m.memory_mb
    assert len(root.findall("cpuinfo/cacheinfo/cache")) == len(m.caches)


def test_json_has_machine_and_counters():
    p = run_tool("psinv", "--json")
    data = json.loads(p.stdout)
    assert data["machine"]["cpu_count"] == machine_info().cpu_count
    assert "perf_event_paranoid" in data["counters"]


@pytest.fixture(scope="module")
def events():
    p = run_tool("psinv", "-e", "--json")
    assert p.returncode == 0, p.stderr
    return {(e["backend"], e["name"]): e for e in json.loads(p.stdout)["events"]}


@pytest.mark.papi
def test_events_on_this_vm(events):
    """The acceptance facts of this VM (no PMU): cycles fail, task clock works."""
    assert events[("PAPI", "PAPI_TOT_CYC")]["available"] is False
    assert events[("PAPI", "PAPI_TOT_CYC")]["reason"]
    assert events[("PAPI", "perf::TASK-CLOCK")]["available"] is True
    assert events[("perf_event", "task-clock")]["available"] is True


@pytest.mark.parametrize("name", ["cycles", "instructions", "task-clock", "page-faults", "context-switches",
                                  "cpu-migrations", "L1-dcache-load-misses", "branch-misses"])
def test_perf_event_availability_agrees_with_perf_stat(events, name):
    assert shutil.which("perf"), "perf is needed (tests/run installs linux-perf)"
    out = subprocess.run(["perf", "stat", "-x,", "-e", name, "true"], capture_output=True, text=True).stderr
    counted = not any(s in out for s in ("<not supported>", "<not counted>", "event syntax error"))
    assert events[("perf_event", name)]["available"] == counted, out


@pytest.mark.parametrize("name", ["PAPI_TOT_CYC", "PAPI_TOT_INS", "PAPI_L1_DCM", "PAPI_FP_OPS",
                                  "perf::TASK-CLOCK", "perf::PAGE-FAULTS", "perf::CONTEXT-SWITCHES"])
@pytest.mark.papi
def test_papi_availability_agrees_with_papi_command_line(events, name):
    assert shutil.which("papi_command_line"), "papi-tools is needed (tests/run installs it)"
    out = subprocess.run(["papi_command_line", name], capture_output=True, text=True).stdout
    assert events[("PAPI", name)]["available"] == (f"Successfully added: {name}" in out), out


def test_available_filter(events):
    p = run_tool("psinv", "-e", "--available", "--json")
    names = {(e["backend"], e["name"]) for e in json.loads(p.stdout)["events"]}
    assert names == {k for k, e in events.items() if e["available"]}


def test_unknown_option_is_one_line_exit_2():
    line = one_line_error(run_tool("psinv", "--bogus"), "psinv")
    assert "--bogus" in line and "--help" in line


def test_unwritable_output_is_one_line_exit_2(tmp_path):
    line = one_line_error(run_tool("psinv", "-o", str(tmp_path / "no" / "such" / "dir.txt")), "psinv")
    assert "directory does not exist" in line


def test_existing_output_is_kept(tmp_path):
    out = tmp_path / "keep.txt"
    out.write_text("precious")
    line = one_line_error(run_tool("psinv", "-o", str(out)), "psinv")
    assert "--force" in line and out.read_text() == "precious"
    assert run_tool("psinv", "-o", str(out), "--force").returncode == 0
    assert "Processor" in out.read_text()


def test_help_explains_every_option():
    p = run_tool("psinv", "--help")
    for opt in ("--xml", "--json", "--events", "--available", "--output", "--force"):
        assert opt in p.stdout


@pytest.mark.parametrize("tool", ["psinv", "psrun", "psprocess"])
def test_every_tool_reports_its_version(tool):
    p = run_tool(tool, "--version")
    assert p.returncode == 0 and p.stdout.startswith(f"{tool} (psuite) ")


@pytest.mark.parametrize("tool", ["psinv", "psprocess"])
def test_force_without_output_is_a_usage_error(tool):
    extra = ["x.xml"] if tool == "psprocess" else []
    assert "--force goes with -o" in one_line_error(run_tool(tool, "--force", *extra), tool)
