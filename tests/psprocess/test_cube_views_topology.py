"""Cartesian topologies are shown: the report of a Score-P profile that
recorded an MPI_Cart_create (tests/psprocess/data/scorep/mpi1.cubex) names
each topology, its dimensions and where every location sits, as the
file's <cart> says; the same through a diff, which keeps them."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

from lxml import etree

DATA = Path(__file__).parent / "data" / "scorep"


def carts(path: Path) -> list[tuple[str, list[tuple[int, bool]], dict[int, tuple[int, ...]]]]:
    """The anchor's <cart>s, read without psuite: (name, [(size, periodic)], {location id: coordinates})."""
    with tarfile.open(path) as tar:
        root = etree.fromstring(tar.extractfile("anchor.xml").read(), etree.XMLParser(huge_tree=True))
    out = []
    for cart in root.iter("cart"):
        dims = [(int(d.get("size")), d.get("periodic") == "true") for d in cart.findall("dim")]
        coords = {int(c.get("locId")): tuple(int(x) for x in c.text.split()) for c in cart.findall("coord")
                  if c.get("locId") is not None}
        out.append((cart.get("name", ""), dims, coords))
    return out


def psprocess(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "psuite.psprocess", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def test_topologies_shown_as_the_file_holds_them(tmp_path):
    want = carts(DATA / "mpi1.cubex")
    assert want and any(len(c) == 2 for _, _, c in want)
    for args in ((str(DATA / "mpi1.cubex"),), ("diff", str(DATA / "mpi2.cubex"), str(DATA / "mpi1.cubex"))):
        proc = psprocess(*args, "-f", "json", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        got = json.loads(proc.stdout)["topologies"]
        assert [(t["name"], [(d["size"], d["periodic"]) for d in t["dimensions"]],
                 {int(k): tuple(v) for k, v in t["coordinates"].items()}) for t in got] == want
        text = psprocess(*args, cwd=tmp_path)
        assert text.returncode == 0, text.stderr
        for name, dims, coords in want:
            line = next(x for x in text.stdout.splitlines() if x.startswith(f"Topology {name}:"))
            assert f"{len(coords)} of 2 locations placed" in line
            assert line.count("(periodic)") == sum(p for _, p in dims)
        assert "(0, 0)" in text.stdout and "(1, 0)" in text.stdout
