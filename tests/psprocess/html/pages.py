"""Reading the HTML report in the browser the way a test needs it: the
values the page shows, through the stable data-* attributes app.js puts on
every node (data-metric, data-cnode, data-region, data-rank, data-location,
data-value), and the test program the pages are made from."""

from __future__ import annotations

import re
import time
from pathlib import Path

from lxml import etree

# steady() and slower() each touch fresh pages on one line of their own (one
# page fault per page); with WITH_MPI rank r touches (r + 1) times as many.
PAGE_SOURCE = r"""#include <stdlib.h>
#include <sys/mman.h>
#ifdef WITH_MPI
#include <mpi.h>
#endif
static volatile long sink;
static char *fresh(long size) {
    char *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(3);
    madvise(p, size, MADV_NOHUGEPAGE);
    return p;
}
__attribute__((noinline)) void steady(long pages) {
    long size = pages * 4096L;
    char *p = fresh(size);
    for (long i = 0; i < size; i += 4096) p[i] = 1; /* steady's hot line */
    sink += p[size - 1];
    munmap(p, size);
}
__attribute__((noinline)) void slower(long pages) {
    long size = pages * 4096L;
    char *p = fresh(size);
    for (long i = 0; i < size; i += 4096) p[i] = 2; /* slower's hot line */
    sink += p[size - 1];
    munmap(p, size);
}
int main(int argc, char **argv) {
    long scale = 1;
#ifdef WITH_MPI
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    scale = rank + 1;
#endif
    steady(atol(argv[1]) * scale);
    slower(atol(argv[2]) * scale);
#ifdef WITH_MPI
    MPI_Finalize();
#endif
    return 0;
}
"""


def ranks_of(doc: Path) -> int:
    """The MPI rank psrun noted in a report's annotation."""
    annotation = etree.parse(str(doc)).getroot().findtext("annotation")
    return int(re.search(r"MPI rank (\d+)", annotation).group(1))


def _number(text: str) -> float | int:
    v = float(text)
    return int(v) if v.is_integer() else v


def screenshot(driver, directory: Path, name: str) -> Path:
    path = directory / f"{name}.png"
    driver.save_screenshot(str(path))
    print(f"screenshot: {path}")
    return path


