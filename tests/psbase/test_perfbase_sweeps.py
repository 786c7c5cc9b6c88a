"""perfbase's query execution through the real `psbase` command, with perfbase's own test directories
(read from ../shared/perfbase/test at test time): sweeps and combiners, durations, run selections,
ties and binning, each output compared with the directory's verify/test_N.vfy (perfbase's output)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.psbase.test_cli import ok, psbase

PERFBASE = Path(__file__).resolve().parents[3] / "shared" / "perfbase" / "test"


@pytest.fixture
def perfbase(tmp_path):
    """A perfbase test directory copied to tmp_path, and its commands run there as perfbase's (one archive
    of its own): the experiment, input descriptions and queries read as written."""
    import shutil

    def make(name: str, *commands: str) -> tuple[Path, dict]:
        here = tmp_path / name
        shutil.copytree(PERFBASE / name, here)
        env = {"PSBASE_DB": str(tmp_path / f"{name}.db")}
        for c in commands:
            ok(psbase(*c.split(), cwd=here, env=env))
        return here, env

    return make


def query(here: Path, env: dict, qry: str, written: str | None = None) -> str:
    """perfbase's `query -d QUERY`: its standard output, or the file the query writes."""
    out = ok(psbase("query", "-d", qry, cwd=here, env=env))
    return out if written is None else (here / written).read_text()


def vfy(here: Path, n: int) -> str:
    return (here / "verify" / f"test_{n}.vfy").read_text()


def test_a_duration_prints_as_pythons_timedelta(perfbase):
    # derived: T is a duration; perfbase printed its values with str(timedelta): 0:00:10.200000
    here, env = perfbase("derived", "setup -d derived_exp_1.xml", "input -d derived_inp_1.xml input_1.dat")
    got = query(here, env, "derived_qry_1.xml")
    assert "1 \t1 \t1 \t0:00:10.200000 \t\n" in got
    assert sorted(got.splitlines()) == sorted(vfy(here, 1).splitlines())


def test_a_missing_run_index_is_warned_of_on_stdout(perfbase):
    # runs/runs_query_9.xml: <index>1,12</index> of 4 runs; perfbase printed a warning before the table
    here, env = perfbase("runs", "setup -d runs_exp_desc.xml",
                         *(f"input -d runs_inp_desc.xml -s synopsis_{d} -p {d}-Dec-2004 data_{d}.dat"
                           for d in range(1, 5)))
    got = query(here, env, "runs_query_9.xml")
    assert got.startswith("#* WARNING: <run> 'r.idx' lists non-existing run <index> '12' (ignored)\n# S_msg")
    assert got == vfy(here, 9)
    # a run that exists gives no warning
    assert "WARNING" not in query(here, env, "runs_query_1.xml")


def test_xml_output_puts_a_filter_found_in_the_data_last(perfbase):
    # xml/xml_qry_2.xml: IC (show="filter", no <filter>: its one value found in the data) comes after the
    # sweep's bufmode filter in perfbase's xml output, though the source names IC first
    here, env = perfbase("xml", "setup -d xml_exp.xml", "input -d xml_inp.xml " + " ".join(
        sorted(str(p.relative_to(PERFBASE / "xml")) for p in (PERFBASE / "xml" / "input").glob("*.dat"))))
    got = query(here, env, "xml_qry_2.xml")
    assert "    <filter>bufmode = 'full'</filter>\n    <filter>IC = IXS</filter>\n" in got
    assert got == vfy(here, 2)


@pytest.mark.parametrize("n", [4, 6, 7, 11])
def test_sort_gives_ties_in_postgresqls_quicksort_order(perfbase, n):
    # oponesrc: runs 1 (p, p) and 2 (p, 10p), sorted by p; perfbase's ORDER BY on PostgreSQL is an unstable
    # quicksort, whose ties came as 1 1, 1 10, ... 4 40, 4 4, 5 5: no stable sort gives that
    here, env = perfbase("oponesrc", "setup -d oponesrc_exp.xml", "input -d oponesrc_inp.xml input_1.dat input_2.dat")
    got = query(here, env, f"oponesrc_qry_{n:02}.xml", "qry_result.dat")
    assert got == vfy(here, n)
    rows = [line.split()[0] for line in got.splitlines()[1:]]
    assert rows == sorted(rows)


