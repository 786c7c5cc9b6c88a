"""Derived metrics: alternative definitions (psuite's extension of
psmetrics), the standard set's choices among PAPI presets, and evaluation
that never raises (huge, non-finite and zero inputs).  Expected values are
computed here from the counts, independently of psuite's evaluator."""

from __future__ import annotations

import io
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import pytest
from lxml import etree

import psuite
from psuite.analysis import metrics
from tests.conftest import ROOT, _dtd_copy, one_line_error, run_tool, validate
from tests.psprocess.test_counting_reports import MHZ, SYS, USER, WALL, report_xml

BR = "Mispredicted branches per correctly predicted branch"
STANDARD = ROOT / "configs" / "metrics.xml"


def doc(tmp_path: Path, counts: dict, name: str = "run.xml", **kw) -> Path:
    path = tmp_path / name
    path.write_text(report_xml(counts, **kw))
    return path


def psprocess_metrics(*args: str) -> dict[str, dict]:
    """name -> {"value", "description", ...} from psprocess -f json."""
    p = run_tool("psprocess", "-f", "json", *args)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    [report] = json.loads(p.stdout)["reports"]
    return {m["name"]: m for m in report["metrics"]}


def metric_file(tmp_path: Path, body: str, name: str = "m.xml") -> Path:
    path = tmp_path / name
    path.write_text(f'<?xml version="1.0"?>\n<psmetrics class="PAPI">{body}</psmetrics>')
    return path


def one_metric(name: str, *definitions: str, description: str = "d") -> str:
    defs = "".join(f"<definition><apply>{d}</apply></definition>" for d in definitions)
    return (f'<metric namespace="t" type="ratio"><name>{name}</name>'
            f"<description>{description}</description>{defs}</metric>")


def div(a: str, b: str) -> str:
    return f"<divide><ci>{a}</ci><ci>{b}</ci></divide>"


# -- the branch metric: PerfSuite's BR_MSP / BR_PRC first ---------------------------------------

BRANCHES = {"PAPI_BR_INS": 1_000_000, "PAPI_BR_CN": 600_000, "PAPI_BR_MSP": 30_000, "PAPI_BR_PRC": 570_000}


def test_br_prc_is_used_when_it_was_measured(tmp_path):
    got = psprocess_metrics(str(doc(tmp_path, BRANCHES)))[BR]
    assert got["value"] == pytest.approx(30_000 / 570_000)
    assert got["description"].endswith("[definition 1 of 3: PAPI_BR_MSP / PAPI_BR_PRC]")


@pytest.mark.parametrize("drop,value,used", [
    (("PAPI_BR_PRC",), 30_000 / (600_000 - 30_000), "definition 2 of 3: PAPI_BR_MSP / (PAPI_BR_CN - PAPI_BR_MSP)"),
    (("PAPI_BR_PRC", "PAPI_BR_CN"), 30_000 / (1_000_000 - 30_000),
     "definition 3 of 3: PAPI_BR_MSP / (PAPI_BR_INS - PAPI_BR_MSP)"),
])
def test_branch_metric_falls_back_in_order(tmp_path, drop, value, used):
    counts = {k: v for k, v in BRANCHES.items() if k not in drop}
    got = psprocess_metrics(str(doc(tmp_path, counts)))[BR]
    assert got["value"] == pytest.approx(value)
    assert got["description"].endswith(f"[{used}]")


def test_branch_metric_from_perf_event_names(tmp_path):
    """perf's branches / branch-misses are PAPI_BR_INS / PAPI_BR_MSP."""
    got = psprocess_metrics(str(doc(tmp_path, {"branches": 800, "perf::BRANCH-MISSES": 40})))[BR]
    assert got["value"] == pytest.approx(40 / 760)
    assert "definition 3 of 3" in got["description"]


def test_branch_metric_not_shown_without_its_events(tmp_path):
    got = psprocess_metrics(str(doc(tmp_path, {"PAPI_BR_PRC": 5, "PAPI_BR_INS": 9})))
    assert BR not in got


# -- alternatives in user files (-m) ------------------------------------------------------------

