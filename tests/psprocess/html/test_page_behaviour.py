"""The page's own behaviour in a real browser (Debian's headless chromium
through Selenium), on small views written by hand whose every value is
known here: no chart control reaches the network, names reach the charts
as text (never as markup), collapsing an ancestor of a selection moves the
selection to it (as CUBE does), the system tree's colours follow CUBE's
scale, "% of the selection" compares like with like, and a source file
that cannot be read still shows its lines' samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from psuite.psprocess.html.page import render
from tests.psprocess.html.pages import exercise, hand_view, load_page, screenshot


def _metric(name: str, unit: str = "occ", integer: bool = True, parent: int | None = None,
            derived: bool = False) -> dict:
    return {"name": name, "display": name, "unit": unit, "description": "", "parent": parent,
            "integer": integer, "derived": derived}


def _location(rank: int, thread: int, machine: str = "m", node: str = "n") -> dict:
    return {"machine": machine, "node": node, "rank": rank, "thread": thread,
            "label": f"{node}/rank {rank}/thread {thread}"}


def _open(driver, tmp_path: Path, view: dict, name: str = "page"):
    path = tmp_path / f"{name}.html"
    path.write_text(render(view), encoding="utf-8")
    return load_page(driver, path)


def _sel(page, tree: str) -> str:
    return page.js(f"return document.querySelector('[data-tree={tree}] .row.sel .name').textContent")


def _shown(page, tree: str, attribute: str) -> dict[str, str]:
    """A tree's rows: their data attribute -> data-value as written ("" for "-")."""
    return dict(page.js(
        f"return Array.from(document.querySelectorAll('[data-tree={tree}] .row'))"
        f".map(r => [r.dataset.{attribute}, r.dataset.value])"))


# -- 1: nothing in a chart leads off the page -----------------------------------------


OFF_PAGE = ("cloud", "share", "plotly", "chart studio", "edit in", "http")


@pytest.mark.parametrize("changes", [{}, {"kind": "counts"}, {"difference": True, "kind": "difference"}],
                         ids=["cube", "counts", "difference"])
def test_no_chart_control_leads_off_the_page(changes, tmp_path, driver, screenshots, request):
    """Every chart tab drawn (the page's own SVG): a chart's only control
    saves it as an SVG file in the browser; no link, no reference to any
    address, no button that would send the chart anywhere."""
    page = _open(driver, tmp_path, hand_view(**changes))
    tabs = [t for t in ("flame", "charts") if page.count(f"nav button[data-tab='{t}']")]
    assert "charts" in tabs
    for tab in tabs:
        page.open_tab(tab)
    assert page.count(".plot svg.chart") >= 2  # charts drawn
    buttons = page.js("return Array.from(document.querySelectorAll('.plot button')).map(b => b.textContent)")
    assert buttons and set(buttons) == {"save SVG"}
    for word in OFF_PAGE:
        assert word not in page.js("return Array.from(document.querySelectorAll('.plot'))"
                                   ".map(p => p.outerHTML).join('').toLowerCase()"), word
    assert page.count(".plot a") == 0
    refs = page.js("return Array.from(document.querySelectorAll('.plot [href], .plot [src]'))"
                   ".map(e => e.getAttribute('href') || e.getAttribute('src'))")
    assert all(r.startswith("data:image/png;base64,") for r in refs), refs  # the heat map's cells only
    screenshot(driver, screenshots, f"charts-offline-{request.node.callspec.id}")
    page.assert_no_console_errors()


# -- 5: names are text, not markup ------------------------------------------------------


MARKUP = ["main<b>", '<a href="https://example.com/x">link</a>', "x & y <i>z</i>", "it's \"quoted\""]


