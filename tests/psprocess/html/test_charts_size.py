"""The report's charts and statistics in a real browser (Debian's
headless chromium through Selenium), on pages the real `psprocess --html`
writes from a CUBE file made here, whose every value is known: the
statistics of the selection (CUBE's system box plot: the selected metric
at the selected call path over the selected system node) with CUBE's
subsets, where an MPI helper thread that took no sample is left out of the
non-idle threads' mean; the flame graph's zoom; values stored sparse and
read back exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_tool
from tests.psprocess.html.pages import load_page, screenshot

# Two ranks of three threads each; threads 1 and 2 are MPI helper threads.  Rank 0's helpers took no
# sample; rank 1's thread 2 took 3.  Per location (r0t0, r0t1, r0t2, r1t0, r1t1, r1t2):
SAMPLES = {"main": [1, 0, 0, 2, 0, 0], "compute": [11, 0, 0, 13, 0, 3]}
TIME = {"main": [0.1, 0.0, 0.0, 0.2, 0.0, 0.0], "compute": [1.0, 0.5, 0.5, 2.0, 0.5, 1.5]}


def _experiment():
    from psuite.model.experiment import Experiment, Location, Metric, Region

    exp = Experiment(attributes={"command": "./app"})
    exp.add_metric(Metric("samples", "Samples", "occ", "UINT64"))
    exp.add_metric(Metric("time", "Time", "sec", "DOUBLE"))
    exp.add_region(Region("main"))
    exp.add_region(Region("compute"))
    root = exp.add_cnode(0, None)
    exp.add_cnode(1, root)
    for rank in (0, 1):
        for t in range(3):
            exp.locations.append(Location(node=f"node{rank}", process=f"rank {rank}", rank=rank,
                                          thread=f"thread {t}", thread_rank=t))
    exp.values["samples"] = np.array([SAMPLES["main"], SAMPLES["compute"]], dtype=np.int64)
    exp.values["time"] = np.array([TIME["main"], TIME["compute"]])
    return exp


@pytest.fixture(scope="module")
def cube_page(tmp_path_factory) -> Path:
    from psuite.formats.exporters import cube

    d = tmp_path_factory.mktemp("charts")
    path = str(d / "threads.cubex")
    cube.write(_experiment(), path)
    out = d / "threads.html"
    p = run_tool("psprocess", "--html", str(out), path)
    assert p.returncode == 0, p.stderr
    return out


def _stats(page) -> dict[str, float]:
    return {k: float(v) for k, v in page.js(
        "return Array.from(document.querySelectorAll('#stat-table tr')).map(r => [r.dataset.stat, r.dataset.value])")}


def _subset(page, name: str) -> None:
    page.js("const s = document.getElementById('stat-subset'); s.value = arguments[0];"
            "s.dispatchEvent(new Event('change'));", name)


def test_statistics_of_the_selection_with_cubes_subsets(cube_page, driver, screenshots):
    """compute's inclusive time (it is a leaf) over the machine's six
    threads: all 1.0, 0.5, 0.5, 2.0, 0.5, 1.5 -- mean 6.0 / 6 = 1.0, median
    (0.5 + 1.0) / 2 = 0.75; every one visited (non-zero); the non-idle
    threads (samples > 0: r0t0, r1t0, r1t2) 1.0, 2.0, 1.5 -- mean and
    median 1.5: the helper threads' waiting no longer pulls them down.
    Rank 1 selected: all 2.0, 0.5, 1.5 (mean 4 / 3, median 1.5); non-idle
    2.0, 1.5 (mean and median 1.75)."""
    page = load_page(driver, cube_page)
    page.select_metric("time")
    page.click_call("compute")
    page.open_tab("charts")
    title = page.js("return document.querySelector('#selection-stats h3').textContent")
    assert "Time (sec) of compute (inclusive)" in title
    st = _stats(page)
    assert st["count"] == 6 and st["mean"] == pytest.approx(1.0) and st["median"] == pytest.approx(0.75)
    assert st["minimum"] == 0.5 and st["maximum"] == 2.0 and st["sum"] == pytest.approx(6.0)
    _subset(page, "visited")
    assert _stats(page)["count"] == 6
    _subset(page, "busy")
    st = _stats(page)
    assert st["count"] == 3 and st["mean"] == pytest.approx(1.5) and st["median"] == pytest.approx(1.5)
    box = page.js("const g = document.querySelector('#selection-box .boxes');"
                  "return [+g.dataset.n, +g.dataset.mean, +g.dataset.median];")
    assert box == [3, pytest.approx(1.5), pytest.approx(1.5)]
    # the distribution: every non-idle thread in one of its bins
    assert sum(page.js("return Array.from(document.querySelectorAll('#selection-distribution .bar'))"
                       ".map(b => +b.dataset.count)")) == 3
    screenshot(driver, screenshots, "selection-statistics")
    page.open_tab("trees")
    page.click_system_rank(1)
    page.open_tab("charts")  # redrawn: the selection changed
    st = _stats(page)
    assert st["count"] == 2 and st["mean"] == pytest.approx(1.75) and st["median"] == pytest.approx(1.75)
    _subset(page, "all")
    st = _stats(page)
    assert st["count"] == 3 and st["mean"] == pytest.approx(4 / 3) and st["median"] == pytest.approx(1.5)
    # samples of main, expanded (its exclusive samples): visited are the threads with a sample there
    page.open_tab("trees")
    page.select_metric("samples")
    page.click_call("main")
    page.js("document.querySelector('[data-tree=system] .row[data-sys=machine] .name').click()")
    page.open_tab("charts")
    _subset(page, "visited")
    st = _stats(page)
    assert "Samples of main (exclusive)" in page.js("return document.querySelector('#selection-stats h3').textContent")
    assert st["count"] == 2 and st["mean"] == pytest.approx(1.5)  # 1 and 2 samples
    page.assert_no_console_errors()
