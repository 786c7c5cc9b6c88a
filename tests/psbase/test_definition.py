"""Experiment definitions (perfbase's XML, paper section 3.1), units and the
conversion of text into typed values."""

from __future__ import annotations

import datetime as dt

import pytest

from psuite.errors import InputError
from psuite.psbase import definition as defmod
from psuite.psbase import units
from psuite.psbase.model import DATATYPES, BadValue, Definition, Variable, Version, convert

# The paper's Fig. 5, with its element names as perfbase spells them.
BEFF_IO = b"""<?xml version="1.0"?>
<experiment>
 <name>b_eff_io</name>
 <info>
  <performed_by><name>Joachim Worringen</name>
   <organization>C&amp;C Research Laboratories, NEC Europe Ltd.</organization></performed_by>
  <project>Optimization of MPI I/O Operations</project>
  <synopsis>Results of b_eff_io Benchmark</synopsis>
  <description> We want to track the performance changes that we achieve with
   new algorithms and parameter optimization I/O operations. </description>
 </info>
 <parameter occurence="once"><name>T</name><synopsis>specified runtime of the test</synopsis>
  <datatype>integer</datatype><unit><base_unit>s</base_unit></unit></parameter>
 <parameter occurence="once"><name>fs</name><synopsis>type of file system for the used path</synopsis>
  <datatype>string</datatype>
  <valid>ufs</valid><valid>nfs</valid><valid>fs</valid><valid>sfs</valid><valid>unknown</valid>
  <default>unknown</default></parameter>
 <parameter occurence="once"><name>date_run</name><datatype>timestamp</datatype></parameter>
 <parameter><name>S_chunk</name><datatype>integer</datatype><unit><base_unit>byte</base_unit></unit></parameter>
 <parameter><name>N_proc</name><datatype>integer</datatype><unit><base_unit>process</base_unit></unit></parameter>
 <result><name>B_scatter</name><synopsis>bandwidth for access type 0 (scatter)</synopsis>
  <datatype>float</datatype>
  <unit><fraction><dividend><base_unit>byte</base_unit><scaling>Mega</scaling></dividend>
   <divisor><base_unit>s</base_unit></divisor></fraction></unit></result>
</experiment>
"""


def test_paper_definition_is_read():
    d = defmod.parse_bytes(BEFF_IO)
    assert d.name == "b_eff_io"
    assert d.performed_by == {"name": "Joachim Worringen", "organization": "C&C Research Laboratories, NEC Europe Ltd."}
    assert d.project == "Optimization of MPI I/O Operations"
    assert d.description.startswith("We want to track") and "\n" not in d.description
    assert [v.name for v in d.parameters] == ["T", "fs", "date_run", "S_chunk", "N_proc"]
    assert [v.name for v in d.results] == ["B_scatter"]
    # perfbase: a variable without an occurrence is a column of the data set
    assert [v.occurrence for v in d.variables] == ["once", "once", "once", "multiple", "multiple", "multiple"]
    fs = d.variable("fs")
    assert fs.valid == ["ufs", "nfs", "fs", "sfs", "unknown"] and fs.default == "unknown"
    assert d.variable("T").unit == "s"
    assert d.variable("S_chunk").unit == "B"
    assert d.variable("N_proc").unit == "process"
    assert d.variable("B_scatter").unit == "MB/s"


def test_definition_round_trip(tmp_path):
    d = defmod.parse_bytes(BEFF_IO)
    path = tmp_path / "d.xml"
    path.write_bytes(defmod.to_bytes(d))
    again = defmod.load(str(path))
    assert again == d
    assert defmod.to_bytes(again) == defmod.to_bytes(d)


def test_definition_built_in_python_round_trips():
    d = Definition(
        "sweep",
        synopsis="s",
        performed_by={"name": "me"},
        variables=[
            Variable("nodes", "integer", occurrence="once", valid=["1", "2", "4"], default="1"),
            Variable("compiler", "version", occurrence="once"),
            Variable("t", "duration", unit="ms", occurrence="multiple", is_result=True),
            Variable("bw", "float", unit="KiB*s/op/s", is_result=True),
        ],
    )
    assert defmod.parse_bytes(defmod.to_bytes(d)) == d