def test_names_reach_the_charts_as_text(tmp_path, driver, screenshots):
    """Functions named with markup: the flame graph's blocks, the charts'
    axes and box names show the names as they are; nothing is bold or
    italic, no link appears."""
    n = len(MARKUP)
    view = hand_view(
        metrics=[_metric("samples")],
        regions=[{"name": "app<u>", "module": "", "file": None, "line": None}]
        + [{"name": f, "module": "", "file": None, "line": None} for f in MARKUP],
        cnodes={"region": list(range(n + 1)), "parent": [-1] + [0] * n, "line": [-1] * (n + 1)},
        locations=[_location(0, 0, node="n<b>1</b>"), _location(1, 0, node="n2")],
        values={"samples": {"exclusive": [0, 0] + [v for i in range(n) for v in (10 * (i + 1), 5 * (i + 2))],
                            "inclusive": None}},
        sources=[],
    )
    page = _open(driver, tmp_path, view, "markup")
    page.open_tab("flame")
    page.open_tab("charts")
    for tab in ("flame", "charts"):
        page.js(f"document.querySelector('nav button[data-tab={tab}]').click()")
        texts = page.js(f"return Array.from(document.querySelectorAll('#tab-{tab} svg text'))"
                        ".map(t => t.textContent)")
        for name in MARKUP:
            assert any(name in t for t in texts), (tab, name, texts)
        assert page.count(f"#tab-{tab} svg a") == 0, tab
        styled = page.js(f"return Array.from(document.querySelectorAll('#tab-{tab} svg tspan'))"
                         ".filter(t => /bold|italic|underline/.test(t.getAttribute('style') || '')).length")
        assert styled == 0, tab
    assert any("n<b>1</b>" in t for t in page.js(
        "return Array.from(document.querySelectorAll('#heatmap-plot svg text')).map(t => t.textContent)"))
    screenshot(driver, screenshots, "markup-charts")
    page.assert_no_console_errors()


# -- 2: collapsing an ancestor of the selection -----------------------------------------


def _nested_view() -> dict:
    """app > a > a1, app > b; two locations; metric tree total > part."""
    per = {  # cnode -> (location 0, location 1), exclusive
        0: (1, 2), 1: (10, 20), 2: (100, 300), 3: (1000, 3000),
    }
    return hand_view(
        metrics=[_metric("total"), _metric("part", parent=0)],
        regions=[{"name": n, "module": "", "file": None, "line": None} for n in ("app", "a", "a1", "b")],
        cnodes={"region": [0, 1, 2, 3], "parent": [-1, 0, 1, 0], "line": [-1] * 4},
        locations=[_location(0, 0), _location(1, 0)],
        values={"total": {"exclusive": [v for c in range(4) for v in per[c]], "inclusive": None},
                "part": {"exclusive": [1] * 8, "inclusive": None}},
        sources=[],
    ), per


def test_collapsing_an_ancestor_moves_the_selection_to_it(tmp_path, driver, screenshots):
    view, per = _nested_view()
    page = _open(driver, tmp_path, view, "nested")
    page.select_metric("total")
    page.toggle_metric("total")  # expanded: part shows
    page.select_metric("part")
    page.toggle_metric("total")  # collapsed: part hidden, the selection moves to total
    assert _sel(page, "metric").startswith("total")
    assert page.count("[data-tree=metric] .row[data-metric=part]") == 0
    page.toggle_metric("total")
    page.select_metric("total")
    page.toggle_metric("total")  # total collapsed again: its own values, not part's
    page.toggle_call("a")  # a expanded: a1 shows
    page.click_call("a1")
    # total as stored: it includes part's share already (CUBE's metric tree), nothing is added
    assert page.rank_values() == {0: 100, 1: 300}
    page.toggle_call("a")  # a collapsed: a1 hidden
    assert page.selected_call() == "a"
    # the system tree shows a's inclusive values now (a and a1, total and part), not a1's
    assert page.rank_values() == {r: per[1][r] + per[2][r] for r in (0, 1)}
    page.set_mode("call", "sel")
    assert float(_shown(page, "call", "region")["a"]) == pytest.approx(100.0)
    page.toggle_call("app")  # the root collapsed: the selection is the root
    assert page.selected_call() == "app"
    assert page.rank_values() == {r: sum(per[c][r] for c in per) for r in (0, 1)}
    # one thread per rank: CUBE hides the thread level, each rank is a leaf holding its location's values
    assert page.count("[data-tree=system] .row[data-sys=thread]") == 0
    assert page.location_values() == {r: sum(per[c][r] for c in per) for r in (0, 1)}
    screenshot(driver, screenshots, "collapsed-selection")
    page.assert_no_console_errors()


# -- 6: the system tree's colours ----------------------------------------------------------


