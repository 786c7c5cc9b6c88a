"""The summaries and JSON lists written by the C library
(csrc/decoder/report_format.c, through writers/native_rows.py) are the
ones a straightforward Python implementation writes: sums per name, the
largest first and ties by name, self and cumulative percentages rounded as
Python rounds them, rows below the threshold hidden and counted."""

from __future__ import annotations

import json
import random

import pytest

from psuite.formats import native_rows
from psuite.formats.writers import json_format, text_profile
from psuite.model.report import Location, ModuleSamples, ProfileReport

TITLES = ("Module Summary", "File Summary", "Function Summary", "Function:File:Line Summary")


def reference(names: list[str], counts: list[int], threshold: float) -> tuple[list[str], int]:
    """(rows, hidden) of one summary, computed plainly."""
    sums: dict[str, int] = {}
    for name, n in zip(names, counts, strict=True):
        sums[name] = sums.get(name, 0) + n
    scale = 100.0 / (sum(counts) or 1)  # percentages as psprocess has always computed them: n * scale
    rows, running, hidden = [], 0, 0
    for name, n in sorted(sums.items(), key=lambda kv: (-kv[1], kv[0])):
        running += n
        if n * scale < threshold:
            hidden += 1
            continue
        rows.append(f"{n:>10,} {n * scale:>7.2f}% {running * scale:>7.2f}%  {name}")
    return rows, hidden


def reference_report(locations: list[Location], threshold: float) -> str:
    out = []
    counts = [loc.samples for loc in locations]
    keys = [
        [loc.module for loc in locations],
        [loc.file for loc in locations],
        [f"{loc.function}  ({loc.file})" for loc in locations],
        [f"{loc.function}:{loc.file}:{loc.line}" for loc in locations],
    ]
    for title, names in zip(TITLES, keys, strict=True):
        rows, hidden = reference(names, counts, threshold)
        out += ["", title, "-" * len(title), f"{'Samples':>10} {'Self %':>8} {'Total %':>8}  Name", *rows]
        if hidden:
            out.append(f"{'':>10} ({hidden} more below {threshold:g}%)")
    return "\n".join(out) + "\n"


def summaries_text(locations: list[Location], threshold: float) -> str:
    """The summaries part of render_one's text."""
    text = text_profile.render_one(ProfileReport(event="ITIMER_PROF", locations=locations), threshold)
    return text[text.index("\nModule Summary") :]


def native_used(locations: list[Location]) -> bool:
    counts = [loc.samples for loc in locations]
    s = native_rows.Summaries(counts, sum(counts) or 1)
    return (
        s.ok
        and s.summary(
            [loc.function for loc in locations],
            [loc.file for loc in locations],
            [loc.line for loc in locations],
            2,
            0.0,
        )
        is not None
    )


def locations_of(rng: random.Random, n: int, counts) -> list[Location]:
    functions = [
        "main",
        "f\u00e9",
        "\u00e9t\u00e9",
        "zeta",
        "Zeta",
        "a",
        "ab",
        "abc",
        "\U0001f600x",
        "x" * 40,
        "std::vector<int>::push_back(int const&)",
    ]
    files = ["/src/a.c", "/src/b.c", "??", "/src/\u00fc.c"]
    return [
        Location(
            f"/lib{rng.randrange(3)}.so",
            rng.choice(files),
            rng.choice(functions) + str(rng.randrange(9)),
            rng.randrange(0, 30),
            counts(rng),
        )
        for _ in range(n)
    ]


@pytest.mark.parametrize("threshold", [0.0, 0.01, 0.5, 2.0, 12.5, 100.0])
@pytest.mark.parametrize("seed", [1, 2])
def test_random_profiles_match_the_reference(seed, threshold):
    rng = random.Random(seed)
    # many ties (small counts), zeros, and counts with thousands separators
    locations = locations_of(rng, 4000, lambda r: r.choice([0, 1, 1, 2, 3, 7, 1000, 123456, 98765432]))
    assert native_used(locations)
    assert summaries_text(locations, threshold) == reference_report(locations, threshold)


@pytest.mark.parametrize("total", [8, 16, 80, 400, 800, 1600, 8000, 3, 7, 1 << 20])
def test_percentages_round_as_python_does_ties_included(total):
    """n/total*100 with an exact .xx5 (total 8, 800, ...: 0.125, 0.375 ...) rounds to even, as Python does."""
    counts = [1] * min(total - 1, 97)
    counts.append(total - sum(counts))
    locations = [Location("/m", "/f.c", f"fn{i}", i, n) for i, n in enumerate(counts)]
    assert native_used(locations)
    assert summaries_text(locations, 0.0) == reference_report(locations, 0.0)
    assert summaries_text(
        [Location("/m", "/f.c", "g", 1, 1), Location("/m", "/f.c", "h", 1, total - 1)], 0.0
    ) == reference_report([Location("/m", "/f.c", "g", 1, 1), Location("/m", "/f.c", "h", 1, total - 1)], 0.0)


