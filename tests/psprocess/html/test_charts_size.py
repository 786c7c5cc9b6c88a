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


def _pattern_rows(page) -> dict[str, dict[str, float]]:
    rows = page.js("""return Array.from(document.querySelectorAll('#pattern-table tr[data-pattern]')).map(r =>
        [r.dataset.pattern, +r.dataset.count, Array.from(r.querySelectorAll('td[data-figure]'))
          .filter(t => t.dataset.value !== '').map(t => [t.dataset.figure, +t.dataset.value])])""")
    return {name: {"count": count, **dict(figures)} for name, count, figures in rows}


def test_a_cubes_statistics_file_beside_it_is_shown(cube_page, driver, screenshots):
    """psuite's CUBE writer wrote threads.stat beside the cube (per metric,
    its per-location totals): CUBE reads it from there, and so does the
    page.  Time per location, main + compute: 1.1, 0.5, 0.5, 2.2, 0.5, 1.5
    -- mean 6.3 / 6 = 1.05, median (0.5 + 1.1) / 2 = 0.8; samples 12, 0,
    0, 15, 0, 3 -- mean 5, median 1.5."""
    page = load_page(driver, cube_page)
    page.open_tab("charts")
    rows = _pattern_rows(page)
    assert rows["time"]["count"] == 6 and rows["time"]["mean"] == pytest.approx(1.05)
    assert rows["time"]["median"] == pytest.approx(0.8) and rows["time"]["sum"] == pytest.approx(6.3)
    assert (rows["time"]["minimum"], rows["time"]["maximum"]) == (pytest.approx(0.5), pytest.approx(2.2))
    assert rows["samples"]["mean"] == pytest.approx(5) and rows["samples"]["median"] == pytest.approx(1.5)
    # each pattern on the axis of its own metric's unit
    titles = page.js("return Array.from(document.querySelectorAll('#pattern-stats .axis-title'))"
                     ".map(t => t.textContent)")
    assert {"Samples", "Time (sec)"} <= set(titles) and len(titles) == len(set(titles))
    page.assert_no_console_errors()


GUIDE_STAT = """PatternName MetricID Count Mean Median Minimum Maximum Sum Variance Quartil25 Quartil75
LateBroadcast      6   4 0.010 0.000031 0.000004 0.042856 0.042 0.000459
- cnode: 5 enter: 0.245877 exit: 0.256608 duration: 0.042856

WaitAtBarrier     18   20 0.018 0.006477 0.000002 0.065293 0.369 0.000698 0.000040 0.047409
- cnode: 14 enter: 0.192332 exit: 0.192378 duration: 0.000100
- cnode: 12 enter: 0.326120 exit: 0.335651 duration: 0.065293

Unmeasured  3 0
"""


@pytest.mark.parametrize("text", ["garbage\n", "", "PatternID MetricID Count\n"])
def test_stat_option_refuses_a_file_without_patterns(cube_page, tmp_path, text):
    """--stat names a file that holds no pattern (not a statistics file, or
    an empty one): one line naming it, exit 2, no page written."""
    stat = tmp_path / "none.stat"
    stat.write_text(text)
    out = tmp_path / "page.html"
    p = run_tool("psprocess", "--html", str(out), "--stat", str(stat), str(cube_page.with_suffix(".cubex")))
    assert p.returncode == 2, p.stderr
    [line] = p.stderr.splitlines()
    assert str(stat) in line and "no performance pattern" in line and "Traceback" not in p.stderr
    assert not out.exists()


def test_stat_option_shows_a_statistics_file(cube_page, tmp_path, driver):
    """--stat FILE: the user guide's example statistics file (appendix
    3.1), its figures and most severe instances as written; a pattern
    given by its count alone is listed, not drawn."""
    stat = tmp_path / "guide.stat"
    stat.write_text(GUIDE_STAT)
    out = tmp_path / "with-stat.html"
    p = run_tool("psprocess", "--html", str(out), "--stat", str(stat), str(cube_page.with_suffix(".cubex")))
    assert p.returncode == 0, p.stderr
    page = load_page(driver, out)
    page.open_tab("charts")
    rows = _pattern_rows(page)
    assert set(rows) == {"LateBroadcast", "WaitAtBarrier", "Unmeasured"}
    assert rows["WaitAtBarrier"] == {"count": 20, "mean": 0.018, "median": 0.006477, "minimum": 0.000002,
                                     "maximum": 0.065293, "sum": 0.369, "variance": 0.000698, "q1": 0.000040,
                                     "q3": 0.047409}
    assert rows["LateBroadcast"]["count"] == 4 and "q1" not in rows["LateBroadcast"]
    assert rows["Unmeasured"] == {"count": 0}
    assert page.count("#pattern-box .boxes") == 2
    instances = page.js("return Array.from(document.querySelectorAll('#pattern-instances tr[data-pattern]'))"
                        ".map(r => Array.from(r.children).map(c => c.textContent))")
    assert ["WaitAtBarrier", "12", "0.32612", "0.33565", "0.065293"] in instances
    page.assert_no_console_errors()
    p = run_tool("psprocess", "--stat", str(stat), str(cube_page.with_suffix(".cubex")))
    assert p.returncode == 2 and "--html" in p.stderr


