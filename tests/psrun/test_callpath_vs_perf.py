"""Call paths against perf: the known-structure program (main -> a -> work
50 %, main -> b -> work 30 %, main -> b -> c -> work 20 %, -O2 without frame
pointers) under `perf record --call-graph dwarf`, read back with `perf
script`.  First the harness itself: perf's shares match the truth, so a
disagreement with psuite is psuite's.  Shares are CPU time (perf's task
clock, psrun's ITIMER_PROF), so they hold on a loaded machine."""

from __future__ import annotations

import pytest

from tests.callpath_helpers import KNOWN_TRUTH, build, off_by, perf_record, perf_shares

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
