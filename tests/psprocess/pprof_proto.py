"""pprof's profile.proto read back here by a decoder of its own (the wire
format: varints and length-delimited fields), not by the exporter's code:
each sample as pprof resolves it, with its locations' mappings, functions
and lines by name, so that two files compare whatever their ids."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path


def _fields(data: bytes):
    """(field number, wire type, value) of a message: ints, or bytes."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            n, i = _varint(data, i)
            value, i = data[i:i + n], i + n
        elif wire == 1:
            value, i = int.from_bytes(data[i:i + 8], "little"), i + 8
        elif wire == 5:
            value, i = int.from_bytes(data[i:i + 4], "little"), i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def _varint(data: bytes, i: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        b = data[i]
        i += 1
        out |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return out, i


def _ints(wire: int, value) -> list[int]:
    """A repeated integer field: packed (bytes) or one value."""
    if wire != 2:
        return [value]
    out, i = [], 0
    while i < len(value):
        v, i = _varint(value, i)
        out.append(v)
    return out


def _message(data: bytes) -> dict[int, list]:
    out: dict[int, list] = {}
    for number, wire, value in _fields(data):
        out.setdefault(number, []).append((wire, value))
    return out


def _one(m: dict, number: int, default=0):
    return m[number][-1][1] if number in m else default


def decode(path: str | Path) -> dict:
    """The profile: sample types, the samples as a Counter of (labels,
    values, stack) where a stack is leaf first, each location (mapping file,
    address, ((function, system name, file, line) innermost first)),
    period type, period, duration, comments and the first mapping's file."""
    top = _message(gzip.decompress(Path(path).read_bytes()))
    strings = [v.decode() for _, v in top.get(6, [])]
    mappings = {}
    for _, raw in top.get(3, []):
        m = _message(raw)
        mappings[_one(m, 1)] = (strings[_one(m, 5)], tuple(_one(m, f) for f in (7, 8, 9, 10)))
    functions = {}
    for _, raw in top.get(5, []):
        m = _message(raw)
        functions[_one(m, 1)] = (strings[_one(m, 2)], strings[_one(m, 3)], strings[_one(m, 4)])
    locations = {}
    for _, raw in top.get(4, []):
        m = _message(raw)
        lines = tuple((*functions[_one(ln, 1)], _one(ln, 2)) for ln in (_message(v) for _, v in m.get(4, [])))
        mapping = mappings.get(_one(m, 2), ("", ()))[0] if _one(m, 2) else None
        locations[_one(m, 1)] = (mapping, _one(m, 3), lines)
    samples: Counter = Counter()
    for _, raw in top.get(2, []):
        m = _message(raw)
        stack = tuple(locations[i] for w, v in m.get(1, []) for i in _ints(w, v))
        values = tuple(x for w, v in m.get(2, []) for x in _ints(w, v))
        labels = tuple(sorted((strings[_one(lb, 1)], strings[_one(lb, 2)])
                              for lb in (_message(v) for _, v in m.get(3, []))))
        samples[(labels, values, stack)] += 1
    types = [(strings[_one(t, 1)], strings[_one(t, 2)]) for t in (_message(v) for _, v in top.get(1, []))]
    period_type = _message(top[11][0][1]) if 11 in top else {}
    return {
        "types": types,
        "samples": samples,
        "period_type": (strings[_one(period_type, 1)], strings[_one(period_type, 2)]) if period_type else None,
        "period": _one(top, 12),
        "duration": _one(top, 10),
        "comments": [strings[i] for w, v in top.get(13, []) for i in _ints(w, v)],
        "main_mapping": mappings.get(1, ("", ()))[0],
        "mapping_flags": {flags for _, flags in mappings.values()},
    }
