"""The HTML report at scale: a synthetic 64-rank x 2,000-function call-path
profile (two metrics: samples, UINT64, and time, DOUBLE; every value
non-zero, the largest the view can be) built as an Experiment, turned into
the view by viewdoc.build and into the page by page.render.  Prints the
file's size (the view's data against plotly.js and the page's own script)
and its time to interactive in headless chromium: navigation start to the
three panes drawn (window.psuiteReady, set by app.js after the first
render), and to the first frame after it.  The reference, measured in the
same run and the same browser: a page of plotly.js alone (run, as a page
with charts drawn at load would have to), and a blank page.  Also the time
one click on a call-tree node takes to update the system tree.

Targets: interactive within 2 s, and within twice the time the page of
plotly.js alone takes in the same run (a ratio that a loaded machine
slows alike); each figure is printed with its target.

    python bench/html_report.py [--ranks N] [--functions N] [--runs N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

TARGET_MS = 2000.0
TARGET_RATIO = 2.0  # time to interactive / plotly.js alone
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def experiment(ranks: int = 64, functions: int = 2000, seed: int = 17):
    """Ranks x 1 thread; a program root and `functions` functions, function
    i > 0 called from function (i - 1) // 8 (a tree 5 levels deep); rank r
    does (1 + r / ranks) times the work (an imbalance to see)."""
    import numpy as np

    from psuite.model.experiment import Experiment, Location, Metric, Region

    e = Experiment(attributes={"command": f"synthetic {ranks} ranks x {functions} functions"})
    e.add_metric(Metric("samples", "Samples", "occ", "UINT64", description="samples taken"))
    e.add_metric(Metric("time", "Time", "sec", "DOUBLE", description="seconds"))
    e.add_region(Region("app", module="app"))
    for i in range(functions):
        e.add_region(Region(f"function_{i:04d}", module=f"src/file_{i % 97}.c", begin=10 + 20 * (i // 97)))
    e.add_cnode(0, None)
    for i in range(functions):
        e.add_cnode(i + 1, 0 if i == 0 else 1 + (i - 1) // 8)
    for r in range(ranks):
        e.locations.append(Location(node=f"node{r // 16:02d}", process=f"rank {r}", rank=r))
    rng = np.random.default_rng(seed)
    weight = 1.0 + np.arange(ranks) / ranks
    samples = (rng.integers(1, 1000, size=(functions + 1, ranks)) * weight).astype(np.int64)
    e.values["samples"] = samples
    e.values["time"] = samples * 0.001 * (1 + 0.01 * rng.random(samples.shape))
    return e


def reference_pages(directory: str) -> dict[str, str]:
    """plotly.js alone, and a blank page, each marking when its script ran."""
    from psuite.psprocess.html.page import plotly_js

    mark = "<script>window.psuiteReady = performance.now();</script>"
    pages = {
        "plotly.js alone": f"<!DOCTYPE html><html><head><meta charset='utf-8'><link rel='icon' href='data:,'>"
        f"<script>{plotly_js()}</script></head><body>{mark}</body></html>",
        "blank page": f"<!DOCTYPE html><html><head><link rel='icon' href='data:,'></head><body>{mark}</body></html>",
    }
    out = {}
    for name, text in pages.items():
        path = os.path.join(directory, name.replace(" ", "_").replace(".", "") + ".html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        out[name] = path
    return out


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1600,1000",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


PAINTED = """const done = arguments[arguments.length - 1];
requestAnimationFrame(() => setTimeout(() => done([window.psuiteReady, performance.now()]), 0));"""


def load(driver, path: str) -> tuple[float, float]:
    """Milliseconds from navigation start to the page's script done
    (psuiteReady), and to the first frame after it."""
    driver.get("file://" + os.path.abspath(path))
    ready, painted = driver.execute_async_script(PAINTED)
    if ready is None:
        raise SystemExit(f"html_report: {path} never set window.psuiteReady")
    return float(ready), float(painted)


CLICK = """const row = document.querySelector(`[data-tree=call] .row[data-cnode="${arguments[0]}"] .${arguments[1]}`);
const t = performance.now();
row.click();
const took = performance.now() - t;
return [took, Array.from(document.querySelectorAll('[data-tree=system] .row[data-rank]'))
  .map(r => [+r.dataset.rank, r.dataset.value])];"""


def click(driver, cnode: int, part: str = "name") -> tuple[float, dict[int, str]]:
    """Milliseconds a click on a call-tree node (its name: select it; its
    "tog": expand or collapse it) takes to update the panes, and the
    system tree's rank values after it."""
    took, ranks = driver.execute_script(CLICK, str(cnode), part)
    return float(took), {int(r): v for r, v in ranks}


