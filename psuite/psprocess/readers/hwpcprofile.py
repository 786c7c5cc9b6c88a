"""Reader of raw profiles, <hwpcreport mode="profile"> (hwpcreport-0.3.dtd):
the profile event and threshold, and the sampled PCs of each loaded
module with its load offset."""

from __future__ import annotations

from psuite.errors import InputError
from psuite.psprocess.readers.hwpcreport import read_run_info
from psuite.report import ModuleSamples, ProfileReport

ROOT = "hwpcreport"


def accepts(root) -> bool:
    return root.tag == ROOT and root.get("mode") == "profile"


def _int(text: str | None, base: int, what: str, source: str) -> int:
    try:
        return int((text or "").strip(), base)
    except ValueError:
        raise InputError(f"{source}: {what} is not a number: {text!r}") from None


def read_event(event, r: ProfileReport) -> None:
    """The sampled event's attributes (<profileevent> here, <hwpcevent> in
    processed reports, which also carry class and version)."""
    r.event = event.get("name", "")
    r.event_type = event.get("type", "native")
    r.domain = event.get("domain", "user")
    r.profile_class = event.get("class", r.profile_class)
    r.profile_version = event.get("version", r.profile_version)


def read(root, source: str) -> ProfileReport:
    r = ProfileReport(version=root.get("version", ""), generator=root.get("generator", ""))
    read_run_info(root, r, source)
    data = root.find("hwpcprofiledata")
    if data is None:
        raise InputError(f"{source}: profile report without <hwpcprofiledata>")
    r.profile_class = data.get("class", "")
    r.profile_version = data.get("version", "")
    event = data.find("profileinfo/profileevent")
    if event is not None:
        read_event(event, r)
        threshold = event.findtext("threshold")
        r.threshold = _int(threshold, 10, "<threshold>", source) if threshold else None
    r.total_samples = _int(data.findtext("totalsamples", "0"), 10, "<totalsamples>", source)
    for mod in data.iterfind("module"):
        offset = mod.get("offset", "0")
        m = ModuleSamples(file=mod.get("file", "??"),
                          offset=_int(offset, 16 if offset.lower().startswith("0x") else 10, "module offset",
                                      source))
        samples = mod.find("samples")
        base = _int(samples.get("pcbase", "16"), 10, "pcbase", source) if samples is not None else 16
        for s in mod.iterfind("samples/sample"):
            pc = s.get("pc", "")
            pc_value = _int(pc[2:] if pc.lower().startswith("0x") else pc, base, "sample pc", source)
            m.samples[pc_value] = m.samples.get(pc_value, 0) + _int(s.text, 10, "sample count", source)
        r.modules.append(m)
    return r
