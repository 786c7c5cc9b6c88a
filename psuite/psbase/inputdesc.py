"""perfbase input descriptions (paper, section 3.2): an XML file telling
psbase where, in any program's text output, the values of an experiment's
parameters and results are, so that the output becomes runs.

    <input missing="refuse">                       missing-value policy for all variables:
                                                   default | empty | refuse (the default)
      <missing name="fs" policy="default"/>        ... or for one variable
      <set_separation><match>MEMORY PER</match></set_separation>
                                                   a line matching it starts a new run
                                                   (text before the first one belongs to no run)
      <fixed_value><name>host</name><value>grisu</value></fixed_value>
      <filename_location><regexp>_T(\\d+)_N(\\d+)_</regexp><name>T</name><name group="2">N</name>
      </filename_location>                         groups of the file's base name; <name> elements
                                                   take groups 1, 2, ... in order unless group= says
      <named_location side="after" line="same" word="1">
        <name>T</name><match>T=</match>          or <regexp>; a regexp with a group takes the group
      </named_location>
      <explicit_location><name>x</name><row>3</row><column>2</column></explicit_location>
                                                   row: line of the run (1 = first), column: word
      <tabular_location>
        <match>number pos chunk-</match><skip>3</skip>   <skip> header lines follow the match line
        <row>^\\s*\\d+ PEs \\d+ </row>               optional: a line not matching it ends the table
        <ignore>total-</ignore>                      optional: lines matching it are skipped
        <column pos="1">N_proc</column>              pos: word of the line (1 = first)
      </tabular_location>
      <derived_parameter><name>mem</name><term>mem_pe * N</term></derived_parameter>
    </input>

Every location takes the first line that matches.  A named location's
content is the text after (side="after") or before (side="before") the match
on its line, or the whole next line (line="next"); word="n" takes the nth
word (counted backwards from the match for "before").  Without word=,
numbers take the first word after (the last word before) the match and other
types the whole text, less a leading ':' or '='.

A table ends at a blank line, at a line not matching <row>, or at a line with
fewer words than its highest column; each table line is one data-set row of
the multiple-occurrence variables.  Values are typed with model.convert, and
a value that does not convert is an error naming file, line and variable.

A variable has a <fixed_value>, a derived_parameter or locations, not two
of these; values given on the command line (`fixed`) override all.  Derived
parameters are computed last, in the order given, by a small arithmetic
evaluator (numbers, variable names, + - * / // % **, abs min max round):
nothing is passed to eval.

Each file is one run, its content_hash the sha256 of its bytes; several
files merged into one run hash the sorted digests of their bytes (the same
files in any order or under other paths are the same run).  Each of several
runs in one file (run separators) has the sha256 of its own lines: a second
import of the file is refused, and runs appended to the file later are new.
"""

from __future__ import annotations

import ast
import hashlib
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import regex
from lxml import etree

from psuite.cli_common import read_input
from psuite.errors import InputError, UsageError
from psuite.psbase import arith
from psuite.psbase.model import STRING_MAX, BadValue, Definition, RunData, Variable, Version, convert, given_twice

# abort: perfbase's policy (its -a abort, the default): a run missing a value of one occurrence is refused,
# a data-set value missing from a row stays empty (perfbase checks values of one occurrence only)
POLICIES = ("default", "empty", "abort", "refuse")
NUMERIC = ("integer", "float")

REGEXP_SECONDS = 2.0  # the most one regexp may take on one line of an input file


# ---------------------------------------------------------------------------
# The parsed description


@dataclass(frozen=True)
class Pattern:
    """A <match> (literal) or <regexp>.

    Input descriptions come from other people: a regexp that backtracks
    without end (``^(a|aa)+$`` on a long line) is stopped after
    REGEXP_SECONDS on one line (the `regex` module's timeout; `re` has
    none) and the import refused, rather than hanging psbase."""

    text: str
    compiled: regex.Pattern[str]

    def search(self, line: str) -> regex.Match[str] | None:
        try:
            return self.compiled.search(line, timeout=REGEXP_SECONDS)
        except TimeoutError:
            raise self._too_slow(line) from None

    def count(self, line: str) -> int:
        """How often the pattern occurs in line (occurrences do not overlap)."""
        try:
            return len(self.compiled.findall(line, timeout=REGEXP_SECONDS))
        except TimeoutError:
            raise self._too_slow(line) from None

    def _too_slow(self, line: str) -> InputError:
        return InputError(
            f"regular expression {self.text!r} took more than {REGEXP_SECONDS:g} s on one line of "
            f"{len(line)} characters (it backtracks without bound); simplify it, e.g. (a+)+ to a+"
        )


@dataclass(frozen=True)
class NamedLocation:
    name: str
    pattern: Pattern
    side: str = "after"  # "after" | "before"
    next_line: bool = False
    word: int | None = None
    sourceline: int | None = None
    is_separator: bool = False  # perfbase's is_separator="yes": each matching line starts a new run
    # perfbase's mode: "assign" (the content), "count" (occurrences of the match in the run, several on a
    # line too) or "boolean" (whether the match occurs in the run)
    mode: str = "assign"
    patterns: tuple[Pattern, ...] = ()  # all <match>/<regexp>s: a line with any of them (pattern is the first)
    triggers: tuple[tuple[Pattern, int], ...] = ()  # <trigger>: a line <skip> lines after one matching
    maps: tuple[tuple[Pattern, str], ...] = ()  # <map>: content matching content_in becomes content_out
    store_set: bool = False  # perfbase's store_set="yes": each occurrence completes a data-set row
    length: int | None = None  # perfbase's len=: 0 the rest of the line, n that many characters
    last: bool = False  # perfbase's retrigger="yes": a once-value takes its last occurrence, not its first
    # perfbase's <match marker="begin" skip="n">/<match marker="end">: the text from a begin marker (the
    # rest of its line, or from n lines below it) up to the first end marker
    begins: tuple[tuple[str, int], ...] = ()
    ends: tuple[str, ...] = ()
    # perfbase's lines=: the raw text of n lines from the one taken (0: up to a blank line), breaks kept
    lines: int | None = None
    # no <match>, <regexp> or <trigger>: the variable's valid values and the <map> inputs are looked for,
    # and the one found is the content (the patterns are filled in when the experiment is known)
    from_valid: bool = False
    sticky: bool = True  # perfbase's sticky="no": a data-set value goes to the next row only
    terminators: tuple[tuple[str, str], ...] = ()  # <match terminator="x">: (match text, x)


@dataclass(frozen=True)
class ExplicitLocation:
    name: str
    row: int
    column: int
    sourceline: int | None = None


@dataclass(frozen=True)
class FilenameLocation:
    pattern: Pattern
    groups: tuple[tuple[int, str], ...]  # (group number, variable)
    sourceline: int | None = None


@dataclass(frozen=True)
class PbFilenameLocation:
    """perfbase's <filename_location> with <match>es (or none: the variable's valid values): the file's
    path as given is searched for each match text; the last one found is taken, and the value is the
    first word after it (up to its terminator=, or the rest with len="0"), or the match itself when it
    is a valid value.  match="fuzzy" also searches the text in lower case and without underscores."""

    name: str
    matches: tuple[tuple[str, str | None], ...]  # (text, terminator)
    length: int | None = None  # None: the first word; 0: the rest of the path; n: n characters
    boolean: bool = False
    maps: tuple[tuple[str, str], ...] = ()
    from_valid: bool = False  # no <match>: the variable's <valid> values (and <map> inputs) are the matches
    sourceline: int | None = None


@dataclass(frozen=True)
class TabularLocation:
    pattern: Pattern
    columns: tuple[tuple[int, str], ...]  # (word position, variable)
    skip: int = 0
    row: Pattern | None = None
    ignore: Pattern | None = None
    sourceline: int | None = None


@dataclass(frozen=True)
class TabularValue:
    """perfbase's <tabular_value>: a column by <pos> (0 = first word) or the word after a <match>."""

    name: str
    pos: int | None  # absolute, 0-based; None: the column after the previous value's
    match: str | None = None
    scale: float | None = None
    update: str = "no"  # perfbase's update="yes"|"auto": the value keys the row it completes
    maps: tuple[tuple[str, regex.Pattern[str] | None, str], ...] = ()  # <map>: (content_in, its regexp, out)


@dataclass(frozen=True)
class PerfbaseTable:
    """perfbase's <tabular_location> (with <tabular_value>s), with perfbase's semantics: a line
    containing a <match> or matching a <regexp> (or line number <row>; none of these: any
    line) triggers a table whose first row is <skip> lines further (0: the line itself); the
    table runs while lines have its number of columns (columns=, else the first row's), up to
    rows= rows, and ends at a blank line; a later trigger starts another table."""

    triggers: tuple[Pattern, ...]
    values: tuple[TabularValue, ...]
    row: int | None = None
    skip: int = 0
    columns: int | None = None
    rows: int | None = None
    ws: str | None = None
    sourceline: int | None = None


@dataclass(frozen=True)
class SplitLocation:
    """perfbase's <split_location>: a line an <enter> location matches opens a record (a stack: they
    nest), the next line a <leave> location matches closes the latest one and makes a data-set row of
    the <store> names: the value at leave (current, leave), at enter, or leave minus enter (diff), their
    sum, max or min."""

    enter: tuple[NamedLocation, ...]
    leave: tuple[NamedLocation, ...]
    store: tuple[tuple[str, str], ...]  # (variable, what)
    sourceline: int | None = None