@pytest.mark.parametrize(
    ("text", "dividend", "divisor", "factor"),
    [
        ("MB/s", [("byte", "Mega")], [("s", "")], 1e6),
        ("s", [("s", "")], [], 1.0),
        ("ms", [("s", "milli")], [], 1e-3),
        ("KiB*s/op", [("byte", "Kibi"), ("s", "")], [("op", "")], 1024.0),
        ("GB/ms", [("byte", "Giga")], [("s", "milli")], 1e12),
        ("1/s", [], [("s", "")], 1.0),
        ("process", [("process", "")], [], 1.0),
    ],
)
def test_units_parse_and_print(text, dividend, divisor, factor):
    u = units.parse(text)
    assert [(f.base, f.scaling) for f in u.dividend] == dividend
    assert [(f.base, f.scaling) for f in u.divisor] == divisor
    assert u.factor == pytest.approx(factor)
    assert str(u) == text
    assert units.from_xml(units.to_xml(u)) == u


def test_scaled_base_units_of_their_own_round_trip():
    # "process" is no built-in base unit: its scaling is spelt out, so the printed form reads back
    elem = units.from_xml(defmod.etree.fromstring(
        "<unit><fraction><dividend><base_unit>process</base_unit><scaling>Kilo</scaling></dividend>"
        "<divisor><base_unit>s</base_unit></divisor></fraction></unit>"))
    assert str(elem) == "Kilo process/s"
    back = units.parse(str(elem))
    assert back == elem and back.factor == 1e3
    assert units.from_xml(units.to_xml(back)) == elem


def test_bad_unit_is_one_line():
    with pytest.raises(InputError, match="is not a unit"):
        units.parse("MB/(s")


def _with(variables: str, name: str = "<name>e</name>") -> bytes:
    return f"<experiment>{name}{variables}</experiment>".encode()


OK_VAR = "<parameter><name>x</name><datatype>integer</datatype></parameter>"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"<experiment><name>e</name>", "not well-formed XML"),
        (b"<query/>", "root element is <query>"),
        (_with(OK_VAR, name=""), "has no <name>"),
        (_with(OK_VAR, name="<name>1abc</name>"), "is not usable"),
        (_with(""), "defines no <parameter>"),
        (_with("<parameter><datatype>integer</datatype></parameter>"), "has no <name>"),
        (_with("<parameter><name>x</name><datatype>int</datatype></parameter>"), "datatype 'int'"),
        (
            _with("<parameter occurrence='twice'><name>x</name><datatype>integer</datatype></parameter>"),
            "occurrence 'twice'",
        ),
        (_with(OK_VAR + "<result><name>X</name><datatype>float</datatype></result>"), "defined twice"),
        (_with("<parameter><name>psb_run</name><datatype>integer</datatype></parameter>"), "is not usable"),
        (
            _with("<parameter><name>x</name><datatype>integer</datatype><default>ten</default></parameter>"),
            "'ten' is not an integer",
        ),
        (
            _with(
                "<parameter><name>x</name><datatype>string</datatype><valid>a</valid><default>b</default></parameter>"
            ),
            "not a valid value",
        ),
        (
            _with(
                "<parameter><name>x</name><datatype>float</datatype><unit><base_unit>byte</base_unit>"
                "<scaling>Huge</scaling></unit></parameter>"
            ),
            "scaling 'Huge' is unknown",
        ),
        (
            _with(
                "<parameter><name>x</name><datatype>float</datatype><unit><fraction><dividend><base_unit>byte"
                "</base_unit></dividend></fraction></unit></parameter>"
            ),
            "no <divisor>",
        ),
        (_with("<parameter><name>x</name><datatype>float</datatype><unit><baseunit>s</baseunit></unit>"
               "</parameter>"), "<baseunit> (line 1) is not allowed in <unit>"),
        (_with("<parameter><name>x</name><datatype>float</datatype><unit><base_unit>bytes per sec"
               "</base_unit></unit></parameter>"), "'bytes per sec' is not a unit"),
        (_with(OK_VAR + "<bogus/>"), "<bogus> is not allowed in <experiment>"),
        (_with("<parameter><name>x</name><datatype>float</datatype><synopis>typo</synopis></parameter>"),
         "<synopis> is not allowed in <parameter>"),
    ],
)
def test_malformed_definitions_are_one_line(data, message):
    with pytest.raises(InputError) as err:
        defmod.parse_bytes(data, "d.xml")
    text = str(err.value)
    assert message in text
    assert "\n" not in text and text.startswith("d.xml")