def test_names_are_summed_as_written_not_by_their_parts():
    """(function "a  (b", file "c") and ("a", "b  (c") write the same Function name: one row, their sum."""
    locations = [
        Location("/m", "c", "a  (b", 1, 5),
        Location("/m", "b  (c", "a", 1, 4),
        Location("/m", "2", "f:1", 3, 2),
        Location("/m", "1:2", "f", 3, 2),
        Location("/m", "x", "y", 1, 1),
    ]
    assert native_used(locations)
    text = summaries_text(locations, 0.0)
    assert text == reference_report(locations, 0.0)
    assert "         9   64.29%   64.29%  a  (b  (c)" in text
    assert "         4   28.57%   92.86%  f:1:2:3" in text


def test_ties_are_ordered_by_code_point():
    locations = [Location("/m", "/f", name, 1, 3) for name in ["b", "B", "\u00e9", "a", "\U0001f600", "ab", "", "a"]]
    text = summaries_text(locations, 0.0)
    assert text == reference_report(locations, 0.0)
    rows = text.split("Function Summary\n")[1].splitlines()[2:9]
    assert [row[30:] for row in rows] == [f"{name}  (/f)" for name in ["a", "", "B", "ab", "b", "\u00e9", "\U0001f600"]]


def test_every_row_below_the_threshold_leaves_the_hidden_line_alone():
    locations = [Location("/m", "/f", f"fn{i}", i, 1) for i in range(300)]
    text = summaries_text(locations, 1.0)
    assert text == reference_report(locations, 1.0)
    assert text.count("(300 more below 1%)") == 2 and "(1 more" not in text


def test_empty_profile():
    assert summaries_text([], 0.0) == reference_report([], 0.0)


@pytest.mark.parametrize("odd", ["negative", "float", "huge", "bool-line"])
def test_values_left_to_python_give_the_same_text(odd):
    rng = random.Random(5)
    locations = locations_of(rng, 300, lambda r: r.randrange(1, 40))
    if odd == "negative":
        locations[3].samples = -2
    elif odd == "float":
        locations[3].samples = 2.5
    elif odd == "huge":
        locations[3].samples = 2**70
    else:
        locations[3].line = True
    assert not native_used(locations)
    assert summaries_text(locations, 0.0) == reference_report(locations, 0.0)


def test_json_locations_and_samples_are_json_dumps():
    rng = random.Random(9)
    locations = locations_of(rng, 2000, lambda r: r.choice([0, 1, 5, 2**40]))
    locations.append(Location('/q"uote\\', "tab\there\n\b\f\r/", "\x01ctl\u2028\x7f\x1f\U0001f600\u00e9", -1, 3))
    locations.append(Location("/m", "", "\U0010ffff\uffff\u0800\u07ff\x80", 0, 0))
    modules = [
        ModuleSamples("/a b", 0x400000, {0x400000 + i: i % 7 for i in range(3000)}),
        ModuleSamples("/top", 0, {2**64 - 1: 1, 0: 2**62}),
        ModuleSamples("/empty", 0),
    ]
    r = ProfileReport(source="p.xml", event="ITIMER_PROF", locations=locations, modules=modules, mapper="m")
    direct = native_rows.json_locations(
        [loc.module for loc in locations],
        [loc.file for loc in locations],
        [loc.function for loc in locations],
        [loc.line for loc in locations],
        [loc.samples for loc in locations],
    )
    assert direct == json.dumps(
        [
            {"module": loc.module, "file": loc.file, "function": loc.function, "line": loc.line, "samples": loc.samples}
            for loc in locations
        ]
    )
    assert json.loads(direct) == [
        {"module": loc.module, "file": loc.file, "function": loc.function, "line": loc.line, "samples": loc.samples}
        for loc in locations
    ]
    assert native_rows.json_samples(modules[1].samples) == '"18446744073709551615": 1, "0": 4611686018427387904'
    expected = json.dumps({"schema": "psuite.profile/1", "reports": [r.to_dict()]}, allow_nan=False) + "\n"
    assert json_format.render([r]) == expected


def test_all_counts_zero():
    locations = [Location("/m", "/f", f"fn{i % 5}", i, 0) for i in range(40)]
    assert native_used(locations)
    assert summaries_text(locations, 0.0) == reference_report(locations, 0.0)
    assert summaries_text(locations, 0.5) == reference_report(locations, 0.5)
