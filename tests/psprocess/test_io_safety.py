"""What psprocess reads and writes is its user's choice, not a document's:
the HTML report embeds source files only from the program's directory and
the directories named with --source-dir (none for a document read from a
URL unless named), an input (a companion read beside a profile, a metric
file, the program's binary) is never an output even with --force, the same
document given as a file and a URL (or two URLs) is refused as a local copy
is, a URL's password never appears in a message or a report, and a
call-path document's depth is refused naming the real bound.

Everything goes through the psprocess command, on a real program built
here and profiled by psrun (page faults: the same samples on a loaded
machine), and a real http server on 127.0.0.1."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import subprocess
import threading
from pathlib import Path

import pytest

from psuite.analysis import metrics
from tests.conftest import one_line_error, run_tool

SOURCE = """\
#include <stdlib.h>

__attribute__((noinline)) static void touch(volatile char *p, long n)
{
    for (long i = 0; i < n; i += 4096)
        p[i] = 1; /* HOT */
}

int main(int argc, char **argv)
{
    long pages = argc > 1 ? atol(argv[1]) : 2000;
    char *p = malloc(pages * 4096);
    touch(p, pages * 4096);
    return p[4096] - 1;
}
"""
SECRET = "root:x:0:0"  # what /etc/passwd starts with


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The program built in its own directory ("app", "exe", "source"),
    profiled twice with call paths ("profile" with "companion", and
    "other"), a counting report ("counts"), and "processed": the profile
    as psprocess -x writes it (its <file name> elements name the source)."""
    top = tmp_path_factory.mktemp("safety")
    app = top / "app"
    app.mkdir()
    (app / "hot.c").write_text(SOURCE)
    exe = app / "hot"
    subprocess.run(["cc", "-O1", "-g", "-o", str(exe), "hot.c"], cwd=app, check=True)
    out = {"top": top, "app": app, "exe": exe, "source": app / "hot.c"}
    for name, pages in (("run", "2000"), ("other", "1000")):
        run_dir = top / name
        run_dir.mkdir()
        p = run_tool("psrun", "-q", "-d", str(run_dir), "--profile", "page-faults", "--period", "16", "--callpath",
                     str(exe), pages)
        assert p.returncode == 0, p.stderr
        [doc] = [f for f in run_dir.glob("*.xml") if not f.name.endswith(".callpaths.xml")]
        out["profile" if name == "run" else name] = doc
    out["companion"] = out["profile"].with_name(out["profile"].name[:-4] + ".callpaths.xml")
    assert out["companion"].is_file()
    counts = top / "counts"
    counts.mkdir()
    p = run_tool("psrun", "-q", "-d", str(counts), "-e", "page-faults", str(exe), "100")
    assert p.returncode == 0, p.stderr
    [out["counts"]] = counts.glob("*.xml")
    out["processed"] = top / "processed.xml"
    p = run_tool("psprocess", "-x", "-o", str(out["processed"]), str(out["profile"]))
    assert p.returncode == 0, p.stderr
    assert f'<file name="{out["source"]}">' in out["processed"].read_text()
    return out


@pytest.fixture
def serve():
    """serve(directory): an http server on 127.0.0.1 for it; its base URL."""
    servers = []

    def start(directory: Path) -> str:
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

        handler = functools.partial(Quiet, directory=str(directory))
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def page_view(page: Path) -> dict:
    m = re.search(r'<script type="application/json" id="psuite-view">(.*?)</script>', page.read_text(), re.S)
    assert m, "the page embeds no view"
    return json.loads(m.group(1).replace("<\\/", "</"))


def source_entry(page: Path, file: str) -> dict:
    [entry] = [s for s in page_view(page)["sources"] if s["file"] == file]
    return entry


