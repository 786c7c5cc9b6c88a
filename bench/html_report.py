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

Target (issue 17): interactive within 2 s.

    python bench/html_report.py [--ranks N] [--functions N] [--runs N] [--keep FILE.html]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

TARGET_MS = 2000.0
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def experiment(ranks: int = 64, functions: int = 2000, seed: int = 17):
    """Ranks x 1 thread; a program root and `functions` functions, function
    i > 0 called from function (i - 1) // 8 (a tree 5 levels deep); rank r
    does (1 + r / ranks) times the work (an imbalance to see)."""
    import numpy as np

    from psuite.experiment import Experiment, Location, Metric, Region

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--functions", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5, help="loads of each page (medians are printed)")
    ap.add_argument("--keep", metavar="FILE.html", help="write the page here and keep it")
    args = ap.parse_args()
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            print(f"html_report: {path} missing (tests/run.sh installs chromium and chromium-driver)", file=sys.stderr)
            return 2
    from psuite.psprocess.html import page, viewdoc

    view = viewdoc.build(experiment(args.ranks, args.functions))
    text = page.render(view)
    with tempfile.TemporaryDirectory(prefix="psuite-html-") as d:
        path = args.keep or os.path.join(d, "report.html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        size = os.path.getsize(path)
        data = len(page.embed_json(view).encode())
        plotly = len(page.plotly_js().encode())
        print(
            f"page of {args.ranks} ranks x {args.functions:,} functions (2 metrics, {len(view['cnodes']['parent']):,}"
            f" call paths): {size / 1e6:.2f} MB = view data {data / 1e6:.2f} MB + plotly.js {plotly / 1e6:.2f} MB"
            f" + page script and style {(size - data - plotly) / 1e3:.0f} kB"
        )
        refs = reference_pages(d)
        driver = browser()
        try:
            times: dict[str, list[tuple[float, float]]] = {"report": [], **{k: [] for k in refs}}
            for _ in range(args.runs):  # interleaved, so a load on the machine hits each alike
                times["report"].append(load(driver, path))
                for name, ref in refs.items():
                    times[name].append(load(driver, ref))
            load(driver, path)
            tabs = {name: tab(driver, name) for name in ("flame", "charts", "trees")}
            expand = click(driver, 1, "tog")[0]  # function_0000: its 8 callees appear (cnodes 2 to 9)
            clicks = [click(driver, c)[0] for c in (2, 5, 9, 1)]
            severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        finally:
            driver.quit()
    med = {k: (statistics.median(a for a, _ in v), statistics.median(b for _, b in v)) for k, v in times.items()}
    ours, reference = med["report"], med["plotly.js alone"]
    for name, (ready, painted) in med.items():
        print(
            f"{name:16s} ready {ready:7.0f} ms   first frame {painted:7.0f} ms   (median of {args.runs}; "
            f"first load {times[name][0][1]:.0f} ms)"
        )
    print(
        f"time to interactive / plotly.js alone: {ours[1] / reference[1]:.2f}   "
        f"(report {ours[1]:.0f} ms, target <= {TARGET_MS:.0f} ms)"
    )
    print(
        f"click on a call-tree node to system tree updated: median {statistics.median(clicks):.1f} ms "
        f"(max {max(clicks):.1f} ms); expanding a node {expand:.1f} ms"
    )
    print(f"opening the flame graph {tabs['flame']:.0f} ms (plotly.js run first), the charts {tabs['charts']:.0f} ms")
    if severe:
        print(f"console errors: {severe}")
    ok = ours[1] <= TARGET_MS and not severe
    print("ok" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
