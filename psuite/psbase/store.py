"""The archive: experiments and their runs in an SQL database through
SQLAlchemy Core, one code path for SQLite (the default: a file) and
PostgreSQL (postgresql+psycopg://... URLs).

Tables:
  psb_experiments  one row per experiment, its definition XML
  psb_variables    the variables of each experiment (for listing and queries)
  psb_runs         one row per run: index, date filed, who, sources, content hash, deleted flag,
                   perfbase's performed date and synopsis (columns added to an older archive when opened)
  psb_psets        perfbase's parameter sets: per experiment and set, a text value per parameter
                   (created in an older archive when opened)
  psb_purged       per experiment, the highest run index purged: never given to a new run
                   (created in an older archive when opened, or by the first purge)
  psb_attachments  perfbase's attachments: XML files (input descriptions, queries, definitions) kept with
                   an experiment under a name, with their type, synopsis and description
                   (created in an older archive when opened)
  psb_x<ID>_once   per experiment: one row per run, one typed column per once-variable
  psb_x<ID>_rows   per experiment: the data sets, one row per data-set row, one typed
                   column per multiple-occurrence variable

Why one once-table per experiment with a column per variable, rather than
one generic (run, variable, value) table: an aggregating query over runs
("task clock against ranks, averaged over repetitions") is then a plain
GROUP BY over native typed columns of a single table, which both databases
do with an index scan; a generic value table needs one self-join (or a
pivot) per parameter and casts from text.  Data-set rows follow the same
reasoning and are indexed by run.

Durations are stored as float seconds (aggregatable everywhere), versions
as their text.  Each import, update and deletion is one transaction: a
failure leaves the archive as it was."""

from __future__ import annotations

import datetime as _dt
import getpass
import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import make_url

from psuite.cli_common import one_line
from psuite.errors import InputError, UsageError
from psuite.psbase import definition as defmod
from psuite.psbase import roles
from psuite.psbase.model import Definition, RunData, Variable, Version, convert, given_twice

DEFAULT_FILE = "psbase.db"
RUN = "psb_run"  # the run column of the per-experiment tables
SEQ = "psb_seq"  # the row number within a run's data set
_INSUFFICIENT_PRIVILEGE = "42501"  # PostgreSQL's SQLSTATE for "permission denied" and "must be owner"
# psycopg logs a second error met while closing a pipeline after the first (a refused COPY batch); psbase
# reports the first in one line, and Python's last-resort handler would print the second on stderr
logging.getLogger("psycopg").addHandler(logging.NullHandler())

_LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's sqlstate when lock_timeout ends a wait
_LOCK_CLASS = 0x70736200  # "psb\0": the first key of psbase's advisory locks (the second: the experiment)

# perfbase's run meta data beyond psbase's own: the date the run was performed, its synopsis
_RUN_META = (("performed", sa.DateTime), ("synopsis", sa.Text))

_SQL_TYPES = {
    "integer": sa.BigInteger, "float": sa.Float(precision=53), "string": sa.String(255), "text": sa.Text,
    "date": sa.Date, "time": sa.Time, "duration": sa.Float(precision=53), "timestamp": sa.DateTime,
    "boolean": sa.Boolean, "version": sa.String(255),
}


class StoreError(InputError):
    """The archive cannot be opened or does not hold what was asked for."""


@dataclass
class RunInfo:
    index: int
    date: _dt.datetime
    who: str
    sources: list[str]
    content_hash: str
    deleted: bool
    performed: _dt.datetime | None = None  # when the run was performed (perfbase's -p, -m), local time; None:
    # when it was filed (date)
    synopsis: str | None = None  # perfbase's input -s
    values: dict[str, object] = field(default_factory=dict)
    rows: list[dict[str, object]] = field(default_factory=list)


def default_url() -> str:
    return os.environ.get("PSBASE_DB") or DEFAULT_FILE


def as_url(db: str) -> sa.URL:
    """A database URL, or a plain file name meaning an SQLite file."""
    if "://" not in db:
        return sa.URL.create("sqlite", database=db)
    try:
        return make_url(db)
    except sa.exc.ArgumentError:
        raise UsageError(f"--db {db!r} is not a database URL; give a file name or e.g. "
                         "postgresql+psycopg://user@host/dbname") from None


def _shown(url: sa.URL) -> str:
    return url.database if url.get_backend_name() == "sqlite" else url.render_as_string(hide_password=True)


