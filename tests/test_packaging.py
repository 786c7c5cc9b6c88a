"""The README's quick start, run as a new user runs it, from a fresh copy of
the source tree: `pip install .` brings psrun, psprocess and psinv without
the optional packages, and the `archive` and `html` extras bring psbase and
the HTML report.  The commands are read from README.md, so the README cannot
drift from what works."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OPTIONAL = ("plotly", "matplotlib", "sqlalchemy", "psycopg")


def quick_start_blocks() -> list[str]:
    """The sh blocks of the README's Quick start, in order."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Quick start"):]
    section = section[:section.index("\n## ", 3)]
    return re.findall(r"```sh\n(.*?)\n```", section, re.S)


def fresh_copy(dest: Path) -> None:
    """What a clone holds: the files git tracks, as they are in the work tree."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def sh(script: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    # the system's python3 first, as in a new shell (not the test suite's venv)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(sys.prefix))
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(["bash", "-c", f"set -e\n{script}"], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=1500)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh copy of the tree after the README's step (a)."""
    tree = tmp_path_factory.mktemp("clone")
    fresh_copy(tree)
    step_a = quick_start_blocks()[0]
    assert "pip install . " in step_a, "the quick start's first step installs psuite without extras"
    done = sh(step_a, tree)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Event Counts" in done.stdout and "psrun: report: demo." in done.stderr
    return tree


def venv_run(tree: Path, script: str) -> subprocess.CompletedProcess:
    return sh(f". .venv/bin/activate\n{script}", tree)


def test_plain_install_has_no_optional_packages_and_measures(installed):
    listed = venv_run(installed, "pip list --format=freeze").stdout.lower()
    present = [name for name in OPTIONAL if re.search(rf"^{name}(\[.*\])?==", listed, re.M)]
    assert present == [], f"pip install . brought optional packages: {present}"
    assert not re.search(r"^(python-papi|psutil)==", listed, re.M)
    inv = venv_run(installed, "psinv")
    assert inv.returncode == 0 and "Processor" in inv.stdout
    json_report = venv_run(installed, "psprocess -f json demo.*.xml")
    assert json_report.returncode == 0 and '"psuite.count/1"' in json_report.stdout
    pages = sorted(p.name for p in (installed / ".venv" / "share" / "man" / "man1").iterdir())
    assert pages == ["psbase.1", "psinv.1", "psprocess.1", "psrun.1"]


@pytest.mark.parametrize(("command", "extra"), [
    ("psbase setup --psuite demo", "archive"),
    ("psprocess --archive demo demo.*.xml", "archive"),
])
def test_a_missing_extra_is_one_line_naming_it_before_any_work(installed, command, extra):
    before = set(os.listdir(installed))
    done = venv_run(installed, f"{command} || echo status=$?")
    assert done.stdout.strip().endswith("status=2") and "Event Counts" not in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"pip install 'psuite[{extra}]'" in lines[0], done.stderr
    assert set(os.listdir(installed)) == before  # no archive, no page, nothing half-written


def test_html_report_needs_no_extra(installed):
    """psprocess --html draws its charts itself: the plain install writes the page."""
    done = venv_run(installed, "psprocess --html demo.html demo.*.xml")
    assert done.returncode == 0, done.stderr
    page = (installed / "demo.html").read_text()
    assert 'id="psuite-view"' in page and len(page.encode()) < 1_500_000  # no chart library inside
    (installed / "demo.html").unlink()  # the quick start's archive step writes it again


def test_psrun_archive_without_the_extra_keeps_the_report_and_names_the_extra(installed, tmp_path):
    done = venv_run(installed, f"cd {tmp_path} && psrun -q --archive demo {installed}/demo || echo status=$?")
    assert done.stdout.strip().endswith("status=2")
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'psuite[archive]'" in lines[0] and "the reports stay" in lines[0]
    assert len(list(tmp_path.glob("demo.*.xml"))) == 1  # the measurement is kept


def test_installed_package_carries_license_types_and_native_parts(installed):
    (site,) = (installed / ".venv" / "lib").glob("python3*/site-packages")
    (dist_info,) = site.glob("psuite-*.dist-info")
    assert (dist_info / "licenses" / "LICENSE").read_text().startswith("BSD 3-Clause License")
    for part in ("py.typed", "_native/libpshwpc.so", "_native/libpsdwarf.so", "_native/psrun",
                 "_native/pshwpc.h", "_native/configs/default.xml", "formats/schemas/callpaths-1.0.xsd"):
        assert (site / "psuite" / part).is_file(), part
    metadata = (dist_info / "METADATA").read_text()
    assert "License-Expression: BSD-3-Clause" in metadata
    core = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert not any(name in r.lower() for r in core for name in OPTIONAL), core


def test_extras_then_the_quick_starts_archive_step(installed):
    step = quick_start_blocks()[1]
    assert "[archive,html]" in step
    done = venv_run(installed, step)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "demo" in done.stdout  # psbase ls demo lists the run
    assert (installed / "demo.html").stat().st_size > 0 and (installed / "psbase.db").exists()
    listed = venv_run(installed, "pip list --format=freeze").stdout.lower()
    assert all(re.search(rf"^{name}(\[.*\])?==", listed, re.M) for name in OPTIONAL)
