"""Call-path profiling end to end, through psrun --callpath and psprocess
as users run them, on programs whose call structure is known from their
iteration counts (tests/targets/callpath, -O2 without frame pointers):
the reported inclusive shares of each path against the truth, the flat
profile unchanged, deep recursion truncated and marked, C++ inlining,
threads, and a hot path through libc's qsort."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lxml import etree

from psuite.formats import callpaths_schema
from psuite.model.calltree import TRUNCATED_FUNCTION
from tests.callpath_helpers import (
    CALLBACK,
    INLINED,
    KNOWN_TRUTH,
    PERIOD_US,
    build,
    by_thread,
    companion,
    disassembly,
    from_anchor,
    function_paths,
    inline_chain,
    json_report,
    off_by,
    psrun_profile,
    read_records,
    record_shares,
    sets_frame_pointer,
)
from tests.conftest import run_tool, validate
from tests.psrun.test_sampler_runtime import cpu_seconds, functions, samples
from tests.psrun.test_threads_counted import uncharged_seconds

HOT = {
    "known": ["main", "a", "b", "c", "work"],
    "recursion": ["rec", "work"],
    "threads": ["worker_one", "worker_two", "x", "y", "z", "work"],
    "qsort_cb": ["sort_many", "cmp"],
    "inlined": ["_ZN2cp8hot_loopERKSt6vectorImSaImEEm"],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    return build(tmp_path_factory.mktemp("callpath"))


@pytest.mark.parametrize("program", sorted(HOT))
def test_targets_are_optimised_without_frame_pointers(built, program):
    """The premise of every test here: the hot functions set up no frame
    pointer, so walking %rbp cannot give their callers."""
    for function in HOT[program]:
        assert not sets_frame_pointer(disassembly(built[program], function)), (program, function)


def test_target_calls_survive_optimisation(built):
    """Each caller still calls (no inlining, no tail jump that would drop
    its frame), and the shared build reaches work() through the PLT."""
    calls = {f: "\n".join(disassembly(built["known"], f)) for f in ("a", "b", "c")}
    assert "call" in calls["a"] and "<work>" in calls["a"], calls["a"]
    assert "<work>" in calls["b"] and "call" in calls["b"] and "<c>" in calls["b"], calls["b"]
    assert not any("jmp" in line and "<work>" in line for text in calls.values() for line in text.splitlines())
    assert "<work@plt>" in "\n".join(disassembly(built["known_shared"], "a"))
    assert "<rec>" in "\n".join(line for line in disassembly(built["recursion"], "rec") if "call" in line)


# --- psrun --callpath ------------------------------------------------------

TOLERANCE = 3.0  # percentage points


def within(found: dict, tolerance: float = TOLERANCE) -> bool:
    return all(abs(got - want) <= tolerance for got, want in found.values())


@pytest.mark.parametrize("program", ["known", "known_shared"])
def test_known_structure_shares(built, workdir, program):
    """The inclusive share of main -> a -> work, main -> b -> work and
    main -> b -> c -> work within 3 points of 50/30/20, read with
    psuite.read_document() and with psprocess -f json; every sample recorded."""
    flat = psrun_profile([built[program]], workdir)
    doc = etree.parse(str(companion(flat)))
    assert etree.XMLSchema(etree.parse(callpaths_schema())).validate(doc)
    records = read_records(flat)
    found = off_by(record_shares(records), KNOWN_TRUTH)
    assert within(found), found
    assert off_by(record_shares(json_report(flat)["calltree"]), KNOWN_TRUTH) == found
    # every sample of the flat profile is in the call tree (none lost)
    [thread] = doc.getroot().iter("thread")
    assert int(thread.get("lost")) == 0 and int(thread.get("truncated")) == 0
    assert sum(r["exclusive"] for r in records) == int(thread.get("samples")) == samples(etree.parse(str(flat)))


def test_libgcc_fallback_gives_the_same_shares(built, workdir):
    """Where libunwind is missing, psrun unwinds with libgcc_s: the document
    it writes reads back and the shares hold as with libunwind."""
    flat = psrun_profile([built["known"]], workdir, env={"PSUITE_UNWINDER": "libgcc"})
    doc = etree.parse(str(companion(flat)))
    assert etree.XMLSchema(etree.parse(callpaths_schema())).validate(doc)
    assert doc.getroot().find("sampling").get("unwinder") == "libgcc"
    found = off_by(record_shares(read_records(flat)), KNOWN_TRUTH)
    assert within(found), found


def _structure(root) -> set[tuple[str, tuple[str, ...]]]:
    """Every element's path of tags with its attribute names."""
    return {
        (etree.ElementTree(root).getpath(e).translate(str.maketrans("", "", "0123456789[]")), tuple(sorted(e.attrib)))
        for e in root.iter()
    }