@dataclass(frozen=True)
class DerivedParameter:
    name: str
    term: str
    tree: ast.Expression | None
    names: tuple[str, ...]
    sourceline: int | None = None
    # perfbase's <map value="VAR">: (variable, content_in as a regexp, content_out), the first that matches
    maps: tuple[tuple[str, regex.Pattern[str], str], ...] = ()


@dataclass
class InputDescription:
    path: str
    separator: Pattern | None = None
    fixed: dict[str, str] = field(default_factory=dict)
    named: list[NamedLocation] = field(default_factory=list)
    explicit: list[ExplicitLocation] = field(default_factory=list)
    filename: list[FilenameLocation] = field(default_factory=list)
    pb_filename: list[PbFilenameLocation] = field(default_factory=list)
    tables: list[TabularLocation] = field(default_factory=list)
    pb_tables: list[PerfbaseTable] = field(default_factory=list)
    splits: list[SplitLocation] = field(default_factory=list)
    derived: list[DerivedParameter] = field(default_factory=list)
    missing: str = "refuse"
    missing_for: dict[str, str] = field(default_factory=dict)
    # perfbase's <tabular_location is_separator="yes">: a table after the first starts a new run (the text
    # before the first table belongs to the first run)
    table_separates: bool = False

    def uses(self) -> list[tuple[str, str, str]]:
        """(variable, element, needed occurrence or '') for every variable the description names."""
        out = [(n, "fixed_value", "") for n in self.fixed]
        out += [(loc.name, "named_location", "" if loc.mode == "assign" else "once") for loc in self.named]
        out += [(loc.name, "explicit_location", "once") for loc in self.explicit]
        out += [(name, "filename_location", "once") for loc in self.filename for _, name in loc.groups]
        out += [(loc.name, "filename_location", "") for loc in self.pb_filename]
        out += [(name, "tabular_location", "multiple") for t in self.tables for _, name in t.columns]
        out += [(v.name, "tabular_location", "multiple") for t in self.pb_tables for v in t.values]
        out += [(d.name, "derived_parameter", "") for d in self.derived]
        out += [(n, "split_location", "multiple") for sp in self.splits for n, _ in sp.store]
        out += [(n, "missing", "") for n in self.missing_for]
        return out


# ---------------------------------------------------------------------------
# Parsing the XML


def _fail(path: str, elem: etree._Element | None, problem: str) -> UsageError:
    where = f"<{elem.tag}> (line {elem.sourceline})" if elem is not None else "input description"
    return UsageError(f"{path}: {where}: {problem}")


def _child_text(path: str, elem: etree._Element, tag: str, required: bool = True) -> str | None:
    found = elem.findall(tag)
    if len(found) > 1:
        raise _fail(path, elem, f"more than one <{tag}>; give exactly one")
    if not found:
        if required:
            raise _fail(path, elem, f"<{tag}> is missing; add it")
        return None
    text = (found[0].text or "").strip()
    if not text:
        raise _fail(path, found[0], "is empty; give its content")
    return text


def _positive(path: str, elem: etree._Element, text: str | None, what: str, zero: bool = False) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < (0 if zero else 1):
        raise _fail(path, elem, f"{what} {text!r} is not a {'non-negative' if zero else 'positive'} integer")
    return value


def _compile(path: str, elem: etree._Element, text: str, literal: bool) -> Pattern:
    try:
        return Pattern(text, regex.compile(regex.escape(text) if literal else text))
    except regex.error as exc:
        raise _fail(path, elem, f"regular expression {text!r} does not compile ({exc}); fix it") from None


def _pattern(path: str, elem: etree._Element) -> Pattern:
    """The one <match> or <regexp> child of elem."""
    match = _child_text(path, elem, "match", required=False)
    regexp = _child_text(path, elem, "regexp", required=False)
    if (match is None) == (regexp is None):
        raise _fail(path, elem, "give exactly one <match> or <regexp>")
    return _compile(path, elem, match if match is not None else regexp, literal=match is not None)


def _optional_pattern(path: str, elem: etree._Element, tag: str) -> Pattern | None:
    text = _child_text(path, elem, tag, required=False)
    return None if text is None else _compile(path, elem, text, literal=False)


def _choice(path: str, elem: etree._Element, attr: str, choices: tuple[str, ...], default: str) -> str:
    value = elem.get(attr, default)
    if value not in choices:
        raise _fail(path, elem, f"{attr}={value!r} is not one of {', '.join(choices)}")
    return value


