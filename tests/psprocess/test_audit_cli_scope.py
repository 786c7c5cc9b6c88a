"""Options given where they have no effect are refused with one line naming
the option and what it goes with (exit 2), before anything is written; the
combinations where they do work are kept."""

from __future__ import annotations

import re

import pytest

from tests.conftest import one_line_error, run_tool
from tests.psprocess.test_audit_cli_runs import audit_runs  # noqa: F401  (the fixture)

# (options, input, words the one line must hold: the option, then what it goes with)
REFUSED = [
    (["--rate", "100"], "count", ["--rate", "--calibrate"]),
    (["--calltree", "callers", "--depth", "2"], "callpath", ["--depth", "top-down or bottom-up"]),
    (["--depth", "2"], "callpath", ["--depth", "--calltree"]),
    (["--per-thread"], "callpath", ["--per-thread", "--calltree"]),
    (["--module", "w"], "prof", ["--module", "--gmon or --vprof"]),
    (["--write-config", "{tmp}/c.xml"], "count", ["--write-config", "--calibrate"]),
    (["--calltree", "-f", "json"], "callpath", ["--calltree", "text report", "-f json"]),
    (["--calltree", "-x"], "callpath", ["--calltree", "text report", "-f xml"]),
    (["--threshold", "5", "-f", "csv"], "prof", ["--threshold", "text report", "-f csv"]),
    (["--threshold", "5", "-c"], "prof", ["--threshold", "-c", "--calltree"]),
    (["--threshold", "5", "--gmon", "{tmp}/g.out"], "prof", ["--threshold", "--gmon", "-o FILE"]),
    (["--calltree", "--folded", "{tmp}/f.folded"], "callpath", ["--calltree", "--folded", "-o FILE"]),
    (["-f", "json", "--cube", "{tmp}/c.cubex"], "prof", ["-f json", "--cube", "-o FILE"]),
    (["-f", "html", "--html", "{tmp}/p.html"], "prof", ["-f html", "--html", "-o FILE"]),
    (["--calibrate", "--threshold", "5"], "count", ["--threshold", "--calibrate"]),
    (["--calibrate", "-m", "{tmp}/m.xml"], "count", ["-m", "--calibrate"]),
    (["--calibrate", "--no-standard-metrics"], "count", ["--no-standard-metrics", "--calibrate"]),
    (["--calibrate", "-c"], "count", ["-c", "--calibrate"]),
    (["--calibrate", "-f", "json"], "count", ["-f json", "--calibrate"]),
    (["--calibrate", "--calltree"], "count", ["--calltree", "--calibrate"]),
    (["--calibrate", "--gmon", "{tmp}/g.out"], "count", ["--gmon", "--calibrate"]),
    (["--calibrate", "--cube", "{tmp}/c.cubex"], "count", ["--cube", "--calibrate"]),
]


@pytest.mark.parametrize("options,doc,words", REFUSED, ids=[" ".join(o) for o, _, _ in REFUSED])
def test_an_option_without_effect_is_refused(audit_runs, tmp_path, options, doc, words):  # noqa: F811
    (tmp_path / "m.xml").write_text('<psmetrics class="PAPI"/>')  # a valid file: refused for its place only
    argv = [o.format(tmp=tmp_path) for o in options]
    p = run_tool("psprocess", *argv, audit_runs[doc])
    line = one_line_error(p, "psprocess")
    positions = [line.find(w) for w in words]
    assert all(i >= 0 for i in positions) and positions[0] == min(positions), (words, line)
    assert p.stdout == "" and sorted(f.name for f in tmp_path.iterdir()) == ["m.xml"]


# combinations where every option does something: they still work
KEPT = [
    (["--calltree", "bottom-up", "--depth", "1", "--threshold", "1"], "callpath", "Call Tree Report (bottom-up)"),
    (["--calltree", "callers", "--threshold", "1", "--per-thread"], "callpath", "Call Tree Report (callers)"),
    (["--calltree", "--depth", "3"], "callpath", "Call Tree Report (top-down)"),
    (["-c", "--calltree", "--threshold", "1"], "callpath", "Call Tree Report (top-down)"),
    (["--threshold", "1"], "prof", "PerfSuite Profile Report"),
    (["-f", "json", "-m", "{tmp}/m.xml", "--no-standard-metrics"], "count", '"schema"'),
    (["--calibrate", "--rate", "50"], "count", "Calibration for 50 samples per second"),
    (["--calibrate", "-f", "text"], "count", "Calibration for 100 samples per second"),
]


@pytest.mark.parametrize("options,doc,shown", KEPT, ids=[" ".join(o) for o, _, _ in KEPT])
def test_options_where_they_work_are_kept(audit_runs, tmp_path, options, doc, shown):  # noqa: F811
    (tmp_path / "m.xml").write_text('<psmetrics class="PAPI"/>')
    p = run_tool("psprocess", *[o.format(tmp=tmp_path) for o in options], audit_runs[doc])
    assert p.returncode == 0, p.stderr
    assert shown in p.stdout


def test_report_options_with_an_export_and_o_write_both(audit_runs, tmp_path):  # noqa: F811
    report, gmon = tmp_path / "report.txt", tmp_path / "gmon.out"
    p = run_tool("psprocess", "--threshold", "1", "--gmon", str(gmon), "-o", str(report), audit_runs["prof"])
    assert p.returncode == 0, p.stderr
    text = report.read_text()
    assert gmon.stat().st_size > 0 and text.startswith("PerfSuite Profile Report")
    assert re.search(r"^Minimum self % +: 1$", text, re.M), text  # the threshold did shape the report
    assert p.stdout == ""
