"""Input descriptions (perfbase paper, section 3.2): the paper's b_eff_io
example read from its Fig. 4 output, then each means of locating a value,
and the errors.  Expected numbers are taken from the text by the test itself
(splitting lines), never through psbase."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import shutil
from pathlib import Path

import pytest
import regex

from psuite.errors import InputError, UsageError
from psuite.psbase import definition, inputdesc
from psuite.psbase.model import BadValue, Definition, Variable
from psuite.psbase.store import Store, StoreError

DATA = Path(__file__).resolve().parent / "data"
SUM_FILES = sorted(DATA.glob("bio_*.sum"))
BANDWIDTHS = ["B_scatter", "B_shared", "B_separate", "B_segmented", "B_segcoll"]


def _var(name: str, datatype: str, occurrence: str = "once", **kw: object) -> Variable:
    return Variable(name, datatype, occurrence=occurrence, **kw)


def bio_definition() -> Definition:
    """The experiment of tests/psbase/data/b_eff_io.experiment.xml, built directly."""
    once = [
        ("T", "integer"), ("N", "integer"), ("MT", "integer"), ("mem_pe", "integer"), ("mem_total", "integer"),
        ("chunk_max", "float"), ("run_index", "integer"), ("system", "string"), ("host", "string"),
        ("os_release", "version"), ("date_run", "timestamp"),
    ]  # fmt: skip
    variables = [_var(n, t) for n, t in once]
    variables.append(_var("technique", "string", valid=["listbased", "listless"]))
    variables.append(_var("fs", "string", valid=["ufs", "nfs", "pvfs", "unknown"], default="unknown"))
    variables += [_var(n, "integer", "multiple") for n in ("N_proc", "pos", "S_chunk")]
    variables.append(_var("access", "string", "multiple", valid=["write", "rewrite", "read"]))
    variables += [_var(n, "float", "multiple", is_result=True) for n in BANDWIDTHS]
    variables += [_var(n, "float", is_result=True) for n in ("B_write", "B_rewrite", "B_read", "b_eff_io")]
    return Definition("b_eff_io", "Results of b_eff_io Benchmark", "", "Joachim Worringen", variables)


def _after(lines: list[str], key: str) -> str:
    """The text after `key` on the first line holding it (the test's own reading of the file)."""
    line = next(line for line in lines if key in line)
    return line.split(key, 1)[1]


def _expected(path: Path) -> tuple[dict[str, object], list[dict[str, object]]]:
    lines = path.read_text().splitlines()
    name = path.stem.split("_")  # bio T10 N4 listbased ufs grisu run1
    values: dict[str, object] = {
        "technique": name[3],
        "fs": name[4],
        "run_index": int(name[6][3:]),
        "mem_pe": int(_after(lines, "MEMORY PER PROCESSOR =").split()[0]),
        "chunk_max": float(lines[lines.index("Maximum chunk size =") + 1].split()[0]),
        "N": int(_after(lines, "-N ").split()[0]),
        "T": int(_after(lines, " T=").split(",")[0]),
        "MT": int(_after(lines, "MT=").split()[0]),
        "system": _after(lines, "system name :").strip(),
        "host": _after(lines, "hostname    :").strip(),
        "date_run": dt.datetime.strptime(_after(lines, "Date of measurement:").strip(), "%a %b %d %H:%M:%S %Y"),
        "b_eff_io": float(_after(lines, "measurements =").split()[0]),
    }
    for access in ("write", "rewrite", "read"):
        values[f"B_{access}"] = float(_after(lines, f"weighted average bandwidth for {access}").split()[1])
    values["mem_total"] = values["mem_pe"] * values["N"]
    rows = []
    for line in lines:
        words = line.split()
        if len(words) == 10 and words[1] == "PEs" and words[2].isdigit():
            row = {"N_proc": int(words[0]), "pos": int(words[2]), "S_chunk": int(words[3]), "access": words[4]}
            row.update(zip(BANDWIDTHS, map(float, words[5:]), strict=True))
            rows.append(row)
    return values, rows


def test_fig4_files_cover_the_table_of_the_paper() -> None:
    # the reconstruction keeps every legible number of Fig. 4: spot checks against the paper's text
    text = (DATA / "bio_T10_N4_listbased_ufs_grisu_run1.sum").read_text()
    for fragment in ("4 PEs 4      32768   rewrite   63.221   34.205   90.227  102.996   88.864",
                     "total-read  300.390  811.358 1073.572 1088.574  575.428", "read   :  691.619 MB/s"):  # fmt: skip
        assert fragment in text
    assert len(SUM_FILES) == 4


@pytest.mark.parametrize("path", SUM_FILES, ids=lambda p: p.stem)
def test_b_eff_io_example(path: Path) -> None:
    runs = inputdesc.extract(str(DATA / "b_eff_io.input.xml"), bio_definition(), [str(path)])
    assert len(runs) == 1
    run = runs[0]
    values, rows = _expected(path)
    for name, value in values.items():
        assert run.values[name] == value, name
    assert str(run.values["os_release"]) == "2.6.6"
    assert set(run.values) == set(values) | {"os_release"}
    assert len(rows) == 24  # 8 chunk patterns x write, rewrite, read; the total lines are not data sets
    assert run.rows == rows
    assert {r["N_proc"] for r in run.rows} == {values["N"]}
    assert run.sources == [str(path)]
    assert run.content_hash == hashlib.sha256(path.read_bytes()).hexdigest()


def test_b_eff_io_experiment_xml_is_the_definition_used_here() -> None:
    loaded = definition.load(str(DATA / "b_eff_io.experiment.xml"))
    assert loaded.name == "b_eff_io"
    fields = [(v.name, v.datatype, v.occurrence, v.valid, v.default, v.is_result) for v in bio_definition().variables]
    assert sorted(
        (v.name, v.datatype, v.occurrence, v.valid, v.default, v.is_result) for v in loaded.variables
    ) == sorted(fields)
    assert loaded.variable("B_scatter").unit == "MB/s"


def test_b_eff_io_several_files_are_several_runs() -> None:
    loaded = definition.load(str(DATA / "b_eff_io.experiment.xml"))
    runs = inputdesc.extract(str(DATA / "b_eff_io.input.xml"), loaded, [str(p) for p in SUM_FILES])
    assert [r.sources for r in runs] == [[str(p)] for p in SUM_FILES]
    assert len({r.content_hash for r in runs}) == 4
    assert sorted((r.values["technique"], r.values["fs"], r.values["T"], r.values["N"]) for r in runs) == [
        ("listbased", "ufs", 10, 4), ("listbased", "ufs", 10, 4),
        ("listless", "nfs", 20, 2), ("listless", "ufs", 10, 4),
    ]  # fmt: skip


def test_a_file_given_twice_to_the_python_api_is_refused(tmp_path: Path) -> None:
    """extract() and extract_merged() refuse a file given twice, even as the
    very same string object, and a copy of it under another name."""
    loaded = definition.load(str(DATA / "b_eff_io.experiment.xml"))
    desc = str(DATA / "b_eff_io.input.xml")
    one = str(SUM_FILES[0])
    copy = tmp_path / SUM_FILES[0].name
    shutil.copy(SUM_FILES[0], copy)
    for files, said in (([one, one], f"{one} is given twice in this input"),
                        ([one, str(copy)], f"{copy} has the same content as {one}")):  # fmt: skip
        with pytest.raises(UsageError, match=re.escape(said)):
            inputdesc.extract(desc, loaded, files)
        with pytest.raises(UsageError, match=re.escape(said)):
            inputdesc.extract_merged([(desc, f) for f in files], loaded)


def test_b_eff_io_runs_filed_in_an_archive(db_url: str) -> None:
    # what extract() makes, the store takes: typed values, data sets, and the hash that refuses a second import
    loaded = definition.load(str(DATA / "b_eff_io.experiment.xml"))
    store = Store(db_url, create=True)
    store.setup(loaded)
    files = [str(p) for p in SUM_FILES]
    runs = inputdesc.extract(str(DATA / "b_eff_io.input.xml"), loaded, files)
    assert store.add_runs("b_eff_io", runs) == [1, 2, 3, 4]
    for index, path in enumerate(SUM_FILES, start=1):
        values, rows = _expected(path)
        stored = store.run("b_eff_io", index)
        assert stored.sources == [str(path)]
        assert {k: stored.values[k] for k in values} == values
        assert stored.rows == rows
    with pytest.raises(StoreError, match="is already run 2 of b_eff_io"):
        store.add_runs("b_eff_io", inputdesc.extract(str(DATA / "b_eff_io.input.xml"), loaded, files[1:2]))
    assert len(store.list_runs("b_eff_io")) == 4
    store.close()


def test_b_eff_io_unknown_file_system_takes_the_default(tmp_path: Path) -> None:
    # fs is read from the file name; <missing name="fs" policy="default"/> gives the definition's default
    target = tmp_path / "b_eff_io_listbased_run3.sum"
    shutil.copy(SUM_FILES[0], target)
    desc = inputdesc.parse(str(DATA / "b_eff_io.input.xml"))
    desc.filename[0] = inputdesc.FilenameLocation(
        inputdesc.Pattern("x", regex.compile(r"_(listbased|listless)_run(\d+)")),
        ((1, "technique"), (2, "run_index")),
    )
    run = inputdesc.extract(desc, bio_definition(), [str(target)])[0]
    assert (run.values["fs"], run.values["technique"], run.values["run_index"]) == ("unknown", "listbased", 3)


# ---------------------------------------------------------------------------
# Focused tests: one feature each, on small files


def _desc(tmp_path: Path, body: str, attrs: str = "") -> str:
    path = tmp_path / "desc.xml"
    path.write_text(f"<input {attrs}>\n{body}\n</input>\n")
    return str(path)


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _defn(*variables: Variable) -> Definition:
    return Definition("exp", "", "", "", list(variables))


def test_named_locations_after_before_next_line_word_and_group(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "nodes: 16 (busy)\n42 seconds elapsed\nsize =\n   7 MB 9\nname := alpha beta\n")
    desc = _desc(tmp_path, """
      <named_location><name>nodes</name><match>nodes</match></named_location>
      <named_location side="before"><name>secs</name><match>seconds</match></named_location>
      <named_location line="next" word="3"><name>size</name><match>size =</match></named_location>
      <named_location><name>label</name><regexp>name := (\\w+)</regexp></named_location>
      <named_location word="2"><name>second</name><match>:=</match></named_location>
    """)  # fmt: skip
    defn = _defn(_var("nodes", "integer"), _var("secs", "float"), _var("size", "integer"), _var("label", "string"),
                 _var("second", "string"))  # fmt: skip
    run = inputdesc.extract(desc, defn, [out])[0]
    assert run.values == {"nodes": 16, "secs": 42.0, "size": 9, "label": "alpha", "second": "beta"}
    assert run.rows == []


def test_explicit_location_row_and_column(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "header\n a b c\n 1 2.5 3\n")
    desc = _desc(tmp_path, "<explicit_location><name>x</name><row>3</row><column>2</column></explicit_location>")
    assert inputdesc.extract(desc, _defn(_var("x", "float")), [out])[0].values == {"x": 2.5}


def test_tabular_location_rows_end_at_blank_or_non_matching_line(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "TABLE\nn t\n1 0.5\n# comment\n2 0.25\nsummary 9\n3 0.1\n\nTABLE2\n7 x\n\n8 y\n")
    desc = _desc(tmp_path, """
      <tabular_location><match>TABLE</match><skip>1</skip><ignore>^#</ignore><row>^\\d</row>
        <column pos="1">n</column><column pos="2">t</column></tabular_location>
      <tabular_location><match>TABLE2</match><column pos="2">tag</column></tabular_location>
    """)  # fmt: skip
    defn = _defn(_var("n", "integer", "multiple"), _var("t", "float", "multiple"), _var("tag", "string", "multiple"))
    run = inputdesc.extract(desc, defn, [out], missing="empty")[0]
    # TABLE stops at "summary 9" (not a row), TABLE2 at the blank line; the tables' rows follow each other
    assert run.rows == [
        {"n": 1, "t": 0.5, "tag": None},
        {"n": 2, "t": 0.25, "tag": None},
        {"n": None, "t": None, "tag": "x"},
    ]


def test_values_from_the_file_name(tmp_path: Path) -> None:
    out = _file(tmp_path, "job_np8_gcc-12.log", "nothing\n")
    desc = _desc(
        tmp_path,
        """<filename_location><regexp>np(\\d+)_(\\w+)-(\\d+)</regexp>
        <name>np</name><name group="3">major</name><name group="2">compiler</name></filename_location>""",
    )
    defn = _defn(_var("np", "integer"), _var("compiler", "string"), _var("major", "integer"))
    assert inputdesc.extract(desc, defn, [out])[0].values == {"np": 8, "compiler": "gcc", "major": 12}


def test_fixed_values_xml_and_command_line(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "time 3.5\nT\n1\n2\n")
    desc = _desc(tmp_path, """
      <fixed_value><name>machine</name><value>grisu</value></fixed_value>
      <fixed_value><name>phase</name><value>warm</value></fixed_value>
      <named_location><name>time</name><match>time</match></named_location>
      <tabular_location><match>T</match><row>^\\d</row><column pos="1">i</column></tabular_location>
    """)  # fmt: skip
    defn = _defn(_var("machine", "string"), _var("time", "float"), _var("cc", "string"),
                 _var("i", "integer", "multiple"), _var("phase", "string", "multiple"))  # fmt: skip
    run = inputdesc.extract(desc, defn, [out], fixed={"cc": "icc", "time": "4.25"})[0]
    # the command line overrides what the file says; fixed data-set values fill every row
    assert run.values == {"machine": "grisu", "time": 4.25, "cc": "icc"}
    assert run.rows == [{"i": 1, "phase": "warm"}, {"i": 2, "phase": "warm"}]
    with pytest.raises(UsageError, match="fixed value for 'cx'"):
        inputdesc.extract(desc, defn, [out], fixed={"cx": "icc"})


def test_derived_parameters_once_and_per_row(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "np 4\nthreads 3\nDATA\n10 2.0\n20 8.0\n")
    desc = _desc(tmp_path, """
      <named_location><name>np</name><match>np</match></named_location>
      <named_location><name>threads</name><match>threads</match></named_location>
      <tabular_location><match>DATA</match>
        <column pos="1">bytes</column><column pos="2">secs</column></tabular_location>
      <derived_parameter><name>cores</name><term>np * threads</term></derived_parameter>
      <derived_parameter><name>half</name><term>(cores - 2) / 2 + 2 ** 3 % 5 - -1</term></derived_parameter>
      <derived_parameter><name>rate</name><term>bytes / secs / max(np, 1)</term></derived_parameter>
    """)  # fmt: skip
    defn = _defn(_var("np", "integer"), _var("threads", "integer"), _var("cores", "integer"), _var("half", "float"),
                 _var("bytes", "integer", "multiple"), _var("secs", "float", "multiple"),
                 _var("rate", "float", "multiple"))  # fmt: skip
    run = inputdesc.extract(desc, defn, [out])[0]
    assert run.values == {"np": 4, "threads": 3, "cores": 12, "half": (12 - 2) / 2 + 8 % 5 + 1}
    assert [r["rate"] for r in run.rows] == [10 / 2.0 / 4, 20 / 8.0 / 4]
    # an input missing from the file takes its default before the derivation uses it
    Path(out).write_text("np 4\nDATA\n10 2.0\n")
    defn.variable("threads").default = "2"
    run = inputdesc.extract(desc, defn, [out], missing="default")[0]
    assert (run.values["threads"], run.values["cores"]) == (2, 8)
    Path(out).write_text("np 4\nthreads 3\nDATA\n10 2.0\n20 8.0\n")
    # a value given on the command line wins over the derivation, and feeds the derivations after it
    run = inputdesc.extract(desc, defn, [out], fixed={"cores": "2"})[0]
    assert (run.values["cores"], run.values["half"]) == (2, (2 - 2) / 2 + 8 % 5 + 1)


@pytest.mark.parametrize(
    "term",
    ["__import__('os').system('true')", "np.__class__", "'a' * 3", "[np]", "np if np else 1", "lambda: 1", "f(np)"],
)
def test_derived_terms_are_arithmetic_only(tmp_path: Path, term: str) -> None:
    desc = _desc(
        tmp_path, f"<derived_parameter><name>x</name><term>{term.replace('<', '&lt;')}</term></derived_parameter>"
    )
    with pytest.raises(UsageError, match=r"desc\.xml: <derived_parameter> \(line \d+\)") as err:
        inputdesc.parse(desc)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("term", "message"),
    [
        ("1 / np", r"out\.txt: derived parameter 'inv' = 1 / np: division by zero"),
        ("neg ** 0.5", r"out\.txt: derived parameter 'inv' = neg \*\* 0\.5 is not a real number"),
        ("when + 1", r"out\.txt: derived parameter 'inv' = when \+ 1: 'when' = .* is not a number"),
        ("(2 ** 4000) * 1.0", r"out\.txt: derived parameter 'inv' = .*: the result is too large"),
    ],
)
def test_derived_errors_are_one_line(tmp_path: Path, term: str, message: str) -> None:
    out = _file(tmp_path, "out.txt", "np 0\nneg -8\nwhen 2004-11-23\n")
    desc = _desc(
        tmp_path,
        f"""<named_location><name>np</name><match>np</match></named_location>
      <named_location><name>neg</name><match>neg</match></named_location>
      <named_location><name>when</name><match>when</match></named_location>
      <derived_parameter><name>inv</name><term>{term}</term></derived_parameter>""",
    )
    defn = _defn(_var("np", "integer"), _var("neg", "integer"), _var("when", "date"), _var("inv", "float"))
    with pytest.raises(UsageError, match=message) as err:
        inputdesc.extract(desc, defn, [out])
    assert "\n" not in str(err.value)


