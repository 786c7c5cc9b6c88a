"""CUBE's views and interactions in the HTML report (CUBE 4.3 user guide
1.5-1.6), in Debian's headless chromium through pages the real command
writes (psprocess --html) from real psrun call-path profiles: the value
modes, a difference's colours, the system tree, the hot path, find, the
keys, multiple selection, the context menu, the flat view and the info
line.  Every expected value is computed here from the profiles
themselves (psuite.read_experiment per document), never read back from
the page.

The program touches fresh pages and is profiled on page faults: one
sample per 10 pages, so where the samples land is known in advance."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from psuite import read_experiment
from tests.conftest import run_tool
from tests.psprocess.html.pages import PAGE_SOURCE, load_page, screenshot

PROFILE = ["--profile", "page-faults", "--period", "10", "--callpath"]
MPI_ENV = {"OMPI_MCA_plm_rsh_agent": "", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
BEFORE, AFTER = (20000, 4000), (10000, 12000)  # pages steady() and slower() touch: steady gains, slower loses


def _doc(directory: Path) -> Path:
    [doc] = [f for f in directory.glob("*.xml") if not f.name.endswith(".callpaths.xml")]
    return doc


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """"mpi": a directory of a 4-rank MPI run's call-path profiles (rank r
    touches r + 1 times the pages); "before" and "after": one process's
    call-path profiles, steady() touching fewer pages after and slower()
    more; "counts": a counting report of the "before" run."""
    d = tmp_path_factory.mktemp("cube_views")
    src = d / "pages.c"
    src.write_text(PAGE_SOURCE)
    exe, mpi_exe = d / "pages", d / "pages_mpi"
    subprocess.run(["cc", "-O1", "-g", "-o", str(exe), str(src)], check=True)
    out = {}
    for name, args in (("before", BEFORE), ("after", AFTER)):
        (d / name).mkdir()
        p = run_tool("psrun", "-q", "-d", str(d / name), *PROFILE, str(exe), *map(str, args))
        assert p.returncode == 0, p.stderr
        out[name] = _doc(d / name)
    (d / "counts").mkdir()
    p = run_tool("psrun", "-q", "-d", str(d / "counts"), "-e", "page-faults", str(exe), *map(str, BEFORE))
    assert p.returncode == 0, p.stderr
    out["counts"] = _doc(d / "counts")
    mpicc, mpirun = shutil.which("mpicc"), shutil.which("mpirun")
    assert mpicc and mpirun, "Open MPI is needed (tests/run.sh installs openmpi-bin and libopenmpi-dev)"
    subprocess.run([mpicc, "-O1", "-g", "-DWITH_MPI", "-o", str(mpi_exe), str(src)], check=True)
    (d / "mpi").mkdir()
    p = subprocess.run([mpirun, "--oversubscribe", "--allow-run-as-root", "-np", "4", "--mca", "btl", "self,vader",
                        sys.executable, "-m", "psuite.psrun", "-q", "-d", str(d / "mpi"), *PROFILE, str(mpi_exe),
                        "2000", "1000"], capture_output=True, text=True, timeout=300, env={**os.environ, **MPI_ENV})
    assert p.returncode == 0, p.stdout + p.stderr
    out["mpi"] = d / "mpi"
    return out


def html(tmp_path: Path, *argv: str, name: str = "report") -> Path:
    """The page the real CLI writes: psprocess [...] --html FILE."""
    page = tmp_path / f"{name}.html"
    p = run_tool("psprocess", *argv, "--html", str(page))
    assert p.returncode == 0, p.stderr
    return page


# -- what the profiles hold, read here ------------------------------------------------


class Profile:
    """One document's call tree: per call path (its names from the root)
    the inclusive and exclusive samples, summed over the document's
    threads."""

    def __init__(self, doc: Path):
        e = read_experiment(str(doc))
        parents = e.parents().tolist()
        names = [e.regions[c.region].name for c in e.cnodes]
        self.paths: list[tuple[str, ...]] = []
        for c, p in enumerate(parents):
            self.paths.append((*self.paths[p], names[c]) if p >= 0 else (names[c],))
        self.parents = parents
        self.inc = dict(zip(self.paths, e.inclusive("samples").sum(axis=1).tolist(), strict=True))
        self.exc = dict(zip(self.paths, e.exclusive("samples").sum(axis=1).tolist(), strict=True))
        self.rank = e.locations[0].rank

    def path_of(self, function: str) -> tuple[str, ...]:
        [path] = [p for p in self.paths if p[-1] == function]
        return path

    def total(self) -> float:
        return sum(v for p, v in self.inc.items() if len(p) == 1)


def ranks(directory: Path) -> dict[int, Profile]:
    docs = [f for f in directory.glob("*.xml") if not f.name.endswith(".callpaths.xml")]
    out = {p.rank: p for p in map(Profile, docs)}
    assert sorted(out) == [0, 1, 2, 3]
    return out


# -- reading and driving the page -----------------------------------------------------


def shown(page, tree: str, attribute: str = "region") -> dict[str, float]:
    rows = page.js(f"return Array.from(document.querySelectorAll('[data-tree={tree}] .row'))"
                   f".map(r => [r.dataset.{attribute}, r.dataset.value])")
    return {k: (float(v) if v != "" else None) for k, v in rows}


def texts(page, tree: str, attribute: str) -> dict[str, str]:
    return dict(page.js(f"return Array.from(document.querySelectorAll('[data-tree={tree}] .row'))"
                        f".map(r => [r.dataset.{attribute}, r.querySelector('.val').textContent])"))


def open_path(page, path: tuple[str, ...]) -> None:
    """Expand the call tree along a path (names from the root) where it is collapsed."""
    for name in path[:-1]:
        row = f"[data-tree=call] .row[data-region='{name}']"
        if page.js("return document.querySelector(arguments[0]).dataset.open", row) == "0":
            page.toggle_call(name)


def ctrl_click(page, tree: str, selector: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    element = page.d.find_element("css selector", f"[data-tree={tree}] {selector} .name")
    page.d.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    ActionChains(page.d).key_down(Keys.CONTROL).click(element).key_up(Keys.CONTROL).perform()


def menu(page, tree: str, selector: str, action: str) -> None:
    """Right click on a row, then the context menu's item."""
    from selenium.webdriver.common.action_chains import ActionChains

    element = page.d.find_element("css selector", f"[data-tree={tree}] {selector} .name")
    page.d.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    ActionChains(page.d).context_click(element).perform()
    page.d.find_element("css selector", f"#ctxmenu .item[data-action='{action}']").click()


