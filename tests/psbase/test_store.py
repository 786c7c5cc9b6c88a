"""The archive on SQLite: experiments, runs in one transaction each,
duplicates, deletion, restoration, purging and definition updates."""

from __future__ import annotations

import datetime as dt
import sqlite3

import pytest
import sqlalchemy as sa

from psuite.errors import PsuiteError
from psuite.psbase.model import Definition, RunData, Variable, Version
from psuite.psbase.store import Store, StoreError


def definition() -> Definition:
    return Definition(
        "sweep",
        synopsis="a sweep",
        variables=[
            Variable("nodes", "integer"),
            Variable("fs", "string", valid=["ufs", "nfs"]),
            Variable("note", "text"),
            Variable("day", "date"),
            Variable("start", "time"),
            Variable("limit", "duration"),
            Variable("stamp", "timestamp"),
            Variable("ok", "boolean"),
            Variable("compiler", "version"),
            Variable("total", "float", is_result=True),
            Variable("chunk", "integer", occurrence="multiple"),
            Variable("bw", "float", unit="MB/s", occurrence="multiple", is_result=True),
        ],
    )


VALUES = {
    "nodes": 4,
    "fs": "ufs",
    "note": "line one\nline two",
    "day": dt.date(2026, 1, 2),
    "start": dt.time(9, 30, 15),
    "limit": dt.timedelta(minutes=90),
    "stamp": dt.datetime(2026, 1, 2, 9, 30, 15),
    "ok": True,
    "compiler": Version("12.2.0"),
    "total": 1.25,
}
ROWS = [{"chunk": 1024, "bw": 10.5}, {"chunk": 2048, "bw": 20.25}, {"chunk": 4096, "bw": 30.0}]


def run(h: str, **values) -> RunData:
    return RunData(values={**VALUES, **values}, rows=[dict(r) for r in ROWS], sources=[f"{h}.txt"], content_hash=h)


@pytest.fixture
def store(db_url) -> Store:
    """An archive with the experiment, on each backend (conftest.db_url)."""
    s = Store(db_url, create=True)
    s.setup(definition())
    yield s
    s.close()


def count(store: Store, sql: str) -> int:
    with store.engine.connect() as c:
        return c.execute(sa.text(sql)).scalar()


def test_setup_and_run_values_round_trip(store):
    assert store.add_runs("sweep", [run("a"), run("b", nodes=8)]) == [1, 2]
    got = store.run("sweep", 1)
    assert got.values == VALUES
    for k, v in VALUES.items():
        assert type(got.values[k]) is type(v), k
    assert got.rows == ROWS
    assert got.sources == ["a.txt"] and got.content_hash == "a" and not got.deleted
    assert store.run("sweep", 2).values["nodes"] == 8
    assert [(n, a, b) for n, _, a, b in store.list_experiments()] == [("sweep", 2, 0)]
    # one typed column per once-variable, one row per data-set row
    assert count(store, "select count(*) from psb_x1_rows") == 6
    assert count(store, "select sum(nodes) from psb_x1_once") == 12
    assert count(store, "select sum(chunk) from psb_x1_rows where psb_run = 2") == 1024 + 2048 + 4096


def test_setup_twice_is_refused(store):
    with pytest.raises(StoreError, match="exists"):
        store.setup(definition())


def test_a_failing_run_leaves_nothing(store):
    bad = run("b", nodes="four")  # not an integer value
    with pytest.raises(PsuiteError, match="'nodes'"):
        store.add_runs("sweep", [run("a"), bad])
    assert store.list_runs("sweep", deleted=True) == []
    assert count(store, "select count(*) from psb_x1_once") == 0
    assert count(store, "select count(*) from psb_x1_rows") == 0
    # unknown variables and wrong occurrences are refused the same way
    with pytest.raises(PsuiteError, match="no variable 'speed'"):
        store.add_runs("sweep", [run("c", speed=1.0)])
    with pytest.raises(PsuiteError, match="occurs multiple times"):
        store.add_runs("sweep", [run("d", chunk=5)])
    assert store.list_runs("sweep", deleted=True) == []
    assert store.add_runs("sweep", [run("a")]) == [1]  # the indexes were not used up


