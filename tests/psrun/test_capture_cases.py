"""Capture cases of issue 13 through the real psrun command: reports that
must be written once and whole however the program ends."""

from __future__ import annotations

import subprocess

from tests.conftest import psrun_command, validate


def test_concurrent_exits_write_one_whole_report(targets, workdir):
    """Two threads (then three) calling exit() at once, released by a
    barrier: 200 runs, one valid report each, no temporary file left."""
    runs = 200
    script = (
        'i=0; while [ "$i" -lt "$N" ]; do d="run$i"; mkdir "$d"; '
        'PSUITE_OUTPUT_DIR="$d" "$PSRUN" -q "$EXE" $((2 + i % 2)) || echo "status $? in $d"; '
        "i=$((i + 1)); done"
    )
    p = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "N": str(runs), "PSRUN": psrun_command(),
                            "EXE": targets["concurrent_exit"]})
    assert p.returncode == 0 and not p.stdout, (p.stdout, p.stderr)
    lost, stray, extra = [], [], []
    for i in range(runs):
        files = sorted(f.name for f in (workdir / f"run{i}").iterdir())
        xml = [f for f in files if f.endswith(".xml")]
        stray += [f for f in files if not f.endswith(".xml")]
        if not xml:
            lost.append(i)
        elif len(xml) > 1:
            extra.append(i)
        else:
            validate(workdir / f"run{i}" / xml[0], "hwpcreport-0.3.dtd")
    assert not lost and not stray and not extra, (len(lost), stray[:5], extra[:5])

