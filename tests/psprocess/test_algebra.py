"""The performance algebra (psuite.analysis.algebra) on experiments built
here with the model's API: unification of differing call trees, metrics and
systems, collapse, errors, merge's last-wins, mean, cut's re-root and prune
for both metric kinds, compare with and without tolerances, and the
differential folded stacks.  Expected values are computed in the tests from
the plain dictionaries the experiments are built from."""

from __future__ import annotations

import random

import numpy as np
import pytest

from psuite.analysis import algebra
from psuite.analysis.flame_diff import paired_exclusive
from psuite.errors import UsageError
from psuite.formats.exporters import folded_diff
from psuite.model.experiment import EXCLUSIVE, INCLUSIVE, Experiment, Location, Metric, Region


def diff_folded(minuend, subtrahend, metric=None):
    return folded_diff.render(paired_exclusive(minuend, subtrahend, metric))



Path = tuple[str, ...]
LOCS = [(0, 0), (0, 1)]  # (rank, thread rank)


def build(source: str, metrics: dict[str, tuple[str, str]], values: dict[str, dict[Path, list[float]]],
          locations=LOCS, derived: dict[str, str] | None = None, parents: dict[str, str] | None = None,
          paths: list[Path] | None = None, shuffle: random.Random | None = None) -> Experiment:
    """An experiment: metrics name -> (dtype, kind); values metric -> path ->
    one value per location; the call tree is every path named (parents first)."""
    e = Experiment(attributes={"source": f"/some/dir/{source}"})
    for name, (dtype, kind) in metrics.items():
        e.add_metric(Metric(name, dtype=dtype, kind=kind))
    for name, expression in (derived or {}).items():
        e.add_metric(Metric(name, kind="POSTDERIVED", expression=expression))
    for child, parent in (parents or {}).items():
        e.metrics[e.metric_index(child)].parent = e.metric_index(parent)
    all_paths = list(paths or [])
    for per_path in values.values():
        all_paths += [p for p in per_path if p not in all_paths]
    all_paths = sorted(set(all_paths))  # depth first: a path sorts before its extensions
    if shuffle is not None:  # any order with parents first, not depth first
        all_paths.sort(key=lambda p: (len(p), shuffle.random()))
    region_of: dict[str, int] = {}
    cnode_of: dict[Path, int] = {}
    for p in all_paths:
        for k in range(1, len(p) + 1):
            sub = p[:k]
            if sub in cnode_of:
                continue
            if sub[-1] not in region_of:
                region_of[sub[-1]] = e.add_region(Region(sub[-1], module="prog.c"))
            cnode_of[sub] = e.add_cnode(region_of[sub[-1]], cnode_of[sub[:-1]] if k > 1 else None)
    for rank, thread in locations:
        e.locations.append(Location(process=f"rank {rank}", rank=rank, thread=f"thread {thread}",
                                    thread_rank=thread))
    for name, per_path in values.items():
        a = e.zeros(name)
        for p, row in per_path.items():
            a[cnode_of[p]] = row
    e.check()
    return e


def table(e: Experiment, metric: str) -> dict[tuple[Path, tuple[int, int]], float]:
    """Stored values by (path, location key), zeros left out."""
    out = {}
    a = e.values[metric]
    for c in range(len(e.cnodes)):
        path = e.path(c)
        for j, loc in enumerate(e.locations):
            if a[c, j] != 0:
                out[(path, loc.key)] = a[c, j].item()
    return out


def flat(values: dict[Path, list[float]], locations=LOCS) -> dict:
    return {(p, loc): v for p, row in values.items() for loc, v in zip(locations, row, strict=True) if v != 0}


def combine(f, *tables: dict) -> dict:
    keys = set().union(*tables)
    out = {k: f(*(t.get(k, 0) for t in tables)) for k in keys}
    return {k: v for k, v in out.items() if v != 0}


M, F, G, H = ("main",), ("main", "f"), ("main", "g"), ("main", "h")
FK = ("main", "f", "k")

