"""Exports read by the real tools, and the Python data API: gmon.out read
by GNU gprof agrees with psprocess's per-function samples; psuite.read_document()
gives the model with pandas-ready records."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import psuite
import psuite.errors
from tests.conftest import one_line_error, run_tool
from tests.psprocess.test_profiles import profile


def gprof_flat(exe: str, gmon: str) -> tuple[float, dict[str, float]]:
    gprof = shutil.which("gprof")
    assert gprof, "GNU gprof (binutils) is needed; tests/run.sh installs it"
    out = subprocess.run([gprof, "-b", "-p", exe, gmon], capture_output=True, text=True, check=True).stdout
    per_sample = float(re.search(r"Each sample counts as ([0-9.]+) ", out).group(1))
    self_seconds = {}
    for line in out.splitlines():
        cols = line.split()
        if len(cols) >= 4 and re.fullmatch(r"[0-9.]+", cols[0]) and re.fullmatch(r"[0-9.]+", cols[2]):
            self_seconds[cols[-1]] = float(cols[2])
    return per_sample, self_seconds


def test_gprof_reads_the_gmon_export(programs, workdir):
    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "1000", programs["prof_split"], "150")
    gmon = workdir / "gmon.out"
    p = run_tool("psprocess", "--gmon", str(gmon), str(report))
    assert p.returncode == 0, p.stderr
    per_sample, flat = gprof_flat(programs["prof_split"], str(gmon))
    assert per_sample == pytest.approx(0.001)
    ours: dict[str, int] = {}
    r = psuite.read_document(str(report))
    for loc in r.locations:
        if loc.module == programs["prof_split"]:
            ours[loc.function] = ours.get(loc.function, 0) + loc.samples
    assert set(flat) == set(ours), (flat, ours)
    for function, samples in ours.items():
        assert flat[function] == pytest.approx(samples * per_sample, abs=0.0051)  # gprof prints 2 decimals
    assert "exists" in one_line_error(run_tool("psprocess", "--gmon", str(gmon), str(report)), "psprocess")
    assert "use --cube" in one_line_error(run_tool("psprocess", "-c", "--gmon", str(workdir / "g2.out"),
                                                   str(report)), "psprocess")
    assert "give one input" in one_line_error(run_tool("psprocess", "--vprof", str(workdir / "v.out"),
                                                       str(report), str(report)), "psprocess")


def test_python_api_records(programs, workdir):
    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "2000", programs["prof_split"], "40")
    r = psuite.read_document(str(report))
    rows = r.to_records()
    assert rows and {"module", "file", "function", "line", "samples", "pid", "hostname"} <= set(rows[0])
    assert sum(row["samples"] for row in rows) == sum(sum(m.samples.values()) for m in r.modules)
    report.unlink()
    [counting] = profile(workdir, "-e", "task-clock,page-faults", programs["prof_split"], "10")
    c = psuite.read_document(str(counting))
    rows = c.to_records()
    assert {row["name"] for row in rows if row["kind"] == "event"} == {"task-clock", "page-faults"}
    with pytest.raises(psuite.errors.InputError):
        psuite.read_document(str(workdir / "missing.xml"))


def read_vmon(path) -> tuple[str, int, int, dict[int, int]]:
    """A vmon.out reader written from the format's description (vprof's
    version 4, as bfdprof reads it): (event, out of range, base, hits by
    absolute address)."""
    import struct

    data = path.read_bytes()
    magic, version, sets = struct.unpack_from(">IBi", data, 0)
    assert (magic, version, sets) == (0x766D6F6E, 4, 1)
    at = 9
    end = data.index(b"\0", at)
    event = data[at:end].decode()
    at = end + 1
    outside, overflow, entries, base = struct.unpack_from(">iiiq", data, at)
    at += 20
    hits: dict[int, int] = {}
    for _ in range(entries):
        n, rel = struct.unpack_from(">Hi", data, at)
        at += 6
        hits[base + rel] = hits.get(base + rel, 0) + n
    assert at == len(data) and overflow == 0
    return event, outside, base, hits


def test_vprof_export_read_back(programs, workdir):
    [report] = profile(workdir, "--profile", "ITIMER_PROF", "--period", "1000", programs["prof_split"], "60")
    vmon = workdir / "vmon.out"
    p = run_tool("psprocess", "--vprof", str(vmon), str(report))
    assert p.returncode == 0, p.stderr
    event, outside, base, hits = read_vmon(vmon)
    r = psuite.read_document(str(report), resolve=False)
    [exe] = [m for m in r.modules if m.file == programs["prof_split"]]
    assert event == "PROF"
    assert hits == {pc - exe.offset: n for pc, n in exe.samples.items()}
    assert outside == sum(sum(m.samples.values()) for m in r.modules if m is not exe)
    assert base == min(hits)


def bfdprof_summary(path) -> tuple[int, int, float]:
    """What IBM's bfdprof (mpitrace's bfdprof.c, get_vmon_histogram) prints
    first for a vmon.out, computed as its source does: it reads the magic,
    the version byte, the number of data sets, a 4-letter event name and
    its NUL, the out-of-range and overflow counts, the number of entries
    and the base, then per entry an unsigned 16-bit hit count and a 32-bit
    offset; "Got a total of <hits> hits at <entries> program-counter
    locations, corresponding to a cpu time of about <0.01 * hits> seconds"
    (its 10 ms per hit)."""
    import struct

    data = path.read_bytes()
    magic, version, _sets = struct.unpack_from(">IBi", data, 0)
    assert (magic, version) == (0x766D6F6E, 4)
    assert data[13] == 0  # the NUL after 4 letters, where bfdprof expects it
    _outside, _overflow, entries, _base = struct.unpack_from(">iiiq", data, 14)
    hits = sum(struct.unpack_from(">H", data, 34 + 6 * i)[0] for i in range(entries))
    return hits, entries, round(1.0e-2 * hits, 2)


@pytest.mark.parametrize(("source", "period"), [("ITIMER_PROF", 1000), ("ITIMER_PROF", 10000), ("ITIMER_REAL", 2000),
                                               ("task-clock", 1000000)])
def test_vprof_readers_seconds(programs, workdir, source, period):
    """vmon.out cannot hold the sampling period and its readers take a hit
    for 10 ms: psprocess writes the samples as they are and, unless they
    are 10 ms of CPU time each, says in its one line about the file by what
    factor the readers' seconds are off; that factor applied to bfdprof's
    seconds gives the profile's."""
    [report] = profile(workdir, "--profile", source, "--period", str(period), programs["prof_split"], "30")
    vmon = workdir / "vmon.out"
    p = run_tool("psprocess", "--vprof", str(vmon), str(report))
    assert p.returncode == 0, p.stderr
    [line] = p.stderr.splitlines()  # the note, when there is one, is in the line naming the file
    assert line.startswith(f"psprocess: wrote {vmon} (vmon.out version 4 of {programs['prof_split']}"), line
    r = psuite.read_document(str(report), resolve=False)
    [exe] = [m for m in r.modules if m.file == programs["prof_split"]]
    samples = sum(exe.samples.values())
    hits, _, seconds = bfdprof_summary(vmon)
    assert hits == samples  # one hit per sample: no sample rounded away
    if (source, period) == ("ITIMER_PROF", 10000):
        assert line.endswith(f"{programs['prof_split']})"), line  # the readers' assumption holds: nothing to say
        assert seconds == pytest.approx(samples * 0.01)
        return
    assert "bfdprof" in line and "take a hit for 10 ms" in line, line
    if not source.startswith("ITIMER_"):  # event overflow: samples, not time
        assert "a sample every 1,000,000 " in line and "not time: their seconds are the samples / 100" in line, line
        assert seconds * 100 == pytest.approx(samples)
        return
    factor = 10000 // period
    assert f"so their seconds are {factor}x too large (divide them by {factor})" in line, line
    assert ("wall-clock" in line) == (source == "ITIMER_REAL"), line
    assert seconds / factor == pytest.approx(samples * period / 1e6, abs=0.01 / factor)