class Page:
    def __init__(self, driver):
        self.d = driver

    def js(self, script: str, *args):
        return self.d.execute_script(script, *args)

    def wait(self, script: str, timeout: float = 30.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            v = self.js(script)
            if v:
                return v
            time.sleep(0.05)
        raise AssertionError(f"page never satisfied: {script}")

    # -- values shown --------------------------------------------------------
    def metric_values(self) -> dict[str, float]:
        rows = self.js(
            "return Array.from(document.querySelectorAll('[data-tree=metric] .row'))"
            ".map(r => [r.dataset.metric, r.dataset.value])"
        )
        return {m: _number(v) for m, v in rows}

    def call_values(self) -> dict[int, tuple[str, float]]:
        rows = self.js(
            "return Array.from(document.querySelectorAll('[data-tree=call] .row'))"
            ".map(r => [r.dataset.cnode, r.dataset.region, r.dataset.value])"
        )
        return {int(c): (name, _number(v)) for c, name, v in rows}

    def rank_values(self) -> dict[int, float]:
        rows = self.js(
            "return Array.from(document.querySelectorAll('[data-tree=system] .row[data-rank]'))"
            ".map(r => [r.dataset.rank, r.dataset.value])"
        )
        return {int(r): _number(v) for r, v in rows}

    def location_values(self) -> dict[int, float]:
        rows = self.js(
            "return Array.from(document.querySelectorAll('[data-tree=system] .row[data-location]'))"
            ".map(r => [r.dataset.location, r.dataset.value])"
        )
        return {int(r): _number(v) for r, v in rows}

    def selected_call(self) -> str:
        return self.js("return document.querySelector('[data-tree=call] .row.sel').dataset.region")

    def square_colours(self) -> dict[str, tuple[int, int, int]]:
        rows = self.js(
            "return Array.from(document.querySelectorAll('[data-tree=call] .row'))"
            ".map(r => [r.dataset.region, getComputedStyle(r.querySelector('.sq')).backgroundColor])"
        )
        return {name: tuple(int(x) for x in re.findall(r"\d+", c)[:3]) for name, c in rows}

    def hot_line(self) -> dict:
        return self.js("""
            const tr = document.querySelector('#source tr[data-hot]');
            const box = tr.closest('.srcscroll');
            const top = tr.offsetTop - box.scrollTop;
            return {line: +tr.dataset.line, samples: +tr.dataset.samples, percent: +tr.dataset.percent,
                    text: tr.textContent, code: tr.querySelector('.code').textContent,
                    background: getComputedStyle(tr).backgroundColor,
                    visible: top >= 0 && top + tr.offsetHeight <= box.clientHeight};""")

    def imbalance(self) -> dict[str, float]:
        rows = self.js(
            "return Array.from(document.querySelectorAll('#imbalance tr[data-column]'))"
            ".map(r => [r.dataset.column, r.dataset.imbalance])"
        )
        return {c: float(v) for c, v in rows}

    def context(self) -> dict[str, str]:
        rows = self.js(
            "return Array.from(document.querySelectorAll('#context tr'))"
            ".map(r => [r.dataset.key, r.querySelector('td').textContent])"
        )
        return dict(rows)

    def count(self, selector: str) -> int:
        return self.js("return document.querySelectorAll(arguments[0]).length", selector)

    # -- acting --------------------------------------------------------------
    def _click(self, selector: str) -> None:
        [element] = self.d.find_elements("css selector", selector)[:1]
        self.d.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
        element.click()

    def select_metric(self, name: str) -> None:
        self._click(f"[data-tree=metric] .row[data-metric='{name}'] .name")

    def click_call(self, region: str) -> None:
        self._click(f"[data-tree=call] .row[data-region='{region}'] .name")

    def click_system_rank(self, rank: int) -> None:
        self._click(f"[data-tree=system] .row[data-rank='{rank}'] .name")

    def toggle_metric(self, name: str) -> None:
        self._click(f"[data-tree=metric] .row[data-metric='{name}'] .tog")

    def toggle_call(self, region: str) -> None:
        self._click(f"[data-tree=call] .row[data-region='{region}'] .tog")

    def toggle_rank(self, rank: int) -> None:
        self._click(f"[data-tree=system] .row[data-rank='{rank}'] .tog")

    def set_mode(self, pane: str, mode: str) -> None:
        self.js(
            "const s = document.querySelector(`select[data-mode=${arguments[0]}]`); s.value = arguments[1];"
            "s.dispatchEvent(new Event('change'));",
            pane,
            mode,
        )

    def open_tab(self, name: str) -> None:
        self._click(f"nav button[data-tab='{name}']")
        if name in ("flame", "charts"):
            self.wait(
                f"return document.querySelectorAll('#tab-{name} svg.chart').length > 0"
                f" || document.querySelector('#tab-{name} p.note')"
            )

    def assert_no_console_errors(self) -> None:
        severe = [e for e in self.d.get_log("browser") if e["level"] == "SEVERE"]
        assert not severe, severe


def load_page(driver, path: Path) -> Page:
    """Open a page from disk and wait until its panes are drawn
    (window.psuiteReady); the console log starts empty."""
    driver.get_log("browser")  # what earlier pages logged is theirs
    driver.get(path.resolve().as_uri())
    page = Page(driver)
    page.wait("return window.psuiteReady !== undefined")
    page.assert_no_console_errors()
    return page


def hand_view(**changes) -> dict:
    """A small view written by hand (psuite.psprocess.html's schema), for
    the shapes real runs rarely give: missing values, derived metrics,
    several roots and machines, a difference, a source without lines."""
    view = {
        "psuite_view": 1,
        "title": "hand-made <view> & co",
        "kind": "cube",
        "difference": False,
        "context": [["Command", "./app --x"], ["Ranks", "2"]],
        "dropped": [{"event": "PAPI_FP_OPS", "why": "not supported by this processor"}],
        "metrics": [
            {
                "name": "time",
                "display": "Time",
                "unit": "sec",
                "description": "",
                "parent": None,
                "integer": False,
                "derived": False,
            },
            {
                "name": "mpi",
                "display": "MPI",
                "unit": "sec",
                "description": "",
                "parent": 0,
                "integer": False,
                "derived": False,
            },
            {
                "name": "ratio",
                "display": "Ratio",
                "unit": "",
                "description": "",
                "parent": None,
                "integer": False,
                "derived": True,
            },
        ],
        "regions": [
            {"name": "main", "module": "app", "file": "app.c", "line": 1},
            {"name": "work", "module": "app", "file": "app.c", "line": 5},
            {"name": "other", "module": "app", "file": "gone.c", "line": 3},
            {"name": "worker", "module": "app", "file": None, "line": None},
        ],
        "cnodes": {"region": [0, 1, 2, 3, 1], "parent": [-1, 0, 0, -1, 3], "line": [-1, 2, 3, -1, -1]},
        "locations": [
            {"machine": "m1", "node": "n1", "rank": 0, "thread": 0, "label": "n1/rank 0/thread 0"},
            {"machine": "m1", "node": "n1", "rank": 0, "thread": 1, "label": "n1/rank 0/thread 1"},
            {"machine": "m2", "node": "n2", "rank": 1, "thread": 0, "label": "n2/rank 1/thread 0"},
        ],
        "values": {
            "time": {
                "exclusive": [1, 2, None, 4, 5, None, 0, 0, 0, 1.5, 2.5, 3.5, None, None, None],
                "inclusive": None,
            },
            "mpi": {"exclusive": [0.5] * 15, "inclusive": None},
            "ratio": {"exclusive": [0.1] * 15, "inclusive": [0.2, 0.3, None, 0.1, 0.1, 0.1, 0, 0, 0, 1, 1, 1, 2, 2, 2]},
        },
        "sources": [
            {
                "file": "app.c",
                "path": "/src/app.c",
                "lines": ["int main() {", "  work();", "}", "", "void work() {}"],
                "samples": {"2": 3, "5": 7, "99": 1},
                "total": 20,
                "note": "",
            },
            {"file": "gone.c", "path": None, "lines": [], "samples": {"3": 4}, "total": 20, "note": "not found"},
        ],
    }
    view.update(changes)
    return view


def exercise(page: Page) -> None:
    """Every tab, every mode, a click on every row's name and [+]/[-]."""
    page.js("""
        const clickAll = (sel) => { for (const e of Array.from(document.querySelectorAll(sel))) e.click(); };
        for (const b of document.querySelectorAll('nav button')) b.click();
        document.querySelector('nav button').click();
        for (const s of document.querySelectorAll('select[data-mode]')) {
          for (const o of s.options) { s.value = o.value; s.dispatchEvent(new Event('change')); }
        }
        for (let round = 0; round < 2; round++) {
          clickAll('.tree .row .tog');
          clickAll('.tree .row .name');
          clickAll('.tree .more');
        }
        for (const b of document.querySelectorAll('nav button')) b.click();
        document.querySelector('nav button').click();""")
