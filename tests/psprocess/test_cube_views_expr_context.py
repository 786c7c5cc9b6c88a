"""View.sums, total, grouped and grouped_total evaluate a derived metric
with the context Experiment.derived_values gives it: metric::fixed::
references and CUBE's predefined variables (mpi1 of data/scorep, with
POSTDERIVED metrics added)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from psuite.analysis.experiment_views import EXCL, INCL, View
from psuite.formats.readers.cube import read
from psuite.model.experiment import Experiment, Metric

DATA = Path(__file__).parent / "data" / "scorep"


@pytest.fixture(scope="module")
def exp() -> Experiment:
    e = read(str(DATA / "mpi1.cubex"))
    for name, expression in [("fv", "metric::fixed::visits() + 0 * metric::time()"),
                             ("nloc", "${cube::#locations} + 0 * metric::time()"),
                             ("tpv", "metric::time(i) / metric::visits(e)")]:
        e.add_metric(Metric(name, kind="POSTDERIVED", expression=expression))
    return e


def test_sums_and_total(exp: Experiment) -> None:
    """Over every location metric::fixed::visits() is the call path's visits
    over every location, in the call-tree view shown (as cube_dump -z incl
    prints it: 48 at the root of mpi1); ${cube::#locations} is the number
    of locations (both were 0 without the context)."""
    view = View(exp)
    visits = view.sums("visits", EXCL)
    for calltree in (EXCL, INCL):
        np.testing.assert_allclose(view.sums("fv", calltree), view.sums("visits", calltree))
        np.testing.assert_allclose(view.sums("nloc", calltree), len(exp.locations))
    assert view.total("nloc") == len(exp.locations)
    assert view.total("fv") == view.total("visits")  # the whole experiment's, as Experiment.total takes it
    tpv = view.sums("tpv", EXCL)
    np.testing.assert_allclose(tpv, np.where(visits > 0, view.sums("time", INCL) / np.where(visits > 0, visits, 1),
                                             0), rtol=1e-12)


def test_grouped(exp: Experiment) -> None:
    """Per region (the flat profile): the same context, per location and in total."""
    view = View(exp)
    group, n = view.region_ids(), len(exp.regions)
    np.testing.assert_allclose(view.grouped("nloc", EXCL, group, n), len(exp.locations))
    np.testing.assert_allclose(view.grouped_total("nloc", EXCL, group, n), len(exp.locations))
    per = view.grouped("visits", EXCL, group, n).astype(float)
    np.testing.assert_allclose(view.grouped("fv", EXCL, group, n), np.broadcast_to(per.sum(axis=1, keepdims=True),
                                                                                  per.shape))
    np.testing.assert_allclose(view.grouped_total("fv", EXCL, group, n), per.sum(axis=1))
