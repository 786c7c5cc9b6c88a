"""psprocess reads every document psuite or the original PerfSuite writes
(the multi-documents too), combines `psrun -p` runs without counting the
process total twice, writes documents the way PerfSuite's real readers
need them, and refuses values that cannot be, naming the element."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import one_line_error, run_tool, validate

# <machineinfo> as the original PerfSuite wrote it (a Pentium 4 Xeon): the
# first generation's <family>/<model> (MACHINE) or the -0.3 generation's
# <cpuidinfo> (MACHINE_03); memory in MB with two decimals, the clock with
# three, a trace cache sized in KuOps (thousands of micro-operations), fully
# associative TLBs with an empty <associativity>.
_CPU_AND_CACHES = """<revision>7</revision><clockspeed units="MHz">2534.000</clockspeed>
<cacheinfo><levels>3</levels><cache type="data" level="1"><size units="KB">8</size>
<linesize units="B">64</linesize><associativity type="set">4</associativity></cache>
<cache type="instruction" level="1"><size units="KuOps">12</size><associativity type="set">8</associativity></cache>
<cache type="unified" level="2"><size units="KB">512</size><linesize units="B">64</linesize>
<associativity type="set">8</associativity></cache>
<cache type="unified" level="3"><size units="KB">1024</size><linesize units="B">128</linesize>
<associativity type="set">8</associativity></cache></cacheinfo>
<tlbinfo><tlb type="instruction" level="1"><entries>128</entries><associativity type="full"/></tlb>
<tlb type="data" level="1"><entries>64</entries><associativity type="full"></associativity></tlb></tlbinfo></cpuinfo>
<memoryinfo units="MB">2904.20</memoryinfo><syspagesize units="KB">4</syspagesize></machineinfo>"""
MACHINE = ("<machineinfo><cpucount>2</cpucount><cpuinfo><vendor>GenuineIntel</vendor><family>15</family>"
           "<brand>Intel(R) Xeon(TM) CPU 2.53GHz</brand><model>2</model>" + _CPU_AND_CACHES)
MACHINE_03 = ("<machineinfo><cpucount>2</cpucount><cpuinfo><vendor>GenuineIntel</vendor>"
              "<brand>Intel(R) Xeon(TM) CPU 2.53GHz</brand><cpuidinfo>Family 15 Model 2 Stepping 7</cpuidinfo>"
              + _CPU_AND_CACHES)


def original_count(pid: int, counts: dict[str, int], wall_ticks: int = 5068000000) -> str:
    """A <hwpcreport> as the original PerfSuite 0.6 wrote it (no <thread>,
    ticks, ctime date, domain "(none)")."""
    events = "".join(f'<hwpcevent type="preset" name="{n}" derived="no">{c}</hwpcevent>' for n, c in counts.items())
    return (f'<hwpcreport version="0.2" generator="PerfSuite libpshwpc 0.6.2"><date>Tue Mar 04 10:12:09 2014</date>'
            f"<hostname>node1</hostname><domainname>(none)</domainname><pid>{pid}</pid>"
            f"<username>kufrin</username><command>./app</command>"
            f'<wallclock units="ticks">{wall_ticks}</wallclock>{MACHINE}'
            f'<hwpceventdata class="PAPI" version="3.6.2" domain="user">{events}</hwpceventdata></hwpcreport>')


def original_profile(pid: int, thread: int, lines: dict[tuple[str, str, int], int]) -> str:
    """A processed <hwpcprofilereport> as PerfSuite's psprocess -x wrote it."""
    total = sum(lines.values())
    body = []
    for (file, function, lineno), n in sorted(lines.items()):
        body.append(f'<module name="/home/u/app"><file name="{file}"><function name="{function}">'
                    f'<line lineno="{lineno}">{n}</line></function></file></module>')
    return (f'<hwpcprofilereport version="0.3" generator="PerfSuite psprocess 0.6.2">'
            f"<date>Tue Mar 04 10:12:09 2014</date><hostname>node1</hostname><domainname>(none)</domainname>"
            f"<executioninfo><date>Tue Mar 04 10:12:09 2014</date><hostname>node1</hostname>"
            f"<domainname>(none)</domainname><pid>{pid}</pid><thread>{thread}</thread><command>./app</command>"
            f'<wallclock units="ticks">2534000000</wallclock><cputime units="seconds"><usertime>1.00</usertime>'
            f"<systemtime>0.00</systemtime></cputime>{MACHINE_03}</executioninfo>"
            f'<hwpcprofile mapper="binutils"><hwpcevent class="itimer" name="ITIMER_PROF" domain="user"/>'
            f"<period>10000</period><totalsamples>{total}</totalsamples>{''.join(body)}</hwpcprofile>"
            f"</hwpcprofilereport>")


