"""CubeLib's own values of the reference cubes (data/scorep/values/NAME.tsv.gz, printed with %.17g by
data/scorep/src/cube_values.cpp through libcube4's get_sev), and the ids they use, read from each cube's
anchor.xml here (not through psuite's reader), so that a reader mistake cannot hide in the mapping."""

from __future__ import annotations

import gzip
import math
import re
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).parent / "data" / "scorep"
# every cube psuite is meant to read: the Score-P profiles and CubeLib's outputs, and the cut of CubeLib's example
CUBES = sorted(p.stem for p in DATA.glob("*.cubex")) + ["summary/summary-cut"]
VIEWS = [(metric_tree, call_tree) for metric_tree in ("incl", "excl") for call_tree in ("incl", "excl")]
REL = 1e-9  # values/ holds CubeLib's doubles in full (%.17g): only the order of additions may differ

Key = tuple[str, str, str, int, str]  # metric_tree, call_tree, metric, CubeLib cnode id, location id or "all"


def cubex(name: str) -> Path:
    return DATA / f"{name}.cubex"


def cubelib_values(name: str) -> dict[Key, float]:
    """values/NAME.tsv.gz keyed by (metric_tree, call_tree, metric, cnode id, location id or 'all'); rows of 0
    are left out there, so a missing key means 0."""
    with gzip.open(DATA / "values" / f"{Path(name).name}.tsv.gz", "rt") as f:
        lines = f.read().splitlines()
    assert lines[0].split("\t") == ["metric_tree", "call_tree", "metric", "cnode", "location", "value"]
    out: dict[Key, float] = {}
    for line in lines[1:]:
        x, z, metric, cnode, loc, value = line.split("\t")
        out[(x, z, metric, int(cnode), loc)] = float(value)
    return out


@dataclass
class Anchor:
    metrics: list[str]  # unique names, in the metric tree's depth-first order (cube_info -l's)
    derived: set[str]  # the metrics CubeLib computes from a CubePL expression (PRE/POSTDERIVED)
    integers: set[str]  # the metrics of an integer type (INTEGER, UINT64, ...)
    cnodes: list[int]  # CubeLib's cnode ids in the call tree's depth-first order (psuite's call path index)
    paths: list[tuple]  # per cnode: its regions' names from the root, and its occurrence among equal paths
    locations: list[int]  # CubeLib's location ids in the system tree's order (psuite's thread index)
    location_keys: list[tuple]  # per location: (process name, process rank, thread rank)
    ghosts: set[str] = field(default_factory=set)  # viztype GHOST: values CubeLib's tools do not show


def anchor(path: Path) -> Anchor:
    with tarfile.open(path) as tar:
        member = tar.extractfile("anchor.xml")
        assert member is not None
        xml = member.read()
    if not xml.lstrip().startswith(b"<"):
        xml = gzip.decompress(xml)
    # CubeLib writes <cubeplaggr cubeplaggrtype=plus> and <cubepl rowwise=false> unquoted, which no XML parser takes
    xml = re.sub(rb"<(cubeplaggr|cubepl)\s+(cubeplaggrtype|rowwise)\s*=\s*([A-Za-z]+)\s*>", rb'<\1 \2="\3">', xml)
    root = ET.fromstring(xml)
    metrics = [m.findtext("uniq_name") for m in root.find("metrics").iter("metric")]
    derived = {m.findtext("uniq_name") for m in root.find("metrics").iter("metric")
               if "DERIVED" in (m.get("type") or "")}
    integers = {m.findtext("uniq_name") for m in root.find("metrics").iter("metric")
                if "INT" in (m.findtext("dtype") or "").upper()}
    ghosts = {m.findtext("uniq_name") for m in root.find("metrics").iter("metric") if m.get("viztype") == "GHOST"}
    regions = {r.get("id"): r.findtext("name") for r in root.iter("region")}
    cnodes, paths = [], []
    seen: dict[tuple, int] = {}

    def walk(node: ET.Element, prefix: tuple) -> None:
        p = (*prefix, regions[node.get("calleeId")])
        seen[p] = seen.get(p, 0) + 1
        cnodes.append(int(node.get("id")))
        paths.append((p, seen[p]))
        for child in node.findall("cnode"):
            walk(child, p)

    for top in root.find("program").findall("cnode"):
        walk(top, ())
    locations, keys = [], []
    for group in root.iter("locationgroup"):
        for loc in group.findall("location"):
            locations.append(int(loc.get("Id")))
            keys.append((group.findtext("name").strip(), int(group.findtext("rank")), int(loc.findtext("rank"))))
    return Anchor(metrics, derived, integers, cnodes, paths, locations, keys, ghosts)


def psprocess(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "psuite.psprocess", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


LEFT_OUT = "psprocess: warning: derived metrics psuite cannot evaluate are left out: "


def left_out(path: Path) -> list[str]:
    """The derived metrics psuite says (on stderr) it leaves out of this cube."""
    proc = psprocess("dump", str(path), "-f", "csv", "-m", "all", "-c", "0", "-t", "aggr")
    assert proc.returncode == 0, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith(LEFT_OUT)]
    return lines[0][len(LEFT_OUT):].split(", ") if lines else []


def dump(path: Path, metrics: list[str], metric_tree: str, call_tree: str, aggr: bool) -> list[dict]:
    """psprocess dump -f csv of every call path: per metric {(call path index, thread index or 'aggr'): value}."""
    proc = psprocess("dump", str(path), "-f", "csv", "-m", ",".join(metrics), "-c", "all",
                     "--metric-tree", metric_tree, "-x", call_tree, *(["-t", "aggr"] if aggr else []))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    blocks = []
    for block in proc.stdout.strip().split("\n\n"):
        rows = [line.split(",") for line in block.splitlines() if line.strip()]
        blocks.append({(int(c), t if t == "aggr" else int(t)): float(v) for c, t, v in rows})
    assert len(blocks) == len(metrics), (len(blocks), len(metrics))
    return blocks


def close(x: float, y: float, floor: float = 0.0) -> bool:
    return x == y or math.isclose(x, y, rel_tol=REL, abs_tol=floor)