def parse(path: str) -> InputDescription:
    """Read an input description; a malformed one is a one-line UsageError naming file and element."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True, remove_pis=True)
    data = read_input(path, "input description")  # a regular file only: a FIFO or /dev/zero would never end
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise UsageError(f"{path}: not well-formed XML ({exc}); fix the input description") from None
    if root.tag != "input":
        raise _fail(path, root, "the root element of an input description must be <input>")
    desc = InputDescription(path=path, missing=_choice(path, root, "missing", POLICIES, "refuse"))
    handlers = {
        "set_separation": _parse_separator,
        "fixed_value": _parse_fixed,
        "named_location": _parse_named,
        "explicit_location": _parse_explicit,
        "filename_location": _parse_filename,
        "tabular_location": _parse_table,
        "derived_parameter": _parse_derived,
        "split_location": _parse_split,
        "missing": _parse_missing,
    }
    for elem in root:
        if elem.tag in ("synopsis", "description", "experiment"):
            continue
        handler = handlers.get(elem.tag)
        if handler is None:
            raise _fail(path, elem, f"unknown element; use one of {', '.join(sorted(handlers))}")
        handler(path, elem, desc)
    return desc


def _parse_separator(path: str, elem: etree._Element, desc: InputDescription) -> None:
    if desc.separator is not None:
        raise _fail(path, elem, "a second <set_separation>; give one")
    desc.separator = _pattern(path, elem)


def _parse_fixed(path: str, elem: etree._Element, desc: InputDescription) -> None:
    name = _child_text(path, elem, "name")
    if name in desc.fixed:
        raise _fail(path, elem, f"'{name}' is fixed twice")
    # perfbase writes <content>, psbase <value>
    value = _child_text(path, elem, "content", required=False)
    desc.fixed[name] = value if value is not None else _child_text(path, elem, "value")


def _supported(path: str, elem: etree._Element, attributes: dict[str, tuple[str, ...] | None]) -> None:
    """perfbase attributes psbase does not implement are refused, not ignored: ignoring one would
    file other values than perfbase does.  attributes: name -> the values taken (None: any)."""
    for node in [elem, *elem.iter("match", "regexp")]:
        allowed = attributes if node is elem else {"match": ("fuzzy",), "marker": ("begin", "end"), "skip": None,
                                                   "terminator": None}
        if node is not elem and node.get("skip") is not None and node.get("marker") != "begin":
            raise _fail(path, node, "skip= is read only with marker=\"begin\"; remove it or add marker=\"begin\"")
        for name, value in node.attrib.items():
            if name not in allowed or (allowed[name] is not None and value not in allowed[name]):
                raise _fail(path, node, f"{name}={value!r} is not supported by psbase; remove it or read the "
                            "value another way")


def _parse_named(path: str, elem: etree._Element, desc: InputDescription) -> None:
    _supported(path, elem, {"side": None, "line": None, "word": None, "mode": None, "content": None,
                            "is_separator": None, "store_set": None, "len": None, "retrigger": ("auto", "no", "yes"),
                            "sticky": ("yes", "no"), "update": ("no",), "lines": None})
    content = _choice(path, elem, "content", ("leads", "follows"), "follows")  # perfbase's side=
    side = _choice(path, elem, "side", ("after", "before"), {"leads": "before"}.get(content, "after"))
    line = _choice(path, elem, "line", ("same", "next"), "same")
    word = _positive(path, elem, elem.get("word"), "word=")
    mode = _choice(path, elem, "mode", ("assign", "count", "boolean"), "assign")
    separator = _choice(path, elem, "is_separator", ("yes", "no"), "no") == "yes"
    store_set = _choice(path, elem, "store_set", ("yes", "no"), "no") == "yes"
    for child in elem:
        if child.tag not in ("name", "match", "regexp", "trigger", "map"):
            raise _fail(path, child, "is not supported in <named_location>; use <name>, <match>, <regexp>, "
                        "<trigger> or <map>")
    patterns = [_compile(path, c, c.text or "", literal=c.tag == "match")
                for c in elem if c.tag in ("match", "regexp") and c.get("marker") is None]
    begins = tuple((c.text or "", _positive(path, c, c.get("skip", "0"), "skip=", zero=True))
                   for c in elem.findall("match") if c.get("marker") == "begin")
    ends = tuple(c.text or "" for c in elem.findall("match") if c.get("marker") == "end")
    if any(not text for text, _ in begins) or any(not text for text in ends):
        raise _fail(path, elem, "a <match marker=...> is empty; give the marker's text")
    if bool(begins) != bool(ends):
        raise _fail(path, elem, "give <match marker=\"begin\"> and <match marker=\"end\"> together")
    triggers = []
    for t in elem.findall("trigger"):
        skip = _positive(path, t, _child_text(path, t, "skip", required=False) or "0", "<skip>", zero=True)
        triggers.append((_pattern(path, t), skip))
    from_valid = not patterns and not triggers and not begins
    if from_valid and elem.find("map") is None:
        # perfbase would look for the variable's valid values; psbase asks for a <map> to show that is meant
        raise _fail(path, elem, "give a <match>, <regexp> or <trigger> (or <map>s, to look for the variable's "
                    "valid values and the maps' inputs)")
    maps = []
    for m in elem.findall("map"):
        pairs = m.findall("mapping") or [m]
        for pair in pairs:
            ins, outs = pair.findall("content_in"), pair.findall("content_out")
            if not ins or len(ins) != len(outs):
                raise _fail(path, m, "needs <content_in> and <content_out> pairs")
            for c_in, c_out in zip(ins, outs, strict=True):
                literal = c_in.get("match", "literal") != "regexp"
                text = c_in.text or ""
                maps.append((_compile(path, c_in, f"^{regex.escape(text)}$" if literal else text, literal=False),
                             (c_out.text or "").strip()))
    first = patterns[0] if patterns else triggers[0][0] if triggers else \
        _compile(path, elem, begins[0][0], True) if begins else Pattern("", regex.compile("(?!)"))
    length = elem.get("len")
    try:
        length_value = None if length is None or int(length) < 0 else int(length)  # < 0: perfbase's default
    except ValueError:
        raise _fail(path, elem, f"len={length!r} is not an integer") from None
    lines = elem.get("lines")
    try:
        lines_value = None if lines is None or int(lines) < 0 else int(lines)  # < 0: perfbase's default
    except ValueError:
        raise _fail(path, elem, f"lines={lines!r} is not an integer") from None
    desc.named.append(
        NamedLocation(
            _child_text(path, elem, "name"), first, side, line == "next", word, elem.sourceline,
            separator, mode, tuple(patterns), tuple(triggers), tuple(maps), store_set, length_value,
            elem.get("retrigger") == "yes", begins, ends, lines_value, from_valid, elem.get("sticky") != "no",
            tuple((c.text or "", c.get("terminator")) for c in elem.findall("match") if c.get("terminator")),
        )
    )
    if separator:
        if desc.separator is not None or sum(loc.is_separator for loc in desc.named) > 1:
            raise _fail(path, elem, "a second run separator; give one <set_separation> or is_separator=\"yes\"")
        desc.separator = first


def _parse_split(path: str, elem: etree._Element, desc: InputDescription) -> None:
    sides = []
    for tag in ("enter", "leave"):
        part = elem.find(tag)
        inner = InputDescription(path=path)
        for child in part if part is not None else ():
            if child.tag != "named_location":
                raise _fail(path, child, f"is not supported in <{tag}>; use <named_location>")
            _parse_named(path, child, inner)
        if not inner.named:
            raise _fail(path, elem, f"<{tag}> with <named_location>s is missing; add it")
        sides.append(tuple(inner.named))
    store = []
    for n in elem.findall("store/name"):
        what = n.get("store", "current")
        if what not in ("current", "enter", "leave", "max", "min", "diff", "sum"):
            raise _fail(path, n, f"store={what!r} is not one of current, enter, leave, max, min, diff, sum")
        if not (n.text or "").strip():
            raise _fail(path, n, "is empty; give a variable name")
        store.append(((n.text or "").strip(), what))
    if not store:
        raise _fail(path, elem, "<store> with <name>s is missing; add it")
    desc.splits.append(SplitLocation(sides[0], sides[1], tuple(store), elem.sourceline))


def _parse_explicit(path: str, elem: etree._Element, desc: InputDescription) -> None:
    row = _positive(path, elem, _child_text(path, elem, "row"), "<row>")
    column = _positive(path, elem, _child_text(path, elem, "column"), "<column>")
    desc.explicit.append(ExplicitLocation(_child_text(path, elem, "name"), row, column, elem.sourceline))


def _parse_filename(path: str, elem: etree._Element, desc: InputDescription) -> None:
    if elem.find("regexp") is None:  # perfbase's form: <match>es or the variable's valid values
        desc.pb_filename.append(_parse_pb_filename(path, elem))
        return
    regexp = _child_text(path, elem, "regexp")
    pattern = _compile(path, elem, regexp, literal=False)
    groups = []
    for number, name_elem in enumerate(elem.findall("name"), start=1):
        name = (name_elem.text or "").strip()
        if not name:
            raise _fail(path, name_elem, "is empty; give a variable name")
        group = _positive(path, name_elem, name_elem.get("group", str(number)), "group=")
        if group > pattern.compiled.groups:
            raise _fail(path, name_elem, f"group {group}, but {regexp!r} has {pattern.compiled.groups} group(s)")
        groups.append((group, name))
    if not groups:
        raise _fail(path, elem, "no <name>; map the regexp's groups to variables")
    desc.filename.append(FilenameLocation(pattern, tuple(groups), elem.sourceline))


def _parse_pb_filename(path: str, elem: etree._Element) -> PbFilenameLocation:
    for attr, value in elem.attrib.items():
        if attr not in ("match", "len", "mode") or (attr == "match" and value not in ("exact", "fuzzy")) or (
                attr == "mode" and value not in ("assign", "boolean")):
            raise _fail(path, elem, f"{attr}={value!r} is not supported by psbase; remove it or read the value "
                        "another way")
    for child in elem:
        if child.tag not in ("name", "match", "map"):
            raise _fail(path, child, "is not supported in <filename_location>; use <name>, <match>, <regexp> or "
                        "<map>")
    name = _child_text(path, elem, "name")
    default_type = elem.get("match", "exact")
    matches: list[tuple[str, str | None]] = []
    fuzzy: list[tuple[str, str | None]] = []
    for m in elem.findall("match"):
        for attr, value in m.attrib.items():
            if attr not in ("match", "terminator") or (attr == "match" and value not in ("exact", "fuzzy")):
                raise _fail(path, m, f"{attr}={value!r} is not supported by psbase; remove it or read the "
                            "value another way")
        text = m.text or ""
        if not text:
            raise _fail(path, m, "is empty; give the text to look for in the file name")
        matches.append((text, m.get("terminator")))
        if m.get("match", default_type) == "fuzzy":  # perfbase adds the lower-case forms after all matches
            fuzzy += [(text.lower(), m.get("terminator")), (text.replace("_", "").lower(), m.get("terminator"))]
    maps = []
    for mp in elem.findall("map"):
        c_in, c_out = mp.findtext("content_in"), mp.findtext("content_out")
        if not c_in or not c_out:
            raise _fail(path, mp, "needs <content_in> and <content_out>")
        maps.append((c_in, c_out))
    length = elem.get("len")
    try:
        length_value = None if length is None or int(length) < 0 else int(length)
    except ValueError:
        raise _fail(path, elem, f"len={length!r} is not an integer") from None
    boolean = elem.get("mode") == "boolean"
    return PbFilenameLocation(name, tuple(matches + fuzzy), 0 if boolean else length_value, boolean, tuple(maps),
                              not matches, elem.sourceline)


def _parse_table(path: str, elem: etree._Element, desc: InputDescription) -> None:
    if elem.find("tabular_value") is not None:
        if elem.find("column") is not None:
            raise _fail(path, elem, "mixes perfbase's <tabular_value> with <column>; use one of them")
        table = _parse_pb_table(path, elem)
        desc.pb_tables.append(table)
        if elem.get("is_separator", "no").lower() == "yes":
            if desc.separator is not None:
                raise _fail(path, elem, "a second run separator; give one <set_separation> or is_separator=\"yes\"")
            if not table.triggers:
                raise _fail(path, elem, "is_separator=\"yes\" needs a <match> or <regexp> that starts each table")
            desc.separator = Pattern("|".join(t.text for t in table.triggers),
                                     regex.compile("|".join(t.compiled.pattern for t in table.triggers)))
            desc.table_separates = True
        return
    columns = []
    for col in elem.findall("column"):
        name = (col.text or "").strip()
        if not name:
            raise _fail(path, col, "is empty; give a variable name")
        if col.get("pos") is None:
            raise _fail(path, col, "pos= is missing; give the word position (1 = first)")
        columns.append((_positive(path, col, col.get("pos"), "pos="), name))
    if not columns:
        raise _fail(path, elem, "no <column>; map table columns to variables")
    skip = _positive(path, elem, _child_text(path, elem, "skip", required=False) or "0", "<skip>", zero=True)
    desc.tables.append(
        TabularLocation(
            _pattern(path, elem),
            tuple(columns),
            skip,
            _optional_pattern(path, elem, "row"),
            _optional_pattern(path, elem, "ignore"),
            elem.sourceline,
        )
    )


def _parse_pb_table(path: str, elem: etree._Element) -> PerfbaseTable:
    _supported(path, elem, {"columns": None, "rows": None, "is_separator": ("no", "yes")})
    for tv in elem.findall("tabular_value"):
        _supported(path, tv, {"scale": None, "update": ("no", "yes", "auto")})
    allowed = ("match", "regexp", "row", "skip", "ws", "tabular_value")
    for child in elem:
        if child.tag not in allowed:
            raise _fail(path, child, f"is not allowed in a <tabular_location> with <tabular_value>s; use "
                        f"{', '.join('<' + a + '>' for a in allowed)}")
    triggers = [Pattern(m.text or "", regex.compile(regex.escape(m.text or ""))) for m in elem.findall("match")]
    triggers += [_compile(path, r, (r.text or "").strip(), literal=False) for r in elem.findall("regexp")]
    row = _positive(path, elem, _child_text(path, elem, "row", required=False), "<row>")
    skip = _positive(path, elem, _child_text(path, elem, "skip", required=False) or "0", "<skip>", zero=True)
    columns = _positive(path, elem, elem.get("columns"), "columns=")
    rows = _positive(path, elem, elem.get("rows"), "rows=")
    ws = elem.findtext("ws")
    values = []
    for tv in elem.findall("tabular_value"):
        for child in tv:
            if child.tag not in ("name", "pos", "match", "map"):
                raise _fail(path, child, "is not supported in <tabular_value>; use <name> with <pos> or <match>, "
                            "and <map>")
        name = _child_text(path, tv, "name")
        if any(v.name == name for v in values):
            raise _fail(path, tv, f"'{name}' is read twice in this table; read it once")
        pos = _positive(path, tv, _child_text(path, tv, "pos", required=False), "<pos>", zero=True)
        match = _child_text(path, tv, "match", required=False)
        scale = tv.get("scale")
        try:
            factor = float(scale) if scale is not None else None
        except ValueError:
            factor = None
        if scale is not None and (factor is None or not math.isfinite(factor)):
            raise _fail(path, tv, f"scale={scale!r} is not a number; give a factor such as 1e-6")
        maps = []
        for mp in tv.findall("map"):
            c_in, c_out = mp.find("content_in"), mp.findtext("content_out")
            if c_in is None or not c_in.text or not c_out:
                raise _fail(path, mp, "without <content_in> and <content_out> is not supported; give both")
            kind = c_in.get("match", "literal")
            if kind not in ("literal", "regexp"):
                raise _fail(path, c_in, f"match={kind!r} is not literal or regexp")
            maps.append((c_in.text, _compile(path, c_in, c_in.text, literal=False) if kind == "regexp" else None,
                         c_out))
        values.append(TabularValue(name, pos, match, factor, tv.get("update", "no"), tuple(maps)))
    if len({v.update for v in values if v.update != "no"}) > 1:
        raise _fail(path, elem, "mixes update=\"yes\" and update=\"auto\"; give its values one of them")
    return PerfbaseTable(tuple(triggers), tuple(values), row, skip, columns, rows, ws or None, elem.sourceline)


# perfbase's <function type=...> names that psbase's arithmetic has (fabs is its abs)
_XML_FUNCTIONS = {"abs": "abs", "fabs": "abs", "min": "min", "max": "max", "sqrt": "sqrt", "exp": "exp",
                  "log": "log", "log10": "log10"}
_XML_CONSTANTS = {"e": repr(math.e), "pi": repr(math.pi)}


def _xml_term(path: str, elem: etree._Element) -> str:
    """perfbase's XML term (<product><factor>..., <fraction>, <sum>, <difference>, <function>,
    <parameter>, <constant>) as psbase's arithmetic text; each operand parenthesized, as perfbase builds it."""
    parts = [c for c in elem if isinstance(c.tag, str)]
    if len(parts) != 1:
        raise _fail(path, elem, "needs exactly one of <fraction>, <product>, <sum>, <difference>, <function>, "
                    "<parameter> or <constant>")
    t = parts[0]

    def sub(tag: str, at_least: int = 1, exactly: int | None = None) -> list[str]:
        found = t.findall(tag)
        if len(found) < at_least or exactly is not None and len(found) != exactly:
            raise _fail(path, t, f"needs {exactly or at_least} <{tag}>")
        return [f"({_xml_term(path, f)})" for f in found]

    if t.tag == "fraction":
        return "/".join(sub("dividend", exactly=1) + sub("divisor", exactly=1))
    if t.tag == "difference":
        return "-".join(sub("minuend", exactly=1) + sub("subtrahend", exactly=1))
    if t.tag == "product":
        return "*".join(sub("factor"))
    if t.tag == "sum":
        return "+".join(sub("summand"))
    if t.tag == "function":
        kind = t.get("type", "")
        if kind not in _XML_FUNCTIONS:
            raise _fail(path, t, f"type={kind!r} is not supported by psbase; use one of "
                        f"{', '.join(sorted(_XML_FUNCTIONS))}")
        return f"{_XML_FUNCTIONS[kind]}({', '.join(sub('argument'))})"
    text = (t.text or "").strip()
    if t.tag == "parameter" and text:
        return text
    if t.tag == "constant" and text:
        return _XML_CONSTANTS.get(text, text)
    raise _fail(path, t, "is not a term element, or is empty; use <fraction>, <product>, <sum>, <difference>, "
                "<function>, <parameter NAME> or <constant>")


