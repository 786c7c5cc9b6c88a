"""psbase's archive at scale: an experiment with once parameters (size,
nodes, compiler) and a once result (elapsed), and a data set per run of
multiple-occurrence variables chunk (a parameter) and bandwidth (a
result); RUNS runs of ROWS data-set rows each (default 10,000 x 1,000: ten
million rows), deterministic values, imported through psbase's own
Store.add_runs as `psbase input` files them: one call, one transaction,
per BATCH runs (as one `psbase input` of BATCH files; default 100), each
run with a content hash, so the duplicate check runs as it does for files.
Then psbase's short-form query over all rows, as `psbase query bench_io
bandwidth --by nodes --by chunk` runs it: with --stat mean,count and with
the default mean,stddev,count, each timed and checked against the means,
standard deviations and counts computed here in closed form.  The store
makes its own indexes (the data-set table's covering index by run,
parameter and result): nothing is added here.

Each figure is printed in seconds and as a multiple of a reference
measured in the same run on the same backend, which a loaded machine
changes less than the seconds: for the import, the same rows written by
the database driver's bare insert (SQLite executemany, PostgreSQL COPY)
into a table without index; for the queries, one pass over all rows
(count and sum).  SQLite and PostgreSQL side by side at the end.

Targets: import at most 300 s, the short-form query (mean, count) at most
2 s.  Printed for SQLite (a file in a temporary directory) and for
PostgreSQL (a private server started here with initdb and pg_ctl on a
socket directory, stopped afterwards); exit status 0 when every target
holds and the results agree.

    python bench/psbase.py [--runs N] [--rows N] [--batch N] [--backend sqlite|postgresql|both]"""

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


def expected_stddev(nruns: int, rows: int) -> dict[tuple[int, int], float]:
    """(nodes, chunk) -> sample standard deviation of bandwidth: a group's
    values are every run_part(i) + row_part(j) pair, so its population
    variance is var(run parts) + var(row parts)."""

    def var(xs: list[float]) -> float:
        m = math.fsum(xs) / len(xs)
        return math.fsum((x - m) ** 2 for x in xs) / len(xs)

    by_nodes: dict[int, list[float]] = {}
    for i in range(nruns):
        by_nodes.setdefault(nodes_of(i), []).append(run_part(i))
    by_chunk: dict[int, list[float]] = {}
    for j in range(rows):
        by_chunk.setdefault(chunk_of(j), []).append(row_part(j))
    out = {}
    for n, a in by_nodes.items():
        for c, b in by_chunk.items():
            size = len(a) * len(b)
            out[n, c] = math.sqrt((var(a) + var(b)) * size / (size - 1)) if size > 1 else math.nan
    return out


def reference_insert(store, nruns: int, rows: int, batch: int) -> float:
    """The reference for the import: the same rows as one batch (BATCH runs)
    written by the database driver's fastest path (SQLite: executemany;
    PostgreSQL: COPY) into a bare table without index or key, timed, and
    scaled to all batches: what the import costs below psbase."""
    import sqlalchemy as sa

    data = runs(0, min(batch, nruns), rows)
    tuples = [(i, j, row["chunk"], row["bandwidth"]) for i, run in enumerate(data) for j, row in enumerate(run.rows)]
    with store.engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE bench_ref (psb_run INTEGER, psb_seq INTEGER, chunk BIGINT, "
                             "bandwidth DOUBLE PRECISION)"))
        raw = conn.connection.driver_connection
        t = time.perf_counter()
        if conn.dialect.name == "postgresql":
            with raw.cursor() as cur, cur.copy("COPY bench_ref FROM STDIN") as copy:
                for row in tuples:
                    copy.write_row(row)
        else:
            cur = raw.cursor()
            cur.executemany("INSERT INTO bench_ref VALUES (?, ?, ?, ?)", tuples)
            cur.close()
        took = time.perf_counter() - t
        conn.execute(sa.text("DROP TABLE bench_ref"))
    return took * nruns / len(data)


def reference_scan(store):
    """The reference for the queries: one pass over every data-set row with
    nothing to group (count and sum), the least a query over all of them does."""
    import sqlalchemy as sa

    _, rows = store.tables(NAME)
    return sa.select(sa.func.count(), sa.func.sum(rows.c.bandwidth)).select_from(rows)


def timed_query(store, run) -> tuple[object, float, float]:
    """run(store)'s result, the first time and a second time (tables in the cache)."""
    t = time.perf_counter()
    got = run(store)
    first = time.perf_counter() - t
    t = time.perf_counter()
    run(store)
    return got, first, time.perf_counter() - t


def short_form(stats: list[str]):
    """psbase's short-form query, as `psbase query bench_io bandwidth --by nodes --by chunk --stat ...` runs it."""

    def run(store):
        from psuite.psbase import query

        return query.run_query(store, NAME, "bandwidth", ["nodes", "chunk"], stats=stats).rows

    return run


