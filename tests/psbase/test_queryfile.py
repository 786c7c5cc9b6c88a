"""Query files (perfbase paper, section 3.3): sources, operators in their
three modes, cascades, combiners, sweeps and run selections, on both
backends, each number checked against plain Python over the values filed
here; and malformed query files refused in one line."""

from __future__ import annotations

import datetime as dt
import math
import statistics
from pathlib import Path

import pytest
import sqlalchemy as sa

from psuite.errors import UsageError
from psuite.psbase import queryexec, queryfile
from psuite.psbase.model import Definition, RunData, Variable
from psuite.psbase.store import Store

# (nodes, compiler) -> the times of its repetitions; icc has no run at 8 nodes
TIMES = {
    (1, "gcc"): [10.0, 10.5, 9.75, 10.25],
    (1, "icc"): [8.0, 8.25, 8.5],
    (2, "gcc"): [5.5, 5.0, 5.25],
    (2, "icc"): [4.0, 4.75],
    (4, "gcc"): [3.0, 2.5, 2.75],
    (4, "icc"): [2.0],
    (8, "gcc"): [1.5, 1.75],
}
RUNS = [(n, c, t) for (n, c), ts in TIMES.items() for t in ts]  # run i + 1
SIZES = (64, 4096)


def day(k: int) -> dt.datetime:
    """The date of run k: one a day, at noon."""
    return dt.datetime(2026, 1, 1, 12) + dt.timedelta(days=k)


def bw(size: int, t: float, i: int) -> float:
    return size / t / 100 + i


@pytest.fixture
def store(db_url) -> Store:
    s = Store(db_url, create=True)
    s.setup(Definition(name="qx", synopsis="a sweep", variables=[
        Variable("nodes", "integer", synopsis="number of nodes", unit="node"),
        Variable("compiler", "string"),
        Variable("when", "timestamp", synopsis="date of the run"),
        Variable("size", "integer", unit="B", occurrence="multiple"),
        Variable("time", "float", synopsis="run time", unit="s", is_result=True),
        Variable("label", "string", is_result=True),
        Variable("bw", "float", unit="MB/s", occurrence="multiple", is_result=True),
    ]))  # fmt: skip
    runs = [RunData(values={"nodes": n, "compiler": c, "time": t, "label": f"{c}{n}", "when": day(k)},
                    rows=[{"size": size, "bw": bw(size, t, i)} for i, size in enumerate(SIZES)])
            for k, (n, c, t) in enumerate(RUNS, start=1)]  # fmt: skip
    runs.append(RunData(values={"nodes": 1, "compiler": "gcc", "time": 1000.0}))  # deleted below
    runs.append(RunData(values={"nodes": 2, "compiler": "gcc"}))  # no time: no data point
    done = s.add_runs("qx", runs)
    assert done == list(range(1, len(RUNS) + 3))
    s.set_deleted("qx", [len(RUNS) + 1], True)
    yield s
    s.close()


def run(store: Store, tmp_path: Path, body: str, where: dict | None = None, sweep: list | None = None) -> dict:
    path = tmp_path / "q.xml"
    path.write_text(f"<query><experiment>qx</experiment>\n{body}\n</query>\n")
    return {out.id: t for out, t in queryexec.execute(store, queryfile.parse(str(path)), where, sweep)}


def cols(table) -> list[str]:
    return [c.name for c in table.columns]


def gcc_source(sid: str = "s", compiler: str = "gcc") -> str:
    return (
        f'<source id="{sid}"><result>time</result><parameter><value>nodes</value></parameter>'
        f"<parameter><value>compiler</value><filter><equal>{compiler}</equal></filter></parameter></source>"
    )


def times(compiler: str) -> dict[int, list[float]]:
    return {n: ts for (n, c), ts in TIMES.items() if c == compiler}


def quantile(xs: list[float], q: float) -> float:
    """Linear interpolation between the order statistics, written out here."""
    s = sorted(xs)
    pos = (len(s) - 1) * q
    lo = int(pos)
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (pos - lo)


