"""psbase's archive at scale: an experiment with once parameters (size,
nodes, compiler) and a once result (elapsed), and a data set per run of
multiple-occurrence variables chunk (a parameter) and bandwidth (a
result); RUNS runs of ROWS data-set rows each (default 10,000 x 1,000: ten
million rows), deterministic values, imported through psbase's own
Store.add_runs as `psbase input` files them: one call, one transaction,
per BATCH runs (as one `psbase input` of BATCH files; default 100), each
run with a content hash, so the duplicate check runs as it does for files.
Then one aggregating query over all rows with SQLAlchemy Core on the
store's engine, in two forms, each timed and checked against the means
computed here in closed form: mean bandwidth and row count per (nodes,
chunk), (a) one GROUP BY over the data-set table joined to the once-table
and to psb_runs (deleted runs left out, as a psbase query must), and
(b) two steps: sums and counts per (run, chunk) first, then per (nodes,
chunk).  --index adds, before the import, an index of the data set by run,
chunk and bandwidth: the change proposed for store.py, whose cost on the
import and effect on the query this measures.

Targets: import at most 300 s, the query at most 2 s.  Printed for SQLite
(a file in a temporary directory) and for PostgreSQL (a private server
started here with initdb and pg_ctl on a socket directory, stopped
afterwards); the query target is judged on the faster form; exit status 0
when every target holds and the results agree.

    python bench/psbase.py [--runs N] [--rows N] [--batch N] [--backend sqlite|postgresql|both] [--index]"""

from __future__ import annotations

import argparse
import glob
import hashlib
import math
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

IMPORT_TARGET_S, QUERY_TARGET_S = 300.0, 2.0
NAME = "bench_io"
NODES = (1, 2, 4, 8, 16, 32)
CHUNKS = tuple(1024 << k for k in range(10))  # 1 KiB .. 512 KiB
COMPILERS = ("gcc", "clang", "icx")


def definition():
    from psuite.psbase.model import Definition, Variable

    return Definition(
        name=NAME,
        synopsis="psbase benchmark: a b_eff_io-like sweep",
        variables=[
            Variable("size", "integer", synopsis="file size", unit="B"),
            Variable("nodes", "integer", synopsis="nodes"),
            Variable("compiler", "string", synopsis="compiler"),
            Variable("elapsed", "float", synopsis="run time", unit="s", is_result=True),
            Variable("chunk", "integer", synopsis="chunk size", unit="B", occurrence="multiple"),
            Variable("bandwidth", "float", synopsis="bandwidth", unit="MB/s", occurrence="multiple", is_result=True),
        ],
    )


# Values: bandwidth(i, j) = run_part(i) + row_part(j), so a group's mean is the
# mean of run_part over its runs plus the mean of row_part over its rows.
def nodes_of(i: int) -> int:
    return NODES[i % len(NODES)]


def run_part(i: int) -> float:
    return 100.0 * nodes_of(i) + (i % 7) * 0.25


def chunk_of(j: int) -> int:
    return CHUNKS[j % len(CHUNKS)]


def row_part(j: int) -> float:
    return 10.0 * (j % len(CHUNKS)) + (j % 13) * 0.125


def runs(first: int, count: int, rows: int) -> list:
    from psuite.psbase.model import RunData

    chunks = [chunk_of(j) for j in range(rows)]
    parts = [row_part(j) for j in range(rows)]
    out = []
    for i in range(first, first + count):
        base = run_part(i)
        out.append(
            RunData(
                values={
                    "size": 1 << (20 + i % 4),
                    "nodes": nodes_of(i),
                    "compiler": COMPILERS[i % 3],
                    "elapsed": 1.0 + i % 11,
                },
                rows=[{"chunk": c, "bandwidth": base + p} for c, p in zip(chunks, parts, strict=True)],
                sources=[f"run{i:05d}.out"],
                content_hash=hashlib.sha256(b"bench %d" % i).hexdigest(),
            )
        )
    return out