def _parse_derived(path: str, elem: etree._Element, desc: InputDescription) -> None:
    name = _child_text(path, elem, "name")
    map_elem = elem.find("map")
    if map_elem is not None:  # perfbase's <map value="VAR">: the content of VAR mapped
        maps = []
        for mapping in map_elem.findall("mapping"):
            ins, outs = mapping.findall("content_in"), mapping.findall("content_out")
            if not ins or len(ins) != len(outs):
                raise _fail(path, mapping, "needs <content_in> and <content_out> pairs")
            for c_in, c_out in zip(ins, outs, strict=True):
                var = c_in.get("value") or map_elem.get("value")
                if not var:
                    raise _fail(path, c_in, "names no variable; give value=\"VAR\" here or on <map>")
                text, out = (c_in.text or "").strip(), (c_out.text or "").strip()
                if not text or not out:
                    raise _fail(path, mapping, "a <content_in> or <content_out> is empty; give its text")
                literal = c_in.get("match", "literal") != "regexp"
                maps.append((var, _compile(path, c_in, f"^{regex.escape(text)}$" if literal else text,
                                           literal=False).compiled, out))
        names = tuple(dict.fromkeys(v for v, _, _ in maps))
        desc.derived.append(DerivedParameter(name, "<map>", None, names, elem.sourceline, tuple(maps)))
        return
    term_elem = elem.find("term")
    if term_elem is not None and len([c for c in term_elem if isinstance(c.tag, str)]):
        term = _xml_term(path, term_elem)  # perfbase's XML form
    else:
        term = _child_text(path, elem, "term")
    try:
        tree = arith.check(term, DERIVED_OPERATORS, DERIVED_FUNCTIONS)
    except ValueError as exc:
        raise _fail(path, elem, str(exc)) from None
    desc.derived.append(DerivedParameter(name, term, tree, tuple(arith.names_in(tree)), elem.sourceline))


def _parse_missing(path: str, elem: etree._Element, desc: InputDescription) -> None:
    name = elem.get("name")
    if not name:
        raise _fail(path, elem, "name= is missing; give the variable")
    desc.missing_for[name] = _choice(path, elem, "policy", POLICIES, "refuse")


# ---------------------------------------------------------------------------
# The arithmetic of derived parameters (psuite.psbase.arith)

DERIVED_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
DERIVED_FUNCTIONS = ("abs", "min", "max", "round", "sqrt", "exp", "log", "log10")


# ---------------------------------------------------------------------------
# Extraction

Line = tuple[int, str]  # (line number in the file, text)


@dataclass
class _Found:
    """What one block of one file gave: values, data-set rows, and where each value came from."""

    values: dict[str, object] = field(default_factory=dict)
    rows: list[dict[str, object]] = field(default_factory=list)
    origin: dict[str, str] = field(default_factory=dict)
    row_origin: list[str] = field(default_factory=list)
    # (table, file, what is missing)
    tables_missing: list[tuple[TabularLocation, str, str]] = field(default_factory=list)
    # variable -> why the value its location found could not be read (the value is then missing)
    unreadable: dict[str, str] = field(default_factory=dict)
    # (line number, location, value) of named locations of data-set variables
    events: list[tuple[int, NamedLocation, object]] = field(default_factory=list)
    # rows of tables with update= values: (row, the names that key it, "yes" or "auto"), applied to the
    # run's other rows once all are read
    updates: list[tuple[dict[str, object], tuple[str, ...], str]] = field(default_factory=list)
    # data-set values one location gives for the whole run (a file name's): each row without its own
    sticky: dict[str, object] = field(default_factory=dict)
    # rows of a <split_location>: perfbase's data set holds the named values before the split's (the order
    # input -t prints them in)
    split_rows: bool = False

    def empty(self) -> bool:
        """Nothing found but counts of zero: perfbase starts no run for such text before a separator."""
        return not self.rows and all(isinstance(v, int) and v == 0 for v in self.values.values())


def _check(desc: InputDescription, definition: Definition, fixed: dict[str, str]) -> dict[str, Variable]:
    """Every name the description (or `fixed`) uses is a variable of the experiment, of the right occurrence."""
    variables = {v.name: v for v in definition.variables}
    kinds: dict[str, set[str]] = {}
    for name, element, occurrence in desc.uses():
        var = variables.get(name)
        if var is None:
            raise UsageError(
                f"{desc.path}: <{element}> names '{name}', which experiment '{definition.name}' does not "
                "define; fix the name or add the variable to the experiment"
            )
        if occurrence and var.occurrence != occurrence:
            hint = "a <tabular_location>" if var.occurrence == "multiple" else "a named, explicit or filename location"
            raise UsageError(
                f"{desc.path}: <{element}> reads '{name}', which occurs {var.occurrence} per run; read it with {hint}"
            )
        if element != "missing":
            kinds.setdefault(name, set()).add(element)
    for name, elements in kinds.items():
        exclusive = elements & {"fixed_value", "derived_parameter"}
        if exclusive and len(elements) > 1:
            raise UsageError(
                f"{desc.path}: '{name}' has a <{sorted(exclusive)[0]}> and also "
                f"<{sorted(elements - exclusive)[0] if elements - exclusive else sorted(exclusive)[1]}>; "
                "give it one source"
            )
    for i, loc in enumerate(desc.named):
        if loc.from_valid:
            var = variables[loc.name]
            # a literal map input is compiled anchored (^text$): here it is looked for within the line
            texts = [*(regex.escape(v) for v in var.valid),
                     *(p.text[1:-1] if p.text.startswith("^") and p.text.endswith("$") else p.text
                       for p, _ in loc.maps)] if var.valid else []
            if not texts:
                raise UsageError(
                    f"{desc.path}: <named_location> (line {loc.sourceline}) has no <match>, <regexp> or "
                    f"<trigger>, and '{loc.name}' has no <valid> values to look for; add a <match>"
                )
            found = tuple(Pattern(t, regex.compile(t)) for t in texts)
            desc.named[i] = loc = replace(loc, pattern=found[0], patterns=found)
        if loc.lines not in (None, 1) and variables[loc.name].datatype not in ("string", "text"):
            raise UsageError(
                f"{desc.path}: <named_location> (line {loc.sourceline}) lines=\"{loc.lines}\" reads raw text, "
                f"but '{loc.name}' is of datatype {variables[loc.name].datatype}; make it string or text, "
                "or drop lines="
            )
        wanted = {"count": NUMERIC, "boolean": ("boolean",)}.get(loc.mode)
        if wanted and variables[loc.name].datatype not in wanted:
            raise UsageError(
                f"{desc.path}: <named_location> (line {loc.sourceline}) mode=\"{loc.mode}\" gives '{loc.name}' a "
                f"{'number' if loc.mode == 'count' else 'truth value'}, but it is a {variables[loc.name].datatype}; "
                f"make it {' or '.join(wanted)}"
            )
    for name in fixed:
        if name not in variables:
            raise UsageError(
                f"fixed value for '{name}': experiment '{definition.name}' has no such variable; fix the name"
            )
    for d in desc.derived:
        for name in d.names:
            if name not in variables:
                raise UsageError(
                    f"{desc.path}: <derived_parameter> (line {d.sourceline}) '{d.name}' uses '{name}', "
                    f"which experiment '{definition.name}' does not define"
                )
        uses_rows = any(variables[n].occurrence == "multiple" for n in d.names)
        if uses_rows and variables[d.name].occurrence != "multiple":
            raise UsageError(
                f"{desc.path}: <derived_parameter> '{d.name}' occurs once per run but is computed "
                "from data-set variables; make it multiple-occurrence"
            )
    return variables