def test_combiner_append_of_two_limits_with_labels_ignored(perfbase):
    # limit/limit_qry_6.xml: two limits (<input label="ignore">: the input's labels r1, r2, not "r1,r1>30 ")
    # appended by a combiner datasets="append": op1's rows, then op2's, under op1's columns
    here, env = perfbase("limit", "setup -d limit_exp.xml", "input -d limit_inp.xml input_1.dat input_2.dat")
    got = query(here, env, "limit_qry_6.xml")
    assert got.splitlines()[0] == "# p[]\tr1[]\tr2[]\t"
    assert got == vfy(here, 6)


def combiner2(perfbase) -> tuple[Path, dict]:
    return perfbase("combiner2", "setup -d combiner2_exp.xml", "input -d combiner2_inp.xml " + " ".join(
        sorted(str(p.relative_to(PERFBASE / "combiner2")) for p in (PERFBASE / "combiner2" / "input").glob("*.dat"))))


@pytest.mark.parametrize("n", [2, 6])
def test_a_swept_parameter_shown_as_data_is_a_column(perfbase, n):
    # combiner2 2 (sweep_resolve="extern") and 6 (datasets="append", sweep_resolve="intern"): V_net is swept
    # and show="data": perfbase shows it as a column of each instance's rows
    here, env = combiner2(perfbase)
    got = query(here, env, f"combiner2_qry_{n}.xml")
    assert got.splitlines()[0] == "# Bytes[byte]\tV_net[Mbit/s]\tmin(Time)[s]\t"
    assert got == vfy(here, n)


def test_combiner_merge_of_inputs_with_different_parameters(perfbase):
    # derived/derived_qry_3.xml: src.t1 (N_procs, N_ppn) and src.t2 (N_nodes, N_cpn, N_cpus) merged: perfbase
    # joins its inputs row by row (their n-th rows), their parameters side by side, then the results
    here, env = perfbase("derived", "setup -d derived_exp_3.xml", "input -d derived_inp_3.xml input_3.dat")
    got = query(here, env, "derived_qry_3.xml")
    assert ("# N_procs|src.t1[process]\tN_ppn|src.t1[process]\tN_nodes|src.t2[]\tN_cpn|src.t2[]\tN_cpus|src.t2[]\t"
            "T|src.t1[s]\t\n2 \t1 \t2 \t2 \t4 \t0:00:06.900000 \t\n") in got
    assert sorted(got.splitlines()) == sorted(vfy(here, 3).splitlines())


def test_combiner_append_of_two_sources_under_the_first_ones_title(perfbase):
    # order/order_qry_6.xml (the suite's test 10): src.r0 (T = 0) and src.r1 (T = 1) appended: one block,
    # the first input's data title and columns, src.r0's rows then src.r1's; order_qry_10.xml (test 14)
    # puts the same sources in one output: two blocks
    here, env = perfbase("order", "setup -d order_exp.xml", "input -d order_inp.xml input_1.dat",
                         "input -d order_inp.xml input_2.dat")
    got = query(here, env, "order_qry_6.xml")
    assert "|src.r" not in got and "T = 1" not in got
    assert got == vfy(here, 10)
    assert query(here, env, "order_qry_10.xml") == vfy(here, 14)


def test_distrib_bins_scaled_values_as_perfbase_stored_them(perfbase):
    # distrib/distrib_qry_6.xml: latencies scaled by Mega, then binned by 0.1: perfbase passed the scaled values
    # on through PostgreSQL and str() (12 digits), so that a product a float error away from a bin's limit
    # was on it, and fell into perfbase's bin (6.0 % and 27.4 %, not 6.2 % and 27.2 %)
    here, env = perfbase("distrib", "setup -d distrib_exp.xml", "input -d distrib_inp.xml input.dat")
    got = query(here, env, "distrib_qry_6.xml", "qry_result.gp")
    assert "4.8 6.0 \n4.9 27.4 \n" in got
    assert got == vfy(here, 6)


