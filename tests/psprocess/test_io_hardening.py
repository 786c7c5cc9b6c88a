"""psprocess on bad input and failing output, through the real command:
every case is one line on stderr, exit status 2, no traceback, and no
file left behind or overwritten.

- outputs (-o, --gmon, --vprof, --cube + .stat, --write-config) on a full
  file system (a 64 KiB tmpfs: the tests run as root, as CI does), on
  /dev/full and on a closed standard output; names checked before
  anything is written; --force with every file-writing option;
- inputs that are not regular files (devices, pipes, sockets), larger than
  the 2 GiB cap, or that exhaust the memory limit;
- URLs: malformed answers from a raw server on 127.0.0.1, invalid
  addresses, redirects to other schemes, the overall deadline against a
  server that sends one byte at a time;
- libxml2 messages with newlines in them."""

from __future__ import annotations

import os
import resource
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from psuite import cli_common
from psuite.analysis import inputs
from psuite.errors import InputError, UsageError
from tests.conftest import one_line_error, run_tool
from tests.psprocess.test_counting_reports import COUNTS, report_xml

NO_SPACE = "no space left on the device"


# ---------------------------------------------------------------- fixtures


@pytest.fixture
def report(tmp_path) -> Path:
    path = tmp_path / "run.xml"
    path.write_text(report_xml(COUNTS))
    return path


@pytest.fixture
def big_report(tmp_path) -> Path:
    """A counting report whose text output (~170 KB) is larger than the tmpfs."""
    path = tmp_path / "big.xml"
    path.write_text(report_xml({f"EVENT_{i:04d}": i for i in range(2000)}))
    return path


@pytest.fixture(scope="module")
def profile_report(programs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("profile")
    p = run_tool("psrun", "-q", "-d", str(out), "--profile", "ITIMER_PROF", "--period", "1000",
                 programs["prof_split"], "40")
    assert p.returncode == 0, p.stderr
    [path] = out.glob("*.xml")
    return path


@pytest.fixture
def tiny_fs(tmp_path) -> Path:
    """A 64 KiB tmpfs, unmounted after the test."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; CI runs the tests as root")
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0777", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


def fill(directory: Path) -> Path:
    """Fill the file system of directory; returns the filler."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 4096)
        except OSError as exc:
            assert exc.errno == 28
    return filler


def leftovers(directory: Path) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".part"))


# ----------------------------------------------------------------- outputs


def test_full_file_system_while_writing_leaves_nothing(big_report, report, tiny_fs):
    out = tiny_fs / "report.txt"
    line = one_line_error(run_tool("psprocess", "-o", str(out), str(big_report)), "psprocess")
    assert line == f"psprocess: cannot write {out}: {NO_SPACE}; free some space or write to another file system"
    assert os.listdir(tiny_fs) == []  # no 0-byte file to block the rerun, no temporary file
    assert run_tool("psprocess", "-o", str(out), str(report)).returncode == 0


def test_full_file_system_keeps_the_file_force_would_replace(big_report, report, tiny_fs):
    out = tiny_fs / "report.txt"
    assert run_tool("psprocess", "-o", str(out), str(report)).returncode == 0
    before = out.read_bytes()
    line = one_line_error(run_tool("psprocess", "--force", "-o", str(out), str(big_report)), "psprocess")
    assert str(out) in line and NO_SPACE in line
    assert out.read_bytes() == before and sorted(os.listdir(tiny_fs)) == ["report.txt"]


def test_full_file_system_cube_writes_neither_file(big_report, tiny_fs):
    cube = tiny_fs / "run.cubex"
    line = one_line_error(run_tool("psprocess", "--cube", str(cube), str(big_report)), "psprocess")
    assert str(cube) in line and NO_SPACE in line
    assert os.listdir(tiny_fs) == []


@pytest.mark.parametrize("option", ["-o", "--gmon", "--vprof", "--cube", "--write-config"])
def test_every_output_on_a_full_file_system(option, report, profile_report, tiny_fs):
    filler = fill(tiny_fs)
    out = tiny_fs / ("out.cubex" if option == "--cube" else "out")
    source = profile_report if option in ("--gmon", "--vprof") else report
    args = ["--calibrate"] if option == "--write-config" else []
    line = one_line_error(run_tool("psprocess", *args, option, str(out), str(source)), "psprocess")
    assert line.startswith(f"psprocess: cannot write {out}: {NO_SPACE};"), line
    assert os.listdir(tiny_fs) == [filler.name]


