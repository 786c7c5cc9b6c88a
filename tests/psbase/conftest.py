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
    """A fresh database on the private server; its URL."""
    import sqlalchemy as sa

    name = f"t{os.getpid()}_{next(_numbers)}"
    admin = sa.create_engine(f"postgresql+psycopg://psb@/postgres?host={socket_dir}", isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return f"postgresql+psycopg://psb@/{name}?host={socket_dir}"


@pytest.fixture(params=BACKENDS)
def db_url(request, tmp_path) -> str:
    """An archive location that does not exist yet (SQLite) or is empty."""
    if request.param == "sqlite":
        return str(tmp_path / "a.db")
    return new_pg_database(request.getfixturevalue("pg_server"))
