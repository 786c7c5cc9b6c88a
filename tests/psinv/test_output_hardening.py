"""psinv's output through the real command when it cannot be written: a
full file system (a 64 KiB tmpfs; the tests run as root, as CI does),
/dev/full, a closed standard output, an existing file.  One line, exit
status 2, nothing left behind; a reader that goes away is not an error."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import one_line_error, run_tool

NO_SPACE = "no space left on the device; free some space or write to another file system"


@pytest.fixture
def full_fs(tmp_path):
    """A 64 KiB tmpfs with no space left in it but its filler's."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; CI runs the tests as root")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], check=True)
    try:
        with open(mnt / "filler", "wb", buffering=0) as f:
            with pytest.raises(OSError, match="No space"):
                while True:
                    f.write(b"x" * 4096)
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


@pytest.mark.parametrize("args", [[], ["--json"], ["-x"]])
def test_full_file_system(full_fs, args):
    out = full_fs / "inv.txt"
    line = one_line_error(run_tool("psinv", *args, "-o", str(out)), "psinv")
    assert line == f"psinv: cannot write {out}: {NO_SPACE}"
    assert os.listdir(full_fs) == ["filler"]  # neither a 0-byte inv.txt nor a temporary file


def test_full_file_system_keeps_the_file_force_would_replace(full_fs):
    out = full_fs / "inv.txt"
    (full_fs / "filler").unlink()
    assert run_tool("psinv", "-o", str(out)).returncode == 0
    before = out.read_bytes()
    with open(full_fs / "filler", "wb", buffering=0) as f, pytest.raises(OSError):
        while True:
            f.write(b"x" * 4096)
    line = one_line_error(run_tool("psinv", "--force", "-o", str(out)), "psinv")
    assert line == f"psinv: cannot write {out}: {NO_SPACE}"
    assert out.read_bytes() == before and sorted(os.listdir(full_fs)) == ["filler", "inv.txt"]


@pytest.mark.parametrize("args", [[], ["-e"], ["--help"]])
@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_stdout_on_a_full_device(args, unbuffered):
    with open("/dev/full", "w") as full:
        p = run_tool("psinv", *args, capture_output=False, stdout=full, stderr=subprocess.PIPE,
                     env={**os.environ, "PYTHONUNBUFFERED": unbuffered})
    assert one_line_error(p, "psinv") == f"psinv: cannot write standard output: {NO_SPACE}"


def test_stdout_closed():
    p = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "psuite.psinv"],
                       capture_output=True, text=True, timeout=60)
    assert one_line_error(p, "psinv") == ("psinv: standard output is closed; redirect it to a file (> FILE) or "
                                          "use -o FILE")


def test_reader_going_away_is_not_an_error():
    """`psinv -e | head -1`: exit 0, nothing on stderr."""
    p = subprocess.Popen([sys.executable, "-m", "psuite.psinv", "-e"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout.readline()
    p.stdout.close()
    assert p.wait(timeout=60) == 0
    assert p.stderr.read() == b""


def test_existing_output_checked_before_the_inventory(tmp_path):
    out = tmp_path / "inv.txt"
    out.write_text("precious")
    line = one_line_error(run_tool("psinv", "-e", "-o", str(out)), "psinv")
    assert line == f"psinv: {out} exists; choose another name or pass --force to replace it"
    assert out.read_text() == "precious"
    assert run_tool("psinv", "--json", "--force", "-o", str(out)).returncode == 0
    assert out.read_text().startswith("{") and os.listdir(tmp_path) == ["inv.txt"]
    line = one_line_error(run_tool("psinv", "--force", "-o", "/dev/null"), "psinv")
    assert line == "psinv: /dev/null is a character device; --force replaces files only, give a file name"


def test_help_describes_force():
    text = " ".join(run_tool("psinv", "--help").stdout.split())
    assert "--force let -o/--output replace a file that exists (without --force an existing file is never " \
           "touched; files are written whole or not at all)" in text
    line = one_line_error(run_tool("psinv", "--force"), "psinv")
    assert line == ("psinv: --force goes with -o/--output (it lets an existing file be replaced) "
                    "(see psinv --help)")
