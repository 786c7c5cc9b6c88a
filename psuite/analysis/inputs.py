"""Reading an input document: a file or an http(s) URL, handed to the
readers as a stream (readers/document.py parses it safely).

Files: regular files of at most cli_common.MAX_INPUT_BYTES (2 GiB).
URLs: at most URL_MAX_BYTES, counted while the body streams in; the whole
fetch (connecting, redirects, headers, body) must end within
URL_TIMEOUT_S seconds, or PSUITE_URL_TIMEOUT's; redirects are followed
to http(s) URLs only.  Every failure is one InputError line."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable

from psuite.cli_common import hide_userinfo, one_line, open_input, read_input, read_problem, size_text
from psuite.errors import InputError, UsageError

URL_TIMEOUT_S = 60  # the whole fetch, not each read
URL_MAX_BYTES = 256 * 1024 * 1024
URL_SCHEMES = ("http", "https")


def fetch(source: str) -> bytes:
    """The whole document."""
    if _is_url(source):
        return _fetch_document(source)
    return read_input(source)


def open_source(source: str) -> io.BufferedIOBase:
    """The document as a binary stream: the file itself, or a URL's body."""
    if _is_url(source):
        return io.BytesIO(_fetch_document(source))
    return open_input(source)


def shown_name(source: str) -> str:
    """How a document is named in reports and messages: a URL without its
    password (cli_common.hide_userinfo)."""
    return hide_userinfo(source) if "://" in source else source


def files_read_with(sources: Iterable[str]) -> list[str]:
    """The local files reading `sources` reads: each document, and the
    call-path companion beside a profile (X.callpaths.xml beside X.xml)
    when there is one.  URLs are not files here."""
    from psuite.formats.readers import callpaths

    out = []
    for s in sources:
        if "://" in s:
            continue
        out.append(s)
        companion = callpaths.companion_name(s)
        if companion is not None and os.path.isfile(companion):
            out.append(companion)
    return out


def _is_url(source: str) -> bool:
    if source.startswith(("http://", "https://")):
        return True
    if "://" in source:
        raise InputError(f"{source}: only files and http(s) URLs can be read")
    return False


def url_timeout() -> float:
    """Seconds allowed for one fetch: PSUITE_URL_TIMEOUT, else URL_TIMEOUT_S."""
    raw = os.environ.get("PSUITE_URL_TIMEOUT", "").strip()
    if not raw:
        return URL_TIMEOUT_S
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise UsageError(f"PSUITE_URL_TIMEOUT={raw!r} is not a number of seconds; set it to e.g. 60")
    return seconds


def _detail(exc: BaseException) -> str:
    """The exception in a few words, one line, not too long."""
    name = type(exc).__name__
    if name == "BadStatusLine":
        text = f"bad status line {exc.line!r}"  # type: ignore[attr-defined]
    elif name == "IncompleteRead":
        text = "the body is incomplete or badly chunked"
    else:
        text = " ".join(str(exc).split()) or name
    return text if len(text) <= 160 else text[:157] + "..."


def _check_url(url: str) -> None:
    """A URL http.client can send, or a one-line error saying why not."""
    import re
    import urllib.parse

    bad = re.search(r"[\x00-\x20\x7f]", url)
    if bad:
        raise InputError(f"{url}: not a valid URL ({one_line(repr(bad.group()))} in it); percent-encode it, "
                         f"e.g. {urllib.parse.quote(bad.group())}")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port  # ValueError when not a number from 0 to 65535
        host = parts.hostname
        if host:
            host.encode("idna")
    except ValueError as exc:  # UnicodeError too
        raise InputError(f"{url}: not a valid URL ({_detail(exc)}); check the address") from None
    if not host:
        raise InputError(f"{url}: not a valid URL (no host name); check the address")
    if port == 0:
        raise InputError(f"{url}: not a valid URL (port 0); check the address")


class _Watchdog:
    """The fetch's deadline: when it passes, every connection of the fetch
    is shut down, which ends any read in progress at once."""

    def __init__(self, seconds: float) -> None:
        import threading
        import time

        self._clock = time.monotonic
        self.seconds = seconds
        self.deadline = self._clock() + seconds
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def remaining(self) -> float:
        return self.deadline - self._clock()

    def watch(self, sock) -> None:
        with self._lock:
            self._sockets.append(sock.dup())  # a second descriptor of the same connection: shutdown reaches both
            if self.expired:
                self._shutdown(self._sockets[-1])

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for s in self._sockets:
                self._shutdown(s)

    @staticmethod
    def _shutdown(sock) -> None:
        import socket

        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            for s in self._sockets:
                s.close()
            self._sockets.clear()


