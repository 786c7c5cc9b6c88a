"""Fuzzing campaign (hypothesis): every psuite command keeps its contract
for any input.  Exit 0 with valid output (JSON that parses strictly, XML
that is well-formed, CSV with its columns, text that is UTF-8 text), or
exit 2 with exactly one line on stderr starting with "TOOL: "; never a
traceback, never a hang, never a crash.

Documents are mutated from real seeds of every kind psprocess reads, in
psuite's form (written here by psrun and psprocess on a small target) and
in the original PerfSuite's (hand-written as it wrote them):

- element text replaced by strategic values (huge integers, 1e400, -1, nan,
  inf, non-ASCII digits, empty, whitespace, 5,000 digits, hex, control
  characters, character and entity references, CDATA, comments, PIs);
- attributes changed, removed or added (units, mode, pcbase, offset,
  class, domain, frequency, interval ...);
- elements deleted, duplicated, reordered, renamed, nested wrongly;
- prologues: encoding declarations (UTF-16, latin-1, wrong or unknown),
  DOCTYPEs with internal subsets, external and nested entities (billion
  laughs), processing instructions and comments around the root;
- bytes: truncation at any offset, flipped bytes.

Each document goes through psprocess in every output format, and with -c
together with a second mutated document.  The bulk runs in-process
(run_cli, as the console scripts call it, with stdout and stderr in
buffers and an alarm against hangs); a sample of 100 runs goes through
the real command too, and must give the same status, output and
messages.  psinv's option parsing is fuzzed the same way, psrun's (the
native command, measuring /bin/true) through the real command.  Hypothesis is derandomized (a fixed seed per
test, no example database), so CI runs the same cases every time; the
number of cases scales with PSUITE_FUZZ_SCALE (default 1) for longer
campaigns.  test_zz_summary prints what ran.

The regression cases at the end are the minimal inputs of every traceback
and hang found by the campaign, or by reviewing the code it exercises while
building it; each failed before its fix."""

from __future__ import annotations

import contextlib
import copy
import csv
import io
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from psuite.cli_common import run_cli
from tests.conftest import run_tool
from tests.psprocess.test_documents import DOCTYPE, MACHINE, original_count, original_profile

SCALE = float(os.environ.get("PSUITE_FUZZ_SCALE", "1") or 1)
CASE_TIMEOUT_S = 20  # one run of a command on one small document: far above any honest run
STATS: Counter = Counter()  # (tool, "exit 0" | "exit 2") -> runs checked
RAN: set[str] = set()  # the campaign's tests that ran (see test_zz_summary)
STARTED = time.monotonic()


def _uniform(lo: int, hi: int):
    """Integers from lo to hi, all about equally often (st.integers draws
    its lower bound far more often than the rest)."""
    return st.sampled_from(range(lo, hi + 1))


def fuzz_settings(examples: int) -> settings:
    return settings(max_examples=max(1, int(examples * SCALE)), derandomize=True, database=None, deadline=None,
                    print_blob=False, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                             HealthCheck.filter_too_much,
                                                             HealthCheck.large_base_example])


# ------------------------------------------------------------- the harness


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang(f"no answer within {CASE_TIMEOUT_S} s")


def run_inprocess(tool: str, argv: list[str]) -> tuple[int, str, str]:
    """(status, stdout, stderr) of `tool argv` run as its console script
    runs it: run_cli(tool, main), argparse's SystemExit caught.  Any
    other exception is the traceback the real command would print."""
    import importlib

    main = importlib.import_module(f"psuite.{tool}.cli").main
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_TIMEOUT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = run_cli(tool, main, argv)
            except SystemExit as exc:
                code = exc.code
                status = code if isinstance(code, int) else (0 if code is None else 1)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return status, out.getvalue(), err.getvalue()


def _no_constant(name: str):
    raise ValueError(f"{name} in JSON output")


def check(tool: str, status: int, out: str, err: str, fmt: str | None = None, label: str = "") -> None:
    """The contract of every psuite command."""
    STATS[(label or tool, f"exit {status}")] += 1
    assert "Traceback" not in err, err
    if status != 0:
        assert status == 2, (status, err)
        lines = err.splitlines()
        assert len(lines) == 1, err  # what is wrong, alone: no warning of a run that did not happen
        assert lines[0].startswith(f"{tool}: ") and not lines[0].startswith(f"{tool}: warning: "), err
        return
    out.encode("utf-8")  # what the real command writes: no lone surrogates
    if fmt == "json":
        data = json.loads(out, parse_constant=_no_constant)
        assert data["schema"].startswith("psuite.")
    elif fmt == "xml":
        root = etree.fromstring(out.encode("utf-8"), etree.XMLParser(resolve_entities=False, no_network=True))
        assert root.tag in ("hwpcreport", "hwpcprofilereport", "multihwpcreport", "multihwpcprofilereport",
                            "resourcereport")
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(out)))
        assert rows[0] == ["source", "hostname", "pid", "thread", "kind", "name", "value", "description"]
        assert all(len(r) == 8 for r in rows), rows
    elif fmt == "text":
        assert "\x00" not in out


def psprocess(argv: list[str], fmt: str | None) -> tuple[int, str, str]:
    status, out, err = run_inprocess("psprocess", argv)
    check("psprocess", status, out, err, fmt)
    assert "root:x:0:" not in out, "an external entity was resolved"
    return status, out, err


# --------------------------------------------------------------- the seeds

SEEDS: dict[str, bytes] = {}
KINDS = {
    "count": ("psuite_count", "original_count"),
    "profile": ("psuite_profile", "original_profile"),
    "processed": ("psuite_processed", "original_processed", "original_processed_old"),
    "multi": ("psuite_multi", "original_multi"),
    "multiprofile": ("psuite_multiprofile", "original_multiprofile"),
    "resource": ("psuite_resource",),
}
SEED_NAMES = tuple(n for names in KINDS.values() for n in names)


def original_raw_profile(work: str) -> str:
    """A raw <hwpcreport mode="profile"> as the original PerfSuite wrote it
    (no <thread>, ticks, decimal PCs with pcbase 10, a decimal offset)."""
    return ('<hwpcreport version="0.2" generator="PerfSuite libpshwpc 0.6.2" mode="profile">'
            "<date>Tue Mar 04 10:12:09 2014</date><hostname>node1</hostname><domainname>(none)</domainname>"
            "<pid>4242</pid><username>kufrin</username><command>./app</command>"
            f'<wallclock units="ticks">2534000000</wallclock><cputime><usertime>1.0</usertime>'
            f"<systemtime>0.0</systemtime></cputime>{MACHINE}"
            '<hwpcprofiledata class="itimer"><profileinfo><profileevent domain="user" type="native" '
            'name="ITIMER_PROF" derived="no"><threshold>10000</threshold></profileevent></profileinfo>'
            f'<totalsamples>18</totalsamples><module file="{work}" offset="0"><samples pcbase="10">'
            '<sample pc="4352">10</sample><sample pc="4400">5</sample></samples></module>'
            '<module file="/nonexistent/libm.so.6" offset="0x7f0000000000"><samples>'
            '<sample pc="7f0000001000">3</sample></samples></module></hwpcprofiledata></hwpcreport>')


def original_processed_old() -> str:
    """<hwpcprofilereport> of the first generation (hwpcprofilereport.dtd):
    <modules> named apart, <file>s directly under <hwpcprofile>."""
    return ('<hwpcprofilereport version="0.1" generator="PerfSuite psprocess 0.5">'
            "<date>Tue Mar 04 10:12:09 2014</date><hostname>node1</hostname><domainname>(none)</domainname>"
            "<executioninfo><date>Tue Mar 04 10:12:09 2014</date><hostname>node1</hostname>"
            "<domainname>(none)</domainname><pid>300</pid><command>./app</command>"
            f'<wallclock units="seconds">1.5</wallclock>{MACHINE}</executioninfo>'
            '<hwpcprofile mapper="binutils"><hwpcevent class="PAPI" name="PAPI_TOT_CYC" domain="user" '
            'type="preset"/><period>1000000</period><totalsamples>70</totalsamples>'
            '<modules><module name="/home/u/app">/home/u/app</module></modules>'
            '<file name="a.c"><function name="solve"><line lineno="10">60</line><line lineno="11">5</line>'
            '</function></file><file name="??"><function name="??"><line lineno="0">5</line></function></file>'
            "</hwpcprofile></hwpcprofilereport>")


