"""Real cubes (tests/psprocess/data/scorep: Score-P profiles of an MPI and
an OpenMP program, CubeLib's cube_diff, cube_merge, cube_mean and cube_cut
of them) read through the real command: `psprocess dump` gives, per
metric, call path and location, the values CubeLib's cube_dump printed for
the same file, at full precision (values/CUBE.tsv.gz, stored there by
make.sh from libcube4)."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "scorep"
CUBES = sorted(p.stem for p in DATA.glob("*.cubex"))
def psprocess_csv(*args: str) -> tuple[list[dict[tuple[int, int], float]], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "psuite.psprocess", "dump", "-f", "csv", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    blocks = [
        {(int(c), int(t)): float(v) for c, t, v in (line.split(",") for line in block.splitlines())}
        for block in proc.stdout.strip().split("\n\n")
    ]
    return blocks, proc.stderr


def test_every_reference_cube_is_there():
    assert {"mpi1", "mpi2", "omp", "diff", "merge", "mean", "cut"} <= set(CUBES)
    assert all((DATA / "values" / f"{c}.tsv.gz").exists() for c in CUBES)


def cubelib_values(cube: str) -> dict[tuple[str, str, int, int], float]:
    """values/CUBE.tsv.gz, CubeLib's own values at full precision, as stored
    along the metric tree (metric_tree incl): (call_tree, metric, cnode id,
    location) -> value; rows of 0 are left out there."""
    out = {}
    lines = gzip.open(DATA / "values" / f"{cube}.tsv.gz", "rt").read().splitlines()
    assert lines[0].split("\t") == ["metric_tree", "call_tree", "metric", "cnode", "location", "value"]
    for line in lines[1:]:
        mtree, ctree, metric, cnode, loc, value = line.split("\t")
        if mtree == "incl" and loc != "all":
            out[(ctree, metric, int(cnode), int(loc))] = float(value)
    return out


def cnode_ids(path: Path) -> list[int]:
    """The anchor's cnode ids in document order (psuite's call-path order)."""
    from tests.psprocess.cubelib_reference import anchor

    return anchor(path).cnodes


@pytest.mark.parametrize("cube", CUBES)
def test_dump_equals_cubelib_full_precision(cube):
    """Every stored metric's value per call path and location, along the
    call tree exclusive and inclusive, equal to CubeLib's (relative 1e-9)."""
    from psuite.formats.readers import cube as reader

    path = DATA / f"{cube}.cubex"
    from tests.psprocess.cubelib_reference import anchor

    # GHOST metrics (Score-P's bytes_sent, read by the derived bytes_* ones) CubeLib's dump leaves out: no reference
    ghosts = anchor(path).ghosts
    stored = [m.name for m in reader.read(str(path)).metrics if not m.derived and m.name not in ghosts]
    ids = cnode_ids(path)
    want = cubelib_values(cube)
    nloc = 1 + max(loc for *_, loc in want) if want else 0
    for calltree in ("excl", "incl"):
        got, _ = psprocess_csv("-m", ",".join(stored), "-x", calltree, str(path))
        assert len(got) == len(stored)
        for name, block in zip(stored, got, strict=True):
            assert len(block) == len(ids) * max(nloc, 1) or not want, (cube, name)
            for (c, loc), v in block.items():
                expected = want.get((calltree, name, ids[c], loc), 0.0)
                assert v == pytest.approx(expected, rel=1e-9, abs=1e-15), (
                    cube, calltree, name, ids[c], loc
                )


def test_metric_without_data_file_reads_as_zeros():
    """Score-P writes no data for an all-zero metric (bytes_put here)."""
    import tarfile

    with tarfile.open(DATA / "mpi1.cubex") as tar:
        files = set(tar.getnames())
    names = (DATA / "mpi1.metrics.txt").read_text().split()
    missing = [n for i, n in enumerate(names) if f"{i}.data" not in files]
    assert "bytes_put" in missing
    got, _ = psprocess_csv("-m", "bytes_put", str(DATA / "mpi1.cubex"))
    assert got[0] and set(got[0].values()) == {0.0}
