"""--pprof renders the analysis model (Experiment): on real psrun
--callpath profiles (a -p threaded run, a program with inlined functions,
the 4-rank run of tests/test_formats_agree.py) its samples are, decoded
here (tests/psprocess/pprof_proto.py) and by go tool pprof, the
document's call trees as the exporter wrote them from the documents: one
sample per thread and call path with samples of its own, its frames
grouped into locations with their inlined frames, each frame's function,
source file, object file and line.  A cube psuite wrote gives the pprof
of its document; a Score-P cube its call tree weighted by CubeLib's own
exclusive time."""

from __future__ import annotations

import re
import tarfile
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from psuite.analysis import experiments
from psuite.formats.exporters.calltree_common import frame_file, frame_name, source_trees
from tests.callpath_helpers import build
from tests.conftest import one_line_error, run_tool
from tests.psprocess.pprof_proto import decode
from tests.psprocess.test_calltree_exports import go_pprof
from tests.psprocess.test_model_flame import SCOREP, cubelib_time
from tests.test_formats_agree import run  # noqa: F401  (the 4-rank profiling fixture)

PERIOD_US = 1000


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict[str, str]:
    return build(tmp_path_factory.mktemp("pprof_programs"))


def process_report(d: Path) -> str:
    """psrun -p's process report in d: the document its companion belongs to."""
    [companion] = d.glob("*.callpaths.xml")
    return str(companion).removesuffix(".callpaths.xml") + ".xml"


def from_documents(doc: str) -> Counter:
    """The samples the document's call trees give, as pprof_proto.decode
    reads them: per thread and call path with samples, its frames leaf
    first, a frame and the inlined frames below it one location (the
    innermost first) in the frame's object file, each with its function,
    source file and line (a call path's line as the first thread having
    it has it: the model keeps one per call path; a function's source file
    its region's, one of those its frames give: the model keeps one per
    function, where an assembly function's addresses can resolve with
    and without line information)."""
    from psuite.analysis.inputs import load
    from psuite.analysis.metrics import derive_standard
    from psuite.analysis.prepare import prepare

    report = prepare(load(doc), derive_standard)
    trees = source_trees(report, "--pprof")
    files_of: dict[tuple, set[str]] = {}  # Frame.key -> the source files its frames give
    for st in trees:
        for node in st.thread.tree.nodes():
            files_of.setdefault(node.frame.key, set()).add(frame_file(node.frame))
    region_file = {}
    for r in experiments.from_report(report).regions:
        inlined = r.description == "inlined into its caller" and r.name.endswith(" [inlined]")
        obj = r.attributes.get("psuite::object")
        region_file[(r.name.removesuffix(" [inlined]") if inlined else r.name, r.module if obj is None else obj,
                     inlined)] = "" if obj is None else r.module
    line_of: dict[tuple, int] = {}
    for st in trees:
        for node in st.thread.tree.nodes():
            line_of.setdefault(tuple(f.key for f in node.path()), node.frame.line)
    out: Counter = Counter()
    for st in trees:
        ns = st.threshold * 1000
        for path, value in st.thread.tree.paths():
            groups: list[list] = []
            for depth, f in enumerate(path):
                line = max(line_of[tuple(g.key for g in path[:depth + 1])], 0)
                source = region_file[(frame_name(f), f.module, f.inlined)]
                assert source in files_of[f.key]
                entry = (frame_name(f), frame_name(f), source, line)
                if f.inlined and groups:
                    groups[-1].insert(1, entry)  # after the object file: innermost first
                else:
                    groups.append([f.module, entry])
            stack = tuple((g[0] or None, 0, tuple(g[1:])) for g in reversed(groups))
            samples = int(value + 0.5)
            out[((("thread", st.thread.label),), (samples, samples * ns), stack)] += 1
    return out