EXPECT = {
    "avg": statistics.mean,
    "stddev": lambda xs: statistics.stdev(xs) if len(xs) > 1 else None,
    "variance": lambda xs: statistics.variance(xs) if len(xs) > 1 else None,
    "count": len,
    "median": statistics.median_low,  # perfbase's: the lower of the two middle values of an even count
    "quantile": lambda xs: quantile(xs, 0.25),
    "min": min,
    "max": max,
    "sum": sum,
    "prod": math.prod,
}


def _ops(input_id: str) -> str:
    out = []
    for op in EXPECT:
        value = ' value="0.25"' if op == "quantile" else ""
        out.append(
            f'<operator id="{op}" type="{op}"{value}><input>{input_id}</input></operator>'
            f'<output id="o_{op}"><input>{op}</input></output>'
        )
    return "".join(out)


def approx(x):
    return None if x is None else pytest.approx(x, rel=1e-9)


def test_data_set_aggregation_every_statistic(store, tmp_path):
    # a source straight into a statistic: the runs with equal parameters reduced (nodes 8 has 2 runs)
    got = run(store, tmp_path, gcc_source() + _ops("s"))
    for op, fn in EXPECT.items():
        t = got[f"o_{op}"]
        assert cols(t)[:2] == ["nodes", f"time {op}"], op
        assert [r[0] for r in t.rows] == [1, 2, 4, 8]
        for row in t.rows:
            assert row[1] == approx(fn(times("gcc")[row[0]])), (op, row)
        assert t.notes == ["compiler = gcc"]
    avg = got["o_avg"]
    assert avg.columns[2].role == "error" and avg.columns[2].of == "time avg"
    assert [r[2] for r in avg.rows] == [approx(statistics.stdev(times("gcc")[n])) for n in (1, 2, 4, 8)]
    assert avg.columns[1].unit == "s" and avg.columns[0].unit == "node" and avg.columns[0].label == "number of nodes"
    assert got["o_count"].columns[1].datatype == "integer" and got["o_variance"].columns[1].unit == "(s)^2"


def test_data_set_rows_aggregated_over_runs(store, tmp_path):
    # a multiple-occurrence result against a multiple-occurrence parameter, nodes fixed to 2
    src = (
        '<source id="s"><result>bw</result><parameter><value>size</value></parameter>'
        "<parameter><value>nodes</value><filter><equal>2</equal></filter></parameter></source>"
    )
    got = run(store, tmp_path, src + _ops("s"))
    for op, fn in EXPECT.items():
        rows = got[f"o_{op}"].rows
        assert [r[0] for r in rows] == list(SIZES)
        for size, value, *_ in rows:
            i = SIZES.index(size)
            xs = [bw(size, t, i) for n, _, t in RUNS if n == 2]
            assert len(xs) == 5
            assert value == approx(fn(xs)), op


def test_reduction_of_one_vector(store, tmp_path):
    # an operator behind another element reduces the whole vector to one row without keys
    body = gcc_source() + '<operator id="a" type="avg"><input>s</input></operator>' + _ops("a")
    got = run(store, tmp_path, body)
    means = [statistics.mean(times("gcc")[n]) for n in (1, 2, 4, 8)]
    for op, fn in EXPECT.items():
        t = got[f"o_{op}"]
        assert cols(t)[0] == f"time avg {op}" and not t.keys(), op
        assert len(t.rows) == 1
        assert t.rows[0][0] == approx(fn(means)), op
    assert got["o_avg"].rows[0][1] == approx(statistics.stdev(means))