def test_duplicates_are_refused_unless_forced(store):
    store.add_runs("sweep", [run("a")])
    with pytest.raises(StoreError, match="already run 1 of sweep; import it again only with --force"):
        store.add_runs("sweep", [run("b"), run("a")])
    assert [r.index for r in store.list_runs("sweep")] == [1]  # b was not filed either
    assert store.add_runs("sweep", [run("a")], force=True) == [2]
    store.set_deleted("sweep", [1, 2], True)
    # only active runs are duplicates (perfbase's check): a deleted run's content is filed anew
    assert store.add_runs("sweep", [run("a")]) == [3]
    with pytest.raises(StoreError, match="already run 3 of sweep"):
        store.add_runs("sweep", [run("a")])


def test_the_same_run_twice_in_one_import_is_refused(store):
    """Not "already run N": the transaction that would have made run N is
    rolled back.  Forced or not: nothing in the archive is repeated."""
    store.add_runs("sweep", [run("a")])
    for force in (False, True):
        with pytest.raises(StoreError) as e:
            store.add_runs("sweep", [run("b"), run("c"), run("b")], force=force)
        assert str(e.value) == "b.txt is given twice in this input; give it once (nothing was filed)"
        other = RunData(values=dict(VALUES), sources=["copy.txt"], content_hash="b")
        with pytest.raises(StoreError) as e:
            store.add_runs("sweep", [run("b"), other], force=force)
        assert str(e.value) == ("copy.txt has the same content as b.txt, given before it in this input; "
                                "give one of them (nothing was filed)")  # fmt: skip
    assert [r.index for r in store.list_runs("sweep", deleted=True)] == [1]
    assert count(store, "SELECT count(*) FROM psb_x1_rows") == len(ROWS)
    assert store.add_runs("sweep", [run("b"), run("c")]) == [2, 3]


def test_delete_restore_purge(store):
    store.add_runs("sweep", [run("a"), run("b"), run("c")])
    store.set_deleted("sweep", [2], True)
    assert [r.index for r in store.list_runs("sweep")] == [1, 3]
    assert [(r.index, r.deleted) for r in store.list_runs("sweep", deleted=True)] == [(1, False), (2, True), (3, False)]
    assert store.run("sweep", 2).deleted and store.run("sweep", 2).values == VALUES  # kept, only hidden
    assert [(n, a, b) for n, _, a, b in store.list_experiments()] == [("sweep", 2, 1)]
    store.set_deleted("sweep", [2], False)
    assert [r.index for r in store.list_runs("sweep")] == [1, 2, 3]
    store.purge("sweep", [1, 3])
    assert [r.index for r in store.list_runs("sweep", deleted=True)] == [2]
    assert count(store, "select count(*) from psb_x1_once") == 1
    assert count(store, "select count(*) from psb_x1_rows") == 3
    with pytest.raises(StoreError, match="has no run 1"):
        store.run("sweep", 1)
    with pytest.raises(StoreError, match="has no run 7, 9"):
        store.set_deleted("sweep", [2, 7, 9], True)
    assert not store.run("sweep", 2).deleted  # nothing changed by the refused call
    # a purged run's content may be filed again
    assert store.add_runs("sweep", [run("a")]) == [4]  # under a new number: 3 named the purged run


def test_update_adds_changes_and_removes(store):
    store.add_runs("sweep", [run("a")])
    d = definition()
    d.variables = [v for v in d.variables if v.name != "note"]
    d.variables.append(Variable("host", "string"))
    d.variables.append(Variable("lat", "float", occurrence="multiple", is_result=True))
    d.variable("total").unit = "s"
    d.synopsis = "a changed sweep"
    # run 1 has a note: removing it would lose data, so it takes drop (psbase update --force)
    with pytest.raises(StoreError, match=r"removes 'note', which run 1 has values for; give --force"):
        store.update(d)
    assert store.definition("sweep") == definition() and store.run("sweep", 1).values["note"] is not None
    changes = store.update(d, drop=True)
    assert sorted(changes) == sorted(
        ["removed note", "changed total", "added host", "added lat", "changed the meta information"]
    )
    got = store.definition("sweep")
    assert got == d
    r = store.run("sweep", 1)
    assert "note" not in r.values and r.values["nodes"] == 4
    assert r.rows == ROWS  # the new column is empty
    store.add_runs("sweep", [RunData({"host": "n1", "nodes": 2}, [{"chunk": 1, "lat": 0.5}], ["x"], "x")])
    assert store.run("sweep", 2).values == {"host": "n1", "nodes": 2}
    assert store.run("sweep", 2).rows == [{"chunk": 1, "lat": 0.5}]


