"""How the b_eff_io example files here were made (run once; the outputs are
committed).  bio_T10_N4_listbased_ufs_grisu_run1.sum is the paper's Fig. 4
as the text file allows (see README.txt); the other files are variants of it
with other parameters in their names, their bandwidths scaled so that every
file holds different numbers."""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = HERE / "bio_T10_N4_listbased_ufs_grisu_run1.sum"

# (file name, T, N, technique as b_eff_io's -i names it, file system, bandwidth scale for write/rewrite, for read)
VARIANTS = [
    ("bio_T10_N4_listbased_ufs_grisu_run2.sum", 10, 4, "list-based", "ufs", 1.03, 0.97),
    ("bio_T10_N4_listless_ufs_grisu_run1.sum", 10, 4, "list-less", "ufs", 1.01, 0.41),
    ("bio_T20_N2_listless_nfs_grisu_run1.sum", 20, 2, "list-less", "nfs", 0.52, 0.36),
]


def _scale(match: re.Match[str], factor: float) -> str:
    text = match.group(0)
    return f"{float(text) * factor:.{len(text.split('.')[1])}f}".rjust(len(text))


def variant(text: str, t: int, n: int, info: str, fs: str, f_write: float, f_read: float) -> str:
    out = []
    for line in text.splitlines(keepends=True):
        factor = f_read if re.search(r"\bread\b", line) else f_write
        if re.match(r"\s*\d+ PEs ", line) or "bandwidth for" in line or "b_eff_io" in line or "pat2" in line:
            line = re.sub(r"\d+\.\d{3}(?= |\n| MB/s|$)", lambda m, f=factor: _scale(m, f), line)
        line = re.sub(r"^(\s*)4 PEs", lambda m: f"{m.group(1)}{n} PEs", line)
        line = line.replace("-N 4 T=10", f"-N {n} T={t}").replace("list-based", info)
        line = line.replace("T10_N4_listbased_ufs", f"T{t}_N{n}_{info.replace('-', '')}_{fs}")
        line = line.replace("on 4 processes", f"on {n} processes").replace(
            "accumulated on   4", f"accumulated on   {n}"
        )
        out.append(line)
    return "".join(out)


if __name__ == "__main__":
    base = BASE.read_text()
    for name, t, n, info, fs, fw, fr in VARIANTS:
        text = variant(base, t, n, info, fs, fw, fr)
        (HERE / name).write_text(text.replace(f"PREFIX={BASE.stem}", f"PREFIX={Path(name).stem}"))
