"""Audit: the algebra recomputes derived metrics from the combined operands
(CUBE 4.3 guide, derived metrics), perf's event names included, and says
so when a metric's formula is unknown instead of subtracting ratios.
Expected values are computed here from the psrun XML files themselves."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_tool

EVENTS = "task-clock,page-faults"  # perf's own names, which CubePL-style names exclude


def _numbers(doc: Path) -> dict[str, float]:
    """task-clock, page-faults and the wall clock in seconds, read from the
    document (wallclock ticks / (MHz x 1e6), as PerfSuite defines ticks)."""
    root = ET.parse(doc).getroot()
    out: dict[str, float] = {}
    for ev in root.iter("hwpcevent"):
        out[ev.get("name")] = float(ev.text)
    mhz = float(root.find("./machineinfo/cpuinfo/clockspeed").text)
    out["wall"] = float(root.findtext("wallclock")) / (mhz * 1e6)
    return out


def _run_twice(targets, workdir: Path) -> tuple[Path, Path]:
    docs = []
    for name, pages in (("a", "300"), ("b", "100")):  # different page faults: a non-zero difference
        p = run_tool("psrun", "-q", "-e", EVENTS, "-o", name, targets["work"], pages, "20", "0")
        assert p.returncode == 0, p.stderr
        [doc] = workdir.glob(f"{name}.*.xml")
        docs.append(doc)
    return docs[0], docs[1]


def _metrics(stdout: str) -> dict[str, dict]:
    return {m["name"]: m for m in json.loads(stdout)["metrics"]}


def test_diff_recomputes_perf_rates(targets, workdir):
    a, b = _run_twice(targets, workdir)
    na, nb = _numbers(a), _numbers(b)
    assert {"task-clock", "page-faults"} <= set(na), na
    p = run_tool("psprocess", "diff", "-f", "json", str(a), str(b))
    assert p.returncode == 0, p.stderr
    got = _metrics(p.stdout)
    wall = na["wall"] - nb["wall"]
    faults = na["page-faults"] - nb["page-faults"]
    clock = na["task-clock"] - nb["task-clock"]
    for name in ("CPUs_utilized", "Page_faults_per_second", "CPU_utilization_percent"):
        assert got[name]["kind"] == "POSTDERIVED", got[name]
    assert got["page_faults"]["total"] == faults
    assert got["Page_faults_per_second"]["total"] == pytest.approx(faults / wall, rel=1e-6)
    assert got["CPUs_utilized"]["total"] == pytest.approx(clock / (wall * 1e9), rel=1e-6)
    # not the difference of the two ratios, which the audit saw
    ratio_diff = na["page-faults"] / na["wall"] - nb["page-faults"] / nb["wall"]
    assert got["Page_faults_per_second"]["total"] != pytest.approx(ratio_diff, rel=1e-3)


def test_mean_and_cube_round_trip_keep_rates_derived(targets, workdir):
    a, b = _run_twice(targets, workdir)
    na, nb = _numbers(a), _numbers(b)
    for doc, cube in ((a, "a.cubex"), (b, "b.cubex")):
        p = run_tool("psprocess", "--cube", cube, str(doc))
        assert p.returncode == 0, p.stderr
    p = run_tool("psprocess", "mean", "-f", "json", "a.cubex", "b.cubex")
    assert p.returncode == 0, p.stderr
    got = _metrics(p.stdout)
    assert got["Page_faults_per_second"]["kind"] == "POSTDERIVED"
    # the mean's rate: mean faults over mean wall clock (the ratio of the means, as CUBE evaluates it)
    expected = (na["page-faults"] + nb["page-faults"]) / (na["wall"] + nb["wall"])
    assert got["Page_faults_per_second"]["total"] == pytest.approx(expected, rel=1e-6)


def test_unknown_formula_is_left_out_and_said(targets, workdir):
    """A -m metric psuite has no expression for in the cube is stored as
    values; diff leaves it out and says so on stderr."""
    a, b = _run_twice(targets, workdir)
    mine = workdir / "mine.xml"
    mine.write_text(
        '<psmetrics class="PAPI"><metric namespace="mine"><name>Faults per clock</name>'
        "<description>faults per ns</description><definition><apply><divide><ci>page-faults</ci>"
        "<ci>task-clock</ci></divide></apply></definition></metric></psmetrics>"
    )
    for doc, cube in ((a, "a.cubex"), (b, "b.cubex")):
        p = run_tool("psprocess", "-m", str(mine), "--cube", cube, str(doc))
        assert p.returncode == 0, p.stderr
    p = run_tool("psprocess", "diff", "-f", "json", "a.cubex", "b.cubex")
    assert p.returncode == 0, p.stderr
    got = _metrics(p.stdout)
    assert "Faults_per_clock" not in got
    assert "Page_faults_per_second" in got
    assert "Faults_per_clock left out" in p.stderr, p.stderr
    # merge replaces values, it does not subtract them: the ratio stays, the last input's
    p = run_tool("psprocess", "merge", "-f", "json", "a.cubex", "b.cubex")
    assert p.returncode == 0, p.stderr
    nb = _numbers(b)
    assert _metrics(p.stdout)["Faults_per_clock"]["total"] == pytest.approx(nb["page-faults"] / nb["task-clock"])


def test_profiles_of_different_events_are_refused(targets, workdir):
    for name, event, period in (("real", "ITIMER_REAL", "1000"), ("clock", "task-clock", "1000000")):
        p = run_tool("psrun", "-q", "--profile", event, "--period", period, "-o", name, targets["work"], "0", "30", "0")
        assert p.returncode == 0, p.stderr
    [real] = workdir.glob("real.*.xml")
    [clock] = workdir.glob("clock.*.xml")
    p = run_tool("psprocess", "mean", str(real), str(clock))
    line = one_line_error(p, "psprocess mean")
    assert "ITIMER_REAL" in line and "task-clock" in line, line


def test_rates_stored_as_values_by_older_psuite_are_left_out(targets, workdir):
    """A cube whose rates an older psuite stored as plain values (the
    audit's CPUs_utilized, "exclusive"): diff says it cannot recompute
    them instead of subtracting the ratios."""
    import numpy as np

    from psuite.analysis import experiments
    from psuite.formats.exporters import cube as cube_writer

    a, b = _run_twice(targets, workdir)
    for doc, cube in ((a, "a.cubex"), (b, "b.cubex")):
        exp = experiments.load(str(doc))
        for name in ("CPUs_utilized", "Page_faults_per_second"):
            m = exp.metric(name)
            values = np.broadcast_to(exp.derived_values(name), (len(exp.cnodes), len(exp.locations))).copy()
            m.kind, m.expression = "EXCLUSIVE", ""
            exp.values[name] = values
        cube_writer.write(exp, cube)
    p = run_tool("psprocess", "diff", "-f", "json", "a.cubex", "b.cubex")
    assert p.returncode == 0, p.stderr
    got = _metrics(p.stdout)
    assert "CPUs_utilized" not in got and "Page_faults_per_second" not in got
    assert "CPUs_utilized, Page_faults_per_second left out" in p.stderr, p.stderr
    # the counts themselves are still subtracted
    na, nb = _numbers(a), _numbers(b)
    assert got["page_faults"]["total"] == na["page-faults"] - nb["page-faults"]
