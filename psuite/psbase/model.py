"""psbase's data model: an experiment's definition (its variables), one run's
data, and the conversion of text into typed values.

Everything that reads runs (psuite documents, input descriptions) produces
RunData against a Definition; the store only ever sees typed Python values
that convert() made, so a bad value is refused before anything is written."""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
from dataclasses import dataclass, field

from psuite.errors import UsageError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
STRING_MAX = 255  # the store's VARCHAR(255); text has no limit
DATATYPES = ("integer", "float", "string", "text", "date", "time", "duration", "timestamp", "boolean", "version")
OCCURRENCES = ("once", "multiple")


@dataclass
class Variable:
    """A parameter (is_result False) or a result value of an experiment."""

    name: str
    datatype: str
    synopsis: str = ""
    description: str = ""
    unit: str = ""  # printed form, e.g. "MB/s" (psuite.psbase.units parses it)
    occurrence: str = "once"  # or "multiple": a column of the run's data set
    valid: list[str] = field(default_factory=list)  # empty: any value of the datatype
    default: str | None = None
    is_result: bool = False


@dataclass
class Definition:
    """An experiment: its meta information and its variables, in order."""

    name: str
    synopsis: str = ""
    description: str = ""
    performed_by: dict[str, str] = field(default_factory=dict)  # "name", "organization"
    variables: list[Variable] = field(default_factory=list)
    project: str = ""
    # the <description> as written, its line breaks and indentation kept: perfbase's info prints it so
    raw_description: str | None = field(default=None, compare=False)
    # perfbase's <admin_access>, <input_access>, <query_access>: (class, "user" or "group", name), given to
    # the archive's user classes by setup (PostgreSQL); not part of the definition kept
    access: list[tuple[str, str, str]] = field(default_factory=list, compare=False)

    @property
    def parameters(self) -> list[Variable]:
        return [v for v in self.variables if not v.is_result]

    @property
    def results(self) -> list[Variable]:
        return [v for v in self.variables if v.is_result]

    def variable(self, name: str) -> Variable:
        for v in self.variables:
            if v.name == name:
                return v
        known = ", ".join(v.name for v in self.variables) or "none"
        raise UsageError(f"experiment {self.name!r} has no variable {name!r} (it has: {known})")


@dataclass
class RunData:
    """One run, ready to be stored."""

    values: dict[str, object]  # once-variables: typed Python values (convert())
    rows: list[dict[str, object]] = field(default_factory=list)  # the data set: multiple-occurrence variables
    sources: list[str] = field(default_factory=list)  # the files the run came from
    content_hash: str = ""  # sha256 of the sources' contents: refuses a second import of the same files


class BadValue(UsageError):
    """A text that is not a value of the variable's datatype, or not among its valid values."""


ValueError_ = BadValue  # the name the brief used


def given_twice(first: str, again: str) -> str:
    """The refusal of an input given twice in one import: by the same name,
    or the same content (hash) under another name."""
    if first == again or os.path.abspath(first) == os.path.abspath(again):
        return f"{again} is given twice in this input; give it once (nothing was filed)"
    return (f"{again} has the same content as {first}, given before it in this input; give one of them "
            "(nothing was filed)")


class Version(str):
    """A version string ("2.6.10", "1.10rc2") that compares part by part as
    numbers where the parts are numbers, so "1.10" > "1.9"."""

    def key(self) -> tuple:
        return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.findall(r"\d+|[A-Za-z]+", self))

    def __lt__(self, other: object) -> bool:
        return self.key() < Version(other).key()

    def __le__(self, other: object) -> bool:
        return self.key() <= Version(other).key()

    def __gt__(self, other: object) -> bool:
        return self.key() > Version(other).key()

    def __ge__(self, other: object) -> bool:
        return self.key() >= Version(other).key()

    __hash__ = str.__hash__


_TRUE = {"true", "yes", "on", "1", "y", "t"}
_FALSE = {"false", "no", "off", "0", "n", "f"}
_DURATION_PARTS = re.compile(r"^(?:(\d+(?:\.\d*)?)d)?\s*(?:(\d+(?:\.\d*)?)h)?\s*(?:(\d+(?:\.\d*)?)m(?!s))?\s*"
                             r"(?:(\d+(?:\.\d*)?)s)?\s*(?:(\d+(?:\.\d*)?)ms)?$")
_TIMESTAMP_FORMATS = ("%a %b %d %H:%M:%S %Z %Y", "%a %b %d %H:%M:%S %Y", "%d.%m.%Y %H:%M:%S", "%Y/%m/%d %H:%M:%S")
_DATE_FORMATS = ("%d.%m.%Y", "%Y/%m/%d", "%b %d %Y", "%d %b %Y")
_EXPECTED = {
    "integer": "an integer",
    "float": "a number",
    "string": f"a string of at most {STRING_MAX} characters (use datatype text for longer ones)",
    "text": "a text",
    "date": "a date (YYYY-MM-DD)",
    "time": "a time of day (HH:MM[:SS])",
    "duration": "a duration (seconds, HH:MM:SS or 1h2m3s)",
    "timestamp": "a timestamp (YYYY-MM-DD HH:MM:SS)",
    "boolean": "a boolean (true/false, yes/no, 1/0)",
    "version": "a version (e.g. 2.6.10)",
}


