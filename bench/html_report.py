"""The HTML report at the size of a real job, and at the size of a small
one.

The job: a synthetic sampled MPI run of 1,024 ranks x 10,000 call paths x
8 metrics, built as an Experiment, turned into the view by viewdoc.build
and into the page by page.render.  Its sparsity is that of a sampled run,
which is what psrun's profiles are: a rank's value on a call path is the
number of samples that landed there, so a rank has non-zero values on at
most as many call paths as it took samples, however large the tree.  Each
rank takes 1,000 ITIMER samples (10 s at 100 Hz: the "time" metric, in
seconds, samples x 0.01, a float) and between 250 and 2,000 samples of
each of 7 hardware events (each event's own sampling period); the samples
fall on the call paths with Zipf-like weights (a few hot paths, a long
tail) that every rank shares (an SPMD code: the same hot loops
everywhere), each event's weights skewed a little from the time's; rank r
runs 1 + r / 2,048 times as long (an imbalance to see).  That leaves each
rank non-zero on about 5 % of the call paths (some 500 of 10,000), the
rest of its 10,000 values zero: storing every zero (the view's row-major
lists) is what a page of this size cannot afford.

The small profile: a short program profiled by psrun on page faults (one
sample per 10 faults, some 30 samples in all), its page written by the real
`psprocess --html`.

Printed: each page's size against its target (the job's < 20 MB, the small
profile's < 1.5 MB) and the job page's time to interactive in headless
chromium against 2 s: navigation start to the three panes drawn
(window.psuiteReady, set by app.js after the first render), and to the
first frame after it.  The reference, measured in the same run and the same
browser: the same file with the page's script replaced by one that only
parses the embedded view (what any page of this data must do), and a blank
page; the ratio to the parse-only page is what the page's own work costs.
Also the first use of each page: opening the flame graph and the charts,
expanding a node, selecting nodes.

    python bench/html_report.py [--ranks N] [--paths N] [--runs N] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TARGET_MS = 2000.0  # the job page interactive within
TARGET_JOB_MB = 20.0
TARGET_SMALL_MB = 1.5
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
EVENTS = (  # (name, samples per rank): each event sampled at its own period
    ("PAPI_TOT_CYC", 2000), ("PAPI_TOT_INS", 1500), ("PAPI_L1_DCM", 800), ("PAPI_L2_TCM", 400),
    ("PAPI_BR_MSP", 300), ("PAPI_FP_OPS", 1200), ("page_faults", 250),
)
ITIMER_SAMPLES, ITIMER_PERIOD = 1000, 0.01


def experiment(ranks: int = 64, functions: int = 2000, seed: int = 17):
    """A small call-path profile for the page's browser test
    (tests/psprocess/html/test_browser.py): ranks x 1 thread; a program
    root and `functions` functions, function i > 0 called from function
    (i - 1) // 8; every value non-zero; rank r does (1 + r / ranks) times
    the work."""
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


def job(ranks: int = 1024, paths: int = 10_000, seed: int = 17):
    """The sampled MPI job of the module's docstring as an Experiment: one
    thread per rank, 16 ranks per node; call path i > 0 called from path
    (i - 1) // 4 (a tree 7 levels deep), over paths // 4 functions."""
    import numpy as np

    from psuite.model.experiment import Experiment, Location, Metric, Region

    e = Experiment(attributes={"command": f"synthetic sampled job: {ranks} ranks x {paths} call paths"})
    e.add_metric(Metric("time", "Time", "sec", "DOUBLE", description="ITIMER samples x 10 ms"))
    for name, _ in EVENTS:
        e.add_metric(Metric(name, name, "occ", "UINT64", description=f"{name} overflow samples"))
    functions = max(paths // 4, 1)
    e.add_region(Region("main", module="app"))
    for i in range(1, functions):
        e.add_region(Region(f"function_{i:05d}", module=f"src/file_{i % 97}.c", begin=10 + 20 * (i // 97)))
    e.add_cnode(0, None)
    for i in range(1, paths):
        e.add_cnode(i % functions, (i - 1) // 4)
    for r in range(ranks):
        e.locations.append(Location(node=f"node{r // 16:04d}", process=f"rank {r}", rank=r))
    rng = np.random.default_rng(seed)
    base = 1.0 / np.arange(1, paths + 1) ** 1.1
    base = base[rng.permutation(paths)]  # hot paths anywhere in the tree
    longer = 1 + np.arange(ranks) / 2048

    def sampled(n: int) -> np.ndarray:
        w = base * rng.lognormal(0, 0.5, paths)
        w /= w.sum()
        out = np.empty((paths, ranks), np.int64)
        for r in range(ranks):
            out[:, r] = rng.multinomial(int(n * longer[r]), w)
        return out

    e.values["time"] = sampled(ITIMER_SAMPLES) * ITIMER_PERIOD
    for name, n in EVENTS:
        e.values[name] = sampled(n)
    return e


SMALL_SOURCE = r"""#include <stdlib.h>
#include <sys/mman.h>
static volatile long sink;
__attribute__((noinline)) void touch(long pages) {
    char *p = mmap(0, pages * 4096L, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(3);
    for (long i = 0; i < pages * 4096L; i += 4096) p[i] = 1;
    sink += p[0];
}
__attribute__((noinline)) void more(long pages) { touch(pages); }
int main(int argc, char **argv) { touch(atol(argv[1])); more(atol(argv[2])); return 0; }
"""


def small_profile(directory: str) -> tuple[str, int]:
    """A short program profiled by psrun on page faults and its page as
    `psprocess --html` writes it; the page's path and the samples taken."""
    src, exe = (os.path.join(directory, n) for n in ("small.c", "small"))
    with open(src, "w", encoding="utf-8") as f:
        f.write(SMALL_SOURCE)
    subprocess.run([shutil.which("cc") or "cc", "-O1", "-g", "-o", exe, src], check=True)
    run = tempfile.mkdtemp(prefix="small-run-", dir=directory)  # this run's document alone
    psrun = os.path.join(os.path.dirname(sys.executable), "psrun")
    psrun = psrun if os.path.exists(psrun) else shutil.which("psrun") or "psrun"
    subprocess.run([psrun, "-q", "-d", run, "--profile", "page-faults", "--period", "10", exe, "200", "100"],
                   check=True)
    [doc] = [os.path.join(run, f) for f in os.listdir(run) if f.endswith(".xml")]
    path = os.path.join(directory, "small_profile.html")
    subprocess.run([sys.executable, "-m", "psuite.psprocess", "--force", "--html", path, doc], check=True,
                   capture_output=True)
    samples = int(re.search(r"<totalsamples>(\d+)</totalsamples>", open(doc, encoding="utf-8").read()).group(1))
    return path, samples


def parse_only(page_path: str, directory: str) -> str:
    """The reference: the same file with the page's script replaced by one
    that only parses the embedded view."""
    with open(page_path, encoding="utf-8") as f:
        text = f.read()
    cut = text.rindex("<script>")
    stub = ("<script>JSON.parse(document.getElementById('psuite-view').textContent);"
            "window.psuiteReady = performance.now();</script>\n</body></html>\n")
    path = os.path.join(directory, "parse_only.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:cut] + stub)
    return path


def blank_page(directory: str) -> str:
    path = os.path.join(directory, "blank.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write("<!DOCTYPE html><html><head><link rel='icon' href='data:,'></head><body>"
                "<script>window.psuiteReady = performance.now();</script></body></html>")
    return path


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
    d = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    d.set_page_load_timeout(600)
    d.set_script_timeout(600)
    return d


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
const b = document.querySelector(`nav button[data-tab="${arguments[0]}"]`);
if (!b) return null;
b.click();
return performance.now() - t;"""

ROWS = """return Array.from(document.querySelectorAll('[data-tree=call] .row'))
  .map(r => [+r.dataset.cnode, r.querySelector('.tog').textContent]);"""

HEAP = "return performance.memory ? performance.memory.usedJSHeapSize : null;"


def interact(driver, path: str) -> dict[str, float]:
    """Milliseconds of the first use of a loaded page: opening the flame
    graph and the charts, expanding a call-tree node, selecting nodes
    (median and max of four); the JavaScript heap after it (MB)."""
    load(driver, path)
    out = {}
    for name in ("flame", "charts", "trees"):
        took = driver.execute_script(TAB, name)
        if took is not None:
            out[f"tab {name}"] = float(took)
    rows = driver.execute_script(ROWS)
    closed = [c for c, tog in rows if tog == "[+]"]
    if closed:
        out["expand"] = click(driver, closed[0], "tog")[0]
    rows = driver.execute_script(ROWS)
    clicks = [click(driver, c)[0] for c, _ in rows[1:5]]
    if clicks:
        out["click median"], out["click max"] = statistics.median(clicks), max(clicks)
    heap = driver.execute_script(HEAP)
    if heap is not None:
        out["heap MB"] = heap / 1e6
    return out


def _use(u: dict[str, float]) -> str:
    parts = []
    if "click median" in u:
        parts.append(f"select a node {u['click median']:.1f} ms (max {u['click max']:.1f})")
    if "expand" in u:
        parts.append(f"expand one {u['expand']:.1f} ms")
    for t in ("flame", "charts"):
        if f"tab {t}" in u:
            parts.append(f"open {t} {u[f'tab {t}']:.0f} ms")
    if "heap MB" in u:
        parts.append(f"JS heap {u['heap MB']:.0f} MB")
    return ", ".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--paths", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3, help="loads of each page (medians are printed)")
    ap.add_argument("--keep", metavar="DIR", help="write the pages here and keep them")
    args = ap.parse_args()
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            print(f"html_report: {path} missing (tests/run.sh installs chromium and chromium-driver)", file=sys.stderr)
            return 2
    from psuite.psprocess.html import page, viewdoc

    with tempfile.TemporaryDirectory(prefix="psuite-html-") as d:
        where = args.keep or d
        os.makedirs(where, exist_ok=True)
        t0 = time.perf_counter()
        exp = job(args.ranks, args.paths)
        t1 = time.perf_counter()
        view = viewdoc.build(exp)
        t2 = time.perf_counter()
        text = page.render(view)
        t3 = time.perf_counter()
        del exp
        paths = {"job": os.path.join(where, "job.html")}
        with open(paths["job"], "w", encoding="utf-8") as f:
            f.write(text)
        size, data = len(text.encode()), len(page.embed_json(view).encode())
        del text, view
        job_mb = size / 1e6
        print(f"job: {args.ranks:,} ranks x {args.paths:,} call paths x {1 + len(EVENTS)} metrics "
              f"(made in {t1 - t0:.1f} s; view built in {t2 - t1:.1f} s, page rendered in {t3 - t2:.1f} s)")
        print(f"  page {job_mb:.2f} MB (target < {TARGET_JOB_MB:.0f} MB: {job_mb / TARGET_JOB_MB:.2f} of it) = "
              f"view {data / 1e6:.2f} MB + page script, style and chart code {(size - data) / 1e3:.0f} kB")
        paths["small"], samples = small_profile(where)
        small_mb = os.path.getsize(paths["small"]) / 1e6
        print(f"small profile: {samples} samples (psrun --profile page-faults): page {small_mb:.2f} MB "
              f"(target < {TARGET_SMALL_MB} MB: {small_mb / TARGET_SMALL_MB:.2f} of it)")
        paths["parse only"] = parse_only(paths["job"], where)
        paths["blank page"] = blank_page(where)
        driver = browser()
        try:
            times: dict[str, list[tuple[float, float]]] = {k: [] for k in paths}
            for _ in range(args.runs):  # interleaved, so a load on the machine hits each alike
                for name, path in paths.items():
                    times[name].append(load(driver, path))
            use = {name: interact(driver, paths[name]) for name in ("job", "small")}
            use["small"].pop("heap MB", None)  # the browser's heap still holds the job page's: not the small page's
            severe = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        finally:
            driver.quit()
    med = {k: (statistics.median(a for a, _ in v), statistics.median(b for _, b in v)) for k, v in times.items()}
    for name, (ready, painted) in med.items():
        print(f"{name:12s} script done {ready:7.0f} ms   interactive (first frame) {painted:7.0f} ms   "
              f"(median of {args.runs}; first load {times[name][0][1]:.0f} ms)")
    tti, reference = med["job"][1], med["parse only"][1]
    print(f"job: time to interactive {tti:.0f} ms (target < {TARGET_MS:.0f} ms: {tti / TARGET_MS:.2f} of it); "
          f"/ the same data parsed alone = {tti / reference:.2f}")
    for name, u in use.items():
        print(f"{name}: {_use(u)}")
    if severe:
        print(f"console errors: {severe}")
    ok = not severe and tti < TARGET_MS and job_mb < TARGET_JOB_MB and small_mb < TARGET_SMALL_MB
    print("ok" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
