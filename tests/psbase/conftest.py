"""Archives to test on: an SQLite file, and a database on a private
PostgreSQL server (initdb and pg_ctl on a socket directory of this test
session, stopped at its end); tests/run.sh installs PostgreSQL, and a
machine without it fails those tests rather than leaving them out."""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

import pytest


def _pg_bin() -> Path | None:
    found = shutil.which("initdb") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))), None)
    return Path(os.path.realpath(found)).parent if found else None


PG_BIN = _pg_bin()
BACKENDS = ["sqlite", "postgresql"]  # PostgreSQL's programs are installed by tests/run.sh: never left out silently


def _as_server_user() -> list[str]:
    """PostgreSQL refuses to run as root: run it as its own user then."""
    if os.geteuid() != 0:
        return []
    for user in ("postgres", "nobody"):
        try:
            pwd.getpwnam(user)
            return ["runuser", "-u", user, "--"]
        except KeyError:
            continue
    raise AssertionError("running as root with neither a postgres nor a nobody user to run PostgreSQL as")


@pytest.fixture(scope="session")
def pg_server():
    """The socket directory of a private server; the user is psb (trust)."""
    if PG_BIN is None:
        pytest.fail("PostgreSQL's initdb is not installed: install postgresql (tests/run.sh does)", pytrace=False)
    base = Path(tempfile.mkdtemp(prefix="psbase-pg-"))  # short: a socket path has at most 107 bytes
    prefix = _as_server_user()
    if prefix:
        user = pwd.getpwnam(prefix[2])
        os.chown(base, user.pw_uid, user.pw_gid)
    data = base / "data"
    subprocess.run(
        [*prefix, str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "psb"], check=True, capture_output=True
    )
    subprocess.run(
        [
            *prefix,
            str(PG_BIN / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            f"-k {base} -c listen_addresses=''",
            "-l",
            str(base / "log"),
            "-w",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        yield str(base)
    finally:
        subprocess.run(
            [*prefix, str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], capture_output=True
        )
        shutil.rmtree(base, ignore_errors=True)


_numbers = itertools.count(1)


def new_pg_database(socket_dir: str) -> str:
    """A fresh database on the private server; its URL, the socket directory
    percent-encoded as a URL's query value is (and as psbase names an
    archive: a test can expect the URL it gave back verbatim)."""
    import sqlalchemy as sa

    name = f"t{os.getpid()}_{next(_numbers)}"
    host = quote(socket_dir, safe="")
    admin = sa.create_engine(f"postgresql+psycopg://psb@/postgres?host={host}", isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return f"postgresql+psycopg://psb@/{name}?host={host}"


def absent_archive(url: str) -> tuple[str, str]:
    """An archive beside url that is not there, and what psbase's error
    says of it: an SQLite file never made, or a database the server
    does not have (psbase creates neither)."""
    if "://" not in url:
        path = str(Path(url).with_name("none.db"))
        return path, f"no archive {path}"
    import sqlalchemy as sa

    parsed = sa.make_url(url)
    name = f"absent_{parsed.database}"
    return parsed.set(database=name).render_as_string(hide_password=False), f'database "{name}" does not exist'


def archive_exists(url: str) -> bool:
    """An SQLite file there, or a database of that name on the server
    (asked of the server's catalogue, not of psbase)."""
    import sqlalchemy as sa

    if "://" not in url:
        return os.path.exists(url)
    parsed = sa.make_url(url)
    engine = sa.create_engine(parsed.set(database="postgres"))
    try:
        with engine.connect() as c:
            found = c.execute(sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": parsed.database})
            return found.first() is not None
    finally:
        engine.dispose()


def archive_tables(url: str) -> list[str] | None:
    """The tables in an archive, read with SQLAlchemy (not psbase): None
    for an SQLite file that does not exist, [] for an empty database."""
    import sqlalchemy as sa

    if "://" not in url and not os.path.exists(url):
        return None
    engine = sa.create_engine(url if "://" in url else f"sqlite:///{url}")
    try:
        return sorted(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


@pytest.fixture(params=BACKENDS)
def db_url(request, tmp_path) -> str:
    """An archive location that does not exist yet (SQLite) or is empty."""
    if request.param == "sqlite":
        return str(tmp_path / "a.db")
    return new_pg_database(request.getfixturevalue("pg_server"))