@pytest.fixture(scope="module")
def fuzzdir(tmp_path_factory) -> Path:
    """The campaign's folder (also FUZZDIR, so that hypothesis' tests take
    no fixture arguments to print with a failing example)."""
    global FUZZDIR, STARTED
    FUZZDIR, STARTED = tmp_path_factory.mktemp("fuzz"), time.monotonic()
    return FUZZDIR


FUZZDIR = Path("/nonexistent")


@pytest.fixture(scope="module")
def seeds(targets, fuzzdir) -> dict[str, bytes]:
    """Real documents of every kind: psuite's from psrun on tests/targets/
    work.c (counting with -R, two profiles) and psprocess -x / -c -x on
    them; the original PerfSuite's as test_documents writes them."""
    if SEEDS:
        return SEEDS
    work = targets["work"]
    runs = fuzzdir / "seeds"
    made: dict[str, list[Path]] = {}
    for name, args in (("c1", ["-R", "--interval", "0.05", "-e", "task-clock,page-faults"]),
                       ("c2", ["-e", "task-clock,page-faults,context-switches"]),
                       ("p1", ["--profile", "ITIMER_PROF", "--period", "1000"]),
                       ("p2", ["--profile", "ITIMER_PROF", "--period", "2000"])):
        d = runs / name
        d.mkdir(parents=True)
        p = run_tool("psrun", "-q", "-d", str(d), *args, work, "4", "30", "0")
        assert p.returncode == 0, p.stderr
        made[name] = sorted(d.glob("*.xml"))
    [resource] = [f for f in made["c1"] if f.name.endswith(".resource.xml")]
    [c1] = [f for f in made["c1"] if f != resource]
    [c2], [p1], [p2] = made["c2"], made["p1"], made["p2"]
    derived = {"psuite_processed": ["-x", str(p1)], "psuite_multi": ["-c", "-x", str(c1), str(c2)],
               "psuite_multiprofile": ["-c", "-x", str(p1), str(p2)]}
    for name, argv in derived.items():
        status, out, err = run_inprocess("psprocess", argv)
        assert status == 0, err
        SEEDS[name] = out.encode()
    SEEDS.update(psuite_count=c1.read_bytes(), psuite_profile=p1.read_bytes(), psuite_resource=resource.read_bytes())
    members = [original_count(100, {"PAPI_TOT_CYC": 1000, "PAPI_TOT_INS": 500, "PAPI_FP_OPS": 20,
                                     "PAPI_L1_DCM": 7}),
               original_count(101, {"PAPI_TOT_CYC": 3000, "PAPI_TOT_INS": 2500})]
    profiles = [original_profile(200, 0, {("a.c", "solve", 10): 60, ("a.c", "init", 3): 5}),
                original_profile(200, 1, {("a.c", "solve", 10): 30, ("b.c", "??", 0): 5})]
    SEEDS.update({
        "original_count": members[0].encode(),
        "original_profile": original_raw_profile(work).encode(),
        "original_processed": profiles[0].encode(),
        "original_processed_old": original_processed_old().encode(),
        "original_multi": ('<?xml version="1.0"?>\n' + DOCTYPE.format("multihwpcreport", "multihwpcreport")
                           + '<multihwpcreport version="0.3">' + "".join(members) + "</multihwpcreport>").encode(),
        "original_multiprofile": ('<?xml version="1.0"?>\n'
                                  + DOCTYPE.format("multihwpcprofilereport", "multihwpcprofilereport")
                                  + '<multihwpcprofilereport version="0.3">' + "".join(profiles)
                                  + "</multihwpcprofilereport>").encode(),
    })
    assert set(SEEDS) == set(SEED_NAMES)
    for name, data in SEEDS.items():  # every seed is read as it is
        path = fuzzdir / f"{name}.xml"
        path.write_bytes(data)
        for fmt in ("text", "json", "csv"):
            status, _, err = psprocess(["-f", fmt, str(path)], fmt)
            assert status == 0, (name, err)
    return SEEDS


# ------------------------------------------------------------ the mutations

HUGE = "9" * 5000
VALUES = (
    "18446744073709551615", "18446744073709551616", "99999999999999999999999999", "9223372036854775808",
    "2147483648", "4294967296", "-2147483649", "1e400", "-1e400", "1e-400", "1.5e308", "-1", "-0", "0", "0.0",
    "1e-150", "1e-300", "5e-324", "1.7976931348623157e308", "1e19", "0.001",
    "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e19", "1.5", "+7", " 7 ", "7 8",
    "\u00b2", "\u0663", "\u0661\u0662\u0663", "\uff11\uff12", "\U0001d7d9", "\u00bd", "\u2167",
    "", " ", "\t\n  ", "\u00a0", "\u2028", HUGE, "1" + "0" * 400, "0" * 60 + "1",
    "0x1F", "0X7fffffffffff", "0xffffffffffffffff", "0x10000000000000000", "ff", "deadbeef", "0x", "x",
    "1_000", "1,000", "12abc", "ticks", "seconds", "MHz", "\u00e9t\u00e9", "\u65e5\u672c", "a\u0301",
    "\ufeff1", "&<>\"'", "]]>",
)
# Written into the document as they are (not escaped): control characters,
# references, markup inside values.
RAW = (
    "\x01", "1\x002", "\x1b[31m7", "\x7f", "&#1;", "&#x0;", "&#xD800;", "&#1114112;", "&#50;&#x32;",
    "&#x663;", "&amp;", "&lt;", "&big;", "&lol9;", "&ext;", "&undefined;", "<![CDATA[42]]>",
    "<![CDATA[1e400]]>", "4<!-- c -->2", "4<?pi x?>2", "<![CDATA[", "<!--", "&", "<", "\xff",
)
ATTRS = ("units", "mode", "pcbase", "offset", "class", "domain", "frequency", "interval", "type", "derived",
         "name", "lineno", "pc", "level", "load", "min", "max", "resolution", "outofrange", "version",
         "generator", "file", "mapper", "md5sum", "multiplexed", "unit")
ATTR_VALUES = (
    "count", "profile", "ticks", "seconds", "MHz", "10", "16", "8", "2", "0", "-1", "36", "1e400", "nan", "inf",
    "0x0", "0xffffffffffffffff", "0x1ffffffffffffffff", "18446744073709551615", "-0x10", "ff", "0x", "",
    "PAPI", "perfmon", "itimer", "null", "profil", "user", "kernel", "all", "(none)", "preset", "native", "yes",
    "no", "exit", "signal", "/bin/true", "/nonexistent", "/dev/zero", "/proc/self/mem", "/", "relative",
    "\u0663", "\u00b2", HUGE, "1e-400", "0.0", "1e9", "1e15", "4294967296",
)
_REALS = ("0", "0.5", "1", "-1", "1e400", "-1e400", "nan", "inf", "1e6", "1e7", "1e9", "1e10", "1e15", "1e16",
          "1e-400", "", " 2 ", "0x10", "\u0663")