@pytest.mark.parametrize("program", ["known", "known_shared"])
def test_flat_profile_unchanged(built, workdir, program):
    """With --callpath the flat profile is what it is without: valid
    against hwpcreport-0.3.dtd, the same elements and attributes, the same
    rate of samples per CPU second and the same function shares."""
    runs = {}
    uncharged = {}  # steal and interrupts: in the task clock sampled, not in CPU time
    for callpath in (False, True):
        before = uncharged_seconds()
        flat = psrun_profile([built[program]], workdir, callpath)
        uncharged[callpath] = uncharged_seconds() - before
        root = validate(flat, "hwpcreport-0.3.dtd")
        runs[callpath] = (root, functions(flat))
        flat.rename(workdir / f"{callpath}.done")
        if callpath:
            companion(flat).unlink()
    (bare, bare_functions), (with_paths, path_functions) = runs[False], runs[True]
    assert _structure(bare) == _structure(with_paths)
    for callpath, r in ((False, bare), (True, with_paths)):
        rate = samples(r) * PERIOD_US / 1e6 / cpu_seconds(r)
        assert 0.85 <= rate <= 1.1 + uncharged[callpath] / cpu_seconds(r), (callpath, rate, uncharged)
    shares = [
        {f: 100.0 * n / samples(r) for f, n in funcs.items()}
        for r, funcs in ((bare, bare_functions), (with_paths, path_functions))
    ]
    assert shares[0]["work"] >= 97 and abs(shares[0]["work"] - shares[1].get("work", 0)) <= TOLERANCE, shares


def _callpaths(flat: Path) -> tuple[int, etree._Element]:
    """maxdepth and the one thread with samples of a companion."""
    root = etree.parse(str(companion(flat))).getroot()
    [thread] = [t for t in root.iter("thread") if int(t.get("samples")) > 0]
    return int(root.find("sampling").get("maxdepth")), thread


def test_deep_recursion_truncated_and_marked(built, workdir):
    """Recursion to depth 1,000 with the work at the bottom: the samples
    are kept, marked truncated (the thread's attribute, the report's
    header), under the truncated node with the innermost maxdepth frames:
    work in rec in rec ..."""
    flat = psrun_profile([built["recursion"], "1000", "300"], workdir)
    maxdepth, thread = _callpaths(flat)
    total, truncated = int(thread.get("samples")), int(thread.get("truncated"))
    assert total >= 250 and truncated >= 0.95 * total, (total, truncated)
    records = read_records(flat)
    assert sum(r["exclusive"] for r in records) == total  # counted, not dropped
    deep = [r for r in records if r["exclusive"] and r["path"][0] == TRUNCATED_FUNCTION]
    assert sum(r["exclusive"] for r in deep) == truncated
    hot = max(deep, key=lambda r: r["exclusive"])
    assert hot["exclusive"] >= 0.9 * truncated
    assert hot["path"][1:] == ("rec",) * (maxdepth - 1) + ("work",), hot["path"]
    text = run_tool("psprocess", "--calltree", "top-down", str(flat))
    assert text.returncode == 0, text.stderr
    # psprocess tells the deep stacks apart: their known frames reach maxdepth
    said = re.search(rf"Truncated\s*:\s*{truncated:,} \(([\d,]+) deeper than {maxdepth} frames", text.stdout)
    assert said and int(said.group(1).replace(",", "")) >= hot["exclusive"], text.stdout[:2000]


