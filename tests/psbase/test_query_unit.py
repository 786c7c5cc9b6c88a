"""psbase query --unit: results shown in another unit of the same quantity
(perfbase: units "defined such that they can be converted correctly"),
the numbers checked against the test's own in the original unit."""

from __future__ import annotations

import json
import statistics

import pytest

from tests.conftest import one_line_error
from tests.psbase.test_cli import ok, psbase
from tests.psbase.test_query import TIMES, bandwidths, sweep  # noqa: F401  (sweep: the fixture)

QUERY = """<query>
  <experiment>sweep</experiment>
  <source id="s"><result>bw</result><parameter><value>nodes</value></parameter></source>
  <operator id="m" type="avg"><input>s</input></operator>
  <output format="json"><input>m</input></output>
</query>
"""


def env_of(store) -> dict[str, str]:
    url = store.url.database if store.url.get_backend_name() == "sqlite" else store.url.render_as_string(False)
    return {"PSBASE_DB": url}


def test_short_form_in_another_unit(sweep, tmp_path):  # noqa: F811
    env = env_of(sweep)
    doc = json.loads(ok(psbase("query", "sweep", "time", "--by", "nodes", "--unit", "min", "-f", "json",
                               cwd=tmp_path, env=env)))
    units = {c["name"]: c["unit"] for c in doc["columns"]}
    assert units == {"nodes": "node", "time mean": "min", "time stddev": "min", "time count": ""}
    for row in doc["rows"]:
        xs = [t for (n, _), ts in TIMES.items() if n == row["nodes"] for t in ts]
        assert row["time mean"] == pytest.approx(statistics.mean(xs) / 60, rel=1e-12)
        assert row["time stddev"] == pytest.approx(statistics.stdev(xs) / 60, rel=1e-9)
        assert row["time count"] == len(xs)
    # a data-set result in MB/s shown in kB/s
    doc = json.loads(ok(psbase("query", "sweep", "bw", "--by", "nodes", "--stat", "mean", "--unit", "kB/s",
                               "-f", "json", cwd=tmp_path, env=env)))
    for row in doc["rows"]:
        xs = [r["bw"] for (n, _), ts in TIMES.items() if n == row["nodes"] for t in ts for r in bandwidths(t)]
        assert row["bw mean"] == pytest.approx(statistics.mean(xs) * 1000, rel=1e-12)


def test_query_file_outputs_in_another_unit(sweep, tmp_path):  # noqa: F811
    qf = tmp_path / "q.xml"
    qf.write_text(QUERY)
    doc = json.loads(ok(psbase("query", "--file", str(qf), "--unit", "GB/s", cwd=tmp_path, env=env_of(sweep))))
    [value] = [c for c in doc["columns"] if c["role"] == "value"]
    assert value["unit"] == "GB/s"
    for row in doc["rows"]:
        xs = [r["bw"] for (n, _), ts in TIMES.items() if n == row["nodes"] for t in ts for r in bandwidths(t)]
        assert row[value["name"]] == pytest.approx(statistics.mean(xs) / 1000, rel=1e-12)


@pytest.mark.parametrize(
    "args, message",
    [
        (["sweep", "time", "--by", "nodes", "--unit", "MB/s"], "no result of this query is in a unit convertible"),
        (["sweep", "bw", "--by", "nodes", "--unit", "s"], "no result of this query is in a unit convertible"),
        (["sweep", "time", "--by", "nodes", "--unit", "m$"], "is not a unit"),
    ],
)
def test_a_unit_of_another_quantity_is_one_line(sweep, tmp_path, args, message):  # noqa: F811
    msg = one_line_error(psbase("query", *args, cwd=tmp_path, env=env_of(sweep)), "psbase")
    assert message in msg


def test_query_file_without_that_quantity_is_one_line(sweep, tmp_path):  # noqa: F811
    qf = tmp_path / "q.xml"
    qf.write_text(QUERY)
    msg = one_line_error(psbase("query", "--file", str(qf), "--unit", "s", cwd=tmp_path, env=env_of(sweep)), "psbase")
    assert "no output of" in msg and "has values of that quantity" in msg
