"""psrun -R: the resource report of a program with known memory use, read
back by psprocess; the way the program ended; option errors."""

from __future__ import annotations

import json
import signal
import subprocess

from lxml import etree

from tests.conftest import one_line_error, run_tool

PAGES = 20000  # 78 MiB touched


def resource_report(directory):
    [path] = directory.glob("*.resource.xml")
    return path


def test_resource_report_of_a_known_program(targets, workdir):
    p = run_tool("psrun", "-q", "-R", "--interval", "0.1", "-e", "task-clock", targets["work"], str(PAGES), "300",
                 "3")
    assert p.returncode == 3, p.stderr
    path = resource_report(workdir)
    root = etree.parse(str(path)).getroot()
    assert root.tag == "resourcereport"
    for tag in ("pid", "starttime", "exitcode", "samples", "loadavgs", "maxloads", "maxrss", "maxvm", "cputime",
                "faults", "swaps"):
        assert root.find(tag) is not None, tag
    doc = json.loads(run_tool("psprocess", "-f", "json", str(path)).stdout)
    assert doc["schema"] == "psuite.resource/1"
    r = doc["reports"][0]
    assert (r["exit_type"], r["exit_code"]) == ("exit", 3)
    assert PAGES * 4 / 1024 <= r["maxrss_mb"] <= PAGES * 4 / 1024 + 60  # the pages, plus the program's own
    assert r["maxvm_mb"] >= r["maxrss_mb"]
    assert r["minor_faults"] >= PAGES
    assert r["samples"] >= 2 and r["frequency"] == 10
    assert sum(r["loads"].values()) + r["load_outofrange"] == r["samples"]
    assert r["usertime"] + r["systemtime"] > 0.2
    text = run_tool("psprocess", str(path)).stdout
    assert "Peak resident set" in text and "exit status 3" in text


def test_resource_report_of_a_killed_program(targets, workdir):
    """With -R psrun waits for the program, then ends as it ended: killed
    by the same signal, as the bare program (returncode -N), and says so."""
    bare = subprocess.run([targets["killself"], str(int(signal.SIGTERM))], capture_output=True, text=True)
    p = run_tool("psrun", "-q", "-R", "-e", "task-clock", targets["killself"], str(int(signal.SIGTERM)))
    assert (p.returncode, p.stdout) == (bare.returncode, bare.stdout) == (-signal.SIGTERM, bare.stdout)
    assert p.stderr.splitlines() == [*bare.stderr.splitlines(), f"psrun: {targets['killself']} was killed by SIGTERM"]
    root = etree.parse(str(resource_report(workdir))).getroot()
    code = root.find("exitcode")
    assert (code.get("type"), code.text) == ("signal", str(int(signal.SIGTERM)))


def test_resource_option_errors(targets, workdir):
    assert "goes with -R" in one_line_error(run_tool("psrun", "--interval", "1", targets["work"]), "psrun")
    assert "--interval" in one_line_error(run_tool("psrun", "-R", "--interval", "0", targets["work"]), "psrun")
