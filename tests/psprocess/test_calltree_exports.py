"""Call-tree exports read by their real consumers, on a known tree:

thread 0: main 2 (self), main;a;work 50, main;b;work 30, main;b;c;work 20,
          main;b;c;sq 5 (sq inlined into c)
thread 1: start_thread;worker;work 10, start_thread;worker;[libm.so.6] 4

ITIMER_PROF at 1,000 us: a sample is 1 ms.  Folded stacks through
gprof2dot's collapse reader and speedscope's own folded-stack parser (run
from its npm package); speedscope JSON against the schema speedscope
publishes; pprof's profile.proto through `go tool pprof`; CUBE through
pycubexr."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from psuite.analysis.experiments import from_report
from psuite.errors import OutputError, UsageError
from psuite.formats.exporters import cube, folded, pprof, speedscope
from psuite.model.calltree import CallPathProfile, CallTree, Frame, ThreadCallPaths
from psuite.model.report import Location, MultiReport, ProfileReport
from tests.conftest import one_line_error, run_tool
from tests.psprocess.test_calltree import program, real_profile, write_alone  # noqa: F401  (fixtures)

APP, LIB, LIBC, LIBM = "/opt/app/app", "/opt/app/libwork.so", "/lib/libc.so.6", "/lib/libm.so.6"
MAIN, A, B, C = (Frame(n, APP, "app.c", line) for n, line in (("main", 40), ("a", 20), ("b", 28), ("c", 12)))
WORK = Frame("work", LIB, "work.c", 7)
SQ = Frame("sq", APP, "app.c", 5, inlined=True)
START, WORKER = Frame("start_thread", LIBC), Frame("worker", APP, "app.c", 60)
UNRESOLVED = Frame("??", LIBM)

THREAD0 = [((MAIN,), 2), ((MAIN, A, WORK), 50), ((MAIN, B, WORK), 30), ((MAIN, B, C, WORK), 20), ((MAIN, B, C, SQ), 5)]
THREAD1 = [((START, WORKER, WORK), 10), ((START, WORKER, UNRESOLVED), 4)]
TOTAL0, TOTAL1 = 107, 14

# per function: samples of its own (flat) and of every path through it (cumulative)
FLAT = {"work": 110, "sq": 5, "[libm.so.6]": 4, "main": 2}
CUM = {"main": 107, "a": 50, "b": 55, "c": 25, "work": 110, "sq": 5, "start_thread": 14, "worker": 14,
       "[libm.so.6]": 4}

SPEEDSCOPE_VERSION = "1.25.0"  # the folded-stack parser is found in this release's bundle


def profile(threads=(THREAD0, THREAD1), event="ITIMER_PROF", threshold=1000, rank=None, pid=1234) -> ProfileReport:
    cp = CallPathProfile(pid=pid, hostname="host", event=event, threshold=threshold)
    for i, paths in enumerate(threads):
        t = ThreadCallPaths(i, pid + i)
        t.tree = CallTree()
        for path, samples in paths:
            t.tree.add(path, samples)
        cp.threads.append(t)
    return ProfileReport(hostname="host", pid=pid, thread=0, command="/opt/app/app 10", event=event,
                         threshold=threshold, rank=rank, callpaths=cp, wallclock=0.25)


def function_sums(threads) -> tuple[dict[str, int], dict[str, int]]:
    """Flat and cumulative samples per function name from the paths (a
    function counts once per path, as pprof and gprof2dot count it)."""
    flat: dict[str, int] = {}
    cum: dict[str, int] = {}
    for paths in threads:
        for path, n in paths:
            names = ["[libm.so.6]" if f.function == "??" else f.function for f in path]
            flat[names[-1]] = flat.get(names[-1], 0) + n
            for name in set(names):
                cum[name] = cum.get(name, 0) + n
    return flat, cum


def test_the_known_sums():
    """The expected figures below are the tree's own sums."""
    flat, cum = function_sums([THREAD0, THREAD1])
    assert flat == FLAT and cum == CUM
    r = profile()
    assert [t.tree.total() for t in r.callpaths.threads] == [TOTAL0, TOTAL1]


# ------------------------------------------------------------------ folded