def expected(nruns: int, rows: int) -> dict[tuple[int, int], tuple[float, int]]:
    """(nodes, chunk) -> (mean bandwidth, rows), from the value formulas."""
    by_nodes: dict[int, list[float]] = {}
    for i in range(nruns):
        by_nodes.setdefault(nodes_of(i), []).append(run_part(i))
    by_chunk: dict[int, list[float]] = {}
    for j in range(rows):
        by_chunk.setdefault(chunk_of(j), []).append(row_part(j))
    return {
        (n, c): (math.fsum(a) / len(a) + math.fsum(b) / len(b), len(a) * len(b))
        for n, a in by_nodes.items()
        for c, b in by_chunk.items()
    }


def _live(store, source):
    """The psb_runs rows of the experiment's runs that are not deleted, joined to `source` on the run."""
    import sqlalchemy as sa

    from psuite.psbase.store import RUN

    r, e = store.runs, store.experiments
    exp_id = sa.select(e.c.id).where(e.c.name == NAME).scalar_subquery()
    return r, source.join(r, sa.and_(r.c.idx == source.c[RUN], r.c.experiment == exp_id))


def plain_query(store):
    """Mean bandwidth and count per (nodes, chunk) over the runs not
    deleted: one GROUP BY over the data-set table joined to the once-table."""
    import sqlalchemy as sa

    from psuite.psbase.store import RUN

    once, rows = store.tables(NAME)
    r, joined = _live(store, rows)
    return (
        sa.select(once.c.nodes, rows.c.chunk, sa.func.avg(rows.c.bandwidth), sa.func.count())
        .select_from(joined.join(once, once.c[RUN] == rows.c[RUN]))
        .where(r.c.deleted.is_(False))
        .group_by(once.c.nodes, rows.c.chunk)
    )


def two_step_query(store):
    """The same result in two steps: sums and counts per (run, chunk), then
    per (nodes, chunk).  SQLite aggregates by sorting (it has no hash
    aggregation), so the one-step form sorts all rows; the first step here
    streams without a sort when an index orders the data set by run and
    chunk (--index), leaving 10 groups per run to sort."""
    import sqlalchemy as sa

    from psuite.psbase.store import RUN

    once, rows = store.tables(NAME)
    per_run = (
        sa.select(rows.c[RUN], rows.c.chunk, sa.func.sum(rows.c.bandwidth).label("s"), sa.func.count().label("n"))
        .group_by(rows.c[RUN], rows.c.chunk)
        .subquery()
    )
    r, joined = _live(store, per_run)
    return (
        sa.select(
            once.c.nodes, per_run.c.chunk, sa.func.sum(per_run.c.s) / sa.func.sum(per_run.c.n), sa.func.sum(per_run.c.n)
        )
        .select_from(joined.join(once, once.c[RUN] == per_run.c[RUN]))
        .where(r.c.deleted.is_(False))
        .group_by(once.c.nodes, per_run.c.chunk)
    )


def covering_index(store) -> None:
    """What --index adds before the import: an index on the data-set table by
    run, then the parameter, then the result (the change proposed for
    store.py's setup: one such index per data-set table)."""
    import sqlalchemy as sa

    from psuite.psbase.store import RUN

    _, rows = store.tables(NAME)
    with store.engine.begin() as conn:
        sa.Index(f"{rows.name}_by_run", rows.c[RUN], rows.c.chunk, rows.c.bandwidth).create(conn)


def timed_query(store, q) -> tuple[list, float, float]:
    """The rows, the first time and a second time (tables in the cache)."""
    with store.engine.connect() as conn:
        t = time.perf_counter()
        got = [tuple(row) for row in conn.execute(q)]
        first = time.perf_counter() - t
        t = time.perf_counter()
        conn.execute(q).all()
        return got, first, time.perf_counter() - t


def agrees(got: list, want: dict) -> bool:
    return len(got) == len(want) and all(
        (n, c) in want and cnt == want[n, c][1] and math.isclose(float(avg), want[n, c][0], rel_tol=1e-9)
        for n, c, avg, cnt in got
    )