def test_element_wise_over_several_inputs(store, tmp_path):
    body = (gcc_source("g", "gcc") + gcc_source("i", "icc")
            + '<operator id="ga" type="avg"><input>g</input></operator>'
            + '<operator id="ia" type="avg"><input>i</input></operator>'
            + "".join(f'<operator id="{op}" type="{op}"><input>ga</input><input>ia</input></operator>'
                      f'<output id="o_{op}"><input>{op}</input></output>'
                      for op in ("diff", "div", "percentof", "above", "below", "min", "max", "sum", "prod"))
            + '<operator id="x" type="eval"><input>ga</input><input>ia</input><term>sqrt(ga * ia) + 2 ** 3</term>'
            + '</operator><output id="o_x"><input>x</input></output>'
            + '<operator id="sc" type="scale" value="-2.5"><input>ga</input></operator><output id="o_sc">'
            + '<input>sc</input></output><operator id="of" type="offset" value="0.5"><input>ga</input><input>ia</input>'
            + '</operator><output id="o_of"><input>of</input></output>')  # fmt: skip
    got = run(store, tmp_path, body)
    expect = {
        "diff": lambda a, b: a - b, "div": lambda a, b: a / b, "percentof": lambda a, b: 100 * a / b,
        "above": lambda a, b: 100 * (a - b) / b, "below": lambda a, b: 100 * (b - a) / b,
        "min": min, "max": max, "sum": lambda a, b: a + b, "prod": lambda a, b: a * b,
        "x": lambda a, b: math.sqrt(a * b) + 8,
    }  # fmt: skip
    g = {n: statistics.mean(ts) for n, ts in times("gcc").items()}
    i = {n: statistics.mean(ts) for n, ts in times("icc").items()}
    for op, fn in expect.items():
        t = got[f"o_{op}"]
        assert [r[0] for r in t.rows] == [1, 2, 4], op  # 8 nodes: no icc run, no element
        assert [r[1] for r in t.rows] == [approx(fn(g[n], i[n])) for n in (1, 2, 4)], op
    assert got["o_above"].columns[1].unit == "%" and cols(got["o_diff"]) == ["nodes", "time avg diff"]
    sc = got["o_sc"]  # scale scales the error (the standard deviation) too
    assert cols(sc) == ["nodes", "time avg scale", "time avg scale stddev"]
    assert [r[1:] for r in sc.rows] == [
        (approx(-2.5 * g[n]), approx(2.5 * statistics.stdev(times("gcc")[n]))) for n in (1, 2, 4, 8)
    ]
    of = got["o_of"]  # two inputs side by side, each offset
    assert [c.name for c in of.values()] == ["time avg (ga) offset", "time avg (ia) offset"]
    assert [(r[0], r[1], r[3]) for r in of.rows] == [(n, approx(g[n] + 0.5), approx(i[n] + 0.5)) for n in (1, 2, 4)]


def test_row_by_row_on_a_source_then_reduced(store, tmp_path):
    # scale and eval on a source keep its repetitions; an avg behind them reduces the whole vector
    body = (
        gcc_source()
        + '<operator id="ms" type="scale" value="1000"><input>s</input></operator>'
        + '<operator id="inv" type="eval"><input>ms</input><term>1 / ms</term></operator>'
        + '<output id="o"><input>inv</input></output>'
        + '<operator id="a" type="avg"><input>inv</input></operator><output id="o_a"><input>a</input></output>'
        + '<output id="raw"><input>s</input></output>'
    )
    got = run(store, tmp_path, body)
    # a source as it is: one row per run with the result, by parameter value, then run index
    assert got["raw"].rows == [(n, t) for n, c, t in sorted(RUNS, key=lambda r: r[0]) if c == "gcc"]
    want = sorted((n, 1 / (1000 * t)) for n, c, t in RUNS if c == "gcc")
    assert sorted(got["o"].rows) == [(n, approx(x)) for n, x in want]
    assert got["o_a"].rows == [
        (approx(statistics.mean(x for _, x in want)), approx(statistics.stdev(x for _, x in want)))
    ]


