"""Call paths against perf: the known-structure program (main -> a -> work
50 %, main -> b -> work 30 %, main -> b -> c -> work 20 %, -O2 without frame
pointers) under `perf record --call-graph dwarf`, read back with `perf
script`.  First the harness itself: perf's shares match the truth, so a
disagreement with psuite is psuite's.  Shares are CPU time (perf's task
clock, psrun's ITIMER_PROF), so they hold on a loaded machine."""

from __future__ import annotations

import pytest

from tests.callpath_helpers import (
    CALLBACK,
    INLINED,
    KNOWN_TRUTH,
    Stack,
    build,
    by_thread,
    from_anchor,
    function_paths,
    inline_chain,
    inline_word,
    off_by,
    perf_record,
    perf_shares,
    psrun_profile,
    read_records,
    record_shares,
)

TOLERANCE = 3.0  # percentage points


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    return build(tmp_path_factory.mktemp("callpath"))


@pytest.mark.parametrize("program", ["known", "known_shared"])
def test_perf_sees_the_known_structure(built, workdir, program):
    """perf's inclusive share of each path is within 3 points of the
    iteration counts' 50/30/20 (work in the executable, or in a shared
    library through the PLT)."""
    samples = perf_record([built[program]], workdir, inlined=False)
    assert len(samples) >= 1000, len(samples)  # ~1.6 s of CPU at 1,000 Hz
    found = off_by(perf_shares(samples), KNOWN_TRUTH)
    assert all(abs(got - want) <= TOLERANCE for got, want in found.values()), found


def _agree(ours: dict[Stack, float], theirs: dict[Stack, float], top: float = 5.0) -> dict:
    """The paths above `top` percent in either view: path -> (ours, perf's)."""
    paths = {p for p, s in ours.items() if s >= top} | {p for p, s in theirs.items() if s >= top}
    return {p: (round(ours.get(p, 0.0), 2), round(theirs.get(p, 0.0), 2)) for p in paths}


@pytest.mark.parametrize("program", ["known", "known_shared"])
def test_top_paths_agree_with_perf(built, workdir, program):
    """Every call path from main above 5 % in psuite's or perf's view has
    the same share in both, within 3 points."""
    theirs = perf_shares(perf_record([built[program]], workdir, inlined=False))
    ours = record_shares(read_records(psrun_profile([built[program]], workdir)), inlined=False)
    found = _agree(ours, theirs)
    assert set(KNOWN_TRUTH) <= set(found), found
    assert all(abs(a - b) <= TOLERANCE for a, b in found.values()), found


def test_thread_paths_agree_with_perf(built, workdir):
    """The same per thread: each worker's paths as perf sees them."""
    theirs = perf_record([built["threads"], "500"], workdir, inlined=False)
    ours = by_thread(read_records(psrun_profile([built["threads"], "500"], workdir)))
    for worker in ("worker_one", "worker_two"):
        [perf_thread] = {s.tid for s in theirs if worker in s.stack}
        [our_thread] = [t for t, rows in ours.items() if any(worker in r["path"] for r in rows)]
        found = _agree(
            record_shares(ours[our_thread], worker, inlined=False),
            perf_shares([s for s in theirs if s.tid == perf_thread], worker),
        )
        assert (worker,) in found and all(abs(a - b) <= TOLERANCE for a, b in found.values()), found


def test_share_through_libc_agrees_with_perf(built, workdir):
    """qsort's callback: the share of samples with cmp on the stack under
    main -> sort_many (unwound through libc) is perf's, within 3 points
    (libc's internal frames are named differently, so only the ends count)."""

    def share(stacks: list[tuple[Stack, float]]) -> float:
        total = sum(w for _, w in stacks)
        hit = sum(
            w
            for s, w in stacks
            if (t := from_anchor(s, "main")) and t[:2] == ("main", "sort_many") and set(t) & CALLBACK
        )
        return 100.0 * hit / total

    theirs = share([(s.stack, s.weight) for s in perf_record([built["qsort_cb"], "40"], workdir, inlined=False)])
    records = function_paths(read_records(psrun_profile([built["qsort_cb"], "40"], workdir)))
    ours = share([(tuple(r["path"]), r["exclusive"]) for r in records])
    assert theirs >= 85 and abs(ours - theirs) <= TOLERANCE, (ours, theirs)


def test_inlined_frames_agree_with_perf(built, workdir):
    """C++: the inlined frames under cp::hot_loop of the hottest path are
    the ones perf shows (from the same DWARF), in the same order."""
    theirs = perf_record([built["inlined"], "300"], workdir, inlined=True)
    stacks: dict[Stack, float] = {}
    for s in theirs:
        stacks[s.stack] = stacks.get(s.stack, 0.0) + s.weight
    perf_hot = max(stacks, key=stacks.get)
    perf_tail = from_anchor(perf_hot, "main")
    assert perf_tail and "hot_loop" in perf_tail[1], perf_hot
    records = read_records(psrun_profile([built["inlined"], "300"], workdir))
    leaf = max(records, key=lambda r: r["exclusive"])
    assert inline_chain(records, leaf) == [inline_word(f) for f in perf_tail[2:]] == INLINED, (leaf, perf_hot)
