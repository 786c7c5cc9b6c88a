"""The exports (--gmon, --vprof, --cube, --folded, --speedscope, --pprof,
--html) write their file instead of printing the report, as scripts rely
on (README, test_viewdoc): --help says so, no longer "also write", and -o
FILE writes the report as well."""

from __future__ import annotations

import re

import pytest

from tests.conftest import run_tool
from tests.psprocess.test_audit_cli_runs import audit_runs  # noqa: F401  (the fixture)

EXPORTS = {"--gmon": "gmon.out", "--vprof": "vmon.out", "--cube": "run.cubex", "--folded": "app.folded",
           "--speedscope": "app.json", "--pprof": "app.pb.gz", "--html": "page.html"}


def help_text() -> str:
    p = run_tool("psprocess", "--help")
    assert p.returncode == 0
    return " ".join(p.stdout.split())


def test_help_says_what_the_exports_do_to_the_report():
    text = help_text()
    assert "also write" not in text
    for flag in EXPORTS:
        entry = re.findall(rf"{flag} FILE\S* (.*?)(?= --?[a-z]|$)", text)[-1]  # the options list, after usage
        assert re.search(r"\bwrite\b", entry) and "also" not in entry, (flag, entry)
    assert "write their file instead of printing the report: standard output stays empty" in text
    assert "Add -o FILE to have the report written to FILE as well" in text
    assert "(-f, --threshold, --calltree, --depth, --per-thread) are refused with an export" in text


@pytest.mark.parametrize("flag", sorted(EXPORTS))
def test_an_export_prints_nothing_and_o_writes_the_report(audit_runs, tmp_path, flag):  # noqa: F811
    target = tmp_path / EXPORTS[flag]
    p = run_tool("psprocess", flag, str(target), audit_runs["callpath"])
    assert p.returncode == 0, p.stderr
    assert p.stdout == "" and target.stat().st_size > 0
    assert p.stderr.startswith(f"psprocess: wrote {target} (")
    printed = run_tool("psprocess", audit_runs["callpath"]).stdout
    report = tmp_path / "report.txt"
    p = run_tool("psprocess", flag, str(tmp_path / ("2" + EXPORTS[flag])), "-o", str(report),
                 audit_runs["callpath"])
    assert p.returncode == 0 and p.stdout == "", p.stderr
    assert report.read_text() == printed and printed.startswith("PerfSuite Profile Report")