def test_run_separator_gives_several_runs(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "preamble 99\n=== run\nnp 1\nt 0.5\n=== run\nnp 2\nt 0.3\n=== run\nnp 4\nt 0.2\n")
    desc = _desc(
        tmp_path,
        """<set_separation><match>=== run</match></set_separation>
      <named_location><name>np</name><match>np</match></named_location>
      <named_location><name>t</name><match>t </match></named_location>
      <explicit_location><name>first</name><row>2</row><column>2</column></explicit_location>""",
    )
    defn = _defn(_var("np", "integer"), _var("t", "float"), _var("first", "integer"))
    runs = inputdesc.extract(desc, defn, [out])
    # rows of an explicit location count from the run's separator line
    assert [r.values for r in runs] == [{"np": 1, "t": 0.5, "first": 1}, {"np": 2, "t": 0.3, "first": 2},
                                        {"np": 4, "t": 0.2, "first": 4}]  # fmt: skip
    hashes = [r.content_hash for r in runs]
    assert len(set(hashes)) == 3
    assert [r.content_hash for r in inputdesc.extract(desc, defn, [out])] == hashes  # a second import is refused
    # a run appended to the file later is new; the runs filed before keep their hashes (refused again)
    with open(out, "a") as f:
        f.write("=== run\nnp 8\nt 0.1\n")
    again = inputdesc.extract(desc, defn, [out])
    assert [r.content_hash for r in again[:3]] == hashes and again[3].content_hash not in hashes
    with pytest.raises(UsageError, match="no line matches the run separator"):
        inputdesc.extract(desc, defn, [_file(tmp_path, "other.txt", "np 1\n")])


