"""Real documents for the audit's CLI tests (test_audit_cli_*.py), made by
psrun from one small program: a counting report, flat profiles of
ITIMER_PROF (two runs, and one at another period), ITIMER_REAL and
task-clock, a call-path profile and a resource report."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import run_tool

SOURCE = r"""
volatile double sink;
__attribute__((noinline)) void work(long n) { for (long i = 0; i < n; i++) sink += (double)i * 1.0000001; }
int main(void) { work(60000000L); return 0; }
"""

RUNS = {  # name -> psrun options
    "count": [],
    "prof": ["--profile", "ITIMER_PROF"],
    "prof2": ["--profile", "ITIMER_PROF"],
    "prof_1ms": ["--profile", "ITIMER_PROF", "--period", "1000"],
    "real": ["--profile", "ITIMER_REAL"],
    "taskclock": ["--profile", "task-clock", "--period", "1000000"],
    "callpath": ["--callpath"],
    "resource": ["-R"],
}


@pytest.fixture(scope="session")
def audit_runs(tmp_path_factory) -> dict[str, str]:
    """name -> the document psrun wrote (for "resource": the resource report)."""
    out = tmp_path_factory.mktemp("audit_cli")
    (out / "w.c").write_text(SOURCE)
    exe = out / "w"
    subprocess.run(["cc", "-O1", "-g", "-o", str(exe), str(out / "w.c")], check=True)
    docs = {}
    for name, options in RUNS.items():
        p = run_tool("psrun", "-q", "-o", name, "-d", str(out), *options, str(exe))
        assert p.returncode == 0, p.stderr
        pattern = f"{name}.*.resource.xml" if name == "resource" else f"{name}.*[0-9].*.xml"
        found = [f for f in sorted(out.glob(pattern)) if not f.name.endswith((".callpaths.xml", ".resource.xml"))
                 or name == "resource"]
        assert len(found) == 1, (name, found)
        docs[name] = str(found[0])
    return docs


def sampling(path: str) -> tuple[str, int, int]:
    """(event, threshold, total samples) of a raw profile, read with lxml."""
    root = etree.parse(path).getroot()
    event = root.find(".//profileinfo/profileevent")
    return event.get("name"), int(event.findtext("threshold")), int(root.findtext(".//totalsamples"))


def test_the_runs_are_of_the_kinds_the_tests_need(audit_runs):
    assert etree.parse(audit_runs["count"]).getroot().get("mode") != "profile"
    assert sampling(audit_runs["prof"])[:2] == ("ITIMER_PROF", 10000)
    assert sampling(audit_runs["prof_1ms"])[:2] == ("ITIMER_PROF", 1000)
    assert sampling(audit_runs["real"])[0] == "ITIMER_REAL"
    assert sampling(audit_runs["taskclock"])[:2] == ("task-clock", 1000000)
    assert Path(audit_runs["callpath"].replace(".xml", ".callpaths.xml")).is_file()
    assert etree.parse(audit_runs["resource"]).getroot().tag == "resourcereport"
