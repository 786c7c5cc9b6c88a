"""psbase update and info on an archive, on both backends: new valid
values that stored values are not among, new variables with defaults,
changed datatypes, and what info shows of a definition."""

from __future__ import annotations

import copy
import datetime as dt

import pytest
import sqlalchemy as sa
from lxml import etree

from psuite.psbase import definition as defmod
from psuite.psbase.model import Definition, RunData, Variable
from psuite.psbase.store import Store, StoreError
from tests.conftest import one_line_error
from tests.psbase.test_cli import ok, psbase

FS = ["ufs", "nfs", "pvfs", "xfs"]
RUN_FS = ["ufs", "pvfs", "pvfs", "xfs", "nfs"]  # run i+1 has RUN_FS[i]
RUN_ACCESS = [["write", "read"], ["write"], ["read", "rewrite"], ["write"], ["rewrite"]]


def definition() -> Definition:
    return Definition(
        "io",
        synopsis="file system sweep",
        description="Bandwidths over file systems and access methods.",
        performed_by={"name": "Ada Lovelace", "organization": "Analytical Engines Ltd."},
        project="I/O tuning",
        variables=[
            Variable("fs", "string", valid=list(FS), synopsis="file system"),
            Variable("nodes", "integer", unit="node", default="1"),
            Variable("total", "float", unit="s", is_result=True),
            Variable("access", "string", occurrence="multiple", valid=["write", "rewrite", "read"]),
            Variable("bw", "float", unit="MB/s", occurrence="multiple", is_result=True),
        ],
    )


@pytest.fixture
def store(db_url) -> Store:
    s = Store(db_url, create=True)
    s.setup(definition())
    runs = [
        RunData({"fs": fs, "nodes": i + 1, "total": 2.0 * (i + 1)},
                [{"access": a, "bw": 10.0 * (i + 1) + j} for j, a in enumerate(access)], [f"r{i}"], f"r{i}")
        for i, (fs, access) in enumerate(zip(RUN_FS, RUN_ACCESS, strict=True))
    ]  # fmt: skip
    assert s.add_runs("io", runs) == [1, 2, 3, 4, 5]
    s.set_deleted("io", [4], True)  # a deleted run's values count too: it can be restored
    yield s
    s.close()


def columns(store: Store, table: str) -> list[str]:
    return [c["name"] for c in sa.inspect(store.engine).get_columns(table)]


def url_of(store: Store) -> str:
    return store.url.render_as_string(hide_password=False)


def test_valid_values_that_stored_values_are_not_among_are_refused(store, tmp_path):
    before = (defmod.to_bytes(store.definition("io")), columns(store, "psb_x1_once"), columns(store, "psb_x1_rows"))
    d = definition()
    d.variable("fs").valid = ["ufs", "nfs"]
    d.variables = [v for v in d.variables if v.name != "total"]  # would be removed: nothing happens
    d.variables.append(Variable("host", "string", default="grisu"))
    with pytest.raises(StoreError) as e:
        store.update(d)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("variable 'fs': stored values 'pvfs' (runs 2, 3), 'xfs' (run 4) are not among its new "
                          "valid values ufs, nfs;")  # fmt: skip
    assert "nothing was changed" in msg
    after = (defmod.to_bytes(store.definition("io")), columns(store, "psb_x1_once"), columns(store, "psb_x1_rows"))
    assert after == before
    # a data-set variable: the runs with the rows that are no longer valid
    d = definition()
    d.variable("access").valid = ["write", "read"]
    with pytest.raises(StoreError, match=r"variable 'access': stored value 'rewrite' \(runs 3, 5\) is not among"):
        store.update(d)
    # the same by the command line: one line, exit 2, nothing changed
    d = definition()
    d.variable("fs").valid = ["ufs", "nfs", "xfs"]
    (tmp_path / "new.xml").write_bytes(defmod.to_bytes(d))
    msg = one_line_error(psbase("--db", url_of(store), "update", "new.xml", cwd=tmp_path), "psbase")
    assert "variable 'fs': stored value 'pvfs' (runs 2, 3) is not among its new valid values ufs, nfs, xfs" in msg
    assert store.definition("io").variable("fs").valid == FS
    # valid values that still hold every stored value are taken; so is dropping them
    d.variable("fs").valid = ["ufs", "nfs", "pvfs", "xfs", "lustre"]
    assert store.update(d) == ["changed fs"]
    d.variable("fs").valid = []
    assert store.update(d) == ["changed fs"]
    assert store.definition("io").variable("fs").valid == []


