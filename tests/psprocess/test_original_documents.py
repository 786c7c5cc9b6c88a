"""The original PerfSuite's documents, read in the form it wrote them,
through every output of the real psprocess: decimals (memory in MB with
two decimals, the clock in MHz with three), units attributes (a trace
cache in KuOps, wallclock ticks, other units converted), "??" for unknown
files and functions, and elements the DTDs allow to be empty; values that
cannot be (negative, not finite, non-ASCII digits, beyond 64 bits) are
still refused, naming the element."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_tool, validate
from tests.psprocess.test_documents import (
    DOCTYPE,
    MACHINE,
    MACHINE_03,
    original_count,
    original_profile,
)

XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'
COUNTS = {"PAPI_TOT_CYC": 1000, "PAPI_TOT_INS": 500}


def original_count_03(pid: int, counts: dict[str, int], machine: str = MACHINE_03) -> str:
    """A <hwpcreport> of the -0.3 generation as the original wrote it
    (mode="count", <cputime units="seconds"> with two decimals)."""
    events = "".join(f'<hwpcevent type="preset" name="{n}" derived="no">{c}</hwpcevent>' for n, c in counts.items())
    return (f'<hwpcreport version="0.3" generator="PerfSuite 1.0.0a4" mode="count">'
            f"<date>Tue Mar 04 10:12:09 2014</date><hostname>node1</hostname><domainname>(none)</domainname>"
            f"<pid>{pid}</pid><thread>0</thread><username>kufrin</username><command>./app</command>"
            f'<wallclock units="ticks">5068000000</wallclock><cputime units="seconds"><usertime>1.98</usertime>'
            f"<systemtime>0.01</systemtime></cputime>{machine}"
            f'<hwpceventdata class="PAPI" version="3.6.2" domain="user" multiplexed="no">{events}</hwpceventdata>'
            f"</hwpcreport>")


PROFILE_LINES = [{("a.c", "solve", 10): 60, ("a.c", "init", 3): 5, ("??", "??", 0): 4},
                 {("a.c", "solve", 10): 30, ("b.c", "??", 0): 5}]

DOCUMENTS = {
    # name: (text, root element, DTD of what psprocess -x writes for it)
    "count-first-generation": (XML_DECLARATION + original_count(100, COUNTS), "hwpcreport"),
    "count-0.3": (XML_DECLARATION + DOCTYPE.format("hwpcreport", "hwpcreport") + original_count_03(100, COUNTS),
                  "hwpcreport"),
    "multi-count": (XML_DECLARATION + DOCTYPE.format("multihwpcreport", "multihwpcreport")
                    + '<multihwpcreport version="0.3">' + original_count_03(100, COUNTS)
                    + original_count(101, {"PAPI_TOT_CYC": 3000, "PAPI_TOT_INS": 2500}) + "</multihwpcreport>",
                    "multihwpcreport"),
    "profile": (XML_DECLARATION + DOCTYPE.format("hwpcprofilereport", "hwpcprofilereport")
                + original_profile(200, 0, PROFILE_LINES[0]), "hwpcprofilereport"),
    "multi-profile": (XML_DECLARATION + DOCTYPE.format("multihwpcprofilereport", "multihwpcprofilereport")
                      + '<multihwpcprofilereport version="0.3">'
                      + "".join(original_profile(200, t, lines) for t, lines in enumerate(PROFILE_LINES))
                      + "</multihwpcprofilereport>", "multihwpcprofilereport"),
}


def machine_of(out: dict) -> dict:
    return out["reports"][0]["machine"]


def check_machine(machine: dict) -> None:
    """The original's <machineinfo> as it wrote it, every value kept."""
    assert machine["memory_mb"] == pytest.approx(2904.20)
    assert machine["mhz"] == pytest.approx(2534.0)
    assert machine["page_size"] == 4096 and machine["cpu_count"] == 2
    assert (machine["family"], machine["model"]) == (15, 2)
    caches = {(c["level"], c["type"]): (c["size_kb"], c["size_units"], c["line_size"], c["associativity"])
              for c in machine["caches"]}
    assert caches == {(1, "data"): (8, "KB", 64, 4), (1, "instruction"): (12, "KuOps", 0, 8),
                      (2, "unified"): (512, "KB", 64, 8), (3, "unified"): (1024, "KB", 128, 8)}
    assert [(t["type"], t["entries"], t["associativity"]) for t in machine["tlbs"]] == \
        [("instruction", 128, 0), ("data", 64, 0)]


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_original_document_through_every_output(workdir: Path, name: str):
    text, root_tag = DOCUMENTS[name]
    doc = workdir / f"{name}.xml"
    doc.write_text(text)
    out = run_tool("psprocess", "-f", "json", str(doc))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    check_machine(machine_of(report))
    assert report["reports"][0]["wallclock"] == pytest.approx(2.0 if "count" in name else 1.0)  # ticks / 2534 MHz
    if "profile" in name:
        functions = {(loc["file"], loc["function"]) for r in report["reports"] for loc in r["locations"]}
        assert ("??", "??") in functions or ("b.c", "??") in functions
    else:
        cpu = report["reports"][0]
        assert (cpu["usertime"], cpu["systemtime"]) == (pytest.approx(1.98), pytest.approx(0.01)) or \
            name == "count-first-generation"
    # The text report shows the decimals and the trace cache's own unit.
    shown = run_tool("psprocess", str(doc))
    assert shown.returncode == 0, shown.stderr
    if name.startswith("count"):  # a single counting report's text shows its machine
        assert "Memory (MB)             : 2904.2" in shown.stdout
        assert "Level 1 instruction : 12 KuOps, 8-way" in shown.stdout
    csv = run_tool("psprocess", "-f", "csv", str(doc))
    assert csv.returncode == 0 and csv.stdout.startswith("source,"), csv.stderr
    # -x writes the -0.3 generation, valid against its DTD, with the values as read ...
    x = workdir / "again.xml"
    p = run_tool("psprocess", "-x", "-o", str(x), str(doc))
    assert p.returncode == 0, p.stderr
    written = validate(x, f"{root_tag}-0.3.dtd")
    assert {el.text for el in written.iter("memoryinfo")} == {"2904.2"}
    assert {el.get("units") for el in written.iter("size") if el.text == "12"} == {"KuOps"}
    # ... and reads back to the same machine.
    back = run_tool("psprocess", "-f", "json", str(x))
    assert back.returncode == 0, back.stderr
    assert machine_of(json.loads(back.stdout)) == machine_of(report)
    # The cube and the page.
    for option, target in (("--cube", workdir / "r.cubex"), ("--html", workdir / "r.html")):
        p = run_tool("psprocess", option, str(target), str(doc))
        assert p.returncode == 0 and target.stat().st_size > 0, p.stderr
    assert "2,904.2 MB" in (workdir / "r.html").read_text()
    # Combined with itself under another name: every member read.
    copy = workdir / "copy.xml"
    copy.write_text(text.replace("node1", "node2"))
    both = run_tool("psprocess", "-c", "-f", "json", str(doc), str(copy))
    assert both.returncode == 0, both.stderr
    assert {machine_of({"reports": [r]})["memory_mb"] for r in json.loads(both.stdout)["reports"]} == {2904.2}