EXPECTED_FOLDED = """\
main 2
main;a;work 50
main;b;work 30
main;b;c;work 20
main;b;c;sq_[i] 5
start_thread;worker;work 10
start_thread;worker;[libm.so.6] 4
"""


def test_folded_stacks_exact(tmp_path):
    out = tmp_path / "app.folded"
    assert "7 call paths" in folded.write(from_report(profile()), str(out))
    assert out.read_text() == EXPECTED_FOLDED


def test_folded_merges_ranks_and_sanitises_names(tmp_path):
    """Two ranks with the same tree: each line once, its weight summed;
    ';' and line breaks in names cannot split a frame or a line."""
    odd = Frame("operator;\nweird\tname", APP)
    both = MultiReport(reports=[profile(rank=0), profile(threads=(THREAD0 + [((MAIN, odd), 3)],), rank=1)])
    out = tmp_path / "all.folded"
    folded.write(from_report(both), str(out))
    lines = dict(line.rsplit(" ", 1) for line in out.read_text().splitlines())
    assert lines["main;a;work"] == "100" and lines["main;b;c;sq_[i]"] == "10"
    assert lines["start_thread;worker;work"] == "10"  # rank 1 has no thread 1
    assert lines["main;operator, weird name"] == "3"
    assert len(out.read_text().splitlines()) == 8