def test_recursion_within_depth_is_whole(built, workdir):
    """Depth 100, under the default 128 frames: no truncation, and the hot
    path is main, 100 frames of rec, work (every frame of an -O2 recursion
    without frame pointers unwound)."""
    flat = psrun_profile([built["recursion"], "100", "300"], workdir)
    _, thread = _callpaths(flat)
    assert int(thread.get("truncated")) == 0
    records = read_records(flat)
    hot = max(records, key=lambda r: r["exclusive"])
    assert hot["exclusive"] >= 0.9 * int(thread.get("samples"))
    assert from_anchor(hot["path"], "main") == ("main",) + ("rec",) * 100 + ("work",), hot["path"]


def test_each_thread_has_its_own_tree(built, workdir):
    """Two threads of different structure: one tree each, with its own
    shares (worker_one: x 70 %, y 30 %; worker_two: z -> y 100 %)."""
    flat = psrun_profile([built["threads"], "500"], workdir)
    trees = by_thread(read_records(flat))
    owner = {
        w: [t for t, rows in trees.items() if any(w in r["path"] for r in rows)] for w in ("worker_one", "worker_two")
    }
    assert len(owner["worker_one"]) == len(owner["worker_two"]) == 1, owner
    one, two = owner["worker_one"][0], owner["worker_two"][0]
    assert one != two
    found = off_by(
        record_shares(trees[one], "worker_one"), {("worker_one", "x", "work"): 70.0, ("worker_one", "y", "work"): 30.0}
    )
    assert within(found), found
    found = off_by(record_shares(trees[two], "worker_two"), {("worker_two", "z", "y", "work"): 100.0})
    assert within(found), found
    assert not any("x" in r["path"] for r in trees[two])


def test_hot_path_through_libc_qsort(built, workdir):
    """qsort with an expensive callback: the samples in cmp are reached
    from main -> sort_many through libc's qsort frames (libc in the middle
    of the stack, unwound through its CFI)."""
    flat = psrun_profile([built["qsort_cb"], "40"], workdir)
    records = function_paths(read_records(flat))
    module = {tuple(r["path"]): r["module"] for r in records}
    total = sum(r["exclusive"] for r in records)
    through = 0
    for r in records:
        tail = from_anchor(tuple(r["path"]), "main")
        if not r["exclusive"] or tail is None or not set(tail) & CALLBACK:
            continue
        head = tuple(r["path"])[: len(r["path"]) - len(tail)]
        middle = tail[2 : min(tail.index(f) for f in set(tail) & CALLBACK)]
        libc = [Path(module[head + tail[: 3 + i]]).name for i in range(len(middle))]
        if (
            tail[:2] == ("main", "sort_many")
            and middle
            and all(m.startswith("libc.so") for m in libc)
            and any(re.search("qsort|msort", f) for f in middle)
        ):
            through += r["exclusive"]
    assert through >= 0.85 * total, (through, total)


def test_cpp_inlined_frames_of_their_own(built, workdir):
    """C++ at -O2: std::accumulate, its lambda, the repeat template, its
    lambda and cp::mix are inlined into cp::hot_loop, which main calls.
    Nearly every sample is in main -> cp::hot_loop, and there the inlined
    calls are frames of their own, outermost first, marked inlined."""
    flat = psrun_profile([built["inlined"], "300"], workdir)
    records = read_records(flat)
    total = sum(r["exclusive"] for r in records)
    functions_only = function_paths(records)
    hot = sum(
        r["exclusive"]
        for r in functions_only
        if (tail := from_anchor(tuple(r["path"]), "main")) and len(tail) >= 2 and "hot_loop" in tail[1]
    )
    assert hot >= 0.9 * total, (hot, total)
    leaf = max(records, key=lambda r: r["exclusive"])
    # How the loop's instructions split between mix and the repeat lambda
    # around it is the compiler's (its line table), so the chain's frames
    # together hold the samples, the innermost most of them.
    chain = tuple(leaf["path"])
    on_chain = sum(r["exclusive"] for r in records if r["thread"] == leaf["thread"]
                   and chain[:len(r["path"])] == tuple(r["path"]) and "hot_loop" in " ".join(r["path"]))
    assert on_chain >= 0.9 * total and leaf["exclusive"] >= 0.5 * total, (on_chain, leaf["exclusive"], total)
    tail = from_anchor(tuple(leaf["path"]), "main")
    assert "hot_loop" in tail[1], tail
    assert inline_chain(records, leaf) == INLINED, tail