def test_flame_graph_zooms_into_a_block_and_out(cube_page, driver):
    """Samples: compute 11 + 13 + 3 = 27, main's own 1 + 2 = 3, so
    compute's block is 27 / 30 of main's width; clicked, compute fills the
    width alone; clicked again, main is back on top."""
    page = load_page(driver, cube_page)
    page.select_metric("samples")
    page.open_tab("flame")
    widths = dict(page.js("return Array.from(document.querySelectorAll('#flame-plot svg.block'))"
                          ".map(b => [b.querySelector('text').textContent, +b.getAttribute('width')])"))
    assert widths["compute"] / widths["main"] == pytest.approx(27 / 30)
    page.js("document.querySelector('#flame-plot svg.block[data-cnode=\"1\"]').dispatchEvent(new MouseEvent('click'))")
    widths = dict(page.js("return Array.from(document.querySelectorAll('#flame-plot svg.block'))"
                          ".map(b => [b.querySelector('text').textContent, +b.getAttribute('width')])"))
    assert list(widths) == ["compute"] and "Zoomed into compute" in page.js(
        "return document.querySelector('#tab-flame p.note').textContent")
    page.js("document.querySelector('#flame-plot svg.block[data-cnode=\"1\"]').dispatchEvent(new MouseEvent('click'))")
    assert page.count("#flame-plot svg.block") == 2
    page.assert_no_console_errors()


COUNTING = "int main(void) { volatile long s = 0; for (long i = 0; i < 20000000; i++) s += i; return 0; }\n"


def test_counting_page_puts_each_unit_on_its_own_axis(tmp_path, driver, screenshots):
    """A counting report (psrun -e page-faults): the page faults (a count),
    the CPU and wall-clock seconds, the CPU utilization (%) and the page
    faults per second: four axes, each titled with its unit, so that no
    time shares an axis with a rate."""
    import subprocess

    (tmp_path / "loop.c").write_text(COUNTING)
    subprocess.run(["cc", "-O1", "-o", str(tmp_path / "loop"), str(tmp_path / "loop.c")], check=True)
    run = tmp_path / "run"
    run.mkdir()
    p = run_tool("psrun", "-q", "-d", str(run), "-e", "page-faults", str(tmp_path / "loop"))
    assert p.returncode == 0, p.stderr
    [doc] = run.glob("*.xml")
    out = tmp_path / "counts.html"
    assert run_tool("psprocess", "--html", str(out), str(doc)).returncode == 0
    page = load_page(driver, out)
    page.open_tab("charts")
    charts = page.js("""return Array.from(document.querySelectorAll('#tab-charts .plot'))
        .filter(p => p.querySelector('.bar') && !p.closest('#selection-stats'))
        .map(p => [Array.from(p.querySelectorAll('.bar')).map(b => b.dataset.name),
                   p.querySelector('.axis-title').textContent])""")
    by_axis = {axis: sorted(names) for names, axis in charts}
    assert by_axis == {"count": ["page-faults"], "sec": ["CPU time (seconds)", "Wall clock time (seconds)"],
                       "%": ["CPU utilization (%)"], "/s": ["Page faults per second"]}
    screenshot(driver, screenshots, "counts-axes")
    page.assert_no_console_errors()


def _thread_colours(page) -> dict[int, tuple[int, ...]]:
    import re

    rows = page.js("return Array.from(document.querySelectorAll('[data-tree=system] .row[data-location]'))"
                   ".map(r => [+r.dataset.location, getComputedStyle(r.querySelector('.sq')).backgroundColor])")
    return {loc: tuple(int(x) for x in re.findall(r"\d+", c)[:3]) for loc, c in rows}


def _set(page, key: str, value: str) -> None:
    page.js("const i = document.getElementById('scale-' + arguments[0]); i.value = arguments[1];"
            "i.dispatchEvent(new Event('change'));", key, value)


