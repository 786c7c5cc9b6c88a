"""perfbase's own test suite, directory by directory: the command sequence each test/<dir>/runtest script of
perfbase performs (facts about the commands, transcribed; the scripts themselves are not in ../shared), for
tests/psbase/test_perfbase_suite.py to run with psbase in place of perfbase.

A step is Step(args, ...): args are perfbase's arguments after `perfbase`, as shell words; a glob in them is
expanded in the test directory (sorted, as ls lists), and with each=True the command runs once per file the
last glob matches (numbering its checks on). Its fields:
  rc     0: the script requires success, 1: failure, None: not looked at
  out    what the script compares: "stdout", "both" (stdout and stderr, 2>&1), or files the command writes
         (names; "stdout" may be one of several, concatenated in order)
  vfy    the number N of verify/test_N.vfy compared with out (N, N+1, ... for each=True)
  check  a numbered test of the script with no .vfy: only its return code is checked
  sort   the script accepts the output if its sorted lines equal the .vfy's sorted lines
  stdin  a file of the test directory given as standard input
  drop   lines holding any of these strings are dropped from the output (the script's grep -v)
  user   the database user it runs as (PB_DBUSER): on PostgreSQL the archive's URL with that user
Special args: "!cp A B" copies a file of the test directory (the script's cp); "!createuser NAME [GROUP]" makes
a login role NAME on a PostgreSQL server (a member of GROUP, made if missing), as the script's createuser."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    args: str | tuple[str, ...]  # several commands: their outputs concatenated, the first one's rc checked
    rc: int | None = 0
    out: tuple[str, ...] = ()
    vfy: int | None = None
    check: bool = False
    sort: bool = False
    each: bool = False
    stdin: str | None = None
    drop: tuple[str, ...] = ()
    user: str | None = None  # the database user the command runs as (PostgreSQL; SQLite has no users)


def S(args, rc: int | None = 0, out: str | tuple[str, ...] = (), **kw) -> Step:  # noqa: N802 (a table's row)
    return Step(args, rc, (out,) if isinstance(out, str) else tuple(out), **kw)


def _base(d: str, inp: str = "input/*.dat", each: bool = False, flags: str = "") -> list[Step]:
    """setup -d D_exp.xml and the import of the data (one command, or one per file with each)."""
    return [S(f"setup -d {d}_exp.xml"), S(f"input {flags}-d {d}_inp.xml {inp}", each=each)]


def _queries(d: str, n: int, out: str = "stdout", rcs: tuple[int, ...] | None = None, first: int = 1,
             **kw) -> list[Step]:
    """query -d D_qry_T.xml for T = 1..n, compared with test_T.vfy; out may hold {t}."""
    return [S(f"query -d {d}_qry_{t}.xml", (rcs or (0,) * n)[t - 1], out.format(t=t), vfy=first + t - 1, **kw)
            for t in range(1, n + 1)]


# `cat NAME.* | grep -v CreationDate | grep -v Creator | grep -v Author > NAME.out`: the data, the gnuplot
# command file and the PostScript gnuplot drew, without the lines that change with the day and the version
_PS_DATES = ("CreationDate", "Creator", "Author")


def _delete(d: str) -> Step:
    return S(f"delete -e {d}_TEST --dontask")


def _inputs(d: str, rows: list[tuple[str, str, str]], rc: tuple[int, ...], out: str = "stdout") -> list[Step]:
    """input FLAGS -d D_inp_DESC.xml FILE, one check each (the test/<dir>s of input -t)."""
    return [S(f"input {flags} -d {d}_inp_{desc}.xml {f}", rc[i], out, vfy=i + 1)
            for i, (f, desc, flags) in enumerate(rows)]


def _default() -> list[Step]:
    steps: list[Step] = []
    t = 0

    def nxt() -> int:
        nonlocal t
        t += 1
        return t

    for exp in ("float", "int"):
        for idx in (1, 2, 3):
            steps += [S(f"setup -d default_exp_{exp}_{idx}.xml"),
                      S("input -d default_inp_1.xml input_1.dat", 0, "both", vfy=nxt())]
            for sw in ("-m", "-u"):  # 1: both fail; 2 and 3: -u succeeds (empty or defined default)
                for inp in (2, 3):
                    ok = idx > 1 and sw == "-u"
                    steps.append(S(f"input {sw} -d default_inp_1.xml input_{inp}.dat", 0 if ok else 1, "both",
                                   vfy=nxt()))
            steps += [S("query -d default_qry_1.xml", 0, "both", vfy=nxt()), _delete("default")]
        for two in (False, True):  # mixed once and multiple values: one description, then two
            steps.append(S(f"setup -d default_exp_{exp}_4.xml"))
            if two:
                steps.append(S("input -d default_inp_3a.xml input_1a.dat -d default_inp_3b.xml input_1b.dat", 0,
                               "both", vfy=nxt()))
            else:
                steps.append(S("input -d default_inp_2.xml input_1.dat", 0, "both", vfy=nxt()))
            for sw in ("-m", "-u"):
                for inp in (2, 3):
                    args = (f"input {sw} -d default_inp_3a.xml input_{inp}a.dat -d default_inp_3b.xml "
                            f"--enforce=input_{inp}b.dat") if two else \
                        f"input {sw} -d default_inp_2.xml input_{inp}.dat"
                    steps.append(S(args, 1 if sw == "-m" else 0, "both", vfy=nxt()))
            steps += [S("query -d default_qry_2.xml", 0, "both", vfy=nxt()), _delete("default")]
    return steps


def _update() -> list[Step]:
    info = ("info -e update_TEST -v -i", "info -e update_TEST -v --val=")
    drop = ("Connecting", "Created", "Modified", "admin_access")
    steps = [S("setup -d update_exp.xml")]
    for t in range(1, 5):
        steps += [S(f"update -d update_upd_{t}.xml"), S(info, 0, "stdout", vfy=t, drop=drop)]
    steps.append(S("input -d update_inp.xml -u input_?.dat"))
    steps.append(S("query -d update_qry.xml", 0, ("setup_MPI_version=1.23_platform=SX-6.gp",), vfy=5))
    steps.append(S("!none", None, ("setup_MPI_version_>_1.23_platform=SX-6.gp",), vfy=6))
    steps.append(S("!none", None, ("setup_MPI_version_>_1.23_platform=SX-8.gp",), vfy=7))
    for t in (8, 9):  # an update given without -d must fail and change nothing
        steps += [S(f"update update_upd_{t - 3}.xml", 1), S(info, 0, "stdout", vfy=t, drop=drop)]
    return [*steps, _delete("update")]


def _pset() -> list[Step]:
    steps = [S("setup -d pset_exp.xml")]
    steps += [S(f"input --pset-store=pset_{p} -d pset_inp.xml params_{p}.dat") for p in (1, 2, 4)]
    steps += [S("input --pset-store=pset_1 -d pset_inp.xml params_3.dat"),
              S("input -d pset_inp.xml input_1.dat", 1)]
    for n, use in enumerate(("--pset-use=pset_1", "--pset-use=pset_1 -f P_2=tiny", "--pset-use=pset_1",
                             "--pset-use=pset_2", "--pset-use=pset_2,pset_4", "--pset-use=pset_1,pset_4",
                             "--pset-use=pset_4 --pset-use=pset_1"), 1):
        steps.append(S(f"input {use} -d pset_inp.xml input_{n}.dat"))
    for t, extra in enumerate(("", " -f f.size=large", " -f f.size=small"), 1):
        steps.append(S(f"query -d pset_qry_1.xml{extra}", 0, "stdout", vfy=t))
    # the script compares each info's status with pb_rc[$i], $i left at 3 by the loop before: 0 for all four
    steps += [S(f"info -e pset_TEST -p pset_{p}", 0, "stdout", vfy=4 + k) for k, p in enumerate((0, 1, 2, 4))]
    return [*steps, _delete("pset")]


def _attach() -> list[Step]:
    rcs = [("attach --put --xml=attach_inp_1.xml", 0), ("attach --put --xml=attach_inp_2.xml", 1),
           ("attach --put -n named --xml=attach_inp_2.xml", 0), ("attach --put -n named --xml=attach_inp_2.xml", 1),
           ("attach --put --xml=attach_inp_3.xml", 0), ("attach --put -n invalid -s invalid --xml=invalid.xml", 1),
           ("attach --put -n binary -s binary --xml=zero.bin", 1), ("attach --put --xml=attach_qry.xml", 0),
           ("attach --get --name=named --xml=test.xml", 0), ("attach --get --name=notfound --xml=test.xml", 1),
           ("input -n full input/data_1.dat", 0), ("input -n named input/data_2.dat -n tabular input/data_3.dat", 0)]
    return [S("setup -d attach_exp.xml"), *(S(a, rc, check=True) for a, rc in rcs),
            S("query -e attach_TEST -n latency", 0, "both", vfy=13), _delete("attach")]


def _access() -> list[Step]:
    # as database users (createuser, PB_DBUSER): steps whose checks are the return codes, 14 numbered tests.
    # The experiment's creator (the suite's user) sets up and updates; pb_input_usr_1_ is given input access,
    # changed to query access, then revoked; the second definition gives admin, input (to a group) and query
    # access, which a member of each uses.
    who = "input -u -d access_inp.xml"
    first, adm, grp, qry = "pb_input_usr_1_", "pb_admin_usr_", "pb_input_usr_2_", "pb_query_usr_"
    return [*(S(f"!createuser {u}") for u in (first, adm, qry)), S(f"!createuser {grp} pb_input_grp_"),
            S("setup -d access_exp_1.xml"),
            *(S(a, rc, check=True, user=u) for a, rc, u in (
                (f"{who} input_1.dat", 1, first), ("update -d access_upd_1.xml", 0, None),
                (f"{who} input_1.dat", 0, first), ("update -d access_upd_2.xml", 0, None),
                (f"{who} input_2.dat", 1, first), ("query -d access_qry_1.xml", 0, first),
                ("update -d access_upd_3.xml", 0, None), ("query -d access_qry_1.xml", 1, first))),
            _delete("access"), S("setup -d access_exp_2.xml"),
            *(S(a, rc, check=True, user=u) for a, rc, u in (
                (f"{who} input_1.dat", 1, qry), (f"{who} input_1.dat", 0, grp), (f"{who} input_2.dat", 0, grp),
                ("query -d access_qry_1.xml", 0, qry), ("update -d access_upd_4.xml", 1, grp),
                ("update -d access_upd_5.xml", 0, adm))),
            _delete("access")]


_SWEEP_2 = ("sweep_2.gp", *(f"sweep_2_MPI_version={v}_{i}.gp" for v in ("1.0", "1.1") for i in ("Myrinet", "SCI")))
_SWEEP_GROUP_4 = tuple(f"sweep_group_4_bench={b}_N_threads={n}.gp" for b in ("crunch", "seek", "swim")
                       for n in (1, 2, 4, 8))


def _run(t: int, refused: int) -> int:
    """psbase's number of perfbase's run t when the import that would have been run `refused` was refused:
    perfbase numbers a run before reading it and keeps the number used (PostgreSQL's sequence), psbase gives a
    refused import none, so later runs are one lower; perfbase's refused run itself is one psbase lacks too."""
    return t if t < refused else 99 if t == refused else t - 1


def _with_out(steps: list[Step], vfy: int, out: tuple[str, ...]) -> list[Step]:
    """steps with check vfy comparing the files out (concatenated) instead."""
    return [dataclasses.replace(s, out=out) if s.vfy == vfy else s for s in steps]


SUITE: dict[str, list[Step]] = {
    "access": _access(),
    "attach": _attach(),
    "boolean": [S("setup -d boolean_exp.xml"),
                *_inputs("boolean", [("input/input_1.dat", "1", "-t"), ("input/input_2.dat", "2", "-t"),
                                     ("input/input_3.dat", "2", "-t")], (0, 0, 0)), _delete("boolean")],
    "combiner": [*_base("combiner"), *_queries("combiner", 4), _delete("combiner")],
    "combiner2": [*_base("combiner2"), *_queries("combiner2", 11, rcs=(0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0)),
                  _delete("combiner2")],
    "combstrip": [*_base("combstrip", each=True), *_queries("combstrip", 1, "combstrip_{t}.*", drop=_PS_DATES),
                  _delete("combstrip")],
    "count": [S("setup -d count_exp.xml"), S("input -t -a ignore -d count_inp.xml input/*.dat", 0, "stdout", vfy=1,
                                            each=True), _delete("count")],
    "default": _default(),
    "derived": [s for t in (1, 2, 3) for s in (
        S(f"setup -d derived_exp_{t}.xml"), S(f"input -d derived_inp_{t}.xml input_{t}.dat"),
        S(f"query -d derived_qry_{t}.xml", 0, "stdout", vfy=t, sort=True), _delete("derived"))],
    "distrib": [*_base("distrib", "input*.dat"),
                S("query -d distrib_qry_*.xml", 0, "qry_result.gp", vfy=1, each=True), _delete("distrib")],
    "errors": [*_base("errors", "input_?.dat"),
               S("query -d errors_qry.xml", 0, "errors_lowhigh_bars.gp", vfy=1),
               *(S("!none", None, f, vfy=t) for t, f in ((2, "errors_lowhigh_graphs.gp"),
                                                         (3, "errors_lowhigh_points.gp"), (4, "errors_lowhigh.dat"))),
               _delete("errors")],
    "eval": [*_base("eval", "*.dat", each=True),
             *(S(f"query -d {q}{a}", 0, "stdout", vfy=t) for t, (q, a) in enumerate(
                 (("eval_qry_1.xml", ""), ("eval_qry_1.xml", " -f Q=0.02"), ("eval_qry_2.xml", ""),
                  ("eval_qry_3.xml", "")), 1)), _delete("eval")],
    "exist": [S("setup -d exist_exp.xml"), S("!cp input_1.dat input_1.tst"), S("input -d exist_inp.xml input_1.tst"),
              S("!cp input_1.tst input_2.tst"),
              S("input -d exist_inp.xml input_1.tst", 1, "both", vfy=1),  # the same file again: refused
              S("input -d exist_inp.xml input_2.tst", 1, "both", vfy=2),  # the same content: refused
              S("!cp input_2.dat input_1.tst"), S("input -d exist_inp.xml input_1.tst", 0, check=True),
              S("query -d exist_qry_1.xml", 0, "qry_result.dat", vfy=4),
              S("!cp input_1.dat input_1.tst"), S("input --force -d exist_inp.xml input_1.tst", 0, check=True),
              S("query -d exist_qry_1.xml", 0, "qry_result.dat", vfy=6), _delete("exist")],
    "filename": [S("setup -d filename_exp.xml"),
                 *_inputs("filename", [(f"input/{f}", d, a) for f, d, a in zip(
                     ("bench_N_proc_1.dat", "data_Nproc1.dat", "bench_nproc1.dat", "bench_nproc1.dat",
                      "bench_nproc1.dat", "bench_nproc1.dat", "bench_UFSN_proc1.dat", "bench_ufs_N_proc1.dat"),
                     "11442233", ("-t -u", "-t -u", "-t", "-u -t", "-t -f fs=UFS", "-t -f fs=ABC", "-t", "-t"),
                     strict=True)], (0, 0, 1, 0, 0, 1, 0, 1)), _delete("filename")],
    "filter": [*_base("filter", each=True), *_queries("filter", 4, "both"), _delete("filter")],
    "fixed": [*_base("fixed", "*.dat", each=True),
              *(S(f"query -d fixed_{q}_qry.xml{a}", 0, "stdout", vfy=t) for t, (q, a) in enumerate(
                  (("plain", ""), ("plain", " -f f.version=1.23"), ("scale", ""), ("scale", " -f f.scale=4"),
                   ("scale", " -f f.scale=4 -f f.version=1.23")), 1)), _delete("fixed")],
    "frequency": [*_base("frequency", each=True), *_queries("frequency", 3, "frequency_{t}.*", drop=_PS_DATES),
                  _delete("frequency")],
    "input": [S("setup -d input_exp.xml"),
              S("input -s standard -d input_inp_1.xml input/data_1.dat"),
              # the script's unquoted $INPUT_ARGS splits the synopsis "data as separator" into three words
              S("input -s '\"data' as 'separator\"' -d input_inp_2.xml input/data_2.dat"),
              S("input -d input_inp_3.xml input/data_3a.dat input/data_3b.dat"),
              S("input -s multiple_descriptions -d input_inp_4a.xml input/data_4a.dat -d input_inp_4b.xml "
                "input/data_4b.dat"),
              S("input -s stdin -d input_inp_1.xml -", stdin="input/data_5.dat"),
              *_queries("input", 6, sort=True), _delete("input")],
    "limit": [*_base("limit", "input_?.dat"), *_queries("limit", 6, rcs=(0, 0, 1, 1, 0, 0)), _delete("limit")],
    "lines": [S("setup -d lines_exp.xml"),
              *(S(f"input -u -d lines_inp_{t}.xml input/input_{t}.dat", rc, "stdout", vfy=t)
                for t, rc in enumerate((0, 0, 0, 0, 1, 0, 1), 1)),
              *(S(f"query -d lines_qry_1.xml -f f.runid={_run(r, 5)}", 0, "stdout", vfy=8 + k)
                for k, r in enumerate((1, 2, 3, 4, 6))), _delete("lines")],
    "map": [S("setup -d map_exp.xml"),
            *_inputs("map", [(f"input/{f}", str(i), "-t") for i, f in enumerate(
                ("input_1.dat", "input_2_networkfs.dat", "input_3_fs-network.dat", "input_4.dat"), 1)], (0, 0, 0, 0)),
            _delete("map")],
    "map2": [S("setup -d map2_exp.xml"),
             *_inputs("map2", [("input/input_1.dat", "1", "-t -u"), ("input/input_2.dat", "1", "-t -u")], (0, 0)),
             _delete("map2")],
    "marker": [S("setup -d marker_exp.xml"),
               *(S(f"input -d marker_inp_{t}.xml {a} input/input_{t}.dat", rc, "stdout", vfy=t)
                 for t, (a, rc) in enumerate(zip(
                     ("-u", "-u", "-u", "-u", "-f int=0 -f 'string=\"text\"'", *("-u",) * 8),
                     (0, 0, 0, 1, *(0,) * 9), strict=True), 1)),
               # the script compares each query's status with the input's expected one (1 for run 4)
               *(S(f"query -d marker_qry_1.xml -f f.runid={_run(t, 4)}", 1 if t == 4 else 0, "stdout", vfy=13 + t)
                 for t in range(1, 14)), _delete("marker")],
    "missing": [S("setup -d missing_exp.xml"),
                *(S(f"input -d missing_inp.xml {a} {f}", rc, "both", vfy=t, stdin=i) for t, (a, i, f, rc) in
                  enumerate((("-t -u", "empty.dat", "input_1.dat", 0),
                             ("-t --missing=abort", "empty.dat", "input_2.dat", 1),
                             ("-t --missing=ignore", "empty.dat", "input_3.dat", 0),
                             ("-t -a ask", "stdin_3.dat", "input_4.dat", 0),
                             ("-t -f MPI_version=1.25", "empty.dat", "input_4.dat", 0)), 1)), _delete("missing")],
    "multi_target": [*_base("multi_target", "input_*.dat"), *_queries("multi_target", 1, "both"),
                     _delete("multi_target")],
    "normalize": [*_base("normalize", each=True), *_queries("normalize", 2, "normalize_{t}.dat"),
                  _delete("normalize")],
    "opendoc": [*_base("opendoc", each=True), *_queries("opendoc", 7, "opendoc_{t}.ods"), _delete("opendoc")],
    "oponesrc": [*_base("oponesrc", "input_?.dat"),
                 S("query -d oponesrc_qry_*.xml", 0, "qry_result.dat", vfy=1, each=True), _delete("oponesrc")],
    "optwosrc": [*_base("optwosrc", "input_?.dat"),
                 S("query -d optwosrc_qry_*.xml", 0, "qry_result.dat", vfy=1, each=True, sort=True),
                 _delete("optwosrc")],
    "order": [S("setup -d order_exp.xml"), S("input -d order_inp.xml input_1.dat"),
              *_queries("order", 4, "both", sort=True), S("input -d order_inp.xml input_2.dat"),
              *_queries("order", 4, "both", first=5, sort=True),
              *(S(f"query -d order_qry_{q}.xml", 0, "both", vfy=q + 4) for q in range(5, 11)), _delete("order")],
    "plain_table": [S("setup -d plain_table_exp.xml"),
                    *(S(f"input -t -d plain_table_inp.xml latency_{t}.dat", 0, "both", vfy=t) for t in (1, 2)),
                    _delete("plain_table")],
    "plot3d": [*_base("plot3d", each=True),
               *(S(f"query -d plot3d_qry_{t}.xml", rc, ("both", f"test_{t}.gp"), vfy=t)
                 for t, rc in enumerate((0, 0, 1), 1)), _delete("plot3d")],
    "plottype": [S("setup -d plottype_exp.xml"), S("input -d plottype_inp.xml data_T1.dat"),
                 S("input -d plottype_inp.xml data_T10.dat"), S("query -d plottype_qry.xml", 0, "plottype.gp", vfy=1),
                 _delete("plottype")],
    "pset": _pset(),
    "quote": [S("setup -d quote_exp.xml"),
              S("input -d quote_inp.xml -s 'low values' input_1.dat", 1, "both", vfy=1),
              S("input -d quote_inp.xml --synopsis=low values input_1.dat", 1, "both", vfy=2),
              S("input -d quote_inp.xml '--synopsis=\"low' values input_1.dat", 1, "both", vfy=3),
              S("input -s 'low values' -d quote_inp.xml input_1.dat", 1, "both", vfy=4),
              S("input -d quote_inp.xml '--synopsis=\"low values\"' input_1.dat"),
              S("input -d quote_inp.xml -s '\"the high values\"' input_2.dat"),
              S("query -d quote_qry_1.xml", 0, "qry_result.dat", vfy=5), _delete("quote")],
    "regexp": [S("setup -d regexp_exp.xml"), *_inputs("regexp", [("input/input_1.dat", "1", "-t")], (0,)),
               _delete("regexp")],
    "regexp2": [*_base("regexp2", flags="-u "), *_queries("regexp2", 3, rcs=(0, 0, 1)), _delete("regexp2")],
    "runindex": [S("setup -d runindex_exp.xml"),
                 *(S(f"input -p {p} -d runindex_inp.xml input_{j}.dat") for j, p in enumerate(
                     ("03-Jan-2006", "01-Jan-2006", "02-Jan-2006", "04-Jan-2006"), 1)),
                 *_queries("runindex", 9, rcs=(0, 0, 1, 0, 0, 1, 1, 0, 0)), _delete("runindex")],
    "runs": [S("setup -d runs_exp_desc.xml"),
             *(S(f"input -d runs_inp_desc.xml -s synopsis_{d} -p {d}-Dec-2004 data_{d}.dat") for d in range(1, 5)),
             *(S(f"query -d runs_query_{t}.xml", None, "stdout", vfy=t) for t in range(1, 12)), _delete("runs")],
    "scope": [*_base("scope", "input_?.dat", each=True), *_queries("scope", 4, "scope_{t}.dat"), _delete("scope")],
    "set_update": [S("setup -d set_update_exp.xml"),
                   *(s for k, desc in enumerate(("yes", "auto")) for i, data in enumerate(("1", "2 3", "4"))
                     for s in (S(f"input -j -d set_update-{desc}_inp.xml "
                                 + " ".join(f"input/*_{x}.dat" for x in data.split())),
                               S("query -d set_update_qry.xml", 0, "set_update.dat", vfy=3 * k + i + 1),
                               S(f"delete -e set_update_TEST -r {3 * k + i + 1} --dontask", None))),
                   _delete("set_update")],
    "slice": [S("setup -d slice_exp.xml"),
              *(S(f"input -p {p} -d slice_inp.xml input_{j}.dat") for j, p in enumerate(
                  ("03-Jan-2006", "01-Jan-2006", "02-Jan-2006"), 1)),
              *_queries("slice", 8, rcs=(0, 0, 0, 0, 0, 0, 1, 1)), _delete("slice")],
    "split": [S("setup -d split_exp.xml"),
              *(S(f"input -t -d split_inp_1.xml input_{t}.dat", rc, "stdout", vfy=t)
                for t, rc in enumerate((0, 1, 1, 0), 1)), _delete("split")],
    # the .vfy of sweep and sweep_group are the gnuplot command files perfbase writes (<filename>.gp); of a
    # <filename unify="filter">, every file of the query (sweep_2*.gp, sweep_group_4*.gp) in the order ls lists
    "sweep": [*_base("sweep", each=True), *_with_out(_queries("sweep", 5, "sweep_{t}.gp"), 2, _SWEEP_2),
              _delete("sweep")],
    "sweep_group": [*_base("sweep_group", each=True),
                    *_with_out(_queries("sweep_group", 9, "sweep_group_{t}.gp"), 4, _SWEEP_GROUP_4),
                    _delete("sweep_group")],
    "update": _update(),
    "version": [*_base("version"), *_queries("version", 2), _delete("version")],
    "xml": [*_base("xml"), *_queries("xml", 3), _delete("xml")],
}
# perfbase's test directories without a runtest script (barchart, multi, multiple, op_cascade) have no checks


# Where psbase deliberately answers otherwise than perfbase (README, "psbase and perfbase"): such a check is
# expected to give the documented answer, and the suite fails if it does not.
#
# perfbase's error messages: perfbase writes several "#* ERROR" lines on stdout and exits 1; psbase writes one line
# on stderr naming the problem and the fix, and exits 2. The string is what that line must name (what perfbase's
# message names), so that psbase is seen to refuse for perfbase's reason.
_NO_V = {("default", t): "'v'" for t in (2, 3, 4, 5, 8, 9, 14, 15, 20, 21, 26, 27, 32, 33, 34, 35, 38, 39, 44, 45,
                                        50, 51, 56, 57)}
ERRORS: dict[tuple[str, int], str] = {
    **_NO_V,
    ("combiner2", 4): "diff takes exactly two <input>",
    ("exist", 1): "input_1.tst is already run 1", ("exist", 2): "input_2.tst is already run 1",
    ("limit", 3): "value= is missing", ("limit", 4): "'r3'",
    ("lines", 7): 'lines="0"',
    # an input -t that perfbase refuses after printing what it read; psbase refuses before printing
    ("filename", 3): "no value for 'N_proc'", ("filename", 6): "'ABC' is not a valid value",
    ("filename", 8): "no value for 'fs'", ("missing", 2): "no value for 'MPI_version'",
    ("split", 2): "no value for 't' on this line", ("split", 3): "the nesting does not match",
    # perfbase's error is PostgreSQL's: a string of over 255 characters for a varchar(256) column
    ("lines", 5): "is not a string of at most 255 characters", ("marker", 4): "is not a string of at most 255",
    ("marker", 17): "none of the experiment's runs",  # perfbase's run 4, whose import was refused
    ("plot3d", 3): "3-dimensional plot of one-dimensional data",
    ("pset", 4): "no parameter set 'pset_0'",
    ("quote", 2): "values: no such file", ("quote", 3): "quote opened in '--synopsis=\"low'",
    ("regexp2", 3): "parameter 'dummy' is of datatype integer",
    ("runindex", 3): "runindex takes exactly one <input>", ("runindex", 6): "run index -1",
    ("runindex", 7): "no parameter 'vprot'",
    ("slice", 7): "slice [3:2]", ("slice", 8): "value='1:2]' is not a slice",
    # perfbase's wrapper script (bin/perfbase.in) passes its arguments on as $*, which splits the quoted synopsis of
    # quote's tests 1 and 4 ('-s "low values"') into the synopsis 'low' and an input file 'values' it cannot open;
    # psbase keeps an argument whole, so test 1 imports input_1.dat and test 4 finds it imported already.
    ("quote", 4): "input_1.dat is already run 1",
}
IMPORTS: set[tuple[str, int]] = {("quote", 1)}  # perfbase fails (its wrapper's word splitting, above); psbase imports
# perfbase's ps/eps outputs hold the PostScript gnuplot drew, whose prolog and body are its version's (gnuplot 4
# for perfbase's recordings, 5 here): what perfbase wrote itself, the data and the command file, must be its bytes,
# and gnuplot must have drawn the PostScript.
POSTSCRIPT: set[tuple[str, int]] = {("frequency", 1), ("frequency", 2), ("frequency", 3), ("combstrip", 1)}
# perfbase's run numbers after a refused import skip one (above, _run): these checks query psbase's run of the same
# file (one lower), and must then give perfbase's output byte for byte.
RENUMBERED: set[tuple[str, int]] = {("lines", 12), *(("marker", 13 + t) for t in range(5, 14))}