def test_user_file_alternatives_first_measured_wins(tmp_path):
    counts = {"PAPI_TOT_CYC": 400, "PAPI_TOT_INS": 600, "PAPI_LD_INS": 150}
    report = str(doc(tmp_path, counts))
    both = metric_file(tmp_path, one_metric("X", div("PAPI_TOT_INS", "PAPI_TOT_CYC"),
                                            div("PAPI_LD_INS", "PAPI_TOT_CYC")), "both.xml")
    swapped = metric_file(tmp_path, one_metric("X", div("PAPI_LD_INS", "PAPI_TOT_CYC"),
                                               div("PAPI_TOT_INS", "PAPI_TOT_CYC")), "swapped.xml")
    first_missing = metric_file(tmp_path, one_metric("X", div("PAPI_FP_OPS", "PAPI_TOT_CYC"),
                                                     div("PAPI_BR_INS", "PAPI_TOT_CYC"),
                                                     div("PAPI_LD_INS", "PAPI_TOT_INS")), "missing.xml")
    args = ("--no-standard-metrics",)
    got = psprocess_metrics(*args, "-m", str(both), report)["X"]
    assert got["value"] == pytest.approx(600 / 400)
    assert got["description"] == "d [definition 1 of 2: PAPI_TOT_INS / PAPI_TOT_CYC]"
    got = psprocess_metrics(*args, "-m", str(swapped), report)["X"]
    assert got["value"] == pytest.approx(150 / 400)
    assert got["description"] == "d [definition 1 of 2: PAPI_LD_INS / PAPI_TOT_CYC]"
    got = psprocess_metrics(*args, "-m", str(first_missing), report)["X"]
    assert got["value"] == pytest.approx(150 / 600)
    assert got["description"] == "d [definition 3 of 3: PAPI_LD_INS / PAPI_TOT_INS]"


def test_chosen_definition_is_final(tmp_path):
    """A measured definition whose value is not finite hides the metric:
    the next definition is not tried (one metric, one meaning)."""
    report = str(doc(tmp_path, {"PAPI_TOT_CYC": 0, "PAPI_TOT_INS": 600, "PAPI_REF_CYC": 300}))
    m = metric_file(tmp_path, one_metric("X", div("PAPI_TOT_INS", "PAPI_TOT_CYC"),
                                         div("PAPI_TOT_INS", "PAPI_REF_CYC")))
    got = psprocess_metrics("-m", str(m), report)
    assert "X" not in got and "Instructions per cycle" not in got


def test_keywords_count_as_inputs_of_an_alternative(tmp_path):
    """A definition needing the clock is passed over when the report has
    no machine information."""
    path = tmp_path / "nomachine.xml"
    path.write_text(re.sub(r"<machineinfo>.*</machineinfo>", "",
                           report_xml({"PAPI_TOT_INS": 500, "PAPI_TOT_CYC": 250}), flags=re.S))
    m = metric_file(tmp_path, one_metric("Y", "<times><ci>PAPI_TOT_INS</ci><ci>cpumhz</ci></times>",
                                         "<times><ci>PAPI_TOT_INS</ci><cn>3</cn></times>"))
    got = psprocess_metrics("-m", str(m), str(path))["Y"]
    assert got["value"] == 1500 and "definition 2 of 2" in got["description"]


def test_single_definition_file_is_valid_psmetrics_and_unchanged(tmp_path):
    m = metric_file(tmp_path, one_metric("Cycles per instruction", div("PAPI_TOT_CYC", "PAPI_TOT_INS"),
                                         description="CPI"))
    validate(m, "psmetrics.dtd")
    got = psprocess_metrics("-m", str(m), str(doc(tmp_path, {"PAPI_TOT_CYC": 700, "PAPI_TOT_INS": 200})))
    assert got["Cycles per instruction"]["value"] == pytest.approx(3.5)
    assert got["Cycles per instruction"]["description"] == "CPI"  # no "[definition ...]" for one definition


def test_original_perfsuite_style_file_loads(tmp_path):
    """DOCTYPE to PerfSuite's installed DTD, several <description lang>,
    lNcacheline and cpusecs: valid, and loads as before."""
    m = tmp_path / "ps.xml"
    m.write_text('<?xml version="1.0" encoding="UTF-8"?>\n'
                 '<!DOCTYPE psmetrics SYSTEM "/usr/share/perfsuite/dtds/pshwpc/psmetrics.dtd">\n'
                 '<psmetrics class="PAPI"><metric namespace="perfsuite" type="rate">'
                 "<name>L1 misses per CPU second (KB)</name><description>en</description>"
                 '<description lang="fr_FR">fr</description><definition><apply><divide><times>'
                 "<ci>PAPI_L1_DCM</ci><ci>l1cacheline</ci></times><times><ci>cpusecs</ci><cn>1024</cn>"
                 "</times></divide></apply></definition></metric></psmetrics>")
    validate(m, "psmetrics.dtd")
    got = psprocess_metrics("-m", str(m), str(doc(tmp_path, {"PAPI_L1_DCM": 9000})))
    assert got["L1 misses per CPU second (KB)"]["value"] == pytest.approx(9000 * 64 / ((USER + SYS) * 1024))