def count_with(machine: str = MACHINE_03, wall: str = '<wallclock units="ticks">5068000000</wallclock>',
               cputime: str = '<cputime units="seconds"><usertime>1.98</usertime><systemtime>0.01</systemtime>'
                              "</cputime>") -> str:
    doc = original_count_03(7, COUNTS, machine)
    doc = doc.replace('<wallclock units="ticks">5068000000</wallclock>', wall)
    return doc.replace('<cputime units="seconds"><usertime>1.98</usertime><systemtime>0.01</systemtime>'
                       "</cputime>", cputime)


def read_json(workdir: Path, text: str) -> dict:
    doc = workdir / "doc.xml"
    doc.write_text(text)
    p = run_tool("psprocess", "-f", "json", str(doc))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["reports"][0]


def test_units_attributes_are_converted(workdir: Path):
    machine = (MACHINE_03.replace('<memoryinfo units="MB">2904.20</memoryinfo>',
                                  '<memoryinfo units="GB">2</memoryinfo>')
               .replace('<clockspeed units="MHz">2534.000</clockspeed>', '<clockspeed units="GHz">2.534</clockspeed>')
               .replace('<size units="KB">1024</size>', '<size units="MB">1.5</size>')
               .replace('<syspagesize units="KB">4</syspagesize>', '<syspagesize units="B">16384</syspagesize>'))
    r = read_json(workdir, count_with(machine, wall='<wallclock units="ms">2500</wallclock>',
                                      cputime='<cputime units="ms"><usertime>1980</usertime>'
                                              "<systemtime>10</systemtime></cputime>"))
    m = r["machine"]
    assert m["memory_mb"] == 2048 and m["mhz"] == pytest.approx(2534.0) and m["page_size"] == 16384
    assert {c["level"]: c["size_kb"] for c in m["caches"] if c["type"] == "unified"} == {2: 512, 3: 1536}
    assert r["wallclock"] == pytest.approx(2.5)
    assert (r["usertime"], r["systemtime"]) == (pytest.approx(1.98), pytest.approx(0.01))
    # ticks count against the clock in whatever unit it is written
    r = read_json(workdir, count_with(machine))
    assert r["wallclock"] == pytest.approx(2.0)
    # a unit with the number, and sizes in KB with a fraction
    r = read_json(workdir, count_with(MACHINE_03.replace('<size units="KB">8</size>', "<size>0.5 KB</size>")))
    assert {c["size_kb"] for c in r["machine"]["caches"] if c["level"] == 1 and c["type"] == "data"} == {0.5}