def bench(url: str, label: str, nruns: int, rows: int, batch: int, index: bool) -> bool:
    from psuite.psbase.store import Store

    store = Store(url, create=True)
    try:
        store.setup(definition())
        if index:
            covering_index(store)
        took = 0.0
        for first in range(0, nruns, batch):
            part = runs(first, min(batch, nruns - first), rows)  # made outside the timed import
            t = time.perf_counter()
            store.add_runs(NAME, part, who="bench")
            took += time.perf_counter() - t
            if (first // batch) % 10 == 9:
                print(f"  {label}: {first + len(part):,} runs in {took:.1f} s", file=sys.stderr)
        results = {
            how: timed_query(store, q(store))
            for how, q in (("one GROUP BY", plain_query), ("two steps", two_step_query))
        }
    finally:
        store.close()
    want = expected(nruns, rows)
    total = nruns * rows
    ok = took <= IMPORT_TARGET_S
    print(
        f"{label}: import of {nruns:,} runs x {rows:,} rows ({total:,} rows, {batch} runs per transaction"
        f"{', with the covering index' if index else ''}): {took:.1f} s (target <= {IMPORT_TARGET_S:.0f} s), "
        f"{total / took:,.0f} rows/s   {'ok' if ok else 'MISSED'}"
    )
    best = min(first for _, first, _ in results.values())
    for how, (got, first, again) in results.items():
        agree = agrees(got, want)
        ok &= agree
        print(
            f"{label}: query, mean bandwidth per (nodes, chunk) over all {total:,} rows, {how}: {first:.2f} s "
            f"(again {again:.2f} s), {len(got)} groups, {'equal to' if agree else 'DIFFERENT from'} the "
            "expected means"
        )
    ok &= best <= QUERY_TARGET_S
    print(
        f"{label}: fastest query {best:.2f} s (target <= {QUERY_TARGET_S:.0f} s)   "
        f"{'ok' if best <= QUERY_TARGET_S else 'MISSED'}"
    )
    return ok


def _pg_bin() -> str:
    found = shutil.which("initdb") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))), None)
    if not found:
        sys.exit("bench: PostgreSQL's initdb is not installed (apt install postgresql)")
    return os.path.dirname(os.path.realpath(found))


@contextmanager
def pg_server() -> Iterator[str]:
    """A private PostgreSQL server on a socket directory (as
    tests/psbase/conftest.py starts one), stopped at the end; yields a URL."""
    import sqlalchemy as sa

    pg = _pg_bin()
    base = tempfile.mkdtemp(prefix="psbase-pg-")  # short: a socket path has at most 107 bytes
    prefix: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        prefix = ["runuser", "-u", "postgres", "--"]
        user = pwd.getpwnam("postgres")
        os.chown(base, user.pw_uid, user.pw_gid)
    data = os.path.join(base, "data")
    subprocess.run([*prefix, f"{pg}/initdb", "-D", data, "-A", "trust", "-U", "psb"], check=True, capture_output=True)
    subprocess.run(
        [
            *prefix,
            f"{pg}/pg_ctl",
            "-D",
            data,
            "-o",
            f"-k {base} -c listen_addresses=''",
            "-l",
            os.path.join(base, "log"),
            "-w",
            "start",
        ],
        check=True,
        capture_output=True,
    )
    try:
        admin = sa.create_engine(f"postgresql+psycopg://psb@/postgres?host={base}", isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.execute(sa.text("CREATE DATABASE bench"))
        admin.dispose()
        yield f"postgresql+psycopg://psb@/bench?host={base}"
    finally:
        subprocess.run([*prefix, f"{pg}/pg_ctl", "-D", data, "-m", "immediate", "-w", "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10000, help="runs (default 10000)")
    ap.add_argument("--rows", type=int, default=1000, help="data-set rows per run (default 1000)")
    ap.add_argument("--batch", type=int, default=100, help="runs per import transaction (default 100)")
    ap.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    ap.add_argument(
        "--index",
        action="store_true",
        help="add an index of the data set by run, chunk and bandwidth before the import "
        "(the change proposed for store.py), to measure its cost and effect",
    )
    args = ap.parse_args()
    if min(args.runs, args.rows, args.batch) < 1:
        print("bench: --runs, --rows and --batch must be at least 1", file=sys.stderr)
        return 2
    ok = True
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory(prefix="psbase-bench-") as d:
            ok &= bench(os.path.join(d, "bench.db"), "SQLite", args.runs, args.rows, args.batch, args.index)
    if args.backend in ("postgresql", "both"):
        with pg_server() as url:
            ok &= bench(url, "PostgreSQL", args.runs, args.rows, args.batch, args.index)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