def modes(page, pane: str) -> list[str]:
    return page.js(f"return Array.from(document.querySelector('select[data-mode={pane}]').options).map(o => o.value)")


# -- 1: value modes ------------------------------------------------------------------------


SYSTEM_MODES = ["abs", "root", "mroot", "msel", "croot", "csel", "peer", "peerdist", "sel"]


def test_value_modes_on_a_four_rank_call_path_profile(runs, tmp_path, driver, screenshots):
    """CUBE's value modes (user guide 1.5.2.2), each pane offering those CUBE
    offers it (no external percent: the page has no second experiment), on
    steady() of a 4-rank call-path profile; then steady() and slower()
    selected together (Ctrl+click): the system pane shows their sum."""
    per = ranks(runs["mpi"])
    page = load_page(driver, html(tmp_path, "-c", str(runs["mpi"])))
    assert modes(page, "metric") == ["abs", "root", "sel"]
    assert modes(page, "call") == ["abs", "root", "mroot", "msel", "sel"]
    assert modes(page, "system") == SYSTEM_MODES
    steady, slower = per[0].path_of("steady"), per[0].path_of("slower")
    total = sum(p.total() for p in per.values())  # every sample: the metric root's and the call root's value
    s = {r: p.inc[steady] for r, p in per.items()}
    w = {r: p.inc[slower] for r, p in per.items()}
    assert s[3] > s[0] > 0  # rank r touches r + 1 times the pages: the modes below differ per rank

    open_path(page, steady)
    page.click_call("steady")
    expected_call = {"abs": sum(s.values()), "root": 100 * sum(s.values()) / total,
                     "mroot": 100 * sum(s.values()) / total, "msel": 100 * sum(s.values()) / total}
    for mode, value in expected_call.items():
        page.set_mode("call", mode)
        assert shown(page, "call")["steady"] == pytest.approx(value, rel=1e-9), mode
    page.set_mode("call", "abs")

    def system(values: dict[int, float], selected: float) -> dict[str, dict[int, float]]:
        lo, hi = min(values.values()), max(values.values())
        return {"abs": values,
                "root": {r: 100 * v / sum(values.values()) for r, v in values.items()},  # the machine, collapsed
                "mroot": {r: 100 * v / total for r, v in values.items()},
                "msel": {r: 100 * v / total for r, v in values.items()},
                "croot": {r: 100 * v / total for r, v in values.items()},  # the call tree's root: every sample
                "csel": {r: 100 * v / selected for r, v in values.items()},
                "peer": {r: 100 * v / hi for r, v in values.items()},
                "peerdist": {r: 100 * (v - lo) / (hi - lo) for r, v in values.items()}}

    for mode, values in system(s, sum(s.values())).items():
        page.set_mode("system", mode)
        assert page.rank_values() == pytest.approx(values, rel=1e-9), mode
    screenshot(driver, screenshots, "views-mpi4-modes")

    ctrl_click(page, "call", ".row[data-region='slower']")
    assert page.count("[data-tree=call] .row.sel") == 2
    both = {r: s[r] + w[r] for r in s}
    for mode, values in system(both, sum(both.values())).items():
        page.set_mode("system", mode)
        assert page.rank_values() == pytest.approx(values, rel=1e-9), mode
    page.set_mode("call", "abs")
    info = page.js("return document.querySelector('[data-info=call]').textContent")
    assert f"2 selected: sum {sum(both.values()):,}" in info
    page.assert_no_console_errors()


# -- 1, 2: a difference's modes and colours -------------------------------------------------