def pprof_of(*args: str, out: Path) -> dict:
    p = run_tool("psprocess", "--pprof", str(out), *args, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stderr.startswith(f"psprocess: wrote {out} (pprof (") and p.stdout == ""
    return decode(out)


def check_profile(doc: str, tmp_path: Path) -> dict:
    """The document's pprof: its samples those of the document's trees,
    cpu time the samples times the period, and go tool pprof reads it."""
    got = pprof_of(doc, out=tmp_path / "doc.pb.gz")
    want = from_documents(doc)
    assert got["samples"] == want
    assert got["types"] == [("samples", "count"), ("cpu", "nanoseconds")]
    assert (got["period_type"], got["period"]) == (("cpu", "nanoseconds"), PERIOD_US * 1000)
    assert got["duration"] > 0 and got["comments"][0].startswith("psuite ")
    assert got["mapping_flags"] == {(1, 1, 1, 1)}
    total = sum(v[0] * n for (_, v, _), n in got["samples"].items())
    assert total > 0
    assert f"Total samples = {total}" in go_pprof("-top", "-sample_index=samples", str(tmp_path / "doc.pb.gz"))
    return got


def psrun_p(exe: str, d: Path, *args: str) -> str:
    """psrun -p --callpath of exe into d: its process report."""
    d.mkdir()
    p = run_tool("psrun", "-q", "-p", "--callpath", "--period", str(PERIOD_US), "-d", str(d), exe, *args,
                 timeout=300)
    assert p.returncode == 0, p.stderr
    return process_report(d)


def test_threaded_profile(programs, tmp_path):
    doc = psrun_p(programs["threads"], tmp_path / "run", "200")
    got = check_profile(doc, tmp_path)
    threads = {labels for labels, _, _ in got["samples"]}
    assert len(threads) >= 2  # the two workers at least
    assert got["main_mapping"] == programs["threads"]  # pprof names the profile after mapping 1
    # the cube psuite writes of it gives the same pprof
    p = run_tool("psprocess", "--cube", str(tmp_path / "doc.cubex"), doc)
    assert p.returncode == 0, p.stderr
    assert pprof_of(str(tmp_path / "doc.cubex"), out=tmp_path / "cube.pb.gz") == got
    # its call paths' lines are where samples fell: not in the cnodes, which CubeLib unifies by line
    with tarfile.open(tmp_path / "doc.cubex") as tar:
        anchor = tar.extractfile("anchor.xml").read().decode()
    assert "<cnode " in anchor and not re.search(r"<cnode [^>]*line=", anchor)
    assert 'key="psuite::sampled_call_lines"' in anchor and 'key="psuite::object"' in anchor


def test_inlined_frames_share_a_location(programs, tmp_path):
    got = check_profile(psrun_p(programs["inlined"], tmp_path / "run"), tmp_path)
    assert any(len(lines) > 1 for _, _, stack in got["samples"] for _, _, lines in stack)  # inlined frames


def test_each_rank_of_a_4_rank_run(run, tmp_path):  # noqa: F811
    for rank in sorted(run.process):
        (tmp_path / str(rank)).mkdir()
        check_profile(run.process[rank], tmp_path / str(rank))


def test_combined_ranks_are_the_merged_experiment(run, tmp_path):  # noqa: F811
    """-c: the samples of every rank's threads, each thread's as its own
    document gives them but for the call paths' lines and object files,
    which are the merged experiment's (the first rank's)."""
    docs = [run.process[r] for r in sorted(run.process)]
    got = pprof_of("-c", *docs, out=tmp_path / "c.pb.gz")

    def names(samples: Counter) -> Counter:
        return Counter({(labels, values, tuple(tuple(x[:3] for x in lines) for _, _, lines in stack)): n
                        for (labels, values, stack), n in samples.items()})

    want: Counter = Counter()
    for doc in docs:
        want += names(from_documents(doc))
    assert names(got["samples"]) == want
    per_thread = Counter()
    for (labels, values, _), n in got["samples"].items():
        per_thread[labels[0][1]] += values[0] * n
    assert {(int(t.split()[1]), int(t.split()[3])): n for t, n in per_thread.items()} == \
        {k: v for k, v in run.truth.items() if v}


def test_scorep_cube_weighted_by_cubelib_time(tmp_path):
    """A Score-P cube: one time/nanoseconds sample per rank and call path,
    its value CubeLib's exclusive time; no object files (its regions name
    source files), each call path's line its call-site line."""
    got = pprof_of(str(SCOREP / "mpi1.cubex"), out=tmp_path / "s.pb.gz")
    assert got["types"] == [("time", "nanoseconds")]
    exp = experiments.load(str(SCOREP / "mpi1.cubex"))
    ref = cubelib_time("mpi1")
    want: Counter = Counter()
    for c, path in enumerate(exp.paths()):
        for k, loc in enumerate(exp.locations):
            ns = int(np.floor(ref[(c, str(k))] * 1e9 + 0.5))
            if ns > 0:
                want[((("thread", loc.label),), (ns,), tuple(reversed(path)))] += 1
    samples = Counter({(labels, values, tuple(lines[0][0] for _, _, lines in stack)): n
                       for (labels, values, stack), n in got["samples"].items()})
    assert samples == want
    assert {m for (_, _, stack) in got["samples"] for m, _, _ in stack} == {None}
    assert "Type: time" in go_pprof("-top", str(tmp_path / "s.pb.gz"))


def test_pprof_refuses_what_has_no_call_paths(tmp_path):
    """A counting cube, and a flat profile's: one line, exit 2, nothing written."""
    document = Path(__file__).parent / "data" / "cubelib-reads-psuite" / "inputs" / "counts" / "work.r0.31389.vm.xml"
    p = run_tool("psprocess", "--cube", str(tmp_path / "counts.cubex"), str(document))
    assert p.returncode == 0, p.stderr
    line = one_line_error(run_tool("psprocess", "--pprof", str(tmp_path / "x.pb.gz"), str(tmp_path / "counts.cubex")),
                          "psprocess")
    assert "--pprof" in line and "call paths" in line
    assert not (tmp_path / "x.pb.gz").exists()