class Store:
    """An open archive.  create=False refuses a missing SQLite file rather
    than creating an empty archive under a mistyped name."""

    def __init__(self, db: str | None = None, create: bool = False) -> None:
        self.url = as_url(db or default_url())
        self.name = _shown(self.url)
        self._new_file: str | None = None  # the SQLite file this Store creates (discard_new_file)
        backend = self.url.get_backend_name()
        if backend == "sqlite":
            path = self.url.database or ""
            if not path or path == ":memory:":
                raise UsageError("an in-memory archive keeps nothing; give a file name or a server URL")
            if not create and not os.path.exists(path):
                raise StoreError(f"no archive {path}; create one with `psbase setup DEFINITION.xml` "
                                 "or name an existing one with --db or PSBASE_DB")
            if os.path.isdir(path):
                raise StoreError(f"archive {path} is a directory; give a file name")
            if create and not os.path.lexists(path):
                self._new_file = path
        elif backend != "postgresql":
            raise UsageError(f"--db: {backend} databases are not supported; use an SQLite file or a "
                             "postgresql+psycopg:// URL")
        try:
            self.engine = sa.create_engine(self.url)
        except (sa.exc.ArgumentError, ModuleNotFoundError) as exc:
            raise UsageError(f"--db {self.name}: {one_line(exc)}") from None
        if backend == "sqlite":
            _serialize_sqlite(self.engine)
        else:
            _bound_lock_waits(self.engine)
        self.meta = sa.MetaData()
        self.experiments = sa.Table(
            "psb_experiments", self.meta,
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("name", sa.String(63), nullable=False, unique=True),
            sa.Column("definition", sa.Text, nullable=False),
            sa.Column("created", sa.DateTime, nullable=False))
        self.variables = sa.Table(
            "psb_variables", self.meta,
            sa.Column("experiment", sa.Integer, sa.ForeignKey("psb_experiments.id", ondelete="CASCADE"),
                      primary_key=True),
            sa.Column("name", sa.String(63), primary_key=True),
            sa.Column("position", sa.Integer, nullable=False),
            sa.Column("datatype", sa.String(16), nullable=False),
            sa.Column("occurrence", sa.String(16), nullable=False),
            sa.Column("is_result", sa.Boolean, nullable=False),
            sa.Column("unit", sa.String(255), nullable=False))
        self.runs = _runs_table(self.meta, with_meta=True)
        self.psets = sa.Table(  # a set's row with variable "" says that it exists (it may hold no value)
            "psb_psets", self.meta,
            sa.Column("experiment", sa.Integer, sa.ForeignKey("psb_experiments.id", ondelete="CASCADE"),
                      primary_key=True),
            sa.Column("name", sa.String(255), primary_key=True),
            sa.Column("variable", sa.String(63), primary_key=True),
            sa.Column("value", sa.Text, nullable=False))
        # the highest run index purged per experiment: a purged run's number is never given again, so a
        # number written down (a plot, a note, another archive) names one run for ever
        self.purged = sa.Table(
            "psb_purged", self.meta,
            sa.Column("experiment", sa.Integer, sa.ForeignKey("psb_experiments.id", ondelete="CASCADE"),
                      primary_key=True),
            sa.Column("highest", sa.Integer, nullable=False))
        self.has_purged = True  # psb_purged exists (an archive made before it may lack it)
        # perfbase's attachments: the files themselves, so a description or query travels with the experiment
        self.attachments = sa.Table(
            "psb_attachments", self.meta,
            sa.Column("experiment", sa.Integer, sa.ForeignKey("psb_experiments.id", ondelete="CASCADE"),
                      primary_key=True),
            sa.Column("name", sa.String(255), primary_key=True),
            sa.Column("type", sa.String(32), nullable=False),
            sa.Column("filename", sa.Text, nullable=False),
            sa.Column("synopsis", sa.Text, nullable=False),
            sa.Column("description", sa.Text, nullable=False),
            sa.Column("creator", sa.String(255), nullable=False),
            sa.Column("created", sa.DateTime, nullable=False),
            sa.Column("content", sa.Text, nullable=False))
        if create:
            try:
                self._run(lambda: self.meta.create_all(self.engine), needs="admin")
            except BaseException:
                self.discard_new_file()
                raise
        else:
            self._check_schema()
            self._add_run_meta()

    # -- plumbing -------------------------------------------------------

    def _run(self, fn, needs: str | Callable[[], str] | None = None):
        """fn(), with database failures as one StoreError line; a refusal for
        want of privileges names the user class needed (roles.CLASSES; a
        callable when fn finds out as it goes)."""
        try:
            return fn()
        except sa.exc.ProgrammingError as exc:
            if needs and getattr(exc.orig, "sqlstate", None) == _INSUFFICIENT_PRIVILEGE:
                want = needs() if callable(needs) else needs
                raise StoreError(roles.refusal(self.engine, self.url.database or "", want)) from None
            raise StoreError(f"archive {self.name}: {_db_problem(exc)}") from None
        except sa.exc.OperationalError as exc:
            if getattr(exc.orig, "sqlstate", None) == _LOCK_NOT_AVAILABLE:
                raise StoreError(
                    f"archive {self.name}: waited {lock_wait_seconds():g} s for a lock another session holds "
                    "(an open transaction or an advisory lock; see pg_locks); nothing was changed: retry when "
                    "it ends, or set PSBASE_LOCK_TIMEOUT (seconds) to wait longer") from None
            raise StoreError(f"archive {self.name}: {_db_problem(exc)}") from None
        except sa.exc.DatabaseError as exc:
            raise StoreError(f"archive {self.name}: {_db_problem(exc)}") from None
        except UnicodeEncodeError as exc:  # a name or value given in bytes that are not UTF-8
            bad = exc.object[exc.start:exc.end].encode("utf-8", "surrogateescape")
            raise StoreError(f"a name or value holds bytes that are not UTF-8 ({bad!r}); give it in UTF-8") from None

    def _check_schema(self) -> None:
        def check() -> None:
            if not sa.inspect(self.engine).has_table("psb_experiments"):
                raise StoreError(f"{self.name} is not a psbase archive (no psb_experiments table); "
                                 "name another with --db")
        self._run(check)

    def _add_run_meta(self) -> None:
        """An archive made before runs had a performed date and a synopsis gets their (empty) columns; a
        user who may not change it (PostgreSQL) reads it without them and files no run that has them."""
        inspector = self._run(lambda: sa.inspect(self.engine))
        for table in (self.psets, self.purged, self.attachments):
            if not self._run(lambda t=table: inspector.has_table(t.name)):
                try:
                    with self.engine.begin() as conn:
                        table.create(conn, checkfirst=True)
                        roles.grant_new_tables(conn, self.url.database or "", [table.name])
                except sa.exc.DBAPIError:
                    # a user who may not: parameter sets are refused as the database refuses them; without
                    # psb_purged nothing was purged since the archive was made by an older psbase
                    self.has_purged = table is not self.purged
        have = {c["name"] for c in self._run(lambda: inspector.get_columns("psb_runs"))}
        lacking = [(n, t) for n, t in _RUN_META if n not in have]
        if not lacking:
            return
        try:
            with self.engine.begin() as conn:
                prep = conn.dialect.identifier_preparer
                for n, t in lacking:
                    kind = t().compile(dialect=conn.dialect)
                    conn.execute(sa.text(f"ALTER TABLE psb_runs ADD COLUMN {prep.quote(n)} {kind}"))
        except sa.exc.DBAPIError:
            self.runs = _runs_table(sa.MetaData(), with_meta=False)  # read as it is
            self.run_meta = False

    run_meta = True  # psb_runs has the performed and synopsis columns

    def close(self) -> None:
        self.engine.dispose()

    def discard_new_file(self) -> None:
        """Remove the SQLite archive this Store created, with its journal: a setup that failed (a full
        disk, a definition refused) leaves no empty archive behind.  A file that existed is kept."""
        self.engine.dispose()
        if self._new_file:
            for p in (self._new_file, *(self._new_file + s for s in ("-journal", "-wal", "-shm"))):
                try:
                    os.unlink(p)
                except FileNotFoundError:
                    pass
            self._new_file = None

    def _experiment_id(self, conn: sa.Connection, name: str) -> tuple[int, Definition]:
        row = conn.execute(sa.select(self.experiments.c.id, self.experiments.c.definition)
                           .where(self.experiments.c.name == name)).first()
        if row is None:
            known = [r[0] for r in conn.execute(sa.select(self.experiments.c.name).order_by("name"))]
            raise StoreError(f"no experiment {name!r} in {self.name}; it has: {', '.join(known) or 'none'} "
                             "(create it with psbase setup)")
        return row[0], defmod.parse_bytes(row[1].encode(), f"stored definition of {name}")

    def _tables(self, exp_id: int, d: Definition) -> tuple[sa.Table, sa.Table]:
        meta = sa.MetaData()
        # autoincrement=False: the run index is psbase's, no sequence (PostgreSQL's SERIAL) to grant
        once = sa.Table(f"psb_x{exp_id}_once", meta, sa.Column(RUN, sa.Integer, primary_key=True,
                                                               autoincrement=False),
                        *(sa.Column(v.name, _SQL_TYPES[v.datatype]) for v in d.variables
                          if v.occurrence == "once"))
        rows = sa.Table(f"psb_x{exp_id}_rows", meta, sa.Column(RUN, sa.Integer, nullable=False),
                        sa.Column(SEQ, sa.Integer, nullable=False),
                        *(sa.Column(v.name, _SQL_TYPES[v.datatype]) for v in d.variables
                          if v.occurrence == "multiple"),
                        sa.PrimaryKeyConstraint(RUN, SEQ))
        return once, rows

    def _dataset_index(self, exp_id: int, d: Definition, rows: sa.Table) -> sa.Index | None:
        """The data-set table's index by run, then its parameters, then its
        results: a query's first step (sums per run and data-set parameter)
        reads it in order without the table (covering) and without a sort.
        Measured with bench/psbase.py: SQLite's mean per (nodes, chunk) over
        10 million rows from 5.0 s to 1.1 s.  Text columns stay out (a
        PostgreSQL index entry holds at most about 2.7 kB), and so does what
        passes 32 columns (PostgreSQL's limit) or 2,000 bytes."""
        cols, width = [rows.c[RUN]], 8
        ordered = [v for v in d.variables if v.occurrence == "multiple" and not v.is_result] + \
                  [v for v in d.variables if v.occurrence == "multiple" and v.is_result]
        for v in ordered:
            w = _INDEX_WIDTH.get(v.datatype)
            if w is None or len(cols) == 32 or width + w > 2000:
                continue
            cols.append(rows.c[v.name])
            width += w
        return sa.Index(f"psb_x{exp_id}_rows_by_run", *cols) if len(cols) > 1 else None

    def tables(self, name: str) -> tuple[sa.Table, sa.Table]:
        """The once-table and the data-set table of an experiment (for queries)."""
        with self.engine.connect() as conn:
            exp_id, d = self._run(lambda: self._experiment_id(conn, name), needs="query")
        return self._tables(exp_id, d)

    def _variable_rows(self, exp_id: int, d: Definition) -> list[dict]:
        return [dict(experiment=exp_id, name=v.name, position=i, datatype=v.datatype, occurrence=v.occurrence,
                     is_result=v.is_result, unit=v.unit) for i, v in enumerate(d.variables)]

    # -- experiments ----------------------------------------------------

    def setup(self, d: Definition) -> None:
        if isinstance(d, defmod.ExperimentUpdate):
            raise StoreError(f"{d.source} is an experiment update, not a definition; apply it with psbase update")

        self._check_access(d.access, d.name)

        def go() -> None:
            with self.engine.begin() as conn:
                if d.access:  # the classes first: the new tables then get their grants
                    roles.apply_access(conn, self.url.database or "", d.access)
                self._create_experiment(conn, d, _now(), "change it with psbase update")
        self._run(go, needs="admin")

    def _create_experiment(self, conn: sa.Connection, d: Definition, created: _dt.datetime,
                           if_exists: str) -> tuple[int, sa.Table, sa.Table]:
        """An experiment's rows and tables (setup, restore): its id and its once and data-set tables; a
        StoreError ending with if_exists (the fix) when one of that name exists."""
        if conn.execute(sa.select(self.experiments.c.id).where(self.experiments.c.name == d.name)).first():
            raise StoreError(f"experiment {d.name!r} exists in {self.name}; {if_exists}")
        exp_id = conn.execute(self.experiments.insert().values(
            name=d.name, definition=defmod.to_bytes(d).decode(), created=created)).inserted_primary_key[0]
        conn.execute(self.variables.insert(), self._variable_rows(exp_id, d))
        once, rows = self._tables(exp_id, d)
        once.create(conn)
        rows.create(conn)
        index = self._dataset_index(exp_id, d, rows)
        if index is not None:
            index.create(conn)
        roles.grant_new_tables(conn, self.url.database or "", [once.name, rows.name])
        return exp_id, once, rows

    def definition(self, name: str) -> Definition:
        with self.engine.connect() as conn:
            return self._run(lambda: self._experiment_id(conn, name), needs="query")[1]

    def list_experiments(self) -> list[tuple[str, str, int, int]]:
        """(name, synopsis, runs, deleted runs) per experiment."""
        e, r = self.experiments, self.runs
        q = (sa.select(e.c.name, e.c.definition,
                       sa.func.count(r.c.idx).filter(r.c.deleted.is_(False)),
                       sa.func.count(r.c.idx).filter(r.c.deleted.is_(True)))
             .select_from(e.outerjoin(r, r.c.experiment == e.c.id)).group_by(e.c.id).order_by(e.c.name))
        with self.engine.connect() as conn:
            rows = self._run(lambda: conn.execute(q).all(), needs="query")
        return [(n, defmod.parse_bytes(x.encode()).synopsis, a, b) for n, x, a, b in rows]

    def update(self, new: Definition | defmod.ExperimentUpdate, drop: bool = False) -> list[str]:
        """Change an experiment's definition: variables added, changed or
        removed.  A variable's occurrence changes only while no run has a
        value for it, its datatype only if every stored value is one of the
        new type (converted as its text would be), its valid values only if
        they hold every stored value; a new variable's default is given to
        the runs there are (to every data-set row for a data-set variable).
        Refusals name the values and their runs; one transaction: a refused
        update changes nothing.  A variable removed while runs have values
        for it is refused unless drop (its values go with it).  Returns what
        changed, one line each.  perfbase's <experiment_update> (new) is
        applied to the definition in the archive, its renames first."""

        given = new.access_given if isinstance(new, defmod.ExperimentUpdate) else new.access
        revoked = new.access_revoked if isinstance(new, defmod.ExperimentUpdate) else []
        self._check_access(given + revoked, new.name)

        def go() -> list[str]:
            with self.engine.begin() as conn:
                access = []
                if given or revoked:
                    roles.apply_access(conn, self.url.database or "", given, revoked)
                    access = [f"user {n} has no class in archive {self.url.database}" for _, n in revoked] + \
                        [f"{'group' if k == 'group' else 'user'} {n} {roles.WHAT[c]} archive {self.url.database} "
                         f"(class {c})" for c, k, n in given]
                if isinstance(new, defmod.ExperimentUpdate):
                    exp_id, old = self._experiment_id(conn, new.name)
                    d, renames = new.apply(old)
                    changes = self._rename(conn, exp_id, old, renames) + self._update(conn, d, drop)
                else:
                    changes = self._update(conn, new, drop)
                return changes + access
        return self._run(go, needs="admin")

    def _check_access(self, access: list, experiment: str) -> None:
        """perfbase's access lists need users: a PostgreSQL archive's (roles); SQLite has none."""
        if access and self.url.get_backend_name() == "sqlite":
            raise StoreError(f"experiment {experiment}: perfbase's access lists (<admin_access>, <access_add>, "
                             "...) give database users rights, and an SQLite archive has no users (its file's "
                             "permissions decide); remove them, or use a postgresql+psycopg:// archive (--db)")

    def _update(self, conn: sa.Connection, new: Definition, drop: bool = False) -> list[str]:
        exp_id, old = self._experiment_id(conn, new.name)
        once, rows = self._tables(exp_id, old)
        changes: list[str] = []
        old_vars = {v.name: v for v in old.variables}
        new_vars = {v.name: v for v in new.variables}
        converted: dict[str, list[dict]] = {}  # a variable's stored values in its new datatype, by row
        for v in old.variables:  # the refusals first: a refused update changes nothing
            n = new_vars.get(v.name)
            table = once if v.occurrence == "once" else rows
            if n is None:
                runs = [] if drop else conn.execute(
                    sa.select(table.c[RUN]).distinct().where(table.c[v.name].is_not(None))
                    .order_by(table.c[RUN])).scalars().all()
                if runs:  # its values would go for good
                    raise StoreError(f"the new definition removes {v.name!r}, which run{'s' if len(runs) > 1 else ''}"
                                     f" {_some(runs, 10)} {'have' if len(runs) > 1 else 'has'} values for; give "
                                     "--force to drop them with it (nothing was changed)")
                continue
            if (n.datatype, n.occurrence) == (v.datatype, v.occurrence):
                if n.valid and n.valid != v.valid:
                    self._check_valid(conn, table, n)
            elif n.occurrence != v.occurrence:
                runs = conn.execute(sa.select(table.c[RUN]).distinct().where(table.c[v.name].is_not(None))
                                    .order_by(table.c[RUN])).scalars().all()
                if runs:
                    raise StoreError(f"variable {v.name!r} has values in run{'s' if len(runs) > 1 else ''} "
                                     f"{_some(runs, 10)}; its occurrence cannot change while it has values; "
                                     "add a variable under a new name instead (nothing was changed)")
            else:
                converted[v.name] = self._converted(conn, table, v, n)
        new_index = self._dataset_index(exp_id, new, self._tables(exp_id, new)[1])
        old_key = _index_key(self._dataset_index(exp_id, old, rows))
        # a retyped column is a new one (_retype), even where the SQL type stays (duration and float)
        rebuild = old_key != _index_key(new_index) or any(c in converted for c, _ in old_key)
        if rebuild:  # before the columns change: SQLite drops no column that an index holds
            name = conn.dialect.identifier_preparer.quote(f"psb_x{exp_id}_rows_by_run")
            conn.execute(sa.text(f"DROP INDEX IF EXISTS {name}"))
        for v in old.variables:
            n = new_vars.get(v.name)
            if n is None:
                self._drop(conn, once if v.occurrence == "once" else rows, v.name)
                changes.append(f"removed {v.name}")
            elif (n.datatype, n.occurrence) != (v.datatype, v.occurrence):
                table = once if v.occurrence == "once" else rows
                values = converted.get(v.name)
                if values:
                    self._retype(conn, table, n, values)
                else:
                    self._drop(conn, table, v.name)
                    self._add(conn, exp_id, n)
                done = f" ({len(values)} stored value{'s' if len(values) > 1 else ''} converted)" if values else ""
                changes.append(f"changed {v.name}: {v.datatype}/{v.occurrence} -> "
                               f"{n.datatype}/{n.occurrence}{done}")
            elif n != v:
                changes.append(f"changed {v.name}")
        kept = {k for k in old_vars if k in new_vars}  # a renamed variable (even in case only) is removed and added
        for n in new.variables:
            if n.name in kept:
                continue
            self._add(conn, exp_id, n)
            changes.append(f"added {n.name}{self._fill_default(conn, exp_id, n)}")
        if (new.synopsis, new.description, new.performed_by, new.project) != \
                (old.synopsis, old.description, old.performed_by, old.project):
            changes.append("changed the meta information")
        if rebuild and new_index is not None:
            new_index.create(conn)
        conn.execute(self.experiments.update().where(self.experiments.c.id == exp_id)
                     .values(definition=defmod.to_bytes(new).decode()))
        conn.execute(self.variables.delete().where(self.variables.c.experiment == exp_id))
        conn.execute(self.variables.insert(), self._variable_rows(exp_id, new))
        return changes

    def _rename(self, conn: sa.Connection, exp_id: int, old: Definition, renames: dict[str, str]) -> list[str]:
        """Variables renamed, their columns with them (in the update's transaction)."""
        if not renames:
            return []
        prep = conn.dialect.identifier_preparer
        for v in old.variables:
            if v.name in renames:
                table = f"psb_x{exp_id}_{'once' if v.occurrence == 'once' else 'rows'}"
                conn.execute(sa.text(f"ALTER TABLE {prep.quote(table)} RENAME COLUMN {prep.quote(v.name)} "
                                     f"TO {prep.quote(renames[v.name])}"))
                v.name = renames[v.name]
        conn.execute(self.experiments.update().where(self.experiments.c.id == exp_id)
                     .values(definition=defmod.to_bytes(old).decode()))
        return [f"renamed {a} to {b}" for a, b in renames.items()]

    def _add(self, conn: sa.Connection, exp_id: int, v: Variable) -> None:
        table = f"psb_x{exp_id}_{'once' if v.occurrence == 'once' else 'rows'}"
        col = sa.Column(v.name, _SQL_TYPES[v.datatype])
        prep = conn.dialect.identifier_preparer
        ddl = col.type.compile(dialect=conn.dialect)
        conn.execute(sa.text(f"ALTER TABLE {prep.quote(table)} ADD COLUMN {prep.quote(v.name)} {ddl}"))

    def _check_valid(self, conn: sa.Connection, table: sa.Table, n: Variable) -> None:
        """Refuse new valid values of n that values stored in table are not
        among, naming the values and their runs (deleted ones too: they can
        be restored)."""
        try:
            allowed = [to_db(n, convert(Variable(n.name, n.datatype), t)) for t in n.valid]
        except UsageError as exc:
            raise StoreError(f"variable {n.name!r}: {exc}") from None
        col, run = table.c[n.name], table.c[RUN]
        found = conn.execute(sa.select(col, run).where(col.is_not(None), col.not_in(allowed))
                             .group_by(col, run).order_by(run, col)).all()
        if not found:
            return
        runs: dict[object, list[int]] = {}
        for value, idx in found:
            runs.setdefault(value, []).append(idx)
        shown = [f"{str(from_db(n, x))!r} (run{'s' if len(ix) > 1 else ''} {_some(ix, 10)})"
                 for x, ix in list(runs.items())[:5]]
        more = f" and {len(runs) - 5} more values" if len(runs) > 5 else ""
        many = len(runs) > 1
        raise StoreError(f"variable {n.name!r}: stored value{'s' if many else ''} {', '.join(shown)}{more} "
                         f"{'are' if many else 'is'} not among its new valid values {', '.join(n.valid)}; add "
                         f"{'them' if many else 'it'} to the <valid> values or remove those runs (psbase delete "
                         "--purge); nothing was changed")

    def _converted(self, conn: sa.Connection, table: sa.Table, v: Variable, n: Variable) -> list[dict]:
        """The stored values of v as values of n's datatype (each through its
        text, as an input would give it: convert), keyed by row; a value that
        is not one of n's (or not among its valid values) refuses the change,
        naming the values and their runs."""
        seq = SEQ in table.c
        col = table.c[v.name]
        keys = [table.c[RUN], *([table.c[SEQ]] if seq else [])]
        cache: dict[object, object] = {}
        bad: dict[object, set[int]] = {}
        out = []
        for *key, x in conn.execute(sa.select(*keys, col).where(col.is_not(None))):
            if x not in cache:
                try:
                    cache[x] = to_db(n, convert(n, _as_text(from_db(v, x))))
                except UsageError:
                    cache[x] = _REFUSED
            if cache[x] is _REFUSED:
                bad.setdefault(x, set()).add(key[0])
            else:
                out.append({"k_run": key[0], "k_seq": key[1] if seq else None, "k_new": cache[x]})
        if bad:
            shown = [f"{str(from_db(v, x))!r} (run{'s' if len(ix) > 1 else ''} {_some(sorted(ix), 10)})"
                     for x, ix in sorted(bad.items(), key=lambda item: min(item[1]))[:5]]
            more = f" and {len(bad) - 5} more values" if len(bad) > 5 else ""
            many = len(bad) > 1
            among = f" among its valid values {', '.join(n.valid)}" if n.valid else ""
            raise StoreError(f"variable {v.name!r}: stored value{'s' if many else ''} {', '.join(shown)}{more} "
                             f"{'are' if many else 'is'} not {n.datatype}{among}, so its datatype cannot change "
                             f"from {v.datatype} to {n.datatype}; keep {v.datatype}, or add a variable under a new "
                             "name (nothing was changed)")
        return out

    def _retype(self, conn: sa.Connection, table: sa.Table, n: Variable, values: list[dict]) -> None:
        """n's column in its new datatype, with the values _converted gave:
        a new column filled row by row (by primary key), the old one dropped,
        the new one renamed (both databases change a column's type in place
        only by casts of their own, which are not psbase's conversions)."""
        q = conn.dialect.identifier_preparer.quote
        tmp = "psb_retyped"
        kind = _SQL_TYPES[n.datatype]
        ddl = sa.Column(tmp, kind).type.compile(dialect=conn.dialect)
        conn.execute(sa.text(f"ALTER TABLE {q(table.name)} ADD COLUMN {q(tmp)} {ddl}"))
        t = sa.table(table.name, sa.column(RUN), sa.column(SEQ), sa.column(tmp, kind))
        where = [t.c[RUN] == sa.bindparam("k_run")]
        if SEQ in table.c:
            where.append(t.c[SEQ] == sa.bindparam("k_seq"))
        conn.execute(t.update().where(*where).values({tmp: sa.bindparam("k_new")}), values)
        self._drop(conn, table, n.name)
        conn.execute(sa.text(f"ALTER TABLE {q(table.name)} RENAME COLUMN {q(tmp)} TO {q(n.name)}"))

    def _fill_default(self, conn: sa.Connection, exp_id: int, n: Variable) -> str:
        """A new variable's default given to the runs there are (for a data-set
        variable: to every data-set row); what was done, for update's report."""
        if not n.default:  # none, or an empty <default>: no value to give
            return ""
        try:
            value = to_db(n, convert(n, n.default))
        except UsageError as exc:
            raise StoreError(f"variable {n.name!r}: default: {exc}") from None
        kind = "once" if n.occurrence == "once" else "rows"
        table = sa.table(f"psb_x{exp_id}_{kind}", sa.column(n.name, _SQL_TYPES[n.datatype]))
        done = conn.execute(table.update().values({n.name: value})).rowcount
        if not done:
            return ""
        what = "run" if kind == "once" else "data-set row"
        return f" (its default {n.default} given to {done} {what}{'s' if done != 1 else ''})"

    def _drop(self, conn: sa.Connection, table: sa.Table, column: str) -> None:
        prep = conn.dialect.identifier_preparer
        conn.execute(sa.text(f"ALTER TABLE {prep.quote(table.name)} DROP COLUMN {prep.quote(column)}"))

    # -- runs -------------------------------------------------------------

    def add_runs(self, name: str, runs: list[RunData], force: bool = False, who: str | None = None,
                 new_variables: list[Variable] | None = None, synopsis: str | None = None,
                 performed: Sequence[_dt.datetime | None] = ()) -> list[int]:
        """Store runs in one transaction; returns their indexes.  A run whose
        content hash is already an active run of the experiment is refused unless force.
        new_variables: variables the runs bring that the experiment lacks
        (psuite's events), added in the same transaction.  synopsis: of every
        run; performed: the date of each run as given (local time; missing or
        None: none, the run was performed when it was filed)."""
        needs = "input"
        if (synopsis is not None or any(performed)) and not self.run_meta:
            raise StoreError(f"archive {self.name} predates run synopses and performed dates; open it once as "
                             "its owner (any psbase command adds them), or file without -s, -p and -m")
        dates = list(performed) + [None] * (len(runs) - len(performed))

        def go() -> list[int]:
            nonlocal needs
            with self.engine.begin() as conn:
                exp_id, d = self._experiment_id(conn, name)
                # who filed: on a shared server the database role the archive knows, else the OS user
                filer = who or (conn.execute(sa.text("SELECT current_user")).scalar()
                                if conn.dialect.name == "postgresql" else _user())
                # PostgreSQL: imports into one experiment queue up here, so two never take the same
                # next index (SQLite's BEGIN IMMEDIATE has already serialized them); an advisory lock,
                # not SELECT ... FOR UPDATE, which would need UPDATE on psb_experiments (admin's)
                if conn.dialect.name == "postgresql":
                    conn.execute(sa.select(sa.func.pg_advisory_xact_lock(_LOCK_CLASS, exp_id)))
                have = {v.name.lower() for v in d.variables}
                extra = [v for v in new_variables or [] if v.name.lower() not in have]
                if extra:
                    needs = "admin"  # new columns: ALTER TABLE
                    d.variables.extend(extra)
                    self._update(conn, d)
                once, rows = self._tables(exp_id, d)
                r = self.runs
                nxt = max(conn.execute(sa.select(sa.func.max(r.c.idx)).where(r.c.experiment == exp_id)).scalar() or 0,
                          self._highest_purged(conn, exp_id)) + 1
                done: list[int] = []
                by_name = {v.name: v for v in d.variables}  # not d.variable(): a list search per value
                once_names = [v.name for v in d.variables if v.occurrence == "once"]
                run_rows, once_rows, data_rows = [], [], []
                first: dict[str, RunData] = {}  # content hash -> the run of this input that has it
                for run in runs:
                    _check_run(d, by_name, run)
                    if run.content_hash in first:  # forced or not: no earlier run in the archive to repeat
                        names = [", ".join(x.sources) or "a run" for x in (first[run.content_hash], run)]
                        raise StoreError(given_twice(*names))
                    if run.content_hash:
                        first[run.content_hash] = run
                    if run.content_hash and not force:
                        # only an active run makes a duplicate (perfbase's check): a deleted run's data is out
                        # of every query, so importing its file again files the data anew, under a new index
                        hit = conn.execute(sa.select(r.c.idx).where(
                            r.c.experiment == exp_id, r.c.content_hash == run.content_hash,
                            r.c.deleted.is_(False))).scalar()
                        if hit:
                            raise StoreError(f"{', '.join(run.sources) or 'this input'} is already run {hit} of "
                                             f"{name}; import it again only with --force")
                    meta = dict(performed=dates[len(done)], synopsis=synopsis) if self.run_meta else {}
                    run_rows.append(dict(experiment=exp_id, idx=nxt, created=_now(), who=filer,
                                         sources=json.dumps(run.sources), content_hash=run.content_hash,
                                         deleted=False, **meta))
                    values = dict.fromkeys(once_names)
                    values.update({k: to_db(by_name[k], v) for k, v in run.values.items()})
                    once_rows.append({RUN: nxt, **values})
                    if run.rows:
                        data_rows.append(_data_set(nxt, rows, by_name, run.rows))
                    done.append(nxt)
                    nxt += 1
                if run_rows:
                    conn.execute(r.insert(), run_rows)
                    conn.execute(once.insert(), once_rows)
                _insert_rows(conn, rows, data_rows)
                return done
        return self._run(go, needs=lambda: needs)

    def store_pset(self, name: str, pset: str, values: dict[str, object]) -> None:
        """Create parameter set pset of experiment name, or change it: values (typed) replace those of the
        same parameters."""
        def go() -> None:
            with self.engine.begin() as conn:
                exp_id, _ = self._experiment_id(conn, name)
                t = self.psets
                for variable, value in {"": "", **{k: _as_text(v) for k, v in values.items()}}.items():
                    conn.execute(t.delete().where(t.c.experiment == exp_id, t.c.name == pset,
                                                  t.c.variable == variable))
                    conn.execute(t.insert().values(experiment=exp_id, name=pset, variable=variable, value=value))
        self._run(go, needs="admin")  # a set changes what later runs get: the admin class's, as roles grants

    def delete_pset(self, name: str, pset: str) -> None:
        """Remove parameter set pset of experiment name; a missing one is one line."""
        self.pset(name, pset)  # names the sets there are when it is missing

        def go() -> None:
            with self.engine.begin() as conn:
                exp_id, _ = self._experiment_id(conn, name)
                t = self.psets
                conn.execute(t.delete().where(t.c.experiment == exp_id, t.c.name == pset))
        self._run(go, needs="admin")

    def pset_names(self, name: str) -> list[str]:
        """The parameter sets of experiment name, by name."""
        def go() -> list[str]:
            with self.engine.connect() as conn:
                exp_id, _ = self._experiment_id(conn, name)
                if not sa.inspect(conn).has_table(self.psets.name):
                    return []
                t = self.psets
                return list(conn.execute(sa.select(t.c.name).distinct().where(t.c.experiment == exp_id)
                                         .order_by(t.c.name)).scalars())
        return self._run(go, needs="query")

    def created(self, name: str) -> _dt.datetime:
        """When experiment name was set up (UTC)."""
        def go() -> _dt.datetime:
            with self.engine.connect() as conn:
                self._experiment_id(conn, name)
                e = self.experiments
                return conn.execute(sa.select(e.c.created).where(e.c.name == name)).scalar_one()
        return self._run(go, needs="query")

    def users(self) -> list[tuple[str, str]]:
        """(user, class) of a PostgreSQL archive's users (roles); none for SQLite."""
        if self.url.get_backend_name() != "postgresql":
            return []
        def go() -> list[tuple[str, str]]:
            with self.engine.connect() as conn:
                return roles.users(conn, self.url.database or "")
        return self._run(go, needs="query")

    def pset(self, name: str, pset: str) -> dict[str, str]:
        """The values of parameter set pset of experiment name, by parameter."""
        with self.engine.connect() as conn:
            def go() -> dict[str, str]:
                exp_id, _ = self._experiment_id(conn, name)
                t = self.psets
                rows = conn.execute(sa.select(t.c.variable, t.c.value).where(t.c.experiment == exp_id,
                                                                           t.c.name == pset)).all()
                if not rows:
                    known = conn.execute(sa.select(t.c.name).distinct().where(t.c.experiment == exp_id)
                                         .order_by(t.c.name)).scalars().all()
                    raise StoreError(f"experiment {name!r} has no parameter set {pset!r}; it has: "
                                     f"{', '.join(known) or 'none'} (store one with input --pset-store)")
                return {v: x for v, x in rows if v}
            return self._run(go, needs="query")

    def put_attachment(self, name: str, attachment: Attachment, force: bool = False) -> bool:
        """Keep attachment with experiment name; one of the same name is replaced only with force.
        Returns whether one was replaced."""
        def go() -> bool:
            with self.engine.begin() as conn:
                exp_id, _ = self._experiment_id(conn, name)
                t = self.attachments
                where = (t.c.experiment == exp_id, t.c.name == attachment.name)
                there = conn.execute(sa.select(t.c.name).where(*where)).first() is not None
                if there and not force:
                    raise StoreError(f"experiment {name!r} has an attachment {attachment.name!r} already; "
                                     "give --force to replace it, or another name")
                conn.execute(t.delete().where(*where))
                conn.execute(t.insert().values(experiment=exp_id, name=attachment.name, type=attachment.type,
                                               filename=attachment.filename, synopsis=attachment.synopsis,
                                               description=attachment.description, creator=_user(),
                                               created=_now(), content=attachment.content))
                return there
        return self._run(go, needs="admin")  # what later imports and queries read: the admin class's

    def attachments_of(self, name: str, only: str | None = None) -> list[Attachment]:
        """The attachments of experiment name (only the one named only, if given), by type then name."""
        def go() -> list[Attachment]:
            with self.engine.connect() as conn:
                exp_id, _ = self._experiment_id(conn, name)
                t = self.attachments
                sel = sa.select(t).where(t.c.experiment == exp_id)
                if only is not None:
                    sel = sel.where(t.c.name == only)
                return [Attachment(r.name, r.type, r.filename, r.synopsis, r.description, r.content,
                                   r.creator, r.created) for r in conn.execute(sel.order_by(t.c.type, t.c.name))]
        return self._run(go, needs="query")

    def attachment(self, name: str, attached: str, kind: str | None = None) -> Attachment:
        """Attachment attached of experiment name (of type kind, if given); a missing one is one line."""
        found = self.attachments_of(name, attached)
        if not found:
            known = [a.name for a in self.attachments_of(name) if kind is None or a.type == kind]
            raise StoreError(f"experiment {name!r} has no attachment {attached!r}; it has: "
                             f"{', '.join(known) or 'none'} (see psbase attach {name} --list)")
        if kind is not None and found[0].type != kind:
            raise StoreError(f"attachment {attached!r} of experiment {name!r} is a {found[0].type} file, not "
                             f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} description; name one of type {kind}")
        return found[0]

    def delete_attachment(self, name: str, attached: str) -> None:
        def go() -> None:
            with self.engine.begin() as conn:
                exp_id, _ = self._experiment_id(conn, name)
                t = self.attachments
                gone = conn.execute(t.delete().where(t.c.experiment == exp_id, t.c.name == attached)).rowcount
                if not gone:
                    raise StoreError(f"experiment {name!r} has no attachment {attached!r}; "
                                     f"see psbase attach {name} --list")
        self._run(go, needs="admin")

    def experiments_with_attachment(self, attached: str) -> list[str]:
        """The experiments that have an attachment of that name (perfbase finds its experiment by it)."""
        def go() -> list[str]:
            with self.engine.connect() as conn:
                if not sa.inspect(conn).has_table(self.attachments.name):
                    return []
                t, e = self.attachments, self.experiments
                return list(conn.execute(sa.select(e.c.name).join(t, t.c.experiment == e.c.id)
                                         .where(t.c.name == attached).order_by(e.c.name)).scalars())
        return self._run(go, needs="query")

    def check(self, name: str) -> list[str]:
        """What is inconsistent in experiment name's tables (perfbase's check), one line each; [] if nothing."""
        def go() -> list[str]:
            with self.engine.connect() as conn:
                exp_id, d = self._experiment_id(conn, name)
                out = []
                v = self.variables
                listed = dict(conn.execute(sa.select(v.c.name, v.c.occurrence).where(v.c.experiment == exp_id)).all())
                want = {x.name: x.occurrence for x in d.variables}
                if listed != want:
                    out.append(f"psb_variables lists {sorted(listed)} with their occurrences, the definition "
                               f"{sorted(want)}")
                once, rows = self._tables(exp_id, d)
                have = sa.inspect(conn)
                for t in (once, rows):
                    if not have.has_table(t.name):
                        out.append(f"table {t.name} is missing")
                        continue
                    cols = {c["name"] for c in have.get_columns(t.name)}
                    lacking = [c.name for c in t.c if c.name not in cols]
                    if lacking:
                        out.append(f"table {t.name} lacks the column{'s' if len(lacking) > 1 else ''} "
                                   f"{', '.join(lacking)}")
                if out:
                    return out
                r = self.runs
                runs = set(conn.execute(sa.select(r.c.idx).where(r.c.experiment == exp_id)).scalars())
                with_once = set(conn.execute(sa.select(once.c[RUN])).scalars())
                in_rows = set(conn.execute(sa.select(rows.c[RUN]).distinct()).scalars())
                if runs - with_once:
                    out.append(f"run{'s' if len(runs - with_once) > 1 else ''} {_some(sorted(runs - with_once), 10)} "
                               f"{'have' if len(runs - with_once) > 1 else 'has'} no row in {once.name}")
                for t, got in ((once, with_once), (rows, in_rows)):
                    stray = sorted(got - runs)
                    if stray:
                        out.append(f"{t.name} has rows of run{'s' if len(stray) > 1 else ''} {_some(stray, 10)}, "
                                   "which psb_runs lacks")
                return out
        return self._run(go, needs="query")

    def dump(self, name: str) -> dict:
        """Experiment name whole (perfbase's dump): its definition, runs with their values and data sets (as
        stored: indexes, dates, deleted flags), parameter sets, attachments and highest purged index."""
        def go() -> dict:
            with self.engine.connect() as conn:
                exp_id, d = self._experiment_id(conn, name)
                e = self.experiments
                created = conn.execute(sa.select(e.c.created).where(e.c.id == exp_id)).scalar_one()
                once, rows = self._tables(exp_id, d)
                r = self.runs
                have = sa.inspect(conn)

                def table(t: sa.Table, *where) -> list[dict]:
                    if not have.has_table(t.name):
                        return []
                    cols = [c for c in t.c if c.name != "experiment"]
                    return [{k: _dump_value(v) for k, v in m.items()}
                            for m in conn.execute(sa.select(*cols).where(*where)).mappings()]

                return {"format": DUMP_FORMAT, "experiment": name, "created": created.isoformat(),
                        "definition": defmod.to_bytes(d).decode(),
                        "runs": table(r, r.c.experiment == exp_id), "once": table(once), "rows": table(rows),
                        "psets": table(self.psets, self.psets.c.experiment == exp_id),
                        "attachments": table(self.attachments, self.attachments.c.experiment == exp_id),
                        "purged": self._highest_purged(conn, exp_id)}
        return self._run(go, needs="admin")

    def load(self, dump: dict, name: str | None = None) -> tuple[str, int]:
        """Create an experiment from a dump (under name, if given: else the dump's); one transaction.
        Returns its name and how many runs it has."""
        try:
            d = defmod.parse_bytes(dump["definition"].encode(), "dump")
            if name is not None:
                d.name = defmod.check_name(name, "experiment")
            runs, once_rows, data_rows = dump["runs"], dump["once"], dump["rows"]
            extra = {k: dump.get(k, []) for k in ("psets", "attachments")}
            purged = int(dump.get("purged", 0))
            created = _dt.datetime.fromisoformat(dump["created"])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise StoreError(f"the dump is not one of psbase dump ({one_line(exc)}); give a file psbase dump "
                             "wrote") from None
        if not isinstance(d, Definition):
            raise StoreError("the dump holds an experiment update, not an experiment; give a file psbase dump wrote")

        def go() -> tuple[str, int]:
            with self.engine.begin() as conn:
                exp_id, once, rows = self._create_experiment(
                    conn, d, created,
                    f"restore the dump under another name, or remove it first (psbase delete {d.name} --experiment)")
                types = {t.name: {c.name: c.type for c in t.c} for t in (self.runs, once, rows, self.psets,
                                                                          self.attachments)}
                for t, got, with_exp in ((self.runs, runs, True), (once, once_rows, False), (rows, data_rows, False),
                                         (self.psets, extra["psets"], True),
                                         (self.attachments, extra["attachments"], True)):
                    if got:
                        cols = types[t.name]
                        conn.execute(t.insert(), [{**({"experiment": exp_id} if with_exp else {}),
                                                   **{k: _load_value(cols[k], v) for k, v in row.items()
                                                      if k in cols}} for row in got])
                if purged:
                    conn.execute(self.purged.insert().values(experiment=exp_id, highest=purged))
                return d.name, sum(1 for x in runs if not x.get("deleted"))
        return self._run(go, needs="admin")

    def list_runs(self, name: str, deleted: bool = False, show: Sequence[str] = (),
                  where: dict[str, list[object]] | None = None) -> list[RunInfo]:
        """The runs of an experiment, by index; deleted ones only if asked.
        `show`: once-variables whose values each RunInfo carries in .values;
        `where`: once-variable -> typed values, the runs with one of them."""
        with self.engine.connect() as conn:
            def go() -> list[RunInfo]:
                exp_id, d = self._experiment_id(conn, name)
                names = [*show, *(where or {})]
                for n in names:
                    if d.variable(n).occurrence != "once":
                        raise StoreError(f"{n!r} is a data-set variable (many values per run); psbase ls shows "
                                         "and filters by variables of one value per run (see psbase info "
                                         f"{name})")
                r = self.runs
                once, _ = self._tables(exp_id, d)
                q = (sa.select(r, *(once.c[n].label(f"v_{i}") for i, n in enumerate(show)))
                     .select_from(r.outerjoin(once, once.c[RUN] == r.c.idx))
                     .where(r.c.experiment == exp_id).order_by(r.c.idx))
                if not deleted:
                    q = q.where(r.c.deleted.is_(False))
                for n, values in (where or {}).items():
                    q = q.where(once.c[n].in_([to_db(d.variable(n), x) for x in values]))
                out = []
                for row in conn.execute(q):
                    info = _info(row)
                    info.values = {n: from_db(d.variable(n), row._mapping[f"v_{i}"]) for i, n in enumerate(show)}
                    out.append(info)
                return out
            return self._run(go, needs="query")

    def run(self, name: str, index: int) -> RunInfo:
        """One run with its once-values and its data set."""
        with self.engine.connect() as conn:
            def go() -> RunInfo:
                exp_id, d = self._experiment_id(conn, name)
                r = self.runs
                row = conn.execute(sa.select(r).where(r.c.experiment == exp_id, r.c.idx == index)).first()
                if row is None:
                    raise StoreError(f"experiment {name!r} has no run {index}; list its runs with psbase ls {name}")
                info = _info(row)
                once, rows = self._tables(exp_id, d)
                values = conn.execute(sa.select(once).where(once.c[RUN] == index)).mappings().first() or {}
                info.values = {k: from_db(d.variable(k), v) for k, v in values.items()
                               if k != RUN and v is not None}
                info.rows = [{k: from_db(d.variable(k), v) for k, v in m.items()
                              if k not in (RUN, SEQ) and v is not None}
                             for m in conn.execute(sa.select(rows).where(rows.c[RUN] == index)
                                                   .order_by(rows.c[SEQ])).mappings()]
                return info
            return self._run(go, needs="query")

    def set_deleted(self, name: str, indexes: list[int], deleted: bool) -> list[int]:
        """Soft deletion (deleted=True) or restoration of runs; returns the
        indexes whose state changed (the others were already so)."""
        def go() -> list[int]:
            with self.engine.begin() as conn:
                exp_id, _ = self._experiment_id(conn, name)
                self._existing(conn, exp_id, name, indexes)
                r = self.runs
                which = sa.and_(r.c.experiment == exp_id, r.c.idx.in_(indexes), r.c.deleted.is_(not deleted))
                changed = sorted(conn.execute(sa.select(r.c.idx).where(which)).scalars())
                if not deleted:  # a deleted run's file may have been imported again: never two active copies
                    active = r.alias("active")
                    twin = conn.execute(
                        sa.select(r.c.idx, active.c.idx).join(active, sa.and_(
                            active.c.experiment == exp_id, active.c.content_hash == r.c.content_hash,
                            active.c.deleted.is_(False), active.c.idx != r.c.idx))
                        .where(which, r.c.content_hash.is_not(None)).order_by(r.c.idx).limit(1)).first()
                    if twin:
                        raise StoreError(f"run {twin[0]} of {name} was imported again as run {twin[1]}; restoring "
                                         f"it would file the same data twice: delete run {twin[1]} first, or "
                                         f"keep run {twin[0]} deleted")
                conn.execute(r.update().where(which).values(deleted=deleted))
                return changed
        return self._run(go, needs="input")

    def purge(self, name: str, indexes: list[int]) -> None:
        """Remove runs for good: their values, data sets and records."""
        def go() -> None:
            with self.engine.begin() as conn:
                exp_id, d = self._experiment_id(conn, name)
                self._existing(conn, exp_id, name, indexes)
                once, rows = self._tables(exp_id, d)
                conn.execute(rows.delete().where(rows.c[RUN].in_(indexes)))
                conn.execute(once.delete().where(once.c[RUN].in_(indexes)))
                r = self.runs
                conn.execute(r.delete().where(r.c.experiment == exp_id, r.c.idx.in_(indexes)))
                highest = max(max(indexes), self._highest_purged(conn, exp_id))
                if not self.has_purged:
                    self.purged.create(conn, checkfirst=True)
                    roles.grant_new_tables(conn, self.url.database or "", [self.purged.name])
                    self.has_purged = True
                p = self.purged
                conn.execute(p.delete().where(p.c.experiment == exp_id))
                conn.execute(p.insert().values(experiment=exp_id, highest=highest))
        self._run(go, needs="admin")

    def _highest_purged(self, conn: sa.Connection, exp_id: int) -> int:
        if not self.has_purged:
            return 0
        p = self.purged
        return conn.execute(sa.select(p.c.highest).where(p.c.experiment == exp_id)).scalar() or 0

    def drop_experiment(self, name: str) -> int:
        """Remove an experiment for good: its definition, runs and tables (perfbase's `delete -e`);
        returns how many runs it had."""
        def go() -> int:
            with self.engine.begin() as conn:
                exp_id, d = self._experiment_id(conn, name)
                once, rows = self._tables(exp_id, d)
                r = self.runs
                count = conn.execute(sa.select(sa.func.count()).where(r.c.experiment == exp_id)).scalar_one()
                rows.drop(conn)
                once.drop(conn)
                for t in (self.psets, self.attachments):
                    if sa.inspect(conn).has_table(t.name):
                        conn.execute(t.delete().where(t.c.experiment == exp_id))
                conn.execute(r.delete().where(r.c.experiment == exp_id))
                conn.execute(self.variables.delete().where(self.variables.c.experiment == exp_id))
                conn.execute(self.experiments.delete().where(self.experiments.c.id == exp_id))
                return count
        return self._run(go, needs="admin")

    def _existing(self, conn: sa.Connection, exp_id: int, name: str, indexes: list[int]) -> None:
        r = self.runs
        have = {i for (i,) in conn.execute(sa.select(r.c.idx).where(r.c.experiment == exp_id, r.c.idx.in_(indexes)))}
        missing = sorted(set(indexes) - have)
        if missing:
            raise StoreError(f"experiment {name!r} has no run {', '.join(map(str, missing))}; "
                             f"list its runs with psbase ls {name} --deleted")