def test_colour_scale_user_range_and_thresholds(cube_page, driver, screenshots):
    """compute's time per thread: 1.0, 0.5, 0.5, 2.0, 0.5, 1.5.  A user
    range 1 to 2 (CUBE's min/max values): 1.0 at the low end (blue), 2.0 at
    the high end (red), 1.5 half way (green), 0.5 outside it (grey).  White
    below 60 % of the scale: 1.0 and 1.5 white, 2.0 still red.  Lighter
    below 100 % instead: 1.5 (50 % of the scale) half way from green to
    white, 1.0 (0 %) white, 2.0 (100 %) as it was."""
    page = load_page(driver, cube_page)
    page.select_metric("time")
    page.click_call("compute")
    page.toggle_rank(0)
    page.toggle_rank(1)
    _set(page, "min", "1")
    _set(page, "max", "2")
    c = _thread_colours(page)
    assert c == {0: (0, 0, 255), 1: (160, 160, 160), 2: (160, 160, 160), 3: (255, 0, 0), 4: (160, 160, 160),
                 5: (0, 255, 0)}
    assert "(u)" in page.js("return document.getElementById('scale-note').textContent")
    metric = page.js("return getComputedStyle(document.querySelector("
                     "'[data-tree=metric] .row[data-metric=time] .sq')).backgroundColor")
    assert metric != "rgb(160, 160, 160)"  # the metric tree keeps its own scale (as CUBE's min/max values)
    _set(page, "white", "60")
    c = _thread_colours(page)
    assert (c[0], c[5], c[3]) == ((255, 255, 255), (255, 255, 255), (255, 0, 0))
    _set(page, "white", "")
    _set(page, "light", "100")
    c = _thread_colours(page)
    assert (c[0], c[5], c[3]) == ((255, 255, 255), (128, 255, 128), (255, 0, 0))
    screenshot(driver, screenshots, "colour-scale")
    _set(page, "light", "")
    _set(page, "min", "")  # no user range: the tree's own scale again (the machine's 6.0 at the top)
    c = _thread_colours(page)
    assert c[1] != (160, 160, 160)
    page.assert_no_console_errors()


def test_values_stored_sparse_read_back_exactly(tmp_path, driver):
    """A cube whose metrics take each of the view's encodings: counts
    (varints, a negative one too), halves (float32), tenths (float64): the
    system tree shows each rank's value as the cube holds it.  A cube holds
    no NaN; a value that is no number (listed apart) is shown as "-", in a
    view encoded here as viewdoc encodes."""
    from psuite.formats.exporters import cube
    from psuite.model.experiment import Experiment, Location, Metric, Region

    exp = Experiment(attributes={"command": "./enc"})
    exp.add_metric(Metric("counts", "Counts", "occ", "INT64"))
    exp.add_metric(Metric("halves", "Halves", "sec", "DOUBLE"))
    exp.add_metric(Metric("tenths", "Tenths", "sec", "DOUBLE"))
    exp.add_region(Region("main"))
    exp.add_cnode(0, None)
    for r in range(4):
        exp.locations.append(Location(node="n", process=f"rank {r}", rank=r))
    exp.values["counts"] = np.array([[0, 7, -3, 2**40]], dtype=np.int64)
    exp.values["halves"] = np.array([[0.5, 0.0, 2.25, 1.0]])
    exp.values["tenths"] = np.array([[0.1, 0.7, 0.0, 0.3]])
    path = str(tmp_path / "enc.cubex")
    cube.write(exp, path)
    out = tmp_path / "enc.html"
    assert run_tool("psprocess", "--html", str(out), path).returncode == 0
    from tests.psprocess.html.test_viewdoc import embedded_view

    stored = embedded_view(out.read_text())["values"]
    assert "int" in stored["counts"]["exclusive"] and "f32" in stored["halves"]["exclusive"]
    assert "f64" in stored["tenths"]["exclusive"]
    page = load_page(driver, out)
    shown = {}
    for metric in ("counts", "halves", "tenths"):
        page.select_metric(metric)
        shown[metric] = page.js("return Array.from(document.querySelectorAll('[data-tree=system] .row[data-rank]'))"
                                ".map(r => r.querySelector('.val').textContent)")
    assert shown == {"counts": ["0", "7", "-3", f"{2**40:,}"], "halves": ["0.5", "0", "2.25", "1"],
                     "tenths": ["0.1", "0.7", "0", "0.3"]}
    page.assert_no_console_errors()

    from psuite.psprocess.html import page as html_page
    from psuite.psprocess.html import viewdoc
    from tests.psprocess.html.pages import hand_view

    view = hand_view(metrics=[{"name": "x", "display": "x", "unit": "sec", "description": "", "parent": None,
                               "integer": False, "derived": False}],
                     regions=[{"name": "main", "module": "", "file": None, "line": None}],
                     cnodes={"region": [0], "parent": [-1], "line": [-1]},
                     locations=[{"machine": "m", "node": "n", "rank": r, "thread": 0, "label": f"rank {r}"}
                                for r in range(3)],
                     values={"x": {"exclusive": viewdoc.encode(np.array([[0.1, np.nan, 0.2]])), "inclusive": None}},
                     sources=[])
    (tmp_path / "null.html").write_text(html_page.render(view), encoding="utf-8")
    page = load_page(driver, tmp_path / "null.html")
    assert page.js("return Array.from(document.querySelectorAll('[data-tree=system] .row[data-rank]'))"
                   ".map(r => r.querySelector('.val').textContent)") == ["0.1", "-", "0.2"]
    page.assert_no_console_errors()