def agrees(got: list, want: dict, sd: dict | None = None) -> bool:
    """Rows (nodes, chunk, mean, count) or (nodes, chunk, mean, stddev, count) equal to the closed forms."""

    def row_ok(row) -> bool:
        n, c, avg, *rest = row
        cnt = rest[-1]
        return (n, c) in want and cnt == want[n, c][1] and math.isclose(avg, want[n, c][0], rel_tol=1e-9) and \
            (sd is None or math.isclose(rest[0], sd[n, c], rel_tol=1e-6))

    return len(got) == len(want) and all(row_ok(r) for r in got)


def bench(url: str, label: str, nruns: int, rows: int, batch: int) -> tuple[bool, dict[str, tuple[float, float]]]:
    """Import and queries on one backend; (targets held, {measure: (seconds, reference seconds)})."""
    import sqlalchemy as sa

    from psuite.psbase.store import Store

    store = Store(url, create=True)
    try:
        store.setup(definition())
        ref_import = reference_insert(store, nruns, rows, batch)
        took = 0.0
        for first in range(0, nruns, batch):
            part = runs(first, min(batch, nruns - first), rows)  # made outside the timed import
            t = time.perf_counter()
            store.add_runs(NAME, part, who="bench")
            took += time.perf_counter() - t
            if (first // batch) % 10 == 9:
                print(f"  {label}: {first + len(part):,} runs in {took:.1f} s", file=sys.stderr)
        scan = reference_scan(store)

        def run_scan(s):
            with s.engine.connect() as conn:
                return conn.execute(scan).one()

        _, ref_first, ref_again = timed_query(store, run_scan)
        ref_query = min(ref_first, ref_again)
        results = {
            "mean,count": timed_query(store, short_form(["mean", "count"])),
            "mean,stddev,count": timed_query(store, short_form(["mean", "stddev", "count"])),
        }
        with store.engine.connect() as conn:
            index = sa.inspect(conn).get_indexes(store.tables(NAME)[1].name)
    finally:
        store.close()
    want = expected(nruns, rows)
    sd = expected_stddev(nruns, rows)
    total = nruns * rows
    ok = took <= IMPORT_TARGET_S
    print(
        f"{label}: import of {nruns:,} runs x {rows:,} rows ({total:,} rows, {batch} runs per transaction): "
        f"{took:.1f} s (target <= {IMPORT_TARGET_S:.0f} s), {total / took:,.0f} rows/s, "
        f"{took / ref_import:.2f} x the driver's bare insert ({ref_import:.1f} s)   {'ok' if ok else 'MISSED'}"
    )
    print(f"{label}: the store's data-set index: {', '.join(str(i['column_names']) for i in index) or 'none'}")
    print(f"{label}: reference: one pass over all {total:,} rows (count, sum): {ref_query:.2f} s")
    figures = {"import": (took, ref_import)}
    for stats, (got, first, again) in results.items():
        agree = agrees(got, want, sd if "stddev" in stats else None)
        ok &= agree
        figures[f"query {stats}"] = (first, ref_query)
        print(
            f"{label}: short-form query, bandwidth --by nodes --by chunk --stat {stats}: {first:.2f} s "
            f"(again {again:.2f} s; {first / ref_query:.1f} x the pass), {len(got)} groups, "
            f"{'equal to' if agree else 'DIFFERENT from'} the expected values"
        )
    best = figures["query mean,count"][0]
    ok &= best <= QUERY_TARGET_S
    print(
        f"{label}: short-form query (mean, count) {best:.2f} s (target <= {QUERY_TARGET_S:.0f} s)   "
        f"{'ok' if best <= QUERY_TARGET_S else 'MISSED'}"
    )
    return ok, figures


def side_by_side(figures: dict[str, dict[str, tuple[float, float]]]) -> None:
    """The backends' figures in columns: seconds, and the multiple of the
    reference measured in the same run (import: the driver's bare insert;
    queries: one pass over the rows), which a loaded machine changes less."""
    labels = list(figures)
    names = list(next(iter(figures.values())))
    print("\n" + f"{'':28}" + "".join(f"{lab:>26}" for lab in labels))
    for name in names:
        cells = []
        for lab in labels:
            sec, ref = figures[lab][name]
            cells.append(f"{sec:8.2f} s ({sec / ref:5.2f} x ref)")
        print(f"{name:28}" + "".join(f"{c:>26}" for c in cells))
    for name, what in (("import", "reference: bare insert"), ("query mean,count", "reference: one pass")):
        print(f"{what:28}" + "".join(f"{figures[lab][name][1]:8.2f} s{'':14}" for lab in labels))


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
    args = ap.parse_args()
    if min(args.runs, args.rows, args.batch) < 1:
        print("bench: --runs, --rows and --batch must be at least 1", file=sys.stderr)
        return 2
    ok = True
    figures: dict[str, dict[str, tuple[float, float]]] = {}
    if args.backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory(prefix="psbase-bench-") as d:
            held, figures["SQLite"] = bench(os.path.join(d, "bench.db"), "SQLite", args.runs, args.rows, args.batch)
            ok &= held
    if args.backend in ("postgresql", "both"):
        with pg_server() as url:
            held, figures["PostgreSQL"] = bench(url, "PostgreSQL", args.runs, args.rows, args.batch)
            ok &= held
    side_by_side(figures)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
