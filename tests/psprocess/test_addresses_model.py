"""--gmon and --vprof rendered from the analysis model: one profile
document's experiment keeps its sampled addresses (Experiment.addresses),
and psprocess writes from them the very bytes the document exporters wrote
(tests/psprocess/document_exporters.py keeps those as they were), for flat
and call-path profiles of real programs run under psrun, the executable or
a shared library exported.  The table holds the document's samples and
frames as recorded; combinations and the algebra's results have none, and
gmon and vprof refuse them in one line."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

import psuite
from psuite.analysis import algebra
from psuite.analysis.experiments import from_report
from psuite.errors import UsageError
from psuite.formats.exporters import gmon, vprof
from psuite.model.report import MultiReport
from tests.callpath_helpers import FLAGS, PERIOD_US, SRC
from tests.conftest import one_line_error, run_tool
from tests.psprocess import document_exporters as before


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, str]:
    """known.c (work() in the executable, or in libcpwork.so), recursion.c
    and threads.c of tests/targets/callpath, built as users build them."""
    out = tmp_path_factory.mktemp("address_targets")
    work = str(SRC / "work.c")

    def cc(*args: str) -> None:
        subprocess.run(["gcc", *FLAGS, *args], check=True, capture_output=True, text=True)

    cc("-o", str(out / "known"), str(SRC / "known.c"), work)
    cc("-fPIC", "-shared", "-o", str(out / "libcpwork.so"), work)
    cc("-o", str(out / "known_shared"), str(SRC / "known.c"), f"-L{out}", "-lcpwork", f"-Wl,-rpath,{out}")
    cc("-o", str(out / "recursion"), str(SRC / "recursion.c"), work)
    cc("-pthread", "-o", str(out / "threads"), str(SRC / "threads.c"), work)
    return {p.name: str(p) for p in out.iterdir()}


def profile(directory: Path, mode: str, *command: str) -> Path:
    """psrun's profile of the command: flat (ITIMER_PROF) or with call paths."""
    options = ["--profile", "ITIMER_PROF"] if mode == "flat" else ["--callpath"]
    directory.mkdir(exist_ok=True)
    p = run_tool("psrun", "-q", *options, "--period", str(PERIOD_US), "-d", str(directory), *command, timeout=300)
    assert p.returncode == 0, p.stderr
    [report] = [x for x in directory.glob("*.xml") if not x.name.endswith(".callpaths.xml")]
    return report


CASES = [  # (mode, program, its arguments, --module)
    ("flat", "known", ["100"], None),
    ("flat", "known_shared", ["100"], "libcpwork.so"),
    ("callpath", "known", ["100"], None),
    ("callpath", "known_shared", ["100"], "libcpwork.so"),
    ("callpath", "recursion", ["30", "100"], None),
    ("callpath", "threads", ["60"], None),
]


@pytest.mark.parametrize("mode,program,args,module", CASES,
                         ids=[f"{c[0]}-{c[1]}{'-' + c[3] if c[3] else ''}" for c in CASES])
def test_gmon_and_vprof_bytes_as_the_document_exporters_wrote(built, tmp_path, mode, program, args, module):
    report = profile(tmp_path, mode, built[program], *args)
    g, v = tmp_path / "gmon.out", tmp_path / "vmon.out"
    chosen = ["--module", module] if module else []
    p = run_tool("psprocess", "--gmon", str(g), "--vprof", str(v), *chosen, str(report))
    assert p.returncode == 0, p.stderr
    doc = psuite.read_document(str(report))
    m = before.executable_module(doc, module)
    if module:
        assert m.file.endswith(module), m.file
    assert m.samples, "the module has samples: the histogram is not empty"
    assert g.read_bytes() == before.gmon(doc, m)
    assert v.read_bytes() == before.vmon(doc, m)
    if mode == "callpath" and not module:  # the executable's call graph is there, as it was
        arcs = before.arcs(doc, m)
        assert arcs, "the call-path profile makes arcs"
        assert f"{len(arcs):,} call arcs" in p.stderr, p.stderr
    else:
        assert ("a flat profile" in p.stderr) == (mode == "flat"), p.stderr


