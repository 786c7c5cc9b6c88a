"""Event names across backends: one canonical spelling per meaning, so
metrics and tables agree whether PAPI or perf_event counted.

perf::TASK-CLOCK, PERF_COUNT_SW_TASK_CLOCK and task-clock are one event;
perf's generic hardware events are known by their PAPI preset names.
"""

from __future__ import annotations

import functools
import re

# perf generic events that mean a PAPI preset (as csrc/runtime/events.c maps them).
PERF_TO_PRESET = {
    "cycles": "PAPI_TOT_CYC",
    "cpu-cycles": "PAPI_TOT_CYC",
    "instructions": "PAPI_TOT_INS",
    "branch-instructions": "PAPI_BR_INS",
    "branches": "PAPI_BR_INS",
    "branch-misses": "PAPI_BR_MSP",
    "stalled-cycles-frontend": "PAPI_STL_ICY",
    "stalled-cycles-backend": "PAPI_RES_STL",
    "ref-cycles": "PAPI_REF_CYC",
    "l1-dcache-loads": "PAPI_L1_DCA",
    "l1-dcache-load-misses": "PAPI_L1_DCM",
    "l1-icache-loads": "PAPI_L1_ICA",
    "l1-icache-load-misses": "PAPI_L1_ICM",
    "dtlb-load-misses": "PAPI_TLB_DM",
    "itlb-load-misses": "PAPI_TLB_IM",
}
SOFTWARE_ALIASES = {"faults": "page-faults", "cs": "context-switches", "migrations": "cpu-migrations",
                    "page-faults-min": "minor-faults", "page-faults-maj": "major-faults",
                    "cpu-clock": "cpu-clock"}


_PERF_COUNT = re.compile(r"(?i)PERF_COUNT_(?:HW_|SW_)?(.*)")
_RAW = re.compile(r"r[0-9a-fA-F]+")


def canonical(name: str) -> str:
    """perf::TASK-CLOCK -> task-clock; perf::CYCLES -> PAPI_TOT_CYC; else unchanged.
    (Called for every event of a report, a million in large ones: the
    patterns are compiled once.)"""
    if name.startswith("PAPI_"):
        return name
    bare = name[6:] if name.startswith("perf::") else name
    if bare[:11].upper().startswith("PERF_COUNT_"):
        bare = _PERF_COUNT.match(bare).group(1).replace("_", "-")
    if "::" in bare or (bare[:1] == "r" and _RAW.fullmatch(bare)):
        return name
    low = bare.lower()
    low = {"cpu-cycles": "cycles"}.get(low, low)
    if low in PERF_TO_PRESET:
        return PERF_TO_PRESET[low]
    return SOFTWARE_ALIASES.get(low, low)


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
