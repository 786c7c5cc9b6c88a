"""The laws of the performance algebra on real psuite documents (issue 15,
"Done when"): diff(A, A) is zero; mean(A, A) is A; merge of a run counting
events X and one counting Y has X's and Y's values; diff(mean(A, B), A) is
half of diff(B, A); cut --prune keeps each root's inclusive total; compare
passes within and fails beyond a tolerance on two profiles of one program
where one function does 20 % more work.

The program touches fresh pages, and is profiled on the page-faults
software event: one fault per page, so the samples of each function are
known in advance and do not depend on how loaded the machine is (a timer
profile of the same program would move with the load).  Results written
as CUBE files are read back with pycubexr."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from psuite.psprocess import algebra
from psuite.psprocess.experiments import load
from psuite.psprocess.exporters import cube
from tests.conftest import run_tool

PAGES = 20000  # pages each function touches (x percent / 100 for "slower")
PERIOD = 10  # page faults per sample

SOURCE = r"""
#include <stdlib.h>
#include <sys/mman.h>
/* touch() faults in `pages` fresh pages: one page fault each. */
static volatile long sink;
__attribute__((noinline)) static void touch(long pages) {
    long size = pages * 4096;
    char *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(3);
    madvise(p, size, MADV_NOHUGEPAGE);
    for (long i = 0; i < size; i += 4096) p[i] = 1;
    sink += p[size - 1];
    munmap(p, size);
}
__attribute__((noinline)) void steady(long pages) { for (int k = 0; k < 10; k++) touch(pages / 10); }
__attribute__((noinline)) void slower(long pages) { for (int k = 0; k < 10; k++) touch(pages / 10); }
int main(int argc, char **argv) {
    long pages = atol(argv[1]), percent = atol(argv[2]);
    steady(pages);
    slower(pages * percent / 100);
    return 0;
}
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The program built once, and its documents: profiles "a", "a2" (the
    same run again) and "b" (slower() touching 20 % more), counting reports
    "x" (page-faults) and "y" (task-clock)."""
    d = tmp_path_factory.mktemp("algebra_laws")
    (d / "pages.c").write_text(SOURCE)
    exe = d / "pages"
    subprocess.run(["cc", "-O1", "-g", "-o", str(exe), str(d / "pages.c")], check=True)
    out = {}
    profile = ["--profile", "page-faults", "--period", str(PERIOD), "--callpath"]
    for name, options, percent in (("a", profile, 100), ("a2", profile, 100), ("b", profile, 120),
                                   ("x", ["-e", "page-faults"], 100), ("y", ["-e", "task-clock"], 100)):
        run_dir = d / name
        run_dir.mkdir()
        p = run_tool("psrun", "-q", "-d", str(run_dir), *options, str(exe), str(PAGES), str(percent))
        assert p.returncode == 0, p.stderr
        [doc] = [f for f in run_dir.glob("*.xml") if not f.name.endswith(".callpaths.xml")]
        out[name] = doc
    return out


def paths_and_values(e, metric: str) -> dict[tuple[str, ...], np.ndarray]:
    """Per call path (region names from the root) its stored values (summed
    over call paths of equal names)."""
    a = e.values[metric]
    out: dict = {}
    for i, p in enumerate(e.paths()):
        out[p] = out.get(p, 0) + a[i]
    return out


def samples_of(e, leaf: str, caller: str) -> float:
    """Samples of the path ... caller;leaf, summed over locations."""
    return sum(float(v.sum()) for p, v in paths_and_values(e, "samples").items() if p[-2:] == (caller, leaf))


def total_samples(doc: Path) -> int:
    """Samples the profile says it has (its own total, read from the XML)."""
    return int(etree.parse(str(doc)).getroot().find(".//totalsamples").text)


def event_value(doc: Path, event: str) -> int:
    root = etree.parse(str(doc)).getroot()
    [value] = [int(e.text) for e in root.iter("hwpcevent") if e.get("name") == event]
    return value


def pycubexr_values(path: Path, metric: str) -> dict[tuple[str, ...], float]:
    """A written cube read by pycubexr: per call path the metric summed over locations."""
    from pycubexr import CubexParser

    out = {}
    with CubexParser(str(path)) as parser:
        m = parser.get_metric_by_name(metric)
        values = parser.get_metric_values(metric=m)

        def walk(cnode, prefix):
            path = prefix + (parser.get_region(cnode).name,)
            out[path] = out.get(path, 0.0) + float(sum(values.cnode_values(cnode, convert_to_exclusive=True)))
            for child in cnode.get_children():
                walk(child, path)

        for root in parser.get_root_cnodes():
            walk(root, ())
    return out


def test_diff_of_a_run_with_itself_is_zero(runs, tmp_path):
    a, again = load(str(runs["a"])), load(str(runs["a"]))
    d = algebra.diff(a, again)
    assert d.paths() == a.paths() and len(d.locations) == len(a.locations)
    measured = [m.name for m in d.metrics if not m.derived]
    assert "samples" in measured
    for name in measured:
        assert not d.values[name].any(), name
    cube.write(a, str(tmp_path / "a.cubex"))
    from_cube = load(str(tmp_path / "a.cubex"))
    dc = algebra.diff(from_cube, a)
    assert all(not dc.values[m].any() for m in measured)
    cube.write(d, str(tmp_path / "d.cubex"))
    assert set(pycubexr_values(tmp_path / "d.cubex", "samples").values()) == {0.0}


def test_mean_of_a_run_with_itself_is_the_run(runs, tmp_path):
    a = load(str(runs["a"]))
    m = algebra.mean([a, load(str(runs["a"]))])
    assert m.paths() == a.paths()
    for metric in (x.name for x in a.metrics if not x.derived):
        assert np.array_equal(m.values[metric], a.values[metric]), metric
    assert m.values["samples"].sum() == total_samples(runs["a"])  # psrun's own total
    cube.write(m, str(tmp_path / "m.cubex"))
    read_back = pycubexr_values(tmp_path / "m.cubex", "samples")
    assert read_back == pytest.approx({p: float(v.sum()) for p, v in paths_and_values(a, "samples").items()})


def test_merge_of_runs_counting_different_events_has_both(runs, tmp_path):
    x, y = load(str(runs["x"])), load(str(runs["y"]))
    r = algebra.merge([x, y])
    names = {m.name for m in r.metrics}
    assert {"page-faults", "task-clock"} <= names
    assert r.values["page-faults"].sum() == event_value(runs["x"], "page-faults") >= 2 * PAGES
    assert r.values["task-clock"].sum() == event_value(runs["y"], "task-clock") > 0
    cube.write(r, str(tmp_path / "merged.cubex"))
    assert sum(pycubexr_values(tmp_path / "merged.cubex", "page-faults").values()) == \
        event_value(runs["x"], "page-faults")


def test_diff_of_a_mean_is_half_the_difference(runs):
    a, b = load(str(runs["a"])), load(str(runs["b"]))
    left = algebra.diff(algebra.mean([a, b]), a)
    right = algebra.diff(b, a)
    assert left.paths() == right.paths()
    for name in ("samples",) + tuple(m.name for m in right.metrics if not m.derived and m.name != "samples"):
        assert np.allclose(left.values[name], 0.5 * right.values[name]), name
    assert right.values["samples"].sum() > 0.1 * PAGES / PERIOD  # b did more


def test_cut_prune_keeps_each_roots_inclusive_total(runs):
    a = load(str(runs["a"]))

    def root_totals(e) -> dict[tuple[str, ...], np.ndarray]:
        """Per root (by path), the sum of every exclusive value below it, walking parents."""
        totals: dict = {}
        a_ = e.values["samples"]
        for i in range(len(e.cnodes)):
            top = i
            while e.cnodes[top].parent is not None:
                top = e.cnodes[top].parent
            key = e.path(top)
            totals[key] = totals.get(key, 0) + a_[i]
        return totals

    before = root_totals(a)
    steady_before = samples_of(a, "touch", "steady")
    cut = algebra.cut(a, prune=["touch"])
    assert not any(p[-1] == "touch" for p in cut.paths())
    after = root_totals(cut)
    assert set(after) == set(before)
    for root, v in before.items():
        assert np.array_equal(after[root], v), root
    steady = sum(float(v.sum()) for p, v in paths_and_values(cut, "samples").items() if p[-1] == "steady")
    assert steady == steady_before >= 0.9 * PAGES / PERIOD
    rooted = algebra.cut(a, root="steady")
    assert {p[0] for p in rooted.paths()} == {"steady"}
    assert rooted.values["samples"].sum() == steady_before


def test_compare_passes_within_and_fails_beyond_a_tolerance(runs):
    a, a2, b = load(str(runs["a"])), load(str(runs["a2"])), load(str(runs["b"]))
    for doc, e in ((runs["a"], a), (runs["b"], b)):
        assert e.values["samples"].sum() == total_samples(doc)
    steady, slower = samples_of(b, "touch", "steady"), samples_of(b, "touch", "slower")
    assert slower == pytest.approx(1.2 * steady, rel=0.02)  # what the program was made to do
    assert samples_of(a, "touch", "slower") == pytest.approx(steady, rel=0.02)
    again = algebra.compare(a, a2, [algebra.Tolerance("samples", relative=0.05, absolute=5)])
    assert again.within
    within = algebra.compare(a, b, [algebra.Tolerance("samples", relative=0.3, absolute=5)])
    assert within.within and not within.equal
    beyond = algebra.compare(a, b, [algebra.Tolerance("samples", relative=0.1, absolute=5)])
    assert not beyond.within
    first = beyond.moved[0]
    assert first.metric == "samples" and first.path[-2:] == ("slower", "touch")
    assert first.relative == pytest.approx(0.2, abs=0.02)
    assert all(m.path[-1] != "steady" and m.path[-2:] != ("steady", "touch") for m in beyond.moved)