def _rgb(text: str) -> tuple[int, int, int]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def square(page, tree: str, selector: str) -> tuple[str, tuple[int, int, int]]:
    """A row's colour square: its gain/loss class and its colour."""
    cls, bg = page.js("const q = document.querySelector(arguments[0] + ' .sq');"
                      "return [q.classList.contains('gain') ? 'gain' : q.classList.contains('loss') ? 'loss' : '',"
                      " getComputedStyle(q).backgroundColor]", f"[data-tree={tree}] {selector}")
    return cls, _rgb(bg)


def test_difference_page_modes_and_colours(runs, tmp_path, driver, screenshots):
    """psprocess diff AFTER BEFORE: steady() touched fewer pages after (a
    gain, negative), slower() more (a loss).  Every mode's value against
    numbers from the two profiles (external percent: of BEFORE's samples,
    the second experiment a difference has), and in every mode of the call and the
    system pane the gain is green and marked "gain", the loss red and
    "loss" -- also where a percentage of the (negative) root turns a gain
    into a positive number."""
    a, b = Profile(runs["after"]), Profile(runs["before"])
    page = load_page(driver, html(tmp_path, "diff", str(runs["after"]), str(runs["before"])))
    steady, slower = a.path_of("steady"), a.path_of("slower")
    d = {f: a.inc[p] - b.inc[p] for f, p in (("steady", steady), ("slower", slower))}
    root = a.total() - b.total()
    assert d["steady"] < 0 < d["slower"] and root < 0
    open_path(page, steady)
    page.click_call("steady")  # "% of this tree's selection": of steady's gain
    expected = {"abs": d, "root": {f: 100 * v / root for f, v in d.items()},
                "mroot": {f: 100 * v / root for f, v in d.items()}, "msel": {f: 100 * v / root for f, v in d.items()},
                "ext": {f: 100 * v / b.total() for f, v in d.items()}}  # CUBE's external: of BEFORE's samples
    assert modes(page, "call") == ["abs", "root", "mroot", "msel", "sel", "ext"]
    assert modes(page, "system")[-1] == "ext" and modes(page, "metric") == ["abs", "root", "sel", "ext"]
    for mode in modes(page, "call"):
        page.set_mode("call", mode)
        values = shown(page, "call")
        if mode in expected:
            for f in ("steady", "slower"):
                assert values[f] == pytest.approx(expected[mode][f], rel=1e-9), (mode, f)
        (cls_g, (r, g, _)), (cls_l, (r2, g2, _)) = (square(page, "call", f".row[data-region='{f}']")
                                                    for f in ("steady", "slower"))
        assert cls_g == "gain" and g > r, (mode, r, g)
        assert cls_l == "loss" and r2 > g2, (mode, r2, g2)
    assert expected["root"]["steady"] > 0  # a gain's share of a gain: positive, and still green
    page.set_mode("metric", "ext")
    assert shown(page, "metric", "metric")["samples"] == pytest.approx(100 * root / b.total(), rel=1e-9)
    page.set_mode("call", "root")
    screenshot(driver, screenshots, "views-diff-root-percent")
    page.set_mode("call", "abs")
    page.click_system_rank(0)  # "% of this tree's selection": of the rank (the machine, expanded, has no value)
    for function, kind in (("steady", "gain"), ("slower", "loss")):
        page.click_call(function)
        assert page.rank_values() == {0: d[function]}
        for mode in modes(page, "system"):
            page.set_mode("system", mode)
            cls, (r, g, _) = square(page, "system", ".row[data-rank='0']")
            assert cls == kind and ((g > r) if kind == "gain" else (r > g)), (function, mode, r, g)
        page.set_mode("system", "csel")
        assert page.rank_values() == {0: pytest.approx(100.0)}
        page.set_mode("system", "croot")
        assert page.rank_values() == {0: pytest.approx(100 * d[function] / root)}
        page.set_mode("system", "ext")
        assert page.rank_values() == {0: pytest.approx(100 * d[function] / b.total())}
        page.set_mode("system", "abs")
    page.assert_no_console_errors()


# -- 3: the system tree ---------------------------------------------------------------------