DOCTYPE = '<!DOCTYPE {} SYSTEM "/usr/share/perfsuite/dtds/pshwpc/{}-0.3.dtd">\n'


def test_original_multihwpcreport_is_read_and_combined(workdir):
    doc = workdir / "multi.xml"
    doc.write_text('<?xml version="1.0"?>\n' + DOCTYPE.format("multihwpcreport", "multihwpcreport")
                   + '<multihwpcreport version="0.3">'
                   + original_count(100, {"PAPI_TOT_CYC": 1000, "PAPI_TOT_INS": 500})
                   + original_count(101, {"PAPI_TOT_CYC": 3000, "PAPI_TOT_INS": 2500}) + "</multihwpcreport>")
    p = run_tool("psprocess", "-f", "json", str(doc))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["schema"] == "psuite.multi/1"
    stats = {s["name"]: s for s in out["statistics"]}
    assert stats["PAPI_TOT_CYC"]["sum"] == 4000 and stats["PAPI_TOT_CYC"]["max_who"] == "pid 101 on node1"
    ipc = stats["Instructions per cycle"]
    assert (ipc["min"], ipc["max"]) == pytest.approx((0.5, 2500 / 3000))
    # (none) is getdomainname's "no domain", and ticks are seconds x MHz x 1e6.
    member = out["reports"][0]
    assert member["domainname"] == "" and member["wallclock"] == pytest.approx(5068000000 / 2534e6)
    text = run_tool("psprocess", str(doc)).stdout
    assert "(none)" not in text and "Reports combined        : 2" in text
    # Combining again: the multi-document counts as its members; given twice, it is refused
    again = run_tool("psprocess", "-c", "-f", "json", str(doc))
    assert json.loads(again.stdout)["statistics"][0]["count"] == 2
    twice = run_tool("psprocess", "-c", "-f", "json", str(doc), str(doc))
    assert twice.returncode == 2 and twice.stdout == "" and len(twice.stderr.splitlines()) == 1, twice.stderr


def test_original_multihwpcprofilereport_is_read(workdir):
    doc = workdir / "mprof.xml"
    members = [original_profile(200, 0, {("a.c", "solve", 10): 60, ("a.c", "init", 3): 5}),
               original_profile(200, 1, {("a.c", "solve", 10): 30, ("b.c", "??", 0): 5})]
    doc.write_text('<?xml version="1.0"?>\n' + DOCTYPE.format("multihwpcprofilereport", "multihwpcprofilereport")
                   + '<multihwpcprofilereport version="0.3">' + "".join(members) + "</multihwpcprofilereport>")
    out = json.loads(run_tool("psprocess", "-f", "json", str(doc)).stdout)
    assert out["schema"] == "psuite.multiprofile/1"
    spread = {s["name"]: s for s in out["statistics"]}
    assert spread["solve"]["sum"] == 90 and spread["solve"]["max_who"] == "pid 200 thread 0 on node1"
    assert spread["init"]["min"] == 0  # absent from thread 1
    assert out["totals"] == []  # the original wrote no process totals: thread 0 is a thread


def counting_docs(targets, workdir: Path, per_thread: bool) -> list[Path]:
    runs = workdir / ("threads" if per_thread else "runs")
    runs.mkdir()
    args = ["-p"] if per_thread else []
    p = run_tool("psrun", "-q", *args, "-d", str(runs), "-e", "task-clock,page-faults", targets["threads"])
    assert p.returncode == 0, p.stderr
    return sorted(runs.glob("*.xml"))


