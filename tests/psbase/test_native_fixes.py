"""Native input, checked against numbers computed here from the XML: derived
metrics of a 4-rank MPI job combined as psprocess -c prints them (not
summed), units, the profile's line summary as data-set rows, dates in UTC
when the documents were written in another time zone, and a CUBE file's
date and machine."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from lxml import etree

from psuite.psbase.store import Store
from tests.conftest import TARGETS, run_tool
from tests.psbase.test_cli import ok, psbase
from tests.psbase.test_filing_ranks import mpirun_psrun
from tests.psbase.test_native import archive, file, program, psrun, xml_events  # noqa: F401  (fixtures)


@pytest.fixture(scope="module")
def mpi_job(tmp_path_factory) -> list[Path]:
    mpicc = shutil.which("mpicc")
    assert mpicc, "Open MPI's mpicc is needed (tests/run.sh installs libopenmpi-dev)"
    d = tmp_path_factory.mktemp("psbase_native_mpi")
    exe = d / "mpi_work"
    subprocess.run([mpicc, "-O1", "-g", "-o", str(exe), str(TARGETS / "mpi" / "mpi_work.c")], check=True)
    return mpirun_psrun(exe, 4, d / "job", "-e", "task-clock")


def xml_times(doc: Path) -> tuple[float, float]:
    """(wall clock seconds, CPU seconds) of one report: wallclock is in ticks of the CPU's clock."""
    root = etree.parse(str(doc)).getroot()
    wall = root.find("wallclock")
    assert wall.get("units") == "ticks"
    mhz = float(root.findtext(".//clockspeed"))
    cpu = float(root.findtext("cputime/usertime")) + float(root.findtext("cputime/systemtime"))
    return float(wall.text) / (mhz * 1e6), cpu


def test_mpi_job_metrics_combined_as_psprocess_prints_them(mpi_job, archive):  # noqa: F811
    assert file(archive, mpi_job, merge=True) == [1]
    values = archive.run("app", 1).values
    walls, cpus = zip(*(xml_times(d) for d in mpi_job), strict=True)
    clocks = [xml_events(d)["task-clock"] for d in mpi_job]
    assert values["ranks"] == 4
    assert values["task_clock"] == sum(clocks)  # events add up
    assert values["Wall_clock_time_seconds"] == pytest.approx(max(walls), rel=1e-6)  # the longest rank's
    assert values["Wall_clock_time_seconds"] == pytest.approx(values["wallclock"], rel=1e-6)
    assert values["CPU_time_seconds"] == pytest.approx(sum(cpus), rel=1e-6)  # CPU times add up
    # ratios: the mean per rank (psprocess -c's mean), not the sum of the four
    util = [c / w * 100 for c, w in zip(cpus, walls, strict=True)]
    assert values["CPU_utilization"] == pytest.approx(sum(util) / 4, rel=1e-6)
    used = [t / (w * 1e9) for t, w in zip(clocks, walls, strict=True)]
    assert values["CPUs_utilized"] == pytest.approx(sum(used) / 4, rel=1e-6)
    # psprocess -c prints the same mean
    p = run_tool("psprocess", "-c", *map(str, mpi_job))
    assert p.returncode == 0, p.stderr
    block = p.stdout.split("CPU utilization (%)\n", 1)[1]
    mean = float(re.search(r"mean ([\d.,]+)", block).group(1).replace(",", ""))
    assert values["CPU_utilization"] == pytest.approx(mean, rel=1e-3)


def test_units_of_events_metrics_and_resources(tmp_path, program, archive):  # noqa: F811
    from psuite.psbase import units

    doc = psrun(tmp_path / "runs", "-e", "task-clock,page-faults,context-switches", program, "5")
    file(archive, [doc])
    d = archive.definition("app")
    expected = {
        "task_clock": "ns",
        "page_faults": "fault",
        "context_switches": "switch",
        "CPU_time_seconds": "s",
        "Wall_clock_time_seconds": "s",
        "CPU_utilization": "percent",
        "CPUs_utilized": "",
        "Page_faults_per_second": "fault/s",
        "Context_switches_per_second": "switch/s",
        "wallclock": "s",
        "usertime": "s",
        "total_samples": "sample",
        "samples": "sample",
        "line_samples": "sample",
        "major_faults": "fault",
        # psrun writes maxrss as hwm_kb / 1024: mebibytes
        "maxrss": "MiB",
        "maxvm": "MiB",
    }
    for name, unit in expected.items():
        assert d.variable(name).unit == unit, name
        assert units.normalize(unit) == unit
    assert units.conversion("MiB", "KiB") == 1024


def psprocess_line_summary(doc: Path) -> dict[tuple[str, str, int], int]:
    """psprocess's Function:File:Line Summary (every row: threshold 0)."""
    p = run_tool("psprocess", str(doc))
    assert p.returncode == 0, p.stderr
    block = p.stdout.split("Function:File:Line Summary\n", 1)[1].split("\n\n", 1)[0]
    out = {}
    for line in block.splitlines()[2:]:
        m = re.match(r"\s*([\d,]+)\s+[\d.]+%\s+[\d.]+%\s+(.*)$", line)
        assert m, line
        function, source, number = m.group(2).rsplit(":", 2)
        out[(function, source, int(number))] = int(m.group(1).replace(",", ""))
    return out