@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_stdout_on_a_full_device(report, unbuffered):
    env = {**os.environ, "PYTHONUNBUFFERED": unbuffered}
    with open("/dev/full", "w") as full:
        p = run_tool("psprocess", str(report), capture_output=False, stdout=full, stderr=subprocess.PIPE, env=env)
    assert one_line_error(p, "psprocess") == (f"psprocess: cannot write standard output: {NO_SPACE}; free some "
                                              "space or write to another file system")
    with open("/dev/full", "w") as full:
        p = run_tool("psprocess", "--help", capture_output=False, stdout=full, stderr=subprocess.PIPE, env=env)
    assert NO_SPACE in one_line_error(p, "psprocess")


def test_stdout_closed(report):
    p = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "psuite.psprocess", str(report)],
                       capture_output=True, text=True, timeout=60)
    assert one_line_error(p, "psprocess") == ("psprocess: standard output is closed; redirect it to a file "
                                              "(> FILE) or use -o FILE")


def test_reader_going_away_is_not_an_error(big_report):
    """`psprocess big.xml | head -1`: exit 0, nothing on stderr."""
    p = subprocess.Popen([sys.executable, "-m", "psuite.psprocess", str(big_report)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    assert p.stdout.readline()
    p.stdout.close()
    assert p.wait(timeout=60) == 0
    assert p.stderr.read() == b""


def test_cube_checks_both_files_before_writing(report, workdir):
    stat_file = workdir / "run.stat"
    stat_file.write_text("precious")
    line = one_line_error(run_tool("psprocess", "--cube", "run.cubex", str(report)), "psprocess")
    assert line == "psprocess: run.stat exists; choose another name or pass --force to replace it"
    assert not (workdir / "run.cubex").exists() and stat_file.read_text() == "precious"
    assert leftovers(workdir) == []
    p = run_tool("psprocess", "--force", "--cube", "run.cubex", str(report))
    assert p.returncode == 0, p.stderr
    assert stat_file.read_text().startswith("PatternName") and (workdir / "run.cubex").stat().st_size > 0


def test_force_goes_with_every_file_writing_option(report, profile_report, workdir):
    gmon = workdir / "g.out"
    gmon.write_text("precious")
    line = one_line_error(run_tool("psprocess", "--gmon", str(gmon), str(profile_report)), "psprocess")
    assert line == f"psprocess: {gmon} exists; choose another name or pass --force to replace it"
    assert gmon.read_text() == "precious"
    p = run_tool("psprocess", "--force", "--gmon", str(gmon), str(profile_report))  # the advice works
    assert p.returncode == 0, p.stderr
    assert gmon.read_bytes().startswith(b"gmon")
    assert stat.S_IMODE(gmon.stat().st_mode) == 0o666 & ~_umask()
    for option in ("--vprof", "--write-config"):
        target = workdir / option.strip("-")
        target.write_text("precious")
        args = ["--calibrate", str(report)] if option == "--write-config" else [str(profile_report)]
        assert "pass --force" in one_line_error(run_tool("psprocess", option, str(target), *args), "psprocess")
        assert target.read_text() == "precious"
        assert run_tool("psprocess", "--force", option, str(target), *args).returncode == 0
        assert target.read_bytes() != b"precious"
    line = one_line_error(run_tool("psprocess", "--force", str(report)), "psprocess")
    assert line == ("psprocess: --force goes with -o/--output, --gmon, --vprof, --folded, --speedscope, --pprof, "
                    "--cube, --html or --write-config (it lets "
                    "an existing file be replaced) (see psprocess --help)")
    assert leftovers(workdir) == []


@pytest.mark.parametrize("option", ["--html", "--gmon", "--cube", "-o", "--folded"])
def test_an_empty_output_name_is_refused(report, profile_report, workdir, option):
    line = one_line_error(run_tool("psprocess", option, "", str(profile_report)), "psprocess")
    assert f"{option}" in line and "needs a file name" in line
    assert leftovers(workdir) == []


def test_help_describes_force():
    p = run_tool("psprocess", "--help")
    text = " ".join(p.stdout.split())
    assert ("--force let -o/--output, --gmon, --vprof, --folded, --speedscope, --pprof, --cube, --html or "
            "--write-config replace a file that exists") in text
    assert ("outputs: -o, --gmon, --vprof, --folded, --speedscope, --pprof, --cube (and its .stat), --html "
            "and --write-config write a temporary file") in text
    assert "regular files of at most 2 GiB" in text and "PSUITE_URL_TIMEOUT" in text


def test_outputs_that_are_refused_before_anything_is_read(report, workdir):
    (workdir / "a.txt").write_text("")
    cases = {
        ("-o", "x.out", "--gmon", "x.out"): "x.out would be written twice; give each output its own name",
        ("-o", "r.stat", "--cube", "r.cubex"): "r.stat would be written twice; give each output its own name",
        ("-o", "./r.stat", "--cube", "r.cubex"): "./r.stat would be written twice (also as r.stat); give each "
                                                 "output its own name",
        ("-o", str(report), "--force"): f"{report} is also an input; write the output to another name",
        ("-o", "/dev/null", "--force"): "/dev/null is a character device; --force replaces files only, give a file "
                                         "name",
        ("-o", str(workdir)): f"{workdir} is a directory; give a file name",
        ("-o", "no/such/dir/x.txt"): "cannot write no/such/dir/x.txt: its directory does not exist",
        ("-o", "a.txt/x.txt"): "cannot write a.txt/x.txt: a.txt is not a directory",
        ("--cube", "x.cube"): "--cube x.cube: the file name must end in .cubex",
    }
    before = report.read_bytes()
    for args, message in cases.items():
        assert one_line_error(run_tool("psprocess", *args, str(report)), "psprocess") == f"psprocess: {message}"
    assert report.read_bytes() == before
    assert sorted(os.listdir(workdir)) == ["a.txt", report.name]


def test_interrupted_write_leaves_nothing(tmp_path):
    """Ctrl-C (and SIGTERM, which ends the program through SystemExit) in
    the middle of writing: no file, no temporary file, the old file kept."""
    out = tmp_path / "out.txt"
    for exc in (KeyboardInterrupt(), SystemExit(128 + signal.SIGTERM)):
        with pytest.raises(type(exc)), cli_common.atomic_output(str(out)) as f:
            f.write("half")
            raise exc
        assert os.listdir(tmp_path) == []
    out.write_text("old")
    with pytest.raises(KeyboardInterrupt), cli_common.atomic_output(str(out), force=True) as f:
        f.write("new")
        raise KeyboardInterrupt
    assert out.read_text() == "old" and os.listdir(tmp_path) == ["out.txt"]
    with pytest.raises(UsageError, match="exists"), cli_common.atomic_output(str(out)) as f:
        f.write("new")
    assert out.read_text() == "old"


def test_sigterm_while_writing_removes_the_temporary_file(tmp_path):
    """A real SIGTERM to a process in the middle of an atomic output."""
    out = tmp_path / "out.txt"
    code = ("import sys, time; from psuite.cli_common import atomic_output\n"
            f"with atomic_output({str(out)!r}) as f:\n"
            "    f.write('half'); f.flush(); print('writing', flush=True); time.sleep(60)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "writing\n"
    assert len(leftovers(tmp_path)) == 1
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 128 + signal.SIGTERM
    assert os.listdir(tmp_path) == []


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


# ------------------------------------------------------------------ inputs


def _block_device(tmp_path: Path) -> str:
    for entry in os.scandir("/dev"):
        if stat.S_ISBLK(entry.stat(follow_symlinks=False).st_mode):
            return entry.path
    node = tmp_path / "blk"
    os.mknod(node, 0o600 | stat.S_IFBLK, os.makedev(7, 0))  # root: CI
    return str(node)


def test_special_files_are_refused_at_once(tmp_path, report):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    block = _block_device(tmp_path)
    try:
        cases = {"/dev/zero": "a character device", "/dev/null": "a character device", str(fifo): "a named pipe",
                 str(sock_path): "a socket", block: "a block device"}
        for path, kind in cases.items():
            t = time.monotonic()
            line = one_line_error(run_tool("psprocess", path, timeout=30), "psprocess")
            assert line == f"psprocess: {path} is not a regular file ({kind}); give a regular file"
            assert time.monotonic() - t < 20
        line = one_line_error(run_tool("psprocess", "-m", str(fifo), str(report), timeout=30), "psprocess")
        assert line == f"psprocess: metric file {fifo} is not a regular file (a named pipe); give a regular file"
        line = one_line_error(run_tool("psrun", "-c", str(fifo), "true", timeout=30), "psrun")
        assert line == f"psrun: configuration {fifo} is not a regular file (a named pipe); give a regular file"
    finally:
        sock.close()


def test_dev_zero_under_a_memory_limit():
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2_000_000 * 1024,) * 2)  # ulimit -v 2000000

    line = one_line_error(run_tool("psprocess", "/dev/zero", preexec_fn=limit), "psprocess")
    assert line == "psprocess: /dev/zero is not a regular file (a character device); give a regular file"


def test_files_above_the_cap_are_refused(tmp_path):
    huge = tmp_path / "huge.xml"
    with open(huge, "wb") as f:
        f.truncate(cli_common.MAX_INPUT_BYTES + 1)  # sparse: no disk used
    line = one_line_error(run_tool("psprocess", str(huge)), "psprocess")
    assert line == f"psprocess: {huge} is larger than 2 GiB, the limit for one input; give a smaller file"
    assert cli_common.MAX_INPUT_BYTES == 2 * 1024**3


def test_names_with_newlines_stay_on_one_line(tmp_path):
    line = one_line_error(run_tool("psprocess", str(tmp_path / "a\nb.xml")), "psprocess")
    assert line == f"psprocess: {tmp_path}/a\\nb.xml: no such file"


def test_libxml2_messages_are_folded_to_one_line(tmp_path, report):
    """libxml2 quotes the attribute, newlines and all."""
    bad = tmp_path / "nl.xml"
    bad.write_text('<psmetrics class="PAPI" xmlns:x="a&#10;b&#10;c"><x:m/></psmetrics>')
    line = one_line_error(run_tool("psprocess", str(bad)), "psprocess")
    assert "not well-formed XML" in line and "line 1, column" in line
    line = one_line_error(run_tool("psprocess", "-m", str(bad), str(report)), "psprocess")
    assert line == (f"psprocess: metric file {bad} is not well-formed XML (xmlns:x: 'a b c' is not a valid URI, "
                    "line 1, column 48)")
    line = one_line_error(run_tool("psrun", "-c", str(bad), "true"), "psrun")
    assert line.startswith(f"psrun: configuration {bad} is not well-formed XML (xmlns:x: 'a b c' is not a valid")


# -------------------------------------------------------------------- URLs


@pytest.fixture
def raw_server():
    """serve(payload, drip, at_once) -> base URL of a server on 127.0.0.1 that
    reads a request and answers with at_once, then payload as is (drip:
    seconds between its bytes)."""
    stop = threading.Event()
    sockets = []

    def serve(payload: bytes, drip: float = 0.0, at_once: bytes = b"") -> str:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        sockets.append(listener)

        def run() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                with conn:
                    try:
                        conn.settimeout(10)
                        request = b""
                        while b"\r\n\r\n" not in request:
                            chunk = conn.recv(65536)
                            if not chunk:
                                break
                            request += chunk
                        conn.sendall(at_once if drip else at_once + payload)
                        for i in range(len(payload) if drip else 0):
                            if stop.wait(drip):
                                break
                            conn.sendall(payload[i:i + 1])
                    except OSError:
                        pass

        threading.Thread(target=run, daemon=True).start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}"

    yield serve
    stop.set()
    for s in sockets:
        s.close()


