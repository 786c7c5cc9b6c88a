"""Every output psprocess has, rendered from one real 4-rank MPI run
(psrun -p --callpath), gives the same samples per location (MPI rank and
thread) as psrun's own per-thread reports, under the same rank and thread
numbers.  Each format is read back by a parser of its own where one exists
(go tool pprof, pycubexr, gmon's and vmon.out's layouts read here, plain
JSON/CSV/XML), not by the code that wrote it.

A profile counts one thing, the samples (--callpath cannot be combined with
counting); the cube, the HTML page, the records and pprof also carry time,
checked as the samples times the period.  gmon and vmon.out take one
profile (psprocess refuses -c for them); folded stacks have no location
field (compared per psprocess call); psbase files a run's totals, not its
locations.

Where formats disagree today the case is marked xfail(strict=True) with what
disagrees, so that the test flips when the paths share one model."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pytest
from lxml import etree

from tests.conftest import TARGETS, psrun_command, run_tool, validate

MPI_ENV = {"OMPI_MCA_plm_rsh_agent": "", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
RANKS = 4
PERIOD_US = 1000  # psrun --period: a sample is 1 ms of CPU time

Locations = dict[tuple[int, int], int]  # (rank, thread) -> samples


class Run:
    """The run's documents and what psrun itself says about them."""

    def __init__(self, d: Path, exe: Path):
        self.dir, self.exe = d, exe
        self.docs = sorted(str(p) for p in d.glob("*.xml") if not p.name.endswith(".callpaths.xml"))
        self.process = {}  # rank -> its process report (the one with the call-path companion)
        self.truth: Locations = {}  # from the per-thread reports' <totalsamples>
        self.process_totals: dict[int, int] = {}
        self.exe_samples: dict[int, int] = {}  # the executable's samples per rank (gmon's share)
        for doc in self.docs:
            root = etree.parse(doc).getroot()
            rank = int(re.search(r"MPI rank (\d+)", root.findtext("annotation")).group(1))
            samples = int(root.findtext(".//totalsamples"))
            if "process total" in root.findtext("annotation"):
                self.process[rank] = doc
                self.process_totals[rank] = samples
                self.exe_samples[rank] = sum(
                    int(s.text) for m in root.iter("module") if m.get("file") == str(exe) for s in m.iter("sample"))
            else:
                self.truth[(rank, int(root.findtext("thread")))] = samples

    def per_rank(self) -> dict[int, int]:
        out: Counter = Counter()
        for (rank, _), n in self.truth.items():
            out[rank] += n
        return dict(out)


def mpi_work_run(d: Path, ranks: int, *psrun_args: str) -> tuple[Path, Path]:
    """tests/targets/mpi/mpi_work.c built in d and run on `ranks` Open MPI
    ranks under psrun (with psrun_args); (the documents' folder, the program)."""
    mpicc, mpirun = shutil.which("mpicc"), shutil.which("mpirun")
    assert mpicc and mpirun, "Open MPI is needed (tests/run.sh installs openmpi-bin and libopenmpi-dev)"
    exe = d / "mpi_work"
    subprocess.run([mpicc, "-O1", "-g", "-o", str(exe), str(TARGETS / "mpi" / "mpi_work.c")], check=True)
    docs = d / "run"
    docs.mkdir()
    p = subprocess.run([mpirun, "--oversubscribe", "--allow-run-as-root", "-np", str(ranks), "--mca", "btl",
                        "self,vader", psrun_command(), "-q", "-d", str(docs), *psrun_args, str(exe)],
                       capture_output=True, text=True, timeout=300, env={**os.environ, **MPI_ENV}, cwd=d)
    assert p.returncode == 0, p.stdout + p.stderr
    return docs, exe


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Run:
    docs, exe = mpi_work_run(tmp_path_factory.mktemp("formats_agree"), RANKS, "-p", "--callpath",
                             "--period", str(PERIOD_US))
    r = Run(docs, exe)
    assert sorted(r.process) == list(range(RANKS))
    assert {t for _, t in r.truth} == {1, 2, 3}  # main thread 1 and Open MPI's two helpers
    # psrun's own documents agree with each other: a process is its threads
    assert r.per_rank() == r.process_totals
    assert sum(r.truth.values()) > 0
    return r