def test_own_combined_counting_output_reads_back(targets, workdir):
    runs = workdir / "runs"
    runs.mkdir()
    for rank in range(3):
        p = run_tool("psrun", "-q", "-d", str(runs), "-e", "task-clock,page-faults", targets["work"],
                     str(30 * (rank + 1)), "1", "0", env={**os.environ, "OMPI_COMM_WORLD_RANK": str(rank)})
        assert p.returncode == 0, p.stderr
    first = run_tool("psprocess", "-c", "-f", "json", str(runs))
    combined = workdir / "combined.xml"
    assert run_tool("psprocess", "-c", "-x", "-o", str(combined), str(runs)).returncode == 0
    assert combined.read_text().splitlines()[1].startswith("<!DOCTYPE multihwpcreport")
    validate(combined, "multihwpcreport-0.3.dtd")
    second = run_tool("psprocess", "-f", "json", str(combined))
    assert second.returncode == 0, second.stderr
    a, b = json.loads(first.stdout)["statistics"], json.loads(second.stdout)["statistics"]
    assert [(s["name"], s["count"], s["min_who"], s["max_who"]) for s in a] == \
        [(s["name"], s["count"], s["min_who"], s["max_who"]) for s in b]
    for x, y in zip(a, b, strict=True):
        assert y["sum"] == pytest.approx(x["sum"], rel=1e-6)
    # The text report of the document and the CSV of its members.
    assert "Reports combined        : 3" in run_tool("psprocess", str(combined)).stdout
    rows = run_tool("psprocess", "-f", "csv", str(combined)).stdout.splitlines()
    assert sum(",event,task-clock," in r for r in rows) == 3


def test_per_thread_run_combined_counts_each_sample_once(workdir, programs):
    runs = workdir / "prof"
    runs.mkdir()
    p = run_tool("psrun", "-q", "-p", "-d", str(runs), "--profile", "ITIMER_PROF", "--period", "1000",
                 programs["prof_threads"])
    assert p.returncode == 0, p.stderr
    files = sorted(runs.glob("*.xml"))
    assert len(files) >= 3  # the process total and its threads
    total = next(f for f in files if not re.search(r"\.t\d+\.", f.name))
    whole = json.loads(run_tool("psprocess", "-f", "json", str(total)).stdout)["reports"][0]
    by_function: dict[str, int] = {}
    for loc in whole["locations"]:
        by_function[loc["function"]] = by_function.get(loc["function"], 0) + loc["samples"]
    out = run_tool("psprocess", "-c", "-f", "json", *map(str, files))
    assert out.returncode == 0, out.stderr
    combined = json.loads(out.stdout)
    assert len(combined["totals"]) == 1 and len(combined["reports"]) == len(files) - 1
    spread = {s["name"]: s["sum"] for s in combined["statistics"]}
    for name in ("work_a", "work_b"):
        assert spread[name] == by_function[name] > 0  # once, not twice
    assert "Process totals          : 1 left out" in run_tool("psprocess", "-c", *map(str, files)).stdout
    # -c -x: the threads' processed profiles, each with a distinct (pid, thread), read back the same.
    xml = workdir / "threads.xml"
    assert run_tool("psprocess", "-c", "-x", "-o", str(xml), *map(str, files)).returncode == 0
    root = validate(xml, "multihwpcprofilereport-0.3.dtd")
    ids = [(m.findtext("executioninfo/pid"), m.findtext("executioninfo/thread")) for m in root]
    assert len(set(ids)) == len(ids) and all(t and t.isdigit() for _, t in ids)
    # every thread, an idle one too: with 0 samples and the one line of 0 the DTD wants, in "??"
    assert len(root) == len(files) - 1
    for m in root:
        if int(m.findtext("hwpcprofile/totalsamples")) == 0:
            assert [(f.get("name"), f.findtext("function/line")) for f in m.iter("file")] == [("??", "0")]
    back = json.loads(run_tool("psprocess", "-f", "json", str(xml)).stdout)
    assert {s["name"]: s["sum"] for s in back["statistics"]}["work_a"] == spread["work_a"]
    assert "??" not in {s["name"] for s in back["statistics"]}  # the placeholder is no location


