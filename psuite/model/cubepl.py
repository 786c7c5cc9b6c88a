"""CubePL, the language of CUBE's derived metrics, as CubeLib 4.8 defines it
(its flex scanner and bison grammar, CubePL1), parsed and evaluated over
numpy arrays.

An expression is evaluated once for all cells of an array shaped (call
paths, locations) - or whatever shape the values a caller fetches have:
metric references give arrays, numbers and most predefined variables give
scalars, and numpy broadcasting does the rest.  Control flow is evaluated
under masks: an `if` whose condition differs between cells runs each
branch for the cells it holds for, a `while` runs while its condition
holds for any cell (at most MAX_ITERATIONS times).

The language, as CubeLib's grammar has it:
- numbers, quoted strings, `+ - * / ^` (all left-associative, so 2^3^2
  is 64; unary minus binds below ^, so -2^2 is -4), `|x|`, parentheses;
- functions sqrt sin cos tan asin acos atan exp log abs sgn pos neg floor
  ceil random (one argument) and min max (two);
- `metric::NAME()`, `metric::NAME(i)` / `(e)` (the inclusive or exclusive
  value whatever the view), `metric::NAME(i, e)`, `metric::context::` (the
  same as `metric::`), `metric::fixed::NAME()` (the metric over the whole
  experiment) and `metric::fixed::NAME(i)` (over every location);
- conditions (only in `if`, `elseif`, `while`): == != < > <= >=, `eq`
  (strings equal), `seq` (equal ignoring case), `=~ /regex/`, `and`, `or`
  (one precedence, left to right), `not (...)`, `true`, `false`;
- blocks `{ statement; ... return expression; }`, whose statements are
  `${a} = e`, `${a}[i] = e`, `if (c) { ... } elseif (c) { ... } else
  { ... }`, `while (c) { ... }`, `local(a)`, `global(a)`, each ending
  with `;`; `${a}`, `${a}[i]`, `sizeof(a)`, `defined(a)`;
  `lowercase(s)`, `uppercase(s)`; `// comments`.

Beyond CubeLib, numbers may have an exponent (1e-06) and whitespace may
stand inside a metric reference's parentheses.  Not evaluated (refused
with a message): `metric::call::`, CUBE's ghost-metric statements
(`cube::metric::...`, `cube::init::...`), `env(...)`, `arg1`/`arg2`;
but `cube::metric::set::NAME("value", "VOID")`, which Score-P's
<cubeplinit> programs hold, is a statement whose setting is recorded.

<cubeplinit> programs (run_init) run once, in order, in one memory; the
variables they declare global(x) are what metric expressions then read
(${x}[${calculation::callpath::id}]: a gather over the call paths).
An unset variable is 0, and "" as a string; a metric the caller says
the cube lacks (evaluate's metrics=) is 0, as in CubeLib.

Division as CubeLib's: 0 / x is 0 (0 / 0 too), x / 0 is NaN.

Parsing recurses only with the nesting of the text and refuses nesting
deeper than MAX_DEPTH; same-precedence chains (1+1+...+1) are flat, so
neither parsing nor evaluation meets Python's recursion limit.  Lexing is
one pass of anchored regular expressions: linear in the text's length.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from psuite.errors import InputError

MAX_DEPTH = 200
MAX_ITERATIONS = 100_000
MAX_CHAIN = 48  # metrics fetched within metrics' evaluations, nested: callers that recurse stop here
MAX_FETCHES = 20_000  # metric values fetched within one outermost evaluation: no exponential re-evaluation
MAX_INIT_STEPS = 20_000_000  # statements all of an experiment's <cubeplinit> programs run, together


class ExpressionError(InputError, ValueError):
    """A CubePL expression that cannot be parsed or evaluated (one line,
    exit status 2 at the command line)."""


_fetching = threading.local()  # .stack: metric names being fetched, outermost first; .count


# -- lexing ---------------------------------------------------------------------
_SPACE = re.compile(r"(?:\s+|//[^\n]*)+")
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![A-Za-z_\d.])|[\d.]+(?![A-Za-z_])")
_WORD = re.compile(r"[A-Za-z]+")
_METRIC = re.compile(r"metric::(fixed::|context::|call::)?([A-Za-z0-9_:=]+)")
_METRIC_ARGS = re.compile(r"\(\s*(?:([ie*])\s*(?:,\s*([ie*])\s*)?)?\)")
_VAR = re.compile(r"\$\{\s*([A-Za-z][0-9A-Za-z:_\-#]*)\s*\}")
_METRIC_SET = re.compile(r"cube::metric::set::([A-Za-z0-9_:=]+)")
_NAME_ARG = re.compile(r"\(\s*([A-Za-z][0-9A-Za-z:_\-#]*)\s*\)")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)
_REGEX = re.compile(r"\s*/((?:[^/\\]|\\.)*)/", re.S)
_OPS = ("==", "!=", "<=", ">=", "=~", "(", ")", "{", "}", "[", "]", ";", ",", "=", "<", ">",
        "+", "-", "*", "/", "^", "|")
_KEYWORDS = {"if", "else", "elseif", "while", "return", "eq", "seq", "not", "and", "or", "true", "false",
             "lowercase", "uppercase", "sizeof", "defined", "local", "global"}
FUNCTIONS1 = ("sqrt", "sin", "asin", "cos", "acos", "exp", "log", "random", "tan", "atan", "abs", "sgn", "pos",
              "neg", "floor", "ceil")
FUNCTIONS2 = ("min", "max")
_REFUSED = {"env": "env() (the environment) is not evaluated by psuite",
            "arg": "arg1/arg2 are the operands of an aggregation operator (<cubeplaggr>), not of a derived metric",
            "cube": "CUBE's ghost-metric statements (cube::metric::..., cube::init::...) are not evaluated by psuite"}


@dataclass
class Token:
    kind: str  # num, str, regex, var, metric, word, op, sizeof (name argument), mset, end
    value: Any
    pos: int


ARG1, ARG2 = " arg1", " arg2"  # arg1 and arg2 as variables: no ${name} can have a space


def tokenize(text: str, arguments: bool = False) -> list[Token]:
    """The expression's tokens, in one linear pass; with `arguments`, an
    aggregation operator's: arg1 and arg2 are its operands."""
    out: list[Token] = []
    pos, n = 0, len(text)
    while True:
        m = _SPACE.match(text, pos)
        if m:
            pos = m.end()
        if pos >= n:
            break
        c = text[pos]
        if c.isdigit() or (c == "." and pos + 1 < n and text[pos + 1].isdigit()):
            m = _NUMBER.match(text, pos)
            if not m:
                raise _error(text, pos, "a malformed number")
            try:
                out.append(Token("num", float(m.group()), pos))
            except ValueError:
                raise _error(text, pos, f"a malformed number {m.group()!r}") from None
            pos = m.end()
        elif text.startswith("metric::", pos):
            m = _METRIC.match(text, pos)
            if not m:
                raise _error(text, pos, "a metric reference without a name (metric::NAME())")
            if m.group(1) == "call::":
                raise _error(text, pos, "metric::call:: (a value at another call path) is not evaluated by psuite")
            a = _METRIC_ARGS.match(text, m.end())
            if not a:
                raise _error(text, m.end(), f"metric::{m.group(2)} needs its arguments: (), (i), (e) or (i, e) "
                             "(a metric name has only letters, digits, _ : =)")
            kind = "fixed" if m.group(1) == "fixed::" else "context"
            out.append(Token("metric", (kind, m.group(2), tuple(x for x in a.groups() if x)), pos))
            pos = a.end()
        elif c == "$":
            m = _VAR.match(text, pos)
            if not m:
                raise _error(text, pos, "a variable is written ${name}")
            out.append(Token("var", m.group(1), pos))
            pos = m.end()
        elif c == '"':
            m = _STRING.match(text, pos)
            if not m:
                raise _error(text, pos, "a string without its closing quote")
            s = re.sub(r"\\(.)", lambda g: {"t": "\t", "n": "\n"}.get(g.group(1), g.group(1)), m.group(1))
            out.append(Token("str", s, pos))
            pos = m.end()
        elif c.isalpha():
            m = _WORD.match(text, pos)
            word = m.group()
            if word in ("sizeof", "defined", "local", "global"):
                a = _NAME_ARG.match(text, m.end())
                if not a:
                    raise _error(text, pos, f"{word} takes a variable name: {word}(name)")
                out.append(Token("sizeof", (word, a.group(1)), pos))
                pos = a.end()
                continue
            if arguments and word == "arg" and text[m.end():m.end() + 1] in ("1", "2"):
                out.append(Token("var", ARG1 if text[m.end()] == "1" else ARG2, pos))
                pos = m.end() + 1
                continue
            if word in _KEYWORDS or word in FUNCTIONS1 or word in FUNCTIONS2:
                out.append(Token("word", word, pos))
                pos = m.end()
                continue
            if text.startswith("cube::metric::set::", pos):  # CubeLib's metric::set, in <cubeplinit>
                m = _METRIC_SET.match(text, pos)
                if not m:
                    raise _error(text, pos, "cube::metric::set:: needs a metric name")
                out.append(Token("mset", m.group(1), pos))
                pos = m.end()
                continue
            for prefix, why in _REFUSED.items():
                if word.startswith(prefix):
                    raise _error(text, pos, why)
            raise _error(text, pos, f"unknown word {word!r}")
        else:
            for op in _OPS:
                if text.startswith(op, pos):
                    break
            else:
                raise _error(text, pos, f"unexpected character {c!r}")
            out.append(Token("op", op, pos))
            pos += len(op)
            if op == "=~":
                m = _REGEX.match(text, pos)
                if not m:
                    raise _error(text, pos, "=~ takes a regular expression between slashes: =~ /.../")
                out.append(Token("regex", m.group(1).replace("\\/", "/"), pos))
                pos = m.end()
    out.append(Token("end", None, n))
    return out


