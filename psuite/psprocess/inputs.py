"""Reading an input document: a file or an http(s) URL, parsed safely
(no external entities, no DTD loading, no network from the parser, bounded
entity expansion)."""

from __future__ import annotations

from psuite.cli_common import read_input
from psuite.errors import InputError

URL_TIMEOUT_S = 20
URL_MAX_BYTES = 256 * 1024 * 1024


def fetch(source: str) -> bytes:
    if source.startswith(("http://", "https://")):
        return _fetch_url(source)
    if "://" in source:
        raise InputError(f"{source}: only files and http(s) URLs can be read")
    return read_input(source)


def _fetch_url(url: str) -> bytes:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=URL_TIMEOUT_S) as resp:
            data = resp.read(URL_MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise InputError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise InputError(f"{url}: cannot fetch ({reason}); check the address and the network") from None
    if len(data) > URL_MAX_BYTES:
        raise InputError(f"{url}: larger than {URL_MAX_BYTES // (1024 * 1024)} MB; download it and give the file")
    return data


def parse(data: bytes, source: str):
    """The document's root element."""
    from psuite.hwpc.config import parse_xml_safely

    return parse_xml_safely(data, source, InputError)


def load(source: str):
    """The report model of one document (file or URL)."""
    from psuite.psprocess.readers import read_document

    return read_document(parse(fetch(source), source), source)
