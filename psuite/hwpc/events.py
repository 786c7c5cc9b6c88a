"""The events a user can name in a psrun configuration, and whether each
really counts here: availability is established by opening and starting the
event (PAPI: create/add/start/stop; perf_event: open/enable/read), not by a
library's table."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from psuite.libperfsuite.native import load, text

COUNTED, DROPPED, UNKNOWN = 0, 1, 2
BACKENDS = ("PAPI", "perf_event")


@dataclass
class EventInfo:
    name: str
    kind: str  # "preset" or "native"
    backend: str  # "PAPI" or "perf_event"
    description: str
    available: bool
    reason: str = ""  # why it is not available

    def to_dict(self) -> dict:
        return asdict(self)


def papi_version() -> str:
    """Version of the libpapi psrun would use ('' when there is none)."""
    ffi, lib = load()
    return text(ffi, lib.ps_papi_version())


@dataclass
class PapiComponent:
    name: str
    disabled: bool
    reason: str
    counters: int


def papi_components() -> list[PapiComponent]:
    ffi, lib = load()
    name, why = ffi.new("char[256]"), ffi.new("char[1024]")
    disabled, counters = ffi.new("int *"), ffi.new("int *")
    out = []
    i = 0
    while lib.ps_papi_component(i, name, 256, disabled, why, 1024, counters):
        out.append(PapiComponent(text(ffi, name), bool(disabled[0]), text(ffi, why), counters[0]))
        i += 1
    return out


def probe(name: str, backend: str | None = None) -> tuple[int, str]:
    """(COUNTED | DROPPED | UNKNOWN, reason) for one event name."""
    ffi, lib = load()
    why = ffi.new("char[512]")
    status = lib.ps_event_probe(backend.encode() if backend else ffi.NULL, name.encode(), why, 512)
    return status, text(ffi, why)


def catalogue(backend: str, check: bool = True) -> list[EventInfo]:
    """Every event of one backend, each probed unless check is False."""
    ffi, lib = load()
    name, desc = ffi.new("char[1024]"), ffi.new("char[2048]")
    kind = ffi.new("const char **")
    out = []
    i = 0
    while lib.ps_event_catalogue(backend.encode(), i, name, 1024, desc, 2048, kind):
        n = text(ffi, name)
        status, why = probe(n, backend) if check else (COUNTED, "")
        out.append(EventInfo(n, text(ffi, kind[0]), backend, text(ffi, desc), status == COUNTED, why))
        i += 1
    return out


def all_events(check: bool = True) -> list[EventInfo]:
    """PAPI's events (when a libpapi is present), then perf_event's."""
    events = catalogue("PAPI", check) if papi_version() else []
    return events + catalogue("perf_event", check)