A_TIME = {M: [1.0, 2.0], F: [10.5, 11.0], G: [3.0, 0.0]}
A_CYC = {M: [100, 200], F: [1000, 1100], G: [300, 0]}
B_TIME = {M: [1.5, 2.0], F: [8.0, 9.0], H: [4.0, 4.5], FK: [0.25, 0.0]}
B_INS = {M: [50, 60], F: [700, 800], H: [90, 0], FK: [5, 6]}


def a_b():
    a = build("a.cubex", {"time": ("DOUBLE", EXCLUSIVE), "cycles": ("UINT64", EXCLUSIVE)},
              {"time": A_TIME, "cycles": A_CYC})
    b = build("b.cubex", {"time": ("DOUBLE", EXCLUSIVE), "instructions": ("UINT64", EXCLUSIVE)},
              {"time": B_TIME, "instructions": B_INS})
    return a, b


def test_diff_unifies_call_trees_and_metrics():
    a, b = a_b()
    d = algebra.diff(a, b)
    d.check()
    assert d.attributes["operation"] == "diff(a.cubex, b.cubex)"
    assert [m.name for m in d.metrics] == ["time", "cycles", "instructions"]
    assert set(d.paths()) == {M, F, G, H, FK}
    assert all(c.parent is None or c.parent < i for i, c in enumerate(d.cnodes))
    assert table(d, "time") == pytest.approx(combine(lambda x, y: x - y, flat(A_TIME), flat(B_TIME)))
    assert table(d, "cycles") == combine(lambda x, y: x - y, flat(A_CYC), {})
    assert table(d, "instructions") == {k: -v for k, v in flat(B_INS).items()}
    for name in ("cycles", "instructions"):  # integers stay exact, and signed
        assert d.values[name].dtype == np.int64 and d.metric(name).dtype == "INT64"
    assert d.metric("time").dtype == "DOUBLE"
    assert a.values["time"][0, 0] == 1.0 and b.values["time"][0, 0] == 1.5  # inputs untouched


def test_locations_are_matched_by_rank_and_thread_not_position():
    a, _ = a_b()
    b = build("b.cubex", {"time": ("DOUBLE", EXCLUSIVE)}, {"time": {M: [5.0, 7.0]}}, locations=[(0, 1), (0, 0)])
    d = algebra.diff(a, b)
    assert [loc.key for loc in d.locations] == LOCS
    # b's first column is thread 1
    assert table(d, "time") == pytest.approx(combine(lambda x, y: x - y, flat(A_TIME), {(M, (0, 1)): 5.0,
                                                                                        (M, (0, 0)): 7.0}))


def test_system_trees_that_differ_are_an_error_unless_collapsed():
    # -C as cube_diff -C: every process kept under one virtual node (not each input summed into one
    # location, which psuite did before), a location only one input has is 0 in the other
    a, _ = a_b()
    b = build("b.cubex", {"time": ("DOUBLE", EXCLUSIVE)}, {"time": {M: [1.0, 2.0, 4.0], F: [1.0, 0.0, 1.0]}},
              locations=[(0, 0), (0, 1), (1, 0)])
    apart = build("c.cubex", {"time": ("DOUBLE", EXCLUSIVE)}, {"time": {M: [1.0, 2.0]}}, locations=[(0, 0), (2, 0)])
    with pytest.raises(algebra.AlgebraError) as err:
        algebra.diff(a, apart)
    message = str(err.value)
    assert isinstance(err.value, UsageError)
    assert "\n" not in message and "-C to put every process under one virtual node" in message
    assert "only in c.cubex: rank 2 thread 0" in message and "only in a.cubex: rank 0 thread 1" in message
    # as cube_diff without -c/-C: a system holding every location of the other is the result's
    nested = algebra.diff(a, b)
    assert [loc.key for loc in nested.locations] == [(0, 0), (0, 1), (1, 0)]
    assert nested.values["time"][nested.paths().index(M)].tolist() == [1.0 - 1.0, 2.0 - 2.0, -4.0]
    d = algebra.diff(a, b, collapse=True)
    assert [loc.key for loc in d.locations] == [(0, 0), (0, 1), (1, 0)]
    assert {(loc.machine, loc.node) for loc in d.locations} == {("Virtual machine", "Virtual node")}
    b_time = {M: [1.0, 2.0, 4.0], F: [1.0, 0.0, 1.0]}
    three = [(0, 0), (0, 1), (1, 0)]
    expected = combine(lambda x, y: x - y, flat({p: v + [0.0] for p, v in A_TIME.items()}, three), flat(b_time, three))
    assert table(d, "time") == pytest.approx(expected)
    assert d.values["cycles"].sum() == sum(map(sum, A_CYC.values()))
    assert not d.values["cycles"][:, 2].any()
    m = algebra.mean([a, b], collapse=True)
    assert m.values["time"][m.paths().index(F), 0] == pytest.approx((10.5 + 1.0) / 2)
    assert m.values["time"][m.paths().index(M), 2] == pytest.approx(4.0 / 2)
    r = algebra.diff(a, b, reduce=True)  # -c: the same union, machines and nodes kept
    assert [loc.key for loc in r.locations] == [(0, 0), (0, 1), (1, 0)]
    assert table(r, "time") == pytest.approx(expected)
    with pytest.raises(algebra.AlgebraError, match="exclude each other"):
        algebra.diff(a, b, collapse=True, reduce=True)


