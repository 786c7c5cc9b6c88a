"""The HTML report's view document (psuite.psprocess.html.viewdoc) built
from real psrun output: a counting report, a flat profile, a 4-rank MPI
profile combined with -c and the difference of two profiles; and the
CLI that writes the page (--html FILE, -f html, the algebra's results).

Each view's names and values are checked against the documents' own
numbers, read here with lxml (event counts, total samples per rank, CPU
time) and against the test program's source (which line is hot).  The
program faults in fresh pages, profiled on the page-faults software
event: one fault per page, so each function's samples are known in
advance whatever the load of the machine."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from psuite.analysis.experiments import cubepl_name
from psuite.psprocess.html import page, viewdoc
from tests.conftest import one_line_error, run_tool

HOT_PAGES, COLD_PAGES = 20000, 4000  # pages hot() and cold() touch: one page fault each
MORE = 125  # percent of HOT_PAGES hot() touches in the second run (the difference)
MPI_PAGES = 3000  # rank r's hot() touches (r + 1) * MPI_PAGES pages
PERIOD = 10  # page faults per sample

SOURCE = r"""
#include <stdlib.h>
#include <sys/mman.h>
#ifdef USE_MPI
#include <mpi.h>
#endif
static volatile long sink;
static char *fresh(long size) {
    char *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(3);
    madvise(p, size, MADV_NOHUGEPAGE);
    return p;
}
__attribute__((noinline)) void hot(long pages) {
    long size = pages * 4096L;
    char *p = fresh(size);
    for (long i = 0; i < size; i += 4096) p[i] = 1; /* HOT */
    sink += p[size - 1];
    munmap(p, size);
}
__attribute__((noinline)) void cold(long pages) {
    long size = pages * 4096L;
    char *p = fresh(size);
    for (long i = 0; i < size; i += 4096) p[i] = 1; /* COLD */
    sink += p[size - 1];
    munmap(p, size);
}
int main(int argc, char **argv) {
    long factor = 1;
#ifdef USE_MPI
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    factor = rank + 1;
#endif
    hot(atol(argv[1]) * factor);
    cold(atol(argv[2]));
#ifdef USE_MPI
    MPI_Finalize();
#endif
    return 0;
}
"""
MPI_ENV = {"OMPI_MCA_plm_rsh_agent": "", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def marked_line(marker: str) -> int:
    """The line of SOURCE (as written to pages.c) holding the marker."""
    [n] = [i for i, line in enumerate(SOURCE.split("\n"), 1) if marker in line]
    return n


def one_document(run_dir: Path) -> Path:
    [doc] = [f for f in run_dir.glob("*.xml") if not f.name.endswith(".callpaths.xml")]
    return doc


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The program built and run: "counts" (page-faults, task-clock and
    PAPI_L1_DCM, which may not count here), flat profiles "flat" and
    "more" (hot() touching MORE percent), "calls" (with call paths), and
    "ranks": a directory of the 4 ranks' flat profiles of the MPI build,
    "rank_counts" of their counting reports (page-faults)."""
    d = tmp_path_factory.mktemp("viewdoc")
    (d / "pages.c").write_text(SOURCE)
    exe = d / "pages"
    subprocess.run(["cc", "-O1", "-g", "-o", str(exe), str(d / "pages.c")], check=True)
    out = {"dir": d, "source": d / "pages.c"}
    profile = ["--profile", "page-faults", "--period", str(PERIOD)]
    for name, options, hot in (("counts", ["-e", "page-faults", "-e", "task-clock", "-e", "PAPI_L1_DCM"], HOT_PAGES),
                               ("flat", profile, HOT_PAGES), ("more", profile, HOT_PAGES * MORE // 100),
                               ("calls", [*profile, "--callpath"], HOT_PAGES)):
        run_dir = d / name
        run_dir.mkdir()
        p = run_tool("psrun", "-q", "-d", str(run_dir), *options, str(exe), str(hot), str(COLD_PAGES))
        assert p.returncode == 0, p.stderr
        out[name] = one_document(run_dir)
    mpicc, mpirun = shutil.which("mpicc"), shutil.which("mpirun")
    assert mpicc and mpirun, "Open MPI is needed (tests/run.sh installs openmpi-bin and libopenmpi-dev)"
    mpi_exe = d / "pages_mpi"
    subprocess.run([mpicc, "-O1", "-g", "-DUSE_MPI", "-o", str(mpi_exe), str(d / "pages.c")], check=True)
    for name, options in (("ranks", profile), ("rank_counts", ["-e", "page-faults"])):
        ranks = d / name
        ranks.mkdir()
        p = subprocess.run([mpirun, "--oversubscribe", "--allow-run-as-root", "-np", "4", "--mca", "btl",
                            "self,vader", sys.executable, "-m", "psuite.psrun", "-q", "-d", str(ranks), *options,
                            str(mpi_exe), str(MPI_PAGES), str(COLD_PAGES)],
                           capture_output=True, text=True, timeout=300, env={**os.environ, **MPI_ENV})
        assert p.returncode == 0, p.stdout + p.stderr
        out[name] = ranks
    return out


# -- what the documents say, read here ------------------------------------------


def xml_root(doc: Path) -> etree._Element:
    return etree.parse(str(doc)).getroot()


def xml_events(doc: Path) -> dict[str, int]:
    """The document's counts by event, under the names psprocess reads them by."""
    from psuite.hwpc.names import canonical

    return {canonical(e.get("name")): int(e.text) for e in xml_root(doc).iter("hwpcevent")}


def xml_total_samples(doc: Path) -> int:
    return int(xml_root(doc).find(".//totalsamples").text)


def xml_rank(doc: Path) -> int:
    return int(re.search(r"MPI rank (\d+)", xml_root(doc).findtext("annotation")).group(1))


def xml_cpu_seconds(doc: Path) -> float:
    cpu = xml_root(doc).find("cputime")
    return float(cpu.findtext("usertime")) + float(cpu.findtext("systemtime"))


# -- reading views ----------------------------------------------------------------


def embedded_view(html: str) -> dict:
    """The view a page embeds (<script type="application/json" id="psuite-view">)."""
    m = re.search(r'<script type="application/json" id="psuite-view">(.*?)</script>', html, re.S)
    assert m, "the page embeds no view"
    return json.loads(m.group(1).replace("<\\/", "</"))


def cells(values: dict | list) -> list:
    """A metric's cells as the page decodes them (the view stores them sparse)."""
    return viewdoc.decode(values)


def grid(view: dict, metric: str) -> np.ndarray:
    """A metric's exclusive values as (cnodes, locations)."""
    n = len(view["cnodes"]["region"])
    return np.array(cells(view["values"][metric]["exclusive"]), dtype=float).reshape(n, len(view["locations"]))


def cnode_of(view: dict, function: str) -> int:
    names = [view["regions"][r]["name"] for r in view["cnodes"]["region"]]
    [c] = [i for i, name in enumerate(names) if name == function]
    return c


def check_schema(view: dict) -> None:
    """Every key of the contract (psuite.psprocess.html), lengths that fit,
    and JSON without NaN (the page embeds it with allow_nan=False)."""
    assert view["psuite_view"] == 1
    keys = {"title", "kind", "difference", "context", "dropped", "metrics", "regions", "cnodes", "locations",
            "values", "sources", "statistics"}
    assert keys <= set(view)
    n, m = len(view["cnodes"]["region"]), len(view["locations"])
    assert len(view["cnodes"]["parent"]) == n == len(view["cnodes"]["line"])
    assert all(p < i for i, p in enumerate(view["cnodes"]["parent"]))  # parents come first
    assert [x["name"] for x in view["metrics"]] == list(view["values"])
    for name, v in view["values"].items():
        assert len(cells(v["exclusive"])) == n * m, name
        assert v["inclusive"] is None or len(cells(v["inclusive"])) == n * m, name
    json.dumps(view, allow_nan=False)


# -- the views ------------------------------------------------------------------------


def test_counting_report_view(runs):
    view = viewdoc.load_view(str(runs["counts"]))
    check_schema(view)
    assert view["kind"] == "counts" and not view["difference"]
    counted = xml_events(runs["counts"])
    assert counted["page-faults"] >= HOT_PAGES + COLD_PAGES
    metrics = {m["name"]: m for m in view["metrics"]}
    for event, count in counted.items():  # one root cnode, one location: the value is the count itself
        name = cubepl_name(event)  # named so that CubePL can name it: page-faults as page_faults
        assert metrics[name]["integer"] and not metrics[name]["derived"] and metrics[name]["display"] == event
        assert cells(view["values"][name]["exclusive"]) == [count], event
    assert "PAPI_L1_DCM" in counted or [d["event"] for d in view["dropped"]] == ["PAPI_L1_DCM"]
    assert all(d["why"] for d in view["dropped"])
    cpu = view["values"]["CPU_time_seconds"]
    assert metrics["CPU_time_seconds"]["derived"] and cpu["inclusive"] is not None
    assert cells(cpu["exclusive"])[0] == pytest.approx(xml_cpu_seconds(runs["counts"]), rel=1e-6)
    context = dict(view["context"])
    assert context["Command"].endswith(f"pages {HOT_PAGES} {COLD_PAGES}")
    assert context["Host"].split(".")[0] == xml_root(runs["counts"]).findtext("hostname")
    assert view["sources"] == [] and len(view["locations"]) == 1


def test_flat_profile_view(runs):
    view = viewdoc.load_view(str(runs["flat"]))
    check_schema(view)
    assert view["kind"] == "profile"
    samples = grid(view, "samples")
    assert samples.sum() == xml_total_samples(runs["flat"])
    hot, cold = cnode_of(view, "hot"), cnode_of(view, "cold")
    assert view["cnodes"]["parent"][hot] == view["cnodes"]["parent"][cold] == 0  # depth one under the program
    assert samples[hot, 0] == pytest.approx(HOT_PAGES / PERIOD, rel=0.05)
    assert samples[cold, 0] == pytest.approx(COLD_PAGES / PERIOD, rel=0.05)
    assert grid(view, "events")[hot, 0] == samples[hot, 0] * PERIOD  # events: samples x threshold
    region = view["regions"][view["cnodes"]["region"][hot]]
    assert region["file"] == str(runs["source"]) and region["module"] == str(runs["dir"] / "pages")
    # the source view: the file's text and the hot line with its samples (the loop of hot(): every fault)
    [source] = [s for s in view["sources"] if s["file"] == str(runs["source"])]
    assert source["path"] == str(runs["source"]) and source["note"] == ""
    assert source["lines"] == SOURCE.split("\n")[:-1]
    hot_line = marked_line("/* HOT */")
    line_samples = {int(k): v for k, v in source["samples"].items()}
    assert max(line_samples, key=line_samples.get) == hot_line
    assert line_samples[hot_line] == pytest.approx(HOT_PAGES / PERIOD, rel=0.05)
    assert line_samples[marked_line("/* COLD */")] == pytest.approx(COLD_PAGES / PERIOD, rel=0.05)
    assert source["total"] == xml_total_samples(runs["flat"])
    assert dict(view["context"])["Total samples"] == f"{xml_total_samples(runs['flat']):,}"


def test_call_path_profile_view(runs):
    view = viewdoc.load_view(str(runs["calls"]))
    check_schema(view)
    assert view["kind"] == "calltree"
    companion = runs["calls"].with_name(runs["calls"].name[:-4] + ".callpaths.xml")
    [thread] = xml_root(companion).iter("thread")
    samples = grid(view, "samples")
    assert samples.sum() == int(thread.get("samples"))  # every sampled stack, in the tree
    hot = cnode_of(view, "hot")
    names = [view["regions"][r]["name"] for r in view["cnodes"]["region"]]
    parent = view["cnodes"]["parent"]
    path = [hot]
    while parent[path[-1]] >= 0:
        path.append(parent[path[-1]])
    assert names[path[1]] == "main" and path[-1] == 0  # ... > main > hot, under the program's root
    assert samples[hot].sum() == pytest.approx(HOT_PAGES / PERIOD, rel=0.05)
    region = view["regions"][view["cnodes"]["region"][hot]]
    assert region["file"] == str(runs["source"])
    assert any(s["file"] == str(runs["source"]) and s["lines"] for s in view["sources"])


def test_four_rank_profile_view_through_the_cli(runs, tmp_path):
    out = tmp_path / "ranks.html"
    p = run_tool("psprocess", "-c", "--html", str(out), str(runs["ranks"]))
    assert p.returncode == 0, p.stderr
    assert p.stdout == "" and f"wrote {out}" in p.stderr
    view = embedded_view(out.read_text())
    check_schema(view)
    assert view["kind"] == "profile"
    docs = sorted(runs["ranks"].glob("*.xml"), key=xml_rank)
    assert [xml_rank(d) for d in docs] == [0, 1, 2, 3]
    assert [loc["rank"] for loc in view["locations"]] == [0, 1, 2, 3]
    samples = grid(view, "samples")
    hot = cnode_of(view, "hot")
    for j, doc in enumerate(docs):  # each location's samples are that rank's document's
        assert samples[:, j].sum() == xml_total_samples(doc), doc
        assert samples[hot, j] == pytest.approx((j + 1) * MPI_PAGES / PERIOD, rel=0.05), doc
    assert dict(view["context"])["MPI ranks"] == "4"
    [source] = [s for s in view["sources"] if s["file"].endswith("pages.c")]
    line_samples = {int(k): v for k, v in source["samples"].items()}
    assert max(line_samples, key=line_samples.get) == marked_line("/* HOT */")
    assert line_samples[marked_line("/* HOT */")] == samples[hot].sum()  # every rank's together
    assert source["total"] == sum(xml_total_samples(d) for d in docs)


def test_four_rank_combined_document_and_counting_reports(runs, tmp_path):
    """A multi-rank document (psprocess -c -f xml) shows its ranks as the
    directory did; -c of the ranks' counting reports: one location each,
    each with its rank's counts."""
    combined = tmp_path / "ranks.xml"
    p = run_tool("psprocess", "-c", "-f", "xml", "-o", str(combined), str(runs["ranks"]))
    assert p.returncode == 0, p.stderr
    view = viewdoc.load_view(str(combined))
    check_schema(view)
    docs = sorted(runs["ranks"].glob("*.xml"), key=xml_rank)
    assert [loc["rank"] for loc in view["locations"]] == [0, 1, 2, 3]
    assert grid(view, "samples").sum(axis=0).tolist() == [xml_total_samples(d) for d in docs]
    p = run_tool("psprocess", "-c", "-f", "html", str(runs["rank_counts"]))
    assert p.returncode == 0, p.stderr
    view = embedded_view(p.stdout)
    check_schema(view)
    assert view["kind"] == "counts" and len(view["cnodes"]["region"]) == 1
    docs = sorted(runs["rank_counts"].glob("*.xml"), key=xml_rank)
    assert [loc["rank"] for loc in view["locations"]] == [0, 1, 2, 3]
    faults = cells(view["values"]["page_faults"]["exclusive"])
    assert faults == [xml_events(d)["page-faults"] for d in docs]
    assert faults[3] - faults[0] == pytest.approx(3 * MPI_PAGES, rel=0.05)  # rank r touches (r + 1) x MPI_PAGES
    cpu = view["values"]["CPU_time_seconds"]
    assert cells(cpu["exclusive"]) == pytest.approx([xml_cpu_seconds(d) for d in docs], rel=1e-6)
    assert cpu["inclusive"] is not None  # a rate or a time per rank: not to be summed up a tree
    assert dict(view["context"])["MPI ranks"] == "4" and view["title"].endswith("(4 ranks)")


def test_difference_of_two_profiles_view(runs, tmp_path):
    p = run_tool("psprocess", "diff", "-f", "html", str(runs["more"]), str(runs["flat"]))
    assert p.returncode == 0, p.stderr
    view = embedded_view(p.stdout)
    check_schema(view)
    assert view["kind"] == "difference" and view["difference"] is True
    samples = grid(view, "samples")
    assert samples.sum() == xml_total_samples(runs["more"]) - xml_total_samples(runs["flat"])
    gained = HOT_PAGES * (MORE - 100) // 100 / PERIOD
    assert samples[cnode_of(view, "hot")].sum() == pytest.approx(gained, rel=0.1)
    assert abs(samples[cnode_of(view, "cold")].sum()) < 0.05 * COLD_PAGES / PERIOD
    context = dict(view["context"])
    assert context["Operation"] == f"diff({runs['more'].name}, {runs['flat'].name})"
    assert context["Minuend"].startswith(str(runs["more"])) and f" {HOT_PAGES * MORE // 100} " in context["Minuend"]
    assert context["Subtrahend"].startswith(str(runs["flat"])) and f" {HOT_PAGES} " in context["Subtrahend"]
    # the source lines' gains: hot()'s loop, percentages of the run compared against
    [source] = [s for s in view["sources"] if s["file"] == str(runs["source"])]
    changes = {int(k): v for k, v in source["samples"].items()}
    assert changes[marked_line("/* HOT */")] == pytest.approx(gained, rel=0.1)
    assert abs(changes.get(marked_line("/* COLD */"), 0)) < 0.05 * COLD_PAGES / PERIOD
    assert source["total"] == xml_total_samples(runs["flat"]) and source["lines"] == SOURCE.split("\n")[:-1]
    # --html writes the same view
    out = tmp_path / "diff.html"
    p = run_tool("psprocess", "diff", "--html", str(out), str(runs["more"]), str(runs["flat"]))
    assert p.returncode == 0 and p.stdout == "", p.stderr
    assert embedded_view(out.read_text())["values"] == view["values"]


def test_other_results_of_the_algebra(runs):
    for args in (["mean", str(runs["more"]), str(runs["flat"])], ["merge", str(runs["counts"]), str(runs["flat"])],
                 ["cut", "--prune", "cold", str(runs["flat"])]):
        p = run_tool("psprocess", *args, "-f", "html")
        assert p.returncode == 0, p.stderr
        view = embedded_view(p.stdout)
        check_schema(view)
        assert view["kind"] == "cube" and not view["difference"]
        assert dict(view["context"])["Operation"].startswith(args[0] + "(")
        if args[0] == "mean":
            total = (xml_total_samples(runs["more"]) + xml_total_samples(runs["flat"])) / 2
            assert grid(view, "samples").sum() == pytest.approx(total)
            [source] = [s for s in view["sources"] if s["file"] == str(runs["source"])]
            assert source["total"] == pytest.approx(total)
            hot = source["samples"][str(marked_line("/* HOT */"))]
            assert hot == pytest.approx((HOT_PAGES + HOT_PAGES * MORE // 100) / 2 / PERIOD, rel=0.05)
        elif args[0] == "merge":
            assert grid(view, "page_faults").sum() == xml_events(runs["counts"])["page-faults"]
        else:
            names = {view["regions"][r]["name"] for r in view["cnodes"]["region"]}
            assert "cold" not in names and "hot" in names
            assert grid(view, "samples").sum() == xml_total_samples(runs["flat"])  # pruned into the root


# -- the CLI --------------------------------------------------------------------------


def test_format_html_writes_the_page_to_stdout(runs):
    p = run_tool("psprocess", "-f", "html", str(runs["counts"]))
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("<!DOCTYPE html>") and p.stdout.rstrip().endswith("</html>")
    assert not re.search(r"<script[^>]*\bsrc=", p.stdout)  # self-contained: nothing fetched
    view = embedded_view(p.stdout)
    assert cells(view["values"]["page_faults"]["exclusive"]) == [xml_events(runs["counts"])["page-faults"]]


def test_format_html_with_output_file(runs, tmp_path):
    out = tmp_path / "counts.html"
    p = run_tool("psprocess", "-f", "html", "-o", str(out), str(runs["counts"]))
    assert p.returncode == 0 and p.stdout == "", p.stderr
    assert embedded_view(out.read_text())["kind"] == "counts"
    line = one_line_error(run_tool("psprocess", "-f", "html", "-o", str(out), str(runs["flat"])), "psprocess")
    assert "--force" in line and embedded_view(out.read_text())["kind"] == "counts"  # kept as it was


def test_html_refuses_to_overwrite_without_force(runs, tmp_path):
    out = tmp_path / "report.html"
    out.write_text("keep me")
    line = one_line_error(run_tool("psprocess", "--html", str(out), str(runs["flat"])), "psprocess")
    assert str(out) in line and "--force" in line
    assert out.read_text() == "keep me"
    line = one_line_error(run_tool("psprocess", "diff", "--html", str(out), str(runs["more"]), str(runs["flat"])),
                          "psprocess diff")
    assert "--force" in line and out.read_text() == "keep me"
    p = run_tool("psprocess", "--force", "--html", str(out), str(runs["flat"]))
    assert p.returncode == 0, p.stderr
    assert embedded_view(out.read_text())["kind"] == "profile"


@pytest.mark.parametrize("args, says", [
    (["-f", "html", "{flat}", "{counts}"], "-c"),  # two reports, one page
    (["--html", "{out}", "{flat}", "{counts}"], "-c"),
    (["-f", "html", "{missing}"], "missing.xml"),
    (["--html", "{nodir}", "{flat}"], "directory"),
    (["-f", "html", "{source}"], "pages.c"),  # not a PerfSuite document
])
def test_bad_inputs_are_one_line_and_exit_2(runs, tmp_path, args, says):
    names = {"flat": runs["flat"], "counts": runs["counts"], "out": tmp_path / "x.html",
             "missing": tmp_path / "missing.xml", "nodir": tmp_path / "no" / "x.html", "source": runs["source"]}
    p = run_tool("psprocess", *[a.format(**{k: str(v) for k, v in names.items()}) for a in args])
    assert says in one_line_error(p, "psprocess")
    assert p.stdout == "" and not (tmp_path / "x.html").exists()


def test_resource_report_is_refused_in_one_line(runs, tmp_path):
    run_dir = tmp_path / "res"
    run_dir.mkdir()
    p = run_tool("psrun", "-q", "-R", "-d", str(run_dir), str(runs["dir"] / "pages"), "10", "10")
    assert p.returncode == 0, p.stderr
    [doc] = run_dir.glob("*.resource.xml")
    line = one_line_error(run_tool("psprocess", "-f", "html", str(doc)), "psprocess")
    assert "resource report" in line


# -- encoding ---------------------------------------------------------------------------


def test_values_that_are_not_numbers_are_null_and_integers_stay_ints():
    def coded(a, integer=False):
        return viewdoc.decode(viewdoc.encode(a, integer))

    assert coded(np.array([[1, -2], [3, 2**62]], dtype=np.int64), True) == [1, -2, 3, 2**62]
    got = coded(np.array([0.1 + 0.2, np.nan, np.inf, -1.5]))
    assert got == [0.3, None, None, -1.5]
    assert coded(np.array([2.0, -4.0]), integer=True) == [2, -4]  # an integer metric's mean kept whole
    assert all(type(v) is int for v in coded(np.array([2.0, -4.0]), integer=True))
    assert coded(np.array([0.5, 1.0]), integer=True) == [0.5, 1.0]
    json.dumps(page.embed_json({"v": viewdoc.encode(np.array([0.1 + 0.2, np.nan]))}))


def test_values_are_stored_sparse_and_as_narrow_as_they_are_exact():
    """Only the non-zero cells, their positions as gaps: cells 1 and 4 of
    six are 1 and 4 cells after their predecessors (gaps 1 and 2); whole
    numbers as zigzag varints (-3 is 5), halves as float32, a third as
    float64; a NaN listed apart, its position as a gap too."""
    import base64

    e = viewdoc.encode(np.array([[0, 7], [0, 0], [-3, 0]]), True)
    assert e["n"] == 6 and base64.b64decode(e["at"]) == bytes([1, 2])
    assert base64.b64decode(e["int"]) == bytes([14, 5])
    assert viewdoc.decode(e) == [0, 7, 0, 0, -3, 0]
    half = viewdoc.encode(np.array([0.5, 0.0, 0.25]))
    assert set(half) == {"n", "at", "f32"}
    assert np.frombuffer(base64.b64decode(half["f32"]), "<f4").tolist() == [0.5, 0.25]
    third = viewdoc.encode(np.array([1 / 3, np.nan]))
    assert "f64" in third and base64.b64decode(third["null"]) == bytes([1])  # cell 1: one cell (the third) skipped
    assert viewdoc.decode(third) == [round(1 / 3, 12), None]
    big = viewdoc.encode(np.eye(1000, dtype=np.int64))  # 1,000 ones in a million cells: 3 bytes each, base64
    assert len(page.embed_json(big)) < 4100


def test_source_files_are_cut_and_say_so(tmp_path):
    from psuite.psprocess.html import sources

    big = tmp_path / "big.c"
    big.write_text("".join(f"int x{i};\n" for i in range(sources.MAX_LINES + 10)))
    lines, note = sources.read_text(str(big), sources.MAX_TOTAL_BYTES)
    assert len(lines) == sources.MAX_LINES and lines[-1] == f"int x{sources.MAX_LINES - 1};"
    assert "first 20,000 lines" in note
    binary = tmp_path / "blob.c"
    binary.write_bytes(b"\x7fELF\0\0\0")
    assert sources.read_text(str(binary), 100) == (None, "not a text file")
    small = tmp_path / "small.c"
    small.write_text("a\nb\n")
    assert sources.read_text(str(small), 100) == (["a", "b"], "")


def test_a_64_rank_2000_function_profile_stays_small(capsys):
    """The issue's large case: every cell given (64 x 2,001 per metric),
    numbers written short; the sizes are printed (pytest -s) for the
    record, and the view must stay well below what a page can parse fast."""
    import time

    from tests.psprocess.html.big_profile import FUNCTIONS, RANKS, big_profile

    multi = big_profile()
    start = time.perf_counter()
    view = viewdoc.build(multi)
    took = time.perf_counter() - start
    check_schema(view)
    assert len(view["cnodes"]["region"]) == FUNCTIONS + 1 and len(view["locations"]) == RANKS
    samples = grid(view, "samples")
    for j, r in enumerate(multi.reports):  # each rank's column holds its own samples
        assert samples[:, j].sum() == sum(loc.samples for loc in r.locations)
    size = len(page.embed_json(view))
    html = len(page.render(view).encode("utf-8"))
    with capsys.disabled():
        print(f"\n64 ranks x 2,000 functions: view built in {took:.2f} s, {size / 1e6:.2f} MB of JSON, "
              f"page {html / 1e6:.2f} MB")
    assert size < 3e6


def test_cube_file_view_through_the_cli(tmp_path):
    """A CUBE file as Score-P writes them (INCLUSIVE metrics, a child
    metric, a derived one, two roots, three locations): the view's
    exclusive values are the file's, the derived metric comes with its
    inclusive values (time(i) / visits(e), evaluated here)."""
    from tests.psprocess.cube_fixtures import scorep_cube

    cube = scorep_cube(tmp_path / "run.cubex")
    out = tmp_path / "run.html"
    p = run_tool("psprocess", "--html", str(out), cube.path)
    assert p.returncode == 0, p.stderr
    view = embedded_view(out.read_text())
    check_schema(view)
    assert view["kind"] == "cube" and not view["difference"]
    names = [view["regions"][r]["name"] for r in view["cnodes"]["region"]]
    assert names == [path[-1] for path in cube.paths]
    assert view["cnodes"]["parent"] == [-1 if q is None else q for q in cube.parents]
    assert [(loc["rank"], loc["thread"]) for loc in view["locations"]] == [(r, t) for _, r, _, t in cube.locations]
    metrics = {m["name"]: m for m in view["metrics"]}
    assert view["metrics"][metrics["mpi"]["parent"]]["name"] == "time"
    for name, a in cube.exclusive.items():
        assert np.array_equal(grid(view, name), a), name
        assert metrics[name]["integer"] == (a.dtype.kind == "i")
    assert metrics["avg_time"]["derived"]
    n = len(names)
    incl = np.array(cells(view["values"]["avg_time"]["inclusive"]), dtype=float).reshape(n, -1)
    visits = cube.exclusive["visits"].astype(float)
    want = np.divide(cube.inclusive["time"], visits, out=np.zeros_like(visits), where=visits != 0)
    assert incl == pytest.approx(want, abs=1e-11 * want.max())  # 12 digits of the metric's largest value
    # -f html of it on stdout; with another input, or another export, it is one line and exit 2
    assert embedded_view(run_tool("psprocess", "-f", "html", cube.path).stdout)["values"] == view["values"]
    assert "CUBE" in one_line_error(run_tool("psprocess", "-f", "html", cube.path, cube.path), "psprocess")
    line = one_line_error(run_tool("psprocess", "--html", str(tmp_path / "b.html"), "--cube",
                                   str(tmp_path / "b.cubex"), cube.path), "psprocess")
    assert "--cube" in line and not (tmp_path / "b.html").exists()


def test_greatest_value_metrics_come_with_their_inclusive_values():
    """A MAXDOUBLE metric (Score-P's max_time) does not add up a tree: the
    view gives its inclusive values, each call path's greatest below it."""
    from psuite.model.experiment import Experiment, Location, Metric, Region

    exp = Experiment(locations=[Location(rank=0), Location(rank=1)])
    for name in ("main", "a", "b"):
        exp.add_region(Region(name))
    root = exp.add_cnode(0, None)
    exp.add_cnode(1, root)
    exp.add_cnode(2, root)
    exp.add_metric(Metric("max_time", dtype="MAXDOUBLE", unit="sec"))
    exp.zeros("max_time")[:] = [[1.0, 7.0], [5.0, 2.0], [3.0, 4.0]]
    view = viewdoc.build(exp)
    check_schema(view)
    assert cells(view["values"]["max_time"]["exclusive"]) == [1.0, 7.0, 5.0, 2.0, 3.0, 4.0]
    assert cells(view["values"]["max_time"]["inclusive"]) == [5.0, 7.0, 5.0, 2.0, 3.0, 4.0]
    assert view["kind"] == "cube" and view["dropped"] == []


def test_embedded_json_has_no_markup_a_source_line_could_break_the_page_with():
    # a source line such as `<!-- <script>` puts the HTML parser in the
    # escaped script state, where a later "</script>" no longer ends the element
    view = {"title": "t", "text": ["/* <!-- <script> */", "x = 1; // </script><b>", "a < b"]}
    text = page.embed_json(view)
    assert "<" not in text
    assert json.loads(text) == view


# -- counting reports: their results, their run times, their machine -------------------------


def xml_wall_seconds(doc: Path) -> float:
    """<wallclock units="ticks">: ticks of the <clockspeed> written (MHz)."""
    root = xml_root(doc)
    return int(root.findtext("wallclock")) / (float(root.find(".//clockspeed").text) * 1e6)


def _metric_named(view: dict, display: str) -> dict:
    [m] = [m for m in view["metrics"] if m["display"] == display]
    return m


def test_each_run_time_once_and_a_wall_clock_over_ranks_the_longest(runs, tmp_path, driver):
    """4 ranks' counting reports: one wall clock and one CPU time (not also
    experiments' wall_seconds and cpu_seconds beside psmetrics' metrics);
    the page shows the wall clock of the ranks as the longest rank's (the
    context's "Wall clock"), never their sum, and their CPU time together.
    The system tree's root is named after the host, not "machine"."""
    from tests.psprocess.html.pages import load_page

    out = tmp_path / "counts.html"
    p = run_tool("psprocess", "-c", "--html", str(out), str(runs["rank_counts"]))
    assert p.returncode == 0, p.stderr
    view = embedded_view(out.read_text())
    check_schema(view)
    displays = [m["display"] for m in view["metrics"]]
    assert sum("wall clock" in d.lower() for d in displays) == 1, displays
    assert sum("cpu time" in d.lower() for d in displays) == 1, displays
    docs = sorted(runs["rank_counts"].glob("*.xml"), key=xml_rank)
    walls = [xml_wall_seconds(d) for d in docs]
    cpus = [xml_cpu_seconds(d) for d in docs]
    wall, cpu = _metric_named(view, "Wall clock time (seconds)"), _metric_named(view, "CPU time (seconds)")
    assert wall["over"] == "max" and cpu["over"] == "sum"
    assert cells(view["values"][wall["name"]]["exclusive"]) == pytest.approx(walls, rel=1e-6)
    host = xml_root(docs[0]).findtext("hostname")
    assert {loc["machine"] for loc in view["locations"]} == {host}
    page = load_page(driver, out)
    shown = page.metric_values()
    assert shown[wall["name"]] == pytest.approx(max(walls), rel=1e-6)
    assert shown[wall["name"]] < 0.99 * sum(walls)  # four ranks: the sum would be about four times as long
    assert shown[cpu["name"]] == pytest.approx(sum(cpus), rel=1e-6)
    label = page.js("return document.querySelector('[data-tree=metric] .row[data-metric=\"' + arguments[0] + '\"]"
                    " .name').textContent", wall["name"])
    assert label.endswith("[max]"), label
    root = page.js("return document.querySelector('[data-tree=system] .row[data-sys=machine] .name').textContent")
    assert root == host
    page.open_tab("context")
    assert page.context()["Wall clock"] == f"{max(walls):.3f} s (the longest)"
    page.assert_no_console_errors()


def test_results_of_counting_reports_are_counting_pages(runs, tmp_path, driver, screenshots):
    """psprocess diff and mean of counting reports: the page of counting
    reports (event and metric bars, no call-tree chart), a difference's
    bars coloured by sign: rank 3 touched 3 x MPI_PAGES more pages than
    rank 0 (a loss: red).  -C keeps both ranks, as CubeLib's -C does."""
    from tests.psprocess.html.pages import load_page, screenshot

    docs = sorted(runs["rank_counts"].glob("*.xml"), key=xml_rank)
    a, b = xml_events(docs[3]), xml_events(docs[0])
    out = tmp_path / "diff.html"
    p = run_tool("psprocess", "diff", "-C", "--html", str(out), str(docs[3]), str(docs[0]))
    assert p.returncode == 0, p.stderr
    view = embedded_view(out.read_text())
    check_schema(view)
    assert view["kind"] == "counts" and view["difference"] is True
    # CubeLib's -C: both processes kept under one virtual node, each input's values on its own rank
    assert cells(view["values"]["page_faults"]["exclusive"]) == [a["page-faults"], -b["page-faults"]]
    assert a["page-faults"] - b["page-faults"] == pytest.approx(3 * MPI_PAGES, rel=0.05)
    # psmetrics' metrics are derived on the result too (ratios: never summed over ranks)
    events = {cubepl_name(e) for e in a}
    assert all(m["derived"] for m in view["metrics"] if m["name"] not in events), view["metrics"]
    page = load_page(driver, out)
    page.open_tab("charts")
    assert page.count("#regions-plot") == 0
    bars = dict(page.js("return Array.from(document.querySelectorAll('#counts-plot .bar'))"
                        ".map(b => [b.dataset.name, getComputedStyle(b).fill])"))
    assert bars["page-faults"] == "rgb(230, 60, 60)"  # more page faults: a loss, red
    screenshot(driver, screenshots, "counts-diff-charts")
    page.assert_no_console_errors()

    p = run_tool("psprocess", "mean", "-C", "-f", "html", str(docs[3]), str(docs[0]))
    assert p.returncode == 0, p.stderr
    view = embedded_view(p.stdout)
    assert view["kind"] == "counts" and view["difference"] is False
    assert cells(view["values"]["page_faults"]["exclusive"]) == [a["page-faults"] / 2, b["page-faults"] / 2]


def test_cube_context_names_command_date_and_what_it_was_made_from(runs, tmp_path):
    """A CUBE file psuite wrote of 4 ranks names rank 0's document only: the
    context says the other ranks' documents went into it too; a cube whose
    producer gave the command and the date (under its own keys) shows them."""
    from psuite.model.experiment import Experiment, Location, Metric, Region

    cube = tmp_path / "ranks.cubex"
    p = run_tool("psprocess", "-c", "--cube", str(cube), str(runs["ranks"]))
    assert p.returncode == 0, p.stderr
    context = dict(viewdoc.load_view(str(cube))["context"])
    first = min(runs["ranks"].glob("*.xml"), key=xml_rank)
    assert "Source" not in context
    assert context["Made from"].endswith("and the other 3 processes' documents")
    assert os.path.basename(context["Made from"].split(" ")[0]) == first.name
    assert context["Processes"] == "4"

    exp = Experiment(locations=[Location(rank=0)])
    exp.add_region(Region("main"))
    exp.add_cnode(0, None)
    exp.add_metric(Metric("time", unit="sec"))
    exp.zeros("time")[:] = [[1.0]]
    exp.attributes.update({"Tool::Command_Line": "./app --size 4", "Tool::creation date": "2026-11-24T10:00:00",
                           "source": "run.cubex"})
    context = viewdoc.build(exp)["context"]
    assert ["Command", "./app --size 4"] in context and ["Date", "2026-11-24T10:00:00"] in context
    assert ["Source", "run.cubex"] in context
    assert not any(k.startswith("Tool::") for k, _ in context)  # each shown once


def test_html_and_f_html_build_the_page_once(tmp_path, monkeypatch):
    """`psprocess --html A -f html -o B` writes one page twice; the view is
    built once (it reads the sources and serializes megabytes of JSON)."""
    from psuite.psprocess.html import export

    built = []
    real = viewdoc.build
    monkeypatch.setattr(viewdoc, "build", lambda *a, **k: built.append(1) or real(*a, **k))
    from tests.psprocess.html.big_profile import big_profile

    subject = big_profile(ranks=2, functions=3)
    first = export.page(subject)
    assert export.page(subject) is first and len(built) == 1
    export.page(big_profile(ranks=2, functions=3))  # another subject: built again
    assert len(built) == 2


def test_f_html_with_several_inputs_is_refused_before_reading_them(tmp_path):
    (tmp_path / "a.xml").write_text("not a report")  # never read: the usage is wrong first
    p = run_tool("psprocess", "-f", "html", str(tmp_path / "a.xml"), str(tmp_path / "b.xml"))
    assert "-f html shows one report in one page, and 2 inputs were given" in one_line_error(p, "psprocess")
