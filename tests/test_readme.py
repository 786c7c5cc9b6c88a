"""The README's quick start (a) and its psbase example run as written, in
that order, in an empty directory holding a copy of the checkout's
examples/ (all the quick start's commands read of a fresh clone), against
the installed package: this interpreter's bin directory (the venv's) comes
first on PATH.

The quick start's set-up commands - `python3 -m venv .venv`, `.
.venv/bin/activate` and `pip install ...` - are left out: the venv
running the tests is that install (a fresh venv and `pip install .` take
minutes; packaging is tested on its own).  Everything after them runs:
building the demo, psrun, psprocess, `psbase setup ... && psprocess
--archive ... && psbase ls ...`, then the psbase section's block marked
`<!-- test: readme -->`, whose `mpirun` runs a real two-rank Open MPI job
(tests/run.sh installs Open MPI; as root, Open MPI's own variables allow
it, as --allow-run-as-root would).

Each command must exit 0, and the final `psbase query myapp task_clock
--by ranks` must print the task clock of the one-rank run and of the
two-rank job, equal to what their reports say."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import ROOT
from tests.psbase.test_filing_ranks import MPI_ENV

MARK = "<!-- test: readme -->"
SETUP = (re.compile(r"python3? -m venv\b"), re.compile(r"\. \S*activate$"), re.compile(r"pip3? install\b"))


def sections(text: str) -> dict[str, str]:
    """The README's "## " sections by title."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2], strict=True)}


def sh_blocks(body: str, marked: bool = False) -> list[str]:
    """The ```sh blocks of a section (with marked, only those the line
    before marks as runnable)."""
    pattern = (re.escape(MARK) + r"\s*\n" if marked else "") + r"```sh\n(.*?)```"
    return re.findall(pattern, body, flags=re.S)


def commands(block: str) -> list[str]:
    """A block's commands: each line split at its &&, the venv and pip
    set-up left out (see the module's docstring)."""
    out = []
    for line in block.splitlines():
        for part in (p.strip() for p in line.split("&&")):
            if part and not part.startswith("#") and not any(s.match(part) for s in SETUP):
                out.append(part)
    return out


def readme_commands() -> tuple[list[str], list[str]]:
    """The quick start's (a) commands (its sh blocks that run psuite's
    commands: (b)'s test run is not among them) and the psbase section's
    marked block's."""
    parts = sections((ROOT / "README.md").read_text())
    quick = [c for b in sh_blocks(parts["Quick start"]) if re.search(r"\bps(run|process|base)\b", b)
             for c in commands(b)]
    [psbase_title] = [t for t in parts if t.startswith("psbase")]
    marked = sh_blocks(parts[psbase_title], marked=True)
    assert quick and marked, "the README's quick start or its marked psbase example is missing"
    return quick, [c for b in marked for c in commands(b)]


def test_commands_are_found_as_a_reader_sees_them():
    quick, examples = readme_commands()
    assert quick[0].startswith("cc ") and "psrun ./demo" in quick and quick[-1] == "psbase ls demo"
    assert not any(s.search(c) for c in quick for s in SETUP)
    assert examples[-1] == "psbase query myapp task_clock --by ranks"


def task_clock(doc: Path) -> float:
    [count] = [float(e.text) for e in etree.parse(str(doc)).iter("hwpcevent")
               if e.get("name") in ("perf::TASK-CLOCK", "task-clock")]
    return count


def test_quick_start_then_psbase_examples(tmp_path):
    assert shutil.which("mpirun"), "Open MPI is needed (tests/run.sh installs openmpi-bin)"
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PSBASE_", "PSUITE_", "PS_HWPC"))}
    env.update(MPI_ENV, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    quick, examples = readme_commands()
    outputs = []
    before: set[Path] = set()
    for command in quick + examples:
        if len(outputs) == len(quick):
            before = set(tmp_path.glob("demo.*.xml"))  # the quick start's reports
        p = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=600)
        assert p.returncode == 0, f"{command}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
        outputs.append(p.stdout)

    assert "Event Counts" in outputs[quick.index("psrun ./demo") + 1]  # psprocess's report of the run
    assert re.search(r"^1\s", outputs[len(quick) - 1], flags=re.M)  # psbase ls demo: the run filed

    # the query: task clock against ranks, of the run filed by psrun --archive and of the job
    header, *rows = outputs[-1].splitlines()
    assert header.split()[:3] == ["ranks", "[process]", "task_clock"]
    got = {int(row.split()[0]): float(row.split()[1]) for row in rows}
    [alone] = set(tmp_path.glob("demo.*.xml")) - before
    job = sorted((tmp_path / "job").glob("*.xml"))
    assert len(job) == 2
    assert set(got) == {1, 2}
    assert got[1] == pytest.approx(task_clock(alone), rel=1e-6)
    assert got[2] == pytest.approx(sum(map(task_clock, job)), rel=1e-6)