def _error(text: str, pos: int, what: str) -> ExpressionError:
    snippet = text[pos:pos + 30].strip() or "the end"
    return ExpressionError(f"CubePL: {what} at {snippet!r} (character {pos + 1})")


# -- parsing ------------------------------------------------------------------------
# nodes are tuples: (kind, ...); every node evaluates to a value, a string or
# (kinds in _BOOLEAN) a condition
_BOOLEAN = {"cmp", "logic", "not", "bool", "regex"}
_INFIX = {"or": 1, "and": 1, "==": 3, "!=": 3, "<": 3, ">": 3, "<=": 3, ">=": 3, "eq": 3, "seq": 3, "=~": 3,
          "+": 4, "-": 4, "*": 5, "/": 5, "^": 6}
_NEGATION = 6  # CubeLib: -2^2 is -4, 2*-3^2 is -18


@dataclass
class Program:
    """A parsed expression: its tree and the metrics it refers to."""

    text: str
    tree: tuple
    metrics: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)  # (kind, name, args)
    variables: set[str] = field(default_factory=set)  # every ${name} it reads

    @property
    def metric_names(self) -> list[str]:
        return [name for _, name, _ in self.metrics]


class _Parser:
    def __init__(self, text: str, arguments: bool = False) -> None:
        self.text = text
        self.tokens = tokenize(text, arguments)
        self.i = 0
        self.depth = 0
        self.program = Program(text, ())

    def peek(self) -> Token:
        return self.tokens[self.i]

    def take(self) -> Token:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def fail(self, what: str, t: Token | None = None) -> ExpressionError:
        t = t or self.peek()
        return _error(self.text, t.pos, what)

    def expect(self, op: str) -> Token:
        t = self.take()
        if t.kind not in ("op", "word") or t.value != op:
            raise self.fail(f"expected {op!r}", t)
        return t

    def is_op(self, *ops: str) -> bool:
        t = self.peek()
        return t.kind in ("op", "word") and t.value in ops

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"the expression is nested deeper than {MAX_DEPTH} levels")

    def parse(self) -> Program:
        tree = self.value()
        if self.peek().kind != "end":
            raise self.fail("unexpected text after the expression")
        self.program.tree = tree
        return self.program

    def value(self, bp: int = 0) -> tuple:
        node = self.expr(bp)
        if node[0] in _BOOLEAN:
            raise self.fail("a condition (comparison, and, or) stands only in if, elseif or while")
        return node

    def condition(self) -> tuple:
        t = self.peek()
        node = self.expr(0)
        if node[0] not in _BOOLEAN:
            raise self.fail("a condition must compare (==, <, eq, =~ ...), not give a value", t)
        return node

    def expr(self, min_bp: int) -> tuple:
        self.enter()
        left = self.prefix()
        while True:
            t = self.peek()
            bp = _INFIX.get(t.value) if t.kind in ("op", "word") else None
            if bp is None or bp < min_bp:
                break
            if bp == 3:  # comparisons: two values make a condition
                self.take()
                if left[0] in _BOOLEAN:
                    raise self.fail("comparisons do not chain: join conditions with and / or", t)
                if t.value == "=~":
                    rx = self.take()
                    try:
                        left = ("regex", left, re.compile(rx.value))
                    except re.error as exc:
                        raise self.fail(f"bad regular expression: {exc}", rx) from None
                    continue
                right = self.value(4)
                left = ("cmp", t.value, left, right)
                continue
            items = []
            while True:
                t = self.peek()
                if t.kind not in ("op", "word") or _INFIX.get(t.value) != bp:
                    break
                self.take()
                right = self.expr(bp + 1)
                items.append((t.value, right))
            if bp == 1:
                for node in [left] + [r for _, r in items]:
                    if node[0] not in _BOOLEAN:
                        raise self.fail("and / or join conditions, not values", t)
                left = ("logic", left, items)
            else:
                for node in [left] + [r for _, r in items]:
                    if node[0] in _BOOLEAN:
                        raise self.fail("arithmetic on a condition", t)
                left = ("bin", left, items)
        self.depth -= 1
        return left

    def prefix(self) -> tuple:
        t = self.take()
        k, v = t.kind, t.value
        if k == "num":
            return ("num", v)
        if k == "str":
            return ("str", v)
        if k == "metric":
            self.program.metrics.append(v)
            return ("metric",) + v
        if k == "var":
            self.program.variables.add(v)
            if self.is_op("["):
                self.take()
                index = self.value()
                self.expect("]")
                return ("var", v, index)
            return ("var", v, None)
        if k == "sizeof":
            if v[0] in ("local", "global"):
                raise self.fail(f"{v[0]}(...) is a statement", t)
            return (v[0], v[1])
        if k == "op":
            if v == "-":
                return ("neg", self.value(_NEGATION))
            if v == "(":
                node = self.expr(0)
                self.expect(")")
                return node
            if v == "|":
                node = self.value()
                self.expect("|")
                return ("func", "abs", [node])
            if v == "{":
                return self.block()
        if k == "word":
            if v in ("true", "false"):
                return ("bool", v == "true")
            if v == "not":
                self.expect("(")
                node = self.condition()
                self.expect(")")
                return ("not", node)
            if v in FUNCTIONS1 or v in FUNCTIONS2 or v in ("lowercase", "uppercase"):
                self.expect("(")
                args = [self.value()]
                if v in FUNCTIONS2:
                    self.expect(",")
                    args.append(self.value())
                self.expect(")")
                return ("func", v, args)
        if k == "end":
            raise self.fail("the expression ends too early", t)
        raise self.fail(f"unexpected {v!r}", t)

    def block(self) -> tuple:
        stmts = self.statements(until="return")
        self.expect("return")
        result = self.value()
        self.expect(";")
        self.expect("}")
        return ("block", stmts, result)

    def statements(self, until: str) -> list[tuple]:
        out = []
        while not self.is_op(until):
            if self.peek().kind == "end":
                raise self.fail(f"a block without its {until!r}")
            out.append(self.statement())
            self.expect(";")
        return out

    def body(self) -> list[tuple]:
        self.enter()
        self.expect("{")
        stmts = self.statements(until="}")
        self.expect("}")
        self.depth -= 1
        return stmts

    def statement(self) -> tuple:
        t = self.peek()
        if t.kind == "var":
            self.take()
            index = None
            if self.is_op("["):
                self.take()
                index = self.value()
                self.expect("]")
            self.expect("=")
            return ("assign", t.value, index, self.value())
        if t.kind == "sizeof" and t.value[0] in ("local", "global"):
            self.take()
            return ("decl", t.value[0], t.value[1])
        if t.kind == "mset":
            self.take()
            self.expect("(")
            prop = self.value()
            self.expect(",")
            value = self.value()
            self.expect(")")
            return ("mset", t.value, prop, value)
        if self.is_op("if"):
            self.take()
            self.expect("(")
            cond = self.condition()
            self.expect(")")
            branches = [(cond, self.body())]
            otherwise = None
            while self.is_op("elseif"):
                self.take()
                self.expect("(")
                cond = self.condition()
                self.expect(")")
                branches.append((cond, self.body()))
            if self.is_op("else"):
                self.take()
                otherwise = self.body()
            return ("if", branches, otherwise)
        if self.is_op("while"):
            self.take()
            self.expect("(")
            cond = self.condition()
            self.expect(")")
            return ("while", cond, self.body())
        raise self.fail("expected a statement (${a} = ..., if, while, local, global) or return")


