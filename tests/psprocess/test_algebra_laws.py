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

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from psuite.analysis import algebra
from psuite.analysis.experiments import load
from psuite.analysis.flame_diff import paired_exclusive
from psuite.formats.exporters import cube, folded_diff
from tests.conftest import TARGETS, run_tool
from tests.psprocess.cube_fixtures import scorep_cube


def diff_folded(minuend, subtrahend, metric=None):
    return folded_diff.render(paired_exclusive(minuend, subtrahend, metric))


PAGES = 20000  # pages each function touches (x percent / 100 for "slower")
PERIOD = 10  # page faults per sample

SOURCE = r"""
#include <stdlib.h>
#include <sys/mman.h>
/* TOUCH faults in `pages` fresh pages: one page fault each.  In a function
   of its own for the call-path profiles (main > steady|slower > touch);
   with -DFLAT written out inside steady and slower (a macro, so that no
   line of it belongs to another function), for flat profiles. */
static volatile long sink;
#define TOUCH_PAGES(pages) do { \
    long size_ = (pages) * 4096L; \
    char *p_ = mmap(0, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); \
    if (p_ == MAP_FAILED) exit(3); \
    madvise(p_, size_, MADV_NOHUGEPAGE); \
    for (long i_ = 0; i_ < size_; i_ += 4096) p_[i_] = 1; \
    sink += p_[size_ - 1]; \
    munmap(p_, size_); } while (0)
#ifdef FLAT
#define TOUCH(pages) TOUCH_PAGES(pages)
#else
__attribute__((noinline)) static void touch(long pages) { TOUCH_PAGES(pages); }
#define TOUCH(pages) touch(pages)
#endif
__attribute__((noinline)) void steady(long pages) { for (int k = 0; k < 10; k++) TOUCH(pages / 10); }
__attribute__((noinline)) void slower(long pages) { for (int k = 0; k < 10; k++) TOUCH(pages / 10); }
int main(int argc, char **argv) {
    long pages = atol(argv[1]), percent = atol(argv[2]);
    steady(pages);
    slower(pages * percent / 100);
    return 0;
}
"""
MPI_ENV = {"OMPI_MCA_plm_rsh_agent": "", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The program built once, and its documents: call-path profiles "a",
    "a2" (the same run again), "b" (slower() touching 20 % more) and
    "b_renamed" (b's run of a copy of the program named pages_v2); flat
    profiles "fa" and "fb" (the same two); counting reports "x"
    (page-faults), "x2" (slower() touching 50 % more) and "y" (task-clock);
    "ma" and "mb": two runs of a 4-rank MPI program counting page-faults,
    each combined into one document (psprocess -c -f xml), beside
    directories "ma.ranks" and "mb.ranks" of the ranks' own reports."""
    d = tmp_path_factory.mktemp("algebra_laws")
    (d / "pages.c").write_text(SOURCE)
    exe, flat, renamed = d / "pages", d / "pages_flat", d / "pages_v2"
    subprocess.run(["cc", "-O1", "-g", "-o", str(exe), str(d / "pages.c")], check=True)
    subprocess.run(["cc", "-O1", "-g", "-DFLAT", "-o", str(flat), str(d / "pages.c")], check=True)
    shutil.copy(exe, renamed)
    out = {"exe": exe, "flat": flat}
    profile = ["--profile", "page-faults", "--period", str(PERIOD)]
    for name, program, options, percent in (
            ("a", exe, [*profile, "--callpath"], 100), ("a2", exe, [*profile, "--callpath"], 100),
            ("b", exe, [*profile, "--callpath"], 120), ("b_renamed", renamed, [*profile, "--callpath"], 120),
            ("fa", flat, profile, 100), ("fb", flat, profile, 120),
            ("x", exe, ["-e", "page-faults"], 100), ("x2", exe, ["-e", "page-faults"], 150),
            ("y", exe, ["-e", "task-clock"], 100)):
        run_dir = d / name
        run_dir.mkdir()
        p = run_tool("psrun", "-q", "-d", str(run_dir), *options, str(program), str(PAGES), str(percent))
        assert p.returncode == 0, p.stderr
        [doc] = [f for f in run_dir.glob("*.xml") if not f.name.endswith(".callpaths.xml")]
        out[name] = doc
    mpicc, mpirun = shutil.which("mpicc"), shutil.which("mpirun")
    assert mpicc and mpirun, "Open MPI is needed (tests/run.sh installs openmpi-bin and libopenmpi-dev)"
    mpi_exe = d / "mpi_work"
    subprocess.run([mpicc, "-O1", "-o", str(mpi_exe), str(TARGETS / "mpi" / "mpi_work.c")], check=True)
    for name in ("ma", "mb"):
        ranks = d / f"{name}.ranks"
        ranks.mkdir()
        p = subprocess.run([mpirun, "--oversubscribe", "--allow-run-as-root", "-np", "4", "--mca", "btl",
                            "self,vader", sys.executable, "-m", "psuite.psrun", "-q", "-d", str(ranks),
                            "-e", "page-faults", str(mpi_exe)],
                           capture_output=True, text=True, timeout=300, env={**os.environ, **MPI_ENV})
        assert p.returncode == 0, p.stdout + p.stderr
        out[f"{name}.ranks"] = ranks
        out[name] = d / f"{name}.xml"
        p = run_tool("psprocess", "-c", "-f", "xml", "-o", str(out[name]), str(ranks))
        assert p.returncode == 0, p.stderr
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

    from tests.psprocess.pycubexr_stored import stored_only

    out = {}
    with CubexParser(str(stored_only(path))) as parser:
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
    assert {"page_faults", "task_clock"} <= names  # perf's names as CubePL can name them
    assert r.values["page_faults"].sum() == event_value(runs["x"], "page-faults") >= 2 * PAGES
    assert r.values["task_clock"].sum() == event_value(runs["y"], "task-clock") > 0
    cube.write(r, str(tmp_path / "merged.cubex"))
    assert sum(pycubexr_values(tmp_path / "merged.cubex", "page_faults").values()) == \
        event_value(runs["x"], "page-faults")


def test_diff_of_a_mean_is_half_the_difference(runs):
    a, b = load(str(runs["a"])), load(str(runs["b"]))
    left = algebra.diff(algebra.mean([a, b]), a)
    right = algebra.diff(b, a)
    # the same call paths, in the order each operation met them (A's first on the left, B's on the right:
    # two runs sample a few different paths, psuite's own start-up among them)
    order = {p: i for i, p in enumerate(right.paths())}
    assert sorted(left.paths()) == sorted(order)
    rows = [order[p] for p in left.paths()]
    for name in ("samples",) + tuple(m.name for m in right.metrics if not m.derived and m.name != "samples"):
        assert np.allclose(left.values[name], 0.5 * right.values[name][rows]), name
    assert right.values["samples"].sum() > 0.1 * PAGES / PERIOD  # b did more


def test_diff_of_programs_named_apart_meets_below_one_root(runs, tmp_path):
    """Two builds of one code under different names (pages, pages_v2):
    psuite's root of each is the program, and the code of the executable
    without a source file (_start) is the program's, so their call paths
    meet under one root named after both (CubeLib's cube_diff keeps them
    apart: their root regions are named apart)."""
    p = run_tool("psprocess", "diff", str(runs["b_renamed"]), str(runs["a"]), "-o", str(tmp_path / "d.cubex"))
    assert p.returncode == 0, p.stderr
    d = load(str(tmp_path / "d.cubex"))
    [root] = d.roots
    assert d.path(root) == ("pages_v2 | pages",)
    starts = [p for p in d.paths() if p[-1] == "_start"]
    assert starts == [("pages_v2 | pages", "_start")], starts
    a, b = load(str(runs["a"])), load(str(runs["b_renamed"]))
    for caller in ("steady", "slower"):
        [row] = [i for i, p in enumerate(d.paths()) if p[-2:] == (caller, "touch")]
        assert d.values["samples"][row].sum() == samples_of(b, "touch", caller) - samples_of(a, "touch", caller)
    assert samples_of(d, "touch", "slower") > 0.1 * PAGES / PERIOD  # pages_v2 touched 20 % more there


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
    # the command a CI job calls: exit status 0 within, 1 beyond, the moved call path named
    # (an absolute tolerance too: a few samples land in psrun's own code, 0 in one run and 1 in the other)
    ok = run_tool("psprocess", "compare", str(runs["a"]), str(runs["b"]), "--tolerance", "samples=30%",
                  "--tolerance", "samples=5")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    moved = run_tool("psprocess", "compare", str(runs["a"]), str(runs["b"]), "--tolerance", "samples=10%",
                     "--tolerance", "samples=5")
    assert moved.returncode == 1, moved.stdout + moved.stderr
    assert "slower" in moved.stdout and "touch" in moved.stdout


# -- results against the inputs' own numbers -------------------------------------------------


def test_counting_reports_diff_is_the_difference_of_their_counts(runs):
    x, x2 = load(str(runs["x"])), load(str(runs["x2"]))
    d = algebra.diff(x2, x)
    assert len(d.cnodes) == 1 and len(d.locations) == 1
    expected = event_value(runs["x2"], "page-faults") - event_value(runs["x"], "page-faults")
    assert d.values["page_faults"].tolist() == [[expected]]
    assert expected == pytest.approx(0.5 * PAGES, rel=0.05)  # slower() touched half as many pages more


def function_samples(doc: Path, exe: Path) -> dict[str, int]:
    """Samples per function of the executable, from the profile's program
    counters and nm's symbol table (not through psuite's resolution)."""
    nm = subprocess.run(["nm", "-S", "--defined-only", str(exe)], capture_output=True, text=True,
                        check=True).stdout
    symbols = [(int(f[0], 16), int(f[1], 16), f[3]) for f in map(str.split, nm.splitlines())
               if len(f) == 4 and f[2] in ("t", "T")]
    out: dict[str, int] = {}
    for module in etree.parse(str(doc)).getroot().iter("module"):
        if module.get("file") != str(exe):
            continue
        base = int(module.get("offset"), 16)  # where the executable (a PIE) was loaded
        for samples in module.iter("samples"):
            radix = int(samples.get("pcbase", "16"))
            for sample in samples.iter("sample"):
                pc = int(sample.get("pc"), radix) - base
                [name] = [n for start, size, n in symbols if start <= pc < start + size]
                out[name] = out.get(name, 0) + int(sample.text)
    return out


def test_flat_profiles_diff_per_function(runs):
    fa, fb = load(str(runs["fa"])), load(str(runs["fb"]))
    d = algebra.diff(fb, fa)
    assert all(len(p) <= 2 for p in d.paths())  # flat: the program's root and its functions
    got = {p[-1]: float(v.sum()) for p, v in paths_and_values(d, "samples").items() if len(p) == 2}
    before, after = function_samples(runs["fa"], runs["flat"]), function_samples(runs["fb"], runs["flat"])
    assert {"steady", "slower"} <= set(before) & set(after)
    for function in set(before) | set(after):
        assert got[function] == after.get(function, 0) - before.get(function, 0), function
    assert got["slower"] == pytest.approx(0.2 * PAGES / PERIOD, rel=0.05)
    assert d.values["samples"].sum() == total_samples(runs["fb"]) - total_samples(runs["fa"])


def rank_counts(directory: Path) -> dict[int, int]:
    """page-faults per MPI rank, from each rank's own report."""
    out = {}
    for doc in directory.glob("*.xml"):
        annotation = etree.parse(str(doc)).getroot().findtext("annotation")
        out[int(re.search(r"MPI rank (\d+)", annotation).group(1))] = event_value(doc, "page-faults")
    return out


def test_multi_rank_documents_per_rank(runs, tmp_path):
    ma, mb = load(str(runs["ma"])), load(str(runs["mb"]))
    ca, cb = rank_counts(runs["ma.ranks"]), rank_counts(runs["mb.ranks"])
    assert sorted(ca) == sorted(cb) == [0, 1, 2, 3]
    m, d = algebra.mean([ma, mb]), algebra.diff(mb, ma)
    assert sorted(loc.key for loc in m.locations) == [(r, 0) for r in range(4)]
    for j, loc in enumerate(m.locations):
        assert m.values["page_faults"][:, j].sum() == (ca[loc.rank] + cb[loc.rank]) / 2
        assert d.values["page_faults"][:, j].sum() == cb[loc.rank] - ca[loc.rank]
    c = algebra.diff(mb, ma, collapse=True)  # cube_diff -C: the ranks kept under one virtual node
    assert len(c.locations) == 4 and c.values["page_faults"].sum() == sum(cb.values()) - sum(ca.values())
    with pytest.raises(algebra.AlgebraError, match="-C to put every process"):
        algebra.diff(ma, load(str(runs["x"])))  # 4 ranks against one process
    cube.write(m, str(tmp_path / "mean.cubex"))
    assert sum(pycubexr_values(tmp_path / "mean.cubex", "page_faults").values()) == \
        pytest.approx((sum(ca.values()) + sum(cb.values())) / 2)


def test_scorep_cube_nested_metrics_of_both_kinds(tmp_path):
    ca, cb = scorep_cube(tmp_path / "a.cubex", seed=15), scorep_cube(tmp_path / "b.cubex", seed=16)
    a, b = load(ca.path), load(cb.path)
    d, m = algebra.diff(a, b), algebra.mean([a, b])
    rows = [d.paths().index(p) for p in ca.paths]  # the fixture's call paths and locations in the result
    keys = [loc.key for loc in d.locations]
    cols = [keys.index((rank, thread)) for _, rank, _, thread in ca.locations]
    for metric in ca.metrics:
        if metric.kind == "POSTDERIVED":
            assert d.metric(metric.name).expression == metric.expression and metric.name not in d.values
            continue
        view_a = (ca.inclusive if metric.kind == "INCLUSIVE" else ca.exclusive)[metric.name]
        view_b = (cb.inclusive if metric.kind == "INCLUSIVE" else cb.exclusive)[metric.name]
        assert d.metric(metric.name).kind == metric.kind
        assert np.array_equal(d.values[metric.name][np.ix_(rows, cols)], view_a - view_b), metric.name
        assert np.allclose(m.values[metric.name][np.ix_(rows, cols)], (view_a + view_b) / 2), metric.name
    assert d.metrics[d.metric("mpi").parent].name == "time"
    assert d.values["bytes_sent"].dtype == np.int64 and d.metric("visits").dtype == "INT64"
    # pycubexr reads the result (of single-rooted cubes: it takes no other)
    sa = scorep_cube(tmp_path / "sa.cubex", seed=15, single_root=True)
    sb = scorep_cube(tmp_path / "sb.cubex", seed=16, single_root=True)
    cube.write(algebra.diff(load(sa.path), load(sb.path)), str(tmp_path / "d.cubex"))
    for name in ("time", "visits"):  # INCLUSIVE and EXCLUSIVE in the file; exclusive sums here
        read = pycubexr_values(tmp_path / "d.cubex", name)
        expected = (sa.exclusive[name] - sb.exclusive[name]).sum(axis=1)
        assert [read[p] for p in sa.paths] == pytest.approx(expected.tolist()), name
    # prune solve: its subtree's visits (EXCLUSIVE) go to main; time (INCLUSIVE) at main is unchanged
    cut = algebra.cut(a, prune=["solve"])
    kept = [i for i, p in enumerate(ca.paths) if "solve" not in p]
    assert sorted(cut.paths()) == sorted(ca.paths[i] for i in kept)
    crow = {p: i for i, p in enumerate(cut.paths())}
    ckeys = [loc.key for loc in cut.locations]
    ccols = [ckeys.index((rank, thread)) for _, rank, _, thread in ca.locations]
    solve_subtree = [i for i, p in enumerate(ca.paths) if "solve" in p]
    main_visits = ca.exclusive["visits"][0] + ca.exclusive["visits"][solve_subtree].sum(axis=0)
    assert cut.values["visits"][crow[("main",)], ccols].tolist() == main_visits.tolist()
    assert cut.values["time"][crow[("main",)], ccols].tolist() == ca.inclusive["time"][0].tolist()
    for i in kept[1:]:
        assert cut.values["visits"][crow[ca.paths[i]], ccols].tolist() == ca.exclusive["visits"][i].tolist()


def test_differential_folded_stacks_of_two_profiles(runs):
    a, b = load(str(runs["a"])), load(str(runs["b"]))
    lines = {}
    for line in diff_folded(b, a).splitlines():  # "stack before after": before is a, after is b
        stack, before, after = line.rsplit(" ", 2)
        lines[stack] = (int(before), int(after))
    [slower] = [v for k, v in lines.items() if k.endswith(";main;slower;touch")]
    [steady] = [v for k, v in lines.items() if k.endswith(";main;steady;touch")]
    expected = PAGES / PERIOD
    assert slower == (pytest.approx(expected, rel=0.02), pytest.approx(1.2 * expected, rel=0.02))
    assert steady == (pytest.approx(expected, rel=0.02), pytest.approx(expected, rel=0.02))
    assert sum(v[0] for v in lines.values()) == total_samples(runs["a"])
    assert sum(v[1] for v in lines.values()) == total_samples(runs["b"])