ATTR_TABLE = {
    "units": ("ticks", "seconds", "MHz", "KB", "B", "minute", "", "TICKS", "ticks "),
    "mode": ("count", "profile", "", "COUNT", "x"),
    "pcbase": ("10", "16", "8", "2", "36", "0", "-16", "", "0x10", "1e1", "\u0661\u0660"),
    "offset": ("0", "0x0", "0xffffffffffffffff", "18446744073709551615", "0x10000000000000000", "-1", "0x", "",
               "ff", "1e3", "0x7fffffffffffffff", "\u0660x1"),
    "pc": ("0", "1", "ffffffffffffffff", "10000000000000000", "-1", "", "0x1000", "g", "\uff11", "1" * 60),
    "lineno": ("0", "-1", "-2", "2147483647", "2147483648", "", "x", "\u00b2", "1e3"),
    "class": ("PAPI", "perfmon", "itimer", "null", "profil", "", "x"),
    "domain": ("user", "kernel", "all", "none", "(none)", ""),
    "frequency": _REALS, "interval": ("1", "5", "15", "0", "-1", "1000000", "1000001", "nan", "", "1e400"),
    "type": ("preset", "native", "set", "full", "exit", "signal", "", "x"),
    "derived": ("yes", "no", ""),
    "name": ("task-clock", "PAPI_TOT_CYC", "PAPI_TOT_INS", "ITIMER_PROF", "ITIMER_REAL", "", "??", "x" * 300,
             "\u00e9v\u00e9nement", "a,b"),
    "level": ("0", "1", "-1", "99999999999999999999", "x", ""),
    "load": _REALS, "min": _REALS, "max": _REALS, "resolution": _REALS,
    "outofrange": ("0", "-1", "99999999999999999999", "x", ""),
    "version": ("", "0.1", "0.3", "perf_event", "1"), "generator": ("", "psuite", "PerfSuite psprocess 0.6.2"),
    "file": ("/bin/true", "/nonexistent", "/dev/zero", "/proc/self/mem", "/", "", "relative", "/tmp", "/etc/passwd",
             "/bin/sh"),
    "mapper": ("", "binutils", "psuite-dwarf"), "md5sum": ("", "x"), "multiplexed": ("yes", "no", ""),
    "unit": ("minute", ""),
}
TAGS = ("hwpcreport", "hwpceventdata", "hwpcevent", "hwpcprofiledata", "profileinfo", "profileevent",
        "threshold", "totalsamples", "module", "samples", "sample", "hwpcprofilereport", "executioninfo",
        "hwpcprofile", "period", "file", "function", "line", "modules", "multihwpcreport",
        "multihwpcprofilereport", "resourcereport", "pid", "thread", "date", "hostname", "domainname",
        "annotation", "wallclock", "cputime", "usertime", "systemtime", "machineinfo", "cpuinfo", "cpucount",
        "clockspeed", "cacheinfo", "cache", "size", "linesize", "associativity", "tlbinfo", "tlb", "entries",
        "memoryinfo", "syspagesize", "exitcode", "loadavgs", "loadavg", "maxloads", "maxload", "maxrss", "maxvm",
        "faults", "major", "minor", "swaps", "command", "x", "\u00e9l\u00e9ment")

# Elements whose text is a number (or a value) some reader checks.
VALUED = {"hwpcevent", "sample", "line", "pid", "thread", "wallclock", "usertime", "systemtime", "totalsamples",
          "threshold", "period", "clockspeed", "cpucount", "memoryinfo", "syspagesize", "size", "linesize",
          "associativity", "entries", "levels", "exitcode", "samples", "loadavg", "maxload", "maxrss", "maxvm",
          "major", "minor", "swaps", "annotation", "domainname", "family", "model", "revision", "cpuidinfo"}
MARK = "\ue000PSFUZZ{}\ue000"  # stands for a RAW value until the document is serialized

text_values = st.one_of(
    st.sampled_from(VALUES),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Co")), max_size=12),
)


FOCUS = ("hwpceventdata", "hwpcprofiledata", "hwpcprofile")  # what only one kind of document has


def _elements(root, draw=None) -> list:
    """The elements of the tree; given draw, half the time only those of
    what one kind of document alone has (its events, samples or lines),
    so that they are not crowded out by what every report has."""
    els = [el for el in root.iter() if isinstance(el.tag, str)]
    if draw is not None and draw(st.booleans()):
        els = [el for el in els if el.tag in FOCUS or any(a.tag in FOCUS for a in el.iterancestors())] or els
    return els


def _pick(draw, root, with_root: bool = True):
    """An element of the tree: two times in three one whose text some
    reader checks, chosen by its tag first (so that the many caches of a
    <machineinfo> do not crowd out the one <pid>)."""
    els = _elements(root, draw)
    if not with_root:
        els = [el for el in els if el is not root]
    if els and draw(_uniform(0, 2)):
        els = [el for el in els if el.tag in VALUED] or els
        tags = sorted({el.tag for el in els})
        tag = tags[draw(_uniform(0, len(tags) - 1))]
        els = [el for el in els if el.tag == tag]
    return els[draw(_uniform(0, len(els) - 1))] if els else None


def _set_text(draw, root, raw: dict) -> None:
    el = _pick(draw, root)
    if draw(_uniform(0, 4)) == 0:
        marker = MARK.format(len(raw))
        raw[marker] = draw(st.sampled_from(RAW))
        value = marker
    else:
        value = draw(text_values)
    if draw(st.booleans()):  # the element's own value ...
        for child in list(el):
            el.remove(child)
    with contextlib.suppress(ValueError):  # ... or text before its children
        el.text = value


def _set_attr(draw, root, raw: dict) -> None:
    """An attribute some reader looks at set to a value chosen for it, or
    to any value; or any attribute added to any element."""
    els = _elements(root, draw)
    names = sorted({name for el in els for name in el.attrib if name in ATTR_TABLE})
    if names and draw(_uniform(0, 3)):
        name = names[draw(_uniform(0, len(names) - 1))]
        els = [el for el in els if name in el.attrib]
        el = els[draw(_uniform(0, len(els) - 1))]
    else:
        el, name = _pick(draw, root), draw(st.sampled_from(ATTRS))
    choice = draw(_uniform(0, 5))
    value = draw(st.sampled_from(ATTR_TABLE.get(name, ATTR_VALUES)) if choice < 4 else
                 st.sampled_from(ATTR_VALUES) if choice == 4 else text_values)
    with contextlib.suppress(ValueError):
        el.set(name, value)


def _del_attr(draw, root, raw: dict) -> None:
    el = _pick(draw, root)
    if el.attrib:
        del el.attrib[draw(st.sampled_from(sorted(el.attrib)))]


def _delete(draw, root, raw: dict) -> None:
    el = _pick(draw, root, with_root=False)
    if el is not None:
        el.getparent().remove(el)


def _duplicate(draw, root, raw: dict) -> None:
    el = _pick(draw, root, with_root=False)
    if el is not None:
        parent = el.getparent()
        at = parent.index(el) + 1
        small = sum(1 for _ in el.iter()) < 5 and len(etree.tostring(root)) < 200_000
        for _ in range(draw(st.sampled_from((1, 1, 2, 50, 500) if small else (1, 2)))):
            parent.insert(at, copy.deepcopy(el))


def _reorder(draw, root, raw: dict) -> None:
    el = _pick(draw, root, with_root=False)
    if el is not None:
        parent = el.getparent()
        parent.remove(el)
        parent.insert(draw(_uniform(0, len(parent))), el)


def _nest_wrongly(draw, root, raw: dict) -> None:
    """An element (or a copy of one of its ancestors) moved into another
    element it does not belong in."""
    el = _pick(draw, root, with_root=False)
    target = _pick(draw, root)
    if el is None:
        return
    if el in target.iterancestors() or el is target or draw(st.booleans()):
        el = copy.deepcopy(el if draw(st.booleans()) else root)
    else:
        el.getparent().remove(el)
    target.insert(draw(_uniform(0, len(target))), el)


def _rename(draw, root, raw: dict) -> None:
    _pick(draw, root).tag = draw(st.sampled_from(TAGS))


def _add_child(draw, root, raw: dict) -> None:
    el = _pick(draw, root)
    child = etree.Element(draw(st.sampled_from(TAGS)))
    with contextlib.suppress(ValueError):
        child.text = draw(text_values)
    el.insert(draw(_uniform(0, len(el))), child)


VALUE_OPS = (_set_text, _set_attr)
TREE_OPS = (_set_text, _set_attr, _del_attr, _delete, _duplicate, _reorder, _nest_wrongly, _rename, _add_child)