def _typed(var: Variable, text: str, where: str) -> object:
    words = text.split()
    if var.datatype == "version" and len(words) > 1 and not var.valid and text == text.strip():
        # perfbase's versions may carry words after the number ("1.0.3 a"), read from its files; psbase's
        # own version values stay one word
        head = _typed(var, words[0], where)
        if " ".join(words) == text and len(text) <= STRING_MAX:
            return Version(f"{head} {' '.join(words[1:])}")
    try:
        value = convert(var, text)
    except UsageError as exc:  # BadValue, or any refusal of the model; its message names the variable
        raise BadValue(f"{where}: {exc}") from None
    if type(value) is float and text.strip() and text.strip()[0] in "+-.0123456789":
        return ReadFloat.of(value, text.strip())
    return value


class ReadFloat(float):
    """A number read from a file that keeps its text ("0.00", "120"): perfbase stored and printed the
    text it read (input -t shows it); as a number it is the float."""

    text: str

    @classmethod
    def of(cls, value: float, text: str) -> ReadFloat:
        out = cls(value)
        out.text = text
        return out


def _words_value(var: Variable, text: str, side: str, word: int | None) -> str | None:
    words = text.split()
    if word is not None:
        if word > len(words):
            return None
        return words[-word] if side == "before" else words[word - 1]
    if side == "after":
        text = text.strip()
        text = text[1:].strip() if text[:1] in (":", "=") else text
        if var.datatype in NUMERIC:
            first = text.split()[:1]
            return first[0].rstrip(",;:") if first else None
        return (_pb_token(text, 0) if var.datatype == "string" else text) or None
    text = text.strip()
    text = text[:-1].strip() if text[-1:] in (":", "=") else text
    if var.datatype in NUMERIC:
        return text.split()[-1] if text else None
    return (_pb_token(text, -1) if var.datatype == "string" else text) or None


def _pb_token(text: str, which: int) -> str:
    """perfbase's content of a string without len= or word=: the first (content follows the match) or last
    (content leads) piece of the text split at a blank, or else at the first other white space character
    that splits it (in perfbase's order: CR, FF, VT, LF, tab)."""
    pieces = [text]
    for ws in " \r\x0c\x0b\n\t":
        pieces = text.split(ws)
        if len(pieces) > 1 and pieces[which]:
            break
    return pieces[which].strip()


def _named_hits(loc: NamedLocation, block: list[Line]):
    """(index in block, line number, the match or None for a whole triggered line) of every line the
    location takes."""
    for index, (lineno, line) in enumerate(block):
        if loc.triggers and not any(index >= skip and t.search(block[index - skip][1]) for t, skip in loc.triggers):
            continue
        begin = next((text for text, _ in loc.begins if text in line), None)
        if begin is not None:  # perfbase reads a begin marker before any other <match>
            yield index, lineno, begin
            continue
        if not loc.patterns:
            if not loc.begins:
                yield index, lineno, None
            continue
        for pattern in loc.patterns:
            m = pattern.search(line)
            if m is not None:
                yield index, lineno, m
                break


def _marked(loc: NamedLocation, block: list[Line], index: int, begin: str) -> str | None:
    """perfbase's marker text: the rest of the begin marker's line (with skip="n": nothing, the text
    starts n lines below), the lines that follow, and the line of the first end marker up to it; line
    breaks kept, the first and last pieces stripped.  No end marker in the run: no value."""
    skip = dict(loc.begins)[begin]
    if skip == 0:
        content = block[index][1].split(begin, 1)[1].strip()
        content += "\n" if content else ""
        index += 1
    else:
        content, index = "", index + skip
    for _, line in block[index:]:
        ends = [p for p in (line.find(e) for e in loc.ends) if p >= 0]
        if ends:  # perfbase stops at the first end marker in the order given
            return (content + line[: ends[0]].strip()) or None
        content += line + "\n"
    return None


def _named_content(loc: NamedLocation, var: Variable, block: list[Line], index: int,
                   m: regex.Match[str] | str | None, open_end: int | None = None) -> tuple[int, str | None]:
    lineno, line = block[index]
    if isinstance(m, str):
        return lineno, _marked(loc, block, index, m)
    if loc.lines is not None:
        return lineno, _raw_lines(loc, block, index, m, open_end)
    if loc.from_valid and m is not None:  # perfbase: the valid value (or a map's input) found is the content
        return lineno, _mapped(loc, m.group(0))
    terminator = dict(loc.terminators).get(m.group(0)) if m is not None and not loc.next_line else None
    if terminator:  # perfbase: the first word after the <match>, up to its terminator
        words = line[m.end():].split()
        return lineno, _mapped(loc, (words[0].split(terminator, 1)[0] or None) if words else None)
    if m is None:  # a <trigger> without <match>: the whole line
        text, side = line.strip(), "after"
    elif loc.next_line:
        if index + 1 >= len(block):
            return lineno, None
        lineno, text, side = block[index + 1][0], block[index + 1][1], "after"
    elif m.re.groups and m.group(1) is not None:
        text, side = m.group(1), "after"
    elif loc.length is not None:  # perfbase's len=: the rest of the line, or that many characters
        rest = line[m.end():] if loc.side == "after" else line[: m.start()]
        content = rest.strip() if loc.length == 0 else rest[: loc.length].strip()
        return lineno, _mapped(loc, content or None)
    elif loc.side == "after":
        text, side = line[m.end() :], "after"
    else:
        text, side = line[: m.start()], "before"
    return lineno, _mapped(loc, _words_value(var, text, side, loc.word))


def _raw_lines(loc: NamedLocation, block: list[Line], index: int, m: regex.Match[str] | None,
               open_end: int | None) -> str | None:
    """perfbase's lines=n: the line taken (after a <match>'s text, which is cut) and the lines after it,
    n lines in all, or with lines="0" up to the first blank line; each line keeps its line break, as
    perfbase read the file's lines (the file's last line has none if the file ends without one)."""
    taken = block[index:] if loc.lines == 0 else block[index: index + loc.lines]
    pieces = []
    for i, (_, line) in enumerate(taken):
        if loc.lines == 0 and not line.strip():
            break
        if i == 0 and m is not None and m.re.pattern == regex.escape(m.group(0)):  # a <match>, not a <regexp>
            line = line[m.end():]
        pieces.append(line)
    if not pieces:
        return None
    end = block[index + len(pieces) - 1][0]
    text = "\n".join(pieces)
    return text if end == open_end else text + "\n"


_OPEN_END: dict[str, int] = {}  # file -> its last line's number, when the file ends without a line break


def _mapped(loc: NamedLocation, content: str | None) -> str | None:
    for pattern, out in loc.maps:
        if content is not None and pattern.search(content):
            return out
    return content


def _raw_string(var: Variable, content: str, where: str) -> str:
    """Raw text (lines=, a marked text) read into a string: perfbase keeps it as read, its white space and
    line breaks too (a string value read otherwise is stripped); at most the store's length."""
    if len(content) > STRING_MAX:
        shown = content if len(content) <= 60 else content[:57] + "..."
        raise BadValue(f"{where}: variable {var.name!r}: {shown!r} is not a string of at most {STRING_MAX} "
                       "characters (use datatype text for longer ones)")
    return content


