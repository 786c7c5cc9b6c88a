"""PerfSuite configuration files: <ps_hwpc_eventlist> (counting) and
<ps_hwpc_profile> (profiling), read with clear errors."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from psuite.errors import ConfigError
from psuite.hwpc.profiling import TIMERS, check_profile_event

CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_native", "configs")


def default_config_path() -> str:
    """configs/default.xml as installed with the package."""
    return os.path.join(CONFIG_DIR, "default.xml")


@dataclass
class EventList:
    path: str
    event_class: str = "PAPI"
    domain: str = "user"
    events: list[tuple[str, str]] = field(default_factory=list)  # (name, "preset"|"native")

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.events]


def parse_xml_safely(data: bytes, what: str, error: type[Exception] = ConfigError):
    """lxml parse with no network, no external entities, no DTD loading and
    bounded expansion; `error` names the problem as `what`, in one line
    (libxml2's first error, its position, whitespace folded)."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False,
                             remove_comments=True)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise error(f"{what} is not well-formed XML ({xml_error_text(exc, parser.error_log)})") from None
    if root is None:
        raise error(f"{what} is empty")
    return root


def xml_error_text(exc: Exception, error_log=None) -> str:
    """libxml2's error at its position, in one short line (its messages may
    quote the document, newlines included): the first of a parser's own
    error_log, else the exception's (iterparse's log is not the parse's)."""
    first = next((e for e in error_log or () if e.level_name in ("ERROR", "FATAL")), None)
    if first is not None:
        text = f"{first.message}, line {first.line}, column {first.column}"
    else:  # lxml's message names the position already
        text = getattr(exc, "msg", None) or str(exc)
    return " ".join(text.split())[:200]


def read_xml_file(path: str, what: str):
    """Root element of a configuration-like XML file, with one-line errors;
    only regular files are read (never a pipe or a device)."""
    from psuite.cli_common import read_input

    return parse_xml_safely(read_input(path, what, ConfigError), f"{what} {path}")


@dataclass
class ProfileConfig:
    """<ps_hwpc_profile>: one sampling source and its period."""

    path: str
    profile_class: str  # itimer, PAPI or perfmon
    domain: str
    event: str
    threshold: int  # microseconds for timers, events for overflow
    callpath: int = 0  # callpath="yes|no|N": the most frames recorded per sample; 0: flat only


CALLPATH_DEFAULT = 128  # callpath="yes", as psrun --callpath


def _callpath(path: str) -> int:
    """The root's callpath attribute as a depth (the C parser has checked it)."""
    value = read_xml_file(path, "configuration").get("callpath")
    if value in (None, "no"):
        return 0
    return CALLPATH_DEFAULT if value == "yes" else int(value)


def _parse(path: str):
    """The file through the C library's configuration parser (expat), the
    one every reader of a configuration uses: psrun, the library inside the
    program and this API agree on every file.  Returns its ps_hwpc_config_t."""
    from psuite.cli_common import read_input
    from psuite.libperfsuite.native import load

    data = read_input(path, "configuration", ConfigError, limit=16 << 20)
    ffi, lib = load()
    out = ffi.new("ps_hwpc_config_t *")
    err = ffi.new("char[8192]")
    if lib.ps_hwpc_config_parse(os.fsencode(path), data, len(data), out, err, len(err)) != 0:
        raise ConfigError(ffi.string(err).decode("utf-8", "replace"))
    return ffi, out


def read_configuration(path: str) -> EventList | ProfileConfig:
    """A counting or a profiling configuration, whichever the file is."""
    ffi, cfg = _parse(path)
    if cfg.kind == 2:
        return _profile(path, ffi, cfg)
    return _eventlist(path, ffi, cfg)


def read_eventlist(path: str) -> EventList:
    ffi, cfg = _parse(path)
    if cfg.kind == 2:
        raise ConfigError(f"{path} is a profiling configuration (<ps_hwpc_profile>); give a <ps_hwpc_eventlist>")
    return _eventlist(path, ffi, cfg)


def _text(ffi, chars) -> str:
    return ffi.string(chars).decode("utf-8", "replace")


def _profile(path: str, ffi, cfg) -> ProfileConfig:
    cls, domain, name = _text(ffi, cfg.cls), _text(ffi, cfg.domain), _text(ffi, cfg.names[0])
    if cls == "itimer" and name not in TIMERS:
        raise ConfigError(f"{path}: class itimer takes {', '.join(TIMERS)}, not {name}")
    raw = _text(ffi, cfg.threshold) if cfg.has_threshold else None
    try:
        threshold = int(raw) if raw is not None else None
    except ValueError:
        raise ConfigError(f"{path}: threshold must be a positive integer, not {raw!r}") from None
    return ProfileConfig(
        os.path.abspath(path), cls, domain, name, check_profile_event(name, threshold, path), _callpath(path)
    )


def _eventlist(path: str, ffi, cfg) -> EventList:
    out = EventList(path=os.path.abspath(path), event_class=_text(ffi, cfg.cls), domain=_text(ffi, cfg.domain))
    out.events = [(_text(ffi, cfg.names[i]), _text(ffi, cfg.types[i])) for i in range(cfg.nevents)]
    return out
