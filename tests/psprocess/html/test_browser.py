"""The HTML report in a real browser (issue 17, "Done when"): Debian's
headless chromium driven by Selenium opens pages that the real CLI wrote
from real psrun documents: a counting report, a flat profile, a 4-rank MPI
profile and the difference of two profiles.  Each page loads without a
console error; the panes show the names and values the documents hold
(read here with lxml, nm and addr2line, not through psuite); clicking a
call-tree node shows that node's per-rank values in the system tree; the
source view marks the program's hottest line with its percentage; the
difference page shows gains and losses in two colours.

The program touches fresh pages and is profiled on page faults: one fault
per page, so where the samples land is known in advance and does not move
with the machine's load."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import run_tool
from tests.psprocess.html.pages import PAGE_SOURCE, exercise, hand_view, load_page, ranks_of, screenshot

PERIOD = 10
STEADY, SLOWER = 20000, 4000  # pages each function touches in the single runs
MPI_ENV = {"OMPI_MCA_plm_rsh_agent": "", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def _one_doc(directory: Path) -> Path:
    [doc] = [f for f in directory.glob("*.xml") if not f.name.endswith(".callpaths.xml")]
    return doc


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The program built (plain and with MPI) and its documents: "flat" (a
    flat profile), "counts" (a counting report), "before" and "after" (flat
    profiles where steady() touches fewer and slower() more pages), "mpi"
    (a directory of a 4-rank MPI run's flat profiles)."""
    d = tmp_path_factory.mktemp("html_pages")
    src = d / "pages.c"
    src.write_text(PAGE_SOURCE)
    exe, mpi_exe = d / "pages", d / "pages_mpi"
    subprocess.run(["cc", "-O1", "-g", "-o", str(exe), str(src)], check=True)
    out = {"exe": exe, "src": src, "mpi_exe": mpi_exe}
    profile = ["--profile", "page-faults", "--period", str(PERIOD)]
    plans = (
        ("flat", profile, (STEADY, SLOWER)),
        ("counts", ["-e", "page-faults"], (STEADY, SLOWER)),
        ("before", profile, (STEADY, SLOWER)),
        ("after", profile, (STEADY // 2, SLOWER * 3)),
    )
    for name, options, args in plans:
        run_dir = d / name
        run_dir.mkdir()
        p = run_tool("psrun", "-q", "-d", str(run_dir), *options, str(exe), *map(str, args))
        assert p.returncode == 0, p.stderr
        out[name] = _one_doc(run_dir)
    mpicc, mpirun = shutil.which("mpicc"), shutil.which("mpirun")
    assert mpicc and mpirun, "Open MPI is needed (tests/run.sh installs openmpi-bin and libopenmpi-dev)"
    subprocess.run([mpicc, "-O1", "-g", "-DWITH_MPI", "-o", str(mpi_exe), str(src)], check=True)
    ranks = d / "mpi"
    ranks.mkdir()
    p = subprocess.run(
        [
            mpirun,
            "--oversubscribe",
            "--allow-run-as-root",
            "-np",
            "4",
            "--mca",
            "btl",
            "self,vader",
            sys.executable,
            "-m",
            "psuite.psrun",
            "-q",
            "-d",
            str(ranks),
            *profile,
            str(mpi_exe),
            "2000",
            "1000",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **MPI_ENV},
    )
    assert p.returncode == 0, p.stdout + p.stderr
    out["mpi"] = ranks
    return out


def html(tmp_path: Path, *argv: str) -> Path:
    """The page the real CLI writes: psprocess [...] --html FILE."""
    page = tmp_path / "report.html"
    p = (
        run_tool("psprocess", *argv, "--html", str(page))
        if argv[0] != "diff"
        else run_tool("psprocess", "diff", *argv[1:], "--html", str(page))
    )
    assert p.returncode == 0, p.stderr
    assert page.stat().st_size > 0
    return page


# -- what the documents hold, read without psuite ----------------------------


def _symbols(exe: Path) -> list[tuple[int, int, str]]:
    nm = subprocess.run(["nm", "-S", "--defined-only", str(exe)], capture_output=True, text=True, check=True).stdout
    return [
        (int(f[0], 16), int(f[1], 16), f[3])
        for f in map(str.split, nm.splitlines())
        if len(f) == 4 and f[2] in ("t", "T")
    ]


def _samples(doc: Path, exe: Path) -> list[tuple[int, int]]:
    """(pc relative to the executable's load address, samples) of the
    executable's samples in a profile."""
    out = []
    for module in etree.parse(str(doc)).getroot().iter("module"):
        if module.get("file") != str(exe):
            continue
        base = int(module.get("offset"), 16)
        for samples in module.iter("samples"):
            radix = int(samples.get("pcbase", "16"))
            out += [(int(s.get("pc"), radix) - base, int(s.text)) for s in samples.iter("sample")]
    return out


def function_samples(doc: Path, exe: Path) -> dict[str, int]:
    symbols = _symbols(exe)
    out: dict[str, int] = {}
    for pc, n in _samples(doc, exe):
        [name] = [s for start, size, s in symbols if start <= pc < start + size]
        out[name] = out.get(name, 0) + n
    return out


def line_samples(doc: Path, exe: Path) -> dict[int, int]:
    """Samples per source line of the program, lines from addr2line."""
    pcs = _samples(doc, exe)
    lines = subprocess.run(
        ["addr2line", "-e", str(exe), *(hex(pc) for pc, _ in pcs)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    out: dict[int, int] = {}
    for (_, n), where in zip(pcs, lines, strict=True):
        m = re.search(r":(\d+)", where)  # file:line, maybe " (discriminator N)"; "??:0" unknown
        line = int(m.group(1)) if m else 0
        out[line] = out.get(line, 0) + n
    return out


def line_of(marker: str) -> int:
    """The line of the test program holding `marker`."""
    [line] = [i for i, text in enumerate(PAGE_SOURCE.splitlines(), 1) if marker in text]
    return line


def total_samples(doc: Path) -> int:
    return int(etree.parse(str(doc)).getroot().findtext(".//totalsamples"))


def event_count(doc: Path, event: str) -> int:
    [v] = [int(e.text) for e in etree.parse(str(doc)).getroot().iter("hwpcevent") if e.get("name") == event]
    return v


# -- the pages ---------------------------------------------------------------


def test_counting_report_page(runs, tmp_path, driver, screenshots):
    page = load_page(driver, html(tmp_path, str(runs["counts"])))
    faults = event_count(runs["counts"], "page-faults")
    assert faults >= STEADY + SLOWER  # each touched page faults once
    assert page.metric_values()["page_faults"] == faults  # page-faults, named so that CubePL can name it
    page.select_metric("page_faults")
    [(name, value)] = page.call_values().values()
    assert value == faults and name == os.path.basename(runs["exe"])
    assert page.rank_values() == {0: faults}
    page.open_tab("charts")
    bars = page.js("return Array.from(document.querySelectorAll('#counts-plot .bar'))"
                   ".map(b => [b.dataset.name, +b.dataset.value])")
    assert ["page-faults", faults] in bars
    screenshot(driver, screenshots, "counts-charts")
    page.open_tab("context")
    assert page.context()["Command"].startswith(str(runs["exe"]))
    page.assert_no_console_errors()


def test_flat_profile_page_and_source_view(runs, tmp_path, driver, screenshots):
    doc = runs["flat"]
    page = load_page(driver, html(tmp_path, str(doc)))
    assert page.metric_values()["samples"] == total_samples(doc)
    expected = function_samples(doc, runs["exe"])
    shown = {name: v for name, v in page.call_values().values()}
    for function in ("steady", "slower"):
        assert shown[function] == expected[function], function
    assert expected["steady"] == pytest.approx(STEADY / PERIOD, rel=0.05)
    # the source view of steady(): its hottest line is the one touching pages
    page.click_call("steady")
    hot_line = line_of("steady's hot line")
    per_line = line_samples(doc, runs["exe"])
    hot = page.hot_line()
    assert hot["line"] == hot_line and hot["samples"] == per_line[hot_line]
    assert hot["percent"] == pytest.approx(100 * per_line[hot_line] / total_samples(doc), abs=1e-9)
    assert f"{hot['percent']:.2f} %" in hot["text"] and "steady's hot line" in hot["code"]
    assert hot["visible"], "the hottest line is scrolled into view"
    screenshot(driver, screenshots, "flat-trees-source")
    page.open_tab("flame")
    assert page.count("#flame-plot .slice") >= 3
    screenshot(driver, screenshots, "flat-flame")
    page.open_tab("charts")
    bars = dict(page.js("return Array.from(document.querySelectorAll('#regions-plot .bar'))"
                        ".map(b => [b.dataset.name, +b.dataset.value])"))
    assert bars["steady"] == expected["steady"] and bars["slower"] == expected["slower"]
    page.assert_no_console_errors()


def test_four_rank_profile_page(runs, tmp_path, driver, screenshots):
    page = load_page(driver, html(tmp_path, "-c", str(runs["mpi"])))
    per_rank = {ranks_of(doc): function_samples(doc, runs["mpi_exe"]) for doc in runs["mpi"].glob("*.xml")}
    assert sorted(per_rank) == [0, 1, 2, 3]
    assert page.metric_values()["samples"] == sum(total_samples(doc) for doc in runs["mpi"].glob("*.xml"))
    for function in ("slower", "steady"):
        page.click_call(function)
        assert page.selected_call() == function
        assert page.rank_values() == {r: s[function] for r, s in per_rank.items()}, function
    # rank r touches (r + 1) times the pages: the values differ, so the click really changed them
    assert page.rank_values()[3] == pytest.approx(4 * page.rank_values()[0], rel=0.1)
    screenshot(driver, screenshots, "mpi4-trees")
    page.set_mode("system", "sel")  # percent of the selected system node: the machine, all ranks
    page.click_system_rank(3)
    shares = page.rank_values()
    assert shares[3] == pytest.approx(100.0)
    page.open_tab("charts")
    imbalance = page.imbalance()
    steady = [per_rank[r]["steady"] for r in range(4)]
    assert imbalance["steady"] == pytest.approx(max(steady) / (sum(steady) / 4), rel=1e-9)
    assert page.count("#heatmap-plot .hm") + page.count("#heatmap-plot image") > 0
    assert page.count("#boxplot-plot .boxes") > 0
    screenshot(driver, screenshots, "mpi4-charts")
    page.assert_no_console_errors()


def test_difference_page_two_colours(runs, tmp_path, driver, screenshots):
    before, after = runs["before"], runs["after"]
    page = load_page(driver, html(tmp_path, "diff", str(after), str(before)))
    b, a = function_samples(before, runs["exe"]), function_samples(after, runs["exe"])
    shown = {name: v for name, v in page.call_values().values()}
    for function in ("steady", "slower"):
        assert shown[function] == a[function] - b[function], function
    assert shown["steady"] < 0 < shown["slower"]  # steady touched fewer pages, slower more
    colours = page.square_colours()
    (r1, g1, _), (r2, g2, _) = colours["steady"], colours["slower"]
    assert g1 > r1 and r2 > g2, colours  # a gain green, a loss red
    assert driver.find_element("id", "diff-legend").is_displayed()
    # the source view: gains and losses per line, of the subtrahend's samples
    page.click_call("steady")
    hot, line = page.hot_line(), line_of("steady's hot line")
    gained = line_samples(after, runs["exe"])[line] - line_samples(before, runs["exe"])[line]
    assert hot["line"] == line and hot["samples"] == gained < 0
    assert hot["percent"] == pytest.approx(100 * gained / total_samples(before), abs=1e-9)
    [r, g, _] = map(int, re.findall(r"\d+", hot["background"])[:3])
    assert g > r, hot["background"]  # fewer samples: green
    screenshot(driver, screenshots, "diff-trees")
    page.open_tab("flame")
    screenshot(driver, screenshots, "diff-flame")
    page.assert_no_console_errors()


def test_page_is_offline_and_self_contained(runs, tmp_path):
    """Nothing the page loads comes from elsewhere: no src=, href= or
    url() but the favicon's data: URL."""
    text = html(tmp_path, str(runs["flat"])).read_text()
    head = text[: text.index('id="psuite-view"')]
    assert re.findall(r'(?:src|href)="([^"]*)"', head) == ["data:,"]
    assert "<script src" not in text and "https://cdn" not in head


def _bench():
    """bench/html_report.py: its synthetic 64-rank x 2,000-function profile
    and reference pages, so the test and the benchmark measure one thing."""
    import importlib.util

    path = Path(__file__).resolve().parents[3] / "bench" / "html_report.py"
    spec = importlib.util.spec_from_file_location("bench_html_report", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_large_profile_is_interactive(tmp_path, driver, screenshots):
    """64 ranks x 2,000 functions: the page's script finishes and draws
    its first frame, the panes are drawn and answer a click with the right
    per-rank values.  How fast (time to interactive against its target and
    against parsing the data alone) is measured by bench/html_report.py, not here:
    a timing fails on a loaded machine."""
    import numpy as np

    from psuite.psprocess.html import page as page_module
    from psuite.psprocess.html import viewdoc

    bench = _bench()
    e = bench.experiment(64, 2000)
    path = tmp_path / "large.html"
    path.write_text(page_module.render(viewdoc.build(e)), encoding="utf-8")
    ready, painted = bench.load(driver, str(path))  # window.psuiteReady set: the first render is done
    assert 0 < ready <= painted
    page = load_page(driver, path)
    # the page opens on its hot path: function_0000 (cnode 1) holds nearly all the samples, so it is
    # open (its callees, cnodes 2 to 9, shown) and selected
    assert page.js("return document.querySelector('[data-tree=call] .row[data-cnode=\"1\"]').dataset.open") == "1"
    assert page.selected_call() == "function_0000"
    _, ranks = bench.click(driver, 5)
    # cnode 5 collapsed: its inclusive samples per rank, summed here over its subtree
    parents = [-1] + [0] + [1 + (i - 1) // 8 for i in range(1, 2000)]
    inside = np.zeros(len(parents), dtype=bool)
    for c in range(len(parents)):
        inside[c] = c == 5 or (parents[c] >= 0 and inside[parents[c]])
    expected = e.values["samples"][inside].sum(axis=0)
    assert {r: int(v) for r, v in ranks.items()} == {r: int(expected[r]) for r in range(64)}
    assert page.selected_call() == "function_0004"
    screenshot(driver, screenshots, "large-64x2000")
    page.assert_no_console_errors()


def test_cube_page_metric_tree_threads_and_modes(tmp_path, driver, screenshots):
    """A Score-P-shaped CUBE file (2 ranks x 2 threads; time > mpi in the
    metric tree; two call-tree roots), its values known to the fixture:
    collapsed nodes show inclusive values and expanded ones exclusive, in
    the metric tree (CUBE's meaning: time as stored includes mpi; expanded,
    time less mpi) and the call tree; a call-tree click gives every rank
    and thread its value; percent of the root."""
    from tests.psprocess.cube_fixtures import scorep_cube

    cube = scorep_cube(tmp_path / "run.cubex", ranks=2, threads=2)
    page = load_page(driver, html(tmp_path, cube.path))
    ex, inc = cube.exclusive, cube.inclusive
    shown = page.metric_values()
    assert shown["time"] == pytest.approx(ex["time"].sum(), rel=1e-9)  # as stored: mpi's share included
    assert shown["visits"] == ex["visits"].sum()
    page.toggle_metric("time")
    assert page.metric_values()["time"] == pytest.approx(ex["time"].sum() - ex["mpi"].sum(), rel=1e-9)
    assert page.metric_values()["mpi"] == pytest.approx(ex["mpi"].sum(), rel=1e-9)
    page.set_mode("metric", "root")  # CUBE's own root percent: each metric against its root, collapsed
    percents = page.metric_values()
    assert percents["mpi"] == pytest.approx(100 * ex["mpi"].sum() / ex["time"].sum(), rel=1e-9)
    assert percents["visits"] == pytest.approx(100.0)
    page.set_mode("metric", "abs")

    page.select_metric("visits")
    rows = {cube.paths[0]: 0, cube.paths[2]: 2, cube.paths[6]: 6}  # main, main/solve, worker
    calls = {name: v for name, v in page.call_values().values()}
    assert calls["main"] == ex["visits"][rows[("main",)]].sum()  # expanded: exclusive
    assert calls["solve"] == inc["visits"][rows[("main", "solve")]].sum()  # collapsed: inclusive
    page.toggle_call("main")  # collapsed now: inclusive
    assert {name: v for name, v in page.call_values().values()}["main"] == inc["visits"][0].sum()
    page.toggle_call("main")

    page.click_call("solve")
    solve = inc["visits"][2]
    by_rank: dict[int, int] = {}
    for j, (_, rank, _, _) in enumerate(cube.locations):
        by_rank[rank] = by_rank.get(rank, 0) + int(solve[j])
    assert page.rank_values() == by_rank
    for rank in by_rank:
        page.toggle_rank(rank)
    threads = page.location_values()
    assert threads == {j: int(solve[j]) for j in range(len(cube.locations))}

    page.set_mode("call", "root")
    percent = {name: v for name, v in page.call_values().values()}["solve"]
    # CUBE's own root percent: of solve's own root, main (collapsed), not of every root
    assert percent == pytest.approx(100 * solve.sum() / inc["visits"][0].sum(), rel=1e-9)
    screenshot(driver, screenshots, "cube-trees")
    page.open_tab("flame")
    page.open_tab("charts")
    screenshot(driver, screenshots, "cube-charts")
    page.assert_no_console_errors()


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"difference": True, "kind": "difference"},
        {"kind": "counts"},
        {
            "metrics": [],
            "regions": [],
            "cnodes": {"region": [], "parent": [], "line": []},
            "locations": [],
            "values": {},
            "sources": [],
            "context": [],
            "dropped": [],
        },
        {
            "cnodes": {"region": [], "parent": [], "line": []},
            "sources": [],
            "values": {
                "time": {"exclusive": [], "inclusive": None},
                "mpi": {"exclusive": [], "inclusive": None},
                "ratio": {"exclusive": [], "inclusive": []},
            },
        },
    ],
    ids=["shapes", "difference", "counts", "empty", "no-call-paths"],
)
def test_hand_made_views_never_log_an_error(changes, tmp_path, driver):
    """Views in shapes real runs rarely give (missing values, derived
    metrics, two machines, nothing at all): every tab, mode and row
    clicked, and the console stays free of errors."""
    from psuite.psprocess.html.page import render

    path = tmp_path / "hand.html"
    view = hand_view(**changes)
    path.write_text(render(view), encoding="utf-8")
    page = load_page(driver, path)
    exercise(page)
    page.assert_no_console_errors()
    assert page.js("return document.title") == view["title"]
    if view["dropped"]:
        page.open_tab("context")
        assert page.js("return document.querySelector('#dropped td').textContent") == view["dropped"][0]["why"]


def test_many_children_are_laid_out_a_chunk_at_a_time(tmp_path, driver):
    """A root with 1,000 functions: the largest first, the rest behind a
    "... N more" row that lays them out when clicked, values and all."""
    from psuite.psprocess.html.page import render

    n = 1000
    values = [0] + [(i * 7919) % 1000 + 1 for i in range(n)]  # distinct orders of value and index
    view = hand_view(
        metrics=[
            {
                "name": "samples",
                "display": "Samples",
                "unit": "occ",
                "description": "",
                "parent": None,
                "integer": True,
                "derived": False,
            }
        ],
        regions=[{"name": "app", "module": "", "file": None, "line": None}]
        + [{"name": f"f{i}", "module": "", "file": None, "line": None} for i in range(n)],
        cnodes={"region": list(range(n + 1)), "parent": [-1] + [0] * n, "line": [-1] * (n + 1)},
        locations=[{"machine": "m", "node": "n", "rank": 0, "thread": 0, "label": "n/0/0"}],
        values={"samples": {"exclusive": values, "inclusive": None}},
        sources=[],
    )
    path = tmp_path / "wide.html"
    path.write_text(render(view), encoding="utf-8")
    page = load_page(driver, path)
    shown = page.call_values()
    more = int(page.js("return document.querySelector('[data-tree=call] .more').dataset.more"))
    assert len(shown) - 1 + more == n and more > 0  # the root, a first chunk, the rest waiting
    first = sorted(v for c, (_, v) in shown.items() if c)
    assert first == sorted(values[1:])[-len(first) :]  # the first chunk: the largest values
    while page.count("[data-tree=call] .more"):
        page.js("document.querySelector('[data-tree=call] .more').click()")
    shown = page.call_values()
    assert {c: v for c, (_, v) in shown.items()} == dict(enumerate(values))
    page.assert_no_console_errors()
