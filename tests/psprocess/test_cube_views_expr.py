"""psprocess dump -m (new metrics from CubePL expressions) against
CubeLib 4.8.2's cube_dump -m and libcube4's get_sev of the same
definitions (data/scorep: src/expressions.txt on mpi1, text/dump-*.txt,
values/mpi1.expressions.tsv.gz; README.md there says where cube_dump is
wrong: it cuts an expression at its commas, exits 0 on an error,
evaluates an unknown metric to 0, and per location evaluates a block with
variables unlike get_sev).

Every run goes through the real command (python -m psuite.psprocess)."""

from __future__ import annotations

import csv
import functools
import gzip
import math
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "scorep"
EXPRESSIONS = dict(line.split(":", 1) for line in (DATA / "src" / "expressions.txt").read_text().splitlines()
                   if line.strip())
# cube_dump's stored output is not the expression's value: refused (cut at commas), stopped after 10 s, or
# per location a block with variables evaluated unlike get_sev (README.md): checked against values/ only
NOT_CUBE_DUMP = {f"dump-{stem}" for stem in (
    "functions", "functions-aggr", "functions-incl", "block_while", "block_while-incl",
                 "block_if", "block_if-incl", "block_logic", "block_logic-incl")}
Values = dict[tuple[str, str], float]  # (cnode, location id | "all") -> value


def psprocess(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "psuite.psprocess", *args], capture_output=True, text=True,
                          cwd=DATA, timeout=120)


def parse_dump(text: str) -> list[Values]:
    """A csv dump, per metric: psprocess's (blocks of cnode,thread,value; a
    blank line between metrics) or cube_dump's (two blank lines before each
    call path; with -t aggr cnode,value).  A block starts again at a call
    path seen before."""
    out: list[Values] = []
    for line in text.splitlines():
        parts = line.strip().split(",")
        if len(parts) < 2 or line.startswith("sorry"):
            continue
        cnode, where = parts[0], ("all" if len(parts) == 2 or parts[1] == "aggr" else parts[1])
        if not out or (cnode, where) in out[-1]:
            out.append({})
        out[-1][(cnode, where)] = float(parts[-1])
    return out