def test_written_documents_follow_the_original(targets, workdir):
    """What psprocess -x writes carries what PTP and TAU need: a DOCTYPE,
    a ctime date, wallclock ticks against the clockspeed, a <thread>."""
    [report] = counting_docs(targets, workdir, per_thread=False)
    out = workdir / "again.xml"
    assert run_tool("psprocess", "-x", "-o", str(out), str(report)).returncode == 0
    text = out.read_text()
    assert re.match(r'<\?xml[^>]*\?>\n<!DOCTYPE hwpcreport SYSTEM "/usr/share/perfsuite/dtds/pshwpc/', text)
    root = validate(out, "hwpcreport-0.3.dtd")
    time.strptime(root.findtext("date"), "%a %b %d %H:%M:%S %Y")
    assert root.find("wallclock").get("units") == "ticks"
    seconds = int(root.findtext("wallclock")) / (float(root.findtext("machineinfo/cpuinfo/clockspeed")) * 1e6)
    source = json.loads(run_tool("psprocess", "-f", "json", str(report)).stdout)["reports"][0]
    assert seconds == pytest.approx(source["wallclock"], rel=1e-3)
    assert root.findtext("thread").isdigit()
    notes = subprocess.run(["readelf", "-n", targets["threads"]], capture_output=True, text=True).stdout
    assert source["buildid"] == re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)


def test_idle_profile_has_no_placeholder(workdir):
    doc = workdir / "idle.xml"
    doc.write_text('<hwpcreport version="0.3" generator="psuite" mode="profile"><date>d</date><hostname>h</hostname>'
                   "<domainname/><pid>5</pid><thread>2</thread><wallclock units='seconds'>1</wallclock>"
                   "<cputime><usertime>0</usertime><systemtime>0</systemtime></cputime>"
                   "<hwpcprofiledata class='itimer'><profileinfo><profileevent domain='user' type='native' "
                   "name='ITIMER_PROF' derived='no'><threshold>1000</threshold></profileevent></profileinfo>"
                   "<totalsamples>0</totalsamples><module file='/bin/true' offset='0x0'><samples pcbase='16'/>"
                   "</module></hwpcprofiledata></hwpcreport>")
    line = one_line_error(run_tool("psprocess", "-x", str(doc)), "psprocess")
    assert "has no samples" in line
    assert "??" not in run_tool("psprocess", "-f", "json", str(doc)).stdout


COUNT = ('<hwpcreport version="0.3" mode="count"><date>d</date><hostname>h</hostname><domainname/>'
         "<pid>{pid}</pid><wallclock units='seconds'>{wall}</wallclock>"
         "<cputime><usertime>1</usertime><systemtime>0</systemtime></cputime>{machine}"
         "<hwpceventdata class='perfmon' domain='user'>"
         "<hwpcevent type='native' name='page-faults' derived='no'>{count}</hwpcevent></hwpceventdata></hwpcreport>")


@pytest.mark.parametrize("field, expected", [
    ({"pid": "\u00b2"}, "<pid> is not a whole number"),
    ({"pid": "99999999999999999999"}, "<pid> is out of range"),
    ({"count": "1" + "0" * 400}, "too many digits"),
    ({"count": "1e400"}, "not a finite number"),
    ({"count": "nan"}, "not a number"),
    ({"count": "-1"}, "negative"),
    ({"count": "1.5e308"}, "larger than any 64-bit counter"),
    ({"count": "\u0663"}, "not a number"),  # an Arabic-Indic digit
    ({"wall": "-5"}, "<wallclock> is out of range"),
    ({"wall": "inf"}, "<wallclock> is not a number"),
    ({"machine": "<machineinfo><cpucount>" + "9" * 5000 + "</cpucount></machineinfo>"}, "<cpucount>"),
    ({"machine": "<machineinfo><cpuinfo><clockspeed>abc</clockspeed></cpuinfo></machineinfo>"}, "<clockspeed>"),
])
def test_impossible_values_are_refused_naming_the_element(workdir, field, expected):
    values = {"pid": "7", "wall": "2", "count": "10", "machine": "", **field}
    doc = workdir / "bad.xml"
    doc.write_text(COUNT.format(**values))
    for args in ([], ["-f", "json"], ["-c"]):
        line = one_line_error(run_tool("psprocess", *args, str(doc)), "psprocess")
        assert expected in line and "bad.xml" in line