def _named(loc: NamedLocation, var: Variable, block: list[Line], path: str, found: _Found) -> None:
    if loc.mode == "count":  # every occurrence, several on a line too, as perfbase counts them
        found.values[var.name] = sum(p.count(line) for _, line in block for p in loc.patterns)
        found.origin[var.name] = f"{path} (count of {loc.pattern.text!r})"
        return
    if loc.mode == "boolean":
        found.values[var.name] = next(_named_hits(loc, block), None) is not None
        found.origin[var.name] = f"{path} (whether {loc.pattern.text!r} occurs)"
        return
    hits = list(_named_hits(loc, block))
    if loc.last and var.occurrence == "once":
        hits = hits[-1:]
    for index, _, m in hits:
        lineno, content = _named_content(loc, var, block, index, m, _OPEN_END.get(path))
        if var.occurrence == "multiple":  # each occurrence: a value of the data set
            if content is not None:
                try:
                    value = _typed(var, content, f"{path}:{lineno}")
                except BadValue:
                    if var.datatype not in NUMERIC or not _pb_number(content):
                        if var.datatype not in NUMERIC:
                            raise
                        continue  # perfbase: a number that cannot be read is no value
                    # perfbase reads the number in "25)" (str_to_number)
                    value = _typed(var, _pb_number(content), f"{path}:{lineno}")
                if var.datatype == "string" and (loc.lines is not None or isinstance(m, str)):
                    value = _raw_string(var, content, f"{path}:{lineno}")
                found.events.append((lineno, loc, value))
            continue
        if content is not None:
            try:
                found.values[var.name] = _typed(var, content, f"{path}:{lineno}")
                if var.datatype == "string" and (loc.lines is not None or isinstance(m, str)):
                    found.values[var.name] = _raw_string(var, content, f"{path}:{lineno}")
            except BadValue as exc:
                if var.datatype not in NUMERIC:
                    raise
                # perfbase: a number that cannot be read is no value; the missing-value policy decides
                found.unreadable[var.name] = str(exc)
                return
            found.origin[var.name] = f"{path}:{lineno}"
        return


def _named_rows(found: _Found, path: str) -> None:
    """Data-set values from named locations.  Beside table rows, each row takes the value last seen
    before its line (perfbase's sticky values); alone, a row is complete at each store_set="yes"
    occurrence or, without one, when every such variable has a value since the last row."""
    if not found.events:
        return
    found.events.sort(key=lambda e: e[0])
    if found.rows:
        lines = [int(o.rsplit(":", 1)[1]) for o in found.row_origin]
        previous = 0
        for row, row_line in zip(found.rows, lines, strict=True):
            # a sticky="no" value only for the first row after it
            latest = {loc.name: value for lineno, loc, value in found.events
                      if lineno < row_line and (loc.sticky or lineno >= previous)}
            previous = row_line
            if found.split_rows:
                merged = {**latest, **row}
                row.clear()
                row.update(merged)
                continue
            for name, value in latest.items():
                row.setdefault(name, value)
        return
    names = {loc.name for _, loc, _ in found.events}
    store_set = any(loc.store_set for _, loc, _ in found.events)
    current: dict[str, object] = {}
    fresh: set[str] = set()
    for lineno, loc, value in found.events:
        current[loc.name] = value
        fresh.add(loc.name)
        if (loc.store_set if store_set else fresh == names):
            found.rows.append(dict(current))
            found.row_origin.append(f"{path}:{lineno}")
            fresh.clear()


def _explicit(loc: ExplicitLocation, var: Variable, block: list[Line], path: str, found: _Found) -> None:
    if loc.row > len(block):
        return
    lineno, line = block[loc.row - 1]
    words = line.split()
    if loc.column <= len(words):
        found.values[var.name] = _typed(var, words[loc.column - 1], f"{path}:{lineno}")
        found.origin[var.name] = f"{path}:{lineno}"


def _filename(loc: FilenameLocation, variables: dict[str, Variable], path: str, found: _Found) -> None:
    m = loc.pattern.search(os.path.basename(path))
    if m is None:
        return
    for group, name in loc.groups:
        if m.group(group) is not None:
            found.values[name] = _typed(variables[name], m.group(group), f"{path} (file name)")
            found.origin[name] = f"{path} (file name)"


def _split_values(locs: tuple[NamedLocation, ...], variables: dict[str, Variable], block: list[Line], index: int,
                  path: str) -> dict[str, object] | None:
    """The values the locations read on line index of block, or None unless each of them matches it (a
    comment that mentions "enter" is no enter line)."""
    out: dict[str, object] = {}
    for loc in locs:
        m = next((p.search(block[index][1]) for p in loc.patterns if p.search(block[index][1])), None)
        if m is None:
            return None
        var = variables[loc.name]
        lineno, content = _named_content(loc, var, block, index, m)
        if content is not None:  # perfbase's default: the first word (a number's characters only)
            content = _pb_number(content) if var.datatype in NUMERIC else (content.split() or [""])[0]
        if not content:  # perfbase: an incomplete line
            raise UsageError(f"{path}:{lineno}: no value for '{loc.name}' on this line of a <split_location>; "
                             "check the file (is the line complete?)")
        out[loc.name] = _typed(var, content, f"{path}:{lineno}")
    return out


_COMBINE = {"diff": lambda a, b: b - a, "sum": lambda a, b: a + b, "max": max, "min": min}


def _split(sp: SplitLocation, variables: dict[str, Variable], block: list[Line], path: str, found: _Found) -> None:
    stack: list[dict[str, object]] = []
    for index, (lineno, _) in enumerate(block):
        entered = _split_values(sp.enter, variables, block, index, path)
        if entered is not None:
            stack.append(entered)
            continue
        left = _split_values(sp.leave, variables, block, index, path)
        if left is None:
            continue
        if not stack:
            raise UsageError(f"{path}:{lineno}: a <split_location> leave line without its enter line (the "
                             "nesting does not match); check the file")
        enter = stack.pop()
        row: dict[str, object] = {}
        found.split_rows = True
        # perfbase fills its data set with the current values last
        for name, what in sorted(sp.store, key=lambda x: x[1] == "current"):
            a, b = enter.get(name), left.get(name)
            if what == "enter":
                value = a
            elif what in ("leave", "current"):
                value = b if b is not None else a
            elif a is None or b is None:
                value = None
            else:
                value = _COMBINE[what](a, b)
                if isinstance(value, float):  # perfbase stores the text of its Python 2 float
                    value = float(f"{value:.12g}")
            if value is not None:
                row[name] = value
        found.rows.append(row)
        found.row_origin.append(f"{path}:{lineno}")


def _pb_filename(loc: PbFilenameLocation, var: Variable, path: str, found: _Found) -> None:
    """perfbase's filename_location: check_trigger, then parse_data, on the path as given."""
    matches = list(loc.matches)
    # perfbase counts a <map>'s inputs among the valid values it looks for and takes as they are
    valid = set(var.valid) | ({c_in for c_in, _ in loc.maps} if var.valid else set())
    if loc.from_valid:
        if not var.valid:
            raise UsageError(f"<filename_location> (line {loc.sourceline}) for '{var.name}' has no <match>, and "
                             f"'{var.name}' has no <valid> values to look for; add a <match>")
        matches = [(v, None) for v in var.valid] + [(c_in, None) for c_in, _ in loc.maps]
    hit = None
    for text, terminator in matches:  # perfbase keeps the last match found, not the first
        if text in path:
            hit = (text, terminator)
    where = f"{path} (file name)"
    if hit is None:
        if loc.boolean:
            found.values[var.name] = False
            found.origin[var.name] = where
        return
    text, terminator = hit
    if loc.boolean:
        found.values[var.name] = True
        found.origin[var.name] = where
        return
    if text in valid:
        content = text
    else:
        rest = path.split(text, 1)[1]
        if not rest:
            return
        if loc.length is None:
            rest = rest.split(terminator, 1)[0] if terminator else (rest.split() or [""])[0]
        elif loc.length > 0:
            rest = rest[: loc.length]
        content = rest.strip()
    content = dict(loc.maps).get(content, content)
    if var.datatype in NUMERIC:
        content = _pb_number(content)
    if not content:
        return
    if var.occurrence == "multiple":  # a data-set value from the file name: every row of the run has it
        found.sticky[var.name] = _typed(var, content, where)
        return
    found.values[var.name] = _typed(var, content, where)
    found.origin[var.name] = where


def _table(table: TabularLocation, variables: dict[str, Variable], block: list[Line], path: str, found: _Found) -> None:
    start = next((i for i, (_, line) in enumerate(block) if table.pattern.search(line)), None)
    if start is None:
        found.tables_missing.append((table, path, "no table after"))
        return
    width = max(pos for pos, _ in table.columns)
    rows_before = len(found.rows)
    for lineno, line in block[start + 1 + table.skip :]:
        if not line.strip():
            break
        if table.ignore is not None and table.ignore.search(line):
            continue
        if table.row is not None and not table.row.search(line):
            break
        words = line.split()
        where = f"{path}:{lineno}"
        if len(words) < width:
            # a row with cells missing, or a line after the table ("Total: ...")? A row's present
            # cells are values of their columns; the missing ones are left to the missing-value policy
            try:
                row = {name: _typed(variables[name], words[pos - 1], where)
                       for pos, name in table.columns if pos <= len(words)}
            except BadValue:
                break
        else:
            row = {name: _typed(variables[name], words[pos - 1], where) for pos, name in table.columns}
        found.rows.append(row)
        found.row_origin.append(where)
    if len(found.rows) == rows_before:
        found.tables_missing.append((table, path, "no table rows after"))


_NUMBER_CHARS = frozenset("+-eE.0123456789")


def _pb_number(text: str) -> str:
    """The number in a table cell as perfbase reads it (pb_common.str_to_number): the
    characters around it that cannot be part of a number dropped ("12.5us" -> "12.5");
    "" if there is none ("EOF", "-")."""
    if text.count(",") == 1 and "." not in text:  # a decimal comma
        text = text.replace(",", ".")
    start = 0
    while start < len(text) and (text[start] not in _NUMBER_CHARS or (
            text[start] in "eE" and text[start + 1: start + 2] not in tuple("+-.0123456789"))):
        start += 1
    end = start
    while end < len(text) and text[end] in _NUMBER_CHARS:
        end += 1
    while end > start and not text[end - 1].isdigit():
        end -= 1
    return text[start:end]