DUMP_FORMAT = "psbase-dump-1"  # psbase dump's files: gzip'd JSON, this format name first


def _dump_value(v: object) -> object:
    """A stored value as JSON: dates and times as ISO text (their column's type reads them back)."""
    if isinstance(v, (_dt.datetime, _dt.date, _dt.time)):
        return v.isoformat()
    return v


def _load_value(kind: sa.types.TypeEngine, v: object) -> object:
    if v is None or not isinstance(v, str):
        return v
    if isinstance(kind, sa.DateTime):
        return _dt.datetime.fromisoformat(v)
    if isinstance(kind, sa.Date):
        return _dt.date.fromisoformat(v)
    if isinstance(kind, sa.Time):
        return _dt.time.fromisoformat(v)
    return v


@dataclass
class Attachment:
    """A file kept with an experiment (perfbase's attach): its name, perfbase type (input, query,
    experiment, experiment_update), the file it came from, synopsis, description and content."""
    name: str
    type: str
    filename: str
    synopsis: str
    description: str
    content: str
    creator: str = ""
    created: _dt.datetime | None = None


def _runs_table(meta: sa.MetaData, with_meta: bool) -> sa.Table:
    """psb_runs; with_meta: with perfbase's performed date and synopsis (without: an older archive read as it
    is, in a MetaData of its own)."""
    return sa.Table(
        "psb_runs", meta,
        sa.Column("experiment", sa.Integer, *([sa.ForeignKey("psb_experiments.id", ondelete="CASCADE")] if with_meta
                                              else []), primary_key=True),
        sa.Column("idx", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("created", sa.DateTime, nullable=False),
        sa.Column("who", sa.String(255), nullable=False),
        sa.Column("sources", sa.Text, nullable=False),  # JSON list
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("deleted", sa.Boolean, nullable=False, default=False),
        *(sa.Column(n, t, nullable=True) for n, t in _RUN_META if with_meta),
        sa.Index("psb_runs_hash", "experiment", "content_hash"))


def _serialize_sqlite(engine: sa.Engine) -> None:
    """Take SQLite's write lock at BEGIN (BEGIN IMMEDIATE), so two imports at
    once queue up instead of both reading the same next run index; and let
    the database enforce foreign keys.  (SQLAlchemy's documented recipe for
    pysqlite's transaction handling.)"""

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn, _record) -> None:
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def lock_wait_seconds() -> float:
    """How long a psbase command waits for a lock on a PostgreSQL archive (PSBASE_LOCK_TIMEOUT, seconds)."""
    try:
        value = float(os.environ.get("PSBASE_LOCK_TIMEOUT", "30"))
    except ValueError:
        raise UsageError("PSBASE_LOCK_TIMEOUT is not a number of seconds; set it to e.g. 30") from None
    if not 0 < value < 86400:
        raise UsageError("PSBASE_LOCK_TIMEOUT must be more than 0 and less than 86400 seconds")
    return value


