"""CubePL evaluation against CubeLib's: every expression of
tests/data/cubepl/expressions.tsv, defined as a derived metric of each kind
in the real Score-P profiles of tests/psprocess/data/scorep, has the
exclusive and inclusive value CubeLib 4.8.2 computes, per call path and
location (relative 1e-9; NaN where CubeLib gives NaN).  The values and the
cubes' structure come from tests/data/cubepl/make.sh (CubeLib itself), so
these tests need neither CubeLib nor psuite's CUBE reader."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from psuite.model.experiment import EXCLUSIVE, Cnode, Experiment, Location, Metric, Region

DATA = Path(__file__).parent / "data" / "cubepl"
CUBES = ("mpi1", "mpi2", "omp")
KINDS = {"post": "POSTDERIVED", "pre_excl": "PREDERIVED_EXCLUSIVE", "pre_incl": "PREDERIVED_INCLUSIVE"}


def expressions() -> list[tuple[str, str, str]]:
    out = []
    for line in (DATA / "expressions.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            name, kind, text = line.split("\t", 2)
            out.append((name, kind, text))
    return out


def load(cube: str) -> tuple[Experiment, dict[str, tuple[np.ndarray, np.ndarray]],
                             dict[str, tuple[np.ndarray, np.ndarray]]]:
    """The cube as CubeLib sees it, as an Experiment (stored metrics
    exclusive), CubeLib's exclusive and inclusive values of its stored
    metrics, and of each derived expression."""
    exp = Experiment()
    rows = list(csv.reader((DATA / f"{cube}.csv").open()))
    for r in rows:
        if r[0] == "region":
            assert int(r[1]) == len(exp.regions)
            exp.regions.append(Region(r[2]))
        elif r[0] == "cnode":
            assert int(r[1]) == len(exp.cnodes)
            exp.cnodes.append(Cnode(int(r[3]), None if r[2] == "-1" else int(r[2])))
        elif r[0] == "location":
            exp.locations.append(Location(rank=len(exp.locations), thread=r[2]))
        elif r[0] == "metric":
            exp.metrics.append(Metric(r[1], dtype=r[2], kind=EXCLUSIVE))
    shape = (len(exp.cnodes), len(exp.locations))
    stored: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    exp.attributes.update({f"total:{r[1]}": r[2] for r in rows if r[0] == "total"})
    derived: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for r in rows:
        if r[0] in ("value", "derived") and r[2] != "error":
            into = stored if r[0] == "value" else derived
            e, i = into.setdefault(r[1], (np.zeros(shape), np.zeros(shape)))
            c, j = int(r[2]), int(r[3])
            e[c, j], i[c, j] = float(r[4]), float(r[5])
    for m in exp.metrics:
        integer = m.dtype in ("UINT64", "INT64")
        exp.values[m.name] = stored[m.name][0].astype(np.int64 if integer else np.float64)
    return exp, stored, derived


@pytest.fixture(scope="module", params=CUBES)
def cube(request):
    return load(request.param)


def same(got: np.ndarray, want: np.ndarray) -> bool:
    got = np.broadcast_to(np.asarray(got, dtype=np.float64), want.shape)
    both_nan = np.isnan(got) & np.isnan(want)
    close = np.isclose(got, want, rtol=1e-9, atol=1e-300) | both_nan
    return bool(close.all())


def test_the_rebuilt_cubes_give_cubelibs_stored_values(cube):
    """The base the derived metrics are evaluated on: psuite's exclusive and
    inclusive views of the stored metrics equal CubeLib's."""
    exp, stored, _ = cube
    for m in exp.metrics:
        e, i = stored[m.name]
        assert same(exp.exclusive(m.name), e), m.name
        assert same(exp.inclusive(m.name), i), m.name


@pytest.mark.parametrize("name,kind,text", expressions(), ids=[e[0] for e in expressions()])
def test_derived_metric_values_are_cubelibs(cube, name, kind, text):
    exp, _, derived = cube
    assert name in derived, f"CubeLib refused {text!r}"
    for n, k, t in expressions():  # every expression is a metric: later ones may name earlier ones
        exp.metrics.append(Metric(n, kind=KINDS[k], expression=t))
    want_e, want_i = derived[name]
    got_e, got_i = exp.exclusive(name), exp.inclusive(name)
    bad = [(c, j, got_e[c, j], want_e[c, j]) for c, j in zip(*np.nonzero(~np.isclose(
        got_e, want_e, rtol=1e-9, atol=1e-300) & ~(np.isnan(got_e) & np.isnan(want_e))), strict=True)]
    assert same(got_e, want_e), f"exclusive {name}: (cnode, location, psuite, CubeLib) {bad[:5]}"
    assert same(got_i, want_i), f"inclusive {name}: {got_i[:3]} against {want_i[:3]}"
    # and over the whole experiment (CubeLib's get_sev(metric, inclusive)): metric::x(e) the roots' own values
    want = float(exp.attributes[f"total:{name}"])
    got = exp.total(name)
    assert (math.isnan(got) and math.isnan(want)) or math.isclose(got, want, rel_tol=1e-9), (got, want)
