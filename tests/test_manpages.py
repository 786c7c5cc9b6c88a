"""The committed manual pages are the commands' --help as it is now: a
changed option regenerates them (python -m psuite.manpages docs/man)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from psuite import manpages

MAN_DIR = Path(__file__).resolve().parent.parent / "docs" / "man"


def test_committed_pages_are_the_current_help(tmp_path):
    manpages.write(str(tmp_path))
    stale = [tool for tool in manpages.TOOLS
             if (tmp_path / f"{tool}.1").read_text() != (MAN_DIR / f"{tool}.1").read_text()]
    assert stale == [], f"docs/man is stale for {stale}: run python -m psuite.manpages docs/man"


def test_pages_render_with_every_subcommand(tmp_path):
    for tool in manpages.TOOLS:
        page = MAN_DIR / f"{tool}.1"
        shown = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-P-cbou", str(page)], capture_output=True, text=True,
                               check=True)
        assert shown.stderr == "", shown.stderr  # -ww: every roff warning
        assert "SYNOPSIS" in shown.stdout and "DESCRIPTION" in shown.stdout
    psbase = (MAN_DIR / "psbase.1").read_text()
    for command in ("setup", "input", "query", "delete", "restore"):
        assert f".SS psbase {command}\n" in psbase
    psprocess = (MAN_DIR / "psprocess.1").read_text()
    for command in ("diff", "merge", "mean", "compare", "cut", "stat", "dump"):
        assert f".SS psprocess {command}\n" in psprocess