def parse(text: str, arguments: bool = False) -> Program:
    """Parse a CubePL expression (raises ExpressionError); with
    `arguments`, an aggregation operator's, over arg1 and arg2."""
    text = text.strip()
    if text.startswith("<cubepl>") and text.endswith("</cubepl>"):  # the form CubeLib's grammar starts from
        text = text[len("<cubepl>"):-len("</cubepl>")]
    if not text.strip():
        raise ExpressionError("CubePL: the expression is empty")
    return _Parser(text, arguments).parse()


_CACHE: dict[tuple[str, bool], Program] = {}


def compiled(text: str, arguments: bool = False) -> Program:
    """parse(), remembered (derived metrics are evaluated over and over)."""
    p = _CACHE.get((text, arguments))
    if p is None:
        if len(_CACHE) > 4096:
            _CACHE.clear()
        p = _CACHE[(text, arguments)] = parse(text, arguments)
    return p


def aggregation(text: str) -> Program:
    """An aggregation operator (CUBE's <cubeplaggr>: plus, minus, aggr)
    parsed: an expression of arg1 and arg2, which name no metric."""
    p = compiled(text, True)
    if p.metrics:
        raise ExpressionError(f"CubePL: the aggregation operator {text.strip()!r} names a metric; "
                              "it combines its operands arg1 and arg2 only")
    return p