def test_several_files_merged_into_one_run(tmp_path: Path) -> None:
    a = _file(tmp_path, "b.txt", "np 4\nDATA\n1 2\n")
    b = _file(tmp_path, "a.txt", "host x1\nnp 4\nDATA\n3 4\n")
    desc = _desc(
        tmp_path,
        """<named_location><name>np</name><match>np</match></named_location>
      <named_location><name>host</name><match>host</match></named_location>
      <tabular_location><match>DATA</match><column pos="1">i</column><column pos="2">j</column></tabular_location>""",
    )
    defn = _defn(_var("np", "integer"), _var("host", "string"), _var("i", "integer", "multiple"),
                 _var("j", "integer", "multiple"))  # fmt: skip
    (run,) = inputdesc.extract(desc, defn, [a, b], merge=True)
    assert run.values == {"np": 4, "host": "x1"}
    assert run.rows == [{"i": 1, "j": 2}, {"i": 3, "j": 4}]
    assert run.sources == [a, b]
    # the same files in another order, or copies under other names, are the same run
    (swapped,) = inputdesc.extract(desc, defn, [b, a], merge=True)
    copies = [str(shutil.copy(p, tmp_path / f"copy{i}.txt")) for i, p in enumerate((a, b))]
    (copied,) = inputdesc.extract(desc, defn, copies, merge=True)
    assert run.content_hash == swapped.content_hash == copied.content_hash
    assert run.content_hash != hashlib.sha256(Path(a).read_bytes()).hexdigest()
    c = _file(tmp_path, "c.txt", "np 8\n")
    with pytest.raises(UsageError, match=r"'np' is 4 in .*b\.txt:1 but 8 in .*c\.txt:1"):
        inputdesc.extract(desc, defn, [a, c], merge=True, missing="empty")