def test_cascade_and_combiner(store, tmp_path):
    body = (
        gcc_source("g", "gcc")
        + gcc_source("i", "icc")
        + '<operator id="ga" type="avg"><input>g</input></operator>'
        + '<operator id="ia" type="max"><input>i</input></operator>'
        + '<combiner id="both"><input>ga</input><input>ia</input></combiner>'
        + '<output id="o_both"><input>both</input></output>'
        + '<operator id="speedup" type="div" alias="speedup"><input>ga</input><input>ia</input></operator>'
        + '<operator id="pct" type="eval" unit="%"><input>speedup</input><term>100 * (speedup - 1)</term>'
        + '</operator><operator id="best" type="max"><input>pct</input></operator>'
        + '<output id="o_best"><input>best</input><input>pct</input></output>'
        + '<operator id="m" type="max"><input>both</input></operator><output id="o_m"><input>m</input></output>'
    )
    got = run(store, tmp_path, body)
    g = {n: statistics.mean(ts) for n, ts in times("gcc").items()}
    i = {n: max(ts) for n, ts in times("icc").items()}
    both = got["o_both"]  # a combiner keeps every row: 8 nodes has no icc value
    assert cols(both) == ["nodes", "time avg", "time avg stddev", "time max"]
    assert [(r[0], r[1], r[3]) for r in both.rows] == [(n, approx(g[n]), approx(i.get(n))) for n in (1, 2, 4, 8)]
    assert both.notes == ["g: compiler = gcc", "i: compiler = icc"]  # a filter of some sources names them
    pct = {n: 100 * (g[n] / i[n] - 1) for n in (1, 2, 4)}
    best = got["o_best"]  # a scalar beside a vector: the scalar goes with every row
    assert cols(best) == ["nodes", "pct max", "pct"]
    assert [(r[0], r[1], r[2]) for r in best.rows] == [
        (n, approx(max(pct.values())), approx(pct[n])) for n in (1, 2, 4)
    ]
    assert best.columns[2].unit == "%" and best.columns[2].label == "100 * (speedup - 1)"
    assert [c.name for c in got["o_m"].values()] == ["time avg max", "time max max"]
    assert got["o_m"].rows == [(approx(max(g.values())), approx(max(i.values())))]


def test_sweeps(store, tmp_path):
    # over every value of compiler, and over explicit filters of nodes
    body = (
        '<source id="s"><result>time</result><parameter><value>nodes</value></parameter>'
        "<parameter><value>compiler</value><sweep/></parameter></source>"
        '<operator id="a" type="avg"><input>s</input></operator><output id="o"><input>a</input></output>'
        '<source id="all"><result>time</result></source><operator id="mx" type="max"><input>all</input>'
        '</operator><operator id="rel" type="div"><input>a</input><input>mx</input></operator>'
        '<output id="o_rel"><input>rel</input></output>'
        '<source id="t"><result>time</result><parameter><value>compiler</value></parameter>'
        "<parameter><value>nodes</value><sweep><filter><equal>1</equal></filter>"
        '<filter boolean="or"><equal>2</equal><equal>4</equal></filter></sweep></parameter></source>'
        '<operator id="c" type="count"><input>t</input></operator><output id="o_c"><input>c</input></output>'
        '<source id="u"><result>time</result><parameter><value>nodes</value><sweep><filter><greater>1</greater>'
        "<lesser>8</lesser></filter><filter><equal>16</equal></filter></sweep></parameter></source>"
        '<operator id="n" type="count"><input>u</input></operator><output id="o_n"><input>n</input></output>'
    )
    got = run(store, tmp_path, body)
    t = got["o"]
    assert cols(t) == ["nodes", "time avg [compiler=gcc]", "time avg [compiler=gcc] stddev",
                       "time avg [compiler=icc]", "time avg [compiler=icc] stddev"]  # fmt: skip
    for n, g, _, i, _ in t.rows:
        assert g == approx(statistics.mean(TIMES[(n, "gcc")]))
        assert i == approx(statistics.mean(TIMES[(n, "icc")]) if (n, "icc") in TIMES else None)
    # an element that is not swept goes with every sweep value
    top = max(t for _, _, t in RUNS)
    rel = got["o_rel"]
    assert cols(rel) == ["nodes", "time avg div time max [compiler=gcc]", "time avg div time max [compiler=icc]"]
    assert rel.rows[0] == (
        1,
        approx(statistics.mean(TIMES[(1, "gcc")]) / top),
        approx(statistics.mean(TIMES[(1, "icc")]) / top),
    )
    c = got["o_c"]
    assert cols(c) == ["compiler", "time count [nodes=1]", "time count [nodes=2|4]"]
    count = {cc: [sum(len(TIMES.get((n, cc), [])) for n in ns) for ns in ((1,), (2, 4))] for cc in ("gcc", "icc")}
    assert c.rows == [("gcc", *count["gcc"]), ("icc", *count["icc"])]
    # a range as a sweep value; a sweep value without runs gives an empty column
    n = got["o_n"]
    assert cols(n) == ["time count [nodes>1&<8]", "time count [nodes=16]"]
    assert n.rows == [(sum(len(ts) for (nn, _), ts in TIMES.items() if 1 < nn < 8), None)]


