"""PerfSuite configuration files: <ps_hwpc_eventlist> (counting) and
<ps_hwpc_profile> (profiling), read with clear errors."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from psuite.errors import ConfigError
from psuite.hwpc.profiling import TIMERS, check_profile_event

CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_native", "configs")
DOMAINS = ("user", "kernel", "all")


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
        # the first error, at its position: libxml2's messages may quote the document, newlines included
        first = next((e for e in parser.error_log if e.level_name in ("ERROR", "FATAL")), None)
        text = " ".join((f"{first.message}, line {first.line}, column {first.column}" if first else str(exc)).split())
        raise error(f"{what} is not well-formed XML ({text[:200]})") from None
    if root is None:
        raise error(f"{what} is empty")
    return root


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


def read_configuration(path: str) -> EventList | ProfileConfig:
    """A counting or a profiling configuration, whichever the file is."""
    root = read_xml_file(path, "configuration")
    if root.tag == "ps_hwpc_profile":
        return _profile(path, root)
    return _eventlist(path, root)


def read_eventlist(path: str) -> EventList:
    root = read_xml_file(path, "configuration")
    if root.tag == "ps_hwpc_profile":
        raise ConfigError(f"{path} is a profiling configuration (<ps_hwpc_profile>); give a <ps_hwpc_eventlist>")
    return _eventlist(path, root)


def _profile(path: str, root) -> ProfileConfig:
    cls = root.get("class")
    if cls not in ("itimer", "PAPI", "perfmon"):
        raise ConfigError(f"{path}: <ps_hwpc_profile> class must be itimer, PAPI or perfmon, not {cls!r}")
    domain = root.get("domain", "user")
    if domain not in DOMAINS:
        raise ConfigError(f"{path}: domain must be user, kernel or all, not {domain!r}")
    events = [el for el in root if isinstance(el.tag, str)]
    if len(events) != 1 or events[0].tag != "ps_hwpc_event" or not (events[0].get("name") or "").strip():
        raise ConfigError(f"{path}: <ps_hwpc_profile> holds exactly one <ps_hwpc_event name=\"...\" "
                          "threshold=\"...\"/>")
    name = events[0].get("name").strip()
    if cls == "itimer" and name not in TIMERS:
        raise ConfigError(f"{path}: class itimer takes {', '.join(TIMERS)}, not {name}")
    raw = events[0].get("threshold")
    try:
        threshold = int(raw) if raw is not None else None
    except ValueError:
        raise ConfigError(f"{path}: threshold must be a positive integer, not {raw!r}") from None
    return ProfileConfig(os.path.abspath(path), cls, domain, name, check_profile_event(name, threshold, path))


def _eventlist(path: str, root) -> EventList:
    if root.tag != "ps_hwpc_eventlist":
        raise ConfigError(f"{path}: root element is <{root.tag}>; a counting configuration is "
                          "<ps_hwpc_eventlist class=\"PAPI\"> with <ps_hwpc_event name=\"...\"/> children")
    cls = root.get("class", "PAPI")
    if cls not in ("PAPI", "perfmon", "null"):
        raise ConfigError(f"{path}: class must be PAPI, perfmon or null, not {cls!r}")
    domain = root.get("domain", "user")
    if domain not in DOMAINS:
        raise ConfigError(f"{path}: domain must be user, kernel or all, not {domain!r}")
    out = EventList(path=os.path.abspath(path), event_class=cls, domain=domain)
    for el in root:
        if not isinstance(el.tag, str):
            continue
        if el.tag != "ps_hwpc_event":
            raise ConfigError(f"{path}: unexpected element <{el.tag}> in <ps_hwpc_eventlist>")
        name = (el.get("name") or "").strip()
        if not name:
            raise ConfigError(f"{path}: a <ps_hwpc_event> has no name attribute")
        kind = el.get("type", "preset" if name.startswith("PAPI_") else "native")
        if kind not in ("preset", "native"):
            raise ConfigError(f"{path}: event {name}: type must be preset or native")
        out.events.append((name, kind))
    if not out.events:
        raise ConfigError(f"{path}: no <ps_hwpc_event> listed")
    if len(out.events) > 64:
        raise ConfigError(f"{path}: {len(out.events)} events; at most 64 can be requested")
    return out