def test_merge_files_each_with_its_own_description(tmp_path: Path) -> None:
    log = _file(tmp_path, "run.log", "started on 16 nodes\n")
    res = _file(tmp_path, "res.txt", "elapsed: 12.5 s\n")
    d1 = _desc(
        tmp_path, '<named_location side="before" word="1"><name>nodes</name><match>nodes</match></named_location>'
    )
    d2 = str(tmp_path / "d2.xml")
    Path(d2).write_text("<input><named_location><name>t</name><match>elapsed</match></named_location></input>")
    run = inputdesc.extract_merged([(d1, log), (d2, res)], _defn(_var("nodes", "integer"), _var("t", "float")))
    assert run.values == {"nodes": 16, "t": 12.5}
    assert run.sources == [log, res]


def test_missing_value_policies(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "a 1\n")
    defn = _defn(_var("a", "integer"), _var("b", "integer", default="7"), _var("c", "string"))
    body = "<named_location><name>a</name><match>a</match></named_location>"
    # refuse (the default): one line naming the file and the variable
    with pytest.raises(UsageError, match=r"out\.txt: no value for 'b'") as err:
        inputdesc.extract(_desc(tmp_path, body), defn, [out])
    assert "\n" not in str(err.value)
    assert inputdesc.extract(_desc(tmp_path, body, 'missing="empty"'), defn, [out])[0].values == {
        "a": 1, "b": None, "c": None}  # fmt: skip
    # default: the definition's default; a variable without one is refused
    with pytest.raises(UsageError, match="no value for 'c' \\(it has no default"):
        inputdesc.extract(_desc(tmp_path, body, 'missing="default"'), defn, [out])
    per_var = body + '<missing name="b" policy="default"/><missing name="c" policy="empty"/>'
    assert inputdesc.extract(_desc(tmp_path, per_var), defn, [out])[0].values == {"a": 1, "b": 7, "c": None}
    # the command line's policy replaces the description's global one, not a per-variable one
    mixed = body + '<missing name="b" policy="refuse"/>'
    with pytest.raises(UsageError, match="no value for 'b'"):
        inputdesc.extract(_desc(tmp_path, mixed), defn, [out], missing="empty")
    with pytest.raises(UsageError, match="missing-value policy 'maybe'"):
        inputdesc.extract(_desc(tmp_path, body), defn, [out], missing="maybe")


