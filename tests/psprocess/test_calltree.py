"""Call paths in psprocess: the <callpaths> reader, finding a profile's
companion, the call-tree reports (top-down, bottom-up, callers) with exact
numbers on a known tree, threshold and depth, combining with statistics,
psuite.read_document()'s records, JSON and CSV, and the CLI's one-line errors.

Until psrun writes companions, they are written here per
docs/formats/callpaths.md, with addresses of a compiled -O2 program, so
that resolution is real; flat profiles come from psrun --profile."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import warnings
from pathlib import Path

import pytest

import psuite
from psuite.errors import InputError
from psuite.formats.readers import callpaths as reader
from tests.conftest import one_line_error, run_tool
from tests.psprocess.test_url_input import server  # noqa: F401  (the http server fixture)

SOURCE = r"""
#include <stdlib.h>
volatile double sink;
__attribute__((noinline)) double work(long n)
{ double s = 0; for (long i = 0; i < n; i++) s += (double)i * 1.0000001; sink = s; return s; }
__attribute__((noinline)) double c(long n) { double r = work(n); sink += 1; return r + 1; }
__attribute__((noinline)) double b(long n) { double r = work(n * 3 / 2); r += c(n); sink += 2; return r + 2; }
__attribute__((noinline)) double a(long n) { double r = work(n * 5 / 2); sink += 3; return r + 3; }
int main(int argc, char **argv)
{ long n = argc > 1 ? atol(argv[1]) : 2000000; double r = a(n) + b(n); return r < 0; }
"""
OFFSET = 0x555555554000  # where the companions written alone say the program was loaded


@pytest.fixture(scope="session")
def program(tmp_path_factory) -> dict:
    """The test program (-O2, no frame pointer) and its functions' file
    addresses from its symbol table."""
    out = tmp_path_factory.mktemp("calltree_prog")
    (out / "ct.c").write_text(SOURCE)
    exe = out / "ct"
    subprocess.run(["cc", "-O2", "-g", "-fomit-frame-pointer", "-o", str(exe), str(out / "ct.c")], check=True)
    nm = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    syms = {f[2]: int(f[0], 16) for f in (line.split() for line in nm.splitlines()) if len(f) == 3 and f[1] in "Tt"}
    return {"exe": str(exe), "syms": syms}


def callpaths_xml(exe: str, syms: dict, threads: list, *, offset: int = OFFSET, pid: int = 4242,
                  file: str = "ct.4242.host.xml", lost: int = 0, truncated: int = 0, extra_modules: str = "",
                  version: str = "1.1") -> str:
    """A <callpaths> document.  threads: [(thread id, [(parent, what, samples)])], node ids 1.. in order,
    tids pid, pid + 1 ... in order; thread ids from 1 (the main thread) in version 1.1, from 0 in 1.0;
    `what` is "f" (a return address inside f: resolved at f), "f!" (the interrupted instruction in f),
    "truncated" or "blocked"."""
    parts = ['<?xml version="1.0" encoding="UTF-8"?>', f'<callpaths version="{version}" generator="test">',
             f'  <profile file="{file}" pid="{pid}" hostname="host" command="{exe} 10"/>',
             '  <sampling event="ITIMER_PROF" threshold="10000" maxdepth="128" unwinder="libunwind"/>',
             f'  <module id="1" file="{exe}" offset="{offset:#x}"/>' + extra_modules]
    for k, (ident, nodes) in enumerate(threads):
        total = sum(n for _, _, n in nodes)
        parts.append(f'  <thread id="{ident}" tid="{pid + k}" samples="{total}" truncated="{truncated}" '
                     f'lost="{lost}">')
        for i, (parent, what, n) in enumerate(nodes, 1):
            attrs = f'id="{i}" parent="{parent}"'
            if what in ("truncated", "blocked"):
                attrs += f' kind="{what}"'
            elif what.endswith("!"):
                attrs += f' module="1" addr="{offset + syms[what[:-1]] + 4:x}" kind="sample"'
            else:  # a return address: 5 bytes into f, so that addr - 1 is in f
                attrs += f' module="1" addr="{offset + syms[what] + 5:x}"'
            parts.append(f"    <node {attrs}" + (f' samples="{n}"/>' if n else "/>"))
        parts.append("  </thread>")
    parts.append("</callpaths>")
    return "\n".join(parts) + "\n"


# The known tree: main -> a -> work 50, main -> b -> work 30, main -> b -> c -> work 20,
# and 4 samples in b itself (the interrupted instruction in b, under main's return address).
KNOWN = [(0, "main", 0), (1, "a", 0), (2, "work!", 50), (1, "b", 0), (4, "work!", 30), (4, "c", 0), (6, "work!", 20),
         (1, "b!", 4)]


def write_alone(directory: Path, program: dict, threads=None, name: str = "ct.4242.host.callpaths.xml",
                **kw) -> Path:
    path = directory / name
    path.write_text(callpaths_xml(program["exe"], program["syms"], threads or [(1, KNOWN)], **kw))
    return path


def psprocess(*args) -> str:
    p = run_tool("psprocess", *map(str, args))
    assert p.returncode == 0, p.stderr
    return p.stdout


def tree_lines(text: str) -> list[str]:
    """The lines of the (first) tree section: after the rule."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("=" * 78))
    return lines[start + 1:]


