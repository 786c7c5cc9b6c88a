"""psuite's one-way layers (.importlinter) hold, every module has a layer,
and the check fails on a backwards import: a copy of psuite's sources with
one added is linted in place of the real ones."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / ".importlinter"
# lint-imports, through the interpreter running the tests (the venv's scripts may not be on PATH)
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
        "sys.exit(lint_imports_command())", "--no-cache", str(CONFIG)]


def _lint(sources: Path = ROOT) -> subprocess.CompletedProcess:
    """lint-imports on the psuite package in sources: run there, so that it
    is the one imported (python -c puts the working directory first on the
    path, ahead of an installed psuite)."""
    return subprocess.run(LINT, cwd=sources, capture_output=True, text=True, timeout=300)


def test_the_layer_contracts_hold():
    run = _lint()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def _layered() -> list[str]:
    """Every module or package named in the layers contract."""
    config = configparser.ConfigParser()
    config.read(CONFIG)
    out = []
    for line in config["importlinter:contract:layers"]["layers"].split("\n"):
        out += [m.strip() for m in line.replace("|", ":").split(":") if m.strip()]
    return out


def test_every_module_has_a_layer():
    """A new module is put in a layer, or the contract would not see its imports."""
    layered = _layered()
    # the package root holds everything below it, so it cannot be a layer of its own: psuite's
    # __init__ is the Python API (psuite.read)
    unlayerable = {"psuite"}
    graph = grimp.build_graph("psuite", cache_dir=None)
    missing = sorted(m for m in graph.modules - unlayerable
                     if not any(m == name or m.startswith(name + ".") for name in layered))
    assert not missing, f"modules in no layer of .importlinter: {missing}"


def test_the_package_root_only_forwards_to_the_api():
    """psuite/__init__ is in no layer, so it holds no code of its own: psuite.read and
    read_experiment forward to psuite.api, which the layers contract checks."""
    graph = grimp.build_graph("psuite", cache_dir=None)
    assert graph.find_modules_directly_imported_by("psuite") == {"psuite.api"}


def _copy_sources(dest: Path) -> Path:
    shutil.copytree(ROOT / "psuite", dest / "psuite", ignore=lambda d, names: [
        n for n in names if not (n.endswith(".py") or os.path.isdir(os.path.join(d, n)))])
    return dest


@pytest.mark.parametrize("module, line, broken", [
    # the analysis reaching into a command line, as experiments.load once did
    ("analysis/experiments.py", "from psuite.psprocess.cli import main", "One-way layers"),
    # a format importing the analysis above it, as the CUBE reader once did
    ("formats/readers/cube.py", "from psuite.analysis import metrics", "One-way layers"),
    ("formats/values.py", "from psuite.analysis import combine", "One-way layers"),
    # the model importing a format, and a command line
    ("model/experiment.py", "from psuite.formats.readers import cube", "One-way layers"),
    ("model/report.py", "from psuite.psbase import cli", "One-way layers"),
    # psbase through psprocess's command line rather than the analysis
    ("psbase/native.py", "from psuite.psprocess.subcommands import NAMES", "psbase uses the analysis"),
    # the Python API reaching into a command line
    ("api.py", "from psuite.psprocess.cli import main", "One-way layers"),
    # one tool's command line importing another's
    ("psinv/cli.py", "from psuite.psprocess import cli", "One-way layers"),
    ("psbase/cli.py", "from psuite.psinv import cli", "One-way layers"),
    # a cycle between two packages (hwpc, which psinv uses, importing psinv)
    ("hwpc/events.py", "from psuite.psinv import inventory", "No cycles between psuite's packages"),
])
def test_a_backwards_import_breaks_a_contract(tmp_path, module, line, broken):
    copy = _copy_sources(tmp_path)
    path = copy / "psuite" / module
    # inside a function, as most of psuite's imports of heavier modules are: the check sees those too
    path.write_text(path.read_text() + f"\n\ndef _backwards():\n    {line}  # noqa: F401\n")
    run = _lint(copy)
    assert run.returncode != 0, run.stdout
    broken_section = run.stdout[run.stdout.index("Broken contracts"):]
    assert broken in broken_section, run.stdout
    assert "psuite." + module.removesuffix(".py").replace("/", ".") in broken_section, run.stdout