def test_merge_takes_the_last_value_and_keeps_metrics_of_one_input():
    a, b = a_b()
    r = algebra.merge([a, b])
    assert r.attributes["operation"] == "merge(a.cubex, b.cubex)"
    assert table(r, "cycles") == flat(A_CYC)
    assert table(r, "instructions") == flat(B_INS)
    # time in both: b's value at every point b has (all of b's paths), a's where b lacks the path (g)
    expected = dict(flat(B_TIME))
    expected.update({k: v for k, v in flat(A_TIME).items() if k[0] == G})
    assert table(r, "time") == pytest.approx(expected)
    r2 = algebra.merge([b, a])
    expected = dict(flat(A_TIME))
    expected.update({k: v for k, v in flat(B_TIME).items() if k[0] in (H, FK)})
    assert table(r2, "time") == pytest.approx(expected)
    assert r.values["cycles"].dtype == np.int64


def test_merge_of_an_inclusive_metric_keeps_its_tree_consistent():
    # exclusive truths; stored inclusive
    a_ex = {M: [1, 1], F: [10, 20], G: [5, 5]}
    b_ex = {M: [2, 3], F: [30, 40]}  # b never saw g

    def inclusive(ex):
        return {p: [sum(ex[q][j] for q in ex if q[:len(p)] == p) for j in range(2)] for p in ex}

    a = build("a.cubex", {"t": ("UINT64", INCLUSIVE)}, {"t": inclusive(a_ex)})
    b = build("b.cubex", {"t": ("UINT64", INCLUSIVE)}, {"t": inclusive(b_ex)})
    r = algebra.merge([a, b])
    assert r.metric("t").kind == INCLUSIVE
    merged_ex = {M: [2, 3], F: [30, 40], G: [5, 5]}  # last wins point by point, exclusive view
    assert table(r, "t") == flat(inclusive(merged_ex))


def test_mean_is_elementwise_and_double():
    a, b = a_b()
    r = algebra.mean([a, b])
    assert r.metric("cycles").dtype == "DOUBLE" and r.values["cycles"].dtype == np.float64
    assert table(r, "time") == pytest.approx(combine(lambda x, y: (x + y) / 2, flat(A_TIME), flat(B_TIME)))
    assert table(r, "cycles") == pytest.approx({k: v / 2 for k, v in flat(A_CYC).items()})
    c = build("c.cubex", {"time": ("DOUBLE", EXCLUSIVE)}, {"time": {G: [3.0, 9.0]}})
    r3 = algebra.mean([a, b, c])
    assert table(r3, "time") == pytest.approx(combine(lambda x, y, z: (x + y + z) / 3, flat(A_TIME),
                                                      flat(B_TIME), flat({G: [3.0, 9.0]})))
    assert r3.attributes["operation"] == "mean(a.cubex, b.cubex, c.cubex)"