def test_empty_elements_the_dtds_allow_are_read_as_unknown(workdir: Path):
    machine = (MACHINE_03.replace('<memoryinfo units="MB">2904.20</memoryinfo>', '<memoryinfo units="MB"/>')
               .replace('<clockspeed units="MHz">2534.000</clockspeed>', '<clockspeed units="MHz"></clockspeed>')
               .replace('<size units="KB">512</size>', '<size units="KB"/>')
               .replace("<cpucount>2</cpucount>", "<cpucount/>"))
    r = read_json(workdir, count_with(machine, cputime='<cputime units="seconds"><usertime/><systemtime/></cputime>'))
    m = r["machine"]
    assert (m["memory_mb"], m["mhz"], m["cpu_count"]) == (0, 0.0, 1)
    assert r["wallclock"] is None  # ticks without a clock: unknown, not a guess
    assert r["usertime"] is None and r["systemtime"] is None
    # An empty <totalsamples/> in a processed profile: the lines' samples are the total.
    profile = original_profile(200, 0, PROFILE_LINES[0]).replace("<totalsamples>69</totalsamples>",
                                                                  "<totalsamples/>")
    assert "<totalsamples/>" in profile
    r = read_json(workdir, profile)
    assert r["total_samples"] == 69
    doc = workdir / "doc.xml"
    p = run_tool("psprocess", str(doc))
    assert p.returncode == 0 and "69" in p.stdout, p.stderr


