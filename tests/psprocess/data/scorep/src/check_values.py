"""Checks values/*.tsv.gz (cube_values, through libcube4's get_sev) against what cube_dump prints, run here: per
location and with -t aggr (the `all` rows), all four views, to cube_dump's six digits. Run by make.sh in the data
folder with CubeLib's tools on PATH; exits 1 on a difference."""

from __future__ import annotations

import csv
import gzip
import math
import subprocess
import sys
from pathlib import Path

VIEWS = [(x, z) for x in ("incl", "excl") for z in ("incl", "excl")]


def values(cube: str) -> dict[tuple[str, str, str, str, str], float]:
    """values/CUBE.tsv.gz keyed by (metric_tree, call_tree, metric, cnode, location); a missing row is 0."""
    with gzip.open(f"values/{cube}.tsv.gz", "rt", newline="") as f:
        return {(r["metric_tree"], r["call_tree"], r["metric"], r["cnode"], r["location"]): float(r["value"])
                for r in csv.DictReader(f, delimiter="\t")}


def rows(text: str, metrics: list[str]) -> list[tuple[str, list[str]]]:
    """cube_dump's csv, metric after metric: the rows split evenly among the metrics."""
    lines = [line.split(",") for line in text.splitlines() if line.strip()]
    k = len(lines) // len(metrics)
    return [(m, row) for i, m in enumerate(metrics) for row in lines[i * k:(i + 1) * k]]


def main() -> int:
    compared = differ = 0
    cubes = sorted(Path(".").glob("*.cubex")) + sorted(Path("summary").glob("*.cubex"))
    for path in cubes:
        name = path.stem
        want = values(name)
        metrics = subprocess.run(["cube_info", "-l", str(path)], capture_output=True, text=True,
                                 check=True).stdout.split()
        for x, z in VIEWS:
            dumps = [subprocess.run(["cube_dump", "-m", "all", "-x", x, "-z", z, "-c", "all", *aggr, "-s", "csv",
                                     str(path)], capture_output=True, text=True, check=True).stdout
                     for aggr in ([], ["-t", "aggr"])]
            for text in dumps:
                for metric, row in rows(text, metrics):
                    cnode, location, value = row if len(row) == 3 else (row[0], "all", row[1])
                    got = want.get((x, z, metric, cnode, location), 0.0)
                    compared += 1
                    if not math.isclose(got, float(value), rel_tol=1e-5, abs_tol=1e-12):
                        differ += 1
                        print(f"{name} {x}/{z} {metric} cnode {cnode} location {location}: cube_dump {value},"
                              f" values {got!r}", file=sys.stderr)
    print(f"check_values: {len(cubes)} cubes, {compared} values compared with cube_dump, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