def test_system_tree_as_cube_shows_it(runs, tmp_path, driver, screenshots):
    """One process of one thread: no thread level (the rank is the leaf
    holding the values) and the host named once, not as machine and node
    both.  Four ranks of three threads: threads shown; an expanded rank or
    machine has no value of its own, "-", not 0."""
    before = Profile(runs["before"])
    page = load_page(driver, html(tmp_path, str(runs["before"]), name="single"))
    rows = page.js("return Array.from(document.querySelectorAll('[data-tree=system] .row'))"
                   ".map(r => [r.dataset.sys, r.querySelector('.name').textContent])")
    host = os.uname().nodename.split(".")[0]
    assert rows == [["machine", host], ["rank", "rank 0"]], rows
    open_path(page, before.path_of("steady"))
    page.click_call("steady")
    assert page.location_values() == {0: before.inc[before.path_of("steady")]}  # the rank is the leaf

    per = ranks(runs["mpi"])
    page = load_page(driver, html(tmp_path, "-c", str(runs["mpi"]), name="mpi"))
    steady = per[1].path_of("steady")
    open_path(page, steady)
    page.click_call("steady")
    page.toggle_rank(1)
    threads = page.js("return Array.from(document.querySelectorAll('[data-tree=system] .row[data-sys=thread]'))"
                      ".map(r => +r.dataset.value)")
    assert len(threads) == 3 and sum(threads) == per[1].inc[steady]  # MPI's helper threads too
    rank1 = page.js("return document.querySelector('[data-tree=system] .row[data-rank=\"1\"] .val').textContent")
    machine = page.js("return document.querySelector('[data-tree=system] .row[data-sys=machine] .val').textContent")
    assert rank1 == "-" and machine == "-"  # expanded: no value of their own (was 0)
    assert shown(page, "system", "rank")["1"] is None
    assert shown(page, "system", "rank")["2"] == per[2].inc[steady]  # collapsed: its threads' sum
    screenshot(driver, screenshots, "views-system-tree")
    page.assert_no_console_errors()


# -- 4: the hot path on opening ---------------------------------------------------------------