def test_gprof2dot_reads_folded(tmp_path):
    """gprof2dot -f collapse: every function with its own samples and its
    share of the total (self and total percentages)."""
    gprof2dot = shutil.which("gprof2dot")
    assert gprof2dot, "gprof2dot is needed (pip install gprof2dot; tests/run.sh installs it)"
    out = tmp_path / "app.folded"
    folded.write(from_report(profile()), str(out))
    dot = subprocess.run([gprof2dot, "-f", "collapse", "-n", "0", "-e", "0", "--show-samples",
                          "--node-label=self-time-percentage", "--node-label=total-time-percentage", str(out)],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    nodes = {}
    for m in re.finditer(r'label="([^"]+)\\n\(([0-9.]+)%\)\\n([0-9.]+)%\\n([0-9]+)×"', dot):
        nodes[m.group(1)] = (float(m.group(2)), float(m.group(3)), int(m.group(4)))
    total = TOTAL0 + TOTAL1
    expected = {("sq_[i]" if f == "sq" else f): n for f, n in CUM.items()}
    assert set(nodes) == set(expected), dot
    for name, cum in expected.items():
        own = FLAT.get(name.removesuffix("_[i]"), 0)
        assert nodes[name] == (round(100 * own / total, 2), round(100 * cum / total, 2), own), name


def speedscope_package() -> Path:
    """speedscope's npm package, installed once into a cache directory."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "psuite-tests"
    home = cache / f"speedscope-{SPEEDSCOPE_VERSION}"
    package = home / "node_modules" / "speedscope"
    if not (package / "dist" / "release" / "file-format-schema.json").exists():
        npm = shutil.which("npm")
        assert npm, "npm is needed to install speedscope (Debian package npm; tests/run.sh installs it)"
        cache.mkdir(parents=True, exist_ok=True)
        staging = cache / f".speedscope-{os.getpid()}"
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(staging),
                        f"speedscope@{SPEEDSCOPE_VERSION}"], check=True, timeout=600, capture_output=True)
        try:
            staging.rename(home)
        except OSError:  # installed meanwhile by a concurrent run
            shutil.rmtree(staging, ignore_errors=True)
    return package


# speedscope's collapsed-stack parser, taken from its own bundle and run as it is
SPEEDSCOPE_FOLDED = r"""
const fs = require('fs');
const [dir, file] = process.argv.slice(1);  // node -e: no script name
const bundle = fs.readdirSync(dir).find(f => /^speedscope-.*\.js$/.test(f));
const src = fs.readFileSync(dir + '/' + bundle, 'utf8');
const at = src.indexOf('/^(.*) (\\d+)$/gm.exec(');
if (at < 0) { console.error('no folded-stack parser in ' + bundle); process.exit(3); }
const start = src.lastIndexOf('function ', at);
let depth = 0, end = src.indexOf('{', start);
for (; end < src.length; end++) {
  if (src[end] === '{') depth++;
  else if (src[end] === '}' && --depth === 0) break;
}
const parse = new Function('return ' + src.slice(start, end + 1))();
const text = fs.readFileSync(file, 'utf8');
const samples = parse({splitLines: () => text.split('\n')});
console.log(JSON.stringify(samples.map(s => [s.stack.map(f => f.name), s.duration])));
"""


def test_speedscope_parses_folded(tmp_path):
    node = shutil.which("node")
    assert node, "node is needed (Debian package nodejs; tests/run.sh installs it with npm)"
    out = tmp_path / "app.folded"
    folded.write(from_report(profile()), str(out))
    release = speedscope_package() / "dist" / "release"
    p = subprocess.run([node, "-e", SPEEDSCOPE_FOLDED, str(release), str(out)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    got = [(tuple(stack), n) for stack, n in json.loads(p.stdout)]
    assert got == [(tuple(line.rsplit(" ", 1)[0].split(";")), int(line.rsplit(" ", 1)[1]))
                   for line in EXPECTED_FOLDED.splitlines()]


# -------------------------------------------------------------- speedscope


def speedscope_schema() -> dict:
    return json.loads((speedscope_package() / "dist" / "release" / "file-format-schema.json").read_text())


def decoded(doc: dict) -> list[tuple[str, str, list[tuple[tuple[str, ...], float]]]]:
    """Each profile as (name, unit, [(frame names outermost first, weight)])."""
    names = [f["name"] for f in doc["shared"]["frames"]]
    return [(p["name"], p["unit"], [(tuple(names[i] for i in s), w) for s, w in zip(p["samples"], p["weights"],
                                                                                   strict=True)])
            for p in doc["profiles"]]


def test_speedscope_json_matches_the_schema_and_the_tree(tmp_path):
    import jsonschema

    out = tmp_path / "app.speedscope.json"
    assert "2 threads" in speedscope.write(from_report(profile()), str(out))
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, speedscope_schema())
    us = 1000  # a sample of ITIMER_PROF at 1,000 us
    name = {MAIN: "main", A: "a", B: "b", C: "c", WORK: "work", SQ: "sq [inlined]", START: "start_thread",
            WORKER: "worker", UNRESOLVED: "[libm.so.6]"}
    assert decoded(doc) == [
        ("host pid 1234 thread 0", "microseconds", [(tuple(name[f] for f in p), n * us) for p, n in THREAD0]),
        ("host pid 1234 thread 1", "microseconds", [(tuple(name[f] for f in p), n * us) for p, n in THREAD1])]
    assert [(p["startValue"], p["endValue"]) for p in doc["profiles"]] == [(0, TOTAL0 * us), (0, TOTAL1 * us)]
    frames = {f["name"]: f for f in doc["shared"]["frames"]}
    assert len(frames) == len(doc["shared"]["frames"]) == 9  # one per function
    assert frames["work"] == {"name": "work", "file": "work.c", "line": 7}
    assert frames["start_thread"] == {"name": "start_thread"}  # no source known


def test_speedscope_event_source_weights_are_samples(tmp_path):
    import jsonschema

    out = tmp_path / "ev.speedscope.json"
    speedscope.write(from_report(MultiReport(reports=[profile(event="PAPI_TOT_CYC", threshold=100000, rank=r)
                                                      for r in (0, 1)])), str(out))
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, speedscope_schema())
    assert [(p["name"], p["unit"], p["endValue"]) for p in doc["profiles"]] == [
        ("rank 0 thread 0", "none", TOTAL0), ("rank 0 thread 1", "none", TOTAL1),
        ("rank 1 thread 0", "none", TOTAL0), ("rank 1 thread 1", "none", TOTAL1)]
    assert sorted(doc["profiles"][0]["weights"]) == sorted(n for _, n in THREAD0)


# ------------------------------------------------------------------- pprof


def go_pprof(*args: str) -> str:
    go = shutil.which("go")
    assert go, "go is needed for go tool pprof (Debian package golang-go; tests/run.sh installs it)"
    env = {**os.environ, "PPROF_TMPDIR": os.environ.get("TMPDIR", "/tmp")}
    p = subprocess.run([go, "tool", "pprof", *args], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    return p.stdout


def pprof_top(path, *options: str) -> tuple[str, dict[str, tuple[str, str]]]:
    """go tool pprof -top: the header, and per function (flat, cum)."""
    out = go_pprof("-top", "-nodefraction=0", "-nodecount=10000", *options, str(path))
    rows = {}
    for line in out.splitlines():
        m = re.fullmatch(r"\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+)", line)
        if m:
            rows[m.group(3)] = (m.group(1), m.group(2))
    return out, rows


def test_go_pprof_top_matches_the_tree(tmp_path):
    out = tmp_path / "app.pb.gz"
    # the samples the records hold (7 records: one per thread and call path with samples)
    assert f"({TOTAL0 + TOTAL1} samples in 7 stacks," in pprof.write(from_report(profile()), str(out))
    text, samples = pprof_top(out, "-sample_index=samples")
    assert "Type: samples" in text and f"Total samples = {TOTAL0 + TOTAL1}" in text
    name = {"sq (inline)": "sq"}  # pprof marks a function inlined where it is
    got = {name.get(f, f): (int(flat), int(cum)) for f, (flat, cum) in samples.items()}
    assert got == {f: (FLAT.get(f, 0), CUM[f]) for f in CUM}
    text, cpu = pprof_top(out, "-unit=ms")  # the default sample type: cpu time
    assert "Type: cpu" in text and "Duration: 250ms" in text
    got = {name.get(f, f): (flat, cum) for f, (flat, cum) in cpu.items()}
    assert got == {f: (f"{FLAT[f]}ms" if f in FLAT else "0", f"{CUM[f]}ms") for f in CUM}


def test_go_pprof_traces_are_the_call_paths(tmp_path):
    out = tmp_path / "app.pb.gz"
    pprof.write(from_report(profile()), str(out))
    traces = []
    for block in go_pprof("-traces", "-sample_index=samples", str(out)).split("-----------+-")[1:]:
        lines = [line.strip() for line in block.splitlines()[1:] if line.strip()]
        if not lines:  # after the last separator
            continue
        thread = lines[0].removeprefix("thread:").strip()
        value, leaf = lines[1].split(None, 1)
        traces.append((thread, int(value), tuple(reversed([leaf, *lines[2:]]))))
    name = {MAIN: "main", A: "a", B: "b", C: "c", WORK: "work", SQ: "sq (inline)", START: "start_thread",
            WORKER: "worker", UNRESOLVED: "[libm.so.6]"}
    expected = [(f"host pid 1234 thread {t}", n, tuple(name[f] for f in p))
                for t, paths in enumerate((THREAD0, THREAD1)) for p, n in paths]
    assert sorted(traces) == sorted(expected)


def test_go_pprof_recursion_and_event_source(tmp_path):
    """A recursive path counts once in cum; an event-overflow source has
    samples and the estimated events, with the threshold as the period."""
    rec = Frame("rec", APP, "app.c", 80)
    threads = ([((MAIN, rec, rec, rec, WORK), 6), ((MAIN, rec), 1)],)
    out = tmp_path / "rec.pb.gz"
    pprof.write(from_report(profile(threads, event="PAPI_TOT_CYC", threshold=100000)), str(out))
    _, rows = pprof_top(out, "-sample_index=samples")
    assert rows == {"work": ("6", "6"), "rec": ("1", "7"), "main": ("0", "7")}
    _, rows = pprof_top(out, "-sample_index=PAPI_TOT_CYC")
    assert rows["rec"] == ("100000", "700000")
    raw = go_pprof("-raw", str(out))
    assert "PeriodType: PAPI_TOT_CYC count" in raw and "Period: 100000" in raw


# -------------------------------------------------------------------- CUBE


def cube_tree(path) -> tuple[list, list[str], dict]:
    """Through pycubexr: the call tree as nested (region, [children]), the
    locations' names, and per metric {cnode path: (exclusive values per
    location, inclusive values per location)}."""
    from pycubexr import CubexParser

    with CubexParser(str(path)) as c:
        def shape(cnode):
            return (c.get_region(cnode).name, [shape(k) for k in cnode.get_children()])

        def path_of(cnode):
            names = []
            while cnode is not None:
                names.append(c.get_region(cnode).name)
                cnode = cnode.parent
            return tuple(reversed(names[:-1]))  # without the program's root

        [root] = c.get_root_cnodes()
        locations = [loc.name for loc in c.get_locations()]
        values = {}
        for m in c.get_metrics():
            v = c.get_metric_values(m)
            values[m.name] = {path_of(k): ([float(x) for x in v.cnode_values(k)],
                                           [float(x) for x in v.cnode_values(k, convert_to_inclusive=True)])
                              for k in c.all_cnodes()}
        return shape(root), locations, values


def test_cube_call_tree(tmp_path):
    out = tmp_path / "app.cubex"
    assert "call tree of 12 calling contexts" in cube.write(from_report(profile()), str(out))
    shape, locations, values = cube_tree(out)
    assert shape == ("app", [
        ("main", [("a", [("work", [])]),
                  ("b", [("work", []), ("c", [("work", []), ("sq [inlined]", [])])])]),
        ("start_thread", [("worker", [("work", []), ("[libm.so.6]", [])])])])
    assert locations == ["thread 0", "thread 1"]
    samples, time = values["samples"], values["time"]
    for t, paths in enumerate((THREAD0, THREAD1)):
        for p, n in paths:
            key = tuple(("sq [inlined]" if f is SQ else "[libm.so.6]" if f is UNRESOLVED else f.function)
                        for f in p)
            exclusive = [0.0, 0.0]
            exclusive[t] = n
            assert samples[key][0] == exclusive, key
            assert time[key][0] == pytest.approx([x / 1000 for x in exclusive]), key
    assert samples[("main", "b")] == ([0.0, 0.0], [55.0, 0.0])
    assert samples[("main",)][1] == [TOTAL0, 0.0]  # inclusive main: the whole of thread 0
    assert samples[()][1] == [TOTAL0, TOTAL1]  # the program's root: everything, per thread
    assert time[("main",)][1] == pytest.approx([TOTAL0 / 1000, 0.0])
    stat = (tmp_path / "app.stat").read_text().splitlines()
    assert stat[1].split()[:3] == ["samples", "0", "2"] and stat[1].split()[7] == str(TOTAL0 + TOTAL1)


def test_cube_call_tree_of_ranks(tmp_path):
    """A combination: every rank's threads are locations of one merged tree."""
    out = tmp_path / "all.cubex"
    cube.write(from_report(MultiReport(reports=[profile(rank=1, pid=11), profile(threads=(THREAD0,), rank=0, pid=10)])),
               str(out))
    _, locations, values = cube_tree(out)
    assert locations == ["thread 0", "thread 0", "thread 1"]  # rank 0, then rank 1's two threads
    assert values["samples"][("main", "a", "work")][0] == [50.0, 50.0, 0.0]
    assert values["samples"][()][1] == [TOTAL0, TOTAL0, TOTAL1]