def test_update_refuses_a_type_change_of_used_values(store):
    store.add_runs("sweep", [run("a")])
    d = definition()
    d.variable("fs").datatype = "integer"
    d.variable("fs").valid = []
    with pytest.raises(StoreError, match=r"'fs': stored value 'ufs' \(run 1\) is not integer"):
        store.update(d)
    assert store.definition("sweep").variable("fs").datatype == "string"
    # a variable without values may change
    d = definition()
    d.variables.append(Variable("spare", "integer"))
    store.update(d)
    d.variable("spare").datatype = "string"
    d.variable("spare").occurrence = "multiple"
    assert store.update(d) == ["changed spare: integer/once -> string/multiple"]
    store.add_runs("sweep", [RunData({}, [{"spare": "x"}], ["y"], "y")])
    assert store.run("sweep", 2).rows == [{"spare": "x"}]


def test_unknown_experiment(store):
    with pytest.raises(StoreError, match="no experiment 'nope' .* it has: sweep"):
        store.list_runs("nope")


def test_missing_archive_is_not_created(tmp_path):
    path = tmp_path / "missing.db"
    with pytest.raises(StoreError, match="no archive .*missing.db; create one with `psbase setup"):
        Store(str(path))
    assert not path.exists()


def test_a_file_that_is_not_an_archive(tmp_path):
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as c:
        c.execute("create table t (x)")
    with pytest.raises(StoreError, match="not a psbase archive"):
        Store(str(other))
    text = tmp_path / "notes.txt"
    text.write_text("hello, this is not a database at all" * 20)
    with pytest.raises(StoreError, match="not a database"):
        Store(str(text))


def test_two_stores_file_into_one_archive(db_url):
    """Run indexes stay unique when two connections import in turn."""
    a = Store(db_url, create=True)
    a.setup(definition())
    b = Store(db_url)
    assert a.add_runs("sweep", [run("a")]) == [1]
    assert b.add_runs("sweep", [run("b")]) == [2]
    assert [r.index for r in a.list_runs("sweep")] == [1, 2]


def test_concurrent_imports_get_distinct_indexes(db_url):
    """Four importers at once, each with its own connection: every run is
    filed, under an index of its own."""
    from concurrent.futures import ThreadPoolExecutor

    first = Store(db_url, create=True)
    first.setup(definition())

    def importer(k: int) -> list[int]:
        s = Store(db_url)
        try:
            return [i for j in range(5) for i in s.add_runs("sweep", [run(f"{k}-{j}")])]
        finally:
            s.close()

    with ThreadPoolExecutor(4) as pool:
        got = [i for part in pool.map(importer, range(4)) for i in part]
    assert sorted(got) == list(range(1, 21))
    assert sorted(r.content_hash for r in first.list_runs("sweep")) == sorted(
        f"{k}-{j}" for k in range(4) for j in range(5)
    )


def test_update_renaming_a_variable_in_case_only(store):
    store.add_runs("sweep", [run("a")])
    d = definition()
    d.variable("nodes").name = "Nodes"
    assert store.update(d, drop=True) == ["removed nodes", "added Nodes"]
    assert "nodes" not in store.run("sweep", 1).values and "Nodes" not in store.run("sweep", 1).values
    store.add_runs("sweep", [RunData({"Nodes": 3}, [], ["b"], "b")])
    assert store.run("sweep", 2).values == {"Nodes": 3}


def index_columns(store: Store, table: str) -> list[list[str]]:
    with store.engine.connect() as c:
        return [i["column_names"] for i in sa.inspect(c).get_indexes(table)]


def test_dataset_index_follows_the_definition(store):
    """The data-set table's index (by run, parameters, results) is made by
    setup and rebuilt by update when its columns change: a removed indexed
    column goes (SQLite drops no indexed column), an added one comes in."""
    assert index_columns(store, "psb_x1_rows") == [["psb_run", "chunk", "bw"]]
    store.add_runs("sweep", [run("a")])
    d = definition()
    d.variables = [v for v in d.variables if v.name != "chunk"]
    d.variables.append(Variable("lat", "float", occurrence="multiple", is_result=True))
    d.variables.append(Variable("label", "text", occurrence="multiple"))  # text: unbounded, not indexed
    assert sorted(store.update(d, drop=True)) == ["added label", "added lat", "removed chunk"]
    assert index_columns(store, "psb_x1_rows") == [["psb_run", "bw", "lat"]]
    assert store.run("sweep", 1).rows == [{"bw": r["bw"]} for r in ROWS]
    # an update that leaves the data set alone leaves its index alone
    d.synopsis = "other"
    assert store.update(d) == ["changed the meta information"]
    assert index_columns(store, "psb_x1_rows") == [["psb_run", "bw", "lat"]]


