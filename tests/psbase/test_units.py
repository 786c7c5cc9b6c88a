"""Unit conversion (perfbase: "units are defined such that they can be
converted correctly"): factors checked against values worked out by hand."""

from __future__ import annotations

import pytest

from psuite.errors import InputError
from psuite.psbase.units import conversion


@pytest.mark.parametrize(
    "source, target, factor",
    [
        ("MB/s", "GB/s", 1e-3),
        ("GB/s", "MB/s", 1e3),
        ("MiB/s", "B/ms", 2**20 / 1000),
        ("min", "s", 60.0),
        ("h", "min", 60.0),
        ("ms", "us", 1e3),
        ("kHz", "Hz", 1e3),
        ("Hz", "1/s", 1.0),
        ("Mbit/s", "kB/s", 1e6 / 8 / 1e3),
        ("B*s/op", "kB*ms/op", 1.0),
        ("flop/s", "Gflop/s", 1e-9),
        ("Kilo process", "process", 1e3),
        ("", "", 1.0),
    ],
)
def test_conversion_factors(source, target, factor):
    assert conversion(source, target) == pytest.approx(factor, rel=1e-12)


@pytest.mark.parametrize("source, target", [("MB/s", "s"), ("s", "B"), ("process", ""), ("", "s"), ("B/s", "B*s")])
def test_different_quantities_are_refused_naming_both(source, target):
    with pytest.raises(InputError) as e:
        conversion(source, target)
    msg = str(e.value)
    assert "cannot convert" in msg and "different quantities" in msg and "\n" not in msg


def test_result_table_converted_scales_values_and_errors_of_that_quantity_only():
    from psuite.psbase.result import Column, ResultTable

    table = ResultTable(
        "bw by nodes",
        [
            Column("nodes", "process", "key", datatype="integer"),
            Column("bw mean", "MB/s", "value"),
            Column("bw stddev", "MB/s", "error", of="bw mean"),
            Column("bw count", "", "value", datatype="integer"),
            Column("share", "%", "value"),
        ],
        [(1, 1500.0, 20.0, 3, 50.0), (2, None, None, 0, None)],
    )
    got = table.converted("GB/s")
    assert [c.unit for c in got.columns] == ["process", "GB/s", "GB/s", "", "%"]
    assert got.rows == [(1, 1.5, 0.02, 3, 50.0), (2, None, None, 0, None)]
    assert table.rows[0][1] == 1500.0 and table.columns[1].unit == "MB/s"  # the original is untouched
    with pytest.raises(InputError, match="no result of this query is in a unit convertible"):
        table.converted("s")