def _bound_lock_waits(engine: sa.Engine) -> None:
    """On a shared server any user who may read (a query-class user) can hold a lock psbase needs, by an
    open transaction (which blocks ALTER TABLE) or an advisory lock (which blocks imports): waits are
    bounded by lock_timeout, so a command ends with one line instead of waiting for ever."""
    ms = int(lock_wait_seconds() * 1000)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn, _record) -> None:
        cur = dbapi_conn.cursor()
        cur.execute(f"SET lock_timeout = {ms}")
        cur.close()
        dbapi_conn.commit()  # psycopg opened a transaction for the SET; the setting outlives it


def _index_key(index: sa.Index | None) -> list[tuple[str, str]]:
    return [(c.name, repr(c.type)) for c in index.columns] if index is not None else []


_REFUSED = object()  # _converted's mark of a stored value the new datatype cannot take


def _as_text(value: object) -> str:
    """A stored value as an input would write it, for convert() into another
    datatype: durations in seconds, dates and times in ISO 8601, booleans as
    true/false."""
    if isinstance(value, _dt.timedelta):
        return repr(value.total_seconds())
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    return repr(value) if isinstance(value, float) else str(value)


def _some(indexes: list[int], most: int) -> str:
    """Run indexes for a message: the first `most`, then how many more."""
    head = ", ".join(map(str, indexes[:most]))
    return head + (f" and {len(indexes) - most} more" if len(indexes) > most else "")


