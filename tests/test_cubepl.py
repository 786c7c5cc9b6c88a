"""psuite.model.cubepl: CubePL's grammar as CubeLib's scanner and parser define
it, evaluation under masks, and hostile expressions (deep nesting, long
padding, endless loops) refused in one line without RecursionError."""

from __future__ import annotations

import time

import numpy as np
import pytest

from psuite.errors import InputError
from psuite.model import cubepl
from psuite.model.cubepl import ExpressionError, evaluate, parse


def ev(text: str, **metrics) -> np.ndarray:
    return evaluate(text, lambda n: metrics[n], lambda n, v: metrics[f"{n}_{v}"])


@pytest.mark.parametrize("text,want", [
    ("1+2*3", 7), ("-2^2", -4), ("2*-3^2", -18), ("- -2^2", 4), ("2^3^2", 64), ("10/4/5", 0.5),
    ("7-3-2", 2), ("-3-2", -5), ("|1-3|", 2), ("sqrt(16)", 4), ("abs(-2)", 2), ("sgn(-3)", -1),
    ("pos(-3)+pos(2)", 2), ("neg(-3)+neg(2)", -3), ("floor(2.5)+ceil(2.5)", 5), ("min(2,3)+max(2,3)", 5),
    ("exp(0)+log(1)", 1), ("1.5e2", 150), ("0/0", 0), ("{ return 3; }", 3), ("1 + { ${a} = 2; return ${a}; } * 3", 7),
    ("{ ${a}[2] = 5; return ${a}[2] + sizeof(a) + defined(a) + defined(b); }", 9),
    ("{ ${s} = \"Ab\"; ${x} = 0; if (${s} seq \"ab\" and ${s} =~ /^A/ and not (${s} eq \"ab\")) { ${x} = 1; }; "
     "return ${x}; }", 1),
    ("{ ${i} = 0; while (${i} < 10) { ${i} = ${i} + 1; }; return ${i}; }", 10),
    ("{ if (false or 1 > 2) { ${a} = 1; } elseif (true) { ${a} = 2; } else { ${a} = 3; }; return ${a}; }", 2),
    ("<cubepl>1+1</cubepl>", 2), ("1 // a comment\n + 1", 2),
])
def test_grammar(text, want):
    assert float(ev(text)) == want


def test_division_as_cubelib():
    assert np.isnan(ev("1/0"))
    got = ev("metric::a()/metric::b()", a=np.array([0.0, 1.0, 6.0]), b=np.array([0.0, 0.0, 3.0]))
    assert got[0] == 0 and np.isnan(got[1]) and got[2] == 2


def test_metric_arguments_take_their_view():
    a = {"t": 1.0, "t_i": 10.0, "t_e": 100.0}
    assert float(ev("metric::t() + metric::t(i) + metric::t(e) + metric::context::t()", **a)) == 112


def test_a_condition_that_differs_between_cells_runs_both_branches_under_masks():
    x = np.array([[1.0, -2.0], [0.0, 5.0]])
    got = ev("{ if (metric::x() > 0) { ${r} = metric::x() * 10; } elseif (metric::x() < 0) { ${r} = -1; }"
             " else { ${r} = 7; }; return ${r}; }", x=x)
    assert got.tolist() == [[10.0, -1.0], [7.0, 50.0]]
    # while: each cell loops as long as its own condition holds
    got = ev("{ ${n} = 0; while (${n} < metric::x()) { ${n} = ${n} + 1; }; return ${n}; }", x=x)
    assert got.tolist() == [[1.0, 0.0], [0.0, 5.0]]
    # an array indexed per cell
    got = ev("{ ${t}[0] = 5; ${t}[1] = 6; return ${t}[metric::i()]; }", i=np.array([1.0, 0.0, 9.0]))
    assert got.tolist() == [6.0, 5.0, 0.0]


def test_metric_names_and_what_cubepl_cannot_name():
    assert parse("metric::time(i)/metric::fixed::visits(e) + metric::a::b=c()").metric_names == \
        ["time", "visits", "a::b=c"]
    with pytest.raises(ExpressionError, match="only letters, digits"):
        parse("metric::task-clock()")


@pytest.mark.parametrize("text,why", [
    ("1 +", "ends too early"), ("(1", "expected ')'"), ("1 > 2", "stands only in if"),
    ("{ if (1) { ${a}=1; }; return 1; }", "must compare"), ("(1 < 2) * 3", "arithmetic on a condition"),
    ("1 < 2 < 3", "do not chain"), ("foo(1)", "unknown word"), ("metric::call::time(0, i)", "metric::call::"),
    ("env(\"HOME\")", "env"), ("{ ${a} = 1 return 1; }", "expected ';'"), ("\"x\"", "a string"),
    ("{ ${i} = 0; while (true) { ${i} = 1; }; return 1; }", "while loop"), ("1 =~ /(/", "regular expression"),
])
def test_refusals_are_one_line(text, why):
    with pytest.raises(ExpressionError, match=None) as exc:
        ev(text)
    assert why in str(exc.value) and "\n" not in str(exc.value)
    assert isinstance(exc.value, InputError) and isinstance(exc.value, ValueError)


def test_hostile_texts_are_linear_and_never_recurse_too_deep():
    t = time.monotonic()
    with pytest.raises(ExpressionError, match="nested deeper than"):
        parse("(" * 5000 + "1" + ")" * 5000)
    with pytest.raises(ExpressionError, match="nested deeper than"):
        parse("-" * 5000 + "1")
    with pytest.raises(ExpressionError, match="nested deeper than"):
        parse("{ return " * 3000 + "1" + "; }" * 3000)
    assert float(evaluate(" " * 100_000 + "1 + 1" + " " * 100_000, lambda n: 0)) == 2
    assert float(evaluate("+".join(["1"] * 20_000), lambda n: 0)) == 20_000  # flat, not 20,000 deep
    half = cubepl.MAX_DEPTH // 2
    assert float(evaluate("(" * half + "1" + ")" * half, lambda n: 0)) == 1
    assert time.monotonic() - t < 1.5


def test_expressions_read_from_a_file(tmp_path):
    f = tmp_path / "e.cubepl"
    f.write_text("{\n  ${a} = metric::time(i);  // the inclusive time\n  return ${a} / 2;\n}\n")
    text = cubepl.read_expression(str(f))
    assert float(evaluate(text, lambda n: 0.0, lambda n, v: 8.0)) == 4
    f.write_text("1 +")
    with pytest.raises(ExpressionError, match="e.cubepl: CubePL: the expression ends too early"):
        cubepl.read_expression(str(f))
    with pytest.raises(ExpressionError, match="cannot read"):
        cubepl.read_expression(str(tmp_path / "missing"))
    f.write_bytes(b"1" * (cubepl.MAX_FILE + 1))
    with pytest.raises(ExpressionError, match="more than"):
        cubepl.read_expression(str(f))