def flat_profile() -> ProfileReport:
    return ProfileReport(hostname="host", pid=7, thread=0, command="/opt/app/app", event="ITIMER_PROF",
                         threshold=1000, locations=[Location(APP, "app.c", "main", 40, 3),
                                                    Location(LIB, "work.c", "work", 7, 9)])


def test_cube_without_call_paths_stays_flat(tmp_path):
    out = tmp_path / "flat.cubex"
    assert "(flat)" in cube.write(from_report(flat_profile()), str(out))
    shape, _, values = cube_tree(out)
    assert shape == ("app", [("main", []), ("work", [])])
    assert values["samples"][("work",)][0] == [9.0]
    # one profile of a combination has no call paths: each member as it is, merged (psprocess merge -c of
    # their cubes): the flat one's functions under the program, the other's call tree
    mixed = tmp_path / "mixed.cubex"
    assert "call tree" in cube.write(from_report(MultiReport(reports=[flat_profile(), profile(rank=1)])), str(mixed))
    _, locations, values = cube_tree(mixed)
    work = values["samples"][("work",)][0]  # exclusive, per location: the flat profile's only
    assert len(locations) == 3 and sum(work) == max(work) == 9.0
    assert any(len(path) > 1 for path in values["samples"])


def test_writers_refuse_without_call_paths_or_over_a_file(tmp_path):
    # folded, speedscope and pprof render the analysis model
    for module, name in ((folded, "x.folded"), (speedscope, "x.json"), (pprof, "x.pb.gz")):
        with pytest.raises(UsageError, match="psrun --callpath"):
            module.write(from_report(flat_profile()), str(tmp_path / name))
        with pytest.raises(UsageError, match="psrun --callpath"):  # the flat members of a combination too
            module.write(from_report(MultiReport(reports=[flat_profile(), flat_profile()])), str(tmp_path / name))
        assert not (tmp_path / name).exists()
        module.write(from_report(profile()), str(tmp_path / name))
        before = (tmp_path / name).read_bytes()
        with pytest.raises((UsageError, OutputError), match="exists"):
            module.write(from_report(profile(threads=(THREAD1,))), str(tmp_path / name))
        assert (tmp_path / name).read_bytes() == before
        module.write(from_report(profile(threads=(THREAD1,))), str(tmp_path / name), force=True)
        assert (tmp_path / name).read_bytes() != before
        assert module.targets(str(tmp_path / name)) == [str(tmp_path / name)]