def _check_run(d: Definition, by_name: dict[str, Variable], run: RunData) -> None:
    for k in run.values:
        if (by_name.get(k) or d.variable(k)).occurrence != "once":
            raise UsageError(f"variable {k!r} of {d.name} occurs multiple times; give it in the data set rows")
    for k in set().union(*run.rows):  # each name once, not once per row
        if (by_name.get(k) or d.variable(k)).occurrence != "multiple":
            raise UsageError(f"variable {k!r} of {d.name} occurs once per run; give it as a run value")


def _data_set(idx: int, table: sa.Table, by_name: dict[str, Variable], rows: list[dict]) -> list[tuple]:
    """A run's data-set rows as tuples in the column order of table: column
    by column, so that a column whose values all have the right Python type
    (set(map(type, ...)): one pass in C) is taken as it is, and only the
    others go value by value through to_db (which refuses a wrong type)."""
    columns: list[list] = [[idx] * len(rows), list(range(len(rows)))]
    for c in table.columns[2:]:
        v = by_name[c.name]
        values = [row.get(c.name) for row in rows]
        if not set(map(type, values)) <= _FAST_TYPES[v.datatype]:
            values = [to_db(v, x) for x in values]
        elif v.datatype in ("duration", "version"):
            values = [None if x is None else to_db(v, x) for x in values]
        columns.append(values)
    return list(zip(*columns, strict=True))