def _opener(watchdog: _Watchdog, url: str):
    """urllib with only http(s), every connection under the watchdog, and
    redirects followed to http(s) URLs only."""
    import http.client
    import urllib.parse
    import urllib.request

    def _check_redirect(target: str) -> None:
        if urllib.parse.urlsplit(target).scheme.lower() not in URL_SCHEMES:
            raise InputError(f"{url}: the server redirects to {target}; only http(s) URLs are followed")
        try:
            _check_url(target)
        except InputError as exc:
            raise InputError(f"{url}: the server redirects to {exc}") from None

    class Watched(http.client.HTTPConnection):
        def connect(self) -> None:
            self.timeout = watchdog.remaining()
            if self.timeout <= 0:
                raise TimeoutError("timed out")
            super().connect()
            watchdog.watch(self.sock)

    class Handler(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(Watched, req)

    class Redirects(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req, fp, code, msg, headers, newurl):
            _check_redirect(newurl)
            return super().redirect_request(req, fp, code, msg, headers, newurl)

        def http_error_302(self, req, fp, code, msg, headers):
            location = headers.get("location") or headers.get("uri")
            if location:  # before urllib refuses a file: URL with a message of its own
                try:
                    target = urllib.parse.urljoin(req.full_url, location)
                except ValueError as exc:
                    raise InputError(f"{url}: the server redirects to {location}, not a valid URL ({_detail(exc)})"
                                     "; check the address") from None
                _check_redirect(target)
            return super().http_error_302(req, fp, code, msg, headers)

        http_error_301 = http_error_303 = http_error_307 = http_error_302
        if hasattr(urllib.request.HTTPRedirectHandler, "http_error_308"):
            http_error_308 = http_error_302

    handlers = [urllib.request.ProxyHandler(), urllib.request.UnknownHandler(), Handler(),
                urllib.request.HTTPDefaultErrorHandler(), Redirects(), urllib.request.HTTPErrorProcessor()]
    if hasattr(http.client, "HTTPSConnection"):  # Python built with ssl
        class WatchedTLS(http.client.HTTPSConnection, Watched):
            pass

        class TLSHandler(urllib.request.HTTPSHandler):
            def https_open(self, req):
                return self.do_open(WatchedTLS, req, context=self._context)

        handlers.append(TLSHandler())
    opener = urllib.request.OpenerDirector()
    for h in handlers:
        opener.add_handler(h)
    return opener


def _fetch_url(url: str) -> bytes:
    import http.client
    import urllib.error

    seconds = url_timeout()
    _check_url(url)
    watchdog = _Watchdog(seconds)
    chunks: list[bytes] = []
    try:
        with _opener(watchdog, url).open(_request(url), timeout=seconds) as resp:
            length = resp.headers.get("Content-Length", "")
            if length.strip().isdigit() and int(length) > URL_MAX_BYTES:
                raise InputError(f"{url}: larger than {size_text(URL_MAX_BYTES)}; download it and give the file")
            total = 0
            while chunk := resp.read1(1 << 20):
                total += len(chunk)
                if total > URL_MAX_BYTES:
                    raise InputError(f"{url}: larger than {size_text(URL_MAX_BYTES)}; download it and give the "
                                     "file")
                chunks.append(chunk)
                if watchdog.expired:
                    break
            if resp.length and not watchdog.expired:  # read1 takes an early end for the end
                raise InputError(f"{url}: the body ended after {total:,} bytes, {resp.length:,} short of its "
                                 "Content-Length; fetch it again or check the server")
    except InputError:
        raise
    except urllib.error.HTTPError as exc:
        raise InputError(f"{url}: HTTP {exc.code} {_detail(exc.reason)}; check the address") from None
    except http.client.InvalidURL as exc:  # a redirect's, or a proxy's
        raise InputError(f"{url}: not a valid URL ({_detail(exc)}); check the address") from None
    except (http.client.HTTPException, ValueError) as exc:  # a malformed answer (bad status, headers, chunks)
        if watchdog.expired:
            raise _timeout(url, seconds) from None
        raise InputError(f"{url}: the server's answer is not valid HTTP ({_detail(exc)}); check that the address "
                         "is an http(s) server") from None
    except (urllib.error.URLError, OSError, OverflowError) as exc:
        reason = getattr(exc, "reason", exc)
        if watchdog.expired or isinstance(reason, TimeoutError):
            raise _timeout(url, seconds) from None
        raise InputError(f"{url}: cannot fetch ({_detail(reason)}); check the address and the network") from None
    except MemoryError:
        raise InputError(f"out of memory reading {url}; free memory or raise the memory limit (ulimit -v)") from None
    finally:
        watchdog.close()
    if watchdog.expired:  # the end of the body may only be the shutdown
        raise _timeout(url, seconds)
    return b"".join(chunks)


def _request(url: str):
    """The request for url: credentials in it (http://user:pass@host/)
    are sent as HTTP basic authentication to that host only (not on to a
    redirect's), not as part of the host name."""
    import base64
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return urllib.request.Request(url)
    userinfo, _, host = parts.netloc.rpartition("@")
    req = urllib.request.Request(urllib.parse.urlunsplit(parts._replace(netloc=host)))
    user, _, password = userinfo.partition(":")
    token = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode()
    req.add_unredirected_header("Authorization", "Basic " + base64.b64encode(token).decode("ascii"))
    return req


def _timeout(url: str, seconds: float) -> InputError:
    return InputError(f"{url}: cannot fetch (no complete answer within {seconds:g} s); check the server, or allow "
                      "longer with PSUITE_URL_TIMEOUT=SECONDS")


def load(source: str, warn: Callable[[str], None] | None = None, on_module: Callable[[str], None] | None = None,
         cubes: bool = False):
    """The report model of one document (file or URL).  A profile X.xml
    comes with its call paths when the companion X.callpaths.xml is beside
    it (a missing one is fine); a companion that names another profile is
    left out with a warning (`warn`, else warnings.warn).  on_module(file)
    is called for each raw profile's module as the parser meets it (see
    readers/document.parse).  A CUBE 4 file (named .cubex, or a tar
    archive) is read by readers/cube.py into a psuite.model.experiment.Experiment
    when `cubes` (the caller shows experiments), else refused with one line
    saying what reads it (readers.CubeFile)."""
    from psuite.formats.readers import CubeFile, read_stream
    from psuite.model.report import MultiReport, ProfileReport

    if source.endswith(".cubex"):
        return _cube(source, cubes)
    try:  # the reader looks at the first bytes it reads anyway: no second open to tell a cube
        report = _load(source, lambda stream, name: read_stream(stream, name, on_module))
    except CubeFile:
        return _cube(source, cubes)
    if isinstance(report, ProfileReport) and report.callpaths is None or \
            isinstance(report, MultiReport) and report.of_profiles:
        attach_companion(report, source, warn)
    return report


def _cube(source: str, wanted: bool):
    from psuite.formats.readers import CubeFile

    if not wanted:
        raise CubeFile(source)
    return load_cube(source)


def load_cube(source: str):
    """The psuite.model.experiment.Experiment of a CUBE 4 file, by the one CUBE
    reader (readers/cube.py); InputError (one line) otherwise."""
    from psuite.analysis.experiments import as_written
    from psuite.formats.readers import cube

    if "://" in source:
        raise InputError(f"{source}: CUBE files are read from files, not URLs; download it and give the file")
    return as_written(stored_ratios(cube.read(source)))


NO_FORMULA = "psuite::no_formula"  # experiments.NO_FORMULA


def stored_ratios(exp):
    """Older psuite wrote derived metrics over perf's event names
    (CPUs utilized, page faults per second) as plain values, without
    saying so: such a metric of a psuite cube, named as a standard derived
    metric, is named in attributes[NO_FORMULA], so that the algebra leaves
    it out instead of subtracting ratios."""
    if exp.attributes.get("Creator") != "psuite" or NO_FORMULA in exp.attributes:
        return exp
    from psuite.analysis.metrics import standard_definitions

    derived = {d.name for d in standard_definitions()}
    stored = [m.name for m in exp.metrics if not m.derived and m.display in derived]
    if stored:
        exp.attributes[NO_FORMULA] = "\n".join(stored)
    return exp


def _load(source: str, read):
    name = shown_name(source)
    try:
        with open_source(source) as stream:
            return read(stream, name)
    except OSError as exc:  # the file failing while it is read
        raise InputError(read_problem(name, exc)) from None
    except MemoryError:
        raise InputError(f"out of memory reading {name}; free memory or raise the memory limit "
                         "(ulimit -v)") from None


def attach_companion(report, source: str, warn: Callable[[str], None] | None = None) -> None:
    """report.callpaths from the companion of `source`, when there is one
    that belongs to it; a combined document's (a MultiReport) each
    member's (readers/multi.attach)."""
    from psuite.formats.readers import callpaths, multi
    from psuite.model.report import MultiReport

    companion = callpaths.companion_name(source)
    if companion is None:
        return
    read = callpaths.read_all if isinstance(report, MultiReport) else callpaths.read
    if _is_url(companion):
        try:
            data = _fetch_url(companion)
        except InputError:  # most profiles have none: not finding it is no error
            return
        found = read(io.BytesIO(data), shown_name(companion))
    elif os.path.isfile(companion):
        found = _load(companion, read)
    else:
        return
    if isinstance(report, MultiReport):
        problems = multi.attach(report, found, shown_name(source))
    else:
        why = callpaths.check_belongs(found, source, report.pid)
        problems = [why] if why else []
        if not why:
            report.callpaths = found
    for why in problems:
        message = f"{shown_name(companion)} is not the call paths of {shown_name(source)} ({why}); left out"
        if warn is None:
            import warnings

            warnings.warn(message, stacklevel=3)
        else:
            warn(message)


def pair_companions(sources: list[str]) -> list[str]:
    """The inputs without the companions (X.callpaths.xml) whose profile
    X.xml is among them too: reading the profile reads its companion, and
    each is reported once.  A companion alone stays, read on its own.  A
    document given twice is refused (see check_distinct)."""
    from psuite.formats.readers import callpaths

    check_distinct(sources)

    def key(s: str) -> str:
        return s if "://" in s else os.path.realpath(s)

    profiles = {key(s) for s in sources if not s.endswith(callpaths.SUFFIX)}
    out = []
    for s in sources:
        profile = callpaths.profile_name(s)
        if profile is not None and key(profile) in profiles:
            continue
        out.append(s)
    return out


class _Distinct:
    """The documents of one run, for the copy check of URLs: a URL's body
    is only known once fetched, so it is compared then, with the files of
    its size and the URLs fetched before it."""

    def __init__(self, sources: list[str], digests: dict[str, str]) -> None:
        self.urls = {s for s in sources if "://" in s}
        self.digests = dict(digests)  # sha256 -> the document first seen with it (files hashed already)
        hashed = set(digests.values())
        self.by_size: dict[int, list[str]] = {}  # the files not hashed yet, by size
        for s in sources:
            if "://" not in s and s not in hashed and os.path.isfile(s):
                self.by_size.setdefault(os.path.getsize(s), []).append(s)

    def fetched(self, url: str, data: bytes) -> None:
        if url not in self.urls:
            return  # a companion, or a document of another run
        self.urls.discard(url)  # read once: a second read (a subcommand's) is the same document
        import hashlib

        for s in self.by_size.pop(len(data), []):
            self.digests.setdefault(_digest(s), s)
        digest = hashlib.sha256(data).hexdigest()
        first = self.digests.setdefault(digest, url)
        if first != url:
            raise UsageError(_given_twice(first, url))


_distinct: _Distinct | None = None  # the copy check of the run's URLs (check_distinct)


def _fetch_document(url: str) -> bytes:
    """A URL's body, checked against the run's other documents (see check_distinct)."""
    data = _fetch_url(url)
    if _distinct is not None:
        _distinct.fetched(url, data)
    return data


def check_distinct(sources: list[str]) -> None:
    """UsageError naming a document given twice: by the same file (a
    directory and a glob both naming it, a symbolic link), the same URL, or
    the same content under another name (a copy, or the same document as a
    file and as a URL, or under two URLs).  psbase refuses the same;
    counted once silently, a mistyped input list would go unnoticed, and
    counted twice, -c would double its sums.  Only files of equal size are
    hashed; a URL's body when it is fetched (the inputs are all read before
    anything is written)."""
    global _distinct
    first: dict[str, str] = {}  # realpath or URL -> the input naming it first
    by_size: dict[int, list[str]] = {}
    for s in sources:
        key = s if "://" in s else os.path.realpath(s)
        if key in first:
            raise UsageError(_given_twice(first[key], s))
        first[key] = s
        if "://" not in s and os.path.isfile(s):
            by_size.setdefault(os.path.getsize(s), []).append(s)
    digests: dict[str, str] = {}
    for same_size in by_size.values():
        if len(same_size) < 2:
            continue
        by_digest: dict[str, str] = {}
        for s in same_size:
            digest = _digest(s)
            if digest in by_digest:
                raise UsageError(_given_twice(by_digest[digest], s))
            by_digest[digest] = s
        digests.update(by_digest)
    _distinct = _Distinct(sources, digests) if len(sources) > 1 and any("://" in s for s in sources) else None


def _given_twice(first: str, again: str) -> str:
    shown_first, shown_again = shown_name(first), shown_name(again)
    if "://" not in first + again and os.path.realpath(first) == os.path.realpath(again) or first == again:
        same = f"{shown_again} is given twice" + (f" (also as {shown_first})" if first != again else "")
    else:
        same = f"{shown_again} has the same content as {shown_first}"
    return f"{same}; give each document once (combined twice, its counts would count twice)"


def _digest(path: str) -> str:
    """sha256 of a file's bytes, read in pieces."""
    import hashlib

    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError as exc:
        raise InputError(read_problem(path, exc)) from None
    return h.hexdigest()