LAUGHS = '<!ENTITY lol0 "lol">' + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
SUBSETS = (
    "",
    '<!ENTITY big "18446744073709551616">' + LAUGHS,
    '<!ENTITY ext SYSTEM "file:///etc/passwd"><!ENTITY big "1e400">',
    '<!ENTITY % pe SYSTEM "file:///etc/passwd"> %pe; <!ENTITY big "7">',
    '<!ENTITY lol "' + "lol" * 30000 + '"><!ENTITY lol9 "' + "&lol;" * 3000 + '"><!ENTITY big "0">',
    '<!ATTLIST hwpcreport mode CDATA "profile"><!ELEMENT hwpcevent ANY><!ENTITY big "\u0663">',
)


ENCODINGS = ("UTF-8", "UTF-16", "UTF-16LE", "ISO-8859-1", "US-ASCII", "latin-1", "x-unknown", "UTF-16 but UTF-8",
             "ISO-8859-1 but UTF-8", "no declaration, UTF-16", "UTF-8 with BOM", "UTF-32")
AROUND = ("<!-- comment -->", "<?pi data?>", "<?xml-stylesheet href='x'?>", "\n\n", "<!-- -- -->",
          "<![CDATA[x]]>", "<?xml version='1.0'?>")
TAILS = ("\n", "<!-- tail -->", "<?pi?>", "<extra/>", "junk", "\x00")
# Most documents are well-formed, so that the readers see the values; one
# layer of damage to the document as a whole now and then.
LAYERS = ("none",) * 8 + ("encoding", "encoding", "doctype", "subset", "subset", "around", "truncate", "flip")