def test_hostile_names_stay_readable(tmp_path):
    """A name with undecodable bytes (kept as surrogates), control
    characters, ';' and XML's specials: every consumer still reads the
    file and the frame stays one frame."""
    import jsonschema
    from pycubexr import CubexParser

    odd = Frame("op\udcff;<&>\x01\nx", "/opt/a b/lib\udcfe.so", "src\udcfd.c", 3)
    threads = ([((MAIN, odd), 4), ((MAIN, Frame("??", "")), 1)],)
    r = profile(threads)
    folded.write(from_report(r), str(tmp_path / "o.folded"))
    assert (tmp_path / "o.folded").read_text(encoding="utf-8") == "main;op\ufffd,<&>  x 4\nmain;[unknown] 1\n"
    speedscope.write(from_report(r), str(tmp_path / "o.json"))
    doc = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    jsonschema.validate(doc, speedscope_schema())
    assert decoded(doc)[0][2] == [(("main", "op\ufffd;<&>\x01\nx"), 4000), (("main", "[unknown]"), 1000)]
    pprof.write(from_report(r), str(tmp_path / "o.pb.gz"))
    _, rows = pprof_top(tmp_path / "o.pb.gz", "-sample_index=samples")
    assert rows["main"] == ("0", "5") and rows["[unknown]"] == ("1", "1") and len(rows) == 3
    cube.write(from_report(r), str(tmp_path / "o.cubex"))
    with CubexParser(str(tmp_path / "o.cubex")) as c:
        assert sorted(c.get_region(k).name for k in c.all_cnodes()) == ["[unknown]", "app", "main",
                                                                        "op\ufffd;<&> \nx"]  # XML keeps \n


