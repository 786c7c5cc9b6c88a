"""A large combined flat profile for the HTML report's size and speed:
RANKS ranks x FUNCTIONS functions (64 x 2,000 by default), made in memory
(a psrun run of that size would take minutes) with the shape real ones
have: a few hot functions, a long tail, each rank a little different.
Used by the benchmark of viewdoc.build and by the page's browser tests."""

from __future__ import annotations

import numpy as np

from psuite.model.report import Location, MultiReport, ProfileReport

RANKS, FUNCTIONS, LINES, FILES = 64, 2000, 3, 100  # LINES sampled lines per function, in FILES source files


def big_profile(ranks: int = RANKS, functions: int = FUNCTIONS, seed: int = 1) -> MultiReport:
    rng = np.random.default_rng(seed)
    weight = 1.0 / np.arange(1, functions + 1) ** 1.1  # Zipf-like: a few functions hold most samples
    reports = []
    for rank in range(ranks):
        samples = rng.poisson(weight * 200_000 * (1 + 0.3 * rank / ranks) / LINES, size=(LINES, functions))
        locations = [Location("/opt/app/bin/app", f"/opt/app/src/file{f % FILES}.c", f"function_{f:04d}",
                              10 + 40 * (f // FILES) + k, int(samples[k, f]))
                     for f in range(functions) for k in range(LINES) if samples[k, f]]
        reports.append(ProfileReport(source=f"app.{1000 + rank}.node{rank // 16}.xml", hostname=f"node{rank // 16}",
                                     pid=1000 + rank, thread=0, command="/opt/app/bin/app --big", rank=rank,
                                     date="Tue Nov 24 12:00:00 2026", generator="psuite", profile_class="itimer",
                                     event="ITIMER_PROF", threshold=10_000,
                                     total_samples=sum(loc.samples for loc in locations), locations=locations))
    return MultiReport(reports=reports)
