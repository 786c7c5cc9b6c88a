"""A query file's scale operator: values multiplied by a factor other than
1 are no longer in the source's unit (thousandths of MB/s are not MB/s).
Its unit= names the new unit; without one the values have none, and the
chart's y axis and the text table say no unit.  offset keeps the unit."""

from __future__ import annotations

from pathlib import Path

import pytest

from psuite.psbase import output, queryexec, queryfile
from psuite.psbase.model import Definition, RunData, Variable
from psuite.psbase.output import chart
from psuite.psbase.store import Store

BW = {1: 1500.0, 2: 2900.0, 4: 5200.0}  # ranks -> bandwidth in MB/s


@pytest.fixture
def store(db_url) -> Store:
    s = Store(db_url, create=True)
    s.setup(Definition(name="sc", synopsis="scaled", variables=[
        Variable("ranks", "integer", unit="rank"),
        Variable("bw", "float", synopsis="bandwidth", unit="MB/s", is_result=True),
    ]))  # fmt: skip
    s.add_runs("sc", [RunData(values={"ranks": n, "bw": b}) for n, b in BW.items()])
    yield s
    s.close()


def run(store: Store, tmp_path: Path, ops: str) -> dict:
    src = '<source id="s"><result>bw</result><parameter><value>ranks</value></parameter></source>'
    path = tmp_path / "q.xml"
    path.write_text(f"<query><experiment>sc</experiment>{src}{ops}</query>\n")
    return {out.id: t for out, t in queryexec.execute(store, queryfile.parse(str(path)))}


def op(ident: str, attrs: str) -> str:
    operator = f'<operator id="{ident}" {attrs}><input>s</input></operator>'
    return operator + f'<output id="o_{ident}"><input>{ident}</input></output>'


def test_scale_without_unit_has_no_unit_and_with_unit_its_unit(store, tmp_path):
    got = run(store, tmp_path, op("k", 'type="scale" value="0.001"')
              + op("g", 'type="scale" value="0.001" unit="GB/s"')
              + op("one", 'type="scale" value="1"')
              + op("off", 'type="offset" value="10"'))  # fmt: skip
    want = {"k": ("", 0.001, 0), "g": ("GB/s", 0.001, 0), "one": ("MB/s", 1, 0), "off": ("MB/s", 1, 10)}
    for ident, (unit, factor, summand) in want.items():
        t = got[f"o_{ident}"]
        [value] = t.values()
        assert value.unit == unit, ident
        assert [(r[0], r[1]) for r in t.rows] == [(n, pytest.approx(b * factor + summand)) for n, b in BW.items()]
    # what a reader sees: no "MB/s" beside the thousandths, in the table's header and on the chart's y axis
    k = got["o_k"]
    assert "MB/s" not in output.render(k, "text").splitlines()[0]
    assert "MB/s" not in chart.chart(k).ylabel and chart.chart(k).ylabel == "bandwidth scale"
    assert chart.chart(got["o_g"]).ylabel.endswith("[GB/s]")
