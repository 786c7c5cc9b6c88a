"""Real cubes (tests/psprocess/data/scorep: Score-P profiles of an MPI and
an OpenMP program, CubeLib's cube_diff, cube_merge, cube_mean and cube_cut
of them) read through the real command: `psprocess dump` gives, per
metric, call path and location, the values CubeLib's cube_dump printed for
the same file (stored there by make.sh; cube_dump prints 6 significant
digits, hence the tolerance)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "scorep"
CUBES = sorted(p.stem for p in DATA.glob("*.cubex"))
RELATIVE = 1e-5  # cube_dump's csv: 6 significant digits for most values


def cube_dump_csv(text: str) -> list[dict[tuple[int, int], float]]:
    """cube_dump -s csv: per metric (in cube_info -l order) a block of
    "cnode,location,value" rows; metrics are three blank lines apart,
    call paths two."""
    blocks = []
    for block in re.split(r"\n\n\n\n", "\n" + text):
        rows = [line.split(",") for line in block.splitlines() if "," in line]
        if rows:
            blocks.append({(int(c), int(t)): float(v) for c, t, v in rows})
    return blocks


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


@pytest.mark.parametrize("cube", CUBES)
@pytest.mark.parametrize("calltree", ["excl", "incl"])
def test_dump_equals_cube_dump(cube, calltree):
    """Stored values (the metric tree as stored, cube_dump -x incl) along
    the call tree exclusive and inclusive (cube_dump -z)."""
    names = (DATA / f"{cube}.metrics.txt").read_text().split()
    expected = cube_dump_csv((DATA / f"{cube}.incl-metric.{calltree}-call.csv").read_text())
    got, stderr = psprocess_csv("-m", ",".join(names), "-x", calltree, str(DATA / f"{cube}.cubex"))
    assert "warning" not in stderr, stderr  # Score-P's default metrics: all of plain types
    assert len(got) == len(expected) == len(names)
    for name, want, have in zip(names, expected, got, strict=True):
        assert set(have) == set(want), name
        for key, v in want.items():
            assert have[key] == pytest.approx(v, rel=RELATIVE, abs=1e-300), (cube, name, key)


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