@pytest.mark.parametrize("element, expected", [
    ('<memoryinfo units="MB">-2904.20</memoryinfo>', "<memoryinfo> is out of range"),
    ('<memoryinfo units="MB">nan</memoryinfo>', "<memoryinfo> is not a number"),
    ('<memoryinfo units="MB">1e400</memoryinfo>', "<memoryinfo> is not a finite number"),
    ('<memoryinfo units="MB">\u0662\u0669\u0660\u0664.20</memoryinfo>', "<memoryinfo> is not a number"),
    ('<memoryinfo units="MB">1e30</memoryinfo>', "<memoryinfo> is out of range (0 to 1.84467e+19)"),
    ('<memoryinfo units="furlongs">2904.20</memoryinfo>', "<memoryinfo units='furlongs'> is not a unit"),
    ('<clockspeed units="MHz">-2534.000</clockspeed>', "<clockspeed> is out of range"),
    ('<clockspeed units="GHz">2534000</clockspeed>', "<clockspeed> is 2534000 GHz, out of range (0 to 1e+06 MHz)"),
    ('<memoryinfo units="KB">2e15</memoryinfo>', "<memoryinfo> is 2e15 KB, out of range (0 to 1.09951e+12 MB)"),
    ('<clockspeed units="parsecs">2534.000</clockspeed>', "<clockspeed units='parsecs'> is not a unit"),
    ('<size units="KB">inf</size>', "<size> is not a number"),
    ('<size units="KB">-8</size>', "<size> is out of range"),
    ('<wallclock units="fortnights">5068000000</wallclock>', "<wallclock units='fortnights'> is not a unit of time"),
    ('<wallclock units="seconds">-1.5</wallclock>', "<wallclock> is out of range"),
])
def test_values_that_cannot_be_are_still_refused(workdir: Path, element: str, expected: str):
    tag = element[1:element.index(" ")]
    text = count_with()
    start = text.index(f"<{tag} ")
    end = text.index(f"</{tag}>", start) + len(f"</{tag}>")
    text = text[:start] + element + text[end:]
    doc = workdir / "bad.xml"
    doc.write_text(text)
    for args in ([], ["-f", "json"], ["-x"]):
        line = one_line_error(run_tool("psprocess", *args, str(doc)), "psprocess")
        assert expected in line and "bad.xml" in line, line


def test_counts_that_cannot_be_are_still_refused(workdir: Path):
    for count, expected in (("-1", "negative"), ("18446744073709551617", "larger than any 64-bit counter"),
                            ("\u0661\u0662", "not a number"), ("inf", "not a number")):
        doc = workdir / "bad.xml"
        doc.write_text(original_count(1, {"PAPI_TOT_CYC": count}))  # type: ignore[dict-item]
        assert expected in one_line_error(run_tool("psprocess", str(doc)), "psprocess")


def test_first_generation_machine_is_read(workdir: Path):
    """<family>/<model> (machineinfo.dtd) rather than <cpuidinfo>."""
    assert "<family>15</family>" in MACHINE
    check_machine(read_json(workdir, original_count(3, COUNTS))["machine"])


@pytest.mark.parametrize("kind", ["raw profile", "first-generation processed profile"])
def test_original_profiles_of_other_generations_through_every_output(targets, workdir: Path, kind: str):
    """The original's raw profile (decimal PCs, pcbase 10) resolved against
    a real executable, and a processed profile of the first generation
    (<modules> apart, "??" file and function): their machine as written,
    and every output."""
    from tests.psprocess.test_fuzz import original_processed_old, original_raw_profile

    doc = workdir / "prof.xml"
    doc.write_text(original_raw_profile(targets["work"]) if kind == "raw profile" else original_processed_old())
    out = run_tool("psprocess", "-f", "json", str(doc))
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)["reports"][0]
    check_machine(report["machine"])
    assert sum(loc["samples"] for loc in report["locations"]) == (18 if kind == "raw profile" else 70)
    for args in ([], ["-f", "csv"]):
        p = run_tool("psprocess", *args, str(doc))
        assert p.returncode == 0 and p.stdout, p.stderr
    x = workdir / "again.xml"
    assert run_tool("psprocess", "-x", "-o", str(x), str(doc)).returncode == 0
    validate(x, "hwpcprofilereport-0.3.dtd")
    assert machine_of(json.loads(run_tool("psprocess", "-f", "json", str(x)).stdout)) == report["machine"]
    for option, target in (("--cube", workdir / "r.cubex"), ("--html", workdir / "r.html")):
        p = run_tool("psprocess", option, str(target), str(doc))
        assert p.returncode == 0 and target.stat().st_size > 0, p.stderr
