"""psuite's own documents filed natively: real psrun counting reports and
profiles of a small C program, their values checked against the XML (and
the profile's functions against the program's symbol table)."""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path

import pytest
from lxml import etree

from psuite.errors import PsuiteError
from psuite.psbase import native
from psuite.psbase.store import Store
from tests.conftest import run_tool

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) double spin_a(long n) {
    volatile double x = 0; for (long i = 0; i < n; i++) x += i * 0.5; return x; }
__attribute__((noinline)) double spin_b(long n) {
    volatile double x = 1; for (long i = 0; i < n; i++) x *= 1.0000001; return x; }
int main(int argc, char **argv) {
    long n = atol(argv[1]) * 1000000L;
    double r = spin_a(n) + spin_b(2 * n);
    return r < 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("psbase_native")
    (out / "spin.c").write_text(PROGRAM)
    subprocess.run(["cc", "-O1", "-g", "-o", str(out / "spin"), str(out / "spin.c")], check=True)
    return str(out / "spin")


def psrun(directory: Path, *args: str) -> Path:
    directory.mkdir(exist_ok=True)
    before = set(directory.glob("*.xml"))
    p = run_tool("psrun", "-q", "-d", str(directory), *args)
    assert p.returncode == 0, p.stderr
    new = sorted(set(directory.glob("*.xml")) - before)
    assert len(new) == 1, new
    return new[0]


@pytest.fixture
def archive(db_url) -> Store:
    s = Store(db_url, create=True)
    s.setup(native.definition("app"))
    yield s
    s.close()


def file(store: Store, paths: list[Path], merge: bool = False, force: bool = False) -> list[int]:
    native.check_native(store.definition("app"))
    runs, variables = native.runs([str(p) for p in paths], merge=merge)
    return store.add_runs("app", runs, force=force, new_variables=variables)


def xml_events(path: Path) -> dict[str, float]:
    root = etree.parse(str(path)).getroot()
    return {e.get("name"): float(e.text) for e in root.iter("hwpcevent")}


def test_counting_report_values_match_the_xml(tmp_path, program, archive):
    doc = psrun(tmp_path / "runs", "-e", "task-clock,page-faults", program, "20")
    assert file(archive, [doc]) == [1]
    run = archive.run("app", 1)
    root = etree.parse(str(doc)).getroot()
    events = xml_events(doc)
    assert run.values["task_clock"] == events["task-clock"] > 0
    assert run.values["page_faults"] == events["page-faults"]
    assert run.values["kind"] == "count"
    assert run.values["host"] == root.findtext("hostname")
    assert run.values["command"] == root.findtext("command") == f"{program} 20"
    # the document's local time (this machine's zone), filed in UTC
    local = dt.datetime.strptime(root.findtext("date"), "%a %b %d %H:%M:%S %Y").astimezone()
    assert run.values["date"] == local.astimezone(dt.timezone.utc).replace(tzinfo=None)
    assert run.values["usertime"] == pytest.approx(float(root.findtext("cputime/usertime")))
    assert run.values["ranks"] == 1 and run.values["threads"] == 1
    assert run.sources == [str(doc)] and run.rows == []
    # the events became result variables of the experiment, their names kept as synopsis
    d = archive.definition("app")
    assert d.variable("task_clock").synopsis == "task-clock" and d.variable("task_clock").is_result
    # filing the same document again is refused, forced it is a second run
    with pytest.raises(PsuiteError, match="already run 1 of app"):
        file(archive, [doc])
    assert file(archive, [doc], force=True) == [2]


def test_merged_reports_make_one_run_with_summed_counts(tmp_path, program, archive):
    docs = [psrun(tmp_path / "runs", "-e", "task-clock", program, "10") for _ in range(2)]
    assert file(archive, docs, merge=True) == [1]
    run = archive.run("app", 1)
    assert run.values["task_clock"] == sum(xml_events(d)["task-clock"] for d in docs)
    assert sorted(run.sources) == sorted(map(str, docs))
    # the same two documents in the other order are the same import
    with pytest.raises(PsuiteError, match="already run 1"):
        file(archive, docs[::-1], merge=True)
    # without --merge each is a run of its own
    assert file(archive, docs) == [2, 3]


def symbol_table(exe: str) -> list[tuple[int, int, str]]:
    out = subprocess.run(["nm", "--defined-only", "-S", exe], capture_output=True, text=True, check=True).stdout
    table = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            table.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    return table


def expected_functions(doc: Path, exe: str) -> dict[str, int]:
    """Samples per function of the program, from the XML's PCs and nm."""
    root = etree.parse(str(doc)).getroot()
    table = symbol_table(exe)
    counts: dict[str, int] = {}
    for module in root.iter("module"):
        if Path(module.get("file")).resolve() != Path(exe).resolve():
            continue
        base = int(module.get("offset"), 16)
        for s in module.iter("sample"):
            pc = int(s.get("pc"), 16) - base
            name = next((n for a, size, n in table if a <= pc < a + size), None)
            if name is not None:
                counts[name] = counts.get(name, 0) + int(s.text)
    return counts


def test_profile_function_summary_matches_the_xml(tmp_path, program, archive):
    doc = psrun(tmp_path / "runs", "--profile", "ITIMER_PROF", "--period", "1000", program, "40")
    assert file(archive, [doc]) == [1]
    run = archive.run("app", 1)
    root = etree.parse(str(doc)).getroot()
    total = int(root.findtext(".//totalsamples"))
    assert run.values["kind"] == "profile"
    assert run.values["profile_event"] == "ITIMER_PROF"
    assert run.values["total_samples"] == total > 0
    functions = [r for r in run.rows if r.get("samples") is not None]  # the line summary's rows are the others
    assert sum(r["samples"] for r in functions) == total
    mine = {r["function"]: r["samples"] for r in functions if Path(r["module"]).resolve() == Path(program).resolve()}
    expected = expected_functions(doc, program)
    assert expected.get("spin_b", 0) > 0 and expected.get("spin_a", 0) > 0  # both ran long enough to be sampled
    assert mine == expected
    # rows are ordered by samples, the most first
    assert [r["samples"] for r in functions] == sorted((r["samples"] for r in functions), reverse=True)


def test_counts_and_profiles_do_not_merge(tmp_path, program, archive):
    a = psrun(tmp_path / "runs", "-e", "task-clock", program, "5")
    b = psrun(tmp_path / "runs", "--profile", "ITIMER_PROF", program, "5")
    with pytest.raises(PsuiteError, match="count and profile reports cannot make one run"):
        file(archive, [a, b], merge=True)
    assert archive.list_runs("app", deleted=True) == []


def test_native_input_needs_a_psuite_experiment(db_url):
    from psuite.psbase.model import Definition, Variable

    s = Store(db_url, create=True)
    try:
        s.setup(Definition("other", variables=[Variable("x", "integer")]))
        with pytest.raises(PsuiteError, match="not set up for psuite documents"):
            native.check_native(s.definition("other"))
    finally:
        s.close()


def test_event_names_become_variable_names():
    assert native.column_name("perf::CYCLES:u") == "perf_CYCLES_u"
    assert native.column_name("PAPI_TOT_CYC") == "PAPI_TOT_CYC"
    assert native.column_name("CPU time (seconds)") == "CPU_time_seconds"
    assert native.column_name("samples") == "e_samples"  # not a base variable
    assert native.column_name("3rd") == "e_3rd"


def test_multi_report_is_one_run(tmp_path, program, archive):
    docs = [psrun(tmp_path / "runs", "-e", "task-clock", program, "5") for _ in range(2)]
    multi = tmp_path / "multi.xml"
    p = run_tool("psprocess", "-c", "-x", "-o", str(multi), *map(str, docs))
    assert p.returncode == 0, p.stderr
    assert etree.parse(str(multi)).getroot().tag == "multihwpcreport"
    assert file(archive, [multi]) == [1]
    run = archive.run("app", 1)
    assert run.values["task_clock"] == sum(xml_events(d)["task-clock"] for d in docs)
    assert run.sources == [str(multi)]


def test_resource_report_values_match_the_xml(tmp_path, program, archive):
    out = tmp_path / "res"
    out.mkdir()
    p = run_tool("psrun", "-q", "-R", "-d", str(out), program, "5")
    assert p.returncode == 0, p.stderr
    (doc,) = out.glob("*.resource.xml")
    assert file(archive, [doc]) == [1]
    values = archive.run("app", 1).values
    root = etree.parse(str(doc)).getroot()
    assert values["kind"] == "resource"
    assert values["maxrss"] == float(root.findtext("maxrss")) > 0
    assert values["maxvm"] == float(root.findtext("maxvm"))
    assert values["minor_faults"] == int(root.findtext("faults/minor"))
    assert values["major_faults"] == int(root.findtext("faults/major"))
    assert values["usertime"] == float(root.findtext("cputime/usertime"))
    start = dt.datetime.strptime(root.findtext("starttime"), "%Y-%m-%dT%H:%M:%S%z")
    assert values["date"] == start.astimezone(dt.timezone.utc).replace(tzinfo=None)
    assert values["command"] == root.findtext("command")


def test_thread_reports_with_their_process_total(tmp_path, targets_threads, archive):
    """psrun -p: one report per thread and the process total; merged, the
    total is left out (it would count every thread twice)."""
    out = tmp_path / "t"
    out.mkdir()
    p = run_tool("psrun", "-q", "-p", "-d", str(out), "-e", "task-clock", targets_threads, "3")
    assert p.returncode == 0, p.stderr
    docs = sorted(out.glob("*.xml"))
    threads = [d for d in docs if "process total" not in (etree.parse(str(d)).getroot().findtext("annotation") or "")]
    assert len(docs) == len(threads) + 1 and len(threads) >= 3
    assert file(archive, docs, merge=True) == [1]
    values = archive.run("app", 1).values
    assert values["threads"] == len(threads)
    assert values["task_clock"] == sum(xml_events(d)["task-clock"] for d in threads)


@pytest.fixture(scope="module")
def targets_threads(tmp_path_factory) -> str:
    from tests.conftest import TARGETS

    exe = tmp_path_factory.mktemp("psbase_threads") / "threads"
    subprocess.run(["cc", "-O1", "-pthread", "-o", str(exe), str(TARGETS / "threads.c")], check=True)
    return str(exe)


def pycubexr_totals(path: Path) -> dict[str, float]:
    """Each metric of a cube summed over every call path and location, as
    pycubexr reads the file (not psuite's reader); pycubexr knows no derived
    metric, which psuite writes as CUBE's derived metrics: the stored ones."""
    from pycubexr import CubexParser

    from tests.psprocess.pycubexr_stored import stand_ins, stored_only

    left_out = stand_ins(path)  # written for CubeLib's cube_stat only, not psuite's
    with CubexParser(str(stored_only(path))) as c:
        out = {}
        for m in c.get_metrics():
            if m.name in left_out:
                continue
            v = c.get_metric_values(m)
            out[m.name] = sum(float(x) for k in c.get_root_cnodes()
                              for x in v.cnode_values(k, convert_to_inclusive=True))
        return out


def test_cube_files_are_runs_with_their_metric_totals(tmp_path, program, archive):
    """psprocess --cube of a real profile and of a real counting report,
    filed as runs: each metric's total equals the cube read by pycubexr,
    where and what ran equals the psrun documents."""
    prof = psrun(tmp_path / "runs", "--profile", "ITIMER_PROF", "--period", "1000", program, "20")
    count = psrun(tmp_path / "runs", "-e", "task-clock,page-faults", program, "10")
    cubes = []
    for doc in (prof, count):
        cube = tmp_path / f"{doc.stem}.cubex"
        p = run_tool("psprocess", "--cube", str(cube), str(doc))
        assert p.returncode == 0, p.stderr
        cubes.append(cube)
    assert file(archive, cubes) == [1, 2]
    d = archive.definition("app")
    for idx, (doc, cube) in enumerate(zip((prof, count), cubes, strict=True), start=1):
        run = archive.run("app", idx)
        root = etree.parse(str(doc)).getroot()
        assert run.values["kind"] == "cube" and run.sources == [str(cube)] and run.rows == []
        assert run.values["host"] == root.findtext("hostname")
        assert run.values["command"] == root.findtext("command")
        assert run.values["ranks"] == 1 and run.values["threads"] == 1
        totals = pycubexr_totals(cube)
        got = {d.variable(k).synopsis: v for k, v in run.values.items() if d.variable(k).synopsis in totals}
        assert got.keys() == totals.keys()
        for name, total in totals.items():
            assert got[name] == pytest.approx(total, rel=1e-12), name
    # the profile's samples are its document's samples; the counts the document's counts
    assert archive.run("app", 1).values["e_samples"] == int(etree.parse(str(prof)).getroot().findtext(
        ".//totalsamples")) > 0
    events = xml_events(count)
    assert archive.run("app", 2).values["task_clock"] == events["task-clock"] > 0
    # one per run: --merge is refused, and nothing is filed
    with pytest.raises(PsuiteError, match="CUBE files are filed one per run; leave out --merge"):
        file(archive, cubes, merge=True)
    assert len(archive.list_runs("app", deleted=True)) == 2