def _pb_row(table: PerfbaseTable, variables: dict[str, Variable], line: str, where: str) -> dict[str, object] | None:
    """One table line's values, or None for a line perfbase does not take as a row (a value
    with no content, or a number that cannot be read and has no default)."""
    words = line.split(table.ws)
    row: dict[str, object] = {}
    previous = -1
    for tv in table.values:
        var = variables[tv.name]
        if tv.match is None:
            index = previous + 1 if tv.pos is None else tv.pos
            if index >= len(words):
                return None
            text = words[index].strip()
            previous = index
        else:
            before, found, after = line.partition(tv.match)
            if not found or not after.split():
                return None
            text = after.split()[0]
            previous = len((before + tv.match).split())
        # perfbase's <map>: the content given exactly, else the first regexp it matches
        exact = [out for c_in, rx, out in tv.maps if rx is None and c_in == text]
        text = exact[0] if exact else next((out for _, rx, out in tv.maps if rx is not None and rx.search(text)),
                                           text)
        if var.datatype in NUMERIC:
            text = _pb_number(text)
            if not text:
                if not var.default:
                    return None
                text = var.default
            value = _typed(var, text, where)
            if tv.scale is not None:
                scaled = value * tv.scale
                value = _typed(var, repr(int(scaled) if var.datatype == "integer" else scaled),
                               f"{where} (scaled by {tv.scale:g})")
            row[tv.name] = value
        elif not text:
            return None
        else:
            row[tv.name] = _typed(var, text, where)
    return row


def _pb_table(table: PerfbaseTable, variables: dict[str, Variable], block: list[Line], path: str,
              found: _Found) -> None:
    """perfbase's tabular_location.check_trigger and parse_data, line by line over the run; the rows of a
    table with update= values go to found.updates."""
    keys = tuple(v.name for v in table.values if v.update != "no")
    if keys:
        into = _Found()
        _pb_table(PerfbaseTable(table.triggers, tuple(TabularValue(v.name, v.pos, v.match, v.scale)
                                                      for v in table.values), table.row, table.skip,
                                table.columns, table.rows, table.ws, table.sourceline),
                  variables, block, path, into)
        mode = next(v.update for v in table.values if v.update != "no")
        found.updates += [(row, keys, mode) for row in into.rows]
        return
    columns = table.columns  # without columns=, the first row's count, kept for the run
    countdown = -1  # lines until the first row of a triggered table
    inside = False
    taken = 0
    for number, (lineno, line) in enumerate(block, start=1):
        width = len(line.split(table.ws))
        if countdown > 0:
            countdown -= 1
        else:
            if inside:
                if taken == table.rows or not line.strip() or width != columns:
                    inside = False
                else:
                    row = _pb_row(table, variables, line, f"{path}:{lineno}")
                    taken += 1
                    if row is not None:
                        found.rows.append(row)
                        found.row_origin.append(f"{path}:{lineno}")
                    continue
            if (number == table.row or any(t.search(line) for t in table.triggers)
                    or (not table.triggers and table.row is None)):
                countdown = table.skip
        if countdown == 0:
            countdown = -1
            taken = 0
            if columns is None:
                columns = width
            if width == columns:
                inside = True
                row = _pb_row(table, variables, line, f"{path}:{lineno}")
                taken += 1
                if row is not None:
                    found.rows.append(row)
                    found.row_origin.append(f"{path}:{lineno}")


def _blocks(desc: InputDescription, lines: list[Line]) -> list[list[Line]]:
    """The file's runs: split at each line matching the separator (which starts the next run)."""
    if desc.separator is None:
        return [lines]
    blocks: list[list[Line]] = []
    for lineno, line in lines:
        if desc.separator.search(line):
            blocks.append([])
        if blocks:
            blocks[-1].append((lineno, line))
    return blocks


_STDIN: list[bytes] = []  # standard input, read once: its runs are read twice (input --test) and hashed


def read_lines(path: str) -> tuple[bytes, list[Line]]:
    """A file's bytes and numbered lines; "-" is standard input (perfbase's input -), read once."""
    return _read(path)


def _read(path: str) -> tuple[bytes, list[Line]]:
    if path == "-":  # perfbase's input -: the data from standard input
        if not _STDIN:
            _STDIN.append(read_input("/dev/stdin", "standard input") if not sys.stdin.isatty() else b"")
        data = _STDIN[0]
    else:
        data = read_input(path)
    text = data.decode("utf-8", errors="replace")
    if text and not text.endswith(("\n", "\r")):
        _OPEN_END[path] = len(text.splitlines())
    return data, list(enumerate(text.splitlines(), start=1))


def _scan(desc: InputDescription, variables: dict[str, Variable], path: str, block: list[Line]) -> _Found:
    found = _Found()
    for loc in desc.filename:
        _filename(loc, variables, path, found)
    for pb_loc in desc.pb_filename:
        _pb_filename(pb_loc, variables[pb_loc.name], path, found)
    for loc in desc.named:
        _named(loc, variables[loc.name], block, path, found)
    for loc in desc.explicit:
        _explicit(loc, variables[loc.name], block, path, found)
    for table in desc.tables:
        _table(table, variables, block, path, found)
    for pb_table in desc.pb_tables:
        _pb_table(pb_table, variables, block, path, found)
    for sp in desc.splits:
        _split(sp, variables, block, path, found)
    _named_rows(found, path)
    return found


def _policy(desc: InputDescription, name: str, override: str | None) -> str:
    return desc.missing_for.get(name) or override or desc.missing


def _fill(var: Variable, policy: str, where: str) -> object:
    """The value of a variable nothing gave a value to, by the missing-value policy."""
    if policy == "empty" or policy == "abort" and var.occurrence == "multiple":
        return None
    if policy == "default" and var.default == "":  # an empty <default>: no value is the default
        return None
    if policy == "default" and var.default is not None:
        return _typed(var, var.default, f"{where} (default)") if isinstance(var.default, str) else var.default
    why = "it has no default in the experiment definition" if policy == "default" else \
        f"the policy is '{policy}'"
    raise UsageError(
        f"{where}: no value for '{var.name}' ({why}); add a location for it to the input description, "
        "give it as a fixed value, or choose the missing-value policy 'empty'"
    )


def _derive(d: DerivedParameter, var: Variable, env: dict[str, object], where: str) -> object:
    if d.maps:  # the first mapping whose variable's content matches; none: no value
        for name, pattern, out in d.maps:
            if env.get(name) is not None and pattern.search(str(env[name])):
                return _typed(var, out, f"{where} (derived by <map> from '{name}')")
        return None
    if any(env.get(n) is None for n in d.names):
        return None  # an input is empty: so is the result, and the missing-value policy decides
    try:
        result = arith.evaluate(d.tree, env)
    except OverflowError:
        raise UsageError(f"{where}: derived parameter '{d.name}' = {d.term}: the result is too large") from None
    except (ValueError, ZeroDivisionError, TypeError) as exc:
        raise UsageError(f"{where}: derived parameter '{d.name}' = {d.term}: {exc}") from None
    if isinstance(result, complex):  # a negative number to a fractional power
        raise UsageError(f"{where}: derived parameter '{d.name}' = {d.term} is not a real number")
    if var.datatype == "integer" and isinstance(result, float) and result.is_integer() and math.isfinite(result):
        result = int(result)
    return _typed(var, repr(result), f"{where} (derived '{d.term}')")


def _assemble(
    parts: list[tuple[InputDescription, _Found]],
    variables: dict[str, Variable],
    fixed: dict[str, str],
    missing: str | None,
    sources: list[str],
    content_hash: str,
) -> RunData:
    where = ", ".join(dict.fromkeys(sources))

    def policies_of(name: str) -> str:
        return max((_policy(desc, name, missing) for desc, _ in parts), key=POLICIES.index)

    values: dict[str, object] = {}
    origin: dict[str, str] = {}
    rows: list[dict[str, object]] = []
    row_origin: list[str] = []
    for desc, _found in parts:  # the description's own fixed values: weakest
        for name, text in desc.fixed.items():
            if variables[name].occurrence == "once":
                values[name] = _typed(variables[name], text, f"{desc.path} (fixed value)")
    for _, found in parts:
        for name, value in found.values.items():
            if name in origin and values[name] != value:
                raise UsageError(
                    f"'{name}' is {values[name]!r} in {origin[name]} but {value!r} in "
                    f"{found.origin[name]}; one run cannot have both"
                )
            values[name] = value
            origin[name] = found.origin[name]
    with_rows = [found for _, found in parts if found.rows]
    if len({frozenset(_row_names(found)) for found in with_rows}) > 1:
        rows, row_origin = _side_by_side(with_rows)
    else:  # the same data-set variables (per-rank reports): the files' rows follow each other
        for found in with_rows:
            rows.extend(found.rows)
            row_origin.extend(found.row_origin)
    _apply_updates([u for _, found in parts for u in found.updates], rows, row_origin, where)
    for _, found in parts:
        for name, value in found.sticky.items():
            for row in rows:
                row.setdefault(name, value)
    for desc, _ in parts:  # fixed values of data-set variables fill every row
        for name, text in desc.fixed.items():
            if variables[name].occurrence == "multiple":
                value = _typed(variables[name], text, f"{desc.path} (fixed value)")
                for row in rows:
                    row[name] = value
    for name, text in fixed.items():  # the command line: strongest
        value = _typed(variables[name], text, f"fixed value {name}={text}")
        if variables[name].occurrence == "once":
            values[name] = value
        else:
            if not rows:
                raise UsageError(f"{where}: --fixed {name}={text}: '{name}' is a data-set variable and this "
                                 "run has no data-set rows to give it to; check the file or drop the value")
            for row in rows:
                row[name] = value
    for desc, found in parts:
        for table, path, what in found.tables_missing:
            for _, name in table.columns:
                if _policy(desc, name, missing) == "refuse":
                    raise UsageError(
                        f"{path}: {what} {table.pattern.text!r} (<tabular_location> line "
                        f"{table.sourceline}), so no value for '{name}'; check the file or the description"
                    )
    for _, found in parts:  # a number that could not be read: refused unless the policy fills it
        for name, why in found.unreadable.items():
            if values.get(name) is None and policies_of(name) in ("refuse", "abort"):
                raise BadValue(why)
    descs = [d for d, _ in parts]
    derived = {d.name: d for desc in descs for d in desc.derived if d.name not in fixed}  # the command line wins
    policies = {n: max((_policy(desc, n, missing) for desc in descs), key=POLICIES.index) for n in variables}
    # missing inputs first (a default feeds a derivation), then the derivations, then what they left missing
    _fill_missing([v for n, v in variables.items() if n not in derived], policies, values, rows, row_origin, where)
    for d in derived.values():
        var = variables[d.name]
        if var.occurrence == "once":
            values[d.name] = _derive(d, var, values, where)
        else:
            for row, row_where in zip(rows, row_origin, strict=True):
                row[d.name] = _derive(d, var, {**values, **row}, row_where)
    _fill_missing([variables[n] for n in derived], policies, values, rows, row_origin, where)
    return RunData(values=values, rows=rows, sources=list(sources), content_hash=content_hash)