def _rgb(text: str) -> tuple[int, int, int]:
    import re

    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def test_system_tree_colours_follow_cubes_scale(tmp_path, driver, screenshots):
    """One rank of two threads holding 3 and 1: against the largest value
    in the tree (the rank's, the machine's: 4), thread 0 is at 3/4 of the
    scale (yellow), thread 1 at 1/4 (cyan), the rank at the top (red) --
    CUBE's blue > cyan > green > yellow > red, quarter by quarter."""
    view = hand_view(
        metrics=[_metric("samples")],
        regions=[{"name": "app", "module": "", "file": None, "line": None}],
        cnodes={"region": [0], "parent": [-1], "line": [-1]},
        locations=[_location(0, 0), _location(0, 1)],
        values={"samples": {"exclusive": [3, 1], "inclusive": None}},
        sources=[],
    )
    page = _open(driver, tmp_path, view, "colours")
    rank = page.js("return getComputedStyle(document.querySelector("
                   "'[data-tree=system] .row[data-rank=\"0\"] .sq')).backgroundColor")
    assert _rgb(rank) == (255, 0, 0)  # collapsed: both threads, the largest value in the tree
    page.toggle_rank(0)
    colours = dict(page.js(
        "return Array.from(document.querySelectorAll('[data-tree=system] .row'))"
        ".map(r => [r.dataset.location !== undefined ? 'thread ' + r.dataset.location : r.dataset.sys,"
        " getComputedStyle(r.querySelector('.sq')).backgroundColor])"))
    assert _rgb(colours["thread 0"]) == (255, 255, 0)
    assert _rgb(colours["thread 1"]) == (0, 255, 255)
    page.set_mode("system", "root")  # percent modes: the scale is 0 to 100 %
    colours = dict(page.js(
        "return Array.from(document.querySelectorAll('[data-tree=system] .row[data-location]'))"
        ".map(r => [r.dataset.location, getComputedStyle(r.querySelector('.sq')).backgroundColor])"))
    assert _rgb(colours["0"]) == (255, 255, 0) and _rgb(colours["1"]) == (0, 255, 255)
    screenshot(driver, screenshots, "system-colours")
    page.assert_no_console_errors()


# -- 7: "% of the selection" in the metric tree --------------------------------------------


def test_metric_percent_of_the_selection_only_within_its_unit(tmp_path, driver):
    """hand_view's metric tree: Time (sec) > MPI (sec), and Ratio (no
    unit): with Time selected, MPI is a share of it; Ratio is "-"."""
    view = hand_view()
    page = _open(driver, tmp_path, view, "metric-sel")
    page.toggle_metric("time")  # expanded: time's own (exclusive) value, mpi beside it
    page.select_metric("time")
    page.set_mode("metric", "sel")
    shown = _shown(page, "metric", "metric")
    assert float(shown["time"]) == pytest.approx(100.0)
    time = sum(v for v in view["values"]["time"]["exclusive"] if v is not None)
    mpi = sum(view["values"]["mpi"]["exclusive"])
    # expanded, time is its own share (CUBE's metric tree: stored time includes mpi's): the selection
    assert float(shown["mpi"]) == pytest.approx(100 * mpi / (time - mpi))
    assert shown["ratio"] == ""
    text = page.js("return document.querySelector('[data-tree=metric] .row[data-metric=ratio] .val').textContent")
    assert text == "-"
    page.select_metric("ratio")
    shown = _shown(page, "metric", "metric")
    assert float(shown["ratio"]) == pytest.approx(100.0) and shown["time"] == "" and shown["mpi"] == ""
    page.assert_no_console_errors()


# -- 8: a source file that cannot be read ------------------------------------------------------


def test_source_view_without_the_file_shows_the_lines_samples(tmp_path, driver, screenshots):
    """hand_view's gone.c was not found: function "other" (gone.c, line
    3) shows line 3 with its 4 samples, 4 / 20 = 20 %, and says so."""
    view = hand_view()
    page = _open(driver, tmp_path, view, "no-source")
    page.click_call("other")
    rows = page.js("return Array.from(document.querySelectorAll('#source tr'))"
                   ".map(r => [+r.dataset.line, +r.dataset.samples, +r.dataset.percent, r.textContent])")
    assert [r[:3] for r in rows] == [[3, 4, pytest.approx(20.0)]]
    assert "20.00 %" in rows[0][3]
    head = page.js("return document.querySelector('#source .srchead').textContent")
    assert "gone.c" in head and "not found" in head
    assert page.hot_line()["line"] == 3
    screenshot(driver, screenshots, "source-not-found")
    exercise(page)
    page.assert_no_console_errors()