TAB = """const t = performance.now();
document.querySelector(`nav button[data-tab="${arguments[0]}"]`).click();
return performance.now() - t;"""


def tab(driver, name: str) -> float:
    """Milliseconds opening a tab takes (the first time: plotly.js run and the charts drawn)."""
    return float(driver.execute_script(TAB, name))


ROWS = """return Array.from(document.querySelectorAll('[data-tree=call] .row'))
  .map(r => [+r.dataset.cnode, r.querySelector('.tog').textContent]);"""


def interact(driver, path: str) -> dict[str, float]:
    """Milliseconds of the first use of a loaded page: opening the flame
    graph (plotly.js run first) and the charts, expanding a call-tree node,
    selecting nodes (median and max of four)."""
    load(driver, path)
    out = {f"tab {name}": tab(driver, name) for name in ("flame", "charts", "trees")}
    rows = driver.execute_script(ROWS)
    closed = [c for c, tog in rows if tog == "[+]"]
    if closed:
        out["expand"] = click(driver, closed[0], "tog")[0]
    rows = driver.execute_script(ROWS)
    clicks = [click(driver, c)[0] for c, _ in rows[1:5]]
    out["click median"], out["click max"] = statistics.median(clicks), max(clicks)
    return out


def pages(ranks: int, functions: int) -> dict[str, dict]:
    """The two views measured: the call-path experiment above, and a flat
    profile of the same size as psrun -c would combine it (the shape of
    tests/psprocess/html/big_profile.py: a few hot functions, a long tail)."""
    from psuite.psprocess.html import viewdoc

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
    from tests.psprocess.html.big_profile import big_profile

    return {
        "call paths": viewdoc.build(experiment(ranks, functions)),
        "flat profile": viewdoc.build(big_profile(ranks, functions), read_sources=False),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--functions", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5, help="loads of each page (medians are printed)")
    ap.add_argument("--keep", metavar="DIR", help="write the pages here and keep them")
    args = ap.parse_args()
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            print(f"html_report: {path} missing (tests/run.sh installs chromium and chromium-driver)", file=sys.stderr)
            return 2
    from psuite.psprocess.html import page

    plotly = len(page.plotly_js().encode())
    with tempfile.TemporaryDirectory(prefix="psuite-html-") as d:
        where = args.keep or d
        os.makedirs(where, exist_ok=True)
        paths = {}
        for name, view in pages(args.ranks, args.functions).items():
            paths[name] = os.path.join(where, name.replace(" ", "_") + ".html")
            with open(paths[name], "w", encoding="utf-8") as f:
                f.write(page.render(view))
            size, data = os.path.getsize(paths[name]), len(page.embed_json(view).encode())
            print(
                f"{name}: {args.ranks} ranks x {args.functions:,} functions, {len(view['metrics'])} metrics, "
                f"{len(view['cnodes']['parent']):,} call paths: page {size / 1e6:.2f} MB = view data "
                f"{data / 1e6:.2f} MB + plotly.js {plotly / 1e6:.2f} MB + page script and style "
                f"{(size - data - plotly) / 1e3:.0f} kB"
            )
        paths.update(reference_pages(d))
        driver = browser()
        try:
            times: dict[str, list[tuple[float, float]]] = {k: [] for k in paths}
            for _ in range(args.runs):  # interleaved, so a load on the machine hits each alike
                for name, path in paths.items():
                    times[name].append(load(driver, path))
            use = {name: interact(driver, paths[name]) for name in ("call paths", "flat profile")}
            severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        finally:
            driver.quit()
    med = {k: (statistics.median(a for a, _ in v), statistics.median(b for _, b in v)) for k, v in times.items()}
    reference = med["plotly.js alone"][1]
    for name, (ready, painted) in med.items():
        print(
            f"{name:16s} script done {ready:6.0f} ms   interactive (first frame) {painted:6.0f} ms   "
            f"(median of {args.runs}; first load {times[name][0][1]:.0f} ms)"
        )
    ok = not severe
    for name, u in use.items():
        tti = med[name][1]
        ok &= tti <= TARGET_MS and tti / reference <= TARGET_RATIO
        print(
            f"{name}: time to interactive / plotly.js alone = {tti / reference:.2f} (target <= {TARGET_RATIO:.1f})"
            f"  ({tti:.0f} ms; target <= {TARGET_MS:.0f} ms)   select a node {u['click median']:.1f} ms "
            f"(max {u['click max']:.1f})"
            + (f"   expand one {u['expand']:.1f} ms" if "expand" in u else "")
            + f"   open flame graph {u['tab flame']:.0f} ms (plotly.js run first), charts {u['tab charts']:.0f} ms"
        )
    if severe:
        print(f"console errors: {severe}")
    print("ok" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
