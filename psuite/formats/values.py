"""Numbers read from documents, checked: every reader turns element text
into values through these, so a value that cannot be (a negative count,
a count beyond any 64-bit counter, inf or nan, digits that are not ASCII,
thousands of digits) is refused with one line naming the element, never
a traceback and never a nonsense report."""

from __future__ import annotations

import math
import re

from psuite.errors import InputError

# A hardware or software counter is at most 64 bits; PerfSuite's derived
# and multiplex-scaled counts are estimates of such counts.  Sums over a
# million reports of values this size stay far from float overflow.
MAX_COUNT = 2.0**64
# Times in seconds: a century is plenty, and keeps tick conversions finite.
MAX_SECONDS = 100 * 365.25 * 86400
MAX_DIGITS = 40  # longer numerals are not numbers any document means

_INT = re.compile(r"[+]?[0-9]+\Z")
_HEX = re.compile(r"(0[xX])?[0-9a-fA-F]+\Z")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")


def _bad(source: str, what: str, text: str | None, why: str) -> InputError:
    shown = (text or "").strip()
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return InputError(f"{source}: {what} is {why}: {shown!r}; fix or regenerate the document")


def count(text: str | None, what: str, source: str) -> int | float:
    """An event count: a non-negative integer, or a decimal for derived or
    scaled counts, at most 2^64."""
    s = (text or "").strip()
    if s.isascii() and s.isdigit() and len(s) < 20:  # the common case, fast
        value: int | float = int(s)
        if value <= MAX_COUNT:
            return value
    if len(s) > MAX_DIGITS:
        raise _bad(source, what, s, "not a count (too many digits)")
    if _INT.match(s):
        value = int(s)
    elif _FLOAT.match(s):
        value = float(s)
        if value.is_integer() and abs(value) < 2**53:
            value = int(value)
    else:
        raise _bad(source, what, s, "not a number")
    if not math.isfinite(value):
        raise _bad(source, what, s, "not a finite number")
    if value < 0:
        raise _bad(source, what, s, "negative (a count cannot be)")
    if value > MAX_COUNT:
        raise _bad(source, what, s, "larger than any 64-bit counter")
    return value


def thread_number(text: str | None) -> int | None:
    """A report's <thread> as psuite's thread number (docs/formats/numbering.md):
    None when there is none, or when the text is no decimal numeral of at
    most 18 digits (a name: the DTD allows any text)."""
    s = (text or "").strip()
    return int(s) if s.isascii() and s.isdigit() and len(s) <= 18 else None


def integer(text: str | None, what: str, source: str, *, lo: int = 0, hi: int = 2**63 - 1,
            base: int = 10) -> int:
    """A whole number in [lo, hi], decimal (ASCII digits only) or hex."""
    s = (text or "").strip()
    if base == 10 and s.isascii() and s.isdigit() and len(s) < 19:  # the common case, fast
        value = int(s)
        if lo <= value <= hi:
            return value
    negative = base == 10 and s.startswith("-")
    digits = s[1:] if negative else s
    pattern = _HEX if base == 16 else _INT
    if len(digits) > MAX_DIGITS or not pattern.match(digits):
        raise _bad(source, what, s, "not a whole number")
    value = int(digits[2:] if base == 16 and digits[:2].lower() == "0x" else digits, base)
    value = -value if negative else value
    if not lo <= value <= hi:
        raise _bad(source, what, s, f"out of range ({lo} to {hi})")
    return value


def real(text: str | None, what: str, source: str, *, lo: float = 0.0, hi: float = MAX_SECONDS) -> float:
    """A finite decimal number in [lo, hi] (times, frequencies, loads)."""
    s = (text or "").strip()
    if len(s) > MAX_DIGITS or not _FLOAT.match(s):
        raise _bad(source, what, s, "not a number")
    value = float(s)
    if not math.isfinite(value):
        raise _bad(source, what, s, "not a finite number")
    if not lo <= value <= hi:
        raise _bad(source, what, s, f"out of range ({lo:g} to {hi:g})")
    return value


def optional_real(text: str | None, what: str, source: str, **limits: float) -> float | None:
    """real(), or None for an empty element."""
    return real(text, what, source, **limits) if (text or "").strip() else None
