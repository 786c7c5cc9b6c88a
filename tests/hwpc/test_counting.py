"""The Python counting API over the C library, and the exclusive,
symlink-safe report writing of ps_hwpc_stop."""

from __future__ import annotations

import pytest

from psuite.errors import EventError
from psuite.hwpc import Counting
from tests.conftest import validate


def touch_pages(n: int) -> None:
    import mmap

    m = mmap.mmap(-1, n * 4096)
    for i in range(n):
        m[i * 4096] = 1
    m.close()


@pytest.mark.parametrize("backend", ["PAPI", "perf_event"])
def test_counts_page_faults_of_a_region(backend):
    with Counting(["page-faults", "task-clock"], backend=backend) as c:
        touch_pages(2000)
    faults = next(v for k, v in c.counts.items() if "FAULT" in k.upper())
    assert 2000 <= faults < 2600
    clock = next(v for k, v in c.counts.items() if "CLOCK" in k.upper())
    assert clock > 0


def test_unknown_event_raises():
    with pytest.raises(EventError, match="NOPE_EVENT"):
        Counting(["task-clock", "NOPE_EVENT"]).init()
    # A failed init leaves the library ready for the next one.
    with Counting(["task-clock"]) as c:
        backend = c.backend[0]
    assert list(c.counts) and backend in ("PAPI", "perf_event")


def test_stop_writes_a_valid_report_and_never_overwrites(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch")
    (tmp_path / "region.xml").symlink_to(victim)  # a planted symlink at the name
    c = Counting(["task-clock"])
    c.init()
    c.start()
    touch_pages(10)
    c.stop("region.xml")
    c.shutdown()
    assert victim.read_text() == "do not touch"
    saved = tmp_path / "region.1.xml"
    validate(saved, "hwpcreport-0.3.dtd")