def test_metric_kinds_and_parents_are_unified_by_name():
    ex = {M: [1.0, 2.0], F: [4.0, 8.0]}
    inc = {M: [5.0, 10.0], F: [4.0, 8.0]}
    a = build("a.cubex", {"total": ("DOUBLE", EXCLUSIVE), "t": ("DOUBLE", EXCLUSIVE)},
              {"t": ex, "total": ex}, parents={"t": "total"})
    b = build("b.cubex", {"t": ("DOUBLE", INCLUSIVE), "total": ("DOUBLE", EXCLUSIVE), "u": ("DOUBLE", EXCLUSIVE)},
              {"t": inc, "u": ex}, parents={"u": "t"})
    d = algebra.diff(a, b)
    assert d.metric("t").kind == EXCLUSIVE
    assert d.metrics[d.metric("t").parent].name == "total"
    assert d.metrics[d.metric("u").parent].name == "t"
    assert not d.values["t"].any()  # b's inclusive values are the same exclusive ones
    d2 = algebra.diff(b, a)  # b's kind now: a's exclusive values taken inclusively
    assert d2.metric("t").kind == INCLUSIVE and not d2.values["t"].any()


IPC = {"ipc": "metric::instr() / metric::cycles()"}


def test_derived_metrics_keep_their_expression_and_are_recomputed():
    a = build("a.cubex", {"cycles": ("UINT64", EXCLUSIVE), "instr": ("UINT64", EXCLUSIVE)},
              {"cycles": {M: [100, 100]}, "instr": {M: [300, 200]}}, derived=IPC)
    b = build("b.cubex", {"cycles": ("UINT64", EXCLUSIVE), "instr": ("UINT64", EXCLUSIVE)},
              {"cycles": {M: [40, 50]}, "instr": {M: [60, 50]}}, derived=IPC)
    m = algebra.mean([a, b])
    assert "ipc" not in m.values and m.metric("ipc").expression == "metric::instr() / metric::cycles()"
    assert m.derived_values("ipc")[0].tolist() == pytest.approx([180 / 70, 125 / 75])
    assert m.total("ipc") == pytest.approx((300 + 200 + 60 + 50) / (100 + 100 + 40 + 50))


TREE = {M: [1, 2], F: [10, 20], ("main", "f", "w"): [100, 200], ("main", "f", "w", "x"): [7, 0],
        G: [3, 3], ("main", "g", "f"): [30, 40], ("main", "g", "f", "w"): [300, 400]}


def test_cut_root_keeps_the_subtrees_of_every_call_path_of_the_region():
    e = build("t.cubex", {"s": ("UINT64", EXCLUSIVE)}, {"s": TREE})
    r = algebra.cut(e, root="f")
    r.check()
    assert r.attributes["operation"] == "cut(t.cubex, root=f)"
    got: dict = {}  # the two roots f have the same path: their values add up here
    a = r.values["s"]
    for c in range(len(r.cnodes)):
        for j, loc in enumerate(r.locations):
            if a[c, j]:
                got[(r.path(c), loc.key)] = got.get((r.path(c), loc.key), 0) + a[c, j].item()
    expected: dict = {}
    for p, row in TREE.items():
        if "f" in p:
            for loc, v in zip(LOCS, row, strict=True):
                if v:
                    key = (p[p.index("f"):], loc)
                    expected[key] = expected.get(key, 0) + v
    assert got == expected
    # each call path of f a root of its own, as cube_cut makes them (psuite once summed them under one)
    assert [r.path(x) for x in r.roots] == [("f",)] * sum(1 for p in TREE if p[-1] == "f")
    several = algebra.cut(e, root=["w", "g"], prune=["x"])  # several roots; a prune below one of them
    assert {several.path(x) for x in several.roots} == {("w",), ("g",)}
    assert not any("x" in p for p in several.paths())
    assert several.values["s"].sum() == sum(sum(row) for p, row in TREE.items() if "w" in p or "g" in p)
    # recursion: only the outermost call path of the region becomes a root
    rec = build("r.cubex", {"s": ("UINT64", EXCLUSIVE)}, {"s": {M: [1, 1], F: [2, 2], ("main", "f", "f"): [4, 4]}})
    rr = algebra.cut(rec, root="f")
    assert rr.paths() == [("f",), ("f", "f")] and rr.values["s"].sum() == 12