def test_the_table_holds_the_document(built, tmp_path):
    """Experiment.addresses against the document it came from: every
    module's samples (ModuleSamples) by pc, and every thread's recorded
    frames, at the locations the experiment gives the threads."""
    report = profile(tmp_path, "callpath", built["threads"], "60")
    doc = psuite.read_document(str(report))
    exp = from_report(doc)
    a = exp.addresses
    assert a is not None
    exp.check()
    assert a.event == doc.event and a.threshold == doc.threshold
    assert [(m.file, m.offset, m.buildid) for m in a.modules] == [(m.file, m.offset, m.buildid) for m in doc.modules]
    assert len(a.pc) == sum(len(m.samples) for m in doc.modules)
    for i, m in enumerate(doc.modules):
        rows = a.module == i
        assert dict(zip(a.pc[rows].tolist(), a.samples[rows].tolist(), strict=True)) == m.samples
    # the process's samples: its threads are several locations, so they are at none of them
    assert len(exp.locations) > 1
    assert set(a.location.tolist()) == {-1}
    cp = doc.callpaths
    assert [(m.file, m.offset) for m in a.frame_modules] == [(m.file, m.offset) for m in cp.modules.values()]
    by_thread = {int(loc.attributes["thread"]): k for k, loc in enumerate(exp.locations)}
    start = located = 0
    for t in cp.threads:
        n = len(t)
        rows = slice(start, start + n)
        assert a.frame_pc[rows].tolist() == t.addr[1:]
        assert a.frame_kind[rows].tolist() == t.kind[1:]
        assert a.frame_samples[rows].tolist() == t.exclusive[1:]
        assert [a.frame_modules[k].file for k in a.frame_module[rows].tolist()] == \
            [cp.modules[k].file for k in t.module[1:]]
        assert a.frame_parent[rows].tolist() == [start + p - 1 if p else -1 for p in t.parent[1:]]
        if n:  # (a thread may have recorded no frame)
            assert set(a.frame_location[rows].tolist()) == {by_thread[t.thread]}
            located += 1
        start += n
    assert start == len(a.frame_pc) and located >= 2
    # a flat profile's samples are at its one location, and it has no frames
    flat = psuite.read_document(str(profile(tmp_path / "flat", "flat", built["known"], "50")))
    f = from_report(flat).addresses
    assert f is not None and f.frame_modules is None and len(f.frame_pc) == 0
    assert set(f.location.tolist()) == {0}
    assert sorted(f.pc[f.module == 0].tolist()) == sorted(flat.modules[0].samples)


def test_check_refuses_a_table_beyond_the_experiment(built, tmp_path):
    exp = from_report(psuite.read_document(str(profile(tmp_path, "flat", built["known"], "30"))))
    exp.addresses.location = np.full(len(exp.addresses.pc), len(exp.locations), dtype=np.int32)
    with pytest.raises(ValueError, match="location indexes beyond"):
        exp.check()
    exp.addresses.location = exp.addresses.location[:-1]
    with pytest.raises(ValueError, match="differ in length"):
        exp.check()


def test_combinations_and_operations_have_no_table(built, tmp_path):
    """Only one profile document's experiment has addresses: not a
    combination (even of one), not a merge, mean or diff; gmon and vprof
    refuse such an experiment with the line psprocess says for -c."""
    doc = psuite.read_document(str(profile(tmp_path, "callpath", built["known"], "50")))
    exp = from_report(doc)
    assert exp.addresses is not None
    other = from_report(doc)
    results = {"combination": from_report(MultiReport(reports=[doc])), "merge": algebra.merge([exp, other]),
               "mean": algebra.mean([exp, other]), "diff": algebra.diff(exp, other)}
    for name, result in results.items():
        assert result.addresses is None, name
        for exporter, option in ((gmon, "--gmon"), (vprof, "--vprof")):
            with pytest.raises(UsageError) as refused:
                exporter.write(result, str(tmp_path / "out"), None, True)
            assert str(refused.value) == f"{option} exports one profile (psrun --profile ...); for combined " \
                                         "reports use --cube"
            assert not (tmp_path / "out").exists()


def test_psprocess_refuses_what_has_no_addresses(built, tmp_path):
    """A counting report and -c of profiles: one line, exit 2, nothing
    written; the profile itself is exported."""
    report = profile(tmp_path / "p", "flat", built["known"], "30")
    (tmp_path / "c").mkdir()
    p = run_tool("psrun", "-q", "-e", "task-clock", "-d", str(tmp_path / "c"), "/bin/true")
    assert p.returncode == 0, p.stderr
    [counts] = (tmp_path / "c").glob("*.xml")
    out = tmp_path / "v.out"
    for option, args in (("--vprof", [str(counts)]), ("--gmon", ["-c", str(report)])):
        line = one_line_error(run_tool("psprocess", option, str(out), *args), "psprocess")
        assert line == f"psprocess: {option} exports one profile (psrun --profile ...); for combined reports " \
                       "use --cube", line
        assert not out.exists()
    p = run_tool("psprocess", "--vprof", str(out), str(report))
    assert p.returncode == 0, p.stderr
    magic, version = struct.unpack_from(">IB", out.read_bytes())
    assert (magic, version) == (vprof.MAGIC, vprof.VERSION)


def test_call_sites_beyond_int64_give_the_same_file(built, tmp_path):
    """A frame of the executable recorded at an address 2^63 or more above
    its load offset (no real run has one) is written as the document
    exporter wrote it: gmon's arcs then take Python's integers."""
    doc = psuite.read_document(str(profile(tmp_path, "callpath", built["recursion"], "20", "60")))
    m = before.executable_module(doc)
    [exe] = [i for i, x in doc.callpaths.modules.items() if x.file == m.file]
    t = doc.callpaths.threads[0]
    leaves = [j for j in range(1, len(t.parent)) if t.module[j] == exe and t.parent[j] and t.exclusive[j]]
    assert leaves
    t.addr[leaves[0]] = 2**64 - 1  # far beyond the module: an arc from its caller to an address gprof cannot use
    exp = from_report(doc)
    chosen = gmon.executable_module(exp)
    assert gmon.arc_columns(exp, chosen)[0].dtype == object  # (the exact walk, not numpy's int64)
    assert gmon.encode(exp, chosen)[0] == before.gmon(doc, m)
    assert gmon.arcs(exp, chosen) == {k: min(n, 2**32) for k, n in before.arcs(doc, m).items()}