# --- reader -----------------------------------------------------------------

@pytest.mark.parametrize("version, first", [("1.1", 1), ("1.0", 0)])
def test_reader_reads_every_element(program, tmp_path, version, first):
    """Threads as every document numbers them, the main thread 1; a 1.0
    document counted them from 0 (docs/formats/numbering.md)."""
    threads = [(first, KNOWN), (first + 1, [(0, "truncated", 0), (1, "work!", 3), (0, "blocked", 0), (3, "c!", 2)])]
    path = write_alone(tmp_path, program, threads, truncated=1, lost=7, version=version)
    with open(path, "rb") as f:
        cp = reader.read(f, str(path))
    assert (cp.profile_file, cp.pid, cp.hostname, cp.event, cp.threshold, cp.maxdepth, cp.unwinder) == \
        ("ct.4242.host.xml", 4242, "host", "ITIMER_PROF", 10000, 128, "libunwind")
    assert cp.modules[1].file == program["exe"] and cp.modules[1].offset == OFFSET
    t0, t1 = cp.threads
    assert (t0.thread, t0.tid, t0.samples, t0.truncated, t0.lost, len(t0)) == (1, 4242, 104, 1, 7, 8)
    assert t1.thread == 2
    assert t0.parent == [0, 0, 1, 2, 1, 4, 4, 6, 1]
    assert t0.kind[1:] == [0, 0, 1, 0, 1, 0, 1, 1]
    assert t0.addr[1] == OFFSET + program["syms"]["main"] + 5
    assert t0.exclusive[3] == 50
    assert t1.kind[1:] == [2, 1, 3, 1] and t1.addr[1] == 0 and t1.parent[1:] == [0, 1, 0, 3]
    assert cp.samples == 109 and cp.lost == 14 and cp.truncated == 2


def _doc(body: str, version: str = "1.0") -> bytes:
    return (f'<callpaths version="{version}"><module id="1" file="/x" offset="0x1000"/>'
            f'<thread id="0" tid="1" samples="1">{body}</thread></callpaths>').encode()