def test_cut_prune_inlines_the_subtree_for_both_metric_kinds():
    inc = {p: [sum(TREE[q][j] for q in TREE if q[:len(p)] == p) for j in range(2)] for p in TREE}
    e = build("t.cubex", {"s": ("UINT64", EXCLUSIVE), "si": ("UINT64", INCLUSIVE), "d": ("DOUBLE", EXCLUSIVE)},
              {"s": TREE, "si": inc, "d": {p: [v / 4 for v in row] for p, row in TREE.items()}})
    r = algebra.cut(e, prune=["w"])
    r.check()
    assert set(r.paths()) == {M, F, G, ("main", "g", "f")}
    s = table(r, "s")
    assert s[(F, (0, 0))] == 10 + 100 + 7 and s[(F, (0, 1))] == 20 + 200
    assert s[(("main", "g", "f"), (0, 0))] == 30 + 300 and s[(M, (0, 1))] == 2
    assert r.values["s"].sum() == sum(map(sum, TREE.values()))  # the root's inclusive total is kept
    assert table(r, "si") == {k: v for k, v in flat(inc).items() if "w" not in k[0]}  # parents unchanged
    assert table(r, "d")[(F, (0, 0))] == pytest.approx((10 + 100 + 7) / 4)
    both = algebra.cut(e, root="g", prune=["w"])
    assert both.paths() == [("g",), ("g", "f")] and table(both, "s")[(("g", "f"), (0, 1))] == 440


def test_cut_errors_name_the_region_and_close_names():
    e = build("t.cubex", {"s": ("UINT64", EXCLUSIVE)}, {"s": TREE})
    with pytest.raises(algebra.AlgebraError) as err:
        algebra.cut(e, root="mian")
    assert "mian" in str(err.value) and "close names: main" in str(err.value)
    with pytest.raises(algebra.AlgebraError, match="root of the call tree"):
        algebra.cut(e, prune=["main"])


def test_compare_equality_and_tolerances():
    base = {M: [1, 1], F: [1000, 1000], G: [500, 500]}
    slower = {M: [1, 1], F: [1000, 1000], G: [600, 600]}  # g 20 % slower
    a = build("a.cubex", {"samples": ("UINT64", EXCLUSIVE)}, {"samples": base})
    a2 = build("a2.cubex", {"samples": ("UINT64", EXCLUSIVE)}, {"samples": base})
    b = build("b.cubex", {"samples": ("UINT64", EXCLUSIVE)}, {"samples": slower})
    same = algebra.compare(a, a2)
    assert same.equal and same.within and same.moved == []
    c = algebra.compare(a, b)
    assert not c.equal and not c.within
    assert [(m.path, m.a, m.b) for m in c.moved] == [(G, 1000, 1200)]
    ok = algebra.compare(a, b, [algebra.Tolerance(relative=0.25)])
    assert ok.within and not ok.equal
    bad = algebra.compare(a, b, [algebra.Tolerance(relative=0.1)])
    assert not bad.within and len(bad.moved) == 1
    [moved] = bad.moved
    assert moved.metric == "samples" and moved.path == G and moved.delta == 200 and moved.relative == pytest.approx(0.2)
    assert algebra.compare(a, b, [algebra.Tolerance("samp*", absolute=200)]).within
    assert not algebra.compare(a, b, [algebra.Tolerance("samples", absolute=199)]).within
    assert algebra.compare(a, b, [algebra.Tolerance("other", absolute=0)]).within  # samples unchecked
    # largest first; a system that differs is only "not equal", tolerances look at sums over locations
    c3 = build("c.cubex", {"samples": ("UINT64", EXCLUSIVE)}, {"samples": {M: [2], F: [1900], G: [1500]}},
               locations=[(0, 0)])
    r = algebra.compare(a, c3, [algebra.Tolerance(absolute=50)])
    assert not r.equal and [m.path for m in r.moved] == [G, F]
    assert [m.b - m.a for m in r.moved] == [500, -100]