def test_dataset_values_of_every_type_round_trip_and_compare(db_url):
    """Data-set rows go below SQLAlchemy's per-row processing (COPY,
    executemany): every datatype still round-trips, SQLite's dates and
    times are stored as SQLAlchemy's own binds compare them, and a value of
    a wrong type is refused with nothing filed."""
    kinds = {"i": ("integer", 7), "f": ("float", 2.5), "s": ("string", "x y"), "t": ("text", "a\nb"),
             "d": ("date", dt.date(2026, 1, 2)), "h": ("time", dt.time(9, 30, 15)),
             "u": ("duration", dt.timedelta(seconds=90.5)), "ts": ("timestamp", dt.datetime(2026, 1, 2, 9, 30, 15)),
             "b": ("boolean", True), "v": ("version", Version("1.10"))}
    d = Definition("types", variables=[Variable("k", "integer")] +
                   [Variable(n, t, occurrence="multiple") for n, (t, _) in kinds.items()])
    s = Store(db_url, create=True)
    try:
        s.setup(d)
        rows = [{n: v for n, (_, v) in kinds.items()}, {"i": 8}]  # the second row: the rest empty
        assert s.add_runs("types", [RunData({"k": 1}, rows, ["a"], "a")]) == [1]
        got = s.run("types", 1).rows
        assert got == rows and all(type(got[0][n]) is type(v) for n, (_, v) in kinds.items())
        _, table = s.tables("types")
        with s.engine.connect() as c:
            for n in ("d", "h", "ts"):
                assert c.execute(sa.select(sa.func.count()).select_from(table)
                                 .where(table.c[n] == kinds[n][1])).scalar() == 1, n
        for n, bad in (("i", 1.5), ("f", "2.5"), ("d", dt.datetime(2026, 1, 2)), ("b", 1), ("ts", "2026")):
            with pytest.raises(PsuiteError, match=f"variable '{n}'.* is not a"):
                s.add_runs("types", [RunData({"k": 2}, [{"i": 1}, {n: bad}], ["b"], "b")])
        assert [r.index for r in s.list_runs("types", deleted=True)] == [1]
        assert count(s, "select count(*) from psb_x1_rows") == 2
    finally:
        s.close()


def test_two_step_dataset_query_equals_the_values(store):
    """mean, count, min and max of a data-set result per parameter (the
    two-step aggregation) equal the values computed here, deleted runs left
    out, a data-set parameter filtered."""
    from psuite.psbase.query import run_query

    bws = {}
    for i, nodes in enumerate((1, 2, 1, 2, 4)):
        rows = [{"chunk": c, "bw": 10.0 * nodes + i + c / 1024} for c in (1024, 2048, 4096)]
        store.add_runs("sweep", [RunData({**VALUES, "nodes": nodes}, rows, [f"r{i}"], f"r{i}")])
        bws[i + 1] = (nodes, rows)
    store.set_deleted("sweep", [5], True)
    q = run_query(store, "sweep", "bw", ["nodes"], where=["chunk=1024", "chunk=4096"],
                  stats=["mean", "count", "min", "max"])
    want = {}
    for idx, (nodes, rows) in bws.items():
        if idx != 5:
            want.setdefault(nodes, []).extend(r["bw"] for r in rows if r["chunk"] in (1024, 4096))
    assert [row[0] for row in q.rows] == sorted(want)
    for nodes, mean, n, lo, hi in q.rows:
        xs = want[nodes]
        assert (n, lo, hi) == (len(xs), min(xs), max(xs)) and mean == pytest.approx(sum(xs) / len(xs), rel=1e-12)
    by_both = run_query(store, "sweep", "bw", ["nodes", "chunk"], stats=["count"])
    assert [(a, b, n) for a, b, n in by_both.rows] == [(1, c, 2) for c in (1024, 2048, 4096)] + \
        [(2, c, 2) for c in (1024, 2048, 4096)]