def test_profile_line_summary_rows(tmp_path, program, archive, db_url):  # noqa: F811
    doc = psrun(tmp_path / "runs", "--profile", "ITIMER_PROF", "--period", "1000", program, "30")
    file(archive, [doc])
    run = archive.run("app", 1)
    total = int(etree.parse(str(doc)).getroot().findtext(".//totalsamples"))
    lines = {
        (r["line_function"], r["line_file"], r["line"]): r["line_samples"]
        for r in run.rows
        if r.get("line_samples") is not None
    }
    expected = psprocess_line_summary(doc)
    assert lines == expected
    assert sum(lines.values()) == total
    assert any(f == "spin_b" and src.endswith("spin.c") and n > 0 for f, src, n in lines)  # -g: real lines
    # a query of samples by function sees only the function rows, one of line_samples only the line rows
    archive.close()
    env = {"PSBASE_DB": db_url}

    def mean_and_count(result: str, *by: str) -> list[dict]:
        """psbase query app RESULT --by ... --stat mean,count -f json: its rows."""
        args = [a for name in by for a in ("--by", name)]
        out = psbase("query", "app", result, *args, "--stat", "mean,count", "-f", "json", cwd=tmp_path, env=env)
        return json.loads(ok(out))["rows"]

    by_function = mean_and_count("samples", "function")
    assert sum(r["samples mean"] * r["samples count"] for r in by_function) == total
    assert None not in {r["function"] for r in by_function}
    by_line = mean_and_count("line_samples", "line_file", "line")
    per_line: dict[tuple[str, int], int] = {}
    for (_, src, n), k in expected.items():
        per_line[(src, n)] = per_line.get((src, n), 0) + k
    got = {(r["line_file"], r["line"]): r["line_samples mean"] * r["line_samples count"] for r in by_line}
    assert got == per_line


ZONE = "Asia/Kolkata"  # +05:30 all year: no daylight saving time to guess


def test_dates_filed_in_utc_from_another_time_zone(tmp_path, program, db_url):  # noqa: F811
    env = {**os.environ, "TZ": ZONE}
    before = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)
    out = tmp_path / "res"
    out.mkdir()
    p = run_tool("psrun", "-q", "-R", "-d", str(out), program, "2", env=env)
    assert p.returncode == 0, p.stderr
    (resource,) = out.glob("*.resource.xml")
    tz_out = tmp_path / "tz"
    tz_out.mkdir()
    p = run_tool("psrun", "-q", "-d", str(tz_out), "-e", "task-clock", program, "2", env=env)
    assert p.returncode == 0, p.stderr
    (count_tz,) = tz_out.glob("*.xml")
    after = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) + dt.timedelta(seconds=1)
    e = {"PSBASE_DB": db_url, "TZ": ZONE}
    ok(psbase("setup", "--psuite", "app", cwd=tmp_path, env=e))
    for doc in (count_tz, resource):
        p = psbase("input", "app", str(doc), cwd=tmp_path, env=e)
        assert p.returncode == 0, p.stderr
    s = Store(db_url)
    try:
        # the counting report's date is Kolkata's local time, without a zone
        text = etree.parse(str(count_tz)).getroot().findtext("date")
        local = dt.datetime.strptime(text, "%a %b %d %H:%M:%S %Y").replace(tzinfo=ZoneInfo(ZONE))
        got = s.run("app", 1).values["date"]
        assert got == local.astimezone(dt.timezone.utc).replace(tzinfo=None)
        assert before <= got <= after
        # the resource report's start time carries its offset (+0530)
        start_text = etree.parse(str(resource)).getroot().findtext("starttime")
        assert start_text.endswith("+0530")
        start = dt.datetime.strptime(start_text, "%Y-%m-%dT%H:%M:%S%z")
        got = s.run("app", 2).values["date"]
        assert got == start.astimezone(dt.timezone.utc).replace(tzinfo=None)
        assert before <= got <= after
    finally:
        s.close()


def test_cube_date_and_machine(tmp_path, program, archive):  # noqa: F811
    doc = psrun(tmp_path / "runs", "-e", "task-clock", program, "2")
    cube = tmp_path / "run.cubex"
    p = run_tool("psprocess", "--cube", str(cube), str(doc))
    assert p.returncode == 0, p.stderr
    # a Score-P style cube: the date under its own key, a named machine in the system tree
    scorep = tmp_path / "scorep.cubex"
    shutil.copy(cube, scorep)
    _rewrite_anchor(scorep, "Score-P::Creation date", "2025-03-04T05:06:07+02:00", "cluster-A")
    file(archive, [cube, scorep])
    text = etree.parse(str(doc)).getroot().findtext("date")
    local = dt.datetime.strptime(text, "%a %b %d %H:%M:%S %Y").astimezone()  # filed on this machine's zone
    first = archive.run("app", 1).values
    assert first["date"] == local.astimezone(dt.timezone.utc).replace(tzinfo=None)
    assert "machine" not in first or first["machine"] is None  # psuite names no machine
    second = archive.run("app", 2).values
    assert second["date"] == dt.datetime(2025, 3, 4, 3, 6, 7)
    assert second["machine"] == "cluster-A"


def _rewrite_anchor(path: Path, key: str, date: str, machine: str) -> None:
    """Replace the cube's date attribute by `key` and name its machine."""
    import tarfile

    with tarfile.open(path) as t:
        members = [(m, t.extractfile(m).read()) for m in t.getmembers()]
    out = []
    for m, data in members:
        if m.name == "anchor.xml":
            root = etree.fromstring(data)
            for a in root.iter("attr"):
                if a.get("key") == "date":
                    a.set("key", key)
                    a.set("value", date)
            for n in root.iter("systemtreenode"):
                if n.findtext("class") == "machine":
                    n.find("name").text = machine
            data = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
            m.size = len(data)
        out.append((m, data))
    import io

    with tarfile.open(path, "w") as t:
        for m, data in out:
            t.addfile(m, io.BytesIO(data))
