"""perfbase's experiment definition XML (paper section 3.1), read into a
model.Definition and written back.

    <experiment>
      <name>b_eff_io</name>
      <info>
        <performed_by><name>..</name><organization>..</organization></performed_by>
        <project>..</project> <synopsis>..</synopsis> <description>..</description>
      </info>
      <parameter occurrence="once"> <name>T</name> <synopsis>..</synopsis> <description>..</description>
        <datatype>integer</datatype> <unit><base_unit>s</base_unit></unit>
        <valid>..</valid>... <default>..</default> </parameter>
      <result>...</result>
    </experiment>

As in perfbase, a variable without an occurrence attribute is a column of
the data set ("multiple"); perfbase's spelling "occurence" is accepted too.
Every problem is one InputError line naming the element and the fix."""

from __future__ import annotations

import re

from lxml import etree

from psuite.cli_common import read_input
from psuite.errors import InputError
from psuite.psbase import units
from psuite.psbase.model import DATATYPES, OCCURRENCES, BadValue, Definition, Variable, convert

NAME_RE = re.compile(r"^(?!psb_)[A-Za-z][A-Za-z0-9_]{0,62}$", re.I)  # also a column name in the store


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, remove_comments=True,
                            remove_pis=True)


def _text(elem: etree._Element | None) -> str:
    return " ".join((elem.text or "").split()) if elem is not None else ""


def check_name(name: str, what: str) -> str:
    if not NAME_RE.match(name):
        raise InputError(f"{what} name {name!r} is not usable; use a letter followed by letters, digits or "
                         "underscores (at most 63, not starting with psb_)")
    return name


def parse_bytes(data: bytes, source: str = "definition") -> Definition:
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        raise InputError(f"{source}: not well-formed XML ({exc}); fix the file") from None
    if root.tag != "experiment":
        raise InputError(f"{source}: the root element is <{root.tag}>, not <experiment>; "
                         "give an experiment definition")
    name = _text(root.find("name"))
    if not name:
        raise InputError(f"{source}: the experiment has no <name>; add <name>...</name> under <experiment>")
    check_name(name, f"{source}: experiment")
    info = root.find("info")
    if info is None:
        info = root  # tolerated: meta elements directly under <experiment>
    performed = {}
    pb = info.find("performed_by")
    if pb is not None:
        for key in ("name", "organization"):
            if _text(pb.find(key)):
                performed[key] = _text(pb.find(key))
    d = Definition(name=name, synopsis=_text(info.find("synopsis")), description=_text(info.find("description")),
                   performed_by=performed, project=_text(info.find("project")))
    _known(root, source, ("name", "info", "parameter", "result", *_INFO))
    if info is not root:
        _known(info, source, _INFO)
    if pb is not None:
        _known(pb, source, ("name", "organization"))
    seen: set[str] = set()
    for elem in root:
        if elem.tag not in ("parameter", "result"):
            continue
        v = _variable(elem, source)
        if v.name.lower() in seen:  # SQLite's column names ignore case
            raise InputError(f"{source}: variable {v.name!r} is defined twice (line {elem.sourceline}); "
                             "remove one")
        seen.add(v.name.lower())
        d.variables.append(v)
    if not d.variables:
        raise InputError(f"{source}: the experiment defines no <parameter> or <result>; add at least one")
    return d


_INFO = ("performed_by", "project", "synopsis", "description")
_VARIABLE = ("name", "synopsis", "description", "datatype", "unit", "valid", "default")


def _known(elem: etree._Element, source: str, allowed: tuple[str, ...]) -> None:
    """Refuse an element the format does not have: a misspelt <baseunit> must
    not silently leave a variable without its unit."""
    for child in elem:
        if child.tag not in allowed:
            raise InputError(f"{source} line {child.sourceline}: <{child.tag}> is not allowed in <{elem.tag}>; "
                             f"use {', '.join('<' + a + '>' for a in allowed)}")


def _variable(elem: etree._Element, source: str) -> Variable:
    where = f"{source} line {elem.sourceline}"
    _known(elem, source, _VARIABLE)
    name = _text(elem.find("name"))
    if not name:
        raise InputError(f"{where}: a <{elem.tag}> has no <name>; add one")
    check_name(name, f"{where}: {elem.tag}")
    datatype = _text(elem.find("datatype"))
    if datatype not in DATATYPES:
        raise InputError(f"{where}: {elem.tag} {name!r} has datatype {datatype!r}; "
                         f"use one of {', '.join(DATATYPES)}")
    occurrence = elem.get("occurrence", elem.get("occurence", "multiple")).strip()
    if occurrence not in OCCURRENCES:
        raise InputError(f"{where}: {elem.tag} {name!r} has occurrence {occurrence!r}; use once or multiple")
    unit = ""
    u = elem.find("unit")
    if u is not None:
        try:
            unit = str(units.from_xml(u))
            units.parse(unit)  # the printed form must read back: it is what the archive keeps
        except InputError as exc:
            raise InputError(f"{where}: {elem.tag} {name!r}: {exc}") from None
    default_elem = elem.find("default")
    v = Variable(name=name, datatype=datatype, synopsis=_text(elem.find("synopsis")),
                 description=_text(elem.find("description")), unit=unit, occurrence=occurrence,
                 valid=[(e.text or "").strip() for e in elem.findall("valid")],
                 default=(default_elem.text or "").strip() if default_elem is not None else None,
                 is_result=elem.tag == "result")
    check_variable(v, where)
    return v


def check_variable(v: Variable, where: str = "definition") -> None:
    """The valid values and the default must be values of the datatype, and
    the default one of the valid values."""
    try:
        for text in v.valid:
            convert(Variable(v.name, v.datatype), text)
        if v.default is not None:
            convert(v, v.default)
    except BadValue as exc:
        raise InputError(f"{where}: {exc}") from None


def load(path: str) -> Definition:
    """An experiment definition file; one InputError line if it cannot be used."""
    return parse_bytes(read_input(path, "definition"), path)


def to_element(d: Definition) -> etree._Element:
    root = etree.Element("experiment")
    etree.SubElement(root, "name").text = d.name
    info = etree.SubElement(root, "info")
    if d.performed_by:
        pb = etree.SubElement(info, "performed_by")
        for key in ("name", "organization"):
            if key in d.performed_by:
                etree.SubElement(pb, key).text = d.performed_by[key]
    for key in ("project", "synopsis", "description"):
        if getattr(d, key):
            etree.SubElement(info, key).text = getattr(d, key)
    for v in d.variables:
        e = etree.SubElement(root, "result" if v.is_result else "parameter", occurrence=v.occurrence)
        etree.SubElement(e, "name").text = v.name
        for key in ("synopsis", "description"):
            if getattr(v, key):
                etree.SubElement(e, key).text = getattr(v, key)
        etree.SubElement(e, "datatype").text = v.datatype
        if v.unit:
            e.append(units.to_xml(units.parse(v.unit)))
        for text in v.valid:
            etree.SubElement(e, "valid").text = text
        if v.default is not None:
            etree.SubElement(e, "default").text = v.default
    return root


def to_bytes(d: Definition) -> bytes:
    return etree.tostring(to_element(d), pretty_print=True, xml_declaration=True, encoding="UTF-8")
