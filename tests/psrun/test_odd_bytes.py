"""Reports are well-formed XML, valid against the DTD, whatever bytes the
program's name, its arguments or the host name hold: bytes that are not
XML text (invalid UTF-8, encoded surrogates, U+FFFE/U+FFFF, C0 controls
other than tab and newline) become U+FFFD, <annotation> says so, and a
command line cut to fit is never cut inside a character.  And what a report
says of the executable: its GNU build-id (read from the mapped notes, at a
cost that does not grow with the file), an md5sum only when asked."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time

import pytest
from lxml import etree

from tests.conftest import TARGETS, validate

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


# ------------------------------------------- what the report says of the executable
# (here rather than in a file of their own: the build-id is the other thing
# the library now writes of the executable)

def readelf_buildid(path) -> str:
    out = subprocess.run(["readelf", "-n", os.fsencode(path)], capture_output=True, text=True, check=True).stdout
    return out.split("Build ID:")[1].split()[0]


def build_id_of(root) -> str | None:
    parts = [p.strip() for p in (root.findtext("annotation") or "").split(";")]
    ids = [p.split(" ", 1)[1] for p in parts if p.startswith("build-id ")]
    assert len(ids) <= 1
    return ids[0] if ids else None


@pytest.mark.parametrize("mode", sorted(MODES))
def test_report_names_the_build_id_readelf_shows(targets, tmp_path, mode):
    p = psrun(*MODES[mode], "-d", str(tmp_path), targets["work"], "0", "20", "0")
    assert p.returncode == 0, p.stderr
    _, root = only_report(tmp_path)
    assert build_id_of(root) == readelf_buildid(targets["work"])
    assert root.find("command").get("md5sum") is None  # no whole-file read unless asked


def test_md5sum_only_when_asked(targets, tmp_path):
    p = psrun("-q", "-e", "task-clock", "-d", str(tmp_path), targets["work"], "0", "0", "0",
              env={**os.environ, "PSUITE_MD5": "1"})
    assert p.returncode == 0, p.stderr
    _, root = only_report(tmp_path)
    with open(targets["work"], "rb") as f:
        assert root.find("command").get("md5sum") == hashlib.md5(f.read()).hexdigest()
    assert build_id_of(root) == readelf_buildid(targets["work"])


def test_no_build_id_no_annotation_part(targets, tmp_path):
    exe = tmp_path / "noid"
    subprocess.run(["cc", "-O1", "-Wl,--build-id=none", "-o", str(exe), str(TARGETS / "work.c")], check=True)
    out = tmp_path / "out"
    out.mkdir()
    p = psrun("-q", "-e", "task-clock", "-d", str(out), str(exe), "0", "0", "0")
    assert p.returncode == 0, p.stderr
    _, root = only_report(out)
    assert build_id_of(root) is None


def test_cost_does_not_grow_with_the_executable(targets, tmp_path):
    """psrun on a 300 MB executable (objcopy adds a 300 MB section) against the
    same program at its own size: the CPU time of the fastest of alternated runs, like with like."""
    small = tmp_path / "small"
    big = tmp_path / "big"
    shutil.copy(targets["work"], small)
    blob = tmp_path / "blob"
    with open(blob, "wb") as f:
        f.truncate(300 << 20)
    subprocess.run(["objcopy", "--add-section", f".big={blob}", str(small), str(big)], check=True)
    blob.unlink()
    assert big.stat().st_size > 300 << 20
    assert readelf_buildid(big) == readelf_buildid(small)
    wall: dict[str, list[float]] = {"small": [], "big": []}
    cpu: dict[str, list[float]] = {"small": [], "big": []}
    from psuite.psrun import executable

    argv = [executable(), "-q", "-e", "task-clock", "-d"]  # the native command itself: no Python start-up
    for i in range(11):
        for name, exe in (("small", small), ("big", big)) if i % 2 else (("big", big), ("small", small)):
            out = tmp_path / f"out-{name}-{i}"
            out.mkdir()
            start = time.perf_counter()
            child = subprocess.Popen([*argv, str(out), str(exe), "0", "0", "0"], stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            wall[name].append(time.perf_counter() - start)
            child.returncode = os.waitstatus_to_exitcode(status)
            assert child.returncode == 0
            cpu[name].append(usage.ru_utime + usage.ru_stime)  # psrun and the program it waited for
    # the md5 of 300 MB took over a second of CPU; what is left is noise, which only ever adds:
    # the fastest of the alternated runs are compared.  CPU time is the measure that holds on a
    # loaded machine (waiting for a CPU costs none); the wall time, the user's measure, is
    # bench/startup.py's figure (its target: at most 5 ms more on a 300 MB executable).
    best = {k: (min(wall[k]), min(cpu[k])) for k in wall}
    print(f"psrun, best of 11 (wall s, CPU s): {best}")
    assert best["big"][1] - best["small"][1] < 0.005, best
