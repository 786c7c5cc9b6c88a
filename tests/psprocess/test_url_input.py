"""psprocess reading reports over http from a real local server: the same
report as from the file, clear one-line errors, the size limit and the
timeout."""

from __future__ import annotations

import functools
import http.server
import json
import socket
import threading

import pytest

from psuite.analysis import inputs
from psuite.errors import InputError
from tests.conftest import one_line_error, run_tool
from tests.psprocess.test_counting_reports import COUNTS, report_xml


@pytest.fixture
def server(tmp_path):
    """An http server on 127.0.0.1 serving tmp_path; yields its base URL."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_url_gives_the_same_report_as_the_file(tmp_path, server):
    (tmp_path / "run.xml").write_text(report_xml(COUNTS))
    from_url = run_tool("psprocess", "-f", "json", f"{server}/run.xml")
    from_file = run_tool("psprocess", "-f", "json", str(tmp_path / "run.xml"))
    assert from_url.returncode == 0, from_url.stderr
    url_doc, file_doc = json.loads(from_url.stdout), json.loads(from_file.stdout)
    assert url_doc["reports"][0]["source"] == f"{server}/run.xml"
    for doc in (url_doc, file_doc):
        doc["reports"][0].pop("source")
    assert url_doc == file_doc
    assert {e["name"]: e["count"] for e in url_doc["reports"][0]["events"]} == COUNTS


def test_url_errors_are_one_line(server):
    assert "HTTP 404" in one_line_error(run_tool("psprocess", f"{server}/missing.xml"), "psprocess")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = one_line_error(run_tool("psprocess", f"http://127.0.0.1:{port}/run.xml"), "psprocess")
    assert "cannot fetch" in line
    assert "only files and http(s)" in one_line_error(run_tool("psprocess", "ftp://example.org/x.xml"),
                                                      "psprocess")


def test_size_limit(tmp_path, server, monkeypatch):
    (tmp_path / "big.xml").write_bytes(b"<hwpcreport>" + b" " * 5000 + b"</hwpcreport>")
    monkeypatch.setattr(inputs, "URL_MAX_BYTES", 4096)
    with pytest.raises(InputError, match="larger than"):
        inputs.fetch(f"{server}/big.xml")
    monkeypatch.setattr(inputs, "URL_MAX_BYTES", 8192)
    assert len(inputs.fetch(f"{server}/big.xml")) == 5025


def test_timeout(monkeypatch):
    """A server that accepts the connection and never answers."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        monkeypatch.setattr(inputs, "URL_TIMEOUT_S", 0.5)
        with pytest.raises(InputError, match="cannot fetch"):
            inputs.fetch(f"http://127.0.0.1:{silent.getsockname()[1]}/run.xml")
