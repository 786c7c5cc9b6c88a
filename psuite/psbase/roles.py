"""perfbase's user classes on PostgreSQL roles and grants.

Each archive (a database) has three group roles, psb_<db>_query,
psb_<db>_input and psb_<db>_admin, each a member of the one before, so an
input user inherits the query grants and an admin both:

  query  SELECT on every psbase table (and USAGE on the schema)
  input  also INSERT and UPDATE on psb_runs and the per-experiment tables:
         files runs, deletes (softly) and restores them
  admin  owns every psbase table and may CREATE in the schema: setup, update,
         purge (DELETE), and what input brings along (a psuite document's new
         events are new columns: ALTER TABLE is the owner's)

A user is a login role that is a member of exactly one class role of the
archive.  Tables are owned by the admin role rather than by whoever created
them, because ALTER TABLE (psbase update) is the owner's alone: any admin
user can then change any experiment.

Tables created later (setup) get their grants in the same transaction as
their CREATE (grant_new_tables), not through ALTER DEFAULT PRIVILEGES: default
privileges apply only to objects created by the roles they name, so each
admin user (and a superuser) would need an entry of its own, and they cannot
change a table's owner; a grant in setup works whoever creates the table, and
there is no moment in which a committed table lacks its grants.

SQLite has no users: its file permissions decide (refuse_sqlite)."""

from __future__ import annotations

import hashlib
import re

import sqlalchemy as sa

from psuite.errors import UsageError

CLASSES = ("query", "input", "admin")
WHAT = {"query": "may query", "input": "may query and add runs to", "admin": "may change"}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
# the per-experiment tables and psb_runs: what input users write
_INPUT_TABLES = re.compile(r"^psb_(runs|x\d+_(once|rows))$")


class RoleError(UsageError):
    """A user command that cannot be done (one line, exit 2)."""


def refuse_sqlite(path: str) -> RoleError:
    return RoleError(f"archive {path} is an SQLite file: SQLite has no users, the file's permissions decide "
                     "who may read or change it (chmod/chgrp); give a postgresql+psycopg:// URL with --db")


def class_role(db: str, cls: str) -> str:
    """The group role of one class in database db (role names are the
    server's, so each archive has its own; at most 63 bytes)."""
    base = f"psb_{db.lower()}"
    if len(base) > 50 or not re.fullmatch(r"[a-z0-9_]+", db.lower()):
        base = f"psb_{hashlib.sha256(db.encode()).hexdigest()[:16]}"
    return f"{base}_{cls}"


def check_user(name: str) -> str:
    if not _NAME.match(name) or name.lower().startswith("pg_") or name.lower().startswith("psb_"):
        raise RoleError(f"user name {name!r}: give a name of letters, digits and '_' (at most 63, not starting "
                        "with a digit, pg_ or psb_)")
    return name


def _q(conn: sa.Connection, ident: str) -> str:
    return conn.dialect.identifier_preparer.quote(ident)


def _role_exists(conn: sa.Connection, name: str) -> bool:
    return conn.execute(sa.text("SELECT 1 FROM pg_roles WHERE rolname = :n"), {"n": name}).first() is not None