@pytest.mark.parametrize(("data", "problem"), [
    (b'<callpaths version="1.0"><thread id="0" samples="0"><node id="1" par', "not well-formed XML"),
    (_doc('<node id="2" parent="1" module="1" addr="1010" samples="1"/>'), "comes before its parent 1"),
    (_doc('<node id="1" parent="0" module="1" addr="1010" samples="2"/>'), 'says samples="1" but its nodes hold 2'),
    (_doc('<node id="1" parent="0" module="1" addr="1010" kind="leaf" samples="1"/>'), "kind='leaf'"),
    (_doc('<node id="1" parent="0" module="9" addr="1010" samples="1"/>'), "module 9, which no <module> declares"),
    (_doc('<node id="1" parent="0" module="1" samples="1"/>'), "has no addr= attribute"),
    (_doc('<node id="1" parent="0" module="1" addr="zz" samples="1"/>'), "addr="),
    (_doc('<node id="1" parent="0" module="1" addr="1010" samples="1"/><node id="1" parent="0" kind="truncated"/>'),
     "declared twice"),
    (_doc('<node id="1" parent="0" module="1" addr="1010" samples="1"/>', version="2.0"), "version='2.0'"),
    (_doc("".join(f'<node id="{i}" parent="{i - 1}" module="1" addr="1010"/>' for i in range(1, 1026))
          + '<node id="1026" parent="1025" module="1" addr="1010" samples="1"/>'),
     "is 1026 frames deep, more than psrun records (at most 1024 frames under a truncated node)"),
])
def test_reader_rejects_malformed_documents_in_one_line(tmp_path, data, problem):
    path = tmp_path / "bad.callpaths.xml"
    path.write_bytes(data)
    with pytest.raises(InputError) as exc:
        with open(path, "rb") as f:
            reader.read(f, str(path))
    message = str(exc.value)
    assert problem in message and str(path) in message and "\n" not in message, message
    assert problem in one_line_error(run_tool("psprocess", str(path)), "psprocess")


def test_reader_streams_and_drops_nodes(tmp_path):
    """A large document is read without keeping its elements: 200,000
    nodes read (chains 100 deep), and the model holds them as flat lists."""
    n = 200_000
    body = "".join(f'<node id="{i}" parent="{i - 1 if i % 100 else 0}" module="1" addr="{0x2000 + i:x}"/>'
                   for i in range(1, n))
    body += f'<node id="{n}" parent="{n - 1}" module="1" addr="3000" kind="sample" samples="1"/>'
    path = tmp_path / "big.callpaths.xml"
    path.write_bytes(_doc(body))
    with open(path, "rb") as f:
        cp = reader.read(f, str(path))
    assert len(cp.threads[0]) == n and cp.threads[0].parent[-1] == n - 1


# --- finding companions -------------------------------------------------------

@pytest.fixture()
def real_profile(program, tmp_path) -> Path:
    """A real flat profile of the test program (psrun --profile) with a
    companion beside it whose addresses are at the program's load address
    in that run."""
    p = run_tool("psrun", "-q", "--profile", "ITIMER_PROF", "--period", "2000", "-d", str(tmp_path), program["exe"],
                 "3000000")
    assert p.returncode == 0, p.stderr
    [xml] = sorted(tmp_path.glob("ct.*.xml"))
    text = xml.read_text()
    offset = int(re.search(rf'<module file="{re.escape(program["exe"])}" offset="(0x[0-9a-f]+)"', text).group(1), 16)
    pid = int(re.search(r"<pid>(\d+)</pid>", text).group(1))
    companion = Path(reader.companion_name(str(xml)))
    companion.write_text(callpaths_xml(program["exe"], program["syms"], [(1, KNOWN)], offset=offset, pid=pid,
                                       file=xml.name))
    return xml


def test_profile_is_read_with_its_companion(real_profile):
    r = psuite.read_document(str(real_profile))
    assert r.callpaths is not None and r.callpaths.source == reader.companion_name(str(real_profile))
    flat = psuite.read_document(str(real_profile))
    Path(r.callpaths.source).unlink()
    alone = psuite.read_document(str(real_profile))
    assert alone.callpaths is None
    # the flat profile is what it is without the call paths
    assert sorted((loc.function, loc.samples) for loc in flat.locations) == \
        sorted((loc.function, loc.samples) for loc in alone.locations)
    rows = {row["path"]: row for row in r.calltree_records()}
    assert rows[("main", "b", "c", "work")]["inclusive"] == 20
    assert rows[("main",)]["inclusive"] == 104