def test_sweep_instances_of_two_parameters_in_perfbases_order_and_names(perfbase):
    here, env = combiner2(perfbase)
    # combiner2_qry_9.xml: V_net and API swept, resolved inside the combiner: one input per instance, the first
    # named parameter varying fastest, each named ~p.speed~I~p.api~J by the index of its values
    got = query(here, env, "combiner2_qry_9.xml")
    assert got.splitlines()[0] == ("# V_net = 100.0Mbit/s  API = 'A'  V_net = 1000.0Mbit/s  API = 'A'  "
                                   "V_net = 100.0Mbit/s  API = 'B'  V_net = 1000.0Mbit/s  API = 'B'  ")
    assert "\tmin(Time)|op.sort~p.speed~1~p.api~0[s]\t" in got
    assert got == vfy(here, 9)
    # combiner2_qry_10.xml: resolved outside: a block per instance, in the same order
    got = query(here, env, "combiner2_qry_10.xml")
    titles = [line for line in got.splitlines() if line.startswith("# V_net")]
    assert titles == [f"# V_net = {v}Mbit/s  API = '{a}'  " for a in "AB" for v in ("100.0", "1000.0")]
    assert got == vfy(here, 10)


def test_combiner_puts_a_sweep_resolved_inside_after_its_other_inputs(perfbase):
    # combiner2_qry_11.xml: op.min_speed_sorted (intern: an input per V_net) and op.min_api_sorted (extern: a
    # combiner per API); perfbase's combiner has the extern input first, named by its instance
    here, env = combiner2(perfbase)
    got = query(here, env, "combiner2_qry_11.xml")
    first = "# Bytes|op.min_api_sorted~p.api~0[byte]\tmin(Time)|op.min_api_sorted~p.api~0[s]\t"
    assert got.splitlines()[1].startswith(first)
    assert got == vfy(here, 11)


def sweep_group(perfbase) -> tuple[Path, dict]:
    files = sorted(str(p.relative_to(PERFBASE / "sweep_group")) for p in (PERFBASE / "sweep_group" / "input").glob("*"))
    return perfbase("sweep_group", "setup -d sweep_group_exp.xml",
                    *(f"input -d sweep_group_inp.xml {f}" for f in files))


def test_parameter_style_content_shows_the_value_alone(perfbase):
    # sweep_group/sweep_group_qry_1.xml: p.bench filtered to swim with style="content": the data titles
    # are 'swim', not 'bench = swim'
    here, env = sweep_group(perfbase)
    got = query(here, env, "sweep_group_qry_1.xml", "sweep_group_1.gp")
    assert "title 'swim' axes" in got and "bench = swim" not in got
    assert got == vfy(here, 1)


@pytest.mark.parametrize(("n", "titles"), [(6, ["crunch", "seek", "swim"]),
                                           (7, [f"N_{{threads}} = {t}" for t in (1, 2, 4, 8)]),
                                           (8, ["bench = crunch", "bench = seek", "bench = swim"])])
def test_combiner_sweep_group_combines_the_instances_of_one_value(perfbase, n, titles):
    # sweep_group 6-8: op.min swept over bench and N_threads, resolved outside a combiner with
    # sweep_group=...: one data set per value of the grouped parameter, of all its instances appended
    here, env = sweep_group(perfbase)
    got = query(here, env, f"sweep_group_qry_{n}.xml", f"sweep_group_{n}.gp")
    plot = next(line for line in got.splitlines() if line.startswith("plot "))
    assert [part.split("title '")[1].split("'")[0] for part in plot.split(",'-'")] == titles
    assert got == vfy(here, n)


