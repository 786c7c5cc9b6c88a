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
An empty <default></default> makes no value (NULL) the default: a run
imported with the missing-value policy "default" keeps such a variable empty.
Every problem is one InputError line naming the element and the fix."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field, replace

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


def _raw(elem: etree._Element | None) -> str | None:
    """An element's text as written (perfbase keeps a description's line breaks)."""
    return None if elem is None else elem.text or ""


def check_name(name: str, what: str) -> str:
    if not NAME_RE.match(name):
        raise InputError(f"{what} name {name!r} is not usable; use a letter followed by letters, digits or "
                         "underscores (at most 63, not starting with psb_)")
    return name


def parse_bytes(data: bytes, source: str = "definition") -> Definition | ExperimentUpdate:
    """An experiment definition, or perfbase's <experiment_update> (applied by Store.update)."""
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        raise InputError(f"{source}: not well-formed XML ({exc}); fix the file") from None
    if root.tag == "experiment_update":
        return _update(root, source)
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
                   performed_by=performed, project=_text(info.find("project")),
                   raw_description=_raw(info.find("description")))
    _known(root, source, ("name", "info", "parameter", "result", *_ACCESS, *_INFO))
    for elem in root:
        if elem.tag in _ACCESS:
            d.access += _access_list(elem, source, elem.tag.split("_")[0])
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
_ACCESS = ("admin_access", "input_access", "query_access")  # perfbase's user classes


def _access_list(elem: etree._Element, source: str, cls: str | None) -> list[tuple[str, str, str]]:
    """The <user> and <group> names of an access element: (class, kind, name) each."""
    _known(elem, source, ("user", "group"))
    out = []
    for child in elem:
        name = _text(child)
        if not name:
            raise InputError(f"{source} line {child.sourceline}: <{child.tag}> is empty; give the name of a "
                             f"{child.tag} of the database server")
        out.append((cls or "", child.tag, name))
    if not out:
        raise InputError(f"{source} line {elem.sourceline}: <{elem.tag}> names no <user> or <group>; add one")
    return out


def _access_changes(elem: etree._Element, source: str) -> list[tuple[str, str, str]]:
    """<access_add> and <access_change>: their access elements' (class, kind, name)."""
    _known(elem, source, _ACCESS)
    return [a for e in elem for a in _access_list(e, source, e.tag.split("_")[0])]
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


@dataclass
class ExperimentUpdate:
    """perfbase's <experiment_update>: changes to an experiment's definition.  Each <parameter> or
    <result> adds a variable, changes the elements it gives of an existing one (<new_name> renames
    it), replaces it (action="replace") or removes it (action="drop")."""

    name: str
    source: str
    info: etree._Element | None = None
    variables: list[etree._Element] = field(default_factory=list)
    # perfbase's <access_add>/<access_change> ((class, kind, name): the class given) and <access_revoke>
    # ((kind, name): the class taken); applied to the archive's user classes (PostgreSQL)
    access_given: list[tuple[str, str, str]] = field(default_factory=list)
    access_revoked: list[tuple[str, str]] = field(default_factory=list)

    def apply(self, old: Definition) -> tuple[Definition, dict[str, str]]:
        """The new definition and the renames (old name -> new name); one InputError line if the
        update does not fit the experiment."""
        d = copy.deepcopy(old)
        if self.info is not None:
            for key in ("project", "synopsis", "description"):
                if self.info.find(key) is not None:
                    setattr(d, key, _text(self.info.find(key)))
            if self.info.find("description") is not None:
                d.raw_description = _raw(self.info.find("description"))
            pb = self.info.find("performed_by")
            if pb is not None:
                given = [k for k in ("name", "organization") if pb.find(k) is not None]
                d.performed_by.update({k: _text(pb.find(k)) for k in given})
        origin: dict[str, str] = {}  # a renamed variable's name now -> its name in the archive
        for elem in self.variables:
            where = f"{self.source} line {elem.sourceline}"
            name = _text(elem.find("name"))
            action = elem.get("action", "auto")
            if action not in ("auto", "replace", "drop"):
                raise InputError(f"{where}: action={action!r}; use auto, replace or drop")
            at = next((i for i, v in enumerate(d.variables) if v.name.lower() == name.lower()), None)
            if action == "drop":
                if at is None:
                    raise InputError(f"{where}: experiment {old.name!r} has no variable {name!r} to drop; "
                                     "fix the name (nothing was changed)")
                origin.pop(d.variables[at].name, None)
                del d.variables[at]
                continue
            if at is None or action == "replace":
                new = _variable(_as_definition_variable(elem), self.source)
                if at is None:
                    d.variables.append(new)
                else:
                    d.variables[at] = new
                continue
            was = d.variables[at].name
            d.variables[at] = _changed(d.variables[at], elem, where)
            if d.variables[at].name != was:
                origin[d.variables[at].name] = origin.pop(was, was)
        names = [v.name.lower() for v in d.variables]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InputError(f"{self.source}: the update makes two variables named {twice[0]!r}; rename one")
        if not d.variables:
            raise InputError(f"{self.source}: the update leaves experiment {old.name!r} no variables; keep one")
        return d, {old_name: now for now, old_name in origin.items() if old_name != now}