def test_compare_with_a_derived_metric():
    """A derived metric (Score-P's avg_time, say) is compared as computed
    from each call path's sums: time per visit, here 2.0 -> 3.0 in g."""
    metrics = {"time": ("DOUBLE", EXCLUSIVE), "visits": ("UINT64", EXCLUSIVE)}
    derived = {"avg": "metric::time() / metric::visits()"}
    a = build("a.cubex", metrics, {"time": {M: [1, 1], G: [2, 2]}, "visits": {M: [1, 1], G: [1, 1]}}, derived=derived)
    b = build("b.cubex", metrics, {"time": {M: [1, 1], G: [3, 3]}, "visits": {M: [1, 1], G: [1, 1]}}, derived=derived)
    r = algebra.compare(a, b, [algebra.Tolerance("avg", relative=0.1)])
    assert not r.within and [(m.path, m.a, m.b) for m in r.moved] == [(G, 2.0, 3.0)]
    assert algebra.compare(a, b, [algebra.Tolerance("avg", relative=0.6)]).within

def test_differential_folded_stacks():
    a, b = a_b()
    text = diff_folded(a, b, metric="cycles")  # after: a, before: b (which lacks cycles)
    assert sorted(text.splitlines()) == ["main 0 300", "main;f 0 2100", "main;g 0 300"]
    t = {M: [0.0000015, 0.0000012], F: [0.25, 0.5]}
    x = build("x.cubex", {"time": ("DOUBLE", EXCLUSIVE)}, {"time": t})
    x.metric("time").unit = "sec"
    y = build("y.cubex", {"time": ("DOUBLE", EXCLUSIVE)}, {"time": {F: [0.1, 0.0], ("main", "a;b"): [1e-3, 0]}})
    y.metric("time").unit = "sec"
    text = diff_folded(x, y)
    assert text.splitlines() == ["main 0 3", "main;a,b 1000 0", "main;f 100000 750000"]
    with pytest.raises(algebra.AlgebraError, match="give one of"):
        diff_folded(x, y, metric="nope")
    with pytest.raises(algebra.AlgebraError, match="negative time values"):
        diff_folded(algebra.diff(y, x), x)


def test_consume_reuses_the_inputs_arrays_and_aligned_inputs_are_not_copied():
    a, b = a_b()
    c = build("c.cubex", {"time": ("DOUBLE", EXCLUSIVE), "cycles": ("UINT64", EXCLUSIVE)},
              {"time": {M: [0.5, 0.5], F: [1.0, 2.0], G: [1.0, 1.0]}, "cycles": A_CYC})
    a_time = a.values["time"]
    ua, uc = algebra.unify([a, c]) if c.paths() == a.paths() else (None, None)
    assert ua is not None and np.shares_memory(ua.values["time"], a_time)
    expected = table(algebra.diff(a, c), "time")
    d = algebra.diff(a, c, consume=True)
    assert d.values["time"] is a_time and table(d, "time") == pytest.approx(expected)
    assert a.values == {} and c.values == {}
    m = algebra.mean([b, b], consume=True)
    assert table(m, "time") == pytest.approx(flat(B_TIME))


def random_values(rng: random.Random, integer: bool) -> dict[Path, list[float]]:
    paths = {("r",)}
    for _ in range(rng.randint(1, 12)):
        p = ("r",) + tuple(rng.choice("abc") for _ in range(rng.randint(1, 3)))
        paths.update(p[:k] for k in range(1, len(p) + 1))
    draw = (lambda: rng.randint(0, 50)) if integer else (lambda: rng.choice([0.0, rng.uniform(0, 9)]))
    return {p: [draw(), draw()] for p in paths}


@pytest.mark.parametrize("seed", range(12))
def test_random_call_trees_against_dictionaries(seed):
    rng = random.Random(seed)
    va, vb = random_values(rng, True), random_values(rng, False)
    wa, wb = random_values(rng, False), random_values(rng, True)
    a = build("a", {"n": ("UINT64", EXCLUSIVE), "x": ("DOUBLE", EXCLUSIVE)}, {"n": va, "x": wa}, shuffle=rng)
    b = build("b", {"n": ("DOUBLE", EXCLUSIVE), "x": ("UINT64", EXCLUSIVE)}, {"n": vb, "x": wb}, shuffle=rng)
    for name, (pa, pb) in {"n": (va, vb), "x": (wa, wb)}.items():
        fa, fb = flat(pa), flat(pb)
        assert table(algebra.diff(a, b), name) == pytest.approx(combine(lambda x, y: x - y, fa, fb))
        assert table(algebra.mean([a, b]), name) == pytest.approx(combine(lambda x, y: (x + y) / 2, fa, fb))
        merged = {k: v for k, v in fa.items() if k[0] not in vb and k[0] not in wb} | fb  # b's tree: both
        assert table(algebra.merge([a, b]), name) == pytest.approx(merged)
    for r in (algebra.diff(a, b), algebra.merge([b, a])):
        r.check()
        assert r.values["n"].dtype == np.float64  # a DOUBLE in one input makes the metric DOUBLE


