"""CUBE's <attr key value> on metrics, regions, call paths and the system
tree: read, written back, and kept through the algebra as CubeLib 4.8.2
keeps them (checked with its cube_diff, cube_merge and cube_dump -w):
a metric's are the union of the inputs', a key they disagree on taking
the last input's value; a call path's, region's and location's those of
the input that brought it; -c and -C remake machines and nodes without
theirs.  Anchors are read here with ElementTree, not psuite's reader."""

from __future__ import annotations

import io
import re
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from .cubelib_reference import DATA, psprocess


def attributes(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    """Every element's own attributes, keyed by (kind, identity): metrics by
    unique name, regions by name, call paths by their regions' names from the
    root, system-tree nodes by class and name, processes and threads by rank."""
    with tarfile.open(path) as tar:
        root = ET.fromstring(tar.extractfile("anchor.xml").read())
    regions = {r.get("id"): r.findtext("name") for r in root.iter("region")}
    out: dict[tuple[str, str], dict[str, str]] = {}

    def own(el: ET.Element) -> dict[str, str]:
        return {a.get("key"): a.get("value") for a in el.findall("attr")}

    for m in root.iter("metric"):
        out[("metric", m.findtext("uniq_name"))] = own(m)
    for r in root.iter("region"):
        out[("region", r.findtext("name"))] = own(r)

    def walk(c: ET.Element, prefix: str) -> None:
        path = f"{prefix}/{regions[c.get('calleeId')]}"
        if own(c):
            out[("cnode", path)] = own(c)
        for k in c.findall("cnode"):
            walk(k, path)

    for c in root.find("program").findall("cnode"):
        walk(c, "")
    for n in root.iter("systemtreenode"):
        out[(n.findtext("class"), n.findtext("name"))] = own(n)
    for g in root.iter("locationgroup"):
        out[("process", g.findtext("rank"))] = own(g)
        for loc in g.findall("location"):
            out[("thread", f"{g.findtext('rank')}.{loc.findtext('rank')}")] = own(loc)
    return {k: v for k, v in out.items() if v}


def with_attributes(src: Path, dst: Path, metric: dict[str, str], cnode: dict[str, str],
                    location: dict[str, str]) -> None:
    """src with attributes added to metric time, call path 1 (main) and location 0."""
    def attrs(d: dict[str, str]) -> str:
        return "".join(f"<attr key={quoteattr(k)} value={quoteattr(v)}/>" for k, v in d.items())

    with tarfile.open(src) as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar.getmembers()]
    with tarfile.open(dst, "w", format=tarfile.USTAR_FORMAT) as out:
        for m, data in members:
            if m.name == "anchor.xml":
                x = data.decode()
                x = x.replace("<uniq_name>time</uniq_name>", "<uniq_name>time</uniq_name>" + attrs(metric), 1)
                x = re.sub(r'(<cnode id="1" [^>]*>)', lambda g: g.group(1) + attrs(cnode), x, count=1)
                x = re.sub(r'(<location Id="0">\s*<name>[^<]*</name>\s*<rank>[^<]*</rank>\s*<type>[^<]*</type>)',
                           lambda g: g.group(1) + attrs(location), x, count=1)
                data = x.encode()
                m.size = len(data)
            out.addfile(m, io.BytesIO(data))


