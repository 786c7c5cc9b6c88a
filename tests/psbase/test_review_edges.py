"""Edges a maintainer's read found: a query file's dates with a zone,
run indexes beyond what the databases store, powers that would build
huge integers, and sweep columns that stay counts."""

from __future__ import annotations

import datetime as _dt

import pytest

from psuite.errors import UsageError
from psuite.psbase import arith, queryfile


def write(tmp_path, body: str):
    p = tmp_path / "q.xml"
    p.write_text(f"<query><experiment>x</experiment>{body}"
                 "<source id='s'><result>r</result><input>r1</input></source>"
                 "<output format='text'><input>s</input></output></query>")
    return str(p)


def test_a_created_date_with_a_zone_is_compared_in_utc(tmp_path):
    q = queryfile.parse(write(tmp_path, "<run id='r1'><created><from>2026-11-24T18:00+02:00</from></created></run>"))
    [sel] = q.elements["s"].runs
    assert sel.created_from == _dt.datetime(2026, 11, 24, 16, 0)


def test_a_run_index_beyond_int64_is_one_line(tmp_path):
    with pytest.raises(UsageError, match="is too large"):
        queryfile.parse(write(tmp_path, "<run id='r1'><index>99999999999999999999999</index></run>"))


def test_powers_of_powers_become_floats_not_huge_integers():
    # an exact integer tower would take ~15 s of CPU and then all memory
    ops = tuple(arith.BINARY)
    assert isinstance(arith.evaluate(arith.check("(a ** 64) ** 2", ops, ()), {"a": 9}), float)
    with pytest.raises(OverflowError):
        arith.evaluate(arith.check("(((a ** 64) ** 64) ** 64) ** 64", ops, ()), {"a": 9})
    assert arith.evaluate(arith.check("a ** 3", ops, ()), {"a": 7}) == 343  # small integers stay exact