# --------------------------------------------------------------------- CLI
# Companions with addresses of a compiled -O2 program, resolved for real
# (tests/psprocess/test_calltree.py): main -> a -> work 50,
# main -> b -> work 30, main -> b -> c -> work 20, b's own 4; ITIMER_PROF
# at 10,000 us as the companions say (the flat profile of real_profile ran
# at 2,000 us: the call paths' own period counts).

KNOWN_FOLDED = {"main;a;work": 50, "main;b;work": 30, "main;b;c;work": 20, "main;b": 4}


def folded_file(path) -> dict[str, int]:
    return {stack: int(n) for stack, n in (line.rsplit(" ", 1) for line in Path(path).read_text().splitlines())}


def test_cli_writes_every_export(real_profile, tmp_path):  # noqa: F811
    import jsonschema

    out = {name: tmp_path / name for name in ("ct.folded", "ct.speedscope.json", "ct.pb.gz", "ct.cubex")}
    p = run_tool("psprocess", "--folded", str(out["ct.folded"]), "--speedscope", str(out["ct.speedscope.json"]),
                 "--pprof", str(out["ct.pb.gz"]), "--cube", str(out["ct.cubex"]), str(real_profile))
    assert p.returncode == 0, p.stderr
    assert [line.split(" (")[0] for line in p.stderr.splitlines()] == [f"psprocess: wrote {out[n]}" for n in
                                                                        ("ct.cubex", "ct.folded",
                                                                         "ct.speedscope.json", "ct.pb.gz")]
    assert folded_file(out["ct.folded"]) == KNOWN_FOLDED
    doc = json.loads(out["ct.speedscope.json"].read_text())
    jsonschema.validate(doc, speedscope_schema())
    [(_, unit, samples)] = decoded(doc)
    assert unit == "microseconds" and {";".join(s): w for s, w in samples} == \
        {k: n * 10000 for k, n in KNOWN_FOLDED.items()}
    _, rows = pprof_top(out["ct.pb.gz"], "-sample_index=samples")
    assert rows == {"work": ("100", "100"), "b": ("4", "54"), "main": ("0", "104"), "a": ("0", "50"),
                    "c": ("0", "20")}
    text, rows = pprof_top(out["ct.pb.gz"], "-unit=ms")
    assert "File: ct" in text and rows["main"] == ("0", "1040ms")
    shape, locations, values = cube_tree(out["ct.cubex"])
    assert shape == ("ct", [("main", [("a", [("work", [])]), ("b", [("work", []), ("c", [("work", [])])])])])
    assert locations == ["thread 1"]
    assert values["samples"][("main",)][1] == [104.0] and values["samples"][("main", "b")][0] == [4.0]
    assert values["time"][("main",)][1] == pytest.approx([1.04])