def _duration(s: str) -> _dt.timedelta:
    try:
        return _dt.timedelta(seconds=float(s))
    except ValueError:
        pass
    if ":" in s:
        parts = [float(p) for p in s.split(":")]
        if len(parts) > 3:
            raise ValueError(s)
        seconds = 0.0
        for p in parts:
            seconds = seconds * 60 + p
        return _dt.timedelta(seconds=seconds)
    m = _DURATION_PARTS.match(s)
    if not m or not any(m.groups()):
        raise ValueError(s)
    d, h, mi, sec, ms = (float(g) if g else 0.0 for g in m.groups())
    return _dt.timedelta(days=d, hours=h, minutes=mi, seconds=sec, milliseconds=ms)


def _timestamp(s: str) -> _dt.datetime:
    """A timestamp; one with a zone offset is converted to UTC and kept
    without the zone (both databases then store the same instant), one
    without an offset is kept as written."""
    try:
        t = _dt.datetime.fromisoformat(s.replace("Z", "+00:00") if s.endswith("Z") else s)
    except ValueError:
        for fmt in _TIMESTAMP_FORMATS:
            try:
                t = _dt.datetime.strptime(s, fmt)
                break
            except ValueError:
                continue
        else:
            raise ValueError(s) from None
    if t.tzinfo is not None:
        t = t.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return t


def _date(s: str) -> _dt.date:
    try:
        return _dt.date.fromisoformat(s)
    except ValueError:
        pass
    for fmt in _DATE_FORMATS:
        try:
            return _dt.datetime.strptime(s, fmt).date()
        except ValueError:
            continue
    raise ValueError(s)


# A number as perfbase and the C library write one: ASCII digits only.  Python's int() and float() also take
# other scripts' digits ("٣", "１") and underscores ("1_000"), which no program prints as a measurement.
_ASCII_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _parse(datatype: str, s: str) -> object:
    if datatype in ("integer", "float") and not _ASCII_NUMBER.fullmatch(s):
        raise ValueError(s)
    if datatype == "integer":
        try:
            n = int(s)
        except ValueError:
            f = float(s)  # "4.0" and "1e3" are integers written as floats
            if not f.is_integer():
                raise
            n = int(f)
        if not INT64_MIN <= n <= INT64_MAX:  # what both databases store
            raise ValueError(s)
        return n
    if datatype == "float":
        f = float(s)
        if not math.isfinite(f):  # NaN compares to nothing, and inf is an overflow, not a measurement
            raise ValueError(s)
        return f
    if datatype == "string":
        if len(s) > STRING_MAX:
            raise ValueError(s)
        return s
    if datatype == "text":
        return s
    if datatype == "date":
        return _date(s)
    if datatype == "time":
        t = _dt.time.fromisoformat(s)
        if t.tzinfo is not None:  # stored without a zone: in UTC, as timestamps are
            t = _dt.datetime.combine(_dt.date(2000, 1, 1), t).astimezone(_dt.timezone.utc).time()
        return t
    if datatype == "duration":
        return _duration(s)
    if datatype == "timestamp":
        return _timestamp(s)
    if datatype == "boolean":
        low = s.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(s)
    if datatype == "version":
        if not re.search(r"\d", s) or re.search(r"\s", s):
            raise ValueError(s)
        return Version(s)
    raise UsageError(f"unknown datatype {datatype!r}; use one of {', '.join(DATATYPES)}")


def convert(variable: Variable, text: str) -> object:
    """text as a typed value of variable: int, float, str, datetime.date,
    datetime.time, datetime.timedelta, datetime.datetime, bool or Version.
    BadValue (one line) when it does not parse or is not among variable.valid."""
    s = text if variable.datatype == "text" else str(text).strip()
    if "\0" in s:  # PostgreSQL stores no NUL in text; SQLite would: one rule for both
        raise BadValue(f"variable {variable.name!r}: the value holds a NUL character; remove it")
    if variable.datatype == "version" and len(s) > STRING_MAX:  # the store's VARCHAR(255), as for strings
        raise BadValue(f"variable {variable.name!r}: a version of {len(s)} characters is longer than "
                       f"{STRING_MAX}; shorten it")
    try:
        value = _parse(variable.datatype, s)
    except (ValueError, OverflowError):
        shown = s if len(s) <= 60 else s[:57] + "..."
        why = _EXPECTED[variable.datatype]
        if variable.datatype == "integer" and re.fullmatch(r"[+-]?[0-9]+", s):
            why += " within 64 bits"
        elif variable.datatype == "float" and (
            _ASCII_NUMBER.fullmatch(s) or re.fullmatch(r"[+-]?(inf|infinity|nan)", s, re.IGNORECASE)
        ):
            why = "a finite number (no inf or nan)"
        raise BadValue(f"variable {variable.name!r}: {shown!r} is not {why}") from None
    if variable.valid:
        allowed = [_parse(variable.datatype, v.strip()) for v in variable.valid]
        if value not in allowed:
            raise BadValue(f"variable {variable.name!r}: {s!r} is not a valid value; "
                           f"use one of {', '.join(variable.valid)}")
    return value