def test_sweep_from_the_command_line(store, tmp_path):
    # --sweep PARAM: every source swept over all values of PARAM; a source filtering it keeps its filter
    body = (
        '<source id="s"><result>time</result><parameter><value>nodes</value></parameter></source>'
        '<operator id="a" type="max"><input>s</input></operator><output id="o"><input>a</input></output>'
    )
    t = run(store, tmp_path, body, sweep=["compiler"])["o"]
    assert cols(t) == ["nodes", "time max [compiler=gcc]", "time max [compiler=icc]"]
    assert t.rows == [
        (n, max(TIMES[(n, "gcc")]), max(TIMES[(n, "icc")]) if (n, "icc") in TIMES else None) for n in (1, 2, 4, 8)
    ]
    t = run(
        store,
        tmp_path,
        gcc_source() + '<operator id="a" type="max"><input>s</input></operator>'
        '<output id="o"><input>a</input></output>',
        sweep=["compiler"],
    )["o"]
    assert cols(t) == ["nodes", "time max [compiler=gcc]"] and t.notes == []
    with pytest.raises(UsageError, match="--sweep ranks: experiment 'qx' has no parameter 'ranks'"):
        run(store, tmp_path, body, sweep=["ranks"])


def test_filters_and_run_selection(store, tmp_path):
    def counts(params: str, runs: str = "", where: dict | None = None) -> dict:
        body = (
            f'<source id="s"><result>time</result><parameter><value>nodes</value></parameter>{params}{runs}'
            '</source><operator id="c" type="count"><input>s</input></operator><output id="o"><input>c</input>'
            "</output>"
        )
        out: dict = {}
        for row in run(store, tmp_path, body, where)["o"].rows:
            out[row[0]] = out.get(row[0], 0) + row[-1]
        return out

    def expect(keep) -> dict:
        out: dict = {}
        for idx, (n, c, _) in enumerate(RUNS, start=1):
            if keep(idx, n, c):
                out[n] = out.get(n, 0) + 1
        return out

    everything = counts("")
    assert everything == expect(lambda i, n, c: True)  # the deleted run and the run without a time are not counted
    # a parameter filtered to a range: no key, as in perfbase, unless show="data" makes it one
    for show, rows in (("", [(9,)]), (' show="data"', [(2, 5), (4, 4)])):
        p = f"<parameter{show}><value>nodes</value><filter>{{}}</filter></parameter>"
        body = '<source id="s"><result>time</result>' + p.format(
            "<greaterequal>2</greaterequal><lessequal>4</lessequal>")
        got = run(
            store,
            tmp_path,
            body + '</source><operator id="c" type="count"><input>s</input></operator>'
            '<output id="o"><input>c</input></output>',
        )["o"]
        assert got.rows == rows, show
        assert got.notes == ([] if show else ["nodes >=2&<=4"]), show
    lst = (
        '<parameter><value>compiler</value><filter boolean="or"><equal>icc</equal><equal>clang</equal></filter>'
        "</parameter>"
    )
    assert counts(lst) == expect(lambda i, n, c: c == "icc")
    ne = "<parameter><value>compiler</value><filter><notequal>icc</notequal></filter></parameter>"
    assert counts(ne) == expect(lambda i, n, c: c != "icc")
    assert counts("", "<run><index>2-4, 9, 17...</index></run>") == expect(
        lambda i, n, c: 2 <= i <= 4 or i == 9 or i >= 17
    )
    assert counts("", '<run mask="exclude"><index>...5</index></run>') == expect(lambda i, n, c: i > 5)
    today = dt.date.today()
    window = f"<run><created><from>{today - dt.timedelta(days=1)}</from><to>{today}</to></created></run>"
    assert counts("", window) == everything
    # a <run> that selects no run is refused, as perfbase refuses it ("none of the specified runs does exist")
    with pytest.raises(UsageError, match=r"its <run> selects none of the experiment's runs"):
        counts("", f"<run><created><from>{today + dt.timedelta(days=1)}</from></created></run>")
    assert counts("", where={"compiler": ["icc"]}) == expect(lambda i, n, c: c == "icc")
    # the date of a run as a parameter: a range of days
    days = (
        "<parameter><value>when</value><filter><greaterequal>2026-01-05</greaterequal><lesser>2026-01-09 12:00"
        "</lesser></filter></parameter>"
    )
    assert counts(days) == expect(lambda i, n, c: dt.datetime(2026, 1, 5) <= day(i) < dt.datetime(2026, 1, 9, 12))


