"""Event names across backends and spellings: one canonical name per event,
so reports, metrics, exports and archives agree whether PAPI or
perf_event counted it and however the event list spelt it.

The canonical name is
- a PAPI preset (PAPI_TOT_CYC) for an event that has one: PerfSuite's own
  documents, the original's included, and its metric definitions
  (configs/metrics.xml's <ci>) speak presets, and perf's generic hardware
  events that mean a preset (cycles, perf::CYCLES, PERF_COUNT_HW_CPU_CYCLES)
  are that preset;
- the perf tool's name (task-clock, page-faults, LLC-loads) for the other
  generic perf_event events: PAPI has no preset for them, its
  perf::TASK-CLOCK is libpfm4's spelling of perf's event, and perf's name
  is the one `psrun -e`, `perf stat -e` and psinv give first;
- the name as written for anything else (native events of a PMU or PAPI
  component, raw rNNNN, names with modifiers): no other spelling is known.

Documents are read into the model under canonical names (the readers'
canonical_names(), through rename_events()); an event's spelling in the
document, when it differs, is kept as its counted_as.
"""

from __future__ import annotations

import functools
import itertools
import operator
import re

# perf's generic events (csrc/runtime/events.c's table, in the perf tool's spelling) and the PAPI
# preset each means, if any; tests/psprocess/test_event_names.py checks the two tables agree
PERF_EVENTS: dict[str, str | None] = {
    "task-clock": None, "cpu-clock": None, "page-faults": None, "minor-faults": None, "major-faults": None,
    "context-switches": None, "cpu-migrations": None, "alignment-faults": None, "emulation-faults": None,
    "cgroup-switches": None,
    "cycles": "PAPI_TOT_CYC", "instructions": "PAPI_TOT_INS", "cache-references": None, "cache-misses": None,
    "branch-instructions": "PAPI_BR_INS", "branch-misses": "PAPI_BR_MSP", "bus-cycles": None,
    "stalled-cycles-frontend": "PAPI_STL_ICY", "stalled-cycles-backend": "PAPI_RES_STL",
    "ref-cycles": "PAPI_REF_CYC",
    "L1-dcache-loads": "PAPI_L1_DCA", "L1-dcache-load-misses": "PAPI_L1_DCM", "L1-dcache-stores": None,
    "L1-icache-loads": "PAPI_L1_ICA", "L1-icache-load-misses": "PAPI_L1_ICM",
    "LLC-loads": None, "LLC-load-misses": None, "dTLB-loads": None, "dTLB-load-misses": "PAPI_TLB_DM",
    "iTLB-load-misses": "PAPI_TLB_IM", "branch-loads": None, "branch-load-misses": None,
}
# other spellings of those events, lower case: perf's short names, and libpfm4's (PAPI's perf::
# names) and the PERF_COUNT_* names' where they are not the perf name in capitals
_OTHER_SPELLINGS = {
    "cpu-cycles": "cycles", "branches": "branch-instructions", "faults": "page-faults", "cs": "context-switches",
    "migrations": "cpu-migrations", "page-faults-min": "minor-faults", "page-faults-maj": "major-faults",
    "ref-cpu-cycles": "ref-cycles",
}
_BY_LOWER = {name.lower(): preset or name for name, preset in PERF_EVENTS.items()}
_BY_LOWER.update({alias: _BY_LOWER[name] for alias, name in _OTHER_SPELLINGS.items()})

_PERF_COUNT = re.compile(r"(?i)PERF_COUNT_(?:HW_|SW_)?(.*)")


def canonical(name: str) -> str:
    """The canonical name of an event (see the module's docstring):
    perf::TASK-CLOCK -> task-clock; perf::CYCLES, cycles -> PAPI_TOT_CYC;
    anything not known as a perf event unchanged.  (Not cached: a report
    can hold a million names, each asked once.)"""
    if name.startswith("PAPI_"):
        return name
    bare = name[6:] if name.startswith("perf::") else name
    if bare[:11].upper() == "PERF_COUNT_":
        bare = _PERF_COUNT.match(bare).group(1).replace("_", "-")
    return _BY_LOWER.get(bare.lower(), name)


def canonical_names(names: list[str]) -> list[str]:
    """canonical() of each name; the names it could change are picked out
    at C speed first (a report can hold a million names, in the common
    case none of them a perf spelling)."""
    out = list(names)
    for i in itertools.compress(range(len(out)), map(_SPELLINGS.__contains__, map(str.lower, out))):
        out[i] = canonical(out[i])
    return out


def rename_events(events: list) -> None:
    """Each event's spelling (its .name) to its canonical name, in place,
    the spelling kept as its .counted_as; not when another spelling of the
    report has that name (or took it first).  A report can hold a million
    events of distinct names: the spellings canonical() could change are
    picked out at C speed first (in the common case, none)."""
    names = list(map(_NAME, events))
    maybe = set(itertools.compress(names, map(_SPELLINGS.__contains__, map(str.lower, names))))
    renames = {name: new for name in maybe if (new := canonical(name)) != name}
    if not renames:
        return
    taken = set(names)
    for name in [n for n in dict.fromkeys(names) if n in renames]:  # first come, first named
        if renames[name] in taken:
            del renames[name]
        else:
            taken.add(renames[name])
    for e in events:
        new = renames.get(e.name)
        if new is not None:
            e.counted_as, e.name = e.name, new


def _spellings() -> frozenset[str]:
    """Every name canonical() may change, lower case: each perf spelling,
    with perf:: or without, and as PERF_COUNT_[HW_|SW_]* (its '-' written
    '_' or '-', as canonical() reads either)."""
    out: set[str] = set()
    for key in _BY_LOWER:
        parts = key.split("-")
        forms = {parts[0]}
        for part in parts[1:]:
            forms = {f + sep + part for f in forms for sep in "-_"}
        out |= {key, *(f"perf_count_{kind}{f}" for kind in ("", "hw_", "sw_") for f in forms)}
    return frozenset([*out, *(f"perf::{s}" for s in out)])


_SPELLINGS = _spellings()
_NAME = operator.attrgetter("name")


@functools.lru_cache(maxsize=1)
def descriptions() -> dict[str, str]:
    """Canonical name -> description, from the C library's catalogues."""
    from psuite.libperfsuite.native import load, text

    ffi, lib = load()
    name, desc = ffi.new("char[256]"), ffi.new("char[1024]")
    kind = ffi.new("const char **")
    out: dict[str, str] = {}
    for backend in (b"PAPI_presets", b"perf_event"):
        i = 0
        while lib.ps_event_catalogue(backend, i, name, 256, desc, 1024, kind):
            d = re.sub(r" \(PAPI: \w+\)$", "", text(ffi, desc))
            out.setdefault(canonical(text(ffi, name)), d)
            i += 1
    return out


def is_known(name: str) -> bool:
    """Could name be an event?  Presets and perf names are checked; PAPI
    native names (component::event) and raw rNNNN cannot be checked away
    from the machine that counted them and are accepted."""
    if "::" in name.replace("perf::", "", 1) or re.fullmatch(r"r[0-9a-fA-F]+", name):
        return True
    return canonical(name) in descriptions()