def test_missing_values_in_data_set_rows(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "A\n1\n2\n\nB\nx\n")
    body = """<tabular_location><match>A</match><column pos="1">i</column></tabular_location>
      <tabular_location><match>B</match><column pos="1">tag</column></tabular_location>"""
    defn = _defn(_var("i", "integer", "multiple", default="-1"), _var("tag", "string", "multiple"))
    # rows of table A have no 'tag': refused, naming the row's line
    with pytest.raises(UsageError, match=r"out\.txt:2: no value for 'tag'"):
        inputdesc.extract(_desc(tmp_path, body), defn, [out])
    run = inputdesc.extract(_desc(tmp_path, body + '<missing name="tag" policy="empty"/>'), defn, [out],
                            missing="default")[0]  # fmt: skip
    assert run.rows == [{"i": 1, "tag": None}, {"i": 2, "tag": None}, {"i": -1, "tag": "x"}]


def test_missing_table_is_refused_or_empty(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "no table here\n")
    body = '<tabular_location><match>DATA</match><column pos="1">i</column></tabular_location>'
    defn = _defn(_var("i", "integer", "multiple"))
    with pytest.raises(UsageError, match=r"out\.txt: no table after 'DATA'.*no value for 'i'"):
        inputdesc.extract(_desc(tmp_path, body), defn, [out])
    assert inputdesc.extract(_desc(tmp_path, body, 'missing="empty"'), defn, [out])[0].rows == []


