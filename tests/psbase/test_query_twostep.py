"""Data-set queries aggregated in two steps (query._two_step): the first
step over the data-set table alone, the runs' columns and conditions
joined to its groups.  Every shape of key, condition and result the
split can meet, with missing values and a deleted run, checked against
plain Python over the same rows, on both backends."""

from __future__ import annotations

import math
import random
import statistics

import pytest
import sqlalchemy as sa

from psuite.psbase.model import Definition, RunData, Variable
from psuite.psbase.query import run_query
from psuite.psbase.store import Store

NAME = "split"


def definition() -> Definition:
    return Definition(
        name=NAME,
        variables=[
            Variable("nodes", "integer"),
            Variable("compiler", "string"),
            Variable("elapsed", "float", is_result=True, unit="s"),
            Variable("chunk", "integer", occurrence="multiple"),
            Variable("bw", "float", occurrence="multiple", is_result=True, unit="MB/s"),
            Variable("ops", "integer", occurrence="multiple", is_result=True),
        ],
    )


def make_runs(seed: int = 5) -> list[RunData]:
    rng = random.Random(seed)
    out = []
    for i in range(12):
        rows = []
        for j in range(rng.randrange(0, 9)):  # some runs without a data set
            rows.append({
                "chunk": (1, 4, 16)[j % 3],
                "bw": None if rng.random() < 0.15 else round(rng.uniform(1, 500), 3),
                "ops": None if rng.random() < 0.15 else rng.randrange(-50, 10**12),
            })
        out.append(RunData(
            values={"nodes": (1, 2, 4)[i % 3], "compiler": ("gcc", "clang")[i % 2],
                    "elapsed": None if i == 7 else 1.5 * i},
            rows=rows, sources=[f"r{i}"], content_hash=f"h{i}"))
    return out


@pytest.fixture
def archive(db_url):
    store = Store(db_url, create=True)
    store.setup(definition())
    runs = make_runs()
    store.add_runs(NAME, runs, who="test")
    store.set_deleted(NAME, [3], True)
    live = [r for i, r in enumerate(runs, 1) if i != 3]
    yield store, live
    store.close()


def expected(live, result, by, where=None):
    """(keys) -> (mean, count, min, max) in plain Python, each data-set row
    joined with its run's once-values as the SQL join does."""
    groups: dict[tuple, list] = {}
    for run in live:
        rows = run.rows if any(v in ("chunk", "bw", "ops") for v in (result, *by, *(where or {}))) else [{}]
        for row in rows:
            rec = {**run.values, **row}
            if where and any(rec[k] not in vs for k, vs in where.items()):
                continue
            if rec[result] is None:
                continue
            groups.setdefault(tuple(rec[k] for k in by), []).append(rec[result])
    return {
        k: (math.fsum(xs) / len(xs), len(xs), min(xs), max(xs), statistics.stdev(xs) if len(xs) > 1 else None)
        for k, xs in groups.items()
    }


@pytest.mark.parametrize(
    "result, by, where",
    [
        ("bw", ["nodes", "chunk"], None),  # a once-key and a data-set key
        ("bw", ["chunk"], {"nodes": [2, 4]}),  # a condition on the runs only
        ("bw", ["nodes"], {"chunk": [4, 16]}),  # a condition on the data set only
        ("ops", ["compiler", "chunk"], {"compiler": ["gcc"], "chunk": [1]}),  # integers, both kinds
        ("elapsed", ["chunk"], None),  # a once-result against a data-set key: weighted by rows
    ],
)
def test_two_step_aggregates_equal_plain_python(archive, result, by, where):
    store, live = archive
    got = run_query(store, NAME, result, by, where=[f"{k}={v}" for k, vs in (where or {}).items() for v in vs],
                    stats=["mean", "count", "min", "max"]).rows
    want = expected(live, result, by, where)
    assert {tuple(r[: len(by)]) for r in got} == set(want)
    for row in got:
        mean, count, lo, hi = row[len(by):]
        w = want[tuple(row[: len(by)])]
        assert mean == pytest.approx(w[0], rel=1e-12)
        assert (count, lo, hi) == (w[1], w[2], w[3])
    # the standard deviation combined from the groups' partial ones (the split form) or in one step
    got = run_query(store, NAME, result, by, where=[f"{k}={v}" for k, vs in (where or {}).items() for v in vs],
                    stats=["stddev", "mean"]).rows
    assert {tuple(r[: len(by)]) for r in got} == set(want)
    for row in got:
        sd, mean = row[len(by):]
        w = want[tuple(row[: len(by)])]
        assert mean == pytest.approx(w[0], rel=1e-12)
        assert sd == pytest.approx(w[4], rel=1e-9) if w[4] is not None else sd is None


def test_each_form_of_the_per_run_spread_is_exact_and_stable(db_url):
    """The standard deviation's first step has three forms (query._per_run_spread):
    PostgreSQL's var_samp per group; on SQLite a search of the covering index
    (run, chunk, block, ...) when the data-set keys are its leading columns,
    and a window otherwise.  Each is checked against plain Python, with data-set
    keys that are empty (NULL) in some rows, groups of one value, and values
    near 1e9 that differ by less than 1: a sum of squares would lose them."""
    store = Store(db_url, create=True)
    store.setup(Definition(name="spread", variables=[
        Variable("nodes", "integer"),
        Variable("chunk", "integer", occurrence="multiple"),
        Variable("block", "integer", occurrence="multiple"),
        Variable("t", "float", occurrence="multiple", is_result=True),
    ]))  # fmt: skip
    rng = random.Random(11)
    runs = []
    for i in range(8):
        rows = [{"chunk": None if j % 7 == 3 else (1, 4)[j % 2], "block": (8, 16, 32)[j % 3],
                 "t": 1e9 + rng.random() * 0.5 + i % 3} for j in range(rng.randrange(1, 14))]  # fmt: skip
        runs.append(RunData(values={"nodes": (1, 2)[i % 2]}, rows=rows, sources=[f"s{i}"], content_hash=f"s{i}"))
    store.add_runs("spread", runs)
    seen: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    for by, form in ((["nodes", "chunk"], "index"), (["chunk", "block"], "index"), (["nodes"], "index"),
                     (["block"], "window"), (["nodes", "block"], "window")):  # fmt: skip
        groups: dict[tuple, list[float]] = {}
        for run in runs:
            for row in run.rows:
                rec = {**run.values, **row}
                groups.setdefault(tuple(rec[k] for k in by), []).append(rec["t"])
        seen.clear()
        got = run_query(store, "spread", "t", by, stats=["mean", "stddev", "count"]).rows
        sql = seen[-1]
        if store.engine.dialect.name == "postgresql":
            assert "var_samp" in sql and "OVER (PARTITION BY psb_x1_rows.psb_run" not in sql, sql
        elif form == "index":
            assert "row" in sql and "OVER (PARTITION BY psb_x1_rows.psb_run" not in sql, sql
        else:
            assert "OVER (PARTITION BY psb_x1_rows.psb_run" in sql, sql
        assert {tuple(r[: len(by)]) for r in got} == set(groups), by
        for row in got:
            xs = groups[tuple(row[: len(by)])]
            mean, sd, count = row[len(by):]
            assert count == len(xs)
            assert mean == pytest.approx(math.fsum(xs) / len(xs), rel=1e-15)
            if len(xs) > 1:
                assert sd == pytest.approx(statistics.stdev(xs), rel=1e-6), (by, row)
            else:
                assert sd is None
    store.close()