def _prologue(draw, text: str, tag: str, seed: bytes) -> bytes:
    """text (a serialized root) as bytes, with one or two layers of
    declarations, DOCTYPEs, markup around the root or damage."""
    layers = [draw(st.sampled_from(LAYERS))]
    if layers[0] != "none" and draw(_uniform(0, 3)) == 0:
        layers.append(draw(st.sampled_from(LAYERS)))
    head = ""
    if "doctype" in layers:
        kind = draw(st.sampled_from(("seed", "SYSTEM", "PUBLIC", "other root", "empty subset")))
        if kind == "seed":
            found = re.search(rb"<!DOCTYPE[^>]*>", seed)
            head = found.group().decode() if found else ""
        else:
            head = {"SYSTEM": f'<!DOCTYPE {tag} SYSTEM "/nonexistent/{tag}.dtd">',
                    "PUBLIC": f'<!DOCTYPE {tag} PUBLIC "-//x//y" "file:///etc/passwd">',
                    "other root": "<!DOCTYPE hwpcprofilereport>", "empty subset": f"<!DOCTYPE {tag} []>"}[kind]
    if "subset" in layers:
        head = f"<!DOCTYPE {tag} [{draw(st.sampled_from(SUBSETS))}]>"
    if "around" in layers:
        text = draw(st.sampled_from(AROUND)) + text + draw(st.sampled_from(("",) + TAILS))
    text = head + text
    data = text.encode("utf-8", "surrogatepass")
    if "encoding" in layers:
        encoding = draw(st.sampled_from(ENCODINGS))
        if encoding == "no declaration, UTF-16":
            data = text.encode("utf-16", "surrogatepass")
        elif encoding == "UTF-8 with BOM":
            data = b"\xef\xbb\xbf" + data
        elif encoding.endswith("but UTF-8"):
            data = f'<?xml version="1.0" encoding="{encoding.split()[0]}"?>{text}'.encode("utf-8", "surrogatepass")
        else:
            codec = {"x-unknown": "utf-8", "US-ASCII": "ascii"}.get(encoding, encoding)
            data = f'<?xml version="1.0" encoding="{encoding}"?>{text}'.encode(
                codec, "xmlcharrefreplace" if codec in ("latin-1", "ISO-8859-1", "ascii") else "surrogatepass")
    if "truncate" in layers:
        data = data[:len(data) * draw(_uniform(0, 1000)) // 1000]
    if "flip" in layers:
        for _ in range(draw(_uniform(1, 4))):
            if data:
                at = len(data) * draw(_uniform(0, 999)) // 1000
                data = data[:at] + bytes([data[at] ^ draw(_uniform(1, 255))]) + data[at + 1:]
    return data


@st.composite
def documents(draw, names: tuple[str, ...] = SEED_NAMES) -> bytes:
    """A mutated seed of one of the given kinds, as the bytes of a file."""
    name = draw(st.sampled_from(names))
    seed = SEEDS[name]
    root = etree.fromstring(seed, etree.XMLParser(resolve_entities=False, no_network=True, remove_blank_text=True))
    raw: dict[str, str] = {}
    # Three times in five a few values changed (readers refuse the first
    # bad one, so more would hide the others); else any changes at all.
    ops = VALUE_OPS if draw(_uniform(0, 4)) < 3 else TREE_OPS
    for _ in range(draw(_uniform(0 if ops is TREE_OPS else 1, 3 if ops is VALUE_OPS else 5))):
        draw(st.sampled_from(ops))(draw, root, raw)
    text = etree.tostring(root, encoding="unicode")
    for marker, value in raw.items():
        text = text.replace(marker, value)
    return _prologue(draw, text, root.tag, seed)


FORMATS = ("text", "json", "csv", "xml")


def _run_document(data: bytes, other: bytes, combine_fmt: str, together: str) -> None:
    a, b = FUZZDIR / "a.xml", FUZZDIR / "b.xml"
    a.write_bytes(data)
    b.write_bytes(other)
    for fmt in FORMATS:
        psprocess(["-f", fmt, str(a)], fmt)
    psprocess([*(["-c"] if together == "-c" else []), "-f", combine_fmt, str(a), str(b)], combine_fmt)


def _document_test(name: str, kinds: tuple[str, ...], examples: int):
    names = tuple(n for k in kinds for n in KINDS[k])

    @pytest.mark.usefixtures("seeds")
    @fuzz_settings(examples)
    @given(data=documents(names), other=documents(), combine_fmt=st.sampled_from(FORMATS),
           together=st.sampled_from(("-c", "-c", "-c", "two inputs")))
    def test(data, other, combine_fmt, together):
        RAN.add(name)
        _run_document(data, other, combine_fmt, together)

    return test


# Examples per kind of document; each runs psprocess five times (four
# formats, then -c with a second mutated document of any kind).
test_fuzz_counting_reports = _document_test("counting", ("count",), 300)
test_fuzz_raw_profiles = _document_test("raw profiles", ("profile",), 300)
test_fuzz_processed_profiles = _document_test("processed profiles", ("processed",), 200)
test_fuzz_multi_documents = _document_test("multi-documents", ("multi", "multiprofile"), 250)
test_fuzz_resource_reports = _document_test("resource reports", ("resource",), 150)


RAW = KINDS["profile"]
CUBED = tuple(n for k in ("profile", "processed", "multiprofile", "count", "multi") for n in KINDS[k])


@pytest.mark.usefixtures("seeds")
@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_exports(data):
    """--gmon and --vprof of mutated raw profiles (they need the sampled
    PCs), --cube of mutated profiles and counting reports, alone or (-c)
    with a second one."""
    RAN.add("exports")
    out = FUZZDIR / "exports"
    out.mkdir(exist_ok=True)
    export = data.draw(st.sampled_from(("--gmon", "--vprof", "--cube")), label="export")
    argv = [export, str(out / ("run.cubex" if export == "--cube" else "run.out")), "--force"]
    if export != "--cube" and data.draw(_uniform(0, 3), label="module?") == 0:
        argv += ["--module", data.draw(st.sampled_from(("/bin/true", "work", "/nonexistent/libm.so.6", "")))]
    a, b = FUZZDIR / "a.xml", FUZZDIR / "b.xml"
    a.write_bytes(data.draw(documents(RAW if export != "--cube" else CUBED), label="document"))
    argv.append(str(a))
    if export == "--cube" and data.draw(st.booleans(), label="-c"):
        b.write_bytes(data.draw(documents(CUBED), label="second document"))
        argv = ["-c", *argv, str(b)]
    status, out, err = run_inprocess("psprocess", argv)
    if status == 0:  # "psprocess: wrote FILE (...)" on stderr
        STATS[("psprocess exports", "exit 0")] += 1
        # a profile naming a real binary with another build-id is warned about (once), then written
        lines = err.splitlines()
        assert out == "" and lines and lines[-1].startswith("psprocess: wrote "), err
        assert all(line.startswith("psprocess: warning: ") and "build-id" in line for line in lines[:-1]), err
    else:
        check("psprocess", status, out, err, label="psprocess exports")


METRICS = {
    "mine.xml": '<psmetrics class="PAPI"><metric><name>Mine</name><description>m</description><definition><apply>'
                "<divide><ci>PAPI_TOT_INS</ci><ci>cpusecs</ci></divide></apply></definition></metric></psmetrics>",
    "zero.xml": '<psmetrics class="PAPI"><metric><name>Zero</name><description>z</description><definition><apply>'
                "<divide><ci>task-clock</ci><cn>0</cn></divide></apply></definition></metric></psmetrics>",
    "huge.xml": '<psmetrics class="PAPI"><metric><name>Huge</name><description>h</description><definition><apply>'
                "<times><ci>task-clock</ci><cn>1e308</cn></times></apply></definition></metric></psmetrics>",
    "deep.xml": '<psmetrics class="PAPI"><metric><name>Deep</name><description>d</description><definition><apply>'
                + "<abs>" * 250 + "<ci>task-clock</ci>" + "</abs>" * 250 + "</apply></definition></metric></psmetrics>",
    "broken.xml": "<psmetrics><metric>", "other.xml": "<hwpcreport/>", "empty.xml": "",
    "unknown.xml": '<psmetrics class="PAPI"><metric><name>U</name><description>u</description><definition><apply>'
                   "<ci>NO_SUCH_EVENT</ci></apply></definition></metric></psmetrics>",
}


@st.composite
def psprocess_argv(draw) -> list[str]:
    """psprocess's own options around the seeds (unchanged) and inputs that
    are no documents."""
    d = FUZZDIR / "options"
    inputs = [str(FUZZDIR / f"{n}.xml") for n in ("psuite_count", "psuite_profile", "psuite_resource",
                                                   "original_count", "psuite_multi")]
    inputs += [str(d / "missing.xml"), str(d), "/dev/null", "ftp://example.org/x.xml", "http://[::1",
               "http://exa mple.org/", str(FUZZDIR / "psuite_*.xml"), str(d / "nomatch*.xml"), ""]
    n = next(_serial)
    outputs = [str(d / f"out{n}"), str(d / "exists.txt"), str(d), str(d / "no" / "x"), "", "/dev/full",
               str(d / f"out{n}.cubex"), str(d / f"out{n}\n.txt")]
    with_value = {"-f": ("text", "json", "csv", "xml", "html", ""), "--format": ("json", "XML"),
                  "-m": tuple(str(d / m) for m in METRICS) + (str(d / "missing.xml"),),
                  "--threshold": ("0", "5", "100", "-1", "nan", "inf", "1e400", "x", ""),
                  "--rate": ("100", "0", "-5", "nan", "inf", "1e-320", "1e308", "x", ""),
                  "--module": ("/bin/true", "work", ""), "-o": tuple(outputs), "--write-config": tuple(outputs),
                  "--gmon": tuple(outputs), "--vprof": tuple(outputs), "--cube": tuple(outputs)}
    plain = ("-x", "-c", "--combine", "--calibrate", "--no-standard-metrics", "--force", "--version", "-h", "--bogus",
             "-xc", "--", "--bogus=a\nb")
    argv = []
    for _ in range(draw(_uniform(0, 4))):
        if draw(st.booleans()):
            argv.append(draw(st.sampled_from(plain)))
        else:
            flag = draw(st.sampled_from(sorted(with_value)))
            argv += [flag, draw(st.sampled_from(with_value[flag]))]
    argv += [draw(st.sampled_from(inputs)) for _ in range(draw(_uniform(0, 2)))]
    return argv


@pytest.mark.usefixtures("seeds")
@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_psprocess_options(data):
    RAN.add("psprocess options")
    d = FUZZDIR / "options"
    d.mkdir(exist_ok=True)
    (d / "exists.txt").write_text("x")
    for name, text in METRICS.items():
        (d / name).write_text(text)
    argv = data.draw(psprocess_argv())
    with _environment(d, ()):
        status, out, err = run_inprocess("psprocess", argv)
    if status == 0:
        STATS[("psprocess options", "exit 0")] += 1
        out.encode("utf-8")
        assert all(line.startswith("psprocess: ") for line in err.splitlines()), err
    else:
        check("psprocess", status, out, err, label="psprocess options")



SUBCOMMANDS = ("diff", "merge", "mean", "compare", "cut", "stat", "dump")


@st.composite
def subcommand_argv(draw) -> list[str]:
    """The algebra subcommands (psprocess diff|merge|mean|compare|cut|stat|dump)
    with their options, over documents, CUBE files (psuite's and a damaged
    one) and inputs that are neither."""
    d = FUZZDIR / "algebra"
    inputs = [str(FUZZDIR / f"{n}.xml") for n in ("psuite_count", "psuite_profile", "psuite_resource",
                                                   "original_count", "psuite_multi", "original_profile")]
    inputs += [str(d / "count.cubex"), str(d / "profile.cubex"), str(d / "damaged.cubex"),
               str(d / "missing.cubex"), str(d), "/dev/null", ""]
    n = next(_serial)
    outputs = [str(d / f"out{n}.cubex"), str(d / "exists.cubex"), str(d), str(d / "no" / "x.cubex"), "",
               "/dev/full", str(d / f"out{n}.txt")]
    with_value = {"-o": tuple(outputs), "--folded": tuple(outputs), "-f": ("text", "json", "csv", "R", "gnuplot", ""),
                  "--tolerance": ("5%", "samples=100", "time=0.5%", "-1", "nan", "x=", "=5", "1e400%", ""),
                  "--root": ("main", "work", "nope", "[", ""), "--prune": ("main", "work", "nope", "(", ""),
                  "-m": ("samples", "time", "nope", "samples,time", ""), "-c": ("all", "roots", "leafs", "level=1",
                                                                              "name=w.*", "0,1", "x", "level=-1"),
                  "-x": ("incl", "excl", "x"), "-t": ("aggr", "0", "5", "-1", "x"), "-r": ("main", "")}
    plain = ("-C", "--force", "-h", "--bogus", "--metric-tree", "-r")
    argv = [draw(st.sampled_from(SUBCOMMANDS))]
    for _ in range(draw(_uniform(0, 3))):
        if draw(st.booleans()):
            argv.append(draw(st.sampled_from(plain)))
        else:
            flag = draw(st.sampled_from(sorted(with_value)))
            argv += [flag, draw(st.sampled_from(with_value[flag]))]
    argv += [draw(st.sampled_from(inputs)) for _ in range(draw(_uniform(0, 3)))]
    return argv


@pytest.mark.usefixtures("seeds")
@fuzz_settings(250)
@given(data=st.data())
def test_fuzz_algebra_subcommands(data):
    """Every outcome is a result (0), compare's "beyond" (1) or one line
    and status 2: never a traceback, never an existing file replaced."""
    RAN.add("psprocess subcommands")
    d = FUZZDIR / "algebra"
    if not (d / "profile.cubex").exists():
        d.mkdir(exist_ok=True)
        for name in ("count", "profile"):
            status, _, err = run_inprocess("psprocess", ["--cube", str(d / f"{name}.cubex"),
                                                         str(FUZZDIR / f"psuite_{name}.xml")])
            assert status == 0, err
        whole = (d / "profile.cubex").read_bytes()
        (d / "damaged.cubex").write_bytes(whole[: len(whole) // 2] + b"\0" * 512)
    (d / "exists.cubex").write_bytes(b"keep")
    argv = data.draw(subcommand_argv())
    with _environment(d, ()):
        status, out, err = run_inprocess("psprocess", argv)
    assert (d / "exists.cubex").read_bytes() == b"keep", argv
    STATS[("psprocess subcommands", f"exit {status}")] += 1
    assert "Traceback" not in err, err
    if status == 0 or status == 1 and argv[0] == "compare":
        out.encode("utf-8")
    else:  # one line, named after the subcommand ("psprocess diff: ...")
        assert status == 2 and len(err.splitlines()) == 1, (argv, status, err)
        assert err.startswith((f"psprocess {argv[0]}: ", "psprocess: ")), err


# ------------------------------------------------ the real command, sampled

SUBPROCESS_CASES = 100


def test_fuzz_real_command_matches_the_harness(seeds, fuzzdir):
    """100 runs of mutated documents (alone, or -c with themselves)
    through `python -m psuite.psprocess`:
    the same status, output and message as in-process, and the contract
    (no traceback, no crash by a signal) for the real process."""
    RAN.add("real command")
    cases: list[tuple[bytes, list[str], str]] = []  # (document, ["-c"] or [], format)

    @fuzz_settings(SUBPROCESS_CASES)
    @given(data=documents(), fmt=st.sampled_from(FORMATS), combine=st.booleans())
    def collect(data, fmt, combine):
        cases.append((data, ["-c"] if combine else [], fmt))

    collect()
    work = fuzzdir / "real"
    work.mkdir(exist_ok=True)
    jobs = []
    for i, (data, extra, fmt) in enumerate(cases):
        path = work / f"case{i:03}.xml"
        path.write_bytes(data)
        jobs.append([*extra, "-f", fmt, str(path), *([str(path)] if extra else [])])

    def real(argv):
        return subprocess.run([sys.executable, "-m", "psuite.psprocess", *argv], capture_output=True, timeout=120)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(real, jobs))
    for argv, proc in zip(jobs, results, strict=True):
        assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: psprocess {argv}"
        out, err = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8", "replace")
        check("psprocess", proc.returncode, out, err, argv[argv.index("-f") + 1], label="psprocess, real command")
        status, i_out, i_err = run_inprocess("psprocess", argv)
        assert (status, i_err) == (proc.returncode, err), (argv, "in process:", status, i_err, "real:", err)
        assert i_out == out, (argv, "in process:", i_out[:2000], "real:", out[:2000])


# ------------------------------------------------------------ option parsing

PSINV_TOKENS = ("-x", "--xml", "--json", "-e", "--events", "--available", "--force", "--version", "-h", "--help",
                "-o", "--output", "-xe", "-ex", "--jso", "--ev", "--xml=yes", "--output=", "-", "--", "junk",
                "-z", "", "-oo", "-e--json", "\u00e9", "--force=1")


@st.composite
def psinv_argv(draw, outdir: Path) -> list[str]:
    n = next(_serial)
    paths = (str(outdir / f"new{n}.txt"), str(outdir / "exists.txt"), str(outdir), str(outdir / "no" / "x.txt"),
             "", "/dev/null", "/dev/full", str(outdir / f"new{n}\n.txt"), str(outdir / f"new{n}\udcff.txt"),
             str(outdir / "exists.txt") + "/x")
    argv = []
    for _ in range(draw(_uniform(0, 5))):
        token = draw(st.sampled_from(PSINV_TOKENS))
        argv.append(token)
        if token in ("-o", "--output") and draw(_uniform(0, 5)):
            argv.append(draw(st.sampled_from(paths)))
        elif token == "--output=":
            argv[-1] += draw(st.sampled_from(paths))
    return argv


_serial = itertools.count()


@pytest.mark.usefixtures("fuzzdir")
@fuzz_settings(150)
@given(data=st.data())
def test_fuzz_psinv_options(data):
    RAN.add("psinv options")
    outdir = FUZZDIR / "psinv"
    outdir.mkdir(exist_ok=True)
    (outdir / "exists.txt").write_text("x")
    argv = data.draw(psinv_argv(outdir))
    with _environment(outdir, ()):  # "-oo" writes ./o
        status, out, err = run_inprocess("psinv", argv)
    fmt = "json" if {"--json"} & set(argv) and "-o" not in argv else None
    check("psinv", status, out, err)
    if status == 0 and fmt == "json" and not {"-h", "--help", "--version"} & set(argv) and out:
        json.loads(out, parse_constant=_no_constant)


EVENTLIST = ('<ps_hwpc_eventlist class="PAPI" domain="user"><ps_hwpc_event type="native" name="task-clock"/>'
             "</ps_hwpc_eventlist>")
PROFILE_CONFIG = ('<ps_hwpc_profile class="itimer"><ps_hwpc_event name="ITIMER_PROF" threshold="1000"/>'
                  "</ps_hwpc_profile>")


@st.composite
def psrun_argv(draw, outdir: Path) -> list[str]:
    configs = {"events.xml": EVENTLIST, "profile.xml": PROFILE_CONFIG, "bad.xml": "<ps_hwpc_eventlist>",
               "empty.xml": "", "huge.xml": EVENTLIST.replace("task-clock", HUGE),
               "laughs.xml": f"<!DOCTYPE ps_hwpc_eventlist [{SUBSETS[1]}]><ps_hwpc_eventlist>"
                             '<ps_hwpc_event name="&lol9;"/></ps_hwpc_eventlist>',
               "nan.xml": PROFILE_CONFIG.replace("1000", "nan")}
    for name, text in configs.items():
        if not (outdir / name).exists():
            (outdir / name).write_text(text)
    values = {
        "-e": ("task-clock", "task-clock,page-faults", "", ",", " , ", "nosuchevent", "PAPI_TOT_CYC",
               "task-clock,", "x" * 300, "\u00e9v\u00e9nement", "r1234", "rZZZ", "-e"),
        "-c": (*(str(outdir / n) for n in configs), str(outdir / "missing.xml"), str(outdir), "/dev/null", ""),
        "--domain": ("user", "kernel", "all", "none", "", "USER"),
        "--backend": ("PAPI", "perf_event", "papi", "perf", ""),
        "-o": ("prefix", "a/b", "", ".", "..", "x" * 300, "\u00e9", "-o"),
        "-d": (str(outdir), str(outdir / "missing"), str(outdir / "events.xml"), "", "/nonexistent"),
        "--profile": ("ITIMER_PROF", "ITIMER_REAL", "ITIMER_VIRTUAL", "task-clock", "PAPI_TOT_CYC", "bogus", "",
                      "itimer_prof"),
        "--period": ("1000", "0", "-1", "nan", "inf", "1e3", "99999999999999999999", "\u00b2", "", "1.5",
                     "2147483648"),
        "--interval": ("0.05", "0", "-1", "nan", "inf", "1e-400", "3601", "0.01", "", "x"),
    }
    flags = {"-e": "-e", "--events": "-e", "-c": "-c", "--config": "-c", "--domain": "--domain",
             "--backend": "--backend", "-o": "-o", "--output": "-o", "-d": "-d", "--directory": "-d",
             "--profile": "--profile", "--period": "--period", "--interval": "--interval"}
    plain = ("-q", "--quiet", "-p", "--per-thread", "-R", "--resources", "-f", "--follow", "-h", "--help",
             "--version", "--bogus", "-Z", "-qR", "-pq", "--qui", "--per", "--bogus=a\nb")
    argv = []
    for _ in range(draw(_uniform(0, 4))):
        if draw(st.booleans()):
            argv.append(draw(st.sampled_from(plain)))
            continue
        flag = draw(st.sampled_from(sorted(flags)))
        value = draw(st.sampled_from(values[flags[flag]]))
        style = draw(st.sampled_from(("separate", "separate", "attached", "missing")))
        if style == "separate":
            argv += [flag, value]
        elif style == "attached":
            argv.append(f"{flag}={value}" if flag.startswith("--") else flag + value)
        else:
            argv.append(flag)
    program = draw(st.sampled_from(("/bin/true", "/bin/true", "/bin/true", "true", "--", "/nonexistent/prog",
                                    str(outdir), str(outdir / "events.xml"), "")))
    argv.append(program)
    if program == "--":
        argv.append("/bin/true")
    return argv


@pytest.mark.usefixtures("fuzzdir")
@fuzz_settings(150)
@given(data=st.data())
def test_fuzz_psrun_options(data):
    """psrun's option errors are one line and exit 2; otherwise /bin/true
    runs and its status (0) is psrun's.  The library's own refusals (an
    event that does not exist) come from the program, exit 2, one line."""
    RAN.add("psrun options")
    outdir = FUZZDIR / "psrun"
    outdir.mkdir(exist_ok=True)
    argv = data.draw(psrun_argv(outdir))
    # psrun is the native command: run as a user runs it (not in-process)
    env = {k: v for k, v in os.environ.items() if k not in ("PS_HWPC_CONFIG", "PSUITE_OUTPUT_DIR",
                                                            "PSUITE_OUTPUT_PREFIX")}
    p = run_tool("psrun", *argv, cwd=str(outdir), env=env, timeout=CASE_TIMEOUT_S,
                 errors="surrogateescape")
    status, out, err = p.returncode, p.stdout, p.stderr
    if status == 0:
        STATS[("psrun", "exit 0")] += 1
        assert "Traceback" not in err
        return
    check("psrun", status, out, err)


@pytest.mark.parametrize("tool, argv", [
    ("psinv", ["--", "-o", "new\n.txt"]),  # found by the campaign
    ("psprocess", ["--bogus=a\nb", "r.xml"]),
    ("psrun", ["--bogus=a\nb", "/bin/true"]),
])
def test_usage_error_quoting_a_line_break(tool, argv):
    """Found by the campaign: an argument with a line break in argparse's
    usage error split the one line of the contract in two (`psinv -- -o
    $'new\\n.txt'` said "psinv: unrecognized arguments: -- -o new" and
    ".txt (see psinv --help)"); fixed in psuite/cli_parser.py (950a94b,
    outside this change)."""
    p = run_tool(tool, *argv)
    assert p.returncode == 2
    assert len(p.stderr.splitlines()) == 1, p.stderr


@pytest.mark.parametrize("how", [["-e", "nosuchevent"], ["--profile", "bogus"]])
def test_psrun_resource_report_after_a_refused_configuration(tmp_path, how):
    """Found by the campaign: `psrun -R -e NOSUCHEVENT /bin/true` exited 2
    with the library's one-line refusal, then a second line, psrun's note
    of a resource report of the program that never ran (or, with a prefix
    too long for a file name, that it could not be saved, even with -q).
    The library now tells psrun (through -R's resource file) that it
    refused: one line, no resource report."""
    p = run_tool("psrun", "-R", "-d", str(tmp_path), *how, "/bin/true")
    assert p.returncode == 2
    assert len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith("psrun: ")
    assert not list(tmp_path.glob("*.xml"))


@contextlib.contextmanager
def _environment(cwd: Path, unset: tuple[str, ...]):
    """Run in cwd without the given environment variables."""
    here, saved = os.getcwd(), {v: os.environ.pop(v) for v in unset if v in os.environ}
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        os.environ.update(saved)


# ------------------------------------------------------ regression cases
# The minimal inputs behind each traceback (or hang) the campaign found.

def raw_profile(module: str = "/bin/true", offset: str = "0x0", samples: str = '<sample pc="1000">3</sample>',
                thread: str = "0") -> str:
    return ('<hwpcreport version="0.3" mode="profile"><date>d</date><hostname>h</hostname><domainname/>'
            f"<pid>9</pid><thread>{thread}</thread><wallclock units='seconds'>1</wallclock>"
            "<cputime><usertime>1</usertime><systemtime>0</systemtime></cputime>"
            "<hwpcprofiledata class='itimer'><profileinfo><profileevent domain='user' type='native' "
            "name='ITIMER_PROF' derived='no'><threshold>1000</threshold></profileevent></profileinfo>"
            f"<totalsamples>3</totalsamples><module file='{module}' offset='{offset}'><samples pcbase='16'>"
            f"{samples}</samples></module></hwpcprofiledata></hwpcreport>")


def count_report(pid: int, counts: dict[str, str], thread: str = "", usertime: str = "1") -> str:
    events = "".join(f'<hwpcevent type="preset" name="{n}" derived="no">{c}</hwpcevent>' for n, c in counts.items())
    return (f'<hwpcreport version="0.3" mode="count"><date>d</date><hostname>h</hostname><domainname/>'
            f"<pid>{pid}</pid>{f'<thread>{thread}</thread>' if thread else ''}<wallclock units='seconds'>2"
            f"</wallclock><cputime><usertime>{usertime}</usertime><systemtime>0</systemtime></cputime>"
            f"<hwpceventdata class='PAPI' domain='user' multiplexed='no'>{events}</hwpceventdata></hwpcreport>")


def regression(argv: list[str]) -> tuple[int, str, str]:
    """psprocess argv (in process, as the campaign runs it), the contract
    checked."""
    fmt = argv[argv.index("-f") + 1] if "-f" in argv else "text"
    status, out, err = run_inprocess("psprocess", argv)
    check("psprocess", status, out, err, fmt, label="psprocess regressions")
    return status, out, err


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("offset, samples", [
    ("0xffffffffffffffff", '<sample pc="1000">3</sample>'),  # OverflowError: can't convert negative number
    ("18446744073709551615", '<sample pc="1000">3</sample>'),  # the same offset in decimal
    ("0x5000", '<sample pc="0">3</sample>'),
])
def test_regression_pc_below_module_offset_is_refused(tmp_path, fmt, offset, samples):
    doc = tmp_path / "prof.xml"
    doc.write_text(raw_profile("/bin/true", offset, samples))
    status, _, err = regression(["-f", fmt, str(doc)])
    assert status == 2 and "<sample pc>" in err and "below the load address" in err


def test_regression_address_below_offset_resolves_to_unknown():
    """psuite.read's model, resolved through the API: such a PC is "??"."""
    from psuite.analysis import srcmap
    from psuite.model.report import ModuleSamples

    module = ModuleSamples(file="/bin/true", offset=0x5000, samples={0x1000: 2, 0x5000 + 0x10: 1})
    assert srcmap.resolve_module_pcs(module)[0x1000] == ("??", "??", 0)


@pytest.mark.parametrize("fmt", ("csv", "json", "text"))
def test_regression_combined_document_among_other_inputs(tmp_path, fmt):
    """AttributeError: 'MultiReport' object has no attribute 'source' (csv);
    json called the combined document a counting report."""
    single, multi = tmp_path / "one.xml", tmp_path / "multi.xml"
    single.write_text(count_report(1, {"PAPI_TOT_CYC": "10"}))
    multi.write_text('<multihwpcreport version="0.3">' + count_report(2, {"PAPI_TOT_CYC": "20"})
                     + count_report(3, {"PAPI_TOT_CYC": "30"}) + "</multihwpcreport>")
    status, out, _ = regression(["-f", fmt, str(single), str(multi)])
    assert status == 0
    if fmt == "csv":
        assert [r[2] for r in csv.reader(io.StringIO(out)) if r[4] == "event"] == ["1", "2", "3"]
    elif fmt == "json":
        data = json.loads(out)
        assert data["schema"] == "psuite.report/1"
        assert [r["kind"] for r in data["reports"]] == ["count", "multi"]
        assert data["reports"][1]["statistics"][0]["sum"] == 50


@pytest.mark.parametrize("fmt", FORMATS)
def test_regression_statistics_of_values_near_float_range(tmp_path, fmt):
    """OverflowError: (34, 'Numerical result out of range') in the standard
    deviation: a decimal count of 1e-300 cycles makes instructions per
    cycle 5e302, whose square does not fit a float."""
    paths = []
    for pid, cycles in ((1, "1e-300"), (2, "3000"), (3, "8.060915309218153e-224")):
        p = tmp_path / f"r{pid}.xml"
        p.write_text(count_report(pid, {"PAPI_TOT_CYC": cycles, "PAPI_TOT_INS": "500"}))
        paths.append(str(p))
    status, out, _ = regression(["-c", "-f", fmt, *paths])
    assert status == 0
    if fmt == "json":
        ipc = {s["name"]: s for s in json.loads(out)["statistics"]}["Instructions per cycle"]
        assert ipc["max"] == pytest.approx(5e302) and ipc["stddev"] == pytest.approx(2.357e302, rel=1e-3)


def test_regression_statistics_helpers_stay_finite():
    from psuite.analysis import combine

    s = combine.statistic("m", "metric", [(1.7e308, "a"), (1.7e308, "b"), (-1e308, "c")])
    assert s.sum == float("inf") and s.mean == pytest.approx(8e307) and s.q3 == 1.7e308
    assert s.stddev == pytest.approx(1.2728e308, rel=1e-4) and s.imbalance == pytest.approx(2.125)
    assert combine.total_and_mean([1e308, 1e308, -1e308])[0] == pytest.approx(1e308)


@pytest.mark.parametrize("argv, expected", [
    (["--calibrate", "--rate", "nan"], "--rate: takes a number"),  # ValueError: cannot convert float NaN
    (["--calibrate", "--rate", "1e-320"], "--rate: takes a number"),  # OverflowError: float infinity
    (["--threshold", "nan"], "--threshold: takes a number"),
    (["--threshold", "-5"], "--threshold: takes a number"),
])
def test_regression_numeric_options_are_checked(tmp_path, argv, expected):
    doc = tmp_path / "r.xml"
    doc.write_text(count_report(1, {"PAPI_TOT_CYC": "10"}))
    status, _, err = regression([*argv, str(doc)])
    assert status == 2 and expected in err


def test_regression_wallclock_ticks_of_a_tiny_clock(tmp_path):
    """1e-300 MHz made the wallclock 5e303 s (and its XML unreadable)."""
    doc = tmp_path / "r.xml"
    doc.write_text(original_count(1, {"PAPI_TOT_CYC": 10}).replace("2534.000", "1e-300"))
    status, _, err = regression(["-f", "json", str(doc)])
    assert status == 2 and '<wallclock units="ticks">' in err and "more than a century" in err


def test_regression_failing_run_says_no_warning(tmp_path):
    """A profile whose program path is a directory (no build of it: "not
    there") and a --module it lacks: the error line alone; the same profile
    processed is warned about."""
    doc = tmp_path / "prof.xml"
    doc.write_text(raw_profile(str(tmp_path)).replace(
        "<wallclock", f"<annotation>build-id {'ab' * 20}</annotation><wallclock"))
    status, _, err = regression(["--gmon", str(tmp_path / "gmon.out"), "--module", "/nonexistent/libm.so.6",
                                 str(doc)])
    assert status == 2 and "no samples in module /nonexistent/libm.so.6" in err
    status, out, err = regression([str(doc)])
    assert status == 0 and "binary not found" in out
    [line] = err.splitlines()
    assert line.startswith(f"psprocess: warning: {tmp_path} is not there (build-id "), line


@pytest.mark.parametrize("export, samples, expected", [
    # MemoryError / OverflowError: a histogram bin for every 2 bytes of 2^64
    ("--gmon", '<sample pc="1000">3</sample><sample pc="fffffffffffffff0">1</sample>', "a gmon.out histogram"),
    # a loop of 2^62 / 65,535 entries: a hang
    ("--vprof", '<sample pc="1000">4611686018427387904</sample>', "too many samples for vmon.out"),
    # struct.error: 'i' format requires -2147483648 <= number <= 2147483647
    ("--vprof", '<sample pc="1000">3</sample><sample pc="100001000">1</sample>', "32-bit offsets"),
])
def test_regression_exports_refuse_what_the_format_cannot_hold(tmp_path, export, samples, expected):
    doc = tmp_path / "prof.xml"
    doc.write_text(raw_profile("/bin/true", "0x0", samples))
    start = time.monotonic()
    status, _, err = regression([export, str(tmp_path / "out"), str(doc)])
    assert status == 2 and expected in err and time.monotonic() - start < 30


@pytest.mark.parametrize("thread", ["\u00b2", "main", "9" * 5000, "1.5"])
def test_regression_cube_of_threads_not_numbered(tmp_path, thread):
    """ValueError: invalid literal for int() (or too many digits)."""
    paths = []
    for i, t in enumerate((thread, "1")):
        p = tmp_path / f"t{i}.xml"
        p.write_text(count_report(5, {"PAPI_TOT_CYC": "10"}, thread=t))
        paths.append(str(p))
    status, _, err = regression(["-c", "--force", "--cube", str(tmp_path / "run.cubex"), *paths])
    assert status == 0, err


@pytest.mark.parametrize("cycles, metric", [
    (("18446744073709551616", "10"), None),  # OverflowError: a count of exactly 2^64 in a UINT64 grid
    (("100000000", "100000000"), "1e300"),  # OverflowError: fsum of .stat totals near float's range
])
def test_regression_cube_of_extreme_values(tmp_path, cycles, metric):
    paths = []
    for pid, count in enumerate(cycles, 1):
        p = tmp_path / f"r{pid}.xml"
        p.write_text(count_report(pid, {"PAPI_TOT_CYC": count}))
        paths.append(str(p))
    extra = []
    if metric:
        (tmp_path / "m.xml").write_text(
            '<psmetrics class="PAPI"><metric><name>Big</name><description>b</description><definition><apply>'
            f"<times><ci>PAPI_TOT_CYC</ci><cn>{metric}</cn></times></apply></definition></metric></psmetrics>")
        extra = ["-m", str(tmp_path / "m.xml")]
    status, _, err = regression([*extra, "-c", "--force", "--cube", str(tmp_path / "run.cubex"), *paths])
    assert status == 0, err
    assert (tmp_path / "run.stat").read_text().count("\n") > 4


def test_regression_first_generation_processed_profile_is_read(tmp_path):
    """hwpcprofilereport.dtd's <modules> and loose <file>s were read as an
    empty profile (no traceback, but nothing to show and -x refused)."""
    doc = tmp_path / "old.xml"
    doc.write_text(original_processed_old())
    status, out, _ = regression(["-f", "json", str(doc)])
    locations = json.loads(out)["reports"][0]["locations"]
    assert status == 0 and sum(loc["samples"] for loc in locations) == 70
    assert {loc["module"] for loc in locations} == {"/home/u/app"}


@pytest.mark.parametrize("subset, reference", [
    (SUBSETS[1], "&lol9;"),  # a billion laughs
    (SUBSETS[4], "&lol9;"),  # quadratic blow-up: 3,000 references to 90 kB
    (SUBSETS[2], "&ext;"),  # an external entity: /etc/passwd
    ('<!ENTITY % pe SYSTEM "file:///etc/passwd"> %pe;', "1"),
])
def test_entities_are_never_expanded(tmp_path, subset, reference):
    """What the campaign's DOCTYPEs try, bounded and asserted here once:
    entities are not expanded (a count made of them is not a number), and
    no file is read through them."""
    doc = tmp_path / "laughs.xml"
    doc.write_text(f"<!DOCTYPE hwpcreport [{subset}]>" + count_report(1, {"PAPI_TOT_CYC": reference}))
    for fmt in FORMATS:
        start = time.monotonic()
        status, out, err = regression(["-f", fmt, str(doc)])
        assert time.monotonic() - start < 5
        assert "root:" not in out + err
        assert status == 2 if reference != "1" else status in (0, 2)


# ---------------------------------------------------------------- summary


CAMPAIGN = {"counting", "raw profiles", "processed profiles", "multi-documents", "resource reports", "exports",
            "psprocess options", "psprocess subcommands", "real command", "psinv options", "psrun options"}


def test_zz_summary(capsys):
    """What the campaign ran (shown even under pytest's capture): runs per
    tool and outcome.  When every campaign test ran, at least 2,000."""
    total = sum(n for (tool, _), n in STATS.items() if "regressions" not in tool)
    with capsys.disabled():
        print(f"\nfuzz campaign: {total} runs checked in {time.monotonic() - STARTED:.1f} s; "
              + ", ".join(f"{tool} {outcome}: {n}" for (tool, outcome), n in sorted(STATS.items())))
    if CAMPAIGN <= RAN:
        assert total >= 2000 * min(SCALE, 1)
