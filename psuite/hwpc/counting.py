"""The Python counting API over libpshwpc, the same calls psrun makes.

    from psuite.hwpc import Counting
    with Counting(["task-clock", "page-faults"]) as c:
        work()
    print(c.counts)          # {"task-clock": 12345678, "page-faults": 42}

Events come from the argument, else PS_HWPC_CONFIG, else the default list.
The C library holds one process-wide event set: one Counting at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from psuite.errors import ConfigError, EventError, PsuiteError
from psuite.libperfsuite.native import load, text

OK = 0
ERRORS = {-1: "EINVAL", -2: "ESTATE", -3: "ECONFIG", -4: "ENOEVENT", -5: "ENOCOUNT", -6: "EIO",
          -7: "EBACKEND", -8: "EEXIST"}
COUNTED, DROPPED, UNKNOWN = 0, 1, 2


class HwpcError(PsuiteError):
    def __init__(self, call: str, code: int, detail: str = "") -> None:
        ffi, lib = load()
        msg = f"{call}: {text(ffi, lib.ps_hwpc_strerror(code))}"
        super().__init__(msg + (f" ({detail})" if detail else ""))
        self.code = code


@dataclass
class EventStatus:
    name: str
    status: int
    reason: str

    @property
    def counted(self) -> bool:
        return self.status == COUNTED


def _check(call: str, rc: int, detail: str = "") -> None:
    if rc != OK:
        raise HwpcError(call, rc, detail)


class Counting:
    """Count events around a region of Python code (and what it calls)."""

    def __init__(self, events: Iterable[str] | None = None, domain: str | None = None,
                 backend: str | None = None, environment: dict[str, str] | None = None) -> None:
        """environment: PSUITE_*/PS_HWPC_CONFIG settings as psrun passes them."""
        self.ffi, self.lib = load()
        self._env = dict(environment or {})
        if events is not None:
            self._env["PSUITE_EVENTS"] = ",".join(events)
        if domain is not None:
            self._env["PSUITE_DOMAIN"] = domain
        if backend is not None:
            self._env["PSUITE_BACKEND"] = backend
        self.counts: dict[str, int] = {}
        self.statuses: list[EventStatus] = []
        self._initialised = False

    # -- the C API, one method per call ---------------------------------
    def init(self) -> list[EventStatus]:
        saved = {k: os.environ.get(k) for k in self._env}
        os.environ.update(self._env)
        try:
            rc = self.lib.ps_hwpc_init()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.statuses = self._statuses()
        unknown = [s.name for s in self.statuses if s.status == UNKNOWN]
        if unknown:
            raise EventError(f"unknown event {', '.join(unknown)} (see psinv -e for the events here)")
        _check("ps_hwpc_init", rc, "; ".join(f"{s.name}: {s.reason}" for s in self.statuses if not s.counted))
        if self.lib.ps_hwpc_backend(self.ffi.NULL) == self.ffi.NULL:
            # a <ps_hwpc_profile> configuration, or psrun --profile: the library samples, it counts nothing
            self.lib.ps_hwpc_shutdown()
            raise ConfigError("the configuration is a profile (<ps_hwpc_profile> or psrun --profile); Counting "
                              "counts events: give it events or a <ps_hwpc_eventlist> configuration")
        self._initialised = True
        return self.statuses

    def _statuses(self) -> list[EventStatus]:
        name, why = self.ffi.new("const char **"), self.ffi.new("const char **")
        status = self.ffi.new("int *")
        out = []
        for i in range(self.lib.ps_hwpc_numrequested()):
            if self.lib.ps_hwpc_eventstatus(i, name, status, why) == OK:
                out.append(EventStatus(text(self.ffi, name[0]), status[0], text(self.ffi, why[0])))
        return out

    def start(self) -> None:
        _check("ps_hwpc_start", self.lib.ps_hwpc_start())

    def suspend(self) -> None:
        _check("ps_hwpc_suspend", self.lib.ps_hwpc_suspend())

    def read(self) -> dict[str, int]:
        names = self.event_names
        values = self.ffi.new("long long[]", max(len(names), 1))
        _check("ps_hwpc_read", self.lib.ps_hwpc_read(values))
        return dict(zip(names, list(values)[: len(names)], strict=True))

    def stop(self, name: str | None = None) -> None:
        """Stop and write the XML report (name: file.xml or a prefix)."""
        self.counts = self.read()
        _check("ps_hwpc_stop", self.lib.ps_hwpc_stop(name.encode() if name else self.ffi.NULL))

    def shutdown(self) -> None:
        if self._initialised:
            self._initialised = False
            _check("ps_hwpc_shutdown", self.lib.ps_hwpc_shutdown())

    @property
    def event_names(self) -> list[str]:
        arr = self.ffi.new("const char *const **")
        _check("ps_hwpc_eventnames", self.lib.ps_hwpc_eventnames(arr))
        out = []
        i = 0
        while arr[0][i] != self.ffi.NULL:
            out.append(text(self.ffi, arr[0][i]))
            i += 1
        return out

    @property
    def backend(self) -> tuple[str, str]:
        version = self.ffi.new("const char **")
        name = self.lib.ps_hwpc_backend(version)
        return text(self.ffi, name), text(self.ffi, version[0]) if name != self.ffi.NULL else ""

    @property
    def multiplexed(self) -> bool:
        return bool(self.lib.ps_hwpc_multiplexed())

    # -- context manager: count the block, keep the counts, write no file --
    def __enter__(self) -> Counting:
        self.init()
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.suspend()
            self.counts = self.read()
        finally:
            self.shutdown()