def html(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    p = run_tool("psprocess", *args, cwd=cwd)
    assert p.returncode == 0, p.stderr
    return p


def naming(built, tmp_path: Path, file: str, name: str = "named.xml") -> Path:
    """The processed profile with its source file renamed to `file`, as a
    document from elsewhere may name it."""
    doc = tmp_path / name
    doc.write_text(built["processed"].read_text().replace(f'<file name="{built["source"]}">', f'<file name="{file}">'))
    return doc


# -- 1. the source files a page embeds ----------------------------------------------


def test_the_programs_own_source_is_embedded(built, tmp_path):
    for doc in (built["profile"], built["processed"]):  # raw (resolved here) and processed
        page = tmp_path / f"{doc.stem}.html"
        html("--html", str(page), str(doc))
        entry = source_entry(page, str(built["source"]))
        assert entry["path"] == str(built["source"]) and entry["note"] == ""
        assert entry["lines"] == SOURCE.split("\n")[:-1]
        hot_line = SOURCE.split("\n").index("        p[i] = 1; /* HOT */") + 1
        samples = {int(k): v for k, v in entry["samples"].items()}
        assert max(samples, key=samples.get) == hot_line


def test_a_local_document_naming_etc_passwd_does_not_get_it(built, tmp_path):
    doc = naming(built, tmp_path, "/etc/passwd")
    page = tmp_path / "page.html"
    html("--html", str(page), str(doc))
    assert SECRET not in page.read_text()
    entry = source_entry(page, "/etc/passwd")
    assert entry["lines"] == [] and entry["path"] is None
    assert entry["note"].startswith("not read: outside the source directories") and "--source-dir" in entry["note"]
    # the directory named by the user is read: the refusal above is the rule, not a missing file
    named = tmp_path / "named.html"
    html("--html", str(named), "--source-dir", "/etc", str(doc))
    assert source_entry(named, "/etc/passwd")["lines"][0].startswith(SECRET)
    # -f html (the page on standard output) follows the same rule
    p = html("-f", "html", str(doc))
    assert SECRET not in p.stdout and "<html" in p.stdout


def test_a_program_directory_counts_only_for_the_profiled_build(built, tmp_path):
    """A document naming a program here under another build-id does not make
    that program's directory a source tree (it would let a document from
    elsewhere publish any file beside any program it can guess)."""
    text = built["processed"].read_text()
    recorded = re.search(r"build-id ([0-9a-f]{40})", text).group(1)
    doc = tmp_path / "other-build.xml"
    doc.write_text(text.replace(recorded, "0" * 40))
    page = tmp_path / "page.html"
    html("--html", str(page), str(doc))
    entry = source_entry(page, str(built["source"]))
    assert entry["lines"] == [] and entry["note"].startswith("not read: outside the source directories")
    same = tmp_path / "same.html"  # the document as written: its program's directory is a source tree
    html("--html", str(same), str(built["processed"]))
    assert source_entry(same, str(built["source"]))["lines"] == SOURCE.split("\n")[:-1]


def test_a_document_read_from_a_url_embeds_no_file_unless_asked(built, tmp_path, serve):
    naming(built, tmp_path, "/etc/passwd", "passwd.xml")
    (tmp_path / "own.xml").write_bytes(built["processed"].read_bytes())
    base = serve(tmp_path)
    page = tmp_path / "passwd.html"
    html("--html", str(page), f"{base}/passwd.xml")
    assert SECRET not in page.read_text()
    assert source_entry(page, "/etc/passwd")["note"].startswith("not read: the document came from a URL")
    # not even the program's own source: the document, not the user, names it
    own = tmp_path / "own.html"
    html("--html", str(own), f"{base}/own.xml")
    entry = source_entry(own, str(built["source"]))
    assert entry["lines"] == [] and "--source-dir" in entry["note"]
    asked = tmp_path / "asked.html"
    html("--html", str(asked), "--source-dir", str(built["app"]), f"{base}/own.xml")
    assert source_entry(asked, str(built["source"]))["lines"] == SOURCE.split("\n")[:-1]
    asked = tmp_path / "asked-passwd.html"
    html("--html", str(asked), "--source-dir", str(built["app"]), f"{base}/passwd.xml")
    assert SECRET not in asked.read_text()


def test_a_symbolic_link_out_of_the_build_tree_is_not_followed(built, tmp_path):
    secret = tmp_path / "private" / "notes.c"
    secret.parent.mkdir()
    secret.write_text("int private_key = 0x5ec2e7;\n")
    link = built["app"] / "escape.c"
    link.symlink_to(secret)
    inside = built["app"] / "alias.c"
    inside.symlink_to(built["source"])
    try:
        page = tmp_path / "escape.html"
        html("--html", str(page), str(naming(built, tmp_path, str(link))))
        assert "private_key" not in page.read_text()
        assert source_entry(page, str(link))["note"].startswith("not read: outside the source directories")
        page = tmp_path / "alias.html"
        html("--html", str(page), str(naming(built, tmp_path, str(inside), "alias.xml")))
        assert source_entry(page, str(inside))["lines"] == SOURCE.split("\n")[:-1]  # a link within the tree
    finally:
        link.unlink()
        inside.unlink()


def test_source_dir_is_checked(built, tmp_path):
    missing = tmp_path / "nowhere"
    line = one_line_error(run_tool("psprocess", "--html", str(tmp_path / "x.html"), "--source-dir", str(missing),
                                   str(built["profile"])), "psprocess")
    assert line == f"psprocess: --source-dir {missing}: no such directory; give the directory of the program's sources"
    line = one_line_error(run_tool("psprocess", "--source-dir", str(tmp_path), str(built["profile"])), "psprocess")
    assert line == "psprocess: --source-dir goes with --html or -f html (the page's source view)"
    assert not (tmp_path / "x.html").exists()


def test_algebra_pages_follow_the_same_rule(built, tmp_path):
    doc = naming(built, tmp_path, "/etc/passwd")
    page = tmp_path / "cut.html"
    p = run_tool("psprocess", "cut", "--root", "touch", str(doc), "--html", str(page))
    assert p.returncode == 0, p.stderr
    assert page.exists() and SECRET not in page.read_text()
    p = run_tool("psprocess", "diff", str(built["profile"]), str(built["other"]), "-f", "html")
    assert p.returncode == 0, p.stderr
    assert "p[i] = 1; /* HOT */" in p.stdout  # the program's own source, under its directory


# -- 2. an input is never an output ----------------------------------------------------


def listing(*dirs: Path) -> dict[str, bytes]:
    return {str(f): f.read_bytes() for d in dirs for f in sorted(d.iterdir()) if f.is_file()}


@pytest.mark.parametrize("option", ["-o", "--html", "--folded", "--speedscope", "--pprof", "--gmon", "--vprof"])
def test_force_never_replaces_the_companion_read_with_a_profile(built, option):
    before = listing(built["profile"].parent)
    line = one_line_error(run_tool("psprocess", option, str(built["companion"]), "--force", str(built["profile"])),
                          "psprocess")
    assert line == f"psprocess: {built['companion']} is also an input; write the output to another name"
    assert listing(built["profile"].parent) == before  # nothing replaced, nothing left behind


def test_force_never_replaces_a_metric_file_or_the_program(built, workdir):
    mine = workdir / "mymetrics.xml"
    mine.write_bytes(Path(metrics.standard_metrics_path()).read_bytes())  # a metric file of the format
    text = mine.read_text()
    for args in (["-o", "mymetrics.xml"], ["--html", "mymetrics.xml"]):
        line = one_line_error(run_tool("psprocess", "-m", "mymetrics.xml", *args, "--force", str(built["counts"])),
                              "psprocess")
        assert line == "psprocess: mymetrics.xml is also an input; write the output to another name"
    stat = workdir / "r.stat"  # --cube r.cubex writes r.stat too
    stat.write_text(text)
    line = one_line_error(run_tool("psprocess", "-m", "r.stat", "--cube", "r.cubex", "--force", str(built["counts"])),
                          "psprocess")
    assert line == "psprocess: r.stat is also an input; write the output to another name"
    assert mine.read_text() == stat.read_text() == text and not (workdir / "r.cubex").exists()
    counts = built["counts"].read_bytes()
    line = one_line_error(run_tool("psprocess", "--calibrate", "--write-config", str(built["counts"]), "--force",
                                   str(built["counts"])), "psprocess")
    assert line == f"psprocess: {built['counts']} is also an input; write the output to another name"
    assert built["counts"].read_bytes() == counts
    # the program's binary, read to resolve the samples (it is named by the document, not the command line)
    binary = built["exe"].read_bytes()
    for option in ("-o", "--gmon"):
        line = one_line_error(run_tool("psprocess", option, str(built["exe"]), "--force", str(built["profile"])),
                              "psprocess")
        assert line == f"psprocess: {built['exe']} is also an input; write the output to another name"
    assert built["exe"].read_bytes() == binary
    assert sorted(os.listdir(workdir)) == ["mymetrics.xml", "r.stat"]


def test_force_never_replaces_inputs_of_the_subcommands(built):
    profile, other, companion = str(built["profile"]), str(built["other"]), str(built["companion"])
    cases = [
        ("diff", [profile, other, "--folded", companion]),
        ("diff", [profile, other, "--html", companion]),
        ("cut", ["--root", "main", profile, "--html", companion]),
        ("merge", [profile, other, "--html", companion]),
        ("mean", [profile, other, "--html", companion]),
        ("stat", [profile, "-o", companion]),
        ("dump", [profile, "-o", companion]),
    ]
    before = listing(built["profile"].parent, built["other"].parent)
    for command, args in cases:
        line = one_line_error(run_tool("psprocess", command, *args, "--force"), f"psprocess {command}")
        assert line == f"psprocess {command}: {companion} is also an input; write the output to another name"
    assert listing(built["profile"].parent, built["other"].parent) == before


def test_force_still_replaces_an_output_that_is_no_input(built, workdir):
    (workdir / "report.txt").write_text("old")
    p = run_tool("psprocess", "-o", "report.txt", "--force", str(built["profile"]))
    assert p.returncode == 0, p.stderr
    assert "PerfSuite Profile Report" in (workdir / "report.txt").read_text()


# -- 3. the same document as a file and a URL ---------------------------------------------


def test_the_same_document_as_a_url_and_a_file_is_refused(built, tmp_path, serve):
    doc = tmp_path / "counts.xml"
    doc.write_bytes(built["counts"].read_bytes())
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "copy.xml").write_bytes(doc.read_bytes())
    base = serve(tmp_path)
    twice = "give each document once (combined twice, its counts would count twice)"
    cases = [
        ([f"{base}/counts.xml", str(doc)], f"{base}/counts.xml has the same content as {doc}"),
        ([str(doc), f"{base}/counts.xml"], f"{base}/counts.xml has the same content as {doc}"),
        ([f"{base}/counts.xml", f"{base}/counts.xml?again=1"],
         f"{base}/counts.xml?again=1 has the same content as {base}/counts.xml"),
        ([f"{base}/counts.xml", f"{base}/sub/copy.xml"], f"{base}/sub/copy.xml has the same content as "
                                                         f"{base}/counts.xml"),
    ]
    for sources, same in cases:
        line = one_line_error(run_tool("psprocess", "-c", "-f", "json", *sources), "psprocess")
        assert line == f"psprocess: {same}; {twice}"
    # two different documents, one from each place, are combined: the sum is theirs
    second = tmp_path / "second"
    second.mkdir()
    p = run_tool("psrun", "-q", "-d", str(second), "-e", "page-faults", str(built["exe"]), "300")
    assert p.returncode == 0, p.stderr
    [other] = second.glob("*.xml")
    p = run_tool("psprocess", "-c", "-f", "json", f"{base}/counts.xml", str(other))
    assert p.returncode == 0, p.stderr
    combined = json.loads(p.stdout)
    counts = [e["count"] for r in combined["reports"] for e in r["events"] if e["name"] == "page-faults"]
    [faults] = [s for s in combined["statistics"] if s["name"] == "page-faults"]
    assert len(counts) == 2 and faults["sum"] == sum(counts) and faults["count"] == 2