def kids_of(p: Profile, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    """A call path's callees, the largest inclusive value first."""
    kids = [q for q in p.paths if len(q) == len(path) + 1 and q[:-1] == path]
    return sorted(kids, key=lambda q: -abs(p.inc[q]))


def hot_path(p: Profile) -> tuple[str, ...]:
    """From the root of the largest value down the largest callees while
    one holds at least 90 % of its caller's value: where the value splits."""
    node = max((q for q in p.paths if len(q) == 1), key=lambda q: abs(p.inc[q]))
    while (kids := kids_of(p, node)) and abs(p.inc[kids[0]]) >= 0.9 * abs(p.inc[node]) > 0:
        node = kids[0]
    return node


@pytest.mark.parametrize("kind", ["process", "ranks"])
def test_call_tree_opens_on_its_hot_path(kind, runs, tmp_path, driver, screenshots):
    """CUBE's "expand largest path" from the root, down to the first node
    where the value splits (no callee holds 90 % of it: a few start-up or
    helper-thread samples beside main do not stop it): every node on the
    way open, that node open too and selected, the system pane showing its
    exclusive value.  On both pages that is main: steady and slower show."""
    if kind == "process":
        profiles = {0: Profile(runs["before"])}
        page = load_page(driver, html(tmp_path, str(runs["before"])))
    else:
        profiles = ranks(runs["mpi"])
        page = load_page(driver, html(tmp_path, "-c", str(runs["mpi"])))
    merged = Profile.__new__(Profile)  # the ranks' call trees summed: what the page's values add up to
    merged.paths = sorted({q for p in profiles.values() for q in p.paths}, key=len)
    merged.inc = {q: sum(p.inc.get(q, 0) for p in profiles.values()) for q in merged.paths}
    node = hot_path(merged)
    assert node[-1] == "main" and len(node) > 3  # _start and the C library's frames lie above it
    assert page.selected_call() == node[-1]
    opened = dict(page.js("return Array.from(document.querySelectorAll('[data-tree=call] .row'))"
                          ".map(r => [r.dataset.region, r.dataset.open])"))
    for name in node:
        assert opened[name] == "1", name
    assert {name for name, _ in page.call_values().values()} >= {"steady", "slower"}
    assert page.rank_values() == {r: p.exc[node] for r, p in profiles.items()}
    screenshot(driver, screenshots, f"views-hot-path-{kind}")
    page.assert_no_console_errors()


# -- 5: find, keys, multiple selection ------------------------------------------------------


def test_find_and_find_next(runs, tmp_path, driver, screenshots):
    """Find over the whole call tree (collapsed parts too): every match
    counted and marked, the current one revealed; find next moves on; a
    collapsed node holding a match lightly marked.  The system tree too."""
    per = ranks(runs["mpi"])
    union = {q for p in per.values() for q in p.paths}
    page = load_page(driver, html(tmp_path, "-c", str(runs["mpi"])))
    find = page.d.find_element("css selector", "input[data-find=call]")
    find.send_keys("steady")
    assert page.js("return document.querySelector('[data-found=call]').textContent") == "1 found"
    cur = page.js("return document.querySelector('[data-tree=call] .row.found-cur').dataset.region")
    assert cur == "steady"
    find.clear()
    find.send_keys("malloc")
    hits = sorted(q for q in union if "malloc" in q[-1].lower())
    assert len(hits) > 2
    assert page.js("return document.querySelector('[data-found=call]').textContent") == f"{len(hits)} found"
    first = page.js("return document.querySelector('[data-tree=call] .row.found-cur').dataset.cnode")
    assert "malloc" in page.js("return document.querySelector('[data-tree=call] .row.found-cur').dataset.region")
    page.d.find_element("css selector", "button[data-find-next=call]").click()
    second = page.js("return document.querySelector('[data-tree=call] .row.found-cur').dataset.cnode")
    assert second != first and page.count("[data-tree=call] .row.found-cur") == 1
    assert page.count("[data-tree=call] .row.found-in") >= 1  # collapsed nodes with a match below
    assert page.js("return [...document.querySelectorAll('[data-tree=call] .row.found-in')]"
                   ".every(r => r.dataset.open === '0')")
    screenshot(driver, screenshots, "views-find")
    sysfind = page.d.find_element("css selector", "input[data-find=system]")
    sysfind.send_keys("^rank 2$")  # a regular expression: the rank, not its threads ("vm/MPI Rank 2/thread 1")
    assert page.js("return document.querySelector('[data-tree=system] .row.found-cur').dataset.rank") == "2"
    assert page.js("return document.querySelector('[data-found=system]').textContent") == "1 found"
    page.assert_no_console_errors()


def test_arrow_keys_move_expand_and_collapse(runs, tmp_path, driver):
    """Up/down move the selection a row, right expands, left collapses an
    open node or goes to the parent; the system pane follows each step.
    The page opens on main (its hot path), open."""
    from selenium.webdriver.common.keys import Keys

    p = Profile(runs["before"])
    page = load_page(driver, html(tmp_path, str(runs["before"])))
    start = hot_path(p)
    assert page.selected_call() == start[-1]
    tree = page.d.find_element("css selector", "[data-tree=call]")
    page.js("arguments[0].focus()", tree)
    a, b = kids_of(p, start)[:2]  # its two largest callees, the first rows below it
    tree.send_keys(Keys.ARROW_DOWN)
    assert page.selected_call() == a[-1] and page.rank_values() == {0: p.inc[a]}
    tree.send_keys(Keys.ARROW_DOWN)
    assert page.selected_call() == b[-1] and page.rank_values() == {0: p.inc[b]}
    tree.send_keys(Keys.ARROW_LEFT)  # a leaf: to the parent, open: its exclusive value
    assert page.selected_call() == start[-1] and page.rank_values() == {0: p.exc[start]}
    tree.send_keys(Keys.ARROW_LEFT)  # open: collapsed, its inclusive value
    assert page.count(f"[data-tree=call] .row[data-region='{a[-1]}']") == 0
    assert page.rank_values() == {0: p.inc[start]}
    tree.send_keys(Keys.ARROW_RIGHT)  # expanded again
    assert page.count(f"[data-tree=call] .row[data-region='{a[-1]}']") == 1
    assert page.rank_values() == {0: p.exc[start]}
    caller = start[:-1]
    assert kids_of(p, caller)[0] == start  # the largest callee: the row just below its caller
    tree.send_keys(Keys.ARROW_UP)
    assert page.selected_call() == caller[-1] and page.rank_values() == {0: p.exc[caller]}
    page.assert_no_console_errors()


def test_multiple_selection_and_hiding_in_the_system_tree(runs, tmp_path, driver):
    """Ctrl+click in the system tree: two ranks selected, "% of this tree's
    selection" of their sum; Ctrl+click again: one less.  A rank hidden:
    the expanded machine, undefined before, shows the hidden rank's value
    (CUBE's hiding), and again "-" once it is shown."""
    per = ranks(runs["mpi"])
    page = load_page(driver, html(tmp_path, "-c", str(runs["mpi"])))
    steady = per[0].path_of("steady")
    open_path(page, steady)
    page.click_call("steady")
    s = {r: p.inc[steady] for r, p in per.items()}
    page.click_system_rank(1)
    ctrl_click(page, "system", ".row[data-rank='3']")
    assert page.count("[data-tree=system] .row.sel") == 2
    page.set_mode("system", "sel")
    assert page.rank_values() == pytest.approx({r: 100 * v / (s[1] + s[3]) for r, v in s.items()}, rel=1e-9)
    ctrl_click(page, "system", ".row[data-rank='1']")
    assert page.rank_values() == pytest.approx({r: 100 * v / s[3] for r, v in s.items()}, rel=1e-9)
    page.set_mode("system", "abs")
    assert shown(page, "system", "sys")["machine"] is None
    menu(page, "system", ".row[data-rank='0']", "hide")
    assert sorted(page.rank_values()) == [1, 2, 3] and shown(page, "system", "sys")["machine"] == s[0]
    menu(page, "system", ".row[data-sys=machine]", "show-hidden")
    assert sorted(page.rank_values()) == [0, 1, 2, 3] and shown(page, "system", "sys")["machine"] is None
    page.assert_no_console_errors()


def test_multiple_selection_in_the_metric_tree(tmp_path, driver):
    """A Score-P-shaped CUBE file (time > mpi): time expanded is its own
    share, time less mpi; Ctrl+click on mpi adds mpi's: the call tree then
    shows time as stored.  A metric of another root (visits) replaces the
    selection: CUBE selects several metrics within one root only."""
    from tests.psprocess.cube_fixtures import scorep_cube

    cube = scorep_cube(tmp_path / "run.cubex", ranks=2, threads=2)
    ex = cube.exclusive
    page = load_page(driver, html(tmp_path, cube.path))
    page.toggle_metric("time")
    page.select_metric("time")
    main = {name: v for name, v in page.call_values().values()}["main"]  # main is open: exclusive
    assert main == pytest.approx(ex["time"][0].sum() - ex["mpi"][0].sum(), rel=1e-9)
    ctrl_click(page, "metric", ".row[data-metric='mpi']")
    assert page.count("[data-tree=metric] .row.sel") == 2
    assert {name: v for name, v in page.call_values().values()}["main"] == pytest.approx(ex["time"][0].sum(), rel=1e-9)
    page.set_mode("call", "msel")  # of the selected metrics' sum: time as stored
    assert {name: v for name, v in page.call_values().values()}["main"] == pytest.approx(
        100 * ex["time"][0].sum() / ex["time"].sum(), rel=1e-9)
    ctrl_click(page, "metric", ".row[data-metric='visits']")
    assert page.js("return Array.from(document.querySelectorAll('[data-tree=metric] .row.sel'))"
                   ".map(r => r.dataset.metric)") == ["visits"]
    page.assert_no_console_errors()


# -- 6: the context menu --------------------------------------------------------------------------


def callees_shown(page, name: str) -> list[str]:
    return page.js("const r = document.querySelector(`[data-tree=call] .row[data-region='${arguments[0]}']`);"
                   "const k = r.parentNode.querySelector(':scope > .kids');"
                   "return k ? Array.from(k.children).map(n => n.querySelector('.row').dataset.region) : []", name)


def test_context_menu(runs, tmp_path, driver, screenshots):
    """Right click on a call-tree node: collapse all, expand the largest
    path, expand all; hide a node (its inclusive value joins its caller's
    exclusive one, as CUBE accounts hidden nodes) and show it again; cut
    the tree (set as root, prune) and undo; sort by name; info."""
    p = Profile(runs["before"])
    main, steady, slower = (p.path_of(f) for f in ("main", "steady", "slower"))
    page = load_page(driver, html(tmp_path, str(runs["before"])))
    row = lambda name: f".row[data-region='{name}']"  # noqa: E731
    root = p.paths[0][0]
    menu(page, "call", row(page.selected_call()), "collapse-all")
    assert list(page.call_values().values()) == [(root, p.inc[p.paths[0]])] and page.selected_call() == root

    menu(page, "call", row(root), "expand-largest")
    path = p.paths[:1]
    while kids_of(p, path[-1]):
        path.append(kids_of(p, path[-1])[0])
    assert path[-1] == steady
    opened = dict(page.js("return Array.from(document.querySelectorAll('[data-tree=call] .row'))"
                          ".map(r => [r.dataset.region, r.dataset.open])"))
    assert all(opened[q[-1]] == "1" for q in path[:-1]) and opened["steady"] == "0"

    menu(page, "call", row(root), "expand-all")
    assert len(page.call_values()) == len(p.paths)

    menu(page, "call", row("steady"), "hide")
    assert page.count(f"[data-tree=call] {row('steady')}") == 0
    page.click_call("main")  # open: its exclusive value, with steady's inclusive value in it
    assert shown(page, "call")["main"] == p.exc[main] + p.inc[steady]
    share = 100 * p.inc[steady] / (p.exc[main] + p.inc[steady])
    assert texts(page, "call", "region")["main"].endswith(f"({share:.2f} % hidden)")  # CUBE's bracket
    assert page.rank_values() == {0: p.exc[main] + p.inc[steady]}
    menu(page, "call", row("main"), "show-hidden")
    assert shown(page, "call")["main"] == p.exc[main] and page.rank_values() == {0: p.exc[main]}

    menu(page, "call", row("main"), "set-root")
    assert page.js("return Array.from(document.querySelectorAll('[data-tree=call] > .node > .row'))"
                   ".map(r => r.dataset.region)") == ["main"]
    page.set_mode("call", "root")  # of the new root
    assert shown(page, "call")["slower"] == pytest.approx(100 * p.inc[slower] / p.inc[main], rel=1e-9)
    page.set_mode("call", "mroot")  # of the metric: every sample, cut or not
    assert shown(page, "call")["slower"] == pytest.approx(100 * p.inc[slower] / p.total(), rel=1e-9)
    page.set_mode("call", "abs")
    menu(page, "call", row("slower"), "prune")
    assert page.count(f"[data-tree=call] {row('slower')}") == 0
    assert shown(page, "call")["main"] == p.exc[main] + p.inc[slower]
    menu(page, "call", row("main"), "uncut")
    assert page.js("return document.querySelector('[data-tree=call] > .node > .row').dataset.region") == root
    assert page.count(f"[data-tree=call] {row('slower')}") == 1

    assert callees_shown(page, "main") == [q[-1] for q in kids_of(p, main)]  # by value
    menu(page, "call", row("main"), "sort-name")
    assert callees_shown(page, "main") == sorted(q[-1] for q in kids_of(p, main))

    menu(page, "call", row("steady"), "info")
    info = dict(page.js("return Array.from(document.querySelectorAll('#node-info tr'))"
                        ".map(r => [r.dataset.key, r.querySelector('td').textContent])"))
    assert info["call path"] == " > ".join(steady) and info["inclusive"] == f"{p.inc[steady]:,}"
    screenshot(driver, screenshots, "views-context-menu")
    page.assert_no_console_errors()


# -- 7: the flat view ---------------------------------------------------------------------------------


def test_flat_view_beside_the_call_tree(runs, tmp_path, driver, screenshots):
    """The call pane switched to CUBE's flat profile: each function's
    exclusive samples summed over all its call paths (and ranks); a
    selected function gives the system pane its per-rank sums; Ctrl+click
    adds another; back to the call tree, its selection is as it was."""
    per = ranks(runs["mpi"])

    def flat(name: str) -> dict[int, float]:
        return {r: sum(v for q, v in p.exc.items() if q[-1] == name) for r, p in per.items()}

    malloc = flat("_int_malloc")
    assert sum(1 for q in per[0].paths if q[-1] == "_int_malloc") > 3  # called from many places
    page = load_page(driver, html(tmp_path, "-c", str(runs["mpi"])))
    before = page.selected_call()
    page.js("const s = document.querySelector('select[data-view=call]'); s.value = 'flat';"
            "s.dispatchEvent(new Event('change'));")
    assert page.js("return getComputedStyle(document.querySelector('[data-tree=call]')).display") == "none"
    values = dict(page.js("const out = {}; for (const r of document.querySelectorAll('[data-tree=flat] .row'))"
                          " out[r.dataset.region] = (out[r.dataset.region] || 0) + +r.dataset.value; return out;"))
    for name in ("_int_malloc", "steady", "slower", "main"):
        assert values[name] == sum(flat(name).values()), name
    page._click("[data-tree=flat] .row[data-region='_int_malloc'] .name")
    assert page.rank_values() == malloc
    ctrl_click(page, "flat", ".row[data-region='steady']")
    steady = flat("steady")
    assert page.rank_values() == {r: malloc[r] + steady[r] for r in per}
    page.set_mode("system", "csel")  # of the selected functions, all ranks
    assert page.rank_values() == pytest.approx(
        {r: 100 * (malloc[r] + steady[r]) / (sum(malloc.values()) + sum(steady.values())) for r in per}, rel=1e-9)
    assert page.hot_line()["code"].count("steady's hot line") == 1  # the source view follows the function
    screenshot(driver, screenshots, "views-flat")
    page.js("const s = document.querySelector('select[data-view=call]'); s.value = 'tree';"
            "s.dispatchEvent(new Event('change'));")
    assert page.selected_call() == before
    page.assert_no_console_errors()


# -- 8: the info line, units, the source pane ------------------------------------------------------


def test_info_line_scale_and_position(runs, tmp_path, driver):
    """The selected value's line: its value and unit, whether inclusive,
    the colour scale's ends (0 and the tree's largest value: the root's)
    and where the value lies on it."""
    per = ranks(runs["mpi"])
    total = sum(p.total() for p in per.values())
    steady = per[0].path_of("steady")
    s = sum(p.inc[steady] for p in per.values())
    page = load_page(driver, html(tmp_path, "-c", str(runs["mpi"])))
    open_path(page, steady)
    page.click_call("steady")
    info = page.js("const i = document.querySelector('[data-info=call]');"
                   "return {text: i.textContent, max: +i.dataset.max, position: +i.dataset.position}")
    assert info["max"] == total and info["position"] == pytest.approx(100 * s / total, rel=1e-9)
    assert re.match(rf"selected: steady :\d+ = {s:,} \(inclusive\)", info["text"]), info["text"]
    assert f"scale min 0, max {total:,}" in info["text"] and f"position {100 * s / total:.1f} %" in info["text"]
    page.set_mode("call", "root")
    info = page.js("return document.querySelector('[data-info=call]').textContent")
    assert f"= {100 * s / total:.2f} %" in info and "max 100 %" in info
    page.assert_no_console_errors()


def test_units_and_no_source_pane_on_a_counting_report(runs, tmp_path, driver, screenshots):
    """A counting report: its metrics named with their units (seconds,
    percent, a rate), the call and system panes' value lines with the
    selected metric's unit, and no source pane inviting a click (a
    counting report has no lines)."""
    page = load_page(driver, html(tmp_path, str(runs["counts"])))
    labels = dict(page.js("return Array.from(document.querySelectorAll('[data-tree=metric] .row'))"
                          ".map(r => [r.dataset.metric, r.querySelector('.name').textContent])"))
    assert labels["CPU_time_seconds"] == "CPU time (seconds)"
    assert labels["CPU_utilization_percent"] == "CPU utilization (%)"
    page.select_metric("CPU_time_seconds")
    page.click_system_rank(0)  # the machine, open, holds no value of its own
    for pane in ("metric", "call", "system"):
        assert " sec (inclusive)" in page.js(f"return document.querySelector('[data-info={pane}]').textContent"), pane
    page.select_metric("CPU_utilization_percent")
    assert " % (inclusive)" in page.js("return document.querySelector('[data-info=call]').textContent")
    page.select_metric("Page_faults_per_second")
    assert " /s (inclusive)" in page.js("return document.querySelector('[data-info=system]').textContent")
    page.select_metric("page_faults")
    faults = int(read_experiment(str(runs["counts"])).inclusive("page_faults").sum())
    assert f" = {faults:,} (inclusive)" in page.js("return document.querySelector('[data-info=call]').textContent")
    assert page.js("return getComputedStyle(document.getElementById('source')).display") == "none"
    assert page.count("select[data-view]") == 0  # one node per program: no flat view to switch to
    assert "select" not in page.js("return document.getElementById('source').textContent").lower()
    screenshot(driver, screenshots, "views-counts-units")
    page.assert_no_console_errors()


def test_colour_range_and_threshold(runs, tmp_path, driver, screenshots):
    """CUBE's "Min/max values": a user range for a tree's colours, marked
    (u) on the info line, a value outside it grey; and the threshold below
    which squares are white."""
    p = Profile(runs["before"])
    steady, slower = p.path_of("steady"), p.path_of("slower")
    v = p.inc[steady]
    page = load_page(driver, html(tmp_path, str(runs["before"])))
    open_path(page, steady)
    page.click_call("steady")
    page.click_system_rank(0)

    def ask(answer: str) -> None:
        menu(page, "system", ".row[data-rank='0']", "colour-range")
        prompt = page.d.switch_to.alert
        prompt.send_keys(answer)
        prompt.accept()

    ask(f"0 {2 * v}")
    info = page.js("return document.querySelector('[data-info=system]').textContent")
    assert f"scale min 0 (u), max {2 * v:,} (u) · position 50.0 %" in info
    assert square(page, "system", ".row[data-rank='0']")[1] == (0, 255, 0)  # the middle of CUBE's scale: green
    ask(f"0 {v // 2}")
    assert square(page, "system", ".row[data-rank='0']")[1] == (160, 160, 160)  # outside the range: grey
    assert "position outside the range" in page.js("return document.querySelector('[data-info=system]').textContent")
    ask("")
    assert square(page, "system", ".row[data-rank='0']")[1] == (255, 0, 0)  # the tree's own scale: its largest

    total = p.total()
    assert 100 * p.inc[slower] / total < 50 < 100 * v / total
    white = page.d.find_element("id", "scale-white")  # the header's colour scale settings
    white.clear()
    white.send_keys("50\n")
    page.js("document.getElementById('scale-white').dispatchEvent(new Event('change'))")
    assert square(page, "call", ".row[data-region='slower']")[1] == (255, 255, 255)
    assert square(page, "call", ".row[data-region='steady']")[1] != (255, 255, 255)
    screenshot(driver, screenshots, "views-colour-range")
    page.assert_no_console_errors()


ACTIONS = """
const trees = ['metric', 'call', 'flat', 'system'];
const view = document.querySelector('select[data-view=call]');
for (const flat of view ? [false, true] : [false]) {
  if (view) { view.value = flat ? 'flat' : 'tree'; view.dispatchEvent(new Event('change')); }
  for (const t of trees) {
    const box = document.querySelector(`[data-tree=${t}]`);
    if (!box || box.style.display === 'none') continue;
    for (let round = 0; round < 2; round++) {
      for (let j = 0; j < 16; j++) {  // every action, each on another of the first rows
        const rows = box.querySelectorAll('.row');
        const at = {bubbles: true, clientX: 5, clientY: 5};
        rows[(j + round) % Math.min(rows.length, 6)].querySelector('.name')
          .dispatchEvent(new MouseEvent('contextmenu', at));
        const items = Array.from(document.querySelectorAll('#ctxmenu .item'))
          .filter((i) => i.dataset.action !== 'colour-range');
        items[j % items.length].click();
        for (const key of ['ArrowDown', 'ArrowRight', 'ArrowLeft', 'ArrowUp'])
          box.dispatchEvent(new KeyboardEvent('keydown', {key, bubbles: true}));
      }
    }
    const pane = t === 'flat' ? 'call' : t;
    const find = document.querySelector(`input[data-find=${pane}]`);
    for (const text of ['a', '(', 'no such name']) {
      find.value = text; find.dispatchEvent(new Event('input'));
      document.querySelector(`button[data-find-next=${pane}]`).click();
    }
  }
}
return document.querySelectorAll('.row').length;"""


@pytest.mark.parametrize("kind", ["profile", "difference", "counts", "ranks"])
def test_every_action_on_every_kind_of_page_logs_no_error(kind, runs, tmp_path, driver):
    """Context menu actions, keys, find (a bad regular expression too) and
    both call-pane views, on each kind of page: no console error."""
    argv = {"profile": [str(runs["before"])], "difference": ["diff", str(runs["after"]), str(runs["before"])],
            "counts": [str(runs["counts"])], "ranks": ["-c", str(runs["mpi"])]}[kind]
    page = load_page(driver, html(tmp_path, *argv))
    for pane in ("metric", "call", "system"):
        for mode in modes(page, pane):
            page.set_mode(pane, mode)
            assert page.js("return document.querySelectorAll('.row').length") > 0
            page.assert_no_console_errors()
    assert page.js(ACTIONS) > 0
    page.assert_no_console_errors()