def test_sql_aggregates_a_source_behind_a_statistic(store, tmp_path):
    # the database gets one GROUP BY, and no query for the source's rows themselves
    seen: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    got = run(
        store,
        tmp_path,
        gcc_source() + '<operator id="a" type="avg"><input>s</input></operator>'
        '<output id="o"><input>a</input></output>',
    )
    queries = [s for s in seen if "psb_x" in s]
    assert len(queries) == 1 and "GROUP BY" in queries[0]
    assert [r[0] for r in got["o"].rows] == [1, 2, 4, 8]


def test_string_results_and_bad_values_at_run_time(store, tmp_path):
    src = (
        '<source id="s"><result>label</result><parameter><value>nodes</value></parameter></source>'
        '<operator id="c" type="max"><input>s</input></operator><output id="o"><input>c</input></output>'
    )
    assert run(store, tmp_path, src)["o"].rows == [(1, "icc1"), (2, "icc2"), (4, "icc4"), (8, "gcc8")]
    bad = [
        (
            src.replace('type="max"', 'type="avg"'),
            "avg needs numbers, and 'label' is a string; use count or min or max",
        ),
        (
            gcc_source().replace("<result>time", "<result>nodes"),
            "experiment 'qx' has no result 'nodes' ('nodes' is a parameter); its results: time, label, bw",
        ),
        (gcc_source().replace("<value>nodes", "<value>ranks"), "has no parameter 'ranks'"),
        (
            '<source id="s"><result>time</result><parameter><value>nodes</value><filter><equal>many</equal></filter>'
            "</parameter></source>",
            "<equal>: variable 'nodes': 'many' is not an integer",
        ),
    ]
    for body, message in bad:
        if "<output" not in body:
            body += '<operator id="a" type="avg"><input>s</input></operator><output><input>a</input></output>'
        with pytest.raises(UsageError) as err:
            run(store, tmp_path, body)
        assert message in str(err.value) and "\n" not in str(err.value)
        assert str(err.value).startswith(f"{tmp_path / 'q.xml'}: <")
    # element-wise over vectors that do not match row for row
    two = gcc_source("g", "gcc") + gcc_source("i", "icc")
    for body, message in (
        (
            two + '<operator id="d" type="diff"><input>g</input><input>i</input></operator>',
            "<operator id='d'> (line 2): input 'g' has several rows for nodes=1; aggregate it first",
        ),
        (
            two + '<source id="c"><result>time</result><parameter><value>compiler</value></parameter></source>'
            '<operator id="a" type="avg"><input>g</input></operator><operator id="b" type="avg"><input>c</input>'
            '</operator><operator id="d" type="div"><input>a</input><input>b</input></operator>',
            "inputs 'a' and 'b' have different parameters (nodes vs compiler)",
        ),
    ):
        with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
            run(store, tmp_path, body + "<output><input>d</input></output>")
    # an output of two inputs is matched row by row too: where they do not match, a file output is refused,
    # and standard output shows them one after the other, as perfbase does; a combiner is refused
    with pytest.raises(UsageError, match="<output id='output1'> .line 2.: input 'g' has several rows for nodes=1"):
        run(store, tmp_path, two + "<output format='csv'><input>g</input><input>i</input><filename>x.csv</filename>"
            "</output>")
    path = tmp_path / "q.xml"
    path.write_text(f"<query><experiment>qx</experiment>\n{two}<output><input>g</input><input>i</input></output>"
                    "\n</query>\n")
    shown = queryexec.execute(store, queryfile.parse(str(path)))
    assert len(shown) == 2 and [len(t.rows) for _, t in shown][0] > len({r[0] for r in shown[0][1].rows})
    with pytest.raises(UsageError, match="<combiner id='c'> .line 2.: input 'g' has several rows for nodes=1"):
        run(
            store,
            tmp_path,
            two + "<combiner id='c'><input>g</input><input>i</input></combiner><output><input>c</input></output>",
        )
    # --where names: checked like the file's
    body = gcc_source() + "<output><input>s</input></output>"
    for where, message in (
        ({"ranks": ["1"]}, "--where ranks: experiment 'qx' has no parameter 'ranks'"),
        ({"nodes": ["x"]}, "--where nodes=x: variable 'nodes': 'x' is not an integer"),
    ):
        with pytest.raises(UsageError, match=message.replace("(", r"\(")):
            run(store, tmp_path, body, where)
    with pytest.raises(UsageError, match="--where 'nodes': write NAME=VALUE"):
        queryexec.parse_where(["nodes"])
    assert queryexec.parse_where(["a=1", "b = x", "a=2"]) == {"a": ["1", "2"], "b": ["x"]}


