"""gmon.out's call graph from call-path profiles, read by the real GNU gprof
and gprof2dot: programs of known structure (tests/targets/callpath) run
under `psrun --callpath`, exported with `psprocess --gmon`; gprof's call
graph must hold the known caller -> callee pairs with the samples the
profile has under each call (psuite's own call tree gives them), whether
the executable is position-independent or not; frames in shared libraries
are folded away (qsort's callback is called by qsort's caller); recursion
counts a sample once per call pair; gprof2dot draws the same edges."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import psuite
from psuite.formats.readers import callpaths as reader
from tests.callpath_helpers import FLAGS, PERIOD_US, SRC, build
from tests.conftest import run_tool
from tests.psprocess.test_calltree import KNOWN, callpaths_xml, program, real_profile  # noqa: F401  (fixtures)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    """The call-path targets, and known.c built as a fixed-address (non-PIE) executable too."""
    out = tmp_path_factory.mktemp("gprof_targets")
    programs = build(out)
    subprocess.run(["gcc", *FLAGS, "-no-pie", "-o", str(out / "known_nopie"), str(SRC / "known.c"),
                    str(SRC / "work.c")], check=True)
    programs["known_nopie"] = str(out / "known_nopie")
    return programs


def callpath_profile(directory: Path, *command: str) -> Path:
    p = run_tool("psrun", "-q", "--callpath", "--period", str(PERIOD_US), "-d", str(directory), *command,
                 timeout=300)
    assert p.returncode == 0, p.stderr
    [report] = [x for x in directory.glob("*.xml") if not x.name.endswith(".callpaths.xml")]
    return report


def export(report: Path, gmon: Path) -> str:
    p = run_tool("psprocess", "--gmon", str(gmon), str(report))
    assert p.returncode == 0, p.stderr
    return p.stderr


def gprof_arcs(exe: str, gmon: Path) -> dict[tuple[str, str], int]:
    """(caller, callee) -> count from `gprof -b -q`: in each entry, the
    lines after the function's own [index] line are its callees, "self
    children called/total name [index]" or, for a recursive call, "count
    name [index]"."""
    gprof = shutil.which("gprof")
    assert gprof, "GNU gprof (binutils) is needed; tests/run.sh installs it"
    out = subprocess.run([gprof, "-b", "-q", exe, str(gmon)], capture_output=True, text=True, check=True).stdout
    assert "Call graph" in out, out
    arcs: dict[tuple[str, str], int] = {}
    for entry in out.split("-----------------------------------------------"):
        lines = entry.strip("\n").splitlines()
        own = [i for i, line in enumerate(lines) if re.match(r"\[\d+\]", line)]
        if not own:
            continue
        caller = _name(lines[own[0]])
        for line in lines[own[0] + 1:]:
            m = re.match(r"^\s+(?:[0-9.]+\s+[0-9.]+\s+)?(\d+)(?:/\d+)?\s+(.+\[\d+\])\s*$", line)
            if m:
                arcs[caller, _name(m.group(2))] = int(m.group(1))
    return arcs


def _name(line: str) -> str:
    """The function's name in a call-graph line: before its [index], without a <cycle N> mark."""
    name = re.search(r"(\S+)(?: <cycle \d+>)? \[\d+\]\s*$", line)
    assert name, line
    return name.group(1)


def tree_pairs(report: Path) -> dict[tuple[str, str], int]:
    """(caller, callee) -> samples under that call from psuite's own call
    tree (every thread): each context's inclusive samples, a sample counted
    once per pair on its path (what gprof's count is documented to be)."""
    r = psuite.read_document(str(report))
    out: dict[tuple[str, str], int] = {}
    for row in r.calltree_records():
        path = row["path"]
        seen = set(zip(path, path[1:], strict=False))
        for pair in seen:
            out[pair] = out.get(pair, 0) + row["exclusive"]
    return out


KNOWN_PAIRS = {("main", "a"), ("main", "b"), ("b", "c"), ("a", "work"), ("b", "work"), ("c", "work")}


@pytest.mark.parametrize("name", ["known", "known_nopie"])
def test_gprof_prints_the_known_call_graph(built, tmp_path, name):
    """known.c: main -> a -> work, main -> b -> work, main -> b -> c ->
    work, in the executable's own address space (PIE or not)."""
    report = callpath_profile(tmp_path, built[name], "150")
    gmon = tmp_path / "gmon.out"
    said = export(report, gmon)
    assert "call arcs" in said and "samples, not calls" in said, said
    arcs = gprof_arcs(built[name], gmon)
    ours = tree_pairs(report)
    assert KNOWN_PAIRS <= set(arcs), arcs
    for pair in KNOWN_PAIRS:
        assert arcs[pair] == ours[pair], (pair, arcs, ours)
    # every arc is between the executable's functions: libc's frames are folded away
    nm = subprocess.run(["nm", "--defined-only", built[name]], capture_output=True, text=True, check=True).stdout
    functions = {f[2] for f in (line.split() for line in nm.splitlines()) if len(f) == 3 and f[1] in "Tt"}
    assert {f for pair in arcs for f in pair} <= functions, arcs
    # work's callers share its samples: a 50 %, b 30 %, c 20 % of the iterations
    into_work = {caller: n for (caller, callee), n in arcs.items() if callee == "work"}
    total = sum(into_work.values())
    assert total == ours["a", "work"] + ours["b", "work"] + ours["c", "work"]
    for caller, share in (("a", 50), ("b", 30), ("c", 20)):
        assert 100 * into_work[caller] / total == pytest.approx(share, abs=10), into_work


