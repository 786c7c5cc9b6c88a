"""Call-path profiling end to end, through psrun --callpath and psprocess
as users run them, on programs whose call structure is known from their
iteration counts (tests/targets/callpath, -O2 without frame pointers):
the reported inclusive shares of each path against the truth, the flat
profile unchanged, deep recursion truncated and marked, C++ inlining,
threads, and a hot path through libc's qsort."""

from __future__ import annotations

import pytest

from tests.callpath_helpers import build, disassembly, sets_frame_pointer

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
