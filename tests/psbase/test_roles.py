"""perfbase's user classes on PostgreSQL roles (psbase user): each class
connects as itself (trust authentication on the private server) and is
allowed or refused what its class says; a refused operation is one line
naming the class needed, exit 2, and changes nothing.  SQLite has no users."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa
from lxml import etree

from tests.conftest import one_line_error
from tests.psbase.conftest import new_pg_database
from tests.psbase.test_cli import ok, psbase
from tests.psbase.test_inputdesc import DATA, _expected

DEF = DATA / "b_eff_io.experiment.xml"
DESC = DATA / "b_eff_io.input.xml"
RUN1, RUN2, RUN3 = (DATA / f"bio_T10_N4_{x}_ufs_grisu_run{i}.sum" for x, i in
                    (("listbased", 1), ("listbased", 2), ("listless", 1)))


def as_user(url: str, user: str) -> str:
    return sa.make_url(url).set(username=user).render_as_string(hide_password=False)


def snapshot(url: str) -> dict[str, list]:
    """Every row of every psbase table, and the tables' columns: what a refused operation must leave."""
    eng = sa.create_engine(url)
    try:
        with eng.connect() as c:
            names = [r[0] for r in c.execute(sa.text(
                "SELECT tablename FROM pg_tables WHERE tablename LIKE 'psb%' ORDER BY 1"))]
            out = {}
            for n in names:
                cols = [r[0] for r in c.execute(sa.text(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = :t ORDER BY 1"), {"t": n})]
                out[n] = [cols, sorted(map(repr, c.execute(sa.text(f'SELECT * FROM "{n}"'))))]
            return out
    finally:
        eng.dispose()


@pytest.fixture
def archive(pg_server, tmp_path):
    """The b_eff_io experiment with one run, made by the server's superuser
    (psb), and a user of each class; (url, db name, {class: user})."""
    url = new_pg_database(pg_server)
    db = sa.make_url(url).database
    ok(psbase("--db", url, "setup", str(DEF), cwd=tmp_path))
    ok(psbase("--db", url, "input", "b_eff_io", "--desc", str(DESC), str(RUN1), cwd=tmp_path))
    users = {c: f"{c[0]}_{db}" for c in ("query", "input", "admin")}
    for cls, user in users.items():
        out = ok(psbase("--db", url, "user", "add", user, "--class", cls, cwd=tmp_path))
        assert out.startswith(f"psbase: user {user} (new login role) may ") and f"(class {cls})" in out
    return url, db, users


def refused(p, user: str, db: str, needs: str, cls: str) -> None:
    msg = one_line_error(p, "psbase")
    fix = f"an admin grants {needs} with psbase user add {user} --class {needs}"
    if cls == "query":
        assert msg == f"psbase: user {user} may only query archive {db}; {fix}"
    else:
        assert msg == f"psbase: user {user} may query and add runs to archive {db} but not change its " \
                      f"experiments; {fix}"


def b_eff_io_by_t(out: str) -> dict[int, tuple[float, int]]:
    """`psbase query b_eff_io b_eff_io --by T --stat mean,count`'s text table as {T: (mean, count)}."""
    rows = out.splitlines()[1:]
    return {int(t): (float(m), int(n)) for t, m, n in (r.split() for r in rows)}


def test_query_user_is_refused_adding_a_run_but_may_query(archive, tmp_path):
    url, db, users = archive
    q = users["query"]
    uq = as_user(url, q)
    before = snapshot(url)
    refused(psbase("--db", uq, "input", "b_eff_io", "--desc", str(DESC), str(RUN2), cwd=tmp_path), q, db, "input",
            "query")
    refused(psbase("--db", uq, "delete", "b_eff_io", "1", cwd=tmp_path), q, db, "input", "query")
    (tmp_path / "other.xml").write_text(DEF.read_text().replace("<name>b_eff_io</name>", "<name>other</name>", 1))
    refused(psbase("--db", uq, "setup", str(tmp_path / "other.xml"), cwd=tmp_path), q, db, "admin", "query")
    assert snapshot(url) == before
    # queries are allowed: the value is the one in the file, read here from its text
    want = _expected(RUN1)[0]
    got = b_eff_io_by_t(ok(psbase("--db", uq, "query", "b_eff_io", "b_eff_io", "--by", "T", "--stat", "mean,count",
                                  cwd=tmp_path)))
    assert got == {want["T"]: (pytest.approx(want["b_eff_io"]), 1)}
    assert ok(psbase("--db", uq, "ls", "b_eff_io", cwd=tmp_path)).splitlines()[1].split()[0] == "1"
    assert re.search(rf"^{q}\s+query$", ok(psbase("--db", uq, "user", "ls", cwd=tmp_path)), re.M)


def test_input_user_files_runs_but_may_not_change_experiments(archive, tmp_path):
    url, db, users = archive
    i = users["input"]
    ui = as_user(url, i)
    assert ok(psbase("--db", ui, "input", "b_eff_io", "--desc", str(DESC), str(RUN2), cwd=tmp_path)) == \
        "psbase: 1 run filed in b_eff_io (2)\n"
    # values are added, never rewritten, by an input user, even with SQL of its own
    eng = sa.create_engine(ui)
    try:
        for sql in ("UPDATE psb_x1_once SET psb_run = psb_run", "UPDATE psb_runs SET who = 'someone else'"):
            with pytest.raises(sa.exc.ProgrammingError, match="permission denied"), eng.begin() as c:
                c.execute(sa.text(sql))
    finally:
        eng.dispose()
    # who filed it: the database role, not the OS user the tests run as
    assert ok(psbase("--db", ui, "ls", "b_eff_io", cwd=tmp_path)).splitlines()[2].split()[3] == i
    ok(psbase("--db", ui, "delete", "b_eff_io", "2", cwd=tmp_path))
    ok(psbase("--db", ui, "restore", "b_eff_io", "2", cwd=tmp_path))
    before = snapshot(url)
    root = etree.fromstring(ok(psbase("--db", ui, "info", "b_eff_io", "--xml", cwd=tmp_path)).encode())
    extra = etree.SubElement(root, "result")
    etree.SubElement(extra, "name").text = "B_extra"
    etree.SubElement(extra, "datatype").text = "float"
    (tmp_path / "new.xml").write_bytes(etree.tostring(root))
    (tmp_path / "other.xml").write_text(DEF.read_text().replace("<name>b_eff_io</name>", "<name>other</name>", 1))
    for args in (("update", str(tmp_path / "new.xml")), ("setup", str(tmp_path / "other.xml")),
                 ("delete", "--purge", "b_eff_io", "1")):
        refused(psbase("--db", ui, *args, cwd=tmp_path), i, db, "admin", "input")
    msg = one_line_error(psbase("--db", ui, "user", "add", users["query"], "--class", "input", cwd=tmp_path),
                         "psbase")
    assert "needs the archive's owner" in msg  # user classes: the owner's, beyond every class
    assert snapshot(url) == before
    # both runs count: the two files' values, read here from their text
    a, b = _expected(RUN1)[0], _expected(RUN2)[0]
    got = b_eff_io_by_t(ok(psbase("--db", ui, "query", "b_eff_io", "b_eff_io", "--by", "T", "--stat", "mean,count",
                                  cwd=tmp_path)))
    assert got == {a["T"]: (pytest.approx((a["b_eff_io"] + b["b_eff_io"]) / 2), 2)}


def test_admin_user_may_do_all_and_new_experiments_carry_the_grants(archive, tmp_path):
    url, db, users = archive
    ua = as_user(url, users["admin"])
    ok(psbase("--db", ua, "input", "b_eff_io", "--desc", str(DESC), str(RUN2), cwd=tmp_path))
    root = etree.fromstring(ok(psbase("--db", ua, "info", "b_eff_io", "--xml", cwd=tmp_path)).encode())
    extra = etree.SubElement(root, "result")
    etree.SubElement(extra, "name").text = "B_extra"
    etree.SubElement(extra, "datatype").text = "float"
    (tmp_path / "new.xml").write_bytes(etree.tostring(root))
    assert ok(psbase("--db", ua, "update", str(tmp_path / "new.xml"), cwd=tmp_path)) == "psbase: added B_extra\n"
    ok(psbase("--db", ua, "delete", "--purge", "b_eff_io", "1", cwd=tmp_path))
    (tmp_path / "other.xml").write_text(DEF.read_text().replace("<name>b_eff_io</name>", "<name>other</name>", 1))
    ok(psbase("--db", ua, "setup", str(tmp_path / "other.xml"), cwd=tmp_path))
    # the experiment an admin made later: input users file runs into it, query users query it, and the
    # archive's owner (here: the server's superuser) keeps changing it
    ok(psbase("--db", as_user(url, users["input"]), "input", "other", "--desc", str(DESC), str(RUN3), cwd=tmp_path))
    want = _expected(RUN3)[0]
    got = b_eff_io_by_t(ok(psbase("--db", as_user(url, users["query"]), "query", "other", "b_eff_io", "--by", "T",
                                  "--stat", "mean,count", cwd=tmp_path)))
    assert got == {want["T"]: (pytest.approx(want["b_eff_io"]), 1)}
    (tmp_path / "other2.xml").write_text(
        (tmp_path / "new.xml").read_text().replace("<name>b_eff_io</name>", "<name>other</name>", 1))
    assert ok(psbase("--db", url, "update", str(tmp_path / "other2.xml"), cwd=tmp_path)) == "psbase: added B_extra\n"
    refused(psbase("--db", as_user(url, users["input"]), "delete", "--purge", "other", "1", cwd=tmp_path),
            users["input"], db, "admin", "input")


def test_user_class_changed_listed_and_removed(archive, tmp_path):
    url, db, users = archive
    q = users["query"]
    listing = ok(psbase("--db", url, "user", "ls", cwd=tmp_path))
    assert [line.split() for line in listing.splitlines()] == [
        ["user", "class"], *sorted([u, c] for c, u in users.items())]
    # add again with another class: the class changes (the role is not made again)
    assert ok(psbase("--db", url, "user", "add", q, "--class", "input", cwd=tmp_path)) == \
        f"psbase: user {q} may query and add runs to archive {db} (class input)\n"
    ok(psbase("--db", as_user(url, q), "input", "b_eff_io", "--desc", str(DESC), str(RUN2), cwd=tmp_path))
    assert re.search(rf"^{q}\s+input$", ok(psbase("--db", url, "user", "ls", cwd=tmp_path)), re.M)
    assert ok(psbase("--db", url, "user", "remove", q, cwd=tmp_path)) == \
        f"psbase: user {q} no longer has class input in archive {db}\n"
    assert q not in ok(psbase("--db", url, "user", "ls", cwd=tmp_path))
    msg = one_line_error(psbase("--db", as_user(url, q), "ls", "b_eff_io", cwd=tmp_path), "psbase")
    assert msg == f"psbase: user {q} has no query access to archive {db}; an admin grants query with " \
                  f"psbase user add {q} --class query"
    assert "has no class in archive" in one_line_error(psbase("--db", url, "user", "remove", q, cwd=tmp_path),
                                                       "psbase")
    assert "user name 'pg_x'" in one_line_error(
        psbase("--db", url, "user", "add", "pg_x", "--class", "query", cwd=tmp_path), "psbase")


def test_sqlite_archive_has_no_users(tmp_path):
    # SQLite on purpose: user classes are PostgreSQL roles; an SQLite file refuses them
    ok(psbase("setup", str(DEF), cwd=tmp_path))
    for args in (("user", "ls"), ("user", "add", "alice", "--class", "query"), ("user", "remove", "alice")):
        msg = one_line_error(psbase(*args, cwd=tmp_path), "psbase")
        assert msg.startswith("psbase: archive psbase.db is an SQLite file: SQLite has no users"), msg
    # refused without an archive file too, and none is created
    msg = one_line_error(psbase("--db", str(tmp_path / "none.db"), "user", "ls", cwd=tmp_path), "psbase")
    assert "SQLite has no users" in msg and not (tmp_path / "none.db").exists()


def test_user_classes_are_given_by_the_owner_only(archive, tmp_path):
    url, db, users = archive
    admin = users["admin"]
    msg = one_line_error(psbase("--db", as_user(url, admin), "user", "add", "newcomer", "--class", "query",
                                cwd=tmp_path), "psbase")
    assert msg == (f"psbase: user {admin} may change archive {db}; giving and taking user classes needs the "
                   "archive's owner (who ran psbase setup) or a server superuser: run psbase user as one of them")
    assert "newcomer" not in ok(psbase("--db", url, "user", "ls", cwd=tmp_path))
