"""One configuration parser (expat, in the C library) for psrun, the library
inside the program and the Python API: each odd but well-formed file counts
exactly the events it names; each broken one fails with the same one-line
message, exit status 2, whoever reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from psuite.errors import ConfigError
from psuite.hwpc.config import read_configuration, read_eventlist
from psuite.libperfsuite.native import library_path
from tests.conftest import one_line_error, run_tool, validate

QUIET = "/bin/true"  # a program that prints nothing

EV = '<ps_hwpc_event name="{}"/>'


def eventlist(*body: str, head: str = "", attrs: str = "") -> bytes:
    return (head + f"<ps_hwpc_eventlist class=\"PAPI\"{attrs}>" + "".join(body) + "</ps_hwpc_eventlist>").encode()


ODD = {
    "cdata": eventlist("<![CDATA[", EV.format("cycles"), "]]>", EV.format("task-clock")),
    "processing_instruction": eventlist(f"<?pi {EV.format('instructions')} ?>", EV.format("task-clock")),
    "comment": eventlist(f"<!-- {EV.format('cycles')} -->", EV.format("page-faults")),
    "name_inside_another_value": eventlist(
        '<ps_hwpc_event note=" name=\'cycles\' " name="page-faults"/>', attrs=" note=\" domain='kernel' \""),
    "character_reference": eventlist(EV.format("task&#45;clock")),
    "internal_dtd_subset": eventlist(
        EV.format("task-clock"),
        head='<?xml version="1.0"?><!DOCTYPE ps_hwpc_eventlist [<!ELEMENT ps_hwpc_eventlist ANY>'
             '<!ATTLIST ps_hwpc_eventlist class CDATA #IMPLIED>]>'),
    "gt_in_attribute": eventlist(EV.format("task-clock"), attrs=' note="a>b"'),
    "trailing_spaces": b'<ps_hwpc_eventlist class="PAPI" >\n  <ps_hwpc_event name=" task-clock "  />\n'
                       b'</ps_hwpc_eventlist >\n',
    "utf16": ('<?xml version="1.0" encoding="UTF-16"?>'
              + eventlist(EV.format("task-clock")).decode()).encode("utf-16"),
    "latin1": ('<?xml version="1.0" encoding="ISO-8859-1"?>'
               + eventlist(EV.format("page-faults"), attrs=' note="caf\xe9"').decode()).encode("latin-1"),
    "over_64k": eventlist(f"<!-- {'x' * 100_000} -->", EV.format("task-clock"), EV.format("page-faults")),
    "long_comment_before_root": b"<!-- " + b"y" * 200_000 + b" -->" + eventlist(EV.format("page-faults")),
    "events_after_1mb": eventlist(EV.format("task-clock"), " " * 1_500_000, EV.format("page-faults")),
    "external_dtd": eventlist(EV.format("task-clock"), attrs=' note="a &amp; b &lt;&#65;&#x42;"',
                              head='<!DOCTYPE ps_hwpc_eventlist SYSTEM "ps_hwpc_eventlist.dtd">'),
    # the PerfSuite paper's Figure 4 form: the name as the element's text
    "name_as_text": eventlist('<ps_hwpc_event type="native">task-clock</ps_hwpc_event>'),
    "name_as_text_with_blanks": eventlist("<ps_hwpc_event>\n   page-faults \t\r\n</ps_hwpc_event>",
                                          EV.format("task-clock")),
    "name_as_text_around_a_comment_and_cdata": eventlist(
        "<ps_hwpc_event> <!-- cycles --> task<![CDATA[-clock]]> </ps_hwpc_event>"),
    "name_as_text_with_a_character_reference": eventlist("<ps_hwpc_event>page&#45;faults</ps_hwpc_event>"),
    "name_attribute_and_the_same_text": eventlist('<ps_hwpc_event name="task-clock"> task-clock </ps_hwpc_event>'),
}

EXPECTED = {
    "cdata": ["task-clock"], "processing_instruction": ["task-clock"], "comment": ["page-faults"],
    "name_inside_another_value": ["page-faults"], "character_reference": ["task-clock"],
    "internal_dtd_subset": ["task-clock"], "gt_in_attribute": ["task-clock"], "trailing_spaces": ["task-clock"],
    "utf16": ["task-clock"], "latin1": ["page-faults"], "over_64k": ["task-clock", "page-faults"],
    "long_comment_before_root": ["page-faults"], "events_after_1mb": ["task-clock", "page-faults"],
    "external_dtd": ["task-clock"], "name_as_text": ["task-clock"],
    "name_as_text_with_blanks": ["page-faults", "task-clock"],
    "name_as_text_around_a_comment_and_cdata": ["task-clock"],
    "name_as_text_with_a_character_reference": ["page-faults"], "name_attribute_and_the_same_text": ["task-clock"],
}

# the way out libpshwpc names for a configuration that is not XML: the event list shipped beside it
EXAMPLE = os.path.join(os.path.dirname(os.path.realpath(library_path())), "configs", "default.xml")
HOW_TO_FIX = (f": correct it, or start from the event list {EXAMPLE} (<ps_hwpc_eventlist>), or write a "
              "<ps_hwpc_profile> with psprocess --calibrate --write-config FILE").replace("{", "{{").replace("}", "}}")

NO_NAME = ('a <ps_hwpc_event> names no event; write <ps_hwpc_event name="NAME"/> or '
           "<ps_hwpc_event>NAME</ps_hwpc_event>")

BROKEN = {
    "billion_laughs": (
        b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
        b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><ps_hwpc_eventlist><ps_hwpc_event name="&c;"/>'
        b"</ps_hwpc_eventlist>",
        "{p}: the DTD declares entity a: entity declarations are not allowed in a configuration "
        "(write the text in place of the reference)"),
    "external_entity": (
        b'<!DOCTYPE l [<!ENTITY x SYSTEM "/etc/passwd">]><ps_hwpc_eventlist><ps_hwpc_event name="&x;"/>'
        b"</ps_hwpc_eventlist>",
        "{p}: the DTD declares entity x: entity declarations are not allowed in a configuration "
        "(write the text in place of the reference)"),
    # an external DTD is never read: a reference to an entity it might declare is refused, not dropped
    "undeclared_entity_in_attribute": (
        eventlist(EV.format("&tc;page-faults"), head='<!DOCTYPE ps_hwpc_eventlist SYSTEM "x.dtd">'),
        "{p}: entity &tc; is not defined (a configuration's external DTD is never read); write the text in place "
        "of the reference"),
    "undeclared_entity_in_attribute_utf16": (
        ('<!DOCTYPE ps_hwpc_eventlist SYSTEM "x.dtd">' + eventlist(EV.format("&tc;")).decode()).encode("utf-16"),
        "{p}: entity &tc; is not defined (a configuration's external DTD is never read); write the text in place "
        "of the reference"),
    "undeclared_entity_in_content": (
        eventlist(EV.format("task-clock"), "&more;", head='<!DOCTYPE ps_hwpc_eventlist SYSTEM "x.dtd">'),
        "{p}: entity &more; is not defined (a configuration's external DTD is never read); write the text in "
        "place of the reference"),
    "unclosed": (b"<ps_hwpc_eventlist class='PAPI'><ps_hwpc_event name='x'>",
                 "configuration {p} is not well-formed XML (no element found, line 1, column 57)" + HOW_TO_FIX),
    "two_roots": (eventlist(EV.format("task-clock")) * 2,
                  "configuration {p} is not well-formed XML (junk after document element, line 1, column 87)"
                  + HOW_TO_FIX),
    "unexpected_element": (eventlist("<event name='x'/>"),
                           "{p}: unexpected element <event> in <ps_hwpc_eventlist>"),
    "no_name": (eventlist('<ps_hwpc_event type="native" name="  "/>'), "{p}: " + NO_NAME),
    "blank_text": (eventlist('<ps_hwpc_event type="native"> <!-- task-clock --> </ps_hwpc_event>'),
                   "{p}: " + NO_NAME),
    "name_attribute_and_other_text": (
        eventlist('<ps_hwpc_event name="task-clock">page-faults</ps_hwpc_event>'),
        "{p}: <ps_hwpc_event name=\"task-clock\"> also holds the text 'page-faults'; name the event once, by the "
        "name attribute or by the element's text"),
    "element_inside_an_event": (eventlist("<ps_hwpc_event>task-<b>clock</b></ps_hwpc_event>"),
                                "{p}: <ps_hwpc_event> holds only its event name as text, not an element <b>"),
    "text_longer_than_a_name": (eventlist(f"<ps_hwpc_event> {'x' * 128} </ps_hwpc_event>"),
                                f"{{p}}: event name '{'x' * 60}...' is longer than 127 bytes"),
    "no_events": (eventlist(f"<!-- {EV.format('cycles')} -->"), "{p}: no <ps_hwpc_event> listed"),
    "bad_domain": (eventlist(EV.format("task-clock"), attrs=' domain="users"'),
                   "{p}: domain must be user, kernel or all, not 'users'"),
    "wrong_root": (b"<events><ps_hwpc_event name='task-clock'/></events>",
                   "{p}: root element is <events>; a counting configuration is <ps_hwpc_eventlist "
                   'class="PAPI"> with <ps_hwpc_event name="..."/> children'),
    "too_many": (eventlist(*[EV.format("task-clock")] * 65), "{p}: 65 events; at most 64 can be requested"),
    "over_16mib": (eventlist(" " * (16 << 20)),
                   "configuration {p} is larger than 16 MiB, the limit for one input; give a smaller file"),
}


def report_events(workdir) -> tuple[list[str], str]:
    [report] = [p for p in workdir.iterdir() if p.name.startswith("true.") and p.suffix == ".xml"]
    root = validate(report, "hwpcreport-0.3.dtd")
    data = root.find(".//hwpceventdata")
    return [e.get("name") for e in root.iter("hwpcevent")], data.get("domain")


def api_requested(path) -> dict:
    """The Python API (Counting) reading the file through PS_HWPC_CONFIG."""
    code = ("import json, sys\nfrom psuite.hwpc import Counting\nc = Counting(environment={'PS_HWPC_CONFIG': "
            "sys.argv[1]})\ntry:\n    c.init()\nexcept Exception as e:\n    print(json.dumps({'error': str(e)}))\n"
            "else:\n    print(json.dumps({'names': [s.name for s in c.statuses]}))\n    c.shutdown()\n")
    p = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    return {**json.loads(p.stdout.strip().splitlines()[-1]), "stderr": p.stderr}


def preloaded(path, workdir) -> subprocess.CompletedProcess:
    """The library inside the program reading PS_HWPC_CONFIG itself, with no psrun before it."""
    env = {**os.environ, "LD_PRELOAD": library_path(), "PSUITE_PRELOAD": "1", "PS_HWPC_CONFIG": str(path),
           "PSUITE_QUIET": "1", "PSUITE_OUTPUT_DIR": str(workdir)}
    return subprocess.run([QUIET], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("case", sorted(ODD))
def test_odd_configurations_count_exactly_the_events_named(case, workdir):
    path = workdir / f"{case}.xml"
    path.write_bytes(ODD[case])
    p = run_tool("psrun", "-q", "-c", str(path), QUIET)
    assert p.returncode == 0 and p.stdout == "" and p.stderr == "", p.stderr
    names, domain = report_events(workdir)
    assert names == EXPECTED[case]
    assert domain == "user"
    assert read_eventlist(str(path)).names == EXPECTED[case]
    assert read_configuration(str(path)).names == EXPECTED[case]
    assert api_requested(path)["names"] == EXPECTED[case]


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_configurations_fail_with_one_line(case, workdir):
    path = workdir / f"{case}.xml"
    data, message = BROKEN[case]
    path.write_bytes(data)
    expected = message.format(p=path)
    assert one_line_error(run_tool("psrun", "-c", str(path), QUIET), "psrun") == f"psrun: {expected}"
    with pytest.raises(ConfigError) as exc:
        read_eventlist(str(path))
    assert str(exc.value) == expected
    # the library inside the program says the same, and the program does not run
    lib = preloaded(path, workdir)
    assert one_line_error(lib, "psrun") == f"psrun: {expected}"
    assert not [p for p in workdir.iterdir() if p.name.startswith("true.")]
    api = api_requested(path)
    assert "error" in api and f"pshwpc: {expected}" in api["stderr"]


PROFILES = {
    b'<ps_hwpc_profile class="itimer" domain="user"><!-- <ps_hwpc_event name="cycles"/> -->'
    b'<ps_hwpc_event name=" ITIMER_PROF " threshold="2000"/></ps_hwpc_profile>': ("ITIMER_PROF", 2000),
    # the name as the element's text, the threshold an attribute (ps_hwpc_profile.dtd)
    b'<ps_hwpc_profile class="itimer"><ps_hwpc_event threshold="3000">\n  ITIMER_PROF\n</ps_hwpc_event>'
    b"</ps_hwpc_profile>": ("ITIMER_PROF", 3000),
}


@pytest.mark.parametrize("data", list(PROFILES))
def test_profile_configuration_through_the_same_parser(data, workdir):
    path = workdir / "prof.xml"
    path.write_bytes(data)
    cfg = read_configuration(str(path))
    assert (cfg.event, cfg.threshold, cfg.profile_class, cfg.domain) == (*PROFILES[data], "itimer", "user")
    p = run_tool("psrun", "-q", "-c", str(path), QUIET)
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("data,message", [
    (b'<ps_hwpc_profile class="itimer"><ps_hwpc_event name="ITIMER_PROF" threshold="abc"/></ps_hwpc_profile>',
     "{p}: threshold must be a positive integer, not 'abc'"),
    (b'<ps_hwpc_profile class="itimer"><ps_hwpc_event name="cycles" threshold="10"/></ps_hwpc_profile>',
     "{p}: class itimer takes ITIMER_PROF, ITIMER_VIRTUAL, ITIMER_REAL, not cycles"),
    (b'<ps_hwpc_profile class="timer"><ps_hwpc_event name="ITIMER_PROF"/></ps_hwpc_profile>',
     "{p}: <ps_hwpc_profile> class must be itimer, PAPI or perfmon, not 'timer'"),
    (b'<ps_hwpc_profile class="itimer"><ps_hwpc_event name="ITIMER_PROF"/><ps_hwpc_event name="ITIMER_REAL"/>'
     b"</ps_hwpc_profile>",
     '{p}: <ps_hwpc_profile> holds exactly one <ps_hwpc_event name="..." threshold="..."/>'),
    (b'<ps_hwpc_profile class="itimer"><ps_hwpc_event>ITIMER_PROF</ps_hwpc_event><ps_hwpc_event>ITIMER_REAL'
     b"</ps_hwpc_event></ps_hwpc_profile>",
     '{p}: <ps_hwpc_profile> holds exactly one <ps_hwpc_event name="..." threshold="..."/>'),
    (b'<ps_hwpc_profile class="itimer"><ps_hwpc_event name="ITIMER_PROF">ITIMER_REAL</ps_hwpc_event>'
     b"</ps_hwpc_profile>",
     "{p}: <ps_hwpc_event name=\"ITIMER_PROF\"> also holds the text 'ITIMER_REAL'; name the event once, by the "
     "name attribute or by the element's text"),
    (b'<ps_hwpc_profile class="itimer"><ps_hwpc_event threshold="10"> </ps_hwpc_event></ps_hwpc_profile>',
     "{p}: " + NO_NAME),
])
def test_broken_profiles_fail_alike(data, message, workdir):
    path = workdir / "prof.xml"
    path.write_bytes(data)
    expected = message.format(p=path)
    assert one_line_error(run_tool("psrun", "-c", str(path), QUIET), "psrun") == f"psrun: {expected}"
    assert one_line_error(preloaded(path, workdir), "psrun") == f"psrun: {expected}"
    with pytest.raises(ConfigError) as exc:
        read_configuration(str(path))
    assert str(exc.value) == expected


FIGURE_4 = b"""<ps_hwpc_eventlist class="PAPI">
  <ps_hwpc_event type="preset">PAPI_TOT_CYC</ps_hwpc_event>