def psprocess(*args: str) -> str:
    """Run psprocess; what it said (both streams: the exporters name what
    they wrote on standard error)."""
    p = run_tool("psprocess", *args, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout + p.stderr


def inputs(run: Run, combined: bool) -> list[tuple[list[str], list[str]]]:
    """(options, inputs) per psprocess call: with -c one call over every
    document, without it one call per rank's process report (the exporters
    take one report)."""
    if combined:
        return [(["-c"], run.docs)]
    return [([], [run.process[rank]]) for rank in sorted(run.process)]


def add(out: Locations, key: tuple[int, int], n: float) -> None:
    out[key] = out.get(key, 0) + int(round(n))


def threads_only(got: dict) -> Locations:
    """Drop zero entries, so formats that leave out an idle thread compare
    (psrun's helper threads often take no sample)."""
    return {k: v for k, v in got.items() if v}


def truth(run: Run) -> Locations:
    return {k: v for k, v in run.truth.items() if v}


# ----------------------------------------------------------------- readers
def rank_of(source: str) -> int:
    """The rank in psrun's file name (exe.rN.pid[.tT].host.xml)."""
    return int(re.search(r"\.r(\d+)\.", Path(source).name).group(1))


def from_json(run: Run, combined: bool, tmp: Path) -> Locations:
    out: Locations = {}
    f = tmp / "r.json"
    psprocess(*(["-c"] if combined else []), "-f", "json", "-o", str(f), *run.docs)
    d = json.loads(f.read_text())
    for r in d["reports"]:
        if "process total" not in r["annotation"]:
            add(out, (r["rank"], r["thread"]), r["total_samples"])
    return out


def from_json_callpaths(run: Run, combined: bool, tmp: Path) -> Locations:
    """JSON's call trees ("calltree": exclusive samples per thread's call
    path), per the report's rank and the call path's thread."""
    out: Locations = {}
    f = tmp / "r.json"
    psprocess(*(["-c"] if combined else []), "-f", "json", "-o", str(f), *run.docs)
    d = json.loads(f.read_text())
    for r in d["reports"] + d.get("totals", []):
        for node in r.get("calltree") or []:
            add(out, (r["rank"], node["thread"]), node["exclusive"])
    return out


def from_csv(run: Run, combined: bool, tmp: Path) -> Locations:
    """CSV's "location" rows (the flat profile) summed per document; CSV has
    no rank column, so the rank comes from the document's file name."""
    out: Locations = {}
    f = tmp / "r.csv"
    psprocess(*(["-c"] if combined else []), "-f", "csv", "-o", str(f), *run.docs)
    for row in csv.DictReader(f.open()):
        if row["kind"] == "location" and Path(row["source"]).name != Path(run.process[rank_of(row["source"])]).name:
            add(out, (rank_of(row["source"]), int(row["thread"])), float(row["value"]))
    return out


def from_csv_callpaths(run: Run, combined: bool, tmp: Path) -> Locations:
    """CSV's "callpath" rows: exclusive samples per (document's rank, thread)."""
    out: Locations = {}
    f = tmp / "r.csv"
    psprocess(*(["-c"] if combined else []), "-f", "csv", "-o", str(f), *run.docs)
    for row in csv.DictReader(f.open()):
        if row["kind"] == "callpath" and row["exclusive"]:
            add(out, (rank_of(row["source"]), int(row["thread"])), float(row["exclusive"]))
    return out


def from_text(run: Run, combined: bool, tmp: Path) -> Locations:
    """The text report: each thread report's "Total samples" (without -c);
    the combined report has no per-location table, so with -c the total its
    function summary's first row implies (samples / self %)."""
    text = psprocess(*(["-c"] if combined else []), *run.docs)
    out: Locations = {}
    if combined:
        # no per-location table: the total its summary's first row implies
        m = re.search(r"^\s+(\d+)\s+([\d.]+)%", text.split("Combined Function Summary")[1], re.M)
        total = round(int(m.group(1)) * 100 / float(m.group(2)))
        return {(-1, -1): total}
    for block in text.split("PerfSuite Profile Report")[1:]:
        field = dict(re.findall(r"^(\w[\w ]*?)\s+: (.*)$", block, re.M))
        if "process total" in field["Sampling"]:
            continue
        rank = int(re.search(r"MPI rank (\d+)", field["Sampling"]).group(1))
        add(out, (rank, int(field["Thread"])), int(field["Total samples"].replace(",", "")))
    return out


def from_xml(run: Run, combined: bool, tmp: Path) -> Locations:
    """-x: the processed <hwpcprofilereport>s, their samples per (rank,
    thread); a report without the run's annotation (so without its rank)
    counts as the rank of the one document it was made from."""
    out: Locations = {}
    for i, (opts, docs) in enumerate(inputs(run, combined)):
        f = tmp / f"x{i}.xml"
        psprocess(*opts, "-x", "-o", str(f), *docs)
        for rep in etree.parse(str(f)).getroot().iter("hwpcprofilereport"):
            m = re.search(r"MPI rank (\d+)", rep.findtext(".//annotation") or "")
            rank = int(m.group(1)) if m else rank_of(docs[0])
            add(out, (rank, int(rep.findtext(".//thread"))), int(rep.findtext(".//totalsamples")))
    return out


def from_gmon(run: Run, combined: bool, tmp: Path) -> dict[int, int]:
    """gprof's gmon.out read by its layout: the time histogram's 16-bit
    bins, summed per rank (gmon holds the executable's samples only)."""
    out = {}
    for i, (opts, docs) in enumerate(inputs(run, combined)):
        f = tmp / f"g{i}.out"
        psprocess(*opts, "--gmon", str(f), *docs)
        b = f.read_bytes()
        assert b[:4] == b"gmon"
        pos, hist = 20, 0
        while pos < len(b):
            tag = b[pos]
            pos += 1
            if tag == 0:
                _, _, size, _ = struct.unpack_from("<QQII", b, pos)
                pos += 24 + 16
                hist += sum(struct.unpack_from(f"<{size}H", b, pos))
                pos += 2 * size
            elif tag == 1:
                pos += 20
            else:
                raise AssertionError(f"gmon tag {tag}")
        out[rank_of(docs[0])] = hist
    return out


def from_vprof(run: Run, combined: bool, tmp: Path) -> dict[int, int]:
    """vmon.out read by its layout: in-range entries plus the samples it
    counts as out of range (the other modules) make the rank's total."""
    out = {}
    for i, (opts, docs) in enumerate(inputs(run, combined)):
        f = tmp / f"v{i}.out"
        psprocess(*opts, "--vprof", str(f), *docs)
        b = f.read_bytes()
        magic, version, _ = struct.unpack_from(">iBi", b, 0)
        assert magic == 0x766D6F6E and version == 4
        pos = b.index(b"\0", 9) + 1
        outside, _, entries, _ = struct.unpack_from(">iiiq", b, pos)
        pos += 20
        inside = sum(struct.unpack_from(">Hi", b, pos + 6 * k)[0] for k in range(entries))
        out[rank_of(docs[0])] = inside + outside
    return out


def from_folded(run: Run, combined: bool, tmp: Path) -> dict[int, int]:
    """Folded stacks have no location field: their total per psprocess call."""
    out = {}
    for i, (opts, docs) in enumerate(inputs(run, combined)):
        f = tmp / f"f{i}.folded"
        psprocess(*opts, "--folded", str(f), *docs)
        n = sum(int(line.rsplit(" ", 1)[1]) for line in f.read_text().splitlines() if line)
        out[-1 if combined else rank_of(docs[0])] = n
    return out


def from_speedscope(run: Run, combined: bool, tmp: Path) -> Locations:
    """speedscope's JSON: one sampled profile per thread, named "rank R
    thread T", weighted in the sampling period's unit."""
    out: Locations = {}
    for i, (opts, docs) in enumerate(inputs(run, combined)):
        f = tmp / f"s{i}.json"
        psprocess(*opts, "--speedscope", str(f), *docs)
        d = json.loads(f.read_text())
        for p in d["profiles"]:
            m = re.fullmatch(r"rank (\d+) thread (\d+)", p["name"])
            assert m, p["name"]
            assert p["unit"] == "microseconds"
            add(out, (int(m.group(1)), int(m.group(2))), sum(p["weights"]) / PERIOD_US)
    return out


def from_pprof(run: Run, combined: bool, tmp: Path) -> Locations:
    """pprof's profile.proto read by go tool pprof -raw: the samples/count
    value per stack, labelled with its thread."""
    go = shutil.which("go")
    if not go:
        pytest.skip("go tool pprof is not installed")
    out: Locations = {}
    said = []
    for i, (opts, docs) in enumerate(inputs(run, combined)):
        f = tmp / f"p{i}.pb.gz"
        said.append(psprocess(*opts, "--pprof", str(f), *docs))
        env = {**os.environ, "PPROF_TMPDIR": str(tmp)}
        raw = subprocess.run([go, "tool", "pprof", "-raw", str(f)], capture_output=True, text=True, timeout=300,
                             env=env, check=True).stdout
        count = None
        for line in raw.split("Samples:")[1].splitlines():
            m = re.match(r"\s+(\d+)\s+(\d+):", line)
            if m:
                count = int(m.group(1))
                assert int(m.group(2)) == count * PERIOD_US * 1000, line  # cpu nanoseconds: samples x period
            m = re.search(r"thread:\[rank (\d+) thread (\d+)\]", line)
            if m and count is not None:
                add(out, (int(m.group(1)), int(m.group(2))), count)
                count = None
    # what psprocess says it wrote names the samples
    claimed = sum(int(m.group(1).replace(",", "")) for s in said for m in re.finditer(r"\(([\d,]+) samples", s))
    out[(-2, -2)] = claimed
    return out


def from_cube(run: Run, combined: bool, tmp: Path) -> Locations:
    """The cube read by pycubexr: samples per location, the location's rank
    from its process (location group)."""
    from pycubexr import CubexParser

    from tests.psprocess.pycubexr_stored import stored_only

    out: Locations = {}
    for i, (opts, docs) in enumerate(inputs(run, combined)):
        f = tmp / f"c{i}.cubex"
        psprocess(*opts, "--cube", str(f), *docs)
        with CubexParser(str(stored_only(f))) as parser:
            values = parser.get_metric_values(metric=parser.get_metric_by_name("samples"))
            seconds = parser.get_metric_values(metric=parser.get_metric_by_name("time"))
            process = {}  # location id -> its location group (the MPI process)

            def walk(node, process=process):
                for group in node._location_group_children:
                    for loc in group._locations:
                        process[loc.id] = group
                for child in node._system_tree_node_children:
                    walk(child, process)

            for node in parser._anchor_result.system_tree_nodes:
                walk(node)
            for k, loc in enumerate(parser.get_locations()):
                n = sum(float(values.cnode_values(c, convert_to_exclusive=True)[k]) for c in parser.all_cnodes())
                t = sum(float(seconds.cnode_values(c, convert_to_exclusive=True)[k]) for c in parser.all_cnodes())
                assert t == pytest.approx(n * PERIOD_US / 1e6), loc.name  # time: the samples times the period
                group = process[loc.id]
                rank = int(group.rank)
                add(out, (rank, int(loc.rank)), n)
    return out


def from_html(run: Run, combined: bool, tmp: Path) -> Locations:
    """The page's embedded view (script psuite-view): exclusive samples, a
    row of locations per call node."""
    out: Locations = {}
    for i, (opts, docs) in enumerate(inputs(run, combined)):
        f = tmp / f"h{i}.html"
        psprocess(*opts, "--html", str(f), *docs)
        m = re.search(r'<script type="application/json" id="psuite-view">(.*?)</script>', f.read_text(), re.S)
        view = json.loads(m.group(1))
        from psuite.psprocess.html.viewdoc import decode  # the view stores cells sparse

        locs, values = view["locations"], decode(view["values"]["samples"]["exclusive"])
        assert len(values) == len(locs) * len(view["cnodes"]["region"])
        seconds = decode(view["values"]["time"]["exclusive"])
        for j, loc in enumerate(locs):
            n = sum(values[j::len(locs)])
            # the second metric, time, is the samples times the period
            assert sum(seconds[j::len(locs)]) == pytest.approx(n * PERIOD_US / 1e6), loc
            add(out, (loc["rank"], loc["thread"]), n)
    return out


def from_records(run: Run, combined: bool, tmp: Path) -> Locations:
    """The Python API: psuite.read_experiment(...).to_records()."""
    import psuite

    out: Locations = {}
    time: Counter = Counter()
    docs = [run.process[r] for r in sorted(run.process)]
    if combined:
        f = tmp / "combined.xml"
        psprocess("-c", "-f", "xml", "-o", str(f), *run.docs)
        docs = [str(f)]
    for doc in docs:
        for rec in psuite.read_experiment(doc).to_records():
            if rec["metric"] == "samples":
                assert isinstance(rec["thread"], int), (type(rec["thread"]), rec["thread"])
                add(out, (rec["rank"], rec["thread"]), rec["value"])
                time[(rec["rank"], rec["thread"])] += rec["value"] * PERIOD_US / 1e6
            elif rec["metric"] == "time":
                time[(rec["rank"], rec["thread"])] -= rec["value"]
    assert all(abs(v) < 1e-9 for v in time.values()), time  # time is the samples times the period
    return out


# ------------------------------------------------------------------- cases
def case(name, reader, combined, *, reason=None, per="thread"):
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(reader, combined, per, id=f"{name}{'-c' if combined else ''}", marks=marks)


CASES = [
    case("json", from_json, False),
    case("json", from_json, True),
    case("json-callpaths", from_json_callpaths, False),
    case("json-callpaths", from_json_callpaths, True),
    case("csv", from_csv, False),
    case("csv", from_csv, True),
    case("csv-callpaths", from_csv_callpaths, False),
    case("csv-callpaths", from_csv_callpaths, True),
    case("text", from_text, False),
    case("text", from_text, True, per="all"),
    case("xml", from_xml, False, per="process"),
    case("xml", from_xml, True),
    case("gmon", from_gmon, False, per="exe"),
    case("vprof", from_vprof, False, per="rank"),
    case("folded", from_folded, False, per="rank"),
    case("folded", from_folded, True, per="all"),
    case("speedscope", from_speedscope, False),
    case("speedscope", from_speedscope, True),
    case("pprof", from_pprof, False),
    case("pprof", from_pprof, True),
    case("pprof-said", from_pprof, False, per="said"),
    case("pprof-said", from_pprof, True, per="said"),
    case("cube", from_cube, False),
    case("cube", from_cube, True),
    case("html", from_html, False),
    case("html", from_html, True),
    case("records", from_records, False),
    case("records", from_records, True),
]


@pytest.mark.parametrize("reader,combined,per", CASES)
def test_per_location_samples_agree(run, tmp_path, reader, combined, per):
    got = reader(run, combined, tmp_path)
    said = got.pop((-2, -2), None)  # what psprocess said it wrote (pprof)
    total = sum(run.truth.values())
    if per == "thread":
        assert threads_only(got) == truth(run)
    elif per == "rank":
        assert got == run.per_rank()
    elif per == "process":
        assert got == {(rank, 0): n for rank, n in run.process_totals.items()}
    elif per == "exe":
        assert got == run.exe_samples
    elif per == "all":
        assert got in ({-1: total}, {(-1, -1): total})
    elif per == "said":
        assert said == total, f"psprocess says {said} samples of {total}"


# -------------------------------------------------------------- identities
def test_record_apis_number_the_threads_alike(run):
    """psuite.read's records of a -p process report file its samples under
    the threads that took them, in both record APIs, as the model does."""
    import psuite

    report = psuite.read_document(run.process[0])
    flat, paths = Counter(), Counter()
    for rec in report.to_records():
        flat[rec["thread"]] += rec["samples"]
    for rec in report.calltree_records():
        paths[rec["thread"]] += rec["exclusive"]
    assert all(isinstance(t, int) for t in [*flat, *paths])
    assert dict(flat) == dict(paths)
    model = Counter()
    for rec in psuite.read_experiment(run.process[0]).to_records():
        if rec["metric"] == "samples":
            model[rec["thread"]] += rec["value"]
    assert threads_only(dict(model)) == threads_only(dict(flat))
    assert {t: n for t, n in flat.items() if n} == {t: n for (r, t), n in truth(run).items() if r == 0}


def test_experiment_records_number_threads_as_psrun(run):
    """The model's records: the thread an int, numbered as psrun's -p reports."""
    import psuite

    threads = {rec["thread"] for rec in psuite.read_experiment(run.process[0]).to_records()}
    assert threads <= {1, 2, 3} and all(isinstance(t, int) for t in threads)


def test_xml_keeps_the_rank(run, tmp_path):
    f = tmp_path / "r2.xml"
    psprocess("-x", "-o", str(f), run.process[2])
    assert "MPI rank 2" in (etree.parse(str(f)).getroot().findtext(".//annotation") or "")


def test_combined_xml_keeps_the_call_paths(run, tmp_path):
    """Beside the document, as psrun writes a process's (X.callpaths.xml):
    PerfSuite's <multihwpcprofilereport> has no place for them."""
    import psuite

    f = tmp_path / "c.xml"
    psprocess("-c", "-x", "-o", str(f), *run.docs)
    got = Counter()
    for rec in psuite.read_document(str(f)).calltree_records():
        got[(rec["rank"], rec["thread"])] += rec["exclusive"]
    assert threads_only(dict(got)) == truth(run)


def per_thread_calltree(text: str) -> Locations:
    """psprocess --calltree --per-thread: each "Rank R thread T" section's
    exclusive samples summed."""
    out: Locations = {}
    for m in re.finditer(r"^Rank (\d+) thread (\d+)\n=+\n.*?\n(.*?)(?=^Rank |\Z)", text, re.M | re.S):
        for row in re.finditer(r"^\s+\d+\s+[\d.]+%\s+(\d+)\s", m.group(3), re.M):
            add(out, (int(m.group(1)), int(m.group(2))), int(row.group(1)))
    return out


def test_combined_xml_reads_back_as_the_ranks(run, tmp_path):
    """The -c -x document (and its call paths beside it) read back by
    psuite.read, psprocess -f json and the text call tree gives each
    location the samples and call paths of the ranks' own documents."""
    import psuite

    f = tmp_path / "c.xml"
    psprocess("-c", "-x", "-o", str(f), *run.docs)
    assert (tmp_path / "c.callpaths.xml").exists()
    own: Counter = Counter()  # (rank, thread, path) -> exclusive samples, from each rank's process report
    for doc in run.process.values():
        for rec in psuite.read_document(doc).calltree_records():
            own[(rec["rank"], rec["thread"], rec["path"])] += rec["exclusive"]
    # the Python API
    combined = psuite.read_document(str(f))
    assert {(m.rank, m.thread): m.total_samples for m in combined.reports} == run.truth
    paths: Counter = Counter()
    for rec in combined.calltree_records():
        paths[(rec["rank"], rec["thread"], rec["path"])] += rec["exclusive"]
    assert +paths == +own
    # JSON
    p = run_tool("psprocess", "-f", "json", str(f), timeout=300)
    assert p.returncode == 0, p.stderr
    back = json.loads(p.stdout)
    assert {(r["rank"], r["thread"]): r["total_samples"] for r in back["reports"]} == run.truth
    paths = Counter()
    for r in back["reports"]:
        for node in r.get("calltree") or []:
            paths[(r["rank"], node["thread"], tuple(node["path"]))] += node["exclusive"]
    assert +paths == +own
    # the text call tree, thread by thread: as of the documents it was made from
    text = psprocess("--calltree", "--per-thread", str(f))
    assert text == psprocess("--calltree", "--per-thread", "-c", *run.docs)
    assert threads_only(per_thread_calltree(text)) == truth(run)


IDLE_PROGRAM = r"""
#include <pthread.h>
#include <unistd.h>

static int fds[2];
static volatile double sink;

static void *waiter(void *arg) {  /* blocked in read() until main is done: never runs while sampled */
    char c;
    return read(fds[0], &c, 1) == 1 ? NULL : arg;
}

int main(void) {
    pthread_t t;
    if (pipe(fds) != 0 || pthread_create(&t, NULL, waiter, NULL) != 0)
        return 1;
    for (long i = 0; i < 100000000L; i++)
        sink += (double)i * 0.5;
    if (write(fds[1], "x", 1) != 1)
        return 1;
    return pthread_join(t, NULL);
}
"""


@pytest.fixture(scope="module")
def idle_run(tmp_path_factory) -> IdleRun:
    """psrun -p --callpath of a program whose second thread never runs
    while sampled: its report always has 0 samples (Open MPI's helper
    threads of the 4-rank run only sometimes take none)."""
    d = tmp_path_factory.mktemp("idle_thread")
    (d / "idle.c").write_text(IDLE_PROGRAM)
    exe = d / "idle"
    subprocess.run([shutil.which("cc") or "gcc", "-O1", "-g", "-pthread", "-o", str(exe), str(d / "idle.c")],
                   check=True)
    docs = d / "run"
    docs.mkdir()
    p = subprocess.run([psrun_command(), "-q", "-d", str(docs), "-p", "--callpath", "--period", str(PERIOD_US),
                        str(exe)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    threads: dict[int, int] = {}
    for doc in docs.glob("*.xml"):
        root = etree.parse(str(doc)).getroot()
        if root.tag == "hwpcreport" and "process total" not in (root.findtext("annotation") or ""):
            threads[int(root.findtext("thread"))] = int(root.findtext(".//totalsamples"))
    assert threads[1] > 0 and threads[2] == 0, threads
    return IdleRun(sorted(str(p) for p in docs.glob("*.xml") if not p.name.endswith(".callpaths.xml")),
                   {(-1, t): n for t, n in threads.items()})  # no MPI: no rank


class IdleRun(NamedTuple):
    docs: list[str]
    truth: Locations


@pytest.mark.parametrize("which", ["mpi", "idle"])
def test_combined_xml_keeps_every_thread(run, idle_run, tmp_path, which):
    """A thread that took no sample is still one of the run's threads, as
    in the cube, the HTML page, JSON and speedscope: written with 0 samples
    (and the one line of 0 in "??" that PerfSuite's DTD wants), read back
    with 0 and no location."""
    r = run if which == "mpi" else idle_run
    f = tmp_path / "c.xml"
    psprocess("-c", "-x", "-o", str(f), *r.docs)
    root = validate(f, "multihwpcprofilereport-0.3.dtd")
    got = {}
    for rep in root.iter("hwpcprofilereport"):
        m = re.search(r"MPI rank (\d+)", rep.findtext(".//annotation") or "")
        got[(int(m.group(1)) if m else -1, int(rep.findtext(".//thread")))] = int(rep.findtext(".//totalsamples"))
    assert got == r.truth
    p = run_tool("psprocess", "-f", "json", str(f))
    assert p.returncode == 0, p.stderr
    back = json.loads(p.stdout)
    read = {(-1 if rep["rank"] is None else rep["rank"], rep["thread"]): rep["total_samples"]
            for rep in back["reports"]}
    assert read == r.truth
    assert all(loc["samples"] for rep in back["reports"] for loc in rep["locations"])  # no placeholder location


def test_cube_and_html_list_every_thread(run, tmp_path):
    """Idle threads included, as psrun's -p reports have them."""
    assert set(from_cube(run, True, tmp_path)) == set(run.truth)
    assert set(from_html(run, True, tmp_path)) == set(run.truth)


def cube_paths(path: Path) -> Counter:
    """A cube read back by psuite's CUBE reader: samples per (rank, thread,
    call path)."""
    import psuite

    out: Counter = Counter()
    for rec in psuite.read_experiment(str(path)).to_records():
        if rec["metric"] == "samples" and rec["value"]:
            out[(rec["rank"], rec["thread"], rec["path"][1:])] += rec["value"]  # [0] is the program
    return out


def test_combined_cube_has_each_ranks_call_paths(run, tmp_path):
    ranks: Counter = Counter()
    for rank, doc in run.process.items():
        psprocess("--cube", str(tmp_path / f"r{rank}.cubex"), doc)
        ranks.update(cube_paths(tmp_path / f"r{rank}.cubex"))
    psprocess("-c", "--cube", str(tmp_path / "c.cubex"), *run.docs)
    assert max(len(p) for _, _, p in ranks) > 2  # the ranks' cubes have call paths
    assert cube_paths(tmp_path / "c.cubex") == ranks


def test_psbase_files_the_combined_run_with_its_samples(run, tmp_path):
    """psbase filing keeps a run's totals, not its locations: the run filed
    by psprocess -c --archive has the samples of all the threads (process
    totals not counted twice), its ranks and threads per rank."""
    db = f"sqlite:///{tmp_path / 'psbase.db'}"
    p = run_tool("psbase", "--db", db, "setup", "--psuite", "app", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    psprocess("-c", "--archive", "app", "--db", db, *run.docs)
    rows = {}
    for by in ("ranks", "threads"):
        p = run_tool("psbase", "--db", db, "query", "app", "total_samples", "--by", by, "-f", "json", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        [rows[by]] = json.loads(p.stdout)["rows"]
    assert rows["ranks"]["ranks"] == RANKS and rows["threads"]["threads"] == 3
    assert rows["ranks"]["total_samples mean"] == sum(run.truth.values())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-v"]))