def inclusive_of(ex: dict[Path, list[float]], paths) -> dict[Path, list[float]]:
    return {p: [sum(ex[q][j] for q in ex if q[:len(p)] == p) for j in range(2)] for p in paths}


@pytest.mark.parametrize("seed", range(6))
def test_random_trees_with_an_inclusive_metric(seed):
    rng = random.Random(100 + seed)
    ea, eb = random_values(rng, True), random_values(rng, True)
    a = build("a", {"n": ("UINT64", INCLUSIVE)}, {"n": inclusive_of(ea, ea)}, shuffle=rng)
    b = build("b", {"n": ("UINT64", EXCLUSIVE)}, {"n": eb}, shuffle=rng)
    union = set(ea) | set(eb)
    ia, ib = inclusive_of(ea, union), inclusive_of(eb, union)
    d = algebra.diff(a, b)
    assert d.metric("n").kind == INCLUSIVE
    assert table(d, "n") == combine(lambda x, y: x - y, flat(ia), flat(ib))
    # merge: the last input's definition (kind) wins; values last-wins per point, in the exclusive view
    merged = algebra.merge([a, b])
    assert merged.metric("n").kind == EXCLUSIVE
    assert table(merged, "n") == flat({p: eb.get(p, ea.get(p)) for p in union})
    merged = algebra.merge([b, a])
    assert merged.metric("n").kind == INCLUSIVE
    assert table(merged, "n") == flat(inclusive_of({p: ea.get(p, eb.get(p)) for p in union}, union))
    pruned = algebra.cut(a, prune=["b"]) if any(p[-1] == "b" for p in ea) else None
    if pruned is not None:  # an INCLUSIVE metric: every kept call path keeps its value
        assert table(pruned, "n") == {k: v for k, v in flat(inclusive_of(ea, ea)).items() if "b" not in k[0]}


def test_programs_named_apart_keep_apart_as_in_cubelib():
    """CubeLib's identities: a region is its name, module and lines, a call
    path its region and call-site line under the same parent.  Two programs
    (Score-P and psuite name the root region after the program) give two
    roots, as cube_diff gives them; psuite once joined the roots whatever
    they were named, which no CUBE tool does."""
    def build_in(program: str, directory: str, work: float) -> Experiment:
        e = Experiment()
        e.add_metric(Metric("time", dtype="DOUBLE", kind=EXCLUSIVE))
        root = e.add_cnode(e.add_region(Region(program, role="artificial")), None)
        w = e.add_cnode(e.add_region(Region("work", module=f"{directory}/work.c")), root)
        e.add_cnode(e.add_region(Region("init", module=f"{directory}/main.c")), root)
        e.locations.append(Location())
        a = e.zeros("time")
        a[w, 0], a[2, 0] = work, 1.0
        return e

    d = algebra.diff(build_in("app_v2", "/b", 12.0), build_in("app_v1", "/a", 10.0))
    assert [d.path(r) for r in d.roots] == [("app_v2",), ("app_v1",)]
    assert table(d, "time") == {(("app_v2", "work"), (0, 0)): 12.0, (("app_v2", "init"), (0, 0)): 1.0,
                                (("app_v1", "work"), (0, 0)): -10.0, (("app_v1", "init"), (0, 0)): -1.0}
    same = algebra.diff(build_in("app", "/b", 12.0), build_in("app", "/b", 10.0))  # one program: one tree
    assert table(same, "time") == {(("app", "work"), (0, 0)): 2.0}
    moved = algebra.diff(build_in("app", "/b", 12.0), build_in("app", "/a", 10.0))  # a module is part of a region
    assert len(moved.cnodes) == 5