@pytest.mark.parametrize("attrs, expected", [
    ('<samples frequency="abc">3</samples>', "<samples frequency> is not a number"),
    ('<samples frequency="-1e400">3</samples>', "<samples frequency>"),
    ('<loadavgs min="0" max="1" resolution="0.5" outofrange="x"/>', "<loadavgs outofrange>"),
    ("<maxloads><maxload interval='-1e400' unit='minute'>1</maxload></maxloads>", "<maxload interval>"),
])
def test_resource_report_values_are_checked(workdir, attrs, expected):
    doc = workdir / "res.xml"
    doc.write_text(f'<resourcereport version="0.1"><pid>3</pid>{attrs}</resourcereport>')
    assert expected in one_line_error(run_tool("psprocess", str(doc)), "psprocess")


def test_combining_extreme_but_valid_counts_stays_finite(workdir):
    paths = []
    for i, count in enumerate(("18446744073709551615", "18446744073709551615", "0")):
        p = workdir / f"r{i}.xml"
        p.write_text(COUNT.format(pid=i + 1, wall="1", count=count, machine=""))
        paths.append(str(p))
    out = run_tool("psprocess", "-c", "-f", "json", *paths)
    assert out.returncode == 0, out.stderr
    stat = json.loads(out.stdout)["statistics"][0]  # strict JSON: json.loads accepts no Infinity here
    assert stat["sum"] == pytest.approx(2 * 18446744073709551615)
    assert stat["stddev"] == pytest.approx(8.696e18, rel=1e-3)
    assert "Infinity" not in out.stdout and "NaN" not in out.stdout


def test_multi_document_errors_are_one_line(workdir):
    empty = workdir / "empty.xml"
    empty.write_text('<multihwpcreport version="0.3"/>')
    assert "holds no reports" in one_line_error(run_tool("psprocess", str(empty)), "psprocess")
    wrong = workdir / "wrong.xml"
    wrong.write_text('<multihwpcreport version="0.3"><resourcereport/></multihwpcreport>')
    assert "holds a <resourcereport>" in one_line_error(run_tool("psprocess", str(wrong)), "psprocess")


def test_huge_report_is_streamed(workdir):
    """Parsing keeps no element per event: 200,000 events read with a small
    tree (the full benchmark is bench/large_documents.py)."""
    from psuite.formats.readers import read_stream

    doc = workdir / "big.xml"
    with open(doc, "w") as f:
        f.write(COUNT.split("<hwpcevent ")[0].format(pid=1, wall="1", machine=""))
        for i in range(200_000):
            f.write(f'<hwpcevent type="native" name="e{i}" derived="no">{i}</hwpcevent>\n')
        f.write("</hwpceventdata></hwpcreport>")
    with open(doc, "rb") as f:
        report = read_stream(f, str(doc))
    assert len(report.events) == 200_000 and report.events[-1].count == 199_999
    assert sum(1 for _ in etree.ElementTree(report_tree_root(doc)).iter()) < 20
    # Written in blocks (JSON and text): the same as one piece would be.
    out = run_tool("psprocess", "-f", "json", str(doc))
    events = json.loads(out.stdout)["reports"][0]["events"]
    assert [e["count"] for e in events] == list(range(200_000))
    assert events[-1] == {"name": "e199999", "count": 199_999, "type": "native", "derived": False,
                          "description": "", "counted_as": ""}
    from psuite.analysis import metrics
    from psuite.formats.writers import json_format, text

    report.metrics = metrics.derive(report, metrics.load(metrics.standard_metrics_path()))
    assert out.stdout == json_format.render([report])  # byte for byte
    lines = run_tool("psprocess", str(doc)).stdout.splitlines()
    assert text.render([report]).splitlines() == lines
    assert sum(1 for line in lines if re.match(r"\s*\d+\s+e\d+\s", line)) == 200_000


def report_tree_root(doc: Path):
    from psuite.formats.readers.document import parse

    with open(doc, "rb") as f:
        return parse(f, str(doc)).root


def test_events_after_a_stray_element_are_read(workdir):
    """A stray element before the events does not hide them."""
    doc = workdir / "stray.xml"
    doc.write_text(COUNT.format(pid=1, wall="1", machine="", count="5").replace(
        "<hwpcevent ", "<sample pc='1'>1</sample><hwpcevent ", 1))
    out = json.loads(run_tool("psprocess", "-f", "json", str(doc)).stdout)
    assert [(e["name"], e["count"]) for e in out["reports"][0]["events"]] == [("page-faults", 5)]
