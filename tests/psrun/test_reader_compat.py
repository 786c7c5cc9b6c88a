"""The C library's reports read as the original PerfSuite wrote them, by
the real readers that are stricter than the DTD (../shared/README.md):

- Eclipse PTP parses <date> with SimpleDateFormat("EEE MMM dd HH:mm:ss
  yyyy"), i.e. ctime() with a zero-padded day;
- TAU's ParaProf finds "<!DOCTYPE hwpc" near the top, divides <wallclock>
  by <clockspeed> (ticks), starts a thread of data at each <thread> and
  parses it as an integer, keyed with <pid>;

and every document stays valid against hwpcreport-0.3.dtd."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.conftest import run_tool, validate
from tests.psrun.test_psrun import reports

CTIME = "%a %b %d %H:%M:%S %Y"  # what <date> holds; PTP's "EEE MMM dd HH:mm:ss yyyy"
DOCTYPE = '<!DOCTYPE hwpcreport SYSTEM "/usr/share/perfsuite/dtds/pshwpc/hwpcreport-0.3.dtd">'
NAP_MS = 400
THREADS = 3


def read_as_the_originals_readers(path: Path) -> dict:
    """What PTP and TAU take from a report, asserting on the way that they
    can take it; the document is also valid against the DTD."""
    lines = path.read_text().splitlines()
    assert DOCTYPE in lines[:3], lines[:3]
    assert any(line.startswith("<!DOCTYPE hwpc") for line in lines[:10])  # ParaProf's test, as it reads
    root = validate(path, "hwpcreport-0.3.dtd")

    date = root.find("date").text
    assert date == date.strip() and re.fullmatch(r"[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d \d{4}", date), date
    stamp = time.mktime(time.strptime(date, CTIME))  # local time, as ctime() writes it
    assert abs(stamp - time.time()) < 600, date

    pid, thread = root.findtext("pid"), root.find("thread").text
    assert re.fullmatch(r"\d+", pid) and re.fullmatch(r"\d+", thread), (pid, thread)  # Integer.parseInt

    wall = root.find("wallclock")
    assert wall.get("units") == "ticks"  # the clock speed is known here (the VM says 2596 MHz)
    assert re.fullmatch(r"\d+", wall.text), wall.text  # Long.parseLong
    mhz = root.find("machineinfo/cpuinfo/clockspeed")
    assert mhz.get("units") == "MHz" and re.fullmatch(r"\d+\.\d+", mhz.text), mhz.text
    assert float(mhz.text) > 0
    return {"root": root, "pid": int(pid), "thread": int(thread),
            "seconds": int(wall.text) / (float(mhz.text) * 1e6)}


def run(workdir: Path, naps: str, *args: str) -> tuple[list[Path], float, float]:
    """psrun on naps; its reports, main's own timing of itself (inside the
    measured interval) and this test's timing of psrun (around it)."""
    began = time.monotonic()
    p = run_tool("psrun", "-q", *args, naps, str(THREADS), str(NAP_MS))
    elapsed = time.monotonic() - began
    assert p.returncode == 0, p.stderr
    [inner] = [float(line.split()[1]) for line in p.stdout.splitlines() if line.startswith("main ")]
    return reports(workdir), inner, elapsed


def assert_wall_time(seconds: float, inner: float, outer: float) -> None:
    """ticks / (clockspeed x 10^6) is the run's wall time: at least what the
    program timed of itself (to 0.1 %), at most what the test timed around
    psrun (which also starts Python; a bound that holds however loaded the
    machine is)."""
    assert inner * (1 - 1e-3) <= seconds <= outer, (inner, seconds, outer)


@pytest.mark.parametrize("mode", [["-e", "task-clock"], ["--profile", "ITIMER_PROF", "--period", "1000"]],
                         ids=["counting", "profiling"])
def test_process_report(targets, workdir, mode):
    found, inner, outer = run(workdir, targets["naps"], *mode)
    [report] = found
    doc = read_as_the_originals_readers(report)
    assert doc["thread"] == 0  # the process total
    assert_wall_time(doc["seconds"], inner, outer)
    assert ".t" not in report.name.split(".", 2)[2]  # no thread tag in the name of the total
    # psuite reads its own ticks back to the same seconds
    out = run_tool("psprocess", "-f", "json", str(report))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["reports"][0]["wallclock"] == pytest.approx(doc["seconds"], rel=1e-6)


@pytest.mark.parametrize("mode", [["-e", "task-clock"], ["--profile", "ITIMER_PROF", "--period", "1000"]],
                         ids=["counting", "profiling"])
def test_per_thread_reports(targets, workdir, mode):
    found, inner, outer = run(workdir, targets["naps"], "-p", *mode)
    docs = {path: read_as_the_originals_readers(path) for path in found}
    assert len(docs) == 1 + 1 + THREADS  # the total, main, the workers
    keys = [(d["pid"], d["thread"]) for d in docs.values()]
    assert len(set(keys)) == len(keys), keys  # TAU keys threads by (pid, thread): none collide
    assert len({pid for pid, _ in keys}) == 1
    assert sorted(thread for _, thread in keys) == list(range(0, THREADS + 2))  # total 0, threads from 1
    for path, d in docs.items():
        tag = re.search(r"\.t(\d+)\.", path.name)
        assert (int(tag.group(1)) if tag else 0) == d["thread"], path.name  # .t<N>. names <thread>N
    [total] = [d for d in docs.values() if d["thread"] == 0]
    assert "process total" in total["root"].findtext("annotation")
    assert_wall_time(total["seconds"], inner, outer)
    for d in docs.values():
        # every thread slept NAP_MS, and none outlived the process
        assert NAP_MS / 1000 * (1 - 1e-3) <= d["seconds"] <= total["seconds"] * (1 + 1e-3), d["thread"]
    [main] = [d for d in docs.values() if d["thread"] == 1]
    assert_wall_time(main["seconds"], inner, outer)