BAD = [
    ("<quest/>", "the root element of a query file must be <query>"),
    (
        "<query><source id='s'><result>t</result></source><output><input>s</input></output></query>",
        "<experiment> is missing",
    ),
    ("<query><experiment>x</experiment><source id='s'><result>t</result></source></query>", "no <output>"),
    (
        "<query><experiment>x</experiment><source><result>t</result></source></query>",
        "<source> (line 1): id= is missing",
    ),
    ("<query><experiment>x</experiment><source id='s'/><output><input>s</input></output></query>", "no <result>"),
    (
        "<query><experiment>x</experiment><output><input>s</input></output></query>",
        "'s' is not a source, operator or combiner defined before it",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source>"
        "<operator id='o' type='average'><input>s</input></operator></query>",
        "type='average' is not an operator",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source>"
        "<operator id='o' type='diff'><input>s</input></operator></query>",
        "diff takes exactly two <input>",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source>"
        "<operator id='o' type='scale'><input>s</input></operator></query>",
        "value= is missing; give the factor",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source>"
        "<operator id='o' type='quantile' value='150'><input>s</input></operator></query>",
        "outside [0, 100]",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source>"
        "<operator id='o' type='eval'><input>s</input><term>__import__('os')</term></operator></query>",
        "calls something other than",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source>"
        "<operator id='o' type='eval'><input>s</input><term>s + y</term></operator></query>",
        "'y' is not one of its inputs",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source>"
        "<operator id='o' type='eval'><input>s</input><term>s.real</term></operator></query>",
        "uses Attribute",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result><parameter><value>p</value><filter>"
        "<like>3</like></filter></parameter></source></query>",
        "<like> (line 1): not allowed in <filter>",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result><run><index>7-3</index></run></source>"
        "</query>",
        "run range '7-3' is empty",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result><run><created><from>last week</from>"
        "</created></run></source></query>",
        "'last week' is not a date",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source><source id='s'><result>t</result>"
        "</source></query>",
        "id 's' is used twice",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source>"
        "<output format='png'><input>s</input></output></query>",
        "format='png' writes a file; give <filename>",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source>"
        "<output format='pdf'><input>s</input></output></query>",
        "format='pdf' is not one of text, csv, json",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source>"
        "<output type='bars'><input>s</input></output></query>",
        "type='bars' is a chart kind, and format='text' is no chart; give format= one of gnuplot, png, svg, html",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source>"
        "<output type='pie' format='svg'><input>s</input><filename>x.svg</filename></output></query>",
        "type='pie' is not a chart kind; use one of auto, bar, line",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result><input>p</input></source></query>",
        "'p' is not a <parameter> or <run> defined before it",
    ),
    (
        "<query><experiment>x</experiment><source id='s'><result>t</result></source><table/></query>",
        "<table> (line 1): unknown element",
    ),
    ("<query><experiment>x</experiment", "not well-formed XML"),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[m[:30] for _, m in BAD])