def test_missing_definition_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        defmod.load(str(tmp_path / "nope.xml"))


def test_entities_are_not_expanded():
    data = (
        b'<!DOCTYPE experiment [<!ENTITY x SYSTEM "file:///etc/passwd">]><experiment><name>e</name>'
        b"<info><synopsis>&x;</synopsis></info>" + OK_VAR.encode() + b"</experiment>"
    )
    assert "root" not in defmod.parse_bytes(data).synopsis


GOOD = [
    ("integer", " 42 ", 42),
    ("integer", "-7", -7),
    ("integer", "4.0", 4),
    ("integer", "1e3", 1000),
    ("float", "2.5", 2.5),
    ("float", "1e-3", 0.001),
    ("float", "7", 7.0),
    ("string", "  ufs ", "ufs"),
    ("text", " two words\n", " two words\n"),
    ("date", "2004-06-22", dt.date(2004, 6, 22)),
    ("date", "22.06.2004", dt.date(2004, 6, 22)),
    ("time", "14:37:05", dt.time(14, 37, 5)),
    ("time", "14:37", dt.time(14, 37)),
    ("duration", "90", dt.timedelta(seconds=90)),
    ("duration", "1:02:03", dt.timedelta(hours=1, minutes=2, seconds=3)),
    ("duration", "1h2m3s", dt.timedelta(hours=1, minutes=2, seconds=3)),
    ("duration", "250ms", dt.timedelta(seconds=0.25)),
    ("timestamp", "2004-06-22 14:37:05", dt.datetime(2004, 6, 22, 14, 37, 5)),
    ("timestamp", "Tue Jun 22 14:37:05 2004", dt.datetime(2004, 6, 22, 14, 37, 5)),
    ("boolean", "yes", True),
    ("boolean", "FALSE", False),
    ("boolean", "1", True),
    ("boolean", "off", False),
    ("version", "2.6.10", "2.6.10"),
]


@pytest.mark.parametrize(("datatype", "text", "value"), GOOD)
def test_convert_every_datatype(datatype, text, value):
    got = convert(Variable("v", datatype), text)
    assert got == value
    assert type(got) is type(value) or (datatype == "version" and isinstance(got, Version))


def test_every_datatype_is_covered():
    assert {t for t, _, _ in GOOD} == set(DATATYPES)


@pytest.mark.parametrize(
    ("datatype", "text"),
    [
        ("integer", "4.5"),
        ("integer", "four"),
        ("integer", ""),
        ("float", "1,5"),
        ("float", "nan"),
        ("date", "2004-13-01"),
        ("date", "yesterday"),
        ("time", "25:00"),
        ("duration", "soon"),
        ("duration", "1:2:3:4"),
        ("timestamp", "2004-06-22 25:00"),
        ("boolean", "maybe"),
        ("version", "latest"),
        ("version", "1.2 beta"),
    ],
)
def test_convert_refuses_bad_values(datatype, text):
    with pytest.raises(BadValue) as err:
        convert(Variable("v", datatype), text)
    message = str(err.value)
    assert "'v'" in message and repr(text.strip()) in message and "\n" not in message


def test_convert_checks_valid_values():
    v = Variable("fs", "string", valid=["ufs", "nfs"])
    assert convert(v, "nfs") == "nfs"
    with pytest.raises(BadValue, match="use one of ufs, nfs"):
        convert(v, "xfs")
    n = Variable("nodes", "integer", valid=["1", "2", "4"])
    assert convert(n, "4.0") == 4  # compared as values, not as text
    with pytest.raises(BadValue):
        convert(n, "3")


def test_versions_compare_part_by_part():
    v = Variable("v", "version")
    assert convert(v, "1.10") > convert(v, "1.9")
    assert convert(v, "2.6.10") > convert(v, "2.6.9")
    assert sorted(["1.10", "1.2", "1.9"], key=lambda s: Version(s).key()) == ["1.2", "1.9", "1.10"]