def _dtd_with_alternatives() -> etree.DTD:
    text = (_dtd_copy() / "psmetrics.dtd").read_text()
    rule = "<!ELEMENT metric (name, description+, definition)>"
    assert rule in text
    return etree.DTD(io.StringIO(text.replace(rule, rule.replace("definition)", "definition+)"))))


def test_standard_file_is_psmetrics_plus_repeated_definitions_only():
    """The extension is exactly definition -> definition+: the standard set
    is valid against the DTD so changed, and keeping each metric's first
    definition gives a file valid against the original DTD."""
    root = etree.parse(str(STANDARD)).getroot()
    d = _dtd_with_alternatives()
    assert d.validate(root), d.error_log.filter_from_errors()
    assert any(len(m.findall("definition")) > 1 for m in root.iter("metric"))
    for m in root.iter("metric"):
        for extra in m.findall("definition")[1:]:
            m.remove(extra)
    validate(root, "psmetrics.dtd")


def test_installed_standard_file_is_the_checkout_one():
    assert Path(metrics.standard_metrics_path()).read_bytes() == STANDARD.read_bytes(), \
        "configs/ is copied beside the library when it is built: pip install -e . again"



@pytest.mark.parametrize("body,needle", [
    (one_metric("x", div("PAPI_TOT_INS", "PAPI_TOT_CYC"), div("PAPI_NOPE", "PAPI_TOT_CYC")),
     "definition 2: unknown event 'PAPI_NOPE'"),
    (one_metric("x", div("PAPI_TOT_INS", "PAPI_TOT_CYC")).replace("</metric>", "<definition/></metric>"),
     "definition 2: no <definition><apply>"),
    ('<metric namespace="t"><name>x</name><description>d</description></metric>', "no <definition>"),
    (one_metric("x", "<cn>inf</cn>"), "finite number"),
])
def test_bad_alternatives_are_clear_errors(tmp_path, body, needle):
    m = metric_file(tmp_path, body)
    report = doc(tmp_path, {"PAPI_TOT_CYC": 1})
    assert needle in one_line_error(run_tool("psprocess", "-m", str(m), str(report)), "psprocess")


# -- the standard set's alternatives ------------------------------------------------------------

L2LINE, NS = 128, 1e9


@pytest.mark.parametrize("counts,name,want,which", [
    ({"PAPI_SP_OPS": 3_000, "PAPI_DP_OPS": 5_000, "PAPI_TOT_CYC": 4_000},
     "Floating point operations per cycle", 8_000 / 4_000, 2),
    ({"PAPI_FP_OPS": 7_000, "PAPI_SP_OPS": 3_000, "PAPI_DP_OPS": 5_000, "PAPI_TOT_CYC": 4_000},
     "Floating point operations per cycle", 7_000 / 4_000, 1),
    ({"PAPI_SP_OPS": 3e6, "PAPI_DP_OPS": 5e6}, "MFLOPS (wall clock)", 8e6 / WALL / 1e6, 2),
    ({"PAPI_SP_OPS": 3_000, "PAPI_DP_OPS": 5_000, "PAPI_REF_CYC": 4_000}, "MFLOPS (cycles)",
     8_000 * MHZ / 4_000, 4),
    ({"PAPI_TOT_INS": 9_000, "PAPI_REF_CYC": 3_000}, "MIPS (cycles)", 9_000 * MHZ / 3_000, 2),
    ({"PAPI_L1_DCA": 1_000, "PAPI_L1_DCM": 50, "PAPI_LD_INS": 700, "PAPI_SR_INS": 200},
     "Level 1 data cache line reuse", (1_000 - 50) / 50, 1),
    ({"PAPI_LST_INS": 900, "PAPI_LD_INS": 700, "PAPI_SR_INS": 300, "PAPI_L1_DCM": 50},
     "Level 1 data cache line reuse", (900 - 50) / 50, 2),
    ({"PAPI_LD_INS": 700, "PAPI_SR_INS": 300, "PAPI_L1_LDM": 40, "PAPI_L1_STM": 10},
     "Level 1 data cache line reuse", (1_000 - 50) / 50, 6),
    ({"PAPI_L2_DCA": 80, "PAPI_L1_DCM": 50, "PAPI_L2_DCM": 5},
     "Level 2 data cache line reuse", (80 - 5) / 5, 1),
    ({"PAPI_L1_LDM": 40, "PAPI_L1_STM": 10, "PAPI_L2_LDM": 4, "PAPI_L2_STM": 1},
     "Level 2 data cache line reuse", (50 - 5) / 5, 6),
    ({"PAPI_L1_LDM": 4e6, "PAPI_L1_STM": 1e6}, "Bandwidth used to level 2 cache (MB/s)",
     5e6 * L2LINE / WALL / 1e6, 3),
    ({"PAPI_L3_DCA": 2e6}, "Bandwidth used beyond level 2 cache (MB/s)", 2e6 * L2LINE / WALL / 1e6, 3),
    ({"cpu-clock": 3e9}, "CPUs utilized", 3e9 / (WALL * NS), 2),
    ({"perf::MINOR-FAULTS": 900, "perf::MAJOR-FAULTS": 100}, "Page faults per second", 1_000 / WALL, 2),
])
def test_standard_alternatives(tmp_path, counts, name, want, which):
    got = psprocess_metrics(str(doc(tmp_path, counts)))[name]
    assert got["value"] == pytest.approx(want)
    assert re.search(rf"\[definition {which} of \d+: ", got["description"]), got["description"]


