"""Where PAPI counts nothing (its perf_event component off: libpfm4 knows no PMU of the CPU), psuite says so
in one line naming the cause and the way out, and counts with perf_event by default; where PAPI counts, the
same requests count through PAPI.  Both branches run on the machine at hand (tests/conftest.py PAPI_OFF)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lxml import etree

from tests.conftest import PAPI_OFF

PSRUN = str(Path(sys.executable).parent / "psrun")
PSINV = str(Path(sys.executable).parent / "psinv")


def counted(doc: Path) -> dict[str, tuple[str, int]]:
    """A counting report's events: name -> (backend, count)."""
    root = etree.parse(str(doc)).getroot()
    return {e.get("name"): (data.get("version"), int(e.text)) for data in root.iter("hwpceventdata")
            for e in data.iter("hwpcevent")}


def test_psrun_with_papi_says_whether_papi_counts(tmp_path):
    p = subprocess.run([PSRUN, "--backend", "PAPI", "-e", "task-clock", "-d", str(tmp_path), "/bin/true"],
                       capture_output=True, text=True, timeout=120)
    said = "PAPI's perf_event component is off" in p.stderr
    if PAPI_OFF:
        assert said and "--backend perf_event counts it" in p.stderr, p.stderr
    else:
        assert not said, p.stderr
        (doc,) = tmp_path.glob("true*.xml")
        assert any(n.lower().endswith("task-clock") and c > 0 for n, (_, c) in counted(doc).items())


def test_default_backend_counts_where_papi_cannot(tmp_path):
    p = subprocess.run([PSRUN, "-e", "task-clock", "-d", str(tmp_path), "/bin/true"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    (doc,) = tmp_path.glob("true*.xml")
    backend, count = counted(doc)["task-clock"]
    assert count > 0 and backend == ("perf_event" if PAPI_OFF else backend)


def test_psinv_marks_papi_events_unavailable_with_the_reason():
    out = subprocess.run([PSINV, "-e"], capture_output=True, text=True, timeout=120).stdout
    papi = [line for line in out.splitlines() if line.split()[1:2] == ["PAPI"]]
    assert papi
    if PAPI_OFF:
        assert all(line.split()[3] == "no" for line in papi)
        assert any("disabled" in line for line in papi)
    else:
        assert any(line.split()[3] == "yes" for line in papi)
