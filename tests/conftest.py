"""Shared test fixtures: compiled target programs, running the real
commands, and validation against the original PerfSuite DTDs in
../shared/perfsuite-dtd."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from lxml import etree

ROOT = Path(__file__).resolve().parents[1]
DTD_DIR = ROOT.parent / "shared" / "perfsuite-dtd"
TARGETS = Path(__file__).resolve().parent / "targets"
DTD_PREFIX = "/usr/share/perfsuite/dtds/pshwpc/"

# A runner that starts pytest in the background (`cmd &` in a script, nohup)
# hands it SIGINT, SIGQUIT or SIGHUP ignored, and every program a test starts
# inherits that; the exit-path tests compare programs with default dispositions.
for _sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
    if signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, signal.default_int_handler if _sig == signal.SIGINT else signal.SIG_DFL)


def _papi_component_off() -> bool:
    """Is PAPI's perf_event component disabled here (papi_component_avail)?  libpfm4 turns it off when it
    knows no PMU of the CPU (a model newer than the distribution's libpfm4, in a VM without a PMU); PAPI then
    counts nothing, software events neither."""
    if not shutil.which("papi_component_avail"):
        return False  # tests/run.sh installs papi-tools; without it the PAPI tests fail and say why
    out = subprocess.run(["papi_component_avail"], capture_output=True, text=True).stdout.splitlines()
    at = next((i for i, line in enumerate(out) if line.split()[1:2] == ["perf_event"]), None)
    return at is not None and at + 1 < len(out) and "Disabled" in out[at + 1]


PAPI_OFF = _papi_component_off()


def pytest_collection_modifyitems(config, items):
    """Tests marked papi count through PAPI: where PAPI counts nothing they are expected to fail (they run,
    and pass unexpectedly if PAPI counts after all); tests/hwpc/test_papi_off.py checks that psuite says so."""
    if not PAPI_OFF:
        return
    reason = "PAPI's perf_event component is off on this machine (libpfm4 knows no PMU of its CPU)"
    for item in items:
        params = getattr(item, "callspec", None)
        by_param = params is not None and "PAPI" in params.params.values()  # a test run once per backend
        if by_param or item.get_closest_marker("papi"):
            item.add_marker(pytest.mark.xfail(reason=reason, strict=False))


@functools.lru_cache(maxsize=1)
def _dtd_copy() -> Path:
    """The DTDs of ../shared with their includes (absolute /usr/share paths)
    pointing at each other, in a private folder, so nested includes resolve."""
    assert DTD_DIR.exists(), f"{DTD_DIR} missing: the tests need ../shared beside the checkout"
    out = Path(tempfile.mkdtemp(prefix="psuite-dtd-"))
    for src in DTD_DIR.glob("*.dtd"):
        (out / src.name).write_text(src.read_text().replace(DTD_PREFIX, str(out) + "/"))
    return out


def dtd(name: str) -> etree.DTD:
    """A DTD from ../shared, its includes resolved to the same folder."""
    path = _dtd_copy() / name
    assert path.exists(), f"{DTD_DIR / name} missing: the tests need ../shared beside the checkout"
    return etree.DTD(str(path))


def validate(doc: str | Path | bytes | etree._Element, dtd_name: str) -> etree._Element:
    """Parse (if needed) and assert validity; returns the root element."""
    if isinstance(doc, etree._Element):
        root = doc
    else:
        data = Path(doc).read_bytes() if isinstance(doc, (str, Path)) else doc
        root = etree.fromstring(data)
    d = dtd(dtd_name)
    ok = d.validate(root)
    assert ok, f"not valid against {dtd_name}: {d.error_log.filter_from_errors()}"
    return root


@functools.lru_cache(maxsize=1)
def psrun_command() -> str:
    """The native psrun as installed: the command pip put beside this
    interpreter, else the one on PATH, else the package's own copy."""
    from psuite.psrun import executable

    beside = Path(sys.executable).parent / "psrun"
    if beside.exists():
        return str(beside)
    return shutil.which("psrun") or executable()


def run_tool(tool: str, *args: str, **kw) -> subprocess.CompletedProcess:
    """Run a psuite command as a user would: psrun is the native command
    (psrun_command), the others python -m psuite.TOOL."""
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    if tool == "psrun":
        return subprocess.run([psrun_command(), *args], **kw)
    return subprocess.run([sys.executable, "-m", f"psuite.{tool}", *args], **kw)


@pytest.fixture(scope="session")
def targets(tmp_path_factory) -> dict[str, str]:
    """tests/targets/*.c compiled; name -> executable path."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed (tests/run installs gcc)"
    out = tmp_path_factory.mktemp("targets")
    built = {}
    for src in sorted(TARGETS.glob("*.c")):
        exe = out / src.stem
        flags = ["-static"] if src.stem.startswith("static_") else []
        subprocess.run([cc, "-O1", "-g", *flags, "-o", str(exe), str(src), "-lm"], check=True)
        built[src.stem] = str(exe)
    return built


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def one_line_error(proc: subprocess.CompletedProcess, tool: str) -> str:
    """Assert the failure contract: exit 2, one stderr line, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{tool}: "), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


os.environ.setdefault("PSUITE_TEST", "1")