def test_eval_match_index_pairs_rows_by_position(perfbase):
    # sweep_group_qry_9.xml: speedup = T(N_threads=1) / T(N_threads=k), match="index": the k-th rows paired,
    # the parameters of the last input; the column's synopsis is the term's id, its filters both inputs'
    here, env = sweep_group(perfbase)
    got = query(here, env, "sweep_group_qry_9.xml", "sweep_group_9.gp")
    assert 'set title "swim"\n' in got and 'set ylabel "speedup"\n' in got
    assert "3.000000 2.93548387097 \n" in got
    assert got == vfy(here, 9)


def test_style_content_names_the_files_of_a_unified_sweep(perfbase):
    # sweep/sweep_qry_2.xml: an output per instance (sweep_resolve="extern", <filename unify="filter">);
    # I has style="content": perfbase's files are sweep_2_MPI_version=1.0_Myrinet.gp, ..., not ..._I=Myrinet
    files = sorted(str(p.relative_to(PERFBASE / "sweep")) for p in (PERFBASE / "sweep" / "input").glob("*.dat"))
    here, env = perfbase("sweep", "setup -d sweep_exp.xml", *(f"input -d sweep_inp.xml {f}" for f in files))
    query(here, env, "sweep_qry_2.xml")
    names = ("sweep_2.gp", *(f"sweep_2_MPI_version={v}_{i}.gp" for v in ("1.0", "1.1") for i in ("Myrinet", "SCI")))
    assert sorted(p.name for p in here.glob("sweep_2*.gp")) == sorted(names)
    assert "".join((here / n).read_text() for n in names) == vfy(here, 2)


@pytest.mark.parametrize(("change", "message"), [
    ('sweep_group="p.bench"', 'sweep_group=\'p.nothing\' names no swept <parameter>; give the id of one: '),
    ('datasets="append"', "datasets='stack' is not one of merge, append"),
])
def test_a_bad_combiner_is_one_line(perfbase, change, message):
    # sweep_group_qry_6.xml with its combiner's sweep_group= or datasets= spoilt: one line, exit 2, no output
    here, env = sweep_group(perfbase)
    spoilt = change.replace("p.bench", "p.nothing").replace("append", "stack")
    text = (here / "sweep_group_qry_6.xml").read_text()
    assert change in text
    (here / "bad.xml").write_text(text.replace(change, spoilt))
    p = psbase("query", "-d", "bad.xml", cwd=here, env=env)
    assert p.returncode == 2 and message in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert "Traceback" not in p.stderr and not (here / "sweep_group_6.gp").exists() and p.stdout == ""


def test_eval_match_modulo_pairs_rows_round_robin(perfbase):
    # sweep_group_qry_10.xml: speedup = T(N_threads=1) / T(N_threads=k), match="modulo": the one sequential
    # row paired with each parallel row (perfbase's SQL: long.idx % len(short) = short.idx); its parameters
    # are the first input's (N_threads = 1), as perfbase's SQL selects them
    here, env = sweep_group(perfbase)
    got = query(here, env, "sweep_group_qry_10.xml").split("# 'crunch'  \n")[1]
    # comb.par absorbs all 12 instances of op.min_par (3 benchmarks, 4 thread counts): 12 rows per benchmark
    rows = [line.split() for line in got.splitlines() if not line.startswith("#")][:36]
    assert [r[0] for r in rows] == ["1"] * 36
    assert rows[0][1] == "1.0" and rows[1][1] == "0.491803278689"  # crunch: 6.0 / 6.0, 6.0 / 12.2 (seek, 1)


def test_eval_match_modulo_of_three_inputs_is_one_line(perfbase):
    here, env = sweep_group(perfbase)
    text = (here / "sweep_group_qry_10.xml").read_text()
    third = "<input>comb.par</input><input>op.min_seq</input>"
    (here / "bad.xml").write_text(text.replace("<input>comb.par</input>", third, 1))
    p = psbase("query", "-d", "bad.xml", cwd=here, env=env)
    assert p.returncode == 2 and 'match="modulo" pairs exactly two <input>s (it has 3)' in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and p.stdout == ""