def _as_definition_variable(elem: etree._Element) -> etree._Element:
    """An update's <parameter>/<result> as a definition's: without <new_name>."""
    e = copy.deepcopy(elem)
    for child in e.findall("new_name"):
        e.remove(child)
    return e


def _changed(v: Variable, elem: etree._Element, where: str) -> Variable:
    """v with the elements the update gives."""
    _known(elem, where, ("new_name", *_VARIABLE))
    changes: dict[str, object] = {}
    for key in ("synopsis", "description"):
        if elem.find(key) is not None:
            changes[key] = _text(elem.find(key))
    if elem.find("new_name") is not None:
        changes["name"] = check_name(_text(elem.find("new_name")), f"{where}: new_name")
    if elem.find("datatype") is not None:
        changes["datatype"] = _text(elem.find("datatype"))
        if changes["datatype"] not in DATATYPES:
            raise InputError(f"{where}: {elem.tag} {v.name!r} has datatype {changes['datatype']!r}; "
                             f"use one of {', '.join(DATATYPES)}")
    occurrence = elem.get("occurrence", elem.get("occurence"))
    if occurrence is not None:
        if occurrence.strip() not in OCCURRENCES:
            raise InputError(f"{where}: {elem.tag} {v.name!r} has occurrence {occurrence!r}; use once or multiple")
        changes["occurrence"] = occurrence.strip()
    if elem.find("unit") is not None:
        try:
            changes["unit"] = str(units.from_xml(elem.find("unit")))
        except InputError as exc:
            raise InputError(f"{where}: {elem.tag} {v.name!r}: {exc}") from None
    if elem.findall("valid"):
        changes["valid"] = [(e.text or "").strip() for e in elem.findall("valid")]
    if elem.find("default") is not None:
        changes["default"] = (elem.find("default").text or "").strip()
    new = replace(v, **changes)
    check_variable(new, where)
    return new


def _update(root: etree._Element, source: str) -> ExperimentUpdate:
    _known(root, source, ("experiment", "name", "info", "access_add", "access_change", "access_revoke",
                          "parameter", "result"))
    name = _text(root.find("experiment")) or _text(root.find("name"))
    if not name:
        raise InputError(f"{source}: the <experiment_update> names no <experiment>; add <experiment>NAME</experiment>")
    info = root.find("info")
    if info is not None:
        _known(info, source, _INFO)
    given = [a for e in root if e.tag in ("access_add", "access_change") for a in _access_changes(e, source)]
    revoked = [(kind, name) for e in root if e.tag == "access_revoke"
               for _, kind, name in _access_list(e, source, None)]
    return ExperimentUpdate(check_name(name, f"{source}: experiment"), source, info,
                            [e for e in root if e.tag in ("parameter", "result")], given, revoked)


def check_variable(v: Variable, where: str = "definition") -> None:
    """The valid values and the default must be values of the datatype, and
    the default one of the valid values."""
    try:
        for text in v.valid:
            convert(Variable(v.name, v.datatype), text)
        if v.default:  # "" (an empty <default>): no value, as perfbase's NULL default
            convert(v, v.default)
    except BadValue as exc:
        raise InputError(f"{where}: {exc}") from None


def load(path: str) -> Definition | ExperimentUpdate:
    """An experiment definition file (or perfbase's experiment update); one InputError line if it
    cannot be used."""
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
            # the description as written (it reads back to the same normalized text)
            etree.SubElement(info, key).text = d.raw_description if key == "description" and \
                d.raw_description else getattr(d, key)
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


_PB_SCALES = {"Kibi": "Ki", "Mebi": "Mi", "Gibi": "Gi", "Tebi": "Ti", "Pebi": "Pi"}  # psbase's names: perfbase's
_PB_PREFIX = {"Kilo": "K", "Mega": "M", "Giga": "G", "Tera": "T", "Peta": "P", "milli": "m", "micro": "u",
              "nano": "n", "pico": "p", "femto": "f"}


def perfbase_unit(unit: str) -> str:
    """A unit as perfbase's setup writes it into its archive (and info prints it): scaling letters before the
    base unit (us, MB/s, Kibyte), "1" for an empty dividend, "" for none."""
    if not unit:
        return ""

    def text(e: etree._Element) -> str:
        frac = e.find("fraction")
        if frac is not None:
            return (text(frac.find("dividend")) or "1") + "/" + text(frac.find("divisor"))
        prod = e.find("product")
        if prod is not None:
            return "*".join(text(f) for f in prod.findall("factor"))
        base = (e.findtext("base_unit") or "none").strip()
        scale = (e.findtext("scaling") or "").strip()
        return _PB_SCALES.get(scale, _PB_PREFIX.get(scale, scale)) + ("" if base == "none" else base)

    return text(units.to_xml(units.parse(unit)))


def perfbase_type(v: Variable) -> str:
    """A variable's datatype as perfbase's archive names it: integer and float with their size (4 bytes)."""
    return f"{v.datatype}(4)" if v.datatype in ("integer", "float") else v.datatype


def to_bytes(d: Definition) -> bytes:
    return etree.tostring(to_element(d), pretty_print=True, xml_declaration=True, encoding="UTF-8")