MAX_OPERATOR_STEPS = 1_000  # statements one application of an aggregation operator may run (it runs per pair)


def combine(text: str, a: Any, b: Any) -> Any:
    """The aggregation operator `text` applied to a and b (arrays or
    numbers, cell by cell): CubeLib's GeneralEvaluation::eval(a, b).  It
    runs once per call path or location folded in: at most
    MAX_OPERATOR_STEPS statements each time."""
    def no_metric(name: str, *_: str) -> Any:
        raise ExpressionError("CubePL: an aggregation operator names no metric")

    ev = _Evaluator(no_metric, no_metric, no_metric, {ARG1: a, ARG2: b})
    ev.max_steps = MAX_OPERATOR_STEPS
    shown = " ".join(text.split())[:60]
    ev.too_long = lambda n: (f"CubePL: the aggregation operator {shown!r} runs more than {n} statements for one "
                             "pair of values; psuite takes operators of a few statements")
    result = ev.eval(aggregation(text).tree)
    if isinstance(result, str) or (isinstance(result, np.ndarray) and result.dtype == object):
        raise ExpressionError("CubePL: the aggregation operator gives a string, not a number")
    return np.asarray(result, dtype=np.float64)


MAX_FILE = 1 << 20


def read_expression(path: str) -> str:
    """A CubePL expression read from a file (cube_dump -m FILE, cube_derive):
    its text, checked; at most MAX_FILE bytes, UTF-8."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE + 1)
    except OSError as exc:
        raise ExpressionError(f"{path}: cannot read the CubePL expression ({exc.strerror or exc}); "
                              "give a readable file") from None
    if len(data) > MAX_FILE:
        raise ExpressionError(f"{path}: a CubePL expression of more than {MAX_FILE} bytes; give a shorter one")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ExpressionError(f"{path}: the CubePL expression is not UTF-8 text; give a text file") from None
    try:
        parse(text)
    except ExpressionError as exc:
        raise ExpressionError(f"{path}: {exc}") from None
    return text.strip()


def metric_names(text: str) -> list[str]:
    """The metrics an expression refers to, in order of appearance."""
    return compiled(text).metric_names


# -- evaluation -----------------------------------------------------------------------
Fetch = Callable[[str], Any]
FetchView = Callable[[str, str], Any]


class _Evaluator:
    def __init__(self, fetch: Fetch, fetch_view: FetchView | None, fixed: FetchView | None,
                 variables: Mapping[str, Any] | Callable[[str], Any] | None,
                 metrics: Container[str] | None = None) -> None:
        self.fetch, self.fetch_view, self.fixed = fetch, fetch_view, fixed
        self.metrics = metrics
        self.predefined = variables
        self.env: dict[str, Any] = {}
        self.arrays: dict[str, list] = {}
        self.mask: Any = None  # None: every cell; else a bool array of the cells statements change
        self.rng = np.random.default_rng()
        self.globals: set[str] = set()  # names global(x) declared: what <cubeplinit> leaves to the metrics
        self.settings: dict[str, dict[str, str]] = {}  # cube::metric::set::NAME("value", "VOID"): NAME's
        self.steps = 0
        self.max_steps: int | None = None
        self.too_long: Callable[[int], str] = lambda n: (f"CubePL: the <cubeplinit> programs run more than {n} "
                                                         "statements (a loop over too many call paths?)")

    # values
    def eval(self, node: tuple) -> Any:
        kind = node[0]
        if kind == "num" or kind == "str":
            return node[1]
        if kind == "metric":
            return self.metric(node[1], node[2], node[3])
        if kind == "bin":
            return self.binary(node)
        if kind == "neg":
            return -self.number(self.eval(node[1]))
        if kind == "func":
            return self.function(node[1], [self.eval(a) for a in node[2]])
        if kind == "var":
            return self.variable(node[1], node[2])
        if kind == "block":
            self.run(node[1])
            return self.eval(node[2])
        if kind == "sizeof":
            got = self.arrays.get(node[1])
            if got is not None:
                return float(len(got))
            return 1.0 if self.defined(node[1]) else 0.0
        if kind == "defined":
            return 1.0 if self.defined(node[1]) else 0.0
        if kind in _BOOLEAN:
            return self.condition(node)
        raise ExpressionError(f"CubePL: cannot evaluate {kind}")

    def number(self, v: Any) -> Any:
        if isinstance(v, str) or (isinstance(v, np.ndarray) and v.dtype == object):
            raise ExpressionError("CubePL: arithmetic on a string")
        return v

    def binary(self, node: tuple) -> Any:
        left = self.number(self.eval(node[1]))
        for op, right_node in node[2]:
            right = self.number(self.eval(right_node))
            with np.errstate(all="ignore"):
                if op == "+":
                    left = left + right
                elif op == "-":
                    left = left - right
                elif op == "*":
                    left = left * right
                elif op == "^":
                    left = np.power(np.asarray(left, dtype=np.float64), right)
                else:  # CubeLib: 0 / anything is 0, anything else / 0 is NaN
                    num, den = np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)
                    left = np.where(num == 0, 0.0, np.where(den == 0, np.nan, num / np.where(den == 0, 1.0, den)))
        return left

    def function(self, name: str, args: list) -> Any:
        if name == "lowercase" or name == "uppercase":
            f = str.lower if name == "lowercase" else str.upper
            v = args[0]
            if isinstance(v, np.ndarray):
                return np.vectorize(lambda s: f(str(s)), otypes=[object])(v)
            return f(v if isinstance(v, str) else _number_text(v))
        args = [np.asarray(self.number(a), dtype=np.float64) for a in args]
        x = args[0]
        with np.errstate(all="ignore"):
            if name == "min":
                return np.minimum(x, args[1])
            if name == "max":
                return np.maximum(x, args[1])
            if name == "sgn":
                return np.sign(x)
            if name == "pos":
                return np.where(x >= 0, x, 0.0)
            if name == "neg":
                return np.where(x < 0, x, 0.0)
            if name == "random":
                return x * self.rng.random(np.shape(x))
            return {"sqrt": np.sqrt, "sin": np.sin, "asin": np.arcsin, "cos": np.cos, "acos": np.arccos,
                    "exp": np.exp, "log": np.log, "tan": np.tan, "atan": np.arctan, "abs": np.abs,
                    "floor": np.floor, "ceil": np.ceil}[name](x)

    def metric(self, kind: str, name: str, args: tuple[str, ...]) -> Any:
        if "*" in args:  # CubeLib's "same as the context" modifier
            args = tuple(a for a in args if a != "*")
        if self.metrics is not None and name not in self.metrics:
            return 0.0  # CubeLib: a metric the cube lacks is 0 (omp_idle_threads in an MPI-only cube)
        if kind == "fixed":
            if self.fixed is None:
                raise ExpressionError(f"CubePL: metric::fixed::{name}() cannot be evaluated here")
            return self.fixed(name, args[0] if args else "")
        # a caller's fetch may evaluate other derived metrics through evaluate() again: a name met
        # twice on the way is a cycle, a walk deeper than MAX_CHAIN or longer than MAX_FETCHES stops
        stack = getattr(_fetching, "stack", None)
        if stack is None:
            stack = _fetching.stack = []
        if name in stack:
            loop = stack[stack.index(name):] + [name]
            raise ExpressionError(f"derived metric {name} refers to itself ({' → '.join(loop)}); change its "
                                  "expression so that no metric needs its own value")
        if len(stack) >= MAX_CHAIN:
            raise ExpressionError(f"derived metrics refer to each other more than {MAX_CHAIN} deep ({stack[0]} → "
                                  f"{stack[1]} → ... → {name}); shorten the chain")
        if not stack:
            _fetching.count = 0
        _fetching.count += 1
        if _fetching.count > MAX_FETCHES:
            raise ExpressionError(f"derived metric {stack[0] if stack else name}: its metrics were fetched more than "
                                  f"{MAX_FETCHES} times (metrics that each name another several times); "
                                  "simplify the expressions")
        # within the outermost evaluation, a value fetched once is not fetched again: a caller
        # whose fetch evaluates derived metrics recursively stays linear (40 metrics each naming
        # the previous twice), the key being the fetch function and what it closes over
        fn = self.fetch_view if args and self.fetch_view is not None else self.fetch
        key = (_function_key(fn), name, args[0] if args and self.fetch_view is not None else None)
        memo = getattr(_fetching, "memo", None)
        if memo is not None and key[0] is not None and key in memo:
            return memo[key][0]
        stack.append(name)
        try:
            got = fn(name, args[0]) if key[2] is not None else fn(name)
        finally:
            stack.pop()
        if memo is not None and key[0] is not None:
            memo[key] = (got, fn)  # fn kept alive: the ids in the key are not reused while the memo lives
        return got

    def defined(self, name: str) -> bool:
        return name in self.env or name in self.arrays or self.lookup(name) is not None

    def lookup(self, name: str) -> Any:
        p = self.predefined
        if p is None:
            return None
        return p(name) if callable(p) else p.get(name)

    def variable(self, name: str, index_node: tuple | None) -> Any:
        if index_node is None:
            if name in self.env:
                return self.env[name]
            if name in self.arrays:
                return self.arrays[name][0] if self.arrays[name] else 0.0
            got = self.lookup(name)
            if got is None:
                return UNSET  # CubeLib: an unset variable (predefined ones it leaves unset too) is 0, or ""
            return got[0] if isinstance(got, list) else got
        index = self.number(self.eval(index_node))
        values = self.arrays.get(name)
        if values is None:
            got = self.lookup(name)
            if got is None and name in self.env:
                got = [self.env[name]]
            values = got if isinstance(got, list) else [] if got is None else [got]
        if np.ndim(index) == 0:
            i = int(index)
            return values[i] if 0 <= i < len(values) else UNSET
        index = np.asarray(index)
        if not any(isinstance(v, np.ndarray) and v.ndim for v in values):  # a table lookup
            strings = any(isinstance(v, str) for v in values)
            table = np.array(list(values) + ["" if strings else 0.0], dtype=object if strings else np.float64)
            i = np.nan_to_num(index, nan=-1).astype(np.int64)
            return table[np.where((i >= 0) & (i < len(values)), i, len(values))]
        out: Any = 0.0
        for u in np.unique(index):
            i = int(u)
            v = values[i] if 0 <= i < len(values) else 0.0
            out = np.where(index == u, v, out)
        return out

    # conditions
    def condition(self, node: tuple) -> Any:
        kind = node[0]
        if kind == "bool":
            return node[1]
        if kind == "not":
            return np.logical_not(self.condition(node[1]))
        if kind == "logic":
            left = self.condition(node[1])
            for op, right in node[2]:
                r = self.condition(right)
                left = np.logical_and(left, r) if op == "and" else np.logical_or(left, r)
            return left
        if kind == "regex":
            v, rx = self.eval(node[1]), node[2]
            if isinstance(v, np.ndarray):
                return np.vectorize(lambda s: rx.search(_text(s)) is not None, otypes=[bool])(v)
            return rx.search(_text(v)) is not None
        op, a, b = node[1], self.eval(node[2]), self.eval(node[3])
        if op in ("eq", "seq"):
            def same(x: Any, y: Any) -> bool:
                x, y = _text(x), _text(y)
                return x.lower() == y.lower() if op == "seq" else x == y
            if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                return np.vectorize(same, otypes=[bool])(a, b)
            return same(a, b)
        a, b = self.number(a), self.number(b)
        return {"==": np.equal, "!=": np.not_equal, "<": np.less, ">": np.greater, "<=": np.less_equal,
                ">=": np.greater_equal}[op](a, b)

    # statements, under self.mask
    def run(self, stmts: list[tuple]) -> None:
        for s in stmts:
            kind = s[0]
            if self.max_steps is not None:
                self.steps += 1
                if self.steps > self.max_steps:
                    raise ExpressionError(self.too_long(self.max_steps))
            if kind == "assign":
                self.assign(s[1], s[2], self.eval(s[3]))
            elif kind == "decl":
                if s[1] == "global":  # else local: one namespace per evaluation here
                    self.globals.add(s[2])
            elif kind == "mset":
                prop, value = self.eval(s[2]), self.eval(s[3])
                if self.mask is None and isinstance(prop, str) and isinstance(value, str):
                    self.settings.setdefault(s[1], {})[prop] = value
            elif kind == "if":
                rest = True if self.mask is None else self.mask
                for cond, body in s[1]:
                    c = self.cond_under(rest, cond)
                    take, rest = _and(rest, c), _and(rest, np.logical_not(c))
                    if take is not False:
                        self.with_mask(take, body)
                    if rest is False:
                        break
                if s[2] is not None and rest is not False:
                    self.with_mask(rest, s[2])
            elif kind == "while":
                outer = self.mask
                for _ in range(MAX_ITERATIONS):
                    c = self.under(outer, s[1])
                    if c is False:
                        break
                    self.with_mask(c, s[2])
                else:
                    raise ExpressionError(f"CubePL: a while loop still runs after {MAX_ITERATIONS} iterations")

    def under(self, mask: Any, cond: tuple) -> Any:
        """The cells a condition holds for within mask; False for none."""
        return _and(mask, self.cond_under(mask, cond))

    def cond_under(self, mask: Any, cond: tuple) -> Any:
        saved, self.mask = self.mask, (None if mask is True else mask)
        try:
            return self.condition(cond)
        finally:
            self.mask = saved

    def with_mask(self, mask: Any, body: list[tuple]) -> None:
        saved, self.mask = self.mask, (None if mask is True else mask)
        try:
            self.run(body)
        finally:
            self.mask = saved

    def assign(self, name: str, index_node: tuple | None, value: Any) -> None:
        if index_node is None:
            self.env[name] = self.masked(value, self.env.get(name, 0.0))
            return
        index = self.number(self.eval(index_node))
        values = self.arrays.setdefault(name, [])
        targets = [(int(index), self.mask)] if np.ndim(index) == 0 else \
            [(int(u), _and(self.mask, np.asarray(index) == u)) for u in np.unique(index)]
        for i, mask in targets:
            if i < 0 or i > 10_000_000:
                raise ExpressionError(f"CubePL: array index {i} of ${{{name}}} out of range")
            if mask is False:
                continue
            values.extend([0.0] * (i + 1 - len(values)))
            saved, self.mask = self.mask, (None if mask is True else mask)
            values[i] = self.masked(value, values[i])
            self.mask = saved

    def masked(self, value: Any, old: Any) -> Any:
        if self.mask is None:
            return value
        return np.where(self.mask, value, old)


def _and(mask: Any, c: Any) -> Any:
    """mask and c: None/True for every cell, False for none, else a bool array."""
    if mask is False:
        return False
    if isinstance(c, (bool, np.bool_)) or np.ndim(c) == 0:
        if not bool(c):
            return False
        return True if mask is None else mask
    c = np.asarray(c, dtype=bool)
    out = c if mask is None or mask is True else np.logical_and(mask, c)
    if not out.any():
        return False
    return out


def _function_key(fn: Any) -> tuple | None:
    """What identifies a fetch function's results: its code and the objects
    it closes over (a view, a location list); None for other callables."""
    code = getattr(fn, "__code__", None)
    if code is None:
        bound = getattr(fn, "__self__", None)
        return None if bound is None else (getattr(fn, "__func__", fn), id(bound))
    cells = getattr(fn, "__closure__", None) or ()
    try:
        return (code, tuple(id(c.cell_contents) for c in cells), id(getattr(fn, "__self__", None)))
    except ValueError:  # an empty cell
        return None


class _Unset(float):
    """An unset variable's value: 0, whose text is "" (CubeLib's
    get_as_string of a variable never set)."""


UNSET = _Unset(0.0)


def _number_text(v: Any) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() else repr(f)


def _text(v: Any) -> str:
    if isinstance(v, _Unset):
        return ""
    return v if isinstance(v, str) else _number_text(v)


def evaluate(text: str | Program, fetch: Fetch, fetch_view: FetchView | None = None, *,
             fixed: FetchView | None = None,
             variables: Mapping[str, Any] | Callable[[str], Any] | None = None,
             metrics: Container[str] | None = None) -> Any:
    """Evaluate a CubePL expression.  fetch(name) gives metric::name()'s
    values (an array or a number) in the view asked for; fetch_view(name,
    "i" | "e") gives metric::name(i) and metric::name(e) (without it they
    are fetch(name)); fixed(name, "" | "i" | "e") gives metric::fixed::
    references; variables (a mapping or a function of the name, None for
    unknown) gives CUBE's predefined ${...} variables; metrics, when given,
    the metrics there are (any other is 0).  Returns a float64 array or
    number."""
    program = text if isinstance(text, Program) else compiled(text)
    ev = _Evaluator(fetch, fetch_view, fixed, variables, metrics)
    level = getattr(_fetching, "level", 0)
    if level == 0:
        _fetching.memo = {}
    _fetching.level = level + 1
    try:
        result = ev.eval(program.tree)
    finally:
        _fetching.level = level
        if level == 0:
            _fetching.memo = None
    if isinstance(result, str) or (isinstance(result, np.ndarray) and result.dtype == object):
        raise ExpressionError("CubePL: the expression gives a string, not a number")
    return np.asarray(result, dtype=np.float64)


@dataclass
class InitState:
    """What an experiment's <cubeplinit> programs leave: the variables they
    declared global(x) (numbers, strings, or lists for arrays ${x}[i]) and
    the cube::metric::set::NAME(property, value) they made."""

    globals: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, dict[str, str]] = field(default_factory=dict)


def run_init(programs: list[str], variables: Mapping[str, Any] | Callable[[str], Any] | None = None) -> InitState:
    """Run <cubeplinit> programs as CubeLib does: once, in order, before any
    derived metric is evaluated, in one memory (a program sees what the
    ones before it set).  Scalar evaluation: variables should give numbers,
    strings and lists (cube::region::name), not per-cell arrays.  At most
    MAX_INIT_STEPS statements in all."""

    def no_metric(name: str, *_: str) -> Any:
        raise ExpressionError(f"CubePL: metric::{name}() has no value in <cubeplinit> (run before any metric)")

    ev = _Evaluator(no_metric, no_metric, no_metric, variables)
    ev.max_steps = MAX_INIT_STEPS
    for text in programs:
        ev.eval(compiled(text).tree)
    out = InitState(settings=ev.settings)
    for name in ev.globals:
        if name in ev.arrays:
            out.globals[name] = list(ev.arrays[name])
        elif name in ev.env:
            out.globals[name] = ev.env[name]
    return out