def test_new_variables_take_their_default_in_existing_runs(store):
    d = definition()
    d.variables += [
        Variable("host", "string", default="grisu"),
        Variable("day", "date", default="2026-01-02"),
        Variable("nic", "string"),  # no default: stays empty
        Variable("chunk", "integer", occurrence="multiple", default="1024"),
        Variable("lat", "float", occurrence="multiple", is_result=True),
    ]
    rows = sum(len(a) for a in RUN_ACCESS)
    assert store.update(d) == [
        "added host (its default grisu given to 5 runs)",
        "added day (its default 2026-01-02 given to 5 runs)",
        "added nic",
        f"added chunk (its default 1024 given to {rows} data-set rows)",
        "added lat",
    ]
    for i in range(1, 6):
        r = store.run("io", i)
        assert (r.values["host"], r.values["day"]) == ("grisu", dt.date(2026, 1, 2))
        assert "nic" not in r.values  # empty: None in the archive
        assert [row["chunk"] for row in r.rows] == [1024] * len(RUN_ACCESS[i - 1])
        assert all("lat" not in row for row in r.rows)
    with store.engine.connect() as c:
        assert c.execute(sa.text("SELECT count(*) FROM psb_x1_once WHERE nic IS NULL")).scalar() == 5
        assert c.execute(sa.text("SELECT count(*) FROM psb_x1_rows WHERE lat IS NULL")).scalar() == rows
        assert c.execute(sa.text("SELECT count(*) FROM psb_x1_rows WHERE chunk = 1024")).scalar() == rows
    # a run filed afterwards has what its input gives
    store.add_runs("io", [RunData({"fs": "ufs", "host": "n1"}, [{"access": "read", "chunk": 8}], ["x"], "x")])
    r = store.run("io", 6)
    assert r.values == {"fs": "ufs", "host": "n1"} and r.rows == [{"access": "read", "chunk": 8}]


def test_a_datatype_change_the_stored_values_cannot_take_is_refused(store, tmp_path):
    before = (defmod.to_bytes(store.definition("io")), columns(store, "psb_x1_once"), columns(store, "psb_x1_rows"))
    d = definition()
    d.variable("fs").datatype = "integer"
    d.variable("fs").valid = []
    d.variable("total").datatype = "integer"  # 2.0, 4.0, ...: whole numbers, it could change alone
    (tmp_path / "new.xml").write_bytes(defmod.to_bytes(d))
    msg = one_line_error(psbase("--db", url_of(store), "update", "new.xml", cwd=tmp_path), "psbase")
    assert msg == ("psbase: variable 'fs': stored values 'ufs' (run 1), 'pvfs' (runs 2, 3), 'xfs' (run 4), 'nfs' "
                   "(run 5) are not integer, so its datatype cannot change from string to integer; keep string, "
                   "or add a variable under a new name (nothing was changed)")  # fmt: skip
    after = (defmod.to_bytes(store.definition("io")), columns(store, "psb_x1_once"), columns(store, "psb_x1_rows"))
    assert after == before
    assert store.run("io", 2).values == {"fs": "pvfs", "nodes": 2, "total": 4.0}
    # a data-set variable, and values of the new type that are not among its valid values
    d = definition()
    d.variable("bw").datatype = "integer"  # 10.0 + j: 11.0 is whole, so are all of them
    d.variable("access").datatype = "text"
    assert store.update(d) == [
        f"changed access: string/multiple -> text/multiple ({sum(map(len, RUN_ACCESS))} stored values converted)",
        f"changed bw: float/multiple -> integer/multiple ({sum(map(len, RUN_ACCESS))} stored values converted)",
    ]
    d.variable("nodes").datatype = "string"
    d.variable("nodes").valid = ["1", "2", "3"]
    d.variable("nodes").default = None
    with pytest.raises(StoreError) as e:
        store.update(d)
    assert str(e.value).startswith("variable 'nodes': stored values '4' (run 4), '5' (run 5) are not string among "
                                   "its valid values 1, 2, 3, so its datatype cannot change")  # fmt: skip
    # an occurrence: only while no run has a value
    d = store.definition("io")
    d.variable("total").occurrence = "multiple"
    with pytest.raises(StoreError, match=r"^variable 'total' has values in runs 1, 2, 3, 4, 5; its occurrence "):
        store.update(d)


