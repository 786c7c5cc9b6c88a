"""Reader of raw profiles, <hwpcreport mode="profile"> (hwpcreport-0.3.dtd):
the profile event and threshold, and the sampled PCs of each loaded
module with its load offset."""

from __future__ import annotations

from psuite.errors import InputError
from psuite.formats import values
from psuite.formats.readers.document import Document
from psuite.formats.readers.hwpcreport import module_buildids, read_run_info
from psuite.model.report import ModuleSamples, ProfileReport

ROOT = "hwpcreport"


def accepts(root) -> bool:
    return root.tag == ROOT and root.get("mode") == "profile"


def read_event(event, r: ProfileReport) -> None:
    """The sampled event's attributes (<profileevent> here, <hwpcevent> in
    processed reports, which also carry class and version)."""
    r.event = event.get("name", "")
    r.event_type = event.get("type", "native")
    r.domain = event.get("domain", "user")
    r.profile_class = event.get("class", r.profile_class)
    r.profile_version = event.get("version", r.profile_version)


def read(root, doc: Document) -> ProfileReport:
    source = doc.source
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
        r.threshold = values.integer(threshold, "<threshold>", source) if threshold else None
    buildids = module_buildids(r.annotation)
    total = (data.findtext("totalsamples") or "").strip()
    r.total_samples = values.integer(total, "<totalsamples>", source) if total else 0
    for mod in data.iterfind("module"):
        offset = mod.get("offset", "0")
        m = ModuleSamples(file=mod.get("file", "??"),
                          offset=values.integer(offset, "<module offset>", source, hi=2**64 - 1,
                                                base=16 if offset.lower().startswith("0x") else 10))
        m.buildid = buildids.get(m.file, "")
        for samples in mod.iterfind("samples"):
            table = doc.samples(samples)
            if table and min(table) < m.offset:  # file address = pc - offset: no sample lies below its module
                raise InputError(f"{source}: <sample pc> {min(table):#x} is below the load address of its module "
                                 f"{m.file} (<module offset> {m.offset:#x}); fix or regenerate the document")
            if not m.samples:
                m.samples.update(table)  # the module's first <samples>: nothing to add to
                continue
            for pc, n in table.items():
                m.samples[pc] = m.samples.get(pc, 0) + n
        r.modules.append(m)
    if not total:  # an empty <totalsamples/> (the DTD allows it): the samples recorded are the total
        r.total_samples = sum(sum(m.samples.values()) for m in r.modules)
    return r