def test_wrong_type_names_file_line_and_variable(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "x\nnp four\nDATA\n1\n2.5\n")
    named = "<named_location><name>np</name><match>np</match></named_location>"
    with pytest.raises(BadValue, match=r"out\.txt:2: variable 'np': 'four' is not an integer") as err:
        inputdesc.extract(_desc(tmp_path, named), _defn(_var("np", "integer")), [out])
    assert "\n" not in str(err.value)
    table = '<tabular_location><match>DATA</match><column pos="1">i</column></tabular_location>'
    with pytest.raises(BadValue, match=r"out\.txt:5: variable 'i': '2\.5' is not an integer"):
        inputdesc.extract(_desc(tmp_path, table), _defn(_var("i", "integer", "multiple")), [out])
    with pytest.raises(BadValue, match=r"bad_x\.txt \(file name\): variable 'n': 'x' is not an integer"):
        inputdesc.extract(
            _desc(tmp_path, "<filename_location><regexp>_(\\w)</regexp><name>n</name></filename_location>"),
            _defn(_var("n", "integer")), [_file(tmp_path, "bad_x.txt", "")],
        )  # fmt: skip


def test_description_must_match_the_experiment(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "np 1\n")
    desc = _desc(tmp_path, "<named_location><name>nq</name><match>np</match></named_location>")
    with pytest.raises(UsageError, match=r"desc\.xml: <named_location> names 'nq', which experiment 'exp' does not"):
        inputdesc.extract(desc, _defn(_var("np", "integer")), [out])
    desc = _desc(tmp_path, "<named_location><name>np</name><match>np</match></named_location>")
    # as in perfbase, a named location of a data-set variable gives a row per occurrence
    (run,) = inputdesc.extract(desc, _defn(_var("np", "integer", "multiple")), [out])
    assert run.rows == [{"np": 1}]
    counted = _desc(tmp_path, '<named_location mode="count"><name>np</name><match>np</match></named_location>')
    with pytest.raises(UsageError, match="occurs multiple per run; read it with a <tabular_location>"):
        inputdesc.extract(counted, _defn(_var("np", "integer", "multiple")), [out])
    both = _desc(
        tmp_path,
        """<named_location><name>np</name><match>np</match></named_location>
        <fixed_value><name>np</name><value>3</value></fixed_value>""",
    )
    with pytest.raises(UsageError, match="'np' has a <fixed_value> and also <named_location>"):
        inputdesc.extract(both, _defn(_var("np", "integer")), [out])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("<named_location><name>x</name></named_location>",
         r"<named_location> \(line 2\): give a <match>, <regexp> or <trigger>"),
        ("<named_location><name>x</name><regexp>(</regexp></named_location>", "does not compile"),
        ("<named_location><match>x</match></named_location>", r"<named_location> \(line 2\): <name> is missing"),
        ('<named_location side="left"><name>x</name><match>x</match></named_location>', "side='left' is not one of"),
        ('<named_location word="0"><name>x</name><match>x</match></named_location>', "word= '0' is not a positive"),
        ("<explicit_location><name>x</name><row>a</row><column>1</column></explicit_location>", "<row> 'a'"),
        ("<tabular_location><match>T</match></tabular_location>", "no <column>"),
        ("<tabular_location><match>T</match><column>x</column></tabular_location>", "pos= is missing"),
        ("<filename_location><regexp>(a)</regexp><name group='2'>x</name></filename_location>", "has 1 group"),
        ("<named_loc/>", r"<named_loc> \(line 2\): unknown element"),
        ('<missing name="x" policy="sometimes"/>', "policy='sometimes' is not one of"),
        ("<named_location><name>x</name><match>x</match>", "not well-formed XML"),
    ],
)
def test_malformed_descriptions_are_one_line(tmp_path: Path, body: str, message: str) -> None:
    path = _desc(tmp_path, body)
    with pytest.raises(UsageError, match=message) as err:
        inputdesc.parse(path)
    assert str(err.value).startswith(path + ": ")
    assert "\n" not in str(err.value)