</ps_hwpc_eventlist>
"""


def test_the_papers_figure_4_configuration(workdir):
    """Figure 4 as printed: psrun counts PAPI_TOT_CYC, or, without a PMU,
    names it as requested and not counted, and counts software events."""
    path = workdir / "figure4.xml"
    path.write_bytes(FIGURE_4)
    assert read_eventlist(str(path)).events == [("PAPI_TOT_CYC", "preset")]
    p = run_tool("psrun", "-c", str(path), QUIET)
    assert p.returncode == 0, p.stderr
    [report] = [f for f in workdir.iterdir() if f.name.startswith("true.") and f.suffix == ".xml"]
    root = validate(report, "hwpcreport-0.3.dtd")
    names = [e.get("name") for e in root.iter("hwpcevent")]
    assert "PAPI_TOT_CYC" in names or "not counted: PAPI_TOT_CYC" in root.findtext(".//annotation"), names


def test_profile_configuration_is_not_an_eventlist(workdir):
    path = workdir / "prof.xml"
    path.write_bytes(b'<ps_hwpc_profile class="itimer"><ps_hwpc_event name="ITIMER_PROF"/></ps_hwpc_profile>')
    with pytest.raises(ConfigError, match="is a profiling configuration"):
        read_eventlist(str(path))


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo"])
def test_unreadable_configurations_worded_alike(kind, workdir):
    """psrun, the Python API and the library in the program word them alike."""
    path = workdir / f"{kind}.xml"
    expected = {"missing": f"configuration {path}: no such file",
                "directory": f"configuration {path} is a directory; give a file",
                "fifo": f"configuration {path} is not a regular file (a named pipe); give a regular file"}[kind]
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    assert one_line_error(run_tool("psrun", "-c", str(path), QUIET), "psrun") == f"psrun: {expected}"
    with pytest.raises(ConfigError) as exc:
        read_eventlist(str(path))
    assert str(exc.value) == expected
    assert one_line_error(preloaded(path, workdir), "psrun") == f"psrun: {expected}"


def test_long_paths_keep_the_whole_message(workdir):
    deep = workdir / ("d" * 200) / ("e" * 200)
    deep.mkdir(parents=True)
    path = deep / "wrong_root.xml"
    data, message = BROKEN["wrong_root"]
    path.write_bytes(data)
    expected = message.format(p=path)
    assert one_line_error(run_tool("psrun", "-c", str(path), QUIET), "psrun") == f"psrun: {expected}"
    assert one_line_error(preloaded(path, workdir), "psrun") == f"psrun: {expected}"


def test_paths_with_line_breaks_stay_on_one_line(workdir):
    path = workdir / "a\nb.xml"
    path.write_bytes(BROKEN["no_events"][0])
    shown = str(path).replace("\n", "\\n")
    expected = f"psrun: {shown}: no <ps_hwpc_event> listed"
    assert one_line_error(run_tool("psrun", "-c", str(path), QUIET), "psrun") == expected
    assert one_line_error(preloaded(path, workdir), "psrun") == expected
