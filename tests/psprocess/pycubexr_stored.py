"""pycubexr as an independent reader of psuite's cubes, for their stored
metrics: psuite writes derived metrics as CUBE's derived metrics
(POSTDERIVED, PREDERIVED_*, a <cubepl> expression and no data), which
pycubexr (2.1) does not know and refuses.  stored_only(path) is a copy of
the cube without them, every stored metric's index and data as written;
the derived metrics themselves are checked against CubeLib's own
evaluation (tests/psprocess/data/cubelib-reads-psuite)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

DERIVED = ("POSTDERIVED", "PREDERIVED_INCLUSIVE", "PREDERIVED_EXCLUSIVE")


def stored_only(path: str | Path) -> Path:
    """The cube at path, or a copy beside it (NAME.stored.cubex) without its
    derived metrics when it has any."""
    from lxml import etree

    path = Path(path)
    with tarfile.open(path) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
    anchor = dict((m.name, data) for m, data in members)["anchor.xml"]
    root = etree.fromstring(anchor)
    derived = [m for m in root.iter("metric") if m.get("type") in DERIVED]
    if not derived:
        return path
    for m in derived:
        parent = m.getparent()
        at = parent.index(m)
        for k, child in enumerate(m.findall("metric")):  # a stored child hangs on the derived metric's parent
            parent.insert(at + 1 + k, child)
        parent.remove(m)
    out = path.with_name(path.stem + ".stored.cubex")
    with tarfile.open(out, "w", format=tarfile.USTAR_FORMAT) as tar:
        for m, data in members:
            if m.name == "anchor.xml":
                data = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
            info = tarfile.TarInfo(m.name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def stand_ins(path: str | Path) -> set[str]:
    """The metrics psuite wrote only for CubeLib's tools (a profile's
    "visits" for cube_stat, marked psuite::stand_in), which psuite's own
    reading leaves out."""
    from lxml import etree

    with tarfile.open(path) as tar:
        root = etree.fromstring(tar.extractfile("anchor.xml").read())
    return {m.findtext("uniq_name") for m in root.iter("metric")
            if any(a.get("key") == "psuite::stand_in" for a in m.findall("attr"))}