def parse_stat(path) -> dict[str, dict]:
    """A statistics-file parser written from the CUBE guide's appendix 3.1:
    first line ignored; per pattern a line of name, metric id, count, then
    optionally mean median minimum maximum sum (all or none), variance, and
    both quartiles; '-' lines for instances; a blank line between patterns."""
    fields = ["mean", "median", "min", "max", "sum", "variance", "q25", "q75"]
    out = {}
    lines = path.read_text().splitlines()[1:]
    for line in lines:
        if not line.strip() or line.lstrip().startswith("-"):
            continue
        parts = line.split()
        values = [float(x) for x in parts[3:]]
        assert len(values) in (0, 5, 6, 8), line  # the allowed prefixes
        out[parts[0]] = {"id": int(parts[1]), "count": int(parts[2]), **dict(zip(fields, values, strict=False))}
    return out


def cube_values(path) -> tuple[dict[str, dict[tuple[str, tuple[str, str]], float]], list[tuple[str, str]]]:
    """Through pycubexr: metric -> {(region, (process, thread)): value}, and
    the locations as (process name, thread name) in the cube's order."""
    from pycubexr import CubexParser

    from tests.psprocess.pycubexr_stored import stored_only

    out: dict[str, dict] = {}
    with CubexParser(str(stored_only(path))) as c:
        where = [(group.name, loc.name) for group in c._anchor_result.system_tree_nodes[0].all_location_groups()
                 for loc in group.all_locations()]
        assert len(where) == len(c.get_locations())
        for m in c.get_metrics():
            values = c.get_metric_values(m)
            for cnode in c.all_cnodes():
                for w, v in zip(where, values.cnode_values(cnode), strict=True):
                    out.setdefault(m.name, {})[(c.get_region(cnode).name, w)] = float(v)
    return out, where