def test_cli_combines_processes_into_one_export(program, tmp_path):  # noqa: F811
    """-c: the call trees of two processes, summed in the folded stacks,
    one location each in the cube, one pprof sample per process and path."""
    one = write_alone(tmp_path, program, name="p1.callpaths.xml", pid=1)
    two = write_alone(tmp_path, program, [(1, [(0, "main", 0), (1, "a", 0), (2, "work!", 10)])],
                      name="p2.callpaths.xml", pid=2)
    folded_out, cube_out, pprof_out = tmp_path / "all.folded", tmp_path / "all.cubex", tmp_path / "all.pb.gz"
    p = run_tool("psprocess", "-c", "--folded", str(folded_out), "--cube", str(cube_out), "--pprof", str(pprof_out),
                 str(one), str(two))
    assert p.returncode == 0, p.stderr
    assert folded_file(folded_out) == {**KNOWN_FOLDED, "main;a;work": 60}
    _, locations, values = cube_tree(cube_out)
    assert locations == ["thread 1", "thread 1"]  # pid 1, pid 2
    assert values["samples"][("main", "a", "work")][0] == [50.0, 10.0]
    assert values["samples"][()][1] == [104.0, 10.0]
    traces = go_pprof("-traces", "-sample_index=samples", str(pprof_out))
    assert traces.count("thread:  host pid 1 thread 1") == 4 and traces.count("thread:  host pid 2 thread 1") == 1


def test_cli_export_errors_are_one_line(real_profile, tmp_path):  # noqa: F811
    taken = tmp_path / "taken.folded"
    taken.write_text("x 1\n")
    for option, name in (("--folded", "taken.folded"), ("--pprof", "taken.folded")):
        line = one_line_error(run_tool("psprocess", option, str(tmp_path / name), str(real_profile)), "psprocess")
        assert "exists" in line, line
    assert taken.read_text() == "x 1\n"
    Path(str(real_profile).removesuffix(".xml") + ".callpaths.xml").unlink()
    for option in ("--folded", "--speedscope", "--pprof"):
        line = one_line_error(run_tool("psprocess", option, str(tmp_path / "new.out"), str(real_profile)),
                              "psprocess")
        assert "psrun --callpath" in line, line
        assert not (tmp_path / "new.out").exists()
    p = run_tool("psprocess", "--cube", str(tmp_path / "flat.cubex"), str(real_profile))  # flat without call paths
    assert p.returncode == 0 and "(flat)" in p.stderr, p.stderr
