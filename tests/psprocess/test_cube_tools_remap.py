"""psprocess remap against CubeLib's cube_remap2 (tests/psprocess/data/scorep, made by make.sh):

- remap-small.cubex: cube_remap2 -r src/remap-small.spec of mpi1 (time with a postderived child, visits);
- remap-full.cubex, remap-full-omp.cubex: cube_remap2 -r src/remap-full.spec of mpi1 and omp, psuite's own
  specification with every construct Score-P's scorep.spec uses (README.md there lists them);
- remap.cubex, remap-omp.cubex: cube_remap2 -r with Score-P's installed scorep.spec, which is the
  specification Score-P stores in every profile (the tar member remapping.spec of mpi1.cubex and omp.cubex,
  byte for byte the installed one): psprocess remap without -r takes that one;
- remap-d.cubex, remap-full-d.cubex: cube_remap2 -d (every metric stored, derived ones computed);
- remap-aggr.cubex: cube_remap2 -r src/remap-aggr.spec of mpi1, derived metrics with CubePL aggregation
  operators (<cubeplaggr> plus, minus and aggr).

Each is run through the real command, and psuite's output, dumped by psprocess in all four views (metric
tree and call tree, inclusive and exclusive), per location and over all locations, is compared with
CubeLib's full-precision values of cube_remap2's output (values/*.tsv.gz, relative 1e-9), keyed by call
path and location from each file's own anchor.xml.  CubeLib's tools do not show GHOST metrics (values/
has none); psuite writes them as ordinary metrics, checked against the profile's values instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import one_line_error, run_tool
from tests.psprocess.cubelib_reference import DATA, anchor, close, dump
from tests.psprocess.test_cube_algebra_cubelib import keyed_cubelib, keyed_psuite

# reference cube -> (specification or None for the profile's own, profile, options)
CASES = {
    "remap-small": ("src/remap-small.spec", "mpi1", []),
    "remap-full": ("src/remap-full.spec", "mpi1", []),
    "remap-full-omp": ("src/remap-full.spec", "omp", []),
    "remap": (None, "mpi1", []),
    "remap-omp": (None, "omp", []),
    "remap-d": (None, "mpi1", ["-d"]),
    "remap-full-d": ("src/remap-full.spec", "mpi1", ["-d"]),
    "remap-aggr": ("src/remap-aggr.spec", "mpi1", []),
}


def psprocess(*args: str, cwd: Path | None = None):
    return run_tool("psprocess", *args, cwd=cwd, timeout=300)


def remapped(name: str, tmp_path: Path) -> tuple[Path, str]:
    spec, profile, options = CASES[name]
    out = tmp_path / f"{name}.cubex"
    p = psprocess("remap", *(["-r", str(DATA / spec)] if spec else []), *options, str(DATA / f"{profile}.cubex"),
                  "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and out.exists()
    return out, p.stderr


@pytest.mark.parametrize("name", sorted(CASES))
def test_remap_equals_cube_remap2_value_by_value(tmp_path, name):
    out, _ = remapped(name, tmp_path)
    theirs, a = keyed_cubelib(name)
    shown = [m for m in a.metrics if m not in a.ghosts]
    # the same metric tree, in CubeLib's order (cube_info -l's); ghosts are written as ordinary metrics
    ours_anchor = anchor(out)
    assert [m for m in ours_anchor.metrics if m not in a.ghosts] == shown
    assert (DATA / f"{name}.metrics.txt").read_text().split() == shown
    assert set(ours_anchor.metrics) - set(shown) == a.ghosts
    assert ours_anchor.derived == a.derived - a.ghosts
    theirs = {k: v for k, v in theirs.items() if k[2] not in a.ghosts}
    ours = keyed_psuite(out, shown)
    assert ours.keys() == theirs.keys()
    assert len(theirs) == 4 * len(shown) * len(a.cnodes) * (len(a.locations) + 1)
    # an exclusive view subtracts (a call path less its callees, a metric less its children: Score-P's mpi
    # less its parts is 0): there a difference below 1e-12 of the metric's largest value is rounding noise
    scale: dict[str, float] = {}
    for key, v in theirs.items():
        scale[key[2]] = max(scale.get(key[2], 0.0), abs(v))
    bad = [(key, ours[key], y) for key, y in theirs.items()
           if not close(ours[key], y, 1e-12 * scale[key[2]] if "excl" in key[:2] else 0.0)]
    assert not bad, f"{len(bad)} of {len(theirs)} values differ (point, psuite, CubeLib), first {bad[:3]}"


@pytest.mark.parametrize("name", ["remap", "remap-full"])
def test_ghost_metrics_keep_the_profiles_values(tmp_path, name):
    # CubeLib's tools hide a GHOST metric (bytes_sent, bytes_received in Score-P's spec); psuite writes it
    # as an ordinary metric holding the profile's values
    out, _ = remapped(name, tmp_path)
    a = anchor(DATA / f"{name}.cubex")
    assert "bytes_sent" in a.ghosts
    for ghost in sorted(a.ghosts):
        for tree in ("incl", "excl"):
            [ours] = dump(out, [ghost], "incl", tree, False)
            [profile] = dump(DATA / "mpi1.cubex", [ghost], "incl", tree, False)
            assert ours == profile
            assert any(v for v in ours.values())


def test_convert_stores_every_metric(tmp_path):
    # -d: no derived metric is left; a derived metric is stored INCLUSIVE, as cube_remap2 -d stores it
    out, _ = remapped("remap-d", tmp_path)
    ours, theirs = anchor(out), anchor(DATA / "remap-d.cubex")
    assert not ours.derived and not theirs.derived
    assert "comp" in ours.metrics
    assert anchor(remapped("remap", tmp_path)[0]).derived >= {"comp", "execution", "mpi"}


def test_void_metrics_are_left_out_and_named(tmp_path):
    out, err = remapped("remap-full-omp", tmp_path)
    metrics = anchor(out).metrics
    # set VOID by the init program (no MPI in an OpenMP profile), with its subtree; a metric the profile has
    # and the spec does not name, voided there; <val>VOID</val> on a metric the profile lacks
    for gone in ("mpi_time", "mpi_per_visit", "io_bytes_written", "void_child"):
        assert gone not in metrics
        assert gone in err
    # <val>VOID</val> on a metric the profile has: cube_remap2 takes the profile's setting
    assert "max_time" in metrics
    # the profile's metrics the spec does not name, after the spec's
    assert metrics[-4:] == ["min_time", "bytes_put", "bytes_get", "io_bytes_read"]
    out, err = remapped("remap-full", tmp_path)
    assert "mpi_time" in anchor(out).metrics and "mpi_time" not in err


def test_regions_no_call_path_enters_are_dropped(tmp_path):
    import tarfile

    out, _ = remapped("remap", tmp_path)

    def regions(path: Path) -> int:
        with tarfile.open(path) as tar:
            member = tar.extractfile("anchor.xml")
            assert member is not None
            return member.read().count(b"<region ")

    assert regions(DATA / "mpi1.cubex") > regions(out) == regions(DATA / "remap.cubex")


def test_default_output_is_remap_cubex_and_an_existing_one_is_kept(tmp_path):
    p = psprocess("remap", "-r", str(DATA / "src/remap-small.spec"), str(DATA / "mpi1.cubex"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = tmp_path / "remap.cubex"
    assert out.exists()
    before = out.read_bytes()
    p = psprocess("remap", str(DATA / "mpi1.cubex"), cwd=tmp_path)
    assert "--force" in one_line_error(p, "psprocess remap")
    assert out.read_bytes() == before
    p = psprocess("remap", str(DATA / "mpi1.cubex"), "--force", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes() != before


SPECS = {
    "not-xml": ("<metrics><metric><uniq_name>time</metric></metrics>", "not well-formed"),
    "no-metric": ("<metrics title='t'></metrics>", "names no metric"),
    "other-root": ("<cube><metrics/></cube>", "<cube>"),
    "no-name": ("<metrics><metric><disp_name>Time</disp_name></metric></metrics>", "without a <uniq_name>"),
    "twice": ("<metrics><metric><uniq_name>t</uniq_name></metric><metric><uniq_name>t</uniq_name></metric>"
              "</metrics>", "two metrics are named 't'"),
    "no-cubepl": ("<metrics><metric type='POSTDERIVED'><uniq_name>r</uniq_name></metric></metrics>",
                  "no <cubepl>"),
    "bad-cubepl": ("<metrics><metric type='POSTDERIVED'><uniq_name>r</uniq_name><cubepl>metric::time( +"
                   "</cubepl></metric></metrics>", "metric 'r'"),
    "stray-tag": ("<metrics><metric><uniq_name>t</uniq_name><colour>red</colour></metric></metrics>",
                  "<colour>"),
    "cycle": ("<metrics><metric type='POSTDERIVED'><uniq_name>a</uniq_name><cubepl>metric::b()</cubepl></metric>"
              "<metric type='POSTDERIVED'><uniq_name>b</uniq_name><cubepl>metric::a() + 1</cubepl></metric>"
              "</metrics>", "refers to itself"),
    "init-fails": ("<metrics><metric type='POSTDERIVED'><uniq_name>a</uniq_name><cubepl>1</cubepl>"
                   "<cubeplinit>{ ${i} = 0; while (${i} == 0) { ${j} = 1; }; return 0; }</cubeplinit>"
                   "</metric></metrics>", "<cubeplinit>"),
    "deep": ("<metrics>" + "<metric><uniq_name>m</uniq_name>" * 300 + "</metric>" * 300 + "</metrics>",
             "deeper than 250 levels"),
    "aggr-type": ("<metrics><metric type='POSTDERIVED'><uniq_name>r</uniq_name><cubepl>1</cubepl>"
                  "<cubeplaggr cubeplaggrtype=times>arg1 * arg2</cubeplaggr></metric></metrics>", "'times'"),
    "aggr-metric": ("<metrics><metric type='PREDERIVED_EXCLUSIVE'><uniq_name>r</uniq_name><cubepl>1</cubepl>"
                    "<cubeplaggr cubeplaggrtype=plus>arg1 + metric::time()</cubeplaggr></metric></metrics>",
                    "<cubeplaggr> plus"),
    "aggr-stored": ("<metrics><metric><uniq_name>t</uniq_name>"
                    "<cubeplaggr cubeplaggrtype=plus>arg1 + arg2</cubeplaggr></metric></metrics>", "CubePL"),
}


@pytest.mark.parametrize("case", sorted(SPECS))
def test_a_bad_specification_is_refused_in_one_line_writing_nothing(tmp_path, case):
    text, says = SPECS[case]
    spec = tmp_path / "bad.spec"
    spec.write_text(text)
    out = tmp_path / "out.cubex"
    p = psprocess("remap", "-r", str(spec), str(DATA / "mpi1.cubex"), "-o", str(out))
    line = one_line_error(p, "psprocess remap")
    assert says in line and "bad.spec" in line
    assert not out.exists()


@pytest.mark.parametrize("case", ["missing-spec", "missing-input", "not-a-cube", "no-embedded-spec",
                                  "damaged-cube"])
def test_bad_inputs_are_refused_in_one_line_writing_nothing(tmp_path, case):
    spec = ["-r", str(DATA / "src/remap-small.spec")]
    text = tmp_path / "profile.txt"
    text.write_text("not a cube\n")
    damaged = tmp_path / "damaged.cubex"
    damaged.write_bytes((DATA / "mpi1.cubex").read_bytes()[:3000])
    args, says = {
        "missing-spec": (["-r", str(tmp_path / "nosuch.spec"), str(DATA / "mpi1.cubex")], "nosuch.spec"),
        "missing-input": ([*spec, str(tmp_path / "nosuch.cubex")], "nosuch.cubex"),
        "not-a-cube": ([*spec, str(text)], "not a CUBE 4 file"),
        "no-embedded-spec": ([str(DATA / "remap-small.cubex")], "no remapping specification; give one with -r"),
        "damaged-cube": ([*spec, str(damaged)], "damaged.cubex"),
    }[case]
    out = tmp_path / "out.cubex"
    p = psprocess("remap", *args, "-o", str(out))
    assert says in one_line_error(p, "psprocess remap")
    assert not out.exists()


def test_help_names_cube_remap2():
    p = psprocess("remap", "--help")
    assert p.returncode == 0
    assert "cube_remap2" in p.stdout and "-r SPEC" in p.stdout
    p = psprocess("--help")
    assert "remap" in p.stdout


def test_cubelibs_unquoted_cubepl_attribute_and_an_xml_declaration_are_read(tmp_path):
    # CubeLib writes and reads <cubepl rowwise=false> unquoted (not XML); psuite also takes an XML declaration,
    # which CubeLib's parser refuses
    text = (DATA / "src/remap-small.spec").read_text()
    assert "<cubepl>" in text
    spec = tmp_path / "rowwise.spec"
    spec.write_text('<?xml version="1.0"?>\n' + text.replace("<cubepl>", "<cubepl rowwise=false>"))
    out = tmp_path / "rowwise.cubex"
    p = psprocess("remap", "-r", str(spec), str(DATA / "mpi1.cubex"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    plain, _ = remapped("remap-small", tmp_path)
    for tree in ("incl", "excl"):
        assert dump(out, ["time_per_visit"], "incl", tree, True) == dump(plain, ["time_per_visit"], "incl", tree, True)


def test_derived_metrics_of_the_profile_the_spec_does_not_name_keep_their_cubepl(tmp_path):
    # remap.cubex (cube_remap2's output, Score-P's derived metrics) remapped again with the small spec: its
    # derived metrics stay, evaluated as before (cube_remap2 writes them with an empty <cubepl>, so 0)
    out = tmp_path / "again.cubex"
    p = psprocess("remap", "-r", str(DATA / "src/remap-small.spec"), str(DATA / "remap.cubex"), "-o", str(out))
    assert p.returncode == 0, p.stderr
    kept = ["execution", "comp", "mpi", "bytes_sent_p2p"]
    assert set(kept) <= anchor(out).derived
    theirs, _ = keyed_cubelib("remap")
    theirs = {k: v for k, v in theirs.items() if k[2] in kept}
    ours = keyed_psuite(out, kept)
    assert ours.keys() == theirs.keys()
    bad = [(k, ours[k], v) for k, v in theirs.items() if not close(ours[k], v, 1e-15 if "excl" in k[:2] else 0.0)]
    assert not bad, bad[:3]
    assert any(v for k, v in ours.items() if k[2] == "comp")


def test_attributes_of_regions_and_the_system_tree_kept_as_cube_remap2_keeps_them(tmp_path):
    from tests.psprocess.test_cube_write_attributes import attributes

    out, _ = remapped("remap", tmp_path)
    theirs = {k: v for k, v in attributes(DATA / "remap.cubex").items() if k[0] != "metric"}
    assert theirs  # Score-P's: the program region's arguments, the machine's platform
    assert {k: v for k, v in attributes(out).items() if k[0] != "metric"} == theirs