def test_perf_event_names_still_give_the_standard_metrics(tmp_path):
    counts = {"cycles": 4_000, "instructions": 6_000, "L1-dcache-loads": 2_000, "L1-dcache-load-misses": 100,
              "stalled-cycles-frontend": 1_000, "task-clock": 2e9}
    got = psprocess_metrics(str(doc(tmp_path, counts)))
    assert got["Instructions per cycle"]["value"] == pytest.approx(1.5)
    assert got["Level 1 data cache line reuse"]["value"] == pytest.approx((2_000 - 100) / 100)
    assert got["Cycles with no instruction issue (%)"]["value"] == pytest.approx(25)
    assert got["CPUs utilized"]["value"] == pytest.approx(2e9 / (WALL * NS))


# -- numeric robustness -------------------------------------------------------------------------

BIG = 10 ** 400


def huge_counts() -> dict:
    return {"PAPI_TOT_INS": BIG, "PAPI_TOT_CYC": 2 * BIG, "PAPI_FP_OPS": BIG, "PAPI_BR_INS": 3 * BIG,
            # BR_CN - BR_MSP is 0 in floating point, 2 exactly
            "PAPI_BR_CN": 10 ** 20 + 2, "PAPI_BR_MSP": 10 ** 20}


def huge_expected() -> dict:
    f = {k: Fraction(v) for k, v in huge_counts().items()}
    return {
        "Instructions per cycle": f["PAPI_TOT_INS"] / f["PAPI_TOT_CYC"],
        "Floating point operations per cycle": f["PAPI_FP_OPS"] / f["PAPI_TOT_CYC"],
        BR: f["PAPI_BR_MSP"] / (f["PAPI_BR_CN"] - f["PAPI_BR_MSP"]),
        "MIPS (cycles)": f["PAPI_TOT_INS"] * Fraction(MHZ) / f["PAPI_TOT_CYC"],
        "MFLOPS (cycles)": f["PAPI_FP_OPS"] * Fraction(MHZ) / f["PAPI_TOT_CYC"],
    }


HUGE_ABSENT = ("MFLOPS (wall clock)", "MIPS (wall clock)")  # 1e400 / 2.5e6 does not fit in a float


def check_huge(got: dict[str, float]) -> None:
    for name, want in huge_expected().items():
        assert got[name] == pytest.approx(float(want), rel=1e-12), name
    for name in HUGE_ABSENT:
        assert name not in got
    assert all(math.isfinite(v) for v in got.values())


def test_huge_counts_in_the_evaluator(tmp_path):
    report = psuite.read_document(str(doc(tmp_path, {"PAPI_TOT_CYC": 1})))
    report.events = [type(report.events[0])(name=k, count=v, type="preset") for k, v in huge_counts().items()]
    definitions = metrics.load(metrics.standard_metrics_path())
    got = {m.name: m.value for m in metrics.derive(report, definitions)}
    check_huge(got)
    [branch] = [d for d in definitions if d.name == BR]
    assert metrics.choice(branch, report) == 1  # BR_MSP / (BR_CN - BR_MSP), counted from 0
    assert branch.formula(1) == "PAPI_BR_MSP / (PAPI_BR_CN - PAPI_BR_MSP)"