def cube_units(path) -> dict[str, tuple[str, str]]:
    """From anchor.xml: metric (unique name) -> (unit of measurement, description)."""
    import tarfile

    from lxml import etree

    with tarfile.open(path) as tar:
        root = etree.fromstring(tar.extractfile("anchor.xml").read())
    return {m.findtext("uniq_name"): (m.findtext("uom"), m.findtext("descr")) for m in root.iter("metric")}


def test_cube_of_ranks_and_threads(targets, workdir):
    """4 ranks x 2 threads profiled, combined into one cube: pycubexr reads
    for every metric x call path x thread what the single profiles say, and
    the statistics file follows the guide's appendix."""
    import os
    import statistics

    out = workdir / "runs"
    out.mkdir()
    for rank in range(4):
        env = {**os.environ, "OMPI_COMM_WORLD_RANK": str(rank)}
        p = run_tool("psrun", "-q", "-p", "-d", str(out), "--profile", "ITIMER_PROF", "--period", "2000",
                     targets["threads"], "1", "join", env=env)
        assert p.returncode == 0, p.stderr
    threads = sorted(p for p in out.glob("*.xml") if ".t" in p.name)
    assert len(threads) == 8  # main and one worker per rank
    cube = workdir / "all.cubex"
    p = run_tool("psprocess", "-c", "--cube", str(cube), *map(str, threads))
    assert p.returncode == 0, p.stderr
    got, where = cube_values(cube)
    assert where == [(f"MPI Rank {r}", f"thread {t}") for r in range(4) for t in (1, 2)]  # 0 is the total
    expected: dict[tuple[str, tuple[str, str]], float] = {}
    for path in threads:
        r = psuite.read_document(str(path))
        for loc in r.locations:
            key = (loc.function, (f"MPI Rank {r.rank}", f"thread {r.thread}"))
            expected[key] = expected.get(key, 0) + loc.samples
    regions = {region for region, _ in got["samples"]}
    for region in regions:
        for w in where:
            assert got["samples"][(region, w)] == expected.get((region, w), 0), (region, w)
            assert got["time"][(region, w)] == pytest.approx(expected.get((region, w), 0) * 0.002)
    totals = [sum(v for (_, w2), v in got["samples"].items() if w2 == w) for w in where]
    s = parse_stat(workdir / "all.stat")["samples"]
    assert s["count"] == 8 and s["sum"] == pytest.approx(sum(totals))
    assert (s["min"], s["max"]) == (min(totals), max(totals))
    assert s["mean"] == pytest.approx(statistics.fmean(totals), rel=1e-6)
    assert s["median"] == pytest.approx(statistics.median(totals))
    assert s["variance"] == pytest.approx(statistics.pvariance(totals), rel=1e-6)
    q1, _, q3 = statistics.quantiles(totals, n=4, method="inclusive")
    assert (s["q25"], s["q75"]) == pytest.approx((q1, q3))


def test_cube_of_one_counting_report(targets, workdir):
    p = run_tool("psrun", "-q", "-e", "task-clock,page-faults", targets["work"], "100", "5", "0")
    assert p.returncode == 0, p.stderr
    [report] = list(workdir.glob("*.xml"))
    cube = workdir / "one.cubex"
    assert run_tool("psprocess", "--cube", str(cube), str(report)).returncode == 0
    from psuite.analysis.experiments import cubepl_name, load

    got, where = cube_values(cube)  # the stored metrics, through pycubexr
    assert len(where) == 1
    r = psuite.read_document(str(report))
    for e in r.events:  # named as CubePL can name them: task-clock as task_clock
        assert list(got[cubepl_name(e.name)].values()) == [e.count]
    back = load(str(cube))  # the derived metrics are CUBE's derived metrics, evaluated on reading
    for m in r.metrics:
        assert back.metric(cubepl_name(m.name)).derived and back.metric(cubepl_name(m.name)).display == m.name
        assert back.total(cubepl_name(m.name)) == pytest.approx(m.value)
    units = cube_units(cube)  # the CUBE guide allows "sec" and "occ" only; a metric's own unit is described
    assert all(units[cubepl_name(e.name)][0] == "occ" for e in r.events)
    for m in r.metrics:
        unit, descr = units[cubepl_name(m.name)]
        assert unit == ("sec" if m.unit == "seconds" else "occ"), m
        assert unit == "sec" or not m.unit or descr.endswith(f"(unit: {m.unit})"), (m, descr)
    assert any(unit == "sec" for unit, _ in units.values()) and any(u == "occ" for u, _ in units.values())
    stat = parse_stat(workdir / "one.stat")
    assert all(s["count"] == 1 and "variance" not in s and "sum" in s for s in stat.values())  # one value
    assert "must end in .cubex" in one_line_error(run_tool("psprocess", "--cube", "x.cube", str(report)),
                                                  "psprocess")
