"""merge with -c or -C of inputs that share no location (psprocess -c's
members: each document's ranks and threads) puts each input's block in
place instead of aligning every input on the whole result; its values are
the general way's, checked here against it on differing call trees, an
INCLUSIVE metric, a MAXDOUBLE one, a metric only some inputs measure and
call paths that unify within one input."""

from __future__ import annotations

import numpy as np
import pytest

from psuite.analysis import algebra
from psuite.model.experiment import EXCLUSIVE, INCLUSIVE, Experiment, Location
from tests.psprocess.test_algebra import build


def inputs() -> list[Experiment]:
    metrics = {"time": ("DOUBLE", EXCLUSIVE), "visits": ("UINT64", INCLUSIVE), "peak": ("MAXDOUBLE", EXCLUSIVE)}
    a = build("a.cubex", metrics, {
        "time": {("main",): [1.0, 2.0], ("main", "f"): [3.0, 4.0]},
        "visits": {("main",): [5, 6], ("main", "f"): [2, 3]},
        "peak": {("main",): [7.0, 8.0], ("main", "f"): [9.0, 1.5]},
    }, locations=[(0, 0), (0, 1)])
    b = build("b.cubex", {"time": ("DOUBLE", EXCLUSIVE), "visits": ("UINT64", INCLUSIVE)}, {
        "time": {("main",): [0.5], ("main", "g"): [6.0], ("main", "g", "h"): [1.0]},
        "visits": {("main",): [9], ("main", "g"): [4], ("main", "g", "h"): [1]},
    }, locations=[(1, 0)])
    c = build("c.cubex", {"time": ("DOUBLE", EXCLUSIVE), "peak": ("MAXDOUBLE", EXCLUSIVE)}, {
        "time": {("main",): [2.5, 0.25], ("main", "f"): [1.0, 1.0]},
        "peak": {("main",): [3.0, 4.0], ("main", "f"): [2.0, 2.5]},
    }, locations=[(2, 0), (2, 1)])
    # two call paths of c that unify (one region, main, twice below the root): summed, the greatest kept
    c.add_cnode(c.cnodes[0].region, None)
    c.values = {k: np.vstack([v, v[:1]]) for k, v in c.values.items()}
    return [a, b, c]


@pytest.mark.parametrize("collapse", [False, True])
def test_disjoint_merge_is_the_general_merge(monkeypatch, collapse):
    fast = algebra.merge(inputs(), collapse=collapse, reduce=not collapse)
    assert algebra._disjoint(algebra._plan(inputs(), prefer_last=True, system=algebra._system_mode(
        collapse, not collapse))) is not None  # the fast way was taken
    monkeypatch.setattr(algebra, "_disjoint", lambda plan: None)
    general = algebra.merge(inputs(), collapse=collapse, reduce=not collapse)
    assert fast.metrics == general.metrics and fast.cnodes == general.cnodes
    assert [loc.key for loc in fast.locations] == [loc.key for loc in general.locations] and len(fast.locations) == 5
    assert fast.values.keys() == general.values.keys()
    for name in general.values:
        assert fast.values[name].dtype == general.values[name].dtype, name
        np.testing.assert_array_equal(fast.values[name], general.values[name], err_msg=name)


def test_inputs_sharing_a_location_take_the_general_way():
    a, b, _ = inputs()
    b.locations = [Location(process="rank 0", rank=0, thread="thread 1", thread_rank=1)]  # a's rank 0 thread 1
    plan = algebra._plan([a, b], prefer_last=True, system=algebra.REDUCE)
    assert algebra._disjoint(plan) is None
    merged = algebra.merge([a, b], reduce=True)
    # per point the last input's value, as CUBE: b's main, g and h, and a's main/f, which b has not
    assert merged.exclusive("time")[:, 1].sum() == pytest.approx(0.5 + 6.0 + 1.0 + 4.0)