def test_companion_of_another_run_is_left_out_with_a_warning(program, real_profile):
    companion = Path(reader.companion_name(str(real_profile)))
    companion.write_text(callpaths_xml(program["exe"], program["syms"], [(1, KNOWN)], pid=1,
                                       file=real_profile.name))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = psuite.read_document(str(real_profile))
    assert r.callpaths is None
    assert any("pid=\"1\"" in str(w.message) and "left out" in str(w.message) for w in caught)
    p = run_tool("psprocess", str(real_profile))
    assert p.returncode == 0
    warned = [line for line in p.stderr.splitlines() if line.startswith("psprocess: warning:")]
    assert len(warned) == 1 and str(companion) in warned[0] and "is not the profile's pid" in warned[0]
    assert "Call paths were recorded" not in p.stdout
    companion.write_text(callpaths_xml(program["exe"], program["syms"], [(1, KNOWN)], file="other.1.host.xml"))
    assert "other.1.host.xml" in run_tool("psprocess", str(real_profile)).stderr


def test_companion_read_alone(program, tmp_path):
    path = write_alone(tmp_path, program)
    r = psuite.read_document(str(path))
    assert (r.hostname, r.pid, r.command, r.event, r.threshold) == ("host", 4242, f"{program['exe']} 10",
                                                                     "ITIMER_PROF", 10000)
    assert r.callpaths.samples == 104 and r.total_samples == 104
    flat: dict[str, int] = {}
    for loc in r.locations:
        flat[loc.function] = flat.get(loc.function, 0) + loc.samples
    assert flat == {"work": 100, "b": 4}
    out = psprocess(path)
    assert "call paths only" in out and "Call paths were recorded" in out


def test_glob_of_profile_and_companion_reports_each_once(real_profile):
    inputs = sorted(real_profile.parent.glob("*.xml"))
    assert len(inputs) == 2
    reports = json.loads(psprocess("-f", "json", *inputs))["reports"]
    assert len(reports) == 1 and reports[0]["callpaths"]["samples"] == 104
    combined = json.loads(psprocess("-c", "-f", "json", str(real_profile.parent / "*.xml")))
    assert len(combined["reports"]) == 1
    assert combined["callpath_statistics"][0]["inclusive"]["sum"] == 104
    text = psprocess("--calltree", *inputs)
    assert text.count("PerfSuite Call Tree Report") == 1


# --- reports on the known tree --------------------------------------------------

def test_top_down_exact(program, tmp_path):
    out = psprocess("--calltree", write_alone(tmp_path, program))
    assert "Samples                 : 104" in out and "Unwinder                : libunwind" in out
    assert tree_lines(out) == [
        " Inclusive       %  Exclusive       %  Call path",
        "       104 100.00%          0   0.00%  main",
        "        54  51.92%          4   3.85%    b",
        "        30  28.85%         30  28.85%      work",
        "        20  19.23%          0   0.00%      c",
        "        20  19.23%         20  19.23%        work",
        "        50  48.08%          0   0.00%    a",
        "        50  48.08%         50  48.08%      work",
    ]


def test_bottom_up_exact(program, tmp_path):
    out = psprocess("--calltree", "bottom-up", write_alone(tmp_path, program))
    assert tree_lines(out)[1:] == [
        "       100  96.15%  work",
        "        50  48.08%    a",
        "        50  48.08%      main",
        "        30  28.85%    b",
        "        30  28.85%      main",
        "        20  19.23%    c",
        "        20  19.23%      b",
        "        20  19.23%        main",
        "         4   3.85%  b",
        "         4   3.85%    main",
    ]