def reference(metric: str, calltree: str, aggregate: bool) -> Values:
    """values/mpi1.expressions.tsv.gz: libcube4's full-precision values (a row
    left out is 0)."""
    out: Values = {}
    with gzip.open(DATA / "values" / "mpi1.expressions.tsv.gz", "rt", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["metric"] == metric and row["metric_tree"] == "incl" and row["call_tree"] == calltree \
                    and (row["location"] == "all") == aggregate:
                out[(row["cnode"], row["location"])] = float(row["value"])
    return out


@pytest.fixture(scope="module", params=[("excl", False), ("incl", False), ("excl", True), ("incl", True)],
                ids=["excl", "incl", "excl-aggr", "incl-aggr"])
def dumped(request) -> tuple[str, bool, dict[str, Values]]:
    """Every expression of src/expressions.txt in one -m (so also cut into
    items right: functions has commas inside max(...))."""
    calltree, aggregate = request.param
    spec = ",".join(f"{name}:{expr}" for name, expr in EXPRESSIONS.items())
    r = psprocess("dump", "-m", spec, "-f", "csv", "-x", calltree, *(["-t", "aggr"] if aggregate else []),
                  "mpi1.cubex")
    assert r.returncode == 0, r.stderr
    got = parse_dump(r.stdout)
    assert len(got) == len(EXPRESSIONS)
    return calltree, aggregate, dict(zip(EXPRESSIONS, got, strict=True))


def close_printed(got: float, printed: float) -> bool:
    """Equal to cube_dump's six significant digits."""
    if printed == 0:
        return abs(got) < 1e-300 or f"{got:.6g}" in ("0", "-0")
    return abs(got - printed) <= 0.50001 * 10 ** (math.floor(math.log10(abs(printed))) - 5)


@pytest.mark.parametrize("name", EXPRESSIONS)
def test_expressions_equal_libcube4(dumped, name: str) -> None:
    """Every expression, every call path and location (or their aggregate),
    both call-tree views: libcube4's value to relative 1e-9."""
    calltree, aggregate, got = dumped
    ref = reference(name, calltree, aggregate)
    values = got[name]
    assert len(values) == len(dumped[2]["sqrt_time"])
    bad = [(k, v, ref.get(k, 0.0)) for k, v in values.items() if not math.isclose(
        v, ref.get(k, 0.0), rel_tol=1e-9, abs_tol=1e-300)]
    assert not bad, bad[:5]
    assert set(ref) <= set(values)


def _printed_cases() -> list[tuple[str, bool, str]]:
    """(call tree, aggregate, expression) wherever cube_dump's output is stored and is the expression's value
    (cube_dump -t aggr -z incl was not stored; NOT_CUBE_DUMP: where cube_dump refused or misprinted)."""
    out = []
    for calltree, aggregate in (("excl", False), ("incl", False), ("excl", True)):
        for name in EXPRESSIONS:
            stem = f"dump-{name}" + ("-aggr" if aggregate else "-incl" if calltree == "incl" else "")
            if stem not in NOT_CUBE_DUMP:
                out.append((calltree, aggregate, name))
    return out


@functools.cache
def _dump(calltree: str, aggregate: bool) -> dict[str, Values]:
    spec = ",".join(f"{name}:{expr}" for name, expr in EXPRESSIONS.items())
    r = psprocess("dump", "-m", spec, "-f", "csv", "-x", calltree, *(["-t", "aggr"] if aggregate else []),
                  "mpi1.cubex")
    assert r.returncode == 0, r.stderr
    return dict(zip(EXPRESSIONS, parse_dump(r.stdout), strict=True))


@pytest.mark.parametrize(("calltree", "aggregate", "name"), _printed_cases())
def test_expressions_equal_cube_dump(calltree: str, aggregate: bool, name: str) -> None:
    """cube_dump -m's stored output, to the digits it prints, wherever it
    computed the expression (the others are compared with libcube4's values
    above)."""
    stem = f"dump-{name}" + ("-aggr" if aggregate else "-incl" if calltree == "incl" else "")
    (printed,) = parse_dump((DATA / "text" / f"{stem}.txt").read_text())
    values = _dump(calltree, aggregate)[name]
    assert set(printed) == set(values)
    bad = [(k, values[k], p) for k, p in printed.items() if not close_printed(values[k], p)]
    assert not bad, bad[:5]


@pytest.mark.parametrize("calltree", ["excl", "incl"])
def test_inclusive_time_per_exclusive_visit(calltree: str) -> None:
    """time(i)/visits(e) is inclusive time over exclusive visits whatever
    -x shows (psprocess once fed both the view shown: a ratio of exclusive
    values, 0.0122 where cube_dump gave 0.2935): cube_derive's
    time_per_visit (derive-post.cubex, the same definition) to 1e-9."""
    ref = time_per_visit(calltree)
    got: Values = {}
    for threads in ([], ["-t", "aggr"]):
        r = psprocess("dump", "-m", "pv:metric::time(i)/metric::visits(e)", "-x", calltree, *threads, "-f", "csv",
                      "mpi1.cubex")
        assert r.returncode == 0, r.stderr
        (values,) = parse_dump(r.stdout)
        got.update(values)
    assert set(ref) <= set(got)
    bad = [(k, v, ref.get(k, 0.0)) for k, v in got.items()
           if not math.isclose(v, ref.get(k, 0.0), rel_tol=1e-9, abs_tol=1e-300)]
    assert not bad, bad[:5]


def time_per_visit(calltree: str) -> Values:
    """derive-post.cubex's time_per_visit, cube_derive's metric::time(i)/
    metric::visits(e) on mpi1, at full precision."""
    out: Values = {}
    with gzip.open(DATA / "values" / "derive-post.tsv.gz", "rt", newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["metric"] == "time_per_visit" and row["metric_tree"] == "incl" and row["call_tree"] == calltree:
                out[(row["cnode"], row["location"])] = float(row["value"])
    return out


@pytest.mark.parametrize("aggregate", [False, True], ids=["per-location", "aggr"])
def test_expression_from_a_file(aggregate: bool) -> None:
    """-m @FILE (src/expression.cubepl: time(i)/visits(e) where above 0.01,
    else 0), named after the file: its definition's value to 1e-9 (from
    time_per_visit); with -t aggr also cube_dump -m FILE's printed values.
    Per location cube_dump prints 0 in 11 of 48 rows above 0.01 (its
    defect with blocks with variables, README.md): not compared."""
    r = psprocess("dump", "-m", "@src/expression.cubepl", "-f", "csv", *(["-t", "aggr"] if aggregate else []),
                  "mpi1.cubex")
    assert r.returncode == 0, r.stderr
    (got,) = parse_dump(r.stdout)
    (printed,) = parse_dump((DATA / "text" / f"dump-file{'-aggr' if aggregate else ''}.txt").read_text())
    assert set(got) == set(printed)
    tpv = time_per_visit("excl")
    for key, value in got.items():
        per = tpv.get(key, 0.0)
        assert math.isclose(value, per if per > 0.01 else 0.0, rel_tol=1e-9), key
        if aggregate:
            assert close_printed(value, printed[key]), key
    r = psprocess("dump", "-m", "@src/expression.cubepl", "-c", "0", "-t", "aggr", "mpi1.cubex")
    assert "src/expression.cubepl" in r.stdout


@pytest.mark.parametrize("stem, spec", [
    ("dump-bad-syntax", "bad:sqrt(metric::time()"),
    ("dump-bad-compare", "bad:metric::time() > 0.001"),
    ("dump-bad-metric", "bad:metric::nosuchmetric()"),
])
def test_bad_expressions_refused_in_one_line(stem: str, spec: str) -> None:
    """What cube_dump prints a refusal for (or zeros), with exit 0: one line, exit 2."""
    assert (DATA / "text" / f"{stem}.txt").exists()
    r = psprocess("dump", "-m", spec, "-f", "csv", "mpi1.cubex")
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("spec", ["{ ${i}=0; while (metric::time() >= 0) { ${i}=${i}+1; }; return ${i}; }, nosuch",
                                  "@nosuchfile.cubepl", "src/expression.cubepl", "a:1 2",
                                  "x:metric::time(", "time, max(metric::time(), 1"])
def test_refused_before_any_value(spec: str) -> None:
    """An item's error is found by parsing it, before any expression is
    evaluated (a while over a metric is not run to see if it is valid)."""
    r = psprocess("dump", "-m", spec, "-f", "csv", "mpi1.cubex")
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_commas_inside_brackets_and_expressions_without_metrics() -> None:
    """max(a, b) is one item; a whole expression needs neither a name nor
    metric:: (as cube_dump takes `2*3`); fixed:: is the call path's value
    over every location; a metric's name still names it."""
    r = psprocess("dump", "-m", 'm:max(metric::time(), 1), 2*3, ${cube::#locations}, '
                  'f:metric::fixed::visits(), visits, s:{ ${a}="x,y"; return 1; }', "-c", "0-3", "-f", "csv2",
                  "mpi1.cubex")
    assert r.returncode == 0, r.stderr
    lines = list(csv.reader(r.stdout.splitlines()))
    assert lines[0] == ["Cnode ID", "Thread ID", "m", "New Metric1", "New Metric2", "f", "visits", "s"]
    ref = reference("fixed_visits", "excl", False)
    for row in lines[1:]:
        assert float(row[2]) == 1.0 and float(row[3]) == 6.0 and float(row[4]) == 2.0 and float(row[7]) == 1.0
        assert math.isclose(float(row[5]), ref[(row[0], row[1])])
