"""The arithmetic of derived parameters and eval terms (psuite.psbase.arith)."""

from __future__ import annotations

import ast

import pytest

from psuite.psbase import arith

ALL = tuple(arith.BINARY)


def test_terms_evaluate_as_arithmetic():
    tree = arith.check("-(a + 2) * b ** 2 // 3 % 5 + max(a, b) / abs(-4)", ALL, ("max", "abs"))
    assert arith.names_in(tree) == ["a", "b"]
    a, b = 7, 3
    assert arith.evaluate(tree, {"a": a, "b": b}) == -(a + 2) * b**2 // 3 % 5 + max(a, b) / abs(-4)
    assert arith.evaluate(arith.check("2 ** 100", ALL, ()), {}) == 2.0**100  # a float: no huge integers


@pytest.mark.parametrize(
    "text, operators, problem",
    [
        ("a.b", ALL, "uses Attribute"),
        ("'x' + a", ALL, "has the constant 'x'"),
        ("True + a", ALL, "has the constant True"),
        ("open(a)", ALL, "calls something other than"),
        ("a // 2", (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow), "uses FloorDiv"),
        ("[a for a in b]", ALL, "uses ListComp"),
        ("a +", ALL, "is not an arithmetic expression"),
    ],
)
def test_anything_but_arithmetic_is_refused(text, operators, problem):
    with pytest.raises(ValueError, match="term ") as e:
        arith.check(text, operators, ("abs",))
    assert problem in str(e.value)


def test_values_that_are_not_numbers_are_named():
    with pytest.raises(ValueError, match="'a' = 'x' is not a number"):
        arith.evaluate(arith.check("a + 1", ALL, ()), {"a": "x"})
    with pytest.raises(ZeroDivisionError):
        arith.evaluate(arith.check("1 / a", ALL, ()), {"a": 0})
