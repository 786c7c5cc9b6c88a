"""--folded and --speedscope render the analysis model (Experiment): the
experiment of a PerfSuite document gives the stacks it gave before (the
known tree of test_calltree_exports), a CUBE file is exported too, psuite's
own read back as the document it was made of, and a Score-P profile with
the values CubeLib itself prints (values/mpi1.tsv.gz, cube_dump's)."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np

from psuite.analysis import experiments
from psuite.analysis.experiments import from_report
from psuite.formats.exporters import calltree_common, cube, folded, speedscope
from psuite.model.report import MultiReport
from tests.conftest import one_line_error, run_tool
from tests.psprocess.test_calltree_exports import EXPECTED_FOLDED, decoded, flat_profile, profile, speedscope_schema

SCOREP = Path(__file__).parent / "data" / "scorep"


def cubelib_time(name: str) -> dict[tuple[int, str], float]:
    """CubeLib's exclusive time (metric and call tree exclusive) per cnode
    id and location ("all": summed), as cube_dump printed it."""
    with gzip.open(SCOREP / "values" / f"{name}.tsv.gz", "rt") as f:
        return {(int(r["cnode"]), r["location"]): float(r["value"]) for r in csv.DictReader(f, delimiter="\t")
                if r["metric"] == "time" and r["metric_tree"] == "excl" and r["call_tree"] == "excl"}


def folded_of(path: Path) -> dict[str, int]:
    return {s: int(w) for s, w in (line.rsplit(" ", 1) for line in path.read_text().splitlines())}


def test_the_format_layer_knows_what_from_report_marks():
    """A format does not import the analysis layer: its copies of the
    analysis model's markers must stay the same."""
    assert calltree_common.PROGRAM_ROOT == experiments.ROOT_DESCRIPTION
    assert calltree_common.FLAT_PROFILE == experiments.FLAT_PROFILE
    assert calltree_common.SAMPLED_ON == experiments.SAMPLED_ON
    assert calltree_common.OBJECT == experiments.OBJECT
    assert calltree_common.WALLCLOCK == experiments.WALLCLOCK


def test_scorep_cube_exports_cubelibs_exclusive_time(tmp_path):
    """psprocess --folded and --speedscope of a Score-P profile: each call
    path's exclusive time (CubeLib's own figures) in microseconds, summed
    over the ranks in the stacks, per rank in speedscope; the root region
    (Score-P's program) is a real frame and stays."""
    import jsonschema

    src = SCOREP / "mpi1.cubex"
    p = run_tool("psprocess", "--folded", str(tmp_path / "s.folded"), "--speedscope", str(tmp_path / "s.json"),
                 str(src))
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    exp = experiments.load(str(src))  # its call paths in CubeLib's cnode order (checked by the values below)
    paths = [";".join(x) for x in exp.paths()]
    ref = cubelib_time("mpi1")
    want: dict[str, int] = {}
    for c, path in enumerate(paths):
        want[path] = want.get(path, 0) + int(np.rint(ref[(c, "all")] * 1e6))
    assert folded_of(tmp_path / "s.folded") == {k: v for k, v in want.items() if v > 0}
    assert all(s.startswith("mpi_work") for s in want)

    doc = json.loads((tmp_path / "s.json").read_text())
    jsonschema.validate(doc, speedscope_schema())
    profiles = decoded(doc)
    assert [(name, unit) for name, unit, _ in profiles] == [("node vm/MPI Rank 0/Master thread", "microseconds"),
                                                            ("node vm/MPI Rank 1/Master thread", "microseconds")]
    for k, (_, _, samples) in enumerate(profiles):
        expected = [(tuple(paths[c].split(";")), int(np.rint(ref[(c, str(k))] * 1e6))) for c in range(len(paths))]
        assert samples == [s for s in expected if s[1]]
    frames = {f["name"]: f for f in doc["shared"]["frames"]}
    main = exp.regions[exp.cnodes[1].region]
    assert frames["main"] == {"name": "main", "file": main.module, "line": main.begin}