def test_malformed_query_files_are_one_line(tmp_path, text, message):
    path = tmp_path / "bad.xml"
    path.write_text(text)
    with pytest.raises(UsageError) as err:
        queryfile.parse(str(path))
    assert message in str(err.value)
    assert "\n" not in str(err.value) and str(err.value).startswith(f"{path}: ")


def test_formats_and_kinds_are_those_of_the_outputs():
    from psuite.psbase import output

    assert queryfile.FORMATS == output.FORMATS and queryfile.KINDS == output.KINDS
    assert queryfile.STDOUT_FORMATS == output.TEXT_FORMATS


def test_perfbase_output_targets(tmp_path):
    src = "<query><experiment>x</experiment><source id='s'><result>t</result></source>"
    got = []
    for attrs in ("target='raw_text'", "target='gnuplot'", "target='gnuplot' format='png'", "format='svg'"):
        path = tmp_path / "q.xml"
        path.write_text(f"{src}<output {attrs}><input>s</input><filename>f</filename></output></query>")
        got.append(queryfile.parse(str(path)).outputs[0].format)
    # raw_text: perfbase's own text (output.perfbase_text), whatever its format= says
    assert got == ["pbtext", "pbgnuplot", "pbgnuplot", "svg"]  # gnuplot: perfbase's command file, every format
    path.write_text(f"{src}<output target='latex'><input>s</input></output></query>")
    with pytest.raises(UsageError, match="target='latex' format='screen' .perfbase. is not supported; use target"):
        queryfile.parse(str(path))


def test_versions_are_ordered_part_by_part_in_filters_and_sweeps(db_url, tmp_path):
    # as text "1.10" < "1.9" and "10.0" < "9.2"; as versions neither is
    versions = ["1.9", "1.9.1", "1.10", "2.0", "9.2", "10.0"]
    s = Store(db_url, create=True)
    s.setup(Definition(name="qx", variables=[
        Variable("lib", "version"),
        Variable("time", "float", is_result=True),
    ]))  # fmt: skip
    s.add_runs("qx", [RunData(values={"lib": v, "time": float(i)}) for i, v in enumerate(versions)])

    def selected(filt: str) -> list[str]:
        body = (
            f'<source id="s"><result>time</result><parameter show="data"><value>lib</value><filter>{filt}</filter>'
            '</parameter></source><output id="o"><input>s</input></output>'
        )
        return [str(row[0]) for row in run(s, tmp_path, body)["o"].rows]

    assert selected("<greater>1.9</greater>") == ["1.9.1", "1.10", "2.0", "9.2", "10.0"]
    assert selected("<lessequal>1.10</lessequal>") == ["1.9", "1.9.1", "1.10"]
    assert selected("<greaterequal>2</greaterequal><lesser>10</lesser>") == ["2.0", "9.2"]
    assert selected("<lesser>1.0</lesser>") == []
    # a sweep over version ranges: one column each
    sweep = (
        '<source id="s"><result>time</result><parameter><value>lib</value><sweep><filter><lesser>1.10</lesser>'
        "</filter><filter><greaterequal>1.10</greaterequal></filter></sweep></parameter></source>"
        '<operator id="m" type="max"><input>s</input></operator><output id="o"><input>m</input></output>'
    )
    got = run(s, tmp_path, sweep)["o"]
    assert got.rows == [(1.0, 5.0)]  # the times of 1.9, 1.9.1; of 1.10 ... 10.0