def test_callers_exact(program, tmp_path):
    out = psprocess("--calltree", "callers", write_alone(tmp_path, program))
    rows = [line.split() for line in tree_lines(out)[1:] if not line.startswith("-")]
    assert rows == [
        ["104", "<spontaneous>"], ["[1]", "100.00%", "104", "0", "main", "[1]"], ["54", "b", "[3]"],
        ["50", "a", "[4]"],
        ["50", "a", "[4]"], ["30", "b", "[3]"], ["20", "c", "[5]"], ["[2]", "96.15%", "100", "100", "work", "[2]"],
        ["54", "main", "[1]"], ["[3]", "51.92%", "54", "4", "b", "[3]"], ["30", "work", "[2]"], ["20", "c", "[5]"],
        ["50", "main", "[1]"], ["[4]", "48.08%", "50", "0", "a", "[4]"], ["50", "work", "[2]"],
        ["20", "b", "[3]"], ["[5]", "19.23%", "20", "0", "c", "[5]"], ["20", "work", "[2]"],
    ]


def test_recursion_counts_each_sample_once_per_function(program, tmp_path):
    """main -> a -> a -> a -> work: a's inclusive is 10, not 30; the a -> a
    edge carries the 10 samples once."""
    path = write_alone(tmp_path, program, [(1, [(0, "main", 0), (1, "a", 0), (2, "a", 0), (3, "a", 0),
                                                (4, "work!", 10)])])
    rows = [line.split() for line in tree_lines(psprocess("--calltree", "callers", path))[1:]
            if not line.startswith("-")]
    a_primary = next(r for r in rows if r[-2:] == ["a", r[0]] and r[0].startswith("["))
    assert a_primary[2] == "10"
    assert ["10", "a", a_primary[0]] in rows  # a as its own caller, 10 once


def test_threshold_and_depth(program, tmp_path):
    path = write_alone(tmp_path, program)
    lines = tree_lines(psprocess("--calltree", "--threshold", "25", path))
    assert [line.split()[-1] for line in lines[1:-1]] == ["main", "b", "work", "a", "work"]
    assert lines[-1] == "(1 call path below 25% left out)"
    lines = tree_lines(psprocess("--calltree", "--depth", "2", path))
    assert [line.split()[-1] for line in lines[1:-1]] == ["main", "b", "a"]
    assert lines[-1] == "(call paths deeper than --depth 2 left out)"
    lines = tree_lines(psprocess("--calltree", "bottom-up", "--depth", "1", path))
    assert [line.split()[-1] for line in lines[1:-1]] == ["work", "b"]
    lines = tree_lines(psprocess("--calltree", "callers", "--threshold", "50", path))
    assert [line.split()[-2] for line in lines if line.lstrip().startswith("[")] == ["main", "work", "b"]


def test_threads_merged_by_default_and_split_on_request(program, tmp_path):
    path = write_alone(tmp_path, program, [(1, KNOWN), (2, [(0, "main", 0), (1, "c", 0), (2, "work!", 6)])])
    lines = tree_lines(psprocess("--calltree", path))
    assert lines[1].split()[:2] == ["110", "100.00%"] and "All 2 threads merged" in psprocess("--calltree", path)
    out = psprocess("--calltree", "--per-thread", path)
    assert "Thread 1 (tid 4242)" in out and "Thread 2 (tid 4243)" in out
    assert "         6 100.00%          6 100.00%      work" in out


def test_flat_report_says_call_paths_are_there(program, tmp_path, real_profile):
    out = psprocess(real_profile)
    assert out.rstrip().splitlines()[-1].startswith("Call paths were recorded: see them with psprocess --calltree")
    assert "Function Summary" in out


# --- combining --------------------------------------------------------------------