def _insert_rows(conn: sa.Connection, table: sa.Table, runs: list[list[tuple]]) -> None:
    """The data-set rows of a batch of runs: PostgreSQL's COPY through
    psycopg, SQLite's executemany, both below SQLAlchemy's per-row parameter
    processing (the import's largest cost)."""
    if not runs:
        return
    prep = conn.dialect.identifier_preparer
    names = ", ".join(prep.quote(c.name) for c in table.columns)
    if conn.dialect.name == "postgresql":
        with conn.connection.driver_connection.cursor() as cur, \
                cur.copy(f"COPY {prep.quote(table.name)} ({names}) FROM STDIN") as copy:
            for rows in runs:
                for row in rows:
                    copy.write_row(row)
        return
    # dates and times: SQLite keeps them as text in SQLAlchemy's format (numbers and booleans go as they are)
    procs = [c.type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
             if isinstance(c.type, (sa.Date, sa.Time, sa.DateTime)) else None for c in table.columns]
    if any(procs):
        runs = [[tuple(x if p is None or x is None else p(x) for p, x in zip(procs, row, strict=True))
                 for row in rows] for rows in runs]
    sql = f"INSERT INTO {prep.quote(table.name)} ({names}) VALUES ({', '.join('?' * len(table.columns))})"
    cur = conn.connection.driver_connection.cursor()
    try:
        for rows in runs:
            cur.executemany(sql, rows)
    finally:
        cur.close()