def test_unreadable_inputs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"input description \S*absent\.xml: no such file"):
        inputdesc.parse(str(tmp_path / "absent.xml"))
    desc = _desc(tmp_path, "<named_location><name>x</name><match>x</match></named_location>")
    with pytest.raises(InputError, match=r"absent\.txt: no such file"):
        inputdesc.extract(desc, _defn(_var("x", "integer")), [str(tmp_path / "absent.txt")])
    with pytest.raises(UsageError, match=r"root element .* must be <input>"):
        inputdesc.parse(_file(tmp_path, "other.xml", "<experiment/>"))


def test_table_row_with_a_missing_cell_follows_the_policy(tmp_path: Path) -> None:
    # a row short of a cell is still a row: its missing cell is refused, emptied or defaulted, and the
    # rows after it are read; a line after the table that is no row ends it
    out = _file(tmp_path, "out.txt", "DATA\n1 10 100\n2 20\n3 30 300\nTotal: 6\n")
    desc = _desc(
        tmp_path,
        """<tabular_location><match>DATA</match><column pos="1">i</column><column pos="2">j</column>
      <column pos="3">k</column></tabular_location>""",
    )
    defn = _defn(*(_var(n, "integer", "multiple") for n in "ijk"))
    with pytest.raises(UsageError, match=r"out\.txt:3: no value for 'k'"):
        inputdesc.extract(desc, defn, [out])
    (run,) = inputdesc.extract(desc, defn, [out], missing="empty")
    assert run.rows == [{"i": 1, "j": 10, "k": 100}, {"i": 2, "j": 20, "k": None}, {"i": 3, "j": 30, "k": 300}]