def _redirect(location: bytes) -> bytes:
    return b"HTTP/1.1 302 Found\r\nLocation: " + location + b"\r\nContent-Length: 0\r\n\r\n"


NOT_HTTP = "the server's answer is not valid HTTP ({}); check that the address is an http(s) server"
MALFORMED = {
    "bad chunk size": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
                       NOT_HTTP.format("the body is incomplete or badly chunked")),
    "garbage status line": (b"HELLO THERE\r\n\r\n", NOT_HTTP.format("bad status line 'HELLO THERE\\r\\n'")),
    "101 headers": (b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(101)) + b"\r\n<a/>",
                    NOT_HTTP.format("got more than 100 headers")),
    "70,000-byte header": (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n<a/>",
                           NOT_HTTP.format("got more than 65536 bytes when reading header line")),
    "short body": (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n<a/>",
                   "the body ended after 4 bytes, 96 short of its Content-Length; fetch it again or check the "
                   "server"),
    "huge Content-Length": (b"HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n<a/>",
                            "larger than 256 MiB; download it and give the file"),
    "redirect to ftp": (_redirect(b"ftp://127.0.0.1/run.xml"),
                        "the server redirects to ftp://127.0.0.1/run.xml; only http(s) URLs are followed"),
    "redirect to file": (_redirect(b"file:///etc/passwd"),
                         "the server redirects to file:///etc/passwd; only http(s) URLs are followed"),
    "redirect to a broken URL": (_redirect(b"http://[::1"),
                                 "the server redirects to http://[::1, not a valid URL (Invalid IPv6 URL); check "
                                 "the address"),
    "redirect with a space": (_redirect(b"/a b"), "the server redirects to {base}/a b: not a valid URL (' ' in "
                                                  "it); percent-encode it, e.g. %20"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_answers_are_one_line(raw_server, case):
    payload, message = MALFORMED[case]
    base = raw_server(payload)
    url = f"{base}/run.xml"
    line = one_line_error(run_tool("psprocess", url, timeout=60), "psprocess")
    assert line == f"psprocess: {url}: {message.format(base=base)}"


@pytest.mark.parametrize("url, message", [
    ("http://[::1", "not a valid URL (Invalid IPv6 URL); check the address"),
    ("http://127.0.0.1:abc/x", "not a valid URL (Port could not be cast to integer value as 'abc'); check the "
                               "address"),
    ("http://127.0.0.1:99999/x", "not a valid URL (Port out of range 0-65535); check the address"),
    ("http://127.0.0.1:1/a b", "not a valid URL (' ' in it); percent-encode it, e.g. %20"),
    ("http://127.0.0.1:1/a\x01b", "not a valid URL ('\\x01' in it); percent-encode it, e.g. %01"),
    ("http:///run.xml", "not a valid URL (no host name); check the address"),
    ("http://a..b/run.xml", "not a valid URL (encoding with 'idna' codec failed (UnicodeError: label empty or too "
                            "long)); check the address"),
])
def test_invalid_urls_are_one_line(url, message):
    line = one_line_error(run_tool("psprocess", url), "psprocess")
    assert line == f"psprocess: {cli_common.one_line(url)}: {message}"


@pytest.mark.parametrize("slow", ["status line", "body"])
def test_deadline_for_the_whole_fetch(raw_server, slow):
    """One byte every 0.2 s: no single read waits long, but the fetch as a
    whole is cut off at PSUITE_URL_TIMEOUT."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
    body = b"<hwpcreport>" + b" " * 976 + b"</hwpcreport>"
    if slow == "status line":
        url = raw_server(head + body, drip=0.2) + "/run.xml"
    else:  # the headers at once, then the body byte by byte
        url = raw_server(body, drip=0.2, at_once=head) + "/run.xml"
    t = time.monotonic()
    p = run_tool("psprocess", url, env={**os.environ, "PSUITE_URL_TIMEOUT": "2"}, timeout=60)
    elapsed = time.monotonic() - t
    assert one_line_error(p, "psprocess") == (f"psprocess: {url}: cannot fetch (no complete answer within 2 s); "
                                              "check the server, or allow longer with PSUITE_URL_TIMEOUT=SECONDS")
    assert 2 <= elapsed < 10, elapsed


def test_deadline_setting_is_checked():
    p = run_tool("psprocess", "http://127.0.0.1:1/run.xml", env={**os.environ, "PSUITE_URL_TIMEOUT": "soon"})
    assert one_line_error(p, "psprocess") == ("psprocess: PSUITE_URL_TIMEOUT='soon' is not a number of seconds; "
                                              "set it to e.g. 60")
    assert inputs.URL_TIMEOUT_S == 60


def test_size_cap_while_streaming(raw_server, monkeypatch):
    """No Content-Length (chunked): the cap is counted as the body comes."""
    chunk = b"%x\r\n%s\r\n" % (3000, b" " * 3000)
    url = raw_server(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk * 3 + b"0\r\n\r\n")
    monkeypatch.setattr(inputs, "URL_MAX_BYTES", 4096)
    with pytest.raises(InputError, match="larger than 4 KiB; download it"):
        inputs.fetch(url + "/run.xml")
    monkeypatch.setattr(inputs, "URL_MAX_BYTES", 9000)
    assert len(inputs.fetch(url + "/run.xml")) == 9000


def test_out_of_memory_is_one_line():
    """A 200 MiB body (under the URL cap) with 200 MB of address space."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (200 << 20))
            try:
                for _ in range(200):
                    conn.sendall(b"<" * (1 << 20))
            except OSError:
                pass

    threading.Thread(target=serve, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/run.xml"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (200 << 20,) * 2)

    try:
        line = one_line_error(run_tool("psprocess", url, preexec_fn=limit), "psprocess")
    finally:
        listener.close()
    assert line == (f"psprocess: out of memory reading {url}; free memory or raise the memory limit "
                    "(ulimit -v)")