def _apply_updates(updates: list[tuple[dict[str, object], tuple[str, ...], str]], rows: list[dict[str, object]],
                   row_origin: list[str], where: str) -> None:
    """perfbase's update= values: a row of such a table completes every row of the run whose key values
    are the same (update="yes": a row that matches none is dropped; "auto": it is a row of its own).
    perfbase matches rows of every run of the experiment; psbase those of the run being read."""
    for row, keys, mode in updates:
        hits = [r for r in rows if all(r.get(k) == row[k] for k in keys)]
        for r in hits:
            r.update({k: v for k, v in row.items() if k not in keys})
        if not hits and mode == "auto":
            rows.append(dict(row))
            row_origin.append(where)


def _row_names(found: _Found) -> set[str]:
    return {name for row in found.rows for name in row}


def _side_by_side(founds: list[_Found]) -> tuple[list[dict[str, object]], list[str]]:
    """Files read with descriptions that give different data-set variables: row i of the run joins
    row i of each file, as perfbase merges the data sets of several input descriptions; a variable
    two files give must agree."""
    first = founds[0]
    for other in founds[1:]:
        if len(other.rows) != len(first.rows):
            raise UsageError(
                f"{first.row_origin[0].rsplit(':', 1)[0]} has {len(first.rows)} data-set rows but "
                f"{other.row_origin[0].rsplit(':', 1)[0]} has {len(other.rows)}, so their rows cannot be joined "
                "into one run; check the files or import them as separate runs"
            )
    rows: list[dict[str, object]] = []
    for i in range(len(first.rows)):
        row: dict[str, object] = {}
        for found in founds:
            for name, value in found.rows[i].items():
                if name in row and row[name] != value:
                    raise UsageError(
                        f"'{name}' is {row[name]!r} in row {i + 1} of one file but {value!r} at "
                        f"{found.row_origin[i]}; the rows of the files cannot be joined into one run"
                    )
                row[name] = value
        rows.append(row)
    return rows, list(first.row_origin)


def _fill_missing(
    variables: list[Variable],
    policies: dict[str, str],
    values: dict[str, object],
    rows: list[dict[str, object]],
    row_origin: list[str],
    where: str,
) -> None:
    for var in variables:
        if var.occurrence == "once" and values.get(var.name) is None:
            values[var.name] = _fill(var, policies[var.name], where)
    multiple = [v for v in variables if v.occurrence == "multiple"]
    for row, row_where in zip(rows, row_origin, strict=True):  # row by row: the first refusal is the first line
        for var in multiple:
            if row.get(var.name) is None:
                row[var.name] = _fill(var, policies[var.name], row_where)


class FilesSeen:
    """The files of one input by content: a file given twice (by the same
    name, or the same content under another: the hash the archive knows runs
    by) is refused, since its run would repeat, or a merged run hold its
    values twice."""

    def __init__(self) -> None:
        self._first: dict[str, str] = {}  # sha256 hex digest -> the file given first with it

    def add(self, path: str, digest: str) -> None:
        first = self._first.get(digest)
        if first is None:
            self._first[digest] = path
            return
        raise UsageError(given_twice(first, path))


def content_hash(files: Sequence[str]) -> str:
    """sha256 over the sorted sha256 digests of the files' bytes: the same
    files give the same hash however they are named or ordered."""
    digests = sorted(hashlib.sha256(_read(path)[0]).digest() for path in files)
    return hashlib.sha256(b"".join(digests)).hexdigest()


def _block_hash(block: list[Line]) -> str:
    # salted: one of several runs in a file is not the run of a file that happens to hold the same lines
    # (perfbase knows runs by their files, so such a file and the run in a longer one are both filed)
    text = "\n".join(line for _, line in block).encode("utf-8", "surrogateescape")
    return hashlib.sha256(b"psbase run of a file\0" + text).hexdigest()


def extract(
    description: InputDescription | str,
    definition: Definition,
    files: Sequence[str],
    fixed: dict[str, str] | None = None,
    *,
    missing: str | None = None,
    merge: bool = False,
) -> list[RunData]:
    """The runs in `files`: one per file (or per run separator), or with merge=True one run from all files.

    fixed: values given on the command line (variable name -> text), overriding the files.
    missing: the missing-value policy chosen on the command line for variables the description gives
    none ('default', 'empty' or 'refuse'); a <missing> element for a variable still wins.
    """
    desc = parse(description) if isinstance(description, str) else description
    if missing is not None and missing not in POLICIES:
        raise UsageError(f"missing-value policy {missing!r}: choose one of {', '.join(POLICIES)}")
    if not files:
        raise UsageError("no input files given; name at least one")
    fixed = dict(fixed or {})
    variables = _check(desc, definition, fixed)
    if merge:
        return [extract_merged([(desc, path) for path in files], definition, fixed, missing=missing)]
    runs = []
    seen = FilesSeen()
    for path in files:
        data, lines = _read(path)
        digest = hashlib.sha256(data).hexdigest()
        seen.add(path, digest)
        blocks = _blocks(desc, lines)
        lead = desc.separator is not None and (desc.table_separates or any(loc.is_separator for loc in desc.named))
        if lead and not blocks:  # a value that separates runs need not occur: the file is one run
            blocks = [lines]
        if not blocks:
            raise UsageError(
                f"{path}: no line matches the run separator {desc.separator.text!r}; "
                "check the file or the <set_separation> of the input description"
            )
        if lead and lines and blocks and blocks[0][0][0] != lines[0][0]:
            # perfbase's is_separator: the text before the first separator is a run of its own if
            # anything is found in it, else part of the first separated run
            head = [line for line in lines if line[0] < blocks[0][0][0]]
            if desc.table_separates or _scan(desc, variables, path, head).empty():
                blocks[0] = head + blocks[0]
            else:
                blocks.insert(0, head)
        at: dict[str, int] = {}  # block hash -> its first line
        for block in blocks:
            if len(blocks) > 1:
                h = _block_hash(block)
                if h in at:  # the store knows a run by its hash: the second would be refused as a duplicate
                    raise UsageError(
                        f"{path}: the runs at lines {at[h]} and {block[0][0]} are the same lines, so they cannot "
                        "be told apart; remove the repetition from the file"
                    )
                at[h] = block[0][0]
            found = _scan(desc, variables, path, block)
            # the store refuses a hash it holds: a run of several in a file is known by its own lines, so
            # runs appended to the file later are new and the old ones are refused on a second import
            run_hash = digest if len(blocks) == 1 else _block_hash(block)
            runs.append(_assemble([(desc, found)], variables, fixed, missing, [path], run_hash))
    return runs


def extract_merged(
    pairs: Sequence[tuple[InputDescription | str, str]],
    definition: Definition,
    fixed: dict[str, str] | None = None,
    *,
    missing: str | None = None,
) -> RunData:
    """One run from several files, each read with its own description (paper Fig. 1 d).

    A once-occurring value found in two files must agree; data-set rows of the files follow each other.
    """
    if not pairs:
        raise UsageError("no input files given; name at least one")
    if missing is not None and missing not in POLICIES:
        raise UsageError(f"missing-value policy {missing!r}: choose one of {', '.join(POLICIES)}")
    fixed = dict(fixed or {})
    parts = []
    variables: dict[str, Variable] = {}
    seen = FilesSeen()
    for description, path in pairs:
        desc = parse(description) if isinstance(description, str) else description
        if desc.separator is not None:
            raise UsageError(
                f"{desc.path}: <set_separation> splits a file into several runs, which cannot be merged "
                "into one; drop the separator or import the files separately"
            )
        variables = _check(desc, definition, fixed)
        data, lines = _read(path)
        seen.add(path, hashlib.sha256(data).hexdigest())
        parts.append((desc, _scan(desc, variables, path, lines)))
    files = [path for _, path in pairs]
    return _assemble(parts, variables, fixed, missing, files, content_hash(files))