def test_a_datatype_change_converts_the_stored_values(store):
    d = definition()
    d.variables += [Variable("when", "date"), Variable("ok", "boolean"), Variable("lib", "string"),
                    Variable("limit", "duration", occurrence="multiple")]  # fmt: skip
    store.update(d)
    store.add_runs("io", [RunData({"fs": "ufs", "nodes": 6, "total": 7.5, "when": dt.date(2026, 3, 4), "ok": True,
                                   "lib": "1.10"}, [{"access": "read", "limit": dt.timedelta(minutes=90)}],
                                  ["n"], "n")])  # fmt: skip
    for name, datatype in (("nodes", "float"), ("total", "string"), ("when", "timestamp"), ("ok", "string"),
                           ("lib", "version"), ("limit", "float")):  # fmt: skip
        d.variable(name).datatype = datatype
    d.variable("nodes").default = None
    changes = store.update(d)
    assert "changed nodes: integer/once -> float/once (6 stored values converted)" in changes
    assert "changed limit: duration/multiple -> float/multiple (1 stored value converted)" in changes
    r = store.run("io", 6)
    assert r.values == {"fs": "ufs", "nodes": 6.0, "total": "7.5", "when": dt.datetime(2026, 3, 4), "ok": "true",
                        "lib": "1.10"}  # fmt: skip
    assert type(r.values["nodes"]) is float and type(r.values["lib"]).__name__ == "Version"
    assert r.rows == [{"access": "read", "limit": 5400.0}]
    (index,) = sa.inspect(store.engine).get_indexes("psb_x1_rows")  # rebuilt over the retyped columns
    assert {"limit", "access", "bw"} <= set(index["column_names"])
    assert [store.run("io", i).values["total"] for i in range(1, 6)] == ["2.0", "4.0", "6.0", "8.0", "10.0"]
    # the column is of the new type in the database: a numeric comparison, not a text one
    with store.engine.connect() as c:
        assert c.execute(sa.text("SELECT count(*) FROM psb_x1_once WHERE nodes > 5.5")).scalar() == 1
    # and back: 6.0 is the integer 6
    d.variable("nodes").datatype = "integer"
    assert "changed nodes: float/once -> integer/once (6 stored values converted)" in store.update(d)
    assert [store.run("io", i).values["nodes"] for i in range(1, 7)] == [1, 2, 3, 4, 5, 6]


def test_info_shows_the_definition(store, tmp_path):
    out = ok(psbase("--db", url_of(store), "info", "io", cwd=tmp_path)).splitlines()
    assert out[0] == "experiment io: file system sweep"
    assert out[1].strip() == "Bandwidths over file systems and access methods."
    assert out[2] == "performed by: Ada Lovelace (Analytical Engines Ltd.)"
    assert out[3] == "project: I/O tuning"
    header = out[4].split()
    assert header == ["variable", "kind", "datatype", "unit", "occurrence", "valid", "default", "synopsis"]
    at = {h: out[4].index(h) for h in header}  # each column starts under its header

    def cell(line: str, name: str) -> str:
        start = at[name]
        nxt = [at[h] for h in header if at[h] > start]
        return line[start : min(nxt) if nxt else None].strip()

    rows = {cell(line, "variable"): line for line in out[5:]}
    assert set(rows) == {"fs", "nodes", "total", "access", "bw"}
    want = {
        "fs": ("parameter", "string", "", "once", "ufs, nfs, pvfs, xfs", "", "file system"),
        "nodes": ("parameter", "integer", "node", "once", "", "1", ""),
        "total": ("result", "float", "s", "once", "", "", ""),
        "access": ("parameter", "string", "", "multiple", "write, rewrite, read", "", ""),
        "bw": ("result", "float", "MB/s", "multiple", "", "", ""),
    }
    for name, expected in want.items():
        assert tuple(cell(rows[name], h) for h in header[1:]) == expected, name
    # the XML form still gives the definition back whole
    root = etree.fromstring(ok(psbase("--db", url_of(store), "info", "io", "--xml", cwd=tmp_path)).encode())
    assert root.findtext("info/performed_by/organization") == "Analytical Engines Ltd."
    assert copy.deepcopy(store.definition("io")) == definition()
