"""A bad -m metrics file (missing, a directory, not XML, not psmetrics, an
unknown event) is refused with one line and exit 2 whatever the inputs
are, before any work: no report printed, no output file written."""

from __future__ import annotations

import csv
import io

import pytest

from tests.conftest import one_line_error, run_tool
from tests.psprocess.test_audit_cli_runs import audit_runs  # noqa: F401  (the fixture)

GOOD = ('<psmetrics class="PAPI"><metric namespace="mine"><name>Half the CPU time</name><description>cpu/2'
        "</description><definition><apply><divide><ci>cpusecs</ci><cn>2</cn></divide></apply></definition>"
        "</metric></psmetrics>")
BAD = {"missing": None, "directory": "", "not-xml": "this is not XML <",
       "other-root": "<ps_hwpc_eventlist/>",
       "unknown-event": GOOD.replace("cpusecs", "NO_SUCH_EVENT")}


def metric_file(tmp_path, kind: str) -> str:
    path = tmp_path / f"{kind}.xml"
    if kind == "directory":
        path.mkdir()
    elif BAD.get(kind) is not None or kind == "good":
        path.write_text(GOOD if kind == "good" else BAD[kind])
    return str(path)


# (input, extra options): every kind of input and mode that used to ignore -m
CASES = {"profile": ("prof", []), "resource": ("resource", []), "calltree": ("callpath", ["--calltree"]),
         "combined profiles": ("prof", ["-c"]), "counting": ("count", [])}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_metric_file_is_refused_for_every_input(audit_runs, tmp_path, case, kind):  # noqa: F811
    doc, options = CASES[case]
    path = metric_file(tmp_path, kind)
    out = tmp_path / "report.txt"
    p = run_tool("psprocess", "-m", path, *options, "-o", str(out), audit_runs[doc])
    line = one_line_error(p, "psprocess")
    assert path in line or f"{kind}.xml" in line, line
    assert p.stdout == "" and not out.exists()


@pytest.mark.parametrize("export", ["--html", "--gmon", "--cube"])
def test_a_missing_metric_file_stops_an_export_before_it_is_written(audit_runs, tmp_path, export):  # noqa: F811
    target = tmp_path / ("out.cubex" if export == "--cube" else "out")
    p = run_tool("psprocess", "-m", str(tmp_path / "nosuch.xml"), export, str(target), audit_runs["prof"])
    assert "nosuch.xml: no such file" in one_line_error(p, "psprocess")
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a temporary file


def test_a_good_metric_file_still_works_with_every_input(audit_runs, tmp_path):  # noqa: F811
    path = metric_file(tmp_path, "good")
    for case, (doc, options) in sorted(CASES.items()):
        p = run_tool("psprocess", "-m", path, *options, audit_runs[doc])
        assert p.returncode == 0, (case, p.stderr)
    # on a counting report the metric is computed: half the user and system time psrun wrote
    from lxml import etree

    root = etree.parse(audit_runs["count"]).getroot()
    cpu = float(root.findtext("cputime/usertime")) + float(root.findtext("cputime/systemtime"))
    p = run_tool("psprocess", "-m", path, "--no-standard-metrics", "-f", "csv", audit_runs["count"])
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    [row] = [r for r in rows if r["name"] == "Half the CPU time"]
    assert row["kind"] == "metric" and float(row["value"]) == pytest.approx(cpu / 2, rel=1e-9)