def test_psuite_cube_exports_as_its_document(tmp_path):
    """A cube psuite wrote, given to --folded and --speedscope, gives what
    the document it was made of gives: the program root psuite added is
    left out again, lines and weights alike."""
    made = tmp_path / "app.cubex"
    cube.write(from_report(profile()), str(made))
    p = run_tool("psprocess", "--folded", str(tmp_path / "c.folded"), "--speedscope", str(tmp_path / "c.json"),
                 str(made))
    assert p.returncode == 0, p.stderr
    assert sorted((tmp_path / "c.folded").read_text().splitlines()) == sorted(EXPECTED_FOLDED.splitlines())
    speedscope.write(from_report(profile()), str(tmp_path / "d.json"))
    got, want = (json.loads((tmp_path / n).read_text()) for n in ("c.json", "d.json"))
    assert decoded(got) == decoded(want)
    assert got["shared"]["frames"] == want["shared"]["frames"]


def test_cube_exports_with_its_report(tmp_path):
    """-o with an export: the cube's report is written too, as a
    document's is; standard output stays empty."""
    p = run_tool("psprocess", "--folded", str(tmp_path / "o.folded"), "-o", str(tmp_path / "r.txt"),
                 str(SCOREP / "omp.cubex"))
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    assert (tmp_path / "r.txt").read_text().startswith("experiment: ")
    assert (tmp_path / "o.folded").read_text()


def test_cubes_combined_side_by_side(tmp_path):
    """-c of two cubes: speedscope has every location of both, the stacks
    are summed over both."""
    a, b = tmp_path / "a.cubex", tmp_path / "b.cubex"
    cube.write(from_report(profile()), str(a))
    cube.write(from_report(profile(rank=1)), str(b))
    p = run_tool("psprocess", "-c", "--folded", str(tmp_path / "ab.folded"), "--speedscope",
                 str(tmp_path / "ab.json"), str(a), str(b))
    assert p.returncode == 0, p.stderr
    one = folded_of(tmp_path / "ab.folded")
    assert one == {s: 2 * int(w) for s, w in (line.rsplit(" ", 1) for line in EXPECTED_FOLDED.splitlines())}
    assert len(json.loads((tmp_path / "ab.json").read_text())["profiles"]) == 4


def test_cube_exports_refused_with_one_line(tmp_path):
    """What a cube cannot give is refused before anything is written: gmon
    (per-address data), a mix with a document, a flat profile's cube."""
    made = tmp_path / "app.cubex"
    cube.write(from_report(profile()), str(made))
    line = one_line_error(run_tool("psprocess", "--folded", str(tmp_path / "x.folded"), "--gmon",
                                   str(tmp_path / "gmon.out"), str(made)), "psprocess")
    assert "--gmon" in line and "CUBE file" in line
    assert not (tmp_path / "x.folded").exists() and not (tmp_path / "gmon.out").exists()
    flat = tmp_path / "flat.cubex"
    cube.write(from_report(flat_profile()), str(flat))
    line = one_line_error(run_tool("psprocess", "--folded", str(tmp_path / "f.folded"), str(flat)), "psprocess")
    assert "psrun --callpath" in line
    assert not (tmp_path / "f.folded").exists()
    line = one_line_error(run_tool("psprocess", "--speedscope", str(tmp_path / "f.json"), str(made),
                                   str(SCOREP / "mpi1.cubex")), "psprocess")
    assert "-c" in line
    document = Path(__file__).parent / "data" / "cubelib-reads-psuite" / "inputs" / "counts" / "work.r0.31389.vm.xml"
    line = one_line_error(run_tool("psprocess", "-c", "--folded", str(tmp_path / "m.folded"), str(made),
                                   str(document)), "psprocess")
    assert "CUBE file" in line and "PerfSuite document" in line
    line = one_line_error(run_tool("psprocess", "--folded", str(tmp_path / "x.folded"), "-f", "xml", "-o",
                                   str(tmp_path / "r.xml"), str(made)), "psprocess")
    assert "-f xml" in line
    assert not list(tmp_path.glob("*.folded")) and not list(tmp_path.glob("*.json"))


def test_combined_documents_give_the_merged_experiments_stacks(tmp_path):
    """From the API as from psprocess -c: the merged experiment's stacks
    are the members' summed; a combination of flat profiles is refused."""
    both = from_report(MultiReport(reports=[profile(rank=0), profile(rank=1)]))
    lines = folded.folded_lines(both)
    assert lines == {s: 2 * int(w) for s, w in (line.rsplit(" ", 1) for line in EXPECTED_FOLDED.splitlines())}
    flat = from_report(MultiReport(reports=[flat_profile(), flat_profile()]))
    assert flat.attributes[experiments.FLAT_PROFILE]