@pytest.mark.parametrize("fmt", ["text", "json", "csv", "xml"])
def test_huge_counts_through_psprocess_are_refused(tmp_path, fmt):
    """Counts beyond any 64-bit counter never reach the evaluator from a
    document: the reader refuses them, naming the event (the evaluator's
    own robustness is tested above, through the Python API)."""
    line = one_line_error(run_tool("psprocess", "-f", fmt, str(doc(tmp_path, huge_counts()))), "psprocess")
    assert "larger than any 64-bit counter" in line or "too many digits" in line, line


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, "12", None, object()])
def test_non_finite_and_odd_counts_hide_only_their_metrics(tmp_path, bad):
    counts = {"PAPI_TOT_CYC": 4_000, "PAPI_TOT_INS": 6_000, "PAPI_FP_OPS": 1_000}
    report = psuite.read_document(str(doc(tmp_path, counts)))
    for e in report.events:
        if e.name == "PAPI_FP_OPS":
            e.count = bad
    got = {m.name: m.value for m in metrics.derive(report, metrics.load(metrics.standard_metrics_path()))}
    assert got["Instructions per cycle"] == pytest.approx(1.5)
    if bad == "12":  # a numeric string is a number
        assert got["Floating point operations per cycle"] == pytest.approx(12 / 4_000)
    else:
        assert not any("FLOP" in n or "Floating point operations" in n for n in got)
    assert all(math.isfinite(v) for v in got.values())


@pytest.mark.parametrize("field,value", [("wallclock", math.nan), ("wallclock", math.inf), ("wallclock", 0.0),
                                         ("usertime", math.inf)])
def test_non_finite_and_zero_times(tmp_path, field, value):
    report = psuite.read_document(str(doc(tmp_path, {"PAPI_TOT_CYC": 4_000, "PAPI_TOT_INS": 6_000})))
    setattr(report, field, value)
    report.machine.mhz = math.inf if field == "usertime" else report.machine.mhz
    got = {m.name: m.value for m in metrics.derive(report, metrics.load(metrics.standard_metrics_path()))}
    assert got["Instructions per cycle"] == pytest.approx(1.5)
    assert all(math.isfinite(v) for v in got.values())
    if field == "wallclock":
        per_wall_second = [n for n in got if "wall" in n.lower() or "per second" in n or "utiliz" in n]
        assert per_wall_second == (["Wall clock time (seconds)"] if value == 0 else [])
    else:
        assert "CPU time (seconds)" not in got and "MIPS (cycles)" not in got


def test_non_finite_inputs_through_psprocess(tmp_path):
    """1e400 written as a float is inf to Python; a NaN wall clock.  Either
    the reader refuses them in one line, or the metrics they feed are left
    out: never a traceback, never nan/inf in the output."""
    path = doc(tmp_path, {"PAPI_TOT_CYC": "1e400", "PAPI_TOT_INS": 6_000},
               wall='<wallclock units="seconds">nan</wallclock>')
    for fmt in ("json", "text", "csv"):
        p = run_tool("psprocess", "-f", fmt, str(path))
        assert "Traceback" not in p.stderr, p.stderr
        if p.returncode != 0:
            one_line_error(p, "psprocess")
            continue
        if fmt == "json":
            names = {m["name"] for m in json.loads(p.stdout)["reports"][0]["metrics"]}
            assert "Instructions per cycle" not in names and "Wall clock time (seconds)" not in names
        statistics = p.stdout.split("Statistics")[-1] if fmt == "text" else \
            "\n".join(ln for ln in p.stdout.splitlines() if ",metric," in ln)
        assert not re.search(r"\b(nan|inf|infinity)\b", statistics, re.I), statistics


def test_zero_divisors_hide_the_metric(tmp_path):
    path = doc(tmp_path, {"PAPI_TOT_CYC": 0, "PAPI_TOT_INS": 6_000, "PAPI_BR_INS": 50, "PAPI_BR_MSP": 50})
    got = psprocess_metrics(str(path))
    assert "Instructions per cycle" not in got and BR not in got and "MIPS (cycles)" not in got
    assert got["MIPS (wall clock)"]["value"] == pytest.approx(6_000 / WALL / 1e6)
    text = run_tool("psprocess", str(path)).stdout.split("Statistics")[-1]
    assert not re.search(r"\b(nan|inf)\b", text, re.I) and "Instructions per cycle" not in text


def test_compute_never_raises():
    e = ("divide", ("times", ("ci", "a"), ("cn", 1e300)), ("ci", "b"))
    assert metrics.compute(e, {"a": 10 ** 300, "b": 10 ** 300}) == pytest.approx(1e300)
    assert metrics.compute(e, {"a": 10 ** 300, "b": 1}) is None  # 1e600 does not fit
    assert metrics.compute(e, {"a": 1, "b": 0}) is None
    assert metrics.compute(("abs", ("ci", "a")), {"a": -(10 ** 5000)}) is None
    assert metrics.compute(("minus", ("ci", "a"), ("ci", "b")), {"a": 10 ** 5000 + 7, "b": 10 ** 5000}) == 7.0