def test_a_parameter_is_named_by_its_alias_in_filter_texts(perfbase):
    # opendoc/opendoc_qry_3.xml: <value alias="library version">MPI_version</value>, style="plain": perfbase's
    # sheet names the sweep instances "library version 1.0", not by the parameter's name
    here, env = perfbase("opendoc", "setup -d opendoc_exp.xml",
                         *(f"input -d opendoc_inp.xml {f.relative_to(PERFBASE / 'opendoc')}"
                           for f in sorted((PERFBASE / "opendoc").glob("input/*.dat"))))
    ok(psbase("query", "-d", "opendoc_qry_3.xml", cwd=here, env=env))
    import zipfile

    content = zipfile.ZipFile(here / "opendoc_3.ods").read("content.xml").decode()
    assert "library version 1.0" in content and "MPI_version 1.0" not in content


def test_a_row_with_an_undefined_result_is_dropped(perfbase):
    # set_update: after `input -j` of files that give T_gap but no T_pp, perfbase's query shows none of those
    # rows ("we surely don't want an undefined result value"); psbase printed them with None
    here, env = perfbase("set_update", "setup -d set_update_exp.xml",
                         "input -j -d set_update-yes_inp.xml input/data_1.dat")
    first = query(here, env, "set_update_qry.xml", "set_update.dat")
    assert first == vfy(here, 1)
    ok(psbase("delete", "-e", "set_update_TEST", "-r", "1", "--dontask", cwd=here, env=env))  # as the runtest
    ok(psbase("input", "-j", "-d", "set_update-yes_inp.xml", "input/data_2.dat", "input/data_3.dat", cwd=here,
              env=env))
    got = query(here, env, "set_update_qry.xml", "set_update.dat")
    assert "None" not in got and got == vfy(here, 2)


def test_frequency_keeps_its_inputs_filter_title(perfbase):
    # frequency_qry_1.xml: a sort, then frequency, of a source filtered on r = 1: perfbase's data title and
    # plot title name the filter
    here, env = perfbase("frequency", "setup -d frequency_exp.xml",
                         *(f"input -d frequency_inp.xml {f.relative_to(PERFBASE / 'frequency')}"
                           for f in sorted((PERFBASE / "frequency").glob("input/*.dat"))))
    ok(psbase("query", "-d", "frequency_qry_1.xml", cwd=here, env=env))
    data = (here / "frequency_1.dat").read_text()
    assert data.startswith("# r = 1  \n# t[s]\tfreq(v)[Hz]\t\n")
    assert 'set title "frequency test 1 (r = 1)"' in (here / "frequency_1.gp").read_text()


def test_combiner_without_parameters_makes_its_first_result_the_parameter(perfbase):
    # combstrip_qry_1.xml: <combiner parameters="none" mkparam="yes"> of t_A and t_B - t_A over seq: perfbase
    # plots the difference over t_A, seq dropped
    here, env = perfbase("combstrip", "setup -d combstrip_exp.xml",
                         *(f"input -d combstrip_inp.xml {f.relative_to(PERFBASE / 'combstrip')}"
                           for f in sorted((PERFBASE / "combstrip").glob("input/*.dat"))))
    ok(psbase("query", "-d", "combstrip_qry_1.xml", cwd=here, env=env))
    want = vfy(here, 1)
    data = (here / "combstrip_1.dat").read_text()
    assert data.startswith("# t_A|src:t_A[us]\tt_B-t_A|op:diff[us]\t\n1.0 \t0.0 \t\n")
    assert want.startswith(data)


def test_a_run_selection_of_no_run_is_refused(perfbase):
    # marker: perfbase refuses a query whose <run>s select no run ("none of the specified runs does exist")
    here, env = perfbase("runs", "setup -d runs_exp_desc.xml",
                         "input -d runs_inp_desc.xml -s synopsis_1 -p 1-Dec-2004 data_1.dat")
    text = (here / "runs_query_9.xml").read_text().replace("1,12", "12")
    (here / "none.xml").write_text(text)
    p = psbase("query", "-d", "none.xml", cwd=here, env=env)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1
    assert "select none of the experiment's runs" in p.stderr and "Traceback" not in p.stderr