def test_combine_statistics_per_call_path(program, tmp_path):
    """Two processes: main -> a -> work 50 and 10 samples; main -> b ->
    work 30 in the first only."""
    one = write_alone(tmp_path, program, [(1, [(0, "main", 0), (1, "a", 0), (2, "work!", 50), (1, "b", 0),
                                               (4, "work!", 30)])], name="p1.callpaths.xml", pid=1)
    two = write_alone(tmp_path, program, [(1, [(0, "main", 0), (1, "a", 0), (2, "work!", 10)])],
                      name="p2.callpaths.xml", pid=2)
    data = json.loads(psprocess("-c", "-f", "json", one, two))
    stats = {tuple(p["path"]): p for p in data["callpath_statistics"]}
    s = stats[("main", "a", "work")]["inclusive"]
    assert (s["count"], s["sum"], s["mean"], s["min"], s["max"], s["stddev"]) == (2, 60, 30, 10, 50, 20)
    assert s["max_who"] == "host pid 1 thread 1" and s["imbalance"] == pytest.approx(50 / 30)
    b = stats[("main", "b", "work")]["exclusive"]
    assert (b["sum"], b["mean"], b["min"], b["max"]) == (30, 15, 0, 30)
    assert [tuple(p["path"]) for p in data["callpath_statistics"]] == [
        ("main",), ("main", "a"), ("main", "a", "work"), ("main", "b"), ("main", "b", "work")]
    lines = tree_lines(psprocess("-c", "--calltree", one, two))
    assert lines[1].split() == ["90", "100.00%", "0", "45.0", "35.0", "80", "main"]
    assert lines[3].split() == ["60", "66.67%", "60", "30.0", "20.0", "50", "work"]
    assert len(psuite.model.calltree.thread_trees(_combined(one, two))) == 2


def _combined(*paths):
    from psuite.analysis import calltree_resolve, combine, srcmap
    from psuite.analysis.inputs import load

    def resolve(r):
        srcmap.resolve_into(r)
        calltree_resolve.resolve_into(r)

    return combine.combine([str(p) for p in paths], load, lambda r: None, resolve)


# --- Python records, JSON, CSV ----------------------------------------------------

def test_calltree_records(program, tmp_path):
    r = psuite.read_document(str(write_alone(tmp_path, program)))
    rows = r.calltree_records()
    assert [(row["path"], row["inclusive"], row["exclusive"], row["depth"]) for row in rows] == [
        (("main",), 104, 0, 1), (("main", "a"), 50, 0, 2), (("main", "a", "work"), 50, 50, 3),
        (("main", "b"), 54, 4, 2), (("main", "b", "work"), 30, 30, 3), (("main", "b", "c"), 20, 0, 3),
        (("main", "b", "c", "work"), 20, 20, 4)]
    row = rows[0]
    assert (row["pid"], row["hostname"], row["thread"], row["tid"], row["function"], row["module"]) == \
        (4242, "host", 1, 4242, "main", program["exe"])
    unresolved = psuite.read_document(str(write_alone(tmp_path, program)), resolve=False)
    assert unresolved.callpaths is not None and unresolved.calltree_records() == []


def test_json_and_csv_carry_the_call_tree(program, tmp_path):
    path = write_alone(tmp_path, program)
    [report] = json.loads(psprocess("-f", "json", path))["reports"]
    assert report["callpaths"]["threads"] == [{"thread": 1, "tid": 4242, "samples": 104, "truncated": 0, "lost": 0,
                                               "contexts": 8}]
    tree = {tuple(row["path"]): row for row in report["calltree"]}
    assert tree[("main", "b", "c", "work")] == {"thread": 1, "tid": 4242, "path": ["main", "b", "c", "work"],
                                                 "function": "work", "module": program["exe"], "inlined": False,
                                                 "inclusive": 20, "exclusive": 20, "depth": 4}
    rows = list(csv.DictReader(io.StringIO(psprocess("-f", "csv", path))))
    paths = {row["path"]: row for row in rows if row["kind"] == "callpath"}
    assert paths["main;b;c;work"]["value"] == "20" and paths["main;b"]["exclusive"] == "4"
    assert paths["main;b"]["name"] == "b" and paths["main;b"]["depth"] == "2"
    assert sum(1 for row in rows if row["kind"] == "location") == 2


# --- CLI errors -------------------------------------------------------------------