def test_min_and_max_metrics_stay_least_and_greatest():
    """Score-P's max_time (MAXDOUBLE) and min_time (MINDOUBLE): every
    operation keeps the type, and pruning, collapsing and comparing take
    the greatest or least value, never a sum."""
    mx = {M: [0.1, 0.2], F: [0.3, 0.9], ("main", "f", "b"): [0.5, 0.6]}
    mn = {M: [0.05, 0.02], F: [0.03, 0.04], ("main", "f", "b"): [0.01, 0.06]}
    metrics = {"max_time": ("MAXDOUBLE", EXCLUSIVE), "min_time": ("MINDOUBLE", EXCLUSIVE)}
    a = build("a.cubex", metrics, {"max_time": mx, "min_time": mn})
    b = build("b.cubex", metrics, {"max_time": mx, "min_time": mn})
    for r in (algebra.mean([a, b]), algebra.diff(a, b), algebra.merge([a, b])):
        assert r.metric("max_time").dtype == "MAXDOUBLE" and r.metric("min_time").dtype == "MINDOUBLE"
    pruned = algebra.cut(a, prune=["b"])
    assert table(pruned, "max_time")[(F, (0, 0))] == 0.5 and table(pruned, "max_time")[(F, (0, 1))] == 0.9
    assert table(pruned, "min_time")[(F, (0, 0))] == 0.01 and table(pruned, "min_time")[(F, (0, 1))] == 0.04
    collapsed = algebra.mean([a, b], collapse=True)  # -C keeps the threads (cube_mean -C): their mean
    assert collapsed.values["max_time"].tolist() == [[0.1, 0.2], [0.3, 0.9], [0.5, 0.6]]
    assert collapsed.values["min_time"].tolist() == [[0.05, 0.02], [0.03, 0.04], [0.01, 0.06]]
    # diff as cube_diff: the subtrahend negated, then the greatest (least) of the two
    other = build("b.cubex", metrics, {"max_time": {M: [0.3, 0.1]}, "min_time": {M: [-0.5, 0.01]}})
    d = algebra.diff(a, other)
    assert table(d, "max_time")[(M, (0, 0))] == 0.1 and table(d, "max_time")[(M, (0, 1))] == 0.2
    assert table(d, "min_time")[(M, (0, 0))] == 0.05 and table(d, "min_time")[(M, (0, 1))] == -0.01
    assert table(d, "max_time")[(F, (0, 1))] == 0.9  # a call path only the minuend has keeps its value
    assert table(algebra.diff(other, a), "max_time")[(F, (0, 1))] == -0.9  # only the subtrahend: negated
    slower = build("c.cubex", metrics, {"max_time": {**mx, F: [0.3, 1.8]}, "min_time": mn})
    [moved] = algebra.compare(a, slower, [algebra.Tolerance("max_time", relative=0.5)]).moved
    assert (moved.path, moved.a, moved.b) == (F, 0.9, 1.8)


def test_derived_metrics_of_counting_reports_are_recomputed_from_combined_times():
    """MIPS = instructions / wall seconds: the mean of a 1 s and a 3 s run of
    2e9 instructions each is 2e9 / 2 s = 1000 MIPS, not the mean of 2000
    and 667 MIPS nor a rate frozen at one run's time."""
    from psuite.analysis import experiments, metrics
    from psuite.model.report import CountReport, Event

    definitions = metrics.load(metrics.standard_metrics_path())

    def run(wall: float, user: float) -> Experiment:
        r = CountReport(command="./app", hostname="h", pid=1, wallclock=wall, usertime=user, systemtime=0.0,
                        events=[Event("PAPI_TOT_INS", 2e9, "preset")])
        r.metrics = metrics.derive(r, definitions)
        return experiments.from_report(r, definitions)

    m = algebra.mean([run(1.0, 0.5), run(3.0, 2.5)])
    assert m.total("wall_seconds") == 2.0 and m.total("cpu_seconds") == 1.5
    assert m.total("MIPS_wall_clock") == pytest.approx(2e9 / 2.0 / 1e6)
    assert m.total("CPU_utilization_percent") == pytest.approx(1.5 / 2.0 * 100)
