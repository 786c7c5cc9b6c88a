"""Arithmetic terms, as perfbase's derived parameters (input descriptions)
and eval operators (query files) write them: numbers, names, + - * / //
% **, unary signs and a few functions.  A term is checked once when its
file is read (check) and evaluated per run or row (evaluate) by walking
the syntax tree: never Python's eval, so a term can do nothing else."""

from __future__ import annotations

import ast
import math
from collections.abc import Callable

BINARY: dict[type, Callable[[object, object], object]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: (float(a) ** b) if abs(b) > 64 or abs(a) > 2**64 else a**b,  # no huge integers
}
SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}
# Integers stay exact up to this many bits and become floats beyond (which overflow past 1.8e308): terms
# come from other people's files, and a product of products can otherwise grow without bound.
INT_BITS = 1024


def _round(x: object, ndigits: object = None) -> object:
    """round(), with the digits bounded: round(n, -10**8) on an integer would compute 10**(10**8)."""
    if ndigits is None:
        return round(x)
    if isinstance(ndigits, float) and ndigits.is_integer():
        ndigits = int(ndigits)
    if not isinstance(ndigits, int):
        raise ValueError(f"round's digits {ndigits!r} are not a whole number")
    return round(x, max(-400, min(400, ndigits)))  # beyond 400 digits every finite value rounds alike


FUNCTIONS: dict[str, Callable[..., object]] = {
    "abs": abs, "min": min, "max": max, "round": _round,
    "sqrt": math.sqrt, "exp": math.exp, "log": math.log, "log10": math.log10,
    # perfbase's term functions (its XML <function type=...>): floats in, floats out, bounded
    **{f: getattr(math, f) for f in ("fabs", "floor", "ceil", "sin", "cos", "tan", "asin", "acos", "atan", "atan2",
                                     "sinh", "cosh", "tanh", "hypot")},
    "pow": lambda x, y: math.pow(x, y),
}
_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.USub, ast.UAdd, ast.Constant, ast.Name, ast.Load, ast.Call)


def check(text: str, operators: tuple[type, ...], functions: tuple[str, ...], names: str = "names") -> ast.Expression:
    """The term as a checked syntax tree, or ValueError with the problem in
    words (the caller adds where the term stands).  `operators`: the binary
    operators allowed (keys of BINARY); `functions`: the calls allowed;
    `names`: what the term's names are called in messages."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"term {text!r} is not an arithmetic expression") from None
    allowed = (*_NODES, *operators)
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            ops = " ".join(["+", "-", *(SYMBOLS[o] for o in operators if o not in (ast.Add, ast.Sub))])
            raise ValueError(f"term {text!r} uses {type(node).__name__}; only numbers, {names}, {ops} and "
                             f"{', '.join(functions)} are allowed")
        if isinstance(node, ast.Constant) and (
            isinstance(node.value, bool) or not isinstance(node.value, (int, float))
        ):
            raise ValueError(f"term {text!r} has the constant {node.value!r}; only numbers are allowed")
        if isinstance(node, ast.Call) and (
            not isinstance(node.func, ast.Name) or node.func.id not in functions or node.keywords
        ):
            raise ValueError(f"term {text!r} calls something other than {', '.join(functions)}")
    return tree


def names_in(tree: ast.Expression) -> list[str]:
    """The names a term reads (not the functions it calls), in order of appearance."""
    callees = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    out: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and id(node) not in callees and node.id not in out:
            out.append(node.id)
    return out


def _bounded(value: object) -> object:
    if isinstance(value, int) and value.bit_length() > INT_BITS:
        return float(value)  # OverflowError when even a float cannot hold it
    return value


def evaluate(tree: ast.Expression, env: dict[str, object]) -> object:
    """The term's value for the names' values in env.  Raises what the
    arithmetic raises (ZeroDivisionError, OverflowError, ValueError for a
    name whose value is not a number, or a math domain error)."""

    def ev(node: ast.AST) -> object:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            value = env[node.id]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"'{node.id}' = {value!r} is not a number")
            return value
        if isinstance(node, ast.UnaryOp):
            value = ev(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            return _bounded(BINARY[type(node.op)](ev(node.left), ev(node.right)))
        if isinstance(node, ast.Call):
            return _bounded(FUNCTIONS[node.func.id](*(ev(a) for a in node.args)))
        raise ValueError(f"{type(node).__name__} is not allowed")  # check() already refused it

    return ev(tree)