def test_cli_needs_call_paths_for_calltree_and_exports(real_profile):
    Path(reader.companion_name(str(real_profile))).unlink()
    line = one_line_error(run_tool("psprocess", "--calltree", str(real_profile)), "psprocess")
    assert "no call paths; record them with psrun --callpath" in line
    assert "--depth goes with --calltree" in one_line_error(run_tool("psprocess", "--depth", "3",
                                                                     str(real_profile)), "psprocess")
    assert "whole number" in one_line_error(run_tool("psprocess", "--calltree", "--depth", "0",
                                                     str(real_profile)), "psprocess")


def test_url_profile_comes_with_its_companion_url(real_profile, server):  # noqa: F811
    url = f"{server}/{real_profile.name}"
    r = psuite.read_document(url)
    assert r.callpaths is not None and r.callpaths.source == reader.companion_name(url)
    assert {row["path"]: row["inclusive"] for row in r.calltree_records()}[("main", "a", "work")] == 50
    Path(reader.companion_name(str(real_profile))).unlink()
    r = psuite.read_document(url)  # no companion on the server: fine
    assert r.callpaths is None and r.locations


def test_combining_keeps_the_call_paths_of_a_process_total(program, tmp_path):
    """psrun -p: thread reports and the process total; the process's call
    paths came with the total, which combining leaves out: they stay, once."""
    import dataclasses

    from psuite.analysis import combine

    path = write_alone(tmp_path, program, [(1, KNOWN), (2, [(0, "main", 0), (1, "c", 0), (2, "work!", 6)])])
    total = psuite.read_document(str(path))
    total = dataclasses.replace(total, thread=0, annotation="process total", generator="psuite 0.1.0")
    threads = [dataclasses.replace(total, thread=k, annotation="", callpaths=None) for k in (1, 2)]
    multi = combine.summarize([total, *threads])
    assert multi.totals == [total] and total.callpaths is None
    assert [t.thread for t in psuite.model.calltree.thread_trees(multi)] == [1, 2]
    assert multi.callpath_statistics[0].inclusive.sum == 110


def test_mutated_documents_fail_in_one_line_or_read(program, tmp_path):
    """1,500 deterministic mutations of a valid document (bytes flipped,
    cut, attributes duplicated): each is read and resolved, or refused
    with an InputError; never another exception."""
    import random

    from psuite.analysis import calltree_resolve

    good = callpaths_xml(program["exe"], program["syms"], [(1, KNOWN), (2, [(0, "truncated", 0), (1, "c!", 2)])],
                         truncated=1).encode()
    rng = random.Random(14)
    outcomes = {"read": 0, "refused": 0}
    for _ in range(1500):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data) + 1)
            op = rng.randrange(4)
            if op == 0 and i < len(data):
                data[i] = rng.choice(b'0123456789abcdefxz<>"=/ -')
            elif op == 1:
                del data[i:i + rng.randint(1, 40)]
            elif op == 2:
                data[i:i] = rng.choice([b' samples="99999999999999999999"', b' parent="0"', b' kind="blocked"',
                                        b' addr="ffffffffffffffffff"', b' module="0"', b"\xff\xfe"])
            else:
                data = data[:i]
        try:
            cp = reader.read(io.BytesIO(bytes(data)), "m.callpaths.xml")
        except InputError as exc:
            assert "\n" not in str(exc) and str(exc).startswith("m.callpaths.xml")
            outcomes["refused"] += 1
            continue
        calltree_resolve.resolve(cp)
        assert all(t.tree.total() == t.samples for t in cp.threads)
        outcomes["read"] += 1
    assert outcomes["read"] > 20 and outcomes["refused"] > 500, outcomes


def test_the_test_documents_are_valid_against_the_schema(program):
    """The companions these tests write are what the format says."""
    from lxml import etree

    from psuite.formats import callpaths_schema

    for version, first in (("1.1", 1), ("1.0", 0)):
        schema = etree.XMLSchema(etree.parse(callpaths_schema(version)))
        doc = callpaths_xml(program["exe"], program["syms"], [(first, KNOWN), (first + 1, [
            (0, "truncated", 0), (1, "c!", 2), (0, "blocked", 0), (3, "work!", 1)])], version=version)
        schema.assertValid(etree.fromstring(doc.encode()))