def _tables(conn: sa.Connection) -> list[str]:
    return [r[0] for r in conn.execute(sa.text(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE 'psb\\_%'"))]


def has_classes(conn: sa.Connection, db: str) -> bool:
    return _role_exists(conn, class_role(db, "admin"))


def grant_tables(conn: sa.Connection, db: str, tables: list[str]) -> None:
    """The class grants on tables, and their ownership to the admin role."""
    roles = {c: _q(conn, class_role(db, c)) for c in CLASSES}
    for t in tables:
        qt = _q(conn, t)
        conn.execute(sa.text(f"ALTER TABLE {qt} OWNER TO {roles['admin']}"))
        conn.execute(sa.text(f"GRANT SELECT ON {qt} TO {roles['query']}"))
        if t == "psb_runs":  # filing adds runs; delete and restore flip their flag, nothing else
            conn.execute(sa.text(f"GRANT INSERT, UPDATE (deleted) ON {qt} TO {roles['input']}"))
        elif _INPUT_TABLES.match(t):  # values are added, never rewritten by an input user
            conn.execute(sa.text(f"GRANT INSERT ON {qt} TO {roles['input']}"))


def grant_new_tables(conn: sa.Connection, db: str, tables: list[str]) -> None:
    """Called by setup in its transaction: new tables carry the grants, if
    the archive has user classes at all."""
    if conn.dialect.name == "postgresql" and has_classes(conn, db):
        grant_tables(conn, db, tables)


def ensure_classes(conn: sa.Connection, db: str) -> None:
    """The three class roles of the archive with their grants on the schema
    and on every psbase table (idempotent)."""
    prev = None
    for cls in CLASSES:
        role = class_role(db, cls)
        if not _role_exists(conn, role):
            conn.execute(sa.text(f"CREATE ROLE {_q(conn, role)} NOLOGIN"))
        if prev is not None:
            conn.execute(sa.text(f"GRANT {_q(conn, prev)} TO {_q(conn, role)}"))
        prev = role
    roles = {c: _q(conn, class_role(db, c)) for c in CLASSES}
    conn.execute(sa.text(f"GRANT CONNECT ON DATABASE {_q(conn, db)} TO {roles['query']}"))
    conn.execute(sa.text(f"GRANT USAGE ON SCHEMA {_q(conn, _schema(conn))} TO {roles['query']}"))
    conn.execute(sa.text(f"GRANT CREATE ON SCHEMA {_q(conn, _schema(conn))} TO {roles['admin']}"))
    super_ = conn.execute(sa.text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")).scalar()
    if not super_:
        # the tables pass to the admin role: their creator keeps them by being an admin
        conn.execute(sa.text(f"GRANT {roles['admin']} TO CURRENT_USER"))
    grant_tables(conn, db, _tables(conn))


def _schema(conn: sa.Connection) -> str:
    return conn.execute(sa.text("SELECT current_schema()")).scalar()


def user_class(conn: sa.Connection, db: str, user: str) -> str | None:
    """The class a user holds directly in the archive (the highest, should
    there be several), None for none."""
    rows = conn.execute(sa.text(
        "SELECT g.rolname FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid "
        "JOIN pg_roles u ON u.oid = m.member WHERE u.rolname = :u"), {"u": user})
    have = {r[0] for r in rows}
    for cls in reversed(CLASSES):
        if class_role(db, cls) in have:
            return cls
    return None


def add(conn: sa.Connection, db: str, user: str, cls: str, group: bool = False) -> bool:
    """Give user the class (creating the login role if needed, replacing a
    class held before); True if the login role was created.  group: user is
    a group of the server (perfbase's <group>): its members inherit the
    class; a missing one is created without login."""
    if cls not in CLASSES:
        raise RoleError(f"--class {cls!r}: give one of {', '.join(CLASSES)}")
    check_user(user)
    ensure_classes(conn, db)
    created = not _role_exists(conn, user)
    if created:
        conn.execute(sa.text(f"CREATE ROLE {_q(conn, user)} {'NOLOGIN' if group else 'LOGIN'}"))
    for c in CLASSES:
        if c != cls:
            conn.execute(sa.text(f"REVOKE {_q(conn, class_role(db, c))} FROM {_q(conn, user)}"))
    conn.execute(sa.text(f"GRANT {_q(conn, class_role(db, cls))} TO {_q(conn, user)}"))
    return created


def remove(conn: sa.Connection, db: str, user: str) -> str:
    """Take the user's class away; the class it had."""
    check_user(user)
    had = user_class(conn, db, user) if has_classes(conn, db) else None
    if had is None:
        raise RoleError(f"user {user!r} has no class in archive {db}; list the users with psbase user ls")
    for c in CLASSES:
        conn.execute(sa.text(f"REVOKE {_q(conn, class_role(db, c))} FROM {_q(conn, user)}"))
    return had


def users(conn: sa.Connection, db: str) -> list[tuple[str, str]]:
    """(user, class) of every member of the archive's class roles, by name."""
    if not has_classes(conn, db):
        return []
    roles = {class_role(db, c): c for c in CLASSES}
    rows = conn.execute(sa.text(
        "SELECT u.rolname, g.rolname FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid "
        "JOIN pg_roles u ON u.oid = m.member WHERE g.rolname = ANY(:g) AND u.rolcanlogin"), {"g": list(roles)})
    best: dict[str, str] = {}
    for user, group in rows:  # a user with several classes (granted by hand) is shown with the highest
        best[user] = max(best.get(user, "query"), roles[group], key=CLASSES.index)
    return sorted(best.items())


def apply_access(conn: sa.Connection, db: str, given: list[tuple[str, str, str]],
                 revoked: list[tuple[str, str]] = ()) -> None:
    """perfbase's access lists (an experiment's <admin_access> ..., an update's <access_add>, <access_change>,
    <access_revoke>) as the archive's user classes: a user or group named gets that class (replacing one it
    had); a revoked one loses its class (one that has none is left as it is)."""
    for _kind, name in revoked:
        check_user(name)
        if has_classes(conn, db) and user_class(conn, db, name) is not None:
            remove(conn, db, name)
    for cls, kind, name in given:
        add(conn, db, name, cls, group=kind == "group")


def refusal(engine: sa.Engine, db: str, needs: str) -> str:
    """The one line for an operation the database refused: who the user is,
    what the class allows, and the grant that would allow it."""
    try:
        with engine.connect() as conn:
            user = conn.execute(sa.text("SELECT current_user")).scalar()
            cls = user_class(conn, db, user)
    except sa.exc.DBAPIError:
        user, cls = "this user", None
    if needs == "owner":  # psbase user: role management, beyond every user class
        what = f"{WHAT[cls]} archive {db}" if cls else f"has no access to archive {db}"
        return (f"user {user} {what}; giving and taking user classes needs the archive's owner (who ran psbase "
                "setup) or a server superuser: run psbase user as one of them")
    fix = f"an admin grants {needs} with psbase user add {user} --class {needs}"
    if cls is None:
        return f"user {user} has no {needs} access to archive {db}; {fix}"
    if cls == "query":
        return f"user {user} may only query archive {db}; {fix}"
    return f"user {user} {WHAT[cls]} archive {db} but not change its experiments; {fix}"