# -- 4. credentials in a URL ---------------------------------------------------------------


def test_a_urls_password_is_never_shown(built, tmp_path, serve):
    (tmp_path / "run.xml").write_bytes(built["counts"].read_bytes())
    base = serve(tmp_path).replace("http://", "http://alice:hunter2@")
    line = one_line_error(run_tool("psprocess", f"{base}/missing.xml"), "psprocess")
    shown = base.replace("hunter2", "***")
    assert line == f"psprocess: {shown}/missing.xml: HTTP 404 File not found; check the address"
    p = run_tool("psprocess", "-f", "json", f"{base}/run.xml")  # fetched, with the credentials sent to the server
    assert p.returncode == 0, p.stderr
    assert "hunter2" not in p.stdout + p.stderr
    assert json.loads(p.stdout)["reports"][0]["source"] == f"{shown}/run.xml"
    line = one_line_error(run_tool("psprocess", "-c", f"{base}/run.xml", f"{base}/run.xml?x"), "psprocess")
    assert "hunter2" not in line and f"{shown}/run.xml?x has the same content" in line
    token = base.replace("alice:hunter2@", "ghp_0123456789@")  # a name alone is often a token
    line = one_line_error(run_tool("psprocess", f"{token}/missing.xml"), "psprocess")
    assert "ghp_" not in line and "://***@127.0.0.1" in line