def test_score_p_attributes_read_and_written_back(tmp_path):
    src = DATA / "mpi1.cubex"
    given = attributes(src)
    # what Score-P puts there: the machine's platform, the program region's arguments
    assert given[("machine", "machine Linux")] == {"platform": "Linux"}
    assert given[("region", "mpi_work")] == {"Score-P::ProgramArguments::numberOfArguments": "0"}
    p = psprocess("cut", "-r", "mpi_work", str(src), "-o", "copy.cubex", cwd=tmp_path)  # the root: a copy
    assert p.returncode == 0, p.stderr
    assert attributes(tmp_path / "copy.cubex") == given
    # read back by psuite and written again: still the same
    p = psprocess("cut", "-r", "mpi_work", "copy.cubex", "-o", "again.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert attributes(tmp_path / "again.cubex") == given


def test_attributes_of_every_kind_survive_a_copy(tmp_path):
    with_attributes(DATA / "mpi1.cubex", tmp_path / "a.cubex", {"k": "v & <w>", "e": ""}, {"ck": 'a "q"'},
                    {"lk": "a"})
    given = attributes(tmp_path / "a.cubex")
    assert given[("metric", "time")] == {"k": "v & <w>", "e": ""}
    p = psprocess("cut", "-r", "mpi_work", "a.cubex", "-o", "copy.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert attributes(tmp_path / "copy.cubex") == given


@pytest.mark.parametrize("operation", ["diff", "merge", "mean"])
def test_attributes_through_the_algebra(tmp_path, operation):
    with_attributes(DATA / "mpi1.cubex", tmp_path / "a.cubex", {"k": "from a", "only_a": "1"}, {"ck": "a"},
                    {"lk": "a"})
    with_attributes(DATA / "mpi2.cubex", tmp_path / "b.cubex", {"k": "from b", "only_b": "2"}, {"ck": "a"},
                    {"lk": "b"})
    p = psprocess(operation, "a.cubex", "b.cubex", "-o", "out.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    got = attributes(tmp_path / "out.cubex")
    # cube_diff and cube_merge: the metric's attributes are both inputs', b's value where they disagree
    assert got[("metric", "time")] == {"k": "from b", "only_a": "1", "only_b": "2"}
    # a call path, a region and a location keep those of the input that brought them (the first)
    assert got[("cnode", "/mpi_work/main")] == {"ck": "a"}
    assert got[("region", "mpi_work")] == {"Score-P::ProgramArguments::numberOfArguments": "0"}
    assert got[("thread", "0.0")] == {"lk": "a"}
    assert got[("machine", "machine Linux")] == {"platform": "Linux"}


@pytest.mark.parametrize("option", ["-c", "-C"])
def test_reduced_and_collapsed_system_trees_drop_machine_attributes(tmp_path, option):
    p = psprocess("diff", option, str(DATA / "mpi2.cubex"), str(DATA / "mpi1.cubex"), "-o", "out.cubex",
                  cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    got = attributes(tmp_path / "out.cubex")
    assert not any(kind in ("machine", "node") for kind, _ in got)  # as cube_diff -c / -C write them
    assert got[("region", "mpi_work")] == {"Score-P::ProgramArguments::numberOfArguments": "0"}


def test_cut_keeps_call_path_attributes(tmp_path):
    with_attributes(DATA / "mpi1.cubex", tmp_path / "a.cubex", {}, {"ck": "a"}, {})
    p = psprocess("cut", "-r", "main", "a.cubex", "-o", "cut.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert attributes(tmp_path / "cut.cubex")[("cnode", "/main")] == {"ck": "a"}


def test_attributes_libcube4_wrote_read_and_written_back(tmp_path):
    """model/tau.cubex (make-model.sh, written through libcube4's def_attr):
    attributes on the cube, a metric, a region, a call path, the machine
    and a location, as CubeLib writes them."""
    src = DATA / "model" / "tau.cubex"
    given = attributes(src)
    assert given[("metric", "msgsize")] == {"kind": "atomic event"}
    assert given[("region", "main")] == {"region note": "the program"}
    assert given[("cnode", "/main/send")] == {"call note": "first send"}
    assert given[("machine", "machine")] == {"platform": "test"}
    assert given[("thread", "1.0")] == {"thread note": "the other rank"}
    p = psprocess("cut", "-r", "main", str(src), "-o", "copy.cubex", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert attributes(tmp_path / "copy.cubex") == given  # the cube's own ones CubeLib's tools do not copy either
