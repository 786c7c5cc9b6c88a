"""psprocess's fast paths (the chunked reader of <samples>, the direct JSON
of a profile, the text summaries) give exactly what the plain ways give:
a full lxml tree walked element by element, json.dumps of to_dict(), and
the summaries computed one location at a time."""

from __future__ import annotations

import io
import json
import random

import pytest
from lxml import etree

from psuite.formats.readers import document, read_stream
from psuite.formats.writers import json_format, text_profile
from psuite.model.report import Location, ModuleSamples, ProfileReport

HEAD = ('<?xml version="1.0"?><hwpcreport version="0.3" mode="profile"><date>now</date><hostname>h</hostname>'
        "<hwpcprofiledata class='itimer'><profileinfo><profileevent domain='user' type='native' name='ITIMER_PROF'"
        " derived='no'><threshold>1000</threshold></profileevent></profileinfo><totalsamples>9</totalsamples>")


def _doc(modules: list[list[tuple[str, str]]], between: str = "") -> bytes:
    body = "".join(f"<module file='/m{i}' offset='0x0'><samples pcbase='16'>"
                   + between.join(f'<sample pc="{pc}">{n}</sample>' for pc, n in samples)
                   + "</samples></module>" for i, samples in enumerate(modules))
    return (HEAD + body + "</hwpcprofiledata></hwpcreport>").encode()


def _by_tree(data: bytes) -> list[dict[int, int]]:
    """Each module's {pc: count} from a whole lxml tree, in document order."""
    out = []
    for module in etree.fromstring(data).iter("module"):
        table: dict[int, int] = {}
        for s in module.iter("sample"):
            pc = int(s.get("pc"), 16)
            table[pc] = table.get(pc, 0) + int(s.text)
        out.append(table)
    return out


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 16])
@pytest.mark.parametrize("between", ["", "\n  ", "<!-- c -->"])
def test_samples_read_in_chunks_as_a_whole_tree_reads_them(monkeypatch, chunk, between):
    rng = random.Random(chunk)
    modules = [[(f"{rng.randrange(1, 5000):x}", str(rng.randrange(1, 9))) for _ in range(800)] for _ in range(3)]
    data = _doc(modules, between)
    monkeypatch.setattr(document, "CHUNK", chunk)
    report = read_stream(io.BytesIO(data), "d.xml")
    tables = [m.samples for m in report.modules]
    expected = _by_tree(data)
    assert tables == expected
    assert [list(t) for t in tables] == [list(t) for t in expected]  # the same order: the reports list them so
    assert sum(sum(t.values()) for t in tables) == sum(int(n) for m in modules for _, n in m)


@pytest.mark.parametrize("chunk", [5, 1 << 16])
def test_odd_samples_are_read_as_before(monkeypatch, chunk):
    """Upper-case hex, a repeated PC and a CDATA count are summed as the
    element-by-element reader sums them; a bad PC is its one-line error."""
    monkeypatch.setattr(document, "CHUNK", chunk)
    data = _doc([[("1A", "2"), ("1a", "<![CDATA[3]]>"), ("ff", "4")]])
    report = read_stream(io.BytesIO(data), "d.xml")
    assert report.modules[0].samples == {0x1A: 5, 0xFF: 4}
    from psuite.errors import InputError

    with pytest.raises(InputError, match="sample pc"):
        read_stream(io.BytesIO(_doc([[("10", "1"), ("zz", "1")]])), "d.xml")


def _profile() -> ProfileReport:
    rng = random.Random(3)
    names = ["main", "f\u00e9", 'q"uote', "tab\there", "x" * 40]
    locations = [Location(f"/lib{rng.randrange(3)}.so", f"/src/{rng.choice(names)}.c", rng.choice(names) + str(i),
                          rng.randrange(0, 900), rng.randrange(1, 50)) for i in range(3000)]
    modules = [ModuleSamples("/a b", 0x400000, {0x400000 + i: i % 7 + 1 for i in range(2000)}),
               ModuleSamples("/empty", 0)]
    return ProfileReport(source="p.xml", pid=7, wallclock=float("inf"), event="ITIMER_PROF", total_samples=9,
                         locations=locations, modules=modules, mapper="psuite-dwarf")


def test_profile_json_is_json_dumps_of_to_dict():
    r = _profile()
    expected = json.dumps({"schema": "psuite.profile/1", "reports": [json_format._finite(r.to_dict())]},
                          allow_nan=False) + "\n"
    assert json_format.render([r]) == expected
    two = json_format.render([r, r])
    assert json.loads(two)["reports"][1] == json.loads(expected)["reports"][0]


def test_profile_json_with_unusual_values_takes_the_general_path():
    r = _profile()
    r.locations[5].line = True  # json writes true, not 1
    r.modules[0].samples[0x400000] = 2.5
    expected = json.dumps({"schema": "psuite.profile/1", "reports": [json_format._finite(r.to_dict())]},
                          allow_nan=False) + "\n"
    assert json_format.render([r]) == expected
    assert '"line": true' in expected


def _summary_one_by_one(title, locations, key, total, threshold) -> list[str]:
    """The summary as psprocess computed it before, location by location."""
    sums: dict[str, int] = {}
    for loc in locations:
        sums[key(loc)] = sums.get(key(loc), 0) + loc.samples
    lines = ["", title, "-" * len(title), f"{'Samples':>10} {'Self %':>8} {'Total %':>8}  Name"]
    running = hidden = 0
    scale = 100.0 / total if total else 0.0
    for name, n in sorted(sums.items(), key=lambda kv: (-kv[1], kv[0])):
        running += n
        if n * scale < threshold:
            hidden += 1
            continue
        lines.append(f"{n:>10,} {n * scale:>7.2f}% {running * scale:>7.2f}%  {name}")
    if hidden:
        lines.append(f"{'':>10} ({hidden} more below {threshold:g}%)")
    return lines


@pytest.mark.parametrize("threshold", [0.0, 0.05, 1.0, 100.0])
def test_text_summaries_are_the_location_by_location_ones(threshold):
    r = _profile()
    text = text_profile.render_one(r, threshold)
    total = sum(loc.samples for loc in r.locations)
    expected = []
    for title, key in [("Module Summary", lambda loc: loc.module), ("File Summary", lambda loc: loc.file),
                       ("Function Summary", lambda loc: f"{loc.function}  ({loc.file})"),
                       ("Function:File:Line Summary", lambda loc: f"{loc.function}:{loc.file}:{loc.line}")]:
        expected += _summary_one_by_one(title, r.locations, key, total, threshold)
    assert text.endswith("\n".join(expected) + "\n")
