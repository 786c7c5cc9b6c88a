"""Reports are well-formed XML, valid against the DTD, whatever bytes the
program's name, its arguments or the host name hold: bytes that are not
XML text (invalid UTF-8, encoded surrogates, U+FFFE/U+FFFF, C0 controls
other than tab and newline) become U+FFFD, <annotation> says so, and a
command line cut to fit is never cut inside a character."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from lxml import etree

from tests.conftest import validate

FFFD = "\ufffd"
CMDLINE_BYTES = 8191  # what the library keeps of /proc/self/cmdline

ODD_ARGS = {
    "invalid_utf8": b"\xff\xfe\xc3(",
    "u_fffe": "a\ufffeb\uffffc".encode(),
    "surrogate": b"x\xed\xa0\x80y",
    "controls": b"a\x01b\x1bc\rd\x7fe",
}


def psrun(*args: bytes | str, **kw) -> subprocess.CompletedProcess:
    argv = [sys.executable.encode(), b"-m", b"psuite.psrun", *(os.fsencode(a) for a in args)]
    return subprocess.run(argv, capture_output=True, timeout=120, **kw)


def only_report(directory) -> tuple[bytes, etree._Element]:
    names = [n for n in os.listdir(os.fsencode(directory)) if n.endswith(b".xml")]
    assert len(names) == 1, names
    data = open(os.path.join(os.fsencode(directory), names[0]), "rb").read()
    return names[0], validate(data, "hwpcreport-0.3.dtd")


MODES = {"count": ["-q", "-e", "task-clock"], "profile": ["-q", "--profile", "ITIMER_PROF", "--period", "1000"]}


@pytest.fixture
def odd_named(targets, tmp_path) -> bytes:
    """The work target under a name that is not UTF-8."""
    path = os.path.join(os.fsencode(tmp_path), b"work\xff\xfe\x01")
    shutil.copy(targets["work"], path)
    return path


@pytest.mark.parametrize("mode", sorted(MODES))
def test_program_named_with_invalid_utf8(odd_named, tmp_path, mode):
    out = tmp_path / "out"
    out.mkdir()
    p = psrun(*MODES[mode], "-d", str(out), odd_named, "0", "20", "0")
    assert p.returncode == 0, p.stderr
    name, root = only_report(out)
    assert name.startswith(b"work\xff\xfe\x01.")
    command = root.findtext("command")
    assert f"work{FFFD * 3}" in command and command.endswith(" 0 20 0")
    assert "replaced by U+FFFD" in root.findtext("annotation")
    if mode == "profile":
        assert any(FFFD in m.get("file") for m in root.iter("module"))


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("case", sorted(ODD_ARGS))
def test_arguments_with_bytes_that_are_not_xml_text(targets, tmp_path, mode, case):
    p = psrun(*MODES[mode], "-d", str(tmp_path), targets["work"], "0", "20", "0", ODD_ARGS[case])
    assert p.returncode == 0, p.stderr
    _, root = only_report(tmp_path)
    command = root.findtext("command")
    assert command.startswith(f"{targets['work']} 0 20 0 ")
    arg = command.split(" 0 20 0 ", 1)[1]
    # each byte of invalid UTF-8, each U+FFFE/U+FFFF, each control: one U+FFFD; the rest is kept
    expected = {"invalid_utf8": FFFD * 3 + "(", "u_fffe": f"a{FFFD}b{FFFD}c",
                "surrogate": f"x{FFFD * 3}y", "controls": f"a{FFFD}b{FFFD}c{FFFD}d\x7fe"}[case]
    assert arg == expected
    assert "replaced by U+FFFD" in root.findtext("annotation")


def test_clean_reports_say_nothing_about_replacing(targets, tmp_path):
    p = psrun("-q", "-e", "task-clock", "-d", str(tmp_path), targets["work"], "0", "0", "0", "café ü €")
    assert p.returncode == 0, p.stderr
    _, root = only_report(tmp_path)
    assert root.findtext("command").endswith(" café ü €")
    assert "U+FFFD" not in (root.findtext("annotation") or "")


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("width", [2, 3, 4])
def test_long_argument_cut_between_characters(targets, tmp_path, mode, width):
    """A 9000-byte argument of multi-byte characters, placed so that byte
    8,191 of the command line falls inside a character."""
    char = {2: "é", 3: "€", 4: "😀"}[width]
    head = f"{targets['work']}\0" + "0\0" * 3
    pad = "p"
    while (CMDLINE_BYTES - len((head + pad + "\0").encode())) % width == 0:
        pad += "p"
    big = char * (9000 // width)
    p = psrun(*MODES[mode], "-d", str(tmp_path), targets["work"], "0", "0", "0", pad, big)
    assert p.returncode == 0, p.stderr
    _, root = only_report(tmp_path)
    command = root.findtext("command")
    tail = command.split(f" {pad} ", 1)[1]
    assert tail and set(tail) == {char}, "cut inside a character, or replaced"
    assert len(command.encode()) < CMDLINE_BYTES and len(command.encode()) > CMDLINE_BYTES - width
    annotation = root.findtext("annotation")
    assert "command line cut to its first" in annotation and "U+FFFD" not in annotation


def test_host_name_that_is_not_utf8(targets, tmp_path):
    """In a UTS namespace of its own (root only), the host name holds invalid UTF-8 and a control byte."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare to change the host name")
    code = ("import socket, subprocess, sys\nsocket.sethostname(b'h\\xff\\x02st')\n"
            "sys.exit(subprocess.run(sys.argv[1:]).returncode)")
    argv = ["unshare", "--uts", sys.executable, "-c", code, sys.executable, "-m", "psuite.psrun", "-q", "-e",
            "task-clock", "-d", str(tmp_path), targets["work"], "0", "0", "0"]
    p = subprocess.run(argv, capture_output=True, timeout=120)
    if p.returncode != 0 and b"unshare" in p.stderr:
        pytest.skip(f"cannot unshare here: {p.stderr.decode(errors='replace').strip()}")
    assert p.returncode == 0, p.stderr
    _, root = only_report(tmp_path)
    assert root.findtext("hostname") == f"h{FFFD}{FFFD}st"
    assert "replaced by U+FFFD" in root.findtext("annotation")