def test_gprof2dot_draws_the_call_graph(built, tmp_path):
    """gprof's output through gprof2dot (which stops at the end of a flat
    profile without a call graph): a dot graph with the known edges."""
    gprof2dot = shutil.which("gprof2dot")
    assert gprof2dot, "gprof2dot is needed (the test extra installs it)"
    report = callpath_profile(tmp_path, built["known"], "100")
    gmon = tmp_path / "gmon.out"
    export(report, gmon)
    text = subprocess.run(["gprof", built["known"], str(gmon)], capture_output=True, text=True, check=True).stdout
    dot = subprocess.run([gprof2dot, "-n", "0", "-e", "0"], input=text, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    names = {m.group(1): m.group(2) for m in re.finditer(r'^\s*(\d+) \[.*?label="([^"\\]+)\\n', dot, re.M)}
    edges = {(names[m.group(1)], names[m.group(2)]) for m in re.finditer(r"^\s*(\d+) -> (\d+) ", dot, re.M)}
    assert KNOWN_PAIRS <= edges, dot


def test_library_frames_are_folded(built, tmp_path):
    """qsort_cb.c: cmp() is called by libc's qsort, which sort_many() calls:
    gprof knows only the executable, so the arc is sort_many -> cmp with
    every sample of cmp."""
    report = callpath_profile(tmp_path, built["qsort_cb"], "15")
    gmon = tmp_path / "gmon.out"
    export(report, gmon)
    arcs = gprof_arcs(built["qsort_cb"], gmon)
    callers_of_cmp = {caller: n for (caller, callee), n in arcs.items() if callee == "cmp"}
    assert set(callers_of_cmp) == {"sort_many"}, arcs
    r = psuite.read_document(str(report))
    cmp_samples = sum(row["exclusive"] for row in r.calltree_records() if "cmp" in row["path"])
    assert callers_of_cmp["sort_many"] == cmp_samples > 0
    assert arcs["main", "sort_many"] == tree_pairs(report)["main", "sort_many"]


def test_recursion_counts_a_sample_once_per_call(built, tmp_path):
    """recursion.c 50 deep (within psrun's 128 frames): rec calls itself 49
    times on every path, and each sample counts once for rec -> rec, as
    for main -> rec and rec -> work."""
    report = callpath_profile(tmp_path, built["recursion"], "50", "150")
    gmon = tmp_path / "gmon.out"
    export(report, gmon)
    arcs = gprof_arcs(built["recursion"], gmon)
    ours = tree_pairs(report)
    assert ours["main", "rec"] == ours["rec", "rec"] == ours["rec", "work"] > 0
    for pair in (("main", "rec"), ("rec", "rec"), ("rec", "work")):
        assert arcs[pair] == ours[pair], (pair, arcs, ours)


def test_flat_profile_says_how_to_get_the_call_graph(built, tmp_path):
    """Without call paths the file is the histogram alone, and psprocess
    says how to record the call graph."""
    p = run_tool("psrun", "-q", "--profile", "ITIMER_PROF", "--period", str(PERIOD_US), "-d", str(tmp_path),
                 built["known"], "50")
    assert p.returncode == 0, p.stderr
    [report] = tmp_path.glob("*.xml")
    said = export(report, tmp_path / "gmon.out")
    assert "psrun --callpath" in said and said.count("\n") == 1, said


def test_exact_arcs_of_a_known_document(program, real_profile, tmp_path):  # noqa: F811  (fixtures)
    """A companion written per docs/formats/callpaths.md over a real flat
    profile of test_calltree's program: thread 0 is the known tree (main ->
    a -> work 50, main -> b -> work 30, main -> b -> c -> work 20, 4 in b);
    thread 1 holds 3 samples in work below a truncated stack and 2 in c
    below a blocked-in-the-kernel node, which have no known caller.  gprof
    reads exactly the arcs of the tree, summed over threads."""
    text = real_profile.read_text()
    offset = int(re.search(rf'<module file="{re.escape(program["exe"])}" offset="(0x[0-9a-f]+)"', text).group(1), 16)
    pid = int(re.search(r"<pid>(\d+)</pid>", text).group(1))
    threads = [(1, KNOWN), (2, [(0, "truncated", 0), (1, "work!", 3), (0, "blocked", 0), (3, "c!", 2)])]
    Path(reader.companion_name(str(real_profile))).write_text(
        callpaths_xml(program["exe"], program["syms"], threads, offset=offset, pid=pid, file=real_profile.name))
    gmon = tmp_path / "gmon.out"
    said = export(real_profile, gmon)
    assert "6 call arcs" in said, said
    assert gprof_arcs(program["exe"], gmon) == {("main", "a"): 50, ("a", "work"): 50, ("main", "b"): 54,
                                                 ("b", "work"): 30, ("b", "c"): 20, ("c", "work"): 20}