# -- 5. a call-path document deeper than psrun records -------------------------------------


def _chain(depth: int) -> str:
    return "".join(f'<node id="{i}" parent="{i - 1}" module="1" addr="1010"/>' for i in range(1, depth)) + \
        f'<node id="{depth}" parent="{depth - 1}" module="1" addr="1010" kind="sample" samples="1"/>'


def _callpaths(maxdepth: str, body: str) -> str:
    return (f'<callpaths version="1.1"><sampling event="ITIMER_PROF" threshold="1000" maxdepth="{maxdepth}" '
            f'unwinder="libunwind"/><module id="1" file="/x" offset="0x1000"/>'
            f'<thread id="1" tid="1" samples="1">{body}</thread></callpaths>')


def test_a_declared_maxdepth_beyond_psruns_is_named_as_the_problem(tmp_path):
    doc = tmp_path / "deep.callpaths.xml"
    doc.write_text(_callpaths("100000", _chain(1026)))
    line = one_line_error(run_tool("psprocess", str(doc)), "psprocess")
    assert line == (f'psprocess: {doc}: <node id="1026"> of thread 1 is 1026 frames deep, more than psrun records '
                    "(at most 1024 frames under a truncated node; the document's maxdepth 100000 is more than "
                    "psrun's largest, 1024); regenerate it with psrun --callpath (the format: "
                    "docs/formats/callpaths.md)")
    doc.write_text(_callpaths("8", _chain(10)))
    line = one_line_error(run_tool("psprocess", str(doc)), "psprocess")
    assert "is 10 frames deep, more than its maxdepth 8 allows (8 frames under a truncated node)" in line
    doc.write_text(_callpaths("100000", _chain(40)))  # within what psrun records: read
    p = run_tool("psprocess", str(doc))
    assert p.returncode == 0, p.stderr