def test_table_heading_without_rows_is_refused(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "DATA\n\nnothing\n")
    desc = _desc(tmp_path, '<tabular_location><match>DATA</match><column pos="1">i</column></tabular_location>')
    defn = _defn(_var("i", "integer", "multiple"))
    with pytest.raises(UsageError, match="no table rows after 'DATA'"):
        inputdesc.extract(desc, defn, [out])
    assert inputdesc.extract(desc, defn, [out], missing="empty")[0].rows == []


def test_fixed_value_of_a_data_set_variable_needs_rows(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "np 4\n")
    desc = _desc(tmp_path, "<named_location><name>np</name><match>np</match></named_location>")
    defn = _defn(_var("np", "integer"), _var("z", "integer", "multiple"))
    with pytest.raises(UsageError, match="'z' is a data-set variable and this run has no data-set rows"):
        inputdesc.extract(desc, defn, [out], {"z": "5"}, missing="empty")


def test_processing_instructions_in_a_description_are_ignored(tmp_path: Path) -> None:
    out = _file(tmp_path, "out.txt", "np 4\n")
    desc = _desc(tmp_path, '<?app note?><named_location><name>np</name><match>np</match></named_location>')
    assert inputdesc.extract(desc, _defn(_var("np", "integer")), [out])[0].values == {"np": 4}


@pytest.mark.parametrize(
    "datatype, text, message",
    [
        ("integer", "99999999999999999999", "not an integer within 64 bits"),
        ("float", "1e400", "not a finite number"),
        ("float", "inf", "not a finite number"),
        ("string", "x" * 256, "at most 255 characters"),
    ],
)
def test_values_a_database_cannot_store_are_refused_naming_the_line(
    tmp_path: Path, datatype: str, text: str, message: str
) -> None:
    out = _file(tmp_path, "out.txt", f"v= {text}\n")
    desc = _desc(tmp_path, "<named_location><name>v</name><match>v=</match></named_location>")
    with pytest.raises(BadValue, match=rf"out\.txt:1: variable 'v': .*{message}") as err:
        inputdesc.extract(desc, _defn(_var("v", datatype)), [out])
    assert "\n" not in str(err.value)


def test_timestamps_with_a_zone_are_stored_in_utc(tmp_path: Path) -> None:
    from psuite.psbase.model import convert

    v = _var("t", "timestamp")
    assert convert(v, "2024-01-02T03:04:05+02:00") == dt.datetime(2024, 1, 2, 1, 4, 5)
    assert convert(v, "2024-01-02T01:04:05Z") == dt.datetime(2024, 1, 2, 1, 4, 5)
    assert convert(v, "2024-01-02T03:04:05") == dt.datetime(2024, 1, 2, 3, 4, 5)  # no zone: as written
    assert convert(_var("h", "time"), "12:34:56+02:00") == dt.time(10, 34, 56)