_PY_TYPES = {"integer": int, "float": (float, int), "string": str, "text": str, "date": _dt.date, "time": _dt.time,
             "duration": _dt.timedelta, "timestamp": _dt.datetime, "boolean": bool, "version": str}


# a data-set index column's widest entry in bytes, per datatype (text: none, unbounded)
_INDEX_WIDTH = {"integer": 8, "float": 8, "string": 256, "date": 4, "time": 8, "duration": 8, "timestamp": 8,
                "boolean": 1, "version": 256}
_NONE = type(None)
# the Python types a data-set column may hold as they are (bool is not an int here; Version is a str)
_FAST_TYPES = {"integer": {int, _NONE}, "float": {float, int, _NONE}, "string": {str, _NONE}, "text": {str, _NONE},
               "date": {_dt.date, _NONE}, "time": {_dt.time, _NONE}, "duration": {_dt.timedelta, _NONE},
               "timestamp": {_dt.datetime, _NONE}, "boolean": {bool, _NONE}, "version": {str, Version, _NONE}}


def to_db(v: Variable, value: object) -> object:
    if value is None:
        return None
    want = _PY_TYPES[v.datatype]
    if not isinstance(value, want) or (v.datatype in ("integer", "float") and isinstance(value, bool)) or \
            (v.datatype == "date" and isinstance(value, _dt.datetime)):
        raise UsageError(f"variable {v.name!r}: {value!r} is not a {v.datatype} value")
    if v.datatype == "duration":
        return value.total_seconds()
    if v.datatype == "version":
        return str(value)
    return value


def from_db(v: Variable, value: object) -> object:
    if value is None:
        return None
    if v.datatype == "duration":
        return _dt.timedelta(seconds=value)
    if v.datatype == "version":
        return Version(value)
    if v.datatype == "float":
        return float(value)
    return value


def _info(row) -> RunInfo:
    m = row._mapping
    return RunInfo(index=row.idx, date=row.created, who=row.who, sources=json.loads(row.sources),
                   content_hash=row.content_hash, deleted=bool(row.deleted), performed=m.get("performed"),
                   synopsis=m.get("synopsis"))


def _now() -> _dt.datetime:
    """Now in UTC (naive, as the columns are): runs filed from machines in
    different time zones into one archive compare."""
    return _dt.datetime.now(_dt.timezone.utc).replace(tzinfo=None, microsecond=0)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def _db_problem(exc: sa.exc.DBAPIError) -> str:
    text = str(exc.orig) if getattr(exc, "orig", None) is not None else str(exc)
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    if "unable to open database" in first or "not a database" in first:
        return f"{first}; name an SQLite archive or a server with --db"
    if "connection" in first.lower():
        return f"{first}; check the server and the URL given with --db or PSBASE_DB"
    return first
