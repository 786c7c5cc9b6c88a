"""perfbase query files (paper, section 3.3): an XML file of source,
operator, combiner and output elements, each output the input of later
ones, that psbase.queryexec runs against an archive.

    <query>
      <experiment>b_eff_io</experiment>            the experiment queried (required)
      <synopsis>...</synopsis> <description>...</description>   optional, ignored

      <parameter id="p.tech">                      a parameter selection, shared by sources that name
        <value>technique</value>                   it with <input>p.tech</input> (perfbase's form);
        <filter><equal>listbased</equal></filter>  <name> may stand for <value>
      </parameter>
      <run id="r.new" mask="include">              a run selection, shared the same way
        <index>3-7, 9, ...2, 12...</index>         run indexes: n, a-b, ...b (up to), a... (from)
        <created><from>2026-11-01</from><to>2026-11-24 12:00</to></created>
      </run>                                       (ISO dates, UTC unless they name a zone; a date alone as <to>
                                                   means up to its end)

      <source id="lb">                             selects runs and gives parameters and results as vectors
        <result>B_scatter</result>                 one or more results
        <parameter>                                parameters inline (no id needed) ...
          <value>S_chunk</value>                   no filter: a key of the vector (all its values)
        </parameter>
        <parameter><value>access</value><sweep/></parameter>   a sweep: one query per value
        <input>p.tech</input>                      ... or shared ones by id
        <run>...</run>                             run selections inline or by <input>
      </source>

      <operator id="lb.max" type="max"><input>lb</input></operator>
      <operator id="rel" type="above"><input>ll.max</input><input>lb.max</input></operator>
      <operator id="x" type="eval"><input>a</input><input>b</input><term>100 * (a - b) / b</term></operator>
      <operator id="s" type="scale" value="0.001"><input>a</input></operator>
      <operator id="q" type="quantile" value="0.9"><input>a</input></operator>
      <operator id="big" type="limit" variant="greater" value="4" option="r1"><input>a</input></operator>
      <operator id="by" type="sort" value="p, r" variant="descending"><input>a</input></operator>
      <combiner id="both"><input>lb.max</input><input>ll.max</input></combiner>   (one input passes
                                                   through; <omit>NAME</omit> leaves a column out)
      <output format="png" type="bar" title="..."><input>rel</input><filename>fig8.png</filename></output>
    </query>

Filters: a <filter> holds conditions <equal>, <notequal>, <lesser>,
<lessequal>, <greater>, <greaterequal> (values in the variable's datatype;
versions compare part by part, 1.9 < 1.9.1 < 1.10), and on strings
perfbase's <regexp> (found in the value) and <match> (SQL LIKE), combined by
boolean="and" (the default) or "or"; several filters of one parameter
must all hold (boolean="or" on the <parameter>: one of them; on the
<source>: the filters of one of its parameters, --where still all).  A list is <filter boolean="or"> with several
<equal>, a range <filter> with <greaterequal> and <lessequal>.  A <run>
selects runs by index, by the date they were filed (created) or
performed (perfbase's <performed>, its <from> and <to> inclusive, dates as
<date><day/><month/><year/></date> or text) and by a regexp found in their
synopsis; its conditions must all hold (boolean="or": one of them); a
source takes the runs of any of its <run> elements (perfbase's), and
mask="exclude" selects the runs they do not match.  Deleted runs are never
queried.

On the command line (psbase query --file), --where NAME=VALUE adds a filter
and --sweep NAME a sweep over all values to every source.

A sweep (<sweep/> in a parameter) runs the query once per distinct value of
the parameter in the selected runs, or once per <filter> given inside
<sweep>.  Operators and combiners work on each sweep value separately; an
output puts all of them in one table (one value column per sweep value: one
line or bar series each).  Two swept parameters give every combination.

Where the paper is silent, psbase chooses (perfbase's own DTD as a guide):
  * The vector of a source: its keys are the parameters it names except
    those fixed to one value (a filter of a single <equal>, or the sweep
    value), which become notes of the table; its values are the results.
    As in perfbase, a parameter that occurs once per run and is filtered
    (to a list, a range) is no key either (a note gives its filter), and
    show= decides where given: "data" or "all" a key, "filter" or
    "title" a note, "nothing" neither.
  * Element-wise operators and combiners match rows by equal key values
    (perfbase's match="parameter"); a vector without keys (a reduction)
    is matched with every row.  Rows missing from an input are left out
    by operators and left empty by combiners.
  * diff = a - b, div = a / b, percentof = 100 * a / b, above =
    100 * (a - b) / b (percent a is above b), below = 100 * (b - a) / b.
  * quantile takes value= as a fraction in [0, 1] (linear interpolation)
    or, above 1, in percent as perfbase does (its empirical quantile: the
    value at place ceil(n * value / 100) of the sorted values; variant=
    "upper" sorts them descending); median is perfbase's, the lower of
    the two middle values of an even count;
    variance and stddev are the sample ones (n - 1); avg gives the
    standard deviation as the error of its values, scale scales it, offset
    keeps it, other operators give none.
  * perfbase's row operators: sort (the rows of its inputs ordered by
    the columns value= names, parameters or results, else by the first
    parameter; variant ascending, descending or none; stable), an
    operator without type= (null: the rows of its inputs passed on),
    limit and abslimit (the rows whose option= value, else the first
    result, passes variant= less, lessequal, equal, notequal,
    greaterequal or greater than value=), normalize (each value column
    shifted, variant="offset", or scaled, "scale", so that its first
    value becomes value=, 0 or 1 without it), runindex (each row's value
    made the index of the run it comes from: a min's or max's the run of
    its value, other aggregates' -1), param value="P" (runindex's run
    indexes made the values of parameter P, which occurs once, in those
    runs), slice value="[a:b]" (the rows of the runs, in filing order,
    that Python's slice a:b of its input's runs spans), latest ([-1:])
    and oldest ([:1]).  scope="run" on a statistic or a reduction of one
    input reduces each run's rows to one row (no keys), not the rows with
    equal keys or the whole vector.
  * distrib (perfbase's): the values of one parameter set counted into
    bins of width value= (else a hundredth of their range), variant
    absolute, normalized (percent), cumulative or nonzero (a row per
    value); option="samples" adds a note with their number.  frequency:
    the rows per interval value= of the first parameter, per unit of it.
    scale value="Mega" (perfbase's named factors, "1/Mega" divides) also
    moves the unit's prefix (s: us).
  * <fixed id="f"><content>1.24</content></fixed> defines a value that
    filter conditions, run indexes and dates, value= and <filename>
    give as f (the whole text); titles and file names also as "(f)"
    inside theirs.  query -f f=VALUE overrides it (or defines it).
  * eval's <term> is arithmetic (numbers, + - * / ** and abs min max sqrt
    exp log log10) over the ids of its inputs, each an input of one value
    column; it is parsed, never passed to Python's eval.  perfbase's XML
    <term id="f"> (fraction, product, sum, difference, function, variable,
    constant) is taken too: <variable name="N">input</variable> reads the
    parameter or result N of that input, a <constant> is a number, e, pi or
    a <fixed> id; the column is named f(N,...).
  * An element's inputs are elements defined before it: the file order is
    the order of evaluation, and no cycle can be written.
  * <input sweep_resolve="intern"> of an operator (perfbase's): each sweep
    value of that input is an input of its own, e.g. a diff of the two
    values of one swept input.
  * The modes (paper, 3.3.2): a statistic or reduction with one input
    that is a source aggregates the rows with equal keys (data-set
    aggregation); with one input from another element it reduces the
    whole vector to one row; min, max, sum and prod over several inputs
    work element-wise.  scale, offset and eval work row by row (one input:
    its rows as they are, a source's repetitions too).
  * An operator's value column is named after its input ("B_scatter
    max"), or alias="..."; eval's after its id.  unit="..." gives the
    unit of eval and of a scale (a scale without one has none).
  * A source leaves out runs without any of its results.
  * Output formats are those of psuite.psbase.output (text, csv, json,
    gnuplot, png, svg, html), or perfbase's target="raw_text" (text) and
    target="gnuplot" (its data and script; with format="png", png); text,
    csv and json without a <filename> go to standard output, the others
    need one.  type= is the chart kind: auto, bar or line (perfbase's bars
    and graphs are taken too).  Files are written relative to the current
    directory.  Several inputs of an output are matched by keys like a
    combiner's.

A malformed file is one UsageError line naming the file, the element and
its line, and the fix."""

from __future__ import annotations

import ast
import datetime as _dt
import math
import re
from dataclasses import dataclass, field

import regex
from lxml import etree

from psuite.cli_common import read_input
from psuite.errors import UsageError
from psuite.psbase import arith
from psuite.psbase.model import INT64_MAX

STATISTICS = ("avg", "stddev", "variance", "count", "median", "quantile")  # exactly one input
REDUCTIONS = ("min", "max", "sum", "prod")  # one input, or element-wise over several
LINEAR = ("scale", "offset")  # value=, any number of inputs
BINARY = ("diff", "div", "percentof", "above", "below")  # exactly two inputs
PASSING = ("null", "sort")  # any number of inputs, their rows passed on (sort: reordered)
LIMITS = ("limit", "abslimit")  # one input, the rows whose value passes a condition
LIMIT_VARIANTS = {"less": "<", "lessequal": "<=", "equal": "=", "notequal": "!=", "greaterequal": ">=", "greater": ">"}
SORT_VARIANTS = ("ascending", "descending", "none")
SLICES = ("slice", "latest", "oldest")  # one input, the rows of some of its runs
RUNS = ("runindex", "param")  # one input: the run index of each row; the value of a parameter in that run
DISTRIBUTIONS = ("distrib", "frequency")  # one input of one value column, made into a histogram or a rate
DISTRIB_VARIANTS = ("absolute", "normalized", "cumulative", "nonzero")
OPERATORS = (*STATISTICS, *REDUCTIONS, "eval", *LINEAR, *BINARY, *PASSING, *LIMITS, "normalize", *RUNS, *SLICES,
             *DISTRIBUTIONS)
# perfbase's scale factors by name (value="Mega"; "1/Mega" divides): the factor, and the unit prefix it
# takes away from the values' unit (s * 1e6: us)
SCALE_NAMES = {"Kilo": 1e3, "Mega": 1e6, "Giga": 1e9, "Tera": 1e12, "Peta": 1e15, "milli": 1e-3, "micro": 1e-6,
               "nano": 1e-9, "pico": 1e-12, "femto": 1e-15, "Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3,
               "Ti": 1024.0**4, "Pi": 1024.0**5}
CONDITIONS = ("equal", "notequal", "lesser", "lessequal", "greater", "greaterequal", "regexp", "match")
TEXT_CONDITIONS = ("regexp", "match")  # perfbase's conditions on strings: a regexp found in it, an SQL LIKE
REGEXP_SECONDS = 2.0  # the most one <regexp> may take on one value: query files come from other people too
FORMATS = ("text", "csv", "json", "gnuplot", "png", "svg", "html")
PERFBASE_FORMATS = ("pbtext", "pbxml", "pbgnuplot", "pbopendoc")  # perfbase's targets rendered as perfbase wrote them
# (raw_text, xml, gnuplot: its command file)
STDOUT_FORMATS = ("text", "csv", "json")
KINDS = ("auto", "bar", "line")  # psuite.psbase.output's chart kinds
_KIND_ALIASES = {"bars": "bar", "boxes": "bar", "lines": "line", "graphs": "line"}  # perfbase's names
TERM_FUNCTIONS = ("abs", "min", "max", "sqrt", "exp", "log", "log10")
# perfbase's <function type=...> of an XML <term>: name -> number of <argument>s (its pb_valid_funcs)
XML_FUNCTIONS = {"abs": 1, "fabs": 1, "min": 2, "max": 2, "sqrt": 1, "exp": 1, "log": 1, "log10": 1, "floor": 1,
                 "ceil": 1, "pow": 2, "sin": 1, "cos": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1, "atan2": 2,
                 "sinh": 1, "cosh": 1, "tanh": 1, "hypot": 2}
_XML_TERMS = ("fraction", "product", "sum", "difference", "function", "variable", "constant")


@dataclass
class Filter:
    """One <filter>: conditions (op, value text) joined by boolean."""

    conditions: list[tuple[str, str]]
    boolean: str = "and"
    command_line: bool = False  # from --where, not from the file

    def single_value(self) -> str | None:
        """The value if the filter fixes exactly one value (one <equal>)."""
        if len(self.conditions) == 1 and self.conditions[0][0] == "equal":
            return self.conditions[0][1]
        return None


@dataclass
class ParamSel:
    """A <parameter>: the variable, its filters, and a sweep (None: no sweep;
    []: over all its values; else one instance per filter)."""

    name: str
    filters: list[Filter] = field(default_factory=list)
    sweep: list[Filter] | None = None
    line: int = 0
    boolean: str = "and"  # how its filters combine (perfbase's boolean= of <parameter>)
    show: str = "auto"  # perfbase's show=: data or all make it a key, filter, title or nothing never
    alias: str = ""  # perfbase's <value alias=...>: its label in perfbase's outputs
    style: str = "full"  # perfbase's style=: how a filter shows it ("full": NAME = VALUE, "content": VALUE, ...)


@dataclass
class RunSel:
    """A <run>: index ranges (lo, hi; None open), a created-date window."""

    ranges: list[tuple[int | None, int | None]] = field(default_factory=list)
    created_from: _dt.datetime | None = None
    created_to: _dt.datetime | None = None  # exclusive
    exclude: bool = False
    line: int = 0
    # perfbase's <performed> window (from and to inclusive) and <synopsis> regexps (any of them)
    performed_from: _dt.datetime | None = None
    performed_to: _dt.datetime | None = None
    synopsis: list[str] = field(default_factory=list)
    boolean: str = "and"  # perfbase's boolean=: a run passes all its conditions, or ("or") one of them
    id: str = ""
    singles: list[int] = field(default_factory=list)  # the indices given one by one (perfbase warns of a missing one)


@dataclass
class Element:
    id: str
    inputs: list[str]
    line: int


@dataclass
class Source(Element):
    results: list[str] = field(default_factory=list)
    boolean: str = "and"  # how the filters of its parameters combine (perfbase's boolean= of <source>)
    params: list[ParamSel] = field(default_factory=list)
    runs: list[RunSel] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # perfbase's <result alias=...>: labels in its outputs
    chronology: str = "created"  # perfbase's run order of the source: by the date runs were filed or performed
    order: str = "ascending"  # perfbase's order of the rows of each run: by the first parameter, or as filed (keep)


@dataclass
class Operator(Element):
    type: str = "avg"
    value: float | None = None
    term: ast.Expression | None = None
    term_text: str = ""
    alias: str = ""  # the name of the value column it makes (else derived from its inputs)
    unit: str | None = None  # eval: the unit of the result
    variant: str = ""  # limit: the comparison; sort: ascending, descending or none; normalize: offset or scale
    sort_by: list[str] = field(default_factory=list)  # sort: the columns (value=); limit: the one compared (option=)
    slice: str = ""  # slice: [a:b] over the runs of its input, in filing order
    parameter: str = ""  # param: the parameter (value=)
    per_run: bool = False  # scope="run": a statistic or reduction of one input per run, not of the whole
    term_id: str = ""  # the id of perfbase's XML <term> (its synopsis of the column)
    match: str = "parameter"  # perfbase's match=: several inputs' rows paired by equal parameters, or by "index"
    scale_name: str = ""  # scale by a named factor (perfbase's value="Mega"): its unit changes with it
    samples_note: bool = False  # distrib option="samples": a note with the number of samples
    # perfbase's <input sweep_resolve="intern">: inputs whose sweep instances become inputs of their own
    intern: list[str] = field(default_factory=list)
    # an XML <term>'s variables: symbol in the term -> (input id, the column of that input it names)
    term_vars: dict[str, tuple[str, str]] = field(default_factory=dict)
    # perfbase's <input label="ignore|explicit" labeltext=...> of the first input: its columns' labels
    # kept ("ignore") or the text given, instead of the operator's own ("auto")
    label: tuple[str, str] = ("auto", "")


@dataclass
class Combiner(Element):
    # perfbase's <omit input="id">NAME</omit>: columns left out of the combination ("": from every input)
    omit: list[tuple[str, str]] = field(default_factory=list)
    # perfbase's <input sweep_resolve="intern">: inputs whose sweep instances are combined side by side
    intern: list[str] = field(default_factory=list)
    datasets: str = "merge"  # perfbase's datasets=: side by side ("merge"), or one after the other ("append")
    sweep_group: str = ""  # perfbase's sweep_group=: the swept <parameter> id whose instances it combines by value
    parameters: str = "unique"  # perfbase's parameters=: each input's parameters ("all"), a name once, or "none"
    mkparam: bool = False  # perfbase's mkparam="yes": without parameters, the first result becomes the parameter


@dataclass
class Output(Element):
    format: str = "text"
    filename: str | None = None
    kind: str = "auto"
    title: str = ""
    options: list[str] = field(default_factory=list)  # perfbase's <option>: settings for the plotting target
    # perfbase's target="gnuplot": the attributes of the <output>, of its <input>s (by id) and <filename unify=>
    pb_attrs: dict[str, str] = field(default_factory=dict)
    pb_inputs: dict[str, dict[str, str]] = field(default_factory=dict)
    unify: str = "no"


@dataclass
class QueryFile:
    path: str
    experiment: str
    elements: dict[str, Element] = field(default_factory=dict)  # in file order: the order of evaluation
    outputs: list[Output] = field(default_factory=list)
    sweep_ids: dict[str, str] = field(default_factory=dict)  # a swept variable's <parameter id> (perfbase's labels)


def _dates(path: str, elem: etree._Element, start, end) -> tuple:
    """A <created> or <performed> of a <run>: its <from> and <to> read by start and end (None: not given)."""
    _check_children(path, elem, ("from", "to"))
    found = {d.tag: (start if d.tag == "from" else end)(d) for d in elem}
    if not found:
        raise _fail(path, elem, "give <from> and/or <to> dates")
    return found.get("from"), found.get("to")


def _fail(path: str, elem: etree._Element | None, problem: str) -> UsageError:
    where = f"<{elem.tag}> (line {elem.sourceline})" if elem is not None else "query file"
    return UsageError(f"{path}: {where}: {problem}")


def _text(path: str, elem: etree._Element) -> str:
    text = (elem.text or "").strip()
    if not text:
        raise _fail(path, elem, "is empty; give its content")
    return text


def _one(path: str, elem: etree._Element, tags: tuple[str, ...], required: bool = True) -> str | None:
    found = [c for c in elem if c.tag in tags]
    if len(found) > 1:
        raise _fail(path, found[1], f"a second <{found[1].tag}>; give one")
    if not found:
        if required:
            raise _fail(path, elem, f"<{tags[0]}> is missing; add it")
        return None
    return _text(path, found[0])


def _check_children(path: str, elem: etree._Element, allowed: tuple[str, ...]) -> None:
    for c in elem:
        if c.tag not in allowed:
            raise _fail(path, c, f"not allowed in <{elem.tag}>; use {', '.join(f'<{a}>' for a in allowed)}")


def _choice(path: str, elem: etree._Element, attr: str, choices: tuple[str, ...], default: str) -> str:
    value = elem.get(attr, default)
    if value not in choices:
        raise _fail(path, elem, f"{attr}={value!r} is not one of {', '.join(choices)}")
    return value


def _id(path: str, elem: etree._Element, known: dict[str, object]) -> str:
    ident = (elem.get("id") or "").strip()
    if not ident:
        raise _fail(path, elem, "id= is missing; give the element an id that later elements name as <input>")
    if ident in known:
        raise _fail(path, elem, f"id {ident!r} is used twice; give each element its own id")
    return ident


def parse_fixed(items: list[str]) -> dict[str, str]:
    """query -f NAME=VALUE items (perfbase's --fixed): the content per <fixed> id."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"-f {item!r}: write NAME=VALUE, NAME the id of a <fixed> of the query, e.g. -f f.scale=4")
        out[name.strip()] = value.strip()
    return out


# where perfbase (pb_common.mk_label and its callers) puts a <fixed> value: text that is a fixed id
# as a whole is replaced by its content; labels also take "(id)" anywhere in them
_FIXED_TEXT = (*CONDITIONS, "index", "from", "to", "filename", "constant", "synopsis")
_FIXED_ATTRIBUTES = ("value", "title")


def _apply_fixed(path: str, root: etree._Element, overrides: dict[str, str]) -> None:
    """Replace the uses of <fixed> values (and of -f NAME=VALUE, which override them) in the tree."""
    values: dict[str, str] = {}
    for elem in root.findall("fixed"):
        ident = (elem.get("id") or "").strip()
        if not ident:
            raise _fail(path, elem, "id= is missing; give the fixed value an id that other elements name")
        _check_children(path, elem, ("content", "synopsis", "description"))
        content = elem.findtext("content")
        if content is None or not content.strip():
            raise _fail(path, elem, "<content> is missing or empty; give the value, e.g. <content>1.24</content>")
        values[ident] = content.strip()
    values.update(overrides)
    if not values:
        return

    def put(text: str, labels: bool) -> str:
        if text.strip() in values:
            return values[text.strip()]
        if labels:
            for ident, content in values.items():
                text = text.replace(f"({ident})", content)
        return text

    for elem in root.iter(*_FIXED_TEXT):
        if elem.text is not None:
            elem.text = put(elem.text, labels=elem.tag == "filename")
    for elem in root.iter():
        for attr in _FIXED_ATTRIBUTES:
            if elem.get(attr) is not None:
                elem.set(attr, put(elem.get(attr), labels=True))


def parse(path: str, fixed: dict[str, str] | None = None) -> QueryFile:
    """Read a query file; a malformed one is a one-line UsageError.  fixed:
    contents of <fixed> values by id (query -f NAME=VALUE), over the file's."""
    data = read_input(path, "query file")  # a regular file only: a FIFO or /dev/zero would never end
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, load_dtd=False, remove_comments=True, remove_pis=True
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise UsageError(f"{path}: not well-formed XML ({exc}); fix the query file") from None
    if root.tag != "query":
        raise _fail(path, root, "the root element of a query file must be <query>")
    _apply_fixed(path, root, fixed or {})
    experiment = _one(path, root, ("experiment",), required=False)
    if experiment is None:
        raise _fail(
            path, root, "<experiment> is missing; name the experiment queried, e.g. <experiment>b_eff_io</experiment>"
        )
    q = QueryFile(path, experiment)
    shared: dict[str, ParamSel | RunSel] = {}  # top-level <parameter> and <run> by id
    for elem in root:
        tag = elem.tag
        if tag in ("experiment", "synopsis", "description", "fixed"):
            continue
        if tag in ("parameter", "run"):
            ident = _id(path, elem, {**shared, **q.elements})
            shared[ident] = _param(path, elem) if tag == "parameter" else _run(path, elem, ident)
            if isinstance(shared[ident], ParamSel) and shared[ident].sweep is not None:
                q.sweep_ids[shared[ident].name] = ident
        elif tag == "source":
            q.elements[_id(path, elem, {**shared, **q.elements})] = _source(path, elem, shared, q)
        elif tag == "operator":
            q.elements[_id(path, elem, {**shared, **q.elements})] = _operator(path, elem, q)
        elif tag == "combiner":
            q.elements[_id(path, elem, {**shared, **q.elements})] = _combiner(path, elem, q)
        elif tag == "output":
            q.outputs.append(_output(path, elem, q))
        else:
            raise _fail(
                path,
                elem,
                "unknown element; use experiment, synopsis, description, fixed, parameter, run, "
                "source, operator, combiner or output",
            )
    if not q.outputs:
        raise _fail(path, root, "no <output>; add one naming the element to show as its <input>")
    return q


def _inputs(path: str, elem: etree._Element, q: QueryFile) -> list[str]:
    """The <input> ids of an operator, combiner or output: earlier elements."""
    out = []
    for c in elem.findall("input"):
        ref = _text(path, c)
        if ref not in q.elements:
            earlier = ", ".join(q.elements) or "none yet"
            raise _fail(
                path,
                c,
                f"{ref!r} is not a source, operator or combiner defined before it "
                f"(defined before: {earlier}); name one of those or move the element up",
            )
        out.append(ref)
    if not out:
        raise _fail(path, elem, "no <input>; name the element it takes, e.g. <input>src</input>")
    return out


def _combiner(path: str, elem: etree._Element, q: QueryFile) -> Combiner:
    """A <combiner>: its inputs side by side (perfbase's: one input, e.g. a swept one, passes
    through, its sweep instances side by side in an output), less the <omit> columns."""
    _check_children(path, elem, ("input", "omit"))
    comb = Combiner(elem.get("id", ""), _inputs(path, elem, q), elem.sourceline)
    comb.intern = [i for c, i in zip(elem.findall("input"), comb.inputs, strict=True)
                   if c.get("sweep_resolve") == "intern"]
    comb.datasets = _choice(path, elem, "datasets", ("merge", "append"), "merge")
    comb.sweep_group = (elem.get("sweep_group") or "").strip()
    comb.parameters = _choice(path, elem, "parameters", ("all", "none", "unique"), "unique")
    comb.mkparam = _choice(path, elem, "mkparam", ("yes", "no"), "no") == "yes"
    for c in elem.findall("omit"):
        src = (c.get("input") or "").strip()
        if src and src not in comb.inputs:
            raise _fail(path, c, f"input={src!r} is not an <input> of the combiner; name one of "
                                 f"{', '.join(comb.inputs)} or drop input=")
        comb.omit.append((src, _text(path, c)))
    return comb


def _filter(path: str, elem: etree._Element) -> Filter:
    _check_children(path, elem, CONDITIONS)
    conds = [(c.tag, (c.text or "").strip()) for c in elem]
    for c, (op, text) in zip(elem, conds, strict=True):
        if op == "regexp":
            try:
                regex.compile(text)
            except regex.error as exc:
                raise _fail(path, c, f"{text!r} is not a regular expression ({exc}); fix it") from None
    if not conds:
        raise _fail(path, elem, f"an empty filter; give conditions: {', '.join(f'<{c}>' for c in CONDITIONS)}")
    return Filter(conds, _choice(path, elem, "boolean", ("and", "or"), "and"))


def _param(path: str, elem: etree._Element) -> ParamSel:
    _check_children(path, elem, ("value", "name", "filter", "sweep"))
    sel = ParamSel(_one(path, elem, ("value", "name")) or "", line=elem.sourceline,
                   boolean=_choice(path, elem, "boolean", ("and", "or"), "and").lower(),
                   show=_choice(path, elem, "show", ("auto", "data", "filter", "title", "all", "nothing"), "auto"),
                   style=(elem.get("style") or "full").strip())
    sel.alias = ((elem.find("value") if elem.find("value") is not None else elem).get("alias") or "").strip()
    for c in elem:
        if c.tag == "filter":
            sel.filters.append(_filter(path, c))
        elif c.tag == "sweep":
            if sel.sweep is not None:
                raise _fail(path, c, "a second <sweep>; give one (several filters inside it)")
            _check_children(path, c, ("filter",))
            sel.sweep = [_filter(path, f) for f in c]
    return sel


_RANGE = re.compile(r"^(?:(\d+)|(\d+)\s*-\s*(\d+)|\.\.\.\s*(\d+)|(\d+)\s*\.\.\.)$")


def _when(path: str, elem: etree._Element, end: bool) -> _dt.datetime:
    text = _text(path, elem)
    try:
        if re.fullmatch(r"\d{4}-\d\d-\d\d", text):
            day = _dt.date.fromisoformat(text)
            return _dt.datetime.combine(day + _dt.timedelta(days=1) if end else day, _dt.time())
        when = _dt.datetime.fromisoformat(text)
    except ValueError:
        raise _fail(path, elem, f"{text!r} is not a date; write YYYY-MM-DD or YYYY-MM-DD HH:MM[:SS]") from None
    if when.tzinfo is not None:  # runs are filed in UTC (store._now)
        when = when.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return when + _dt.timedelta(microseconds=1) if end else when


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _month(text: str) -> int:
    """A month by its name or its first three letters (perfbase's), 1-12; ValueError if none."""
    names = [_dt.date(2000, m, 1).strftime("%B").lower() for m in range(1, 13)]
    low = text.lower()
    if low in _MONTHS:
        return _MONTHS.index(low) + 1
    return names.index(low) + 1


def _stamp(path: str, elem: etree._Element, end: bool) -> _dt.datetime:
    """A <from> or <to> of perfbase's <performed> (or <created>): its <date> (<day>, <month> as 1-12 or a
    name, <year>; missing parts the first or last of the range, a two-digit year 19xx from 70 on, else
    20xx) and <time> (<hour>, <minute>, <second>), or a date as text (ISO)."""
    date, time = elem.find("date"), elem.find("time")
    if date is None and time is None:
        return _when(path, elem, end)
    _check_children(path, elem, ("date", "time"))
    today = _dt.date.today()
    day, month, year = 1 if not end else 31, 1 if not end else 12, today.year
    try:
        if date is not None:
            _check_children(path, date, ("day", "month", "year"))
            text = date.findtext("month")
            if text is not None:
                text = text.strip()
                month = int(text) if text.isdigit() else _month(text)
            if date.findtext("year") is not None:
                year = int(date.findtext("year").strip())
                year += (1900 if year >= 70 else 2000) if len(date.findtext("year").strip()) <= 2 else 0
            if date.findtext("day") is not None:
                day = int(date.findtext("day").strip())
            if end and date.findtext("day") is None:  # the last day of the month
                day = ((_dt.date(year + month // 12, month % 12 + 1, 1)) - _dt.timedelta(days=1)).day
        clock = _dt.time()
        if time is not None:
            _check_children(path, time, ("hour", "minute", "second"))
            hour, minute = time.findtext("hour"), time.findtext("minute")
            if hour is None or minute is None:
                raise _fail(path, time, "give <hour> and <minute>")
            clock = _dt.time(int(hour), int(minute), int(time.findtext("second") or 0))
        return _dt.datetime.combine(_dt.date(year, month, day), clock)
    except (ValueError, TypeError):
        raise _fail(path, elem, "is not a date; give <day>, <month> (1-12 or Jan-Dec) and <year>") from None


def _run(path: str, elem: etree._Element, ident: str = "") -> RunSel:
    _check_children(path, elem, ("index", "created", "performed", "synopsis"))
    sel = RunSel(
        exclude=_choice(path, elem, "mask", ("include", "exclude"), "include") == "exclude", line=elem.sourceline,
        boolean=_choice(path, elem, "boolean", ("and", "or"), "and"), id=ident,
    )
    for c in elem:
        if c.tag == "synopsis":  # a regexp found in the run's synopsis
            text = _text(path, c)
            try:
                regex.compile(text)
            except regex.error as exc:
                raise _fail(path, c, f"{text!r} is not a regular expression ({exc}); fix it") from None
            sel.synopsis.append(text)
            continue
        if c.tag == "performed":  # perfbase's: from and to both inclusive
            sel.performed_from, sel.performed_to = _dates(path, c, lambda d: _stamp(path, d, end=False),
                                                          lambda d: _stamp(path, d, end=False))
            continue
        if c.tag == "index":
            for part in _text(path, c).split(","):
                m = _RANGE.match(part.strip())
                if not m:
                    raise _fail(path, c, f"{part.strip()!r} is not a run index or range; write 3, 3-7, ...7 or 3...")
                one, lo, hi, upto, start = m.groups()
                rng = (
                    (int(one), int(one))
                    if one
                    else (int(lo), int(hi))
                    if lo
                    else (None, int(upto))
                    if upto
                    else (int(start), None)
                )
                if any(x is not None and x > INT64_MAX for x in rng):
                    raise _fail(path, c, f"run index {part.strip()!r} is too large; runs are numbered from 1")
                if rng[0] is not None and rng[1] is not None and rng[1] < rng[0]:
                    raise _fail(path, c, f"run range {part.strip()!r} is empty; write the lower index first")
                sel.ranges.append(rng)
                if one:
                    sel.singles.append(int(one))
        else:
            sel.created_from, sel.created_to = _dates(path, c, lambda d: _when(path, d, end=False),
                                                      lambda d: _when(path, d, end=True))
    if not sel.ranges and sel.created_from is None and sel.created_to is None and not sel.synopsis and \
            sel.performed_from is None and sel.performed_to is None:
        raise _fail(path, elem, "selects nothing; give <index>, <created>, <performed> or <synopsis>")
    return sel


def _source(path: str, elem: etree._Element, shared: dict[str, ParamSel | RunSel], q: QueryFile) -> Source:
    _check_children(path, elem, ("result", "parameter", "run", "input"))
    src = Source(elem.get("id", ""), [], elem.sourceline,
                 boolean=_choice(path, elem, "boolean", ("and", "or", "AND", "OR"), "and").lower(),
                 chronology=_choice(path, elem, "chronology", ("created", "performed"), "created"),
                 order=_choice(path, elem, "order", ("keep", "ascending", "descending"), "ascending"))
    for c in elem:
        if c.tag == "result":
            src.results.append(_text(path, c))
            if (c.get("alias") or "").strip():
                src.aliases[src.results[-1]] = c.get("alias").strip()
        elif c.tag == "parameter":
            src.params.append(_param(path, c))
        elif c.tag == "run":
            src.runs.append(_run(path, c, (c.get("id") or "").strip()))
        else:
            ref = _text(path, c)
            sel = shared.get(ref)
            if sel is None:
                known = ", ".join(shared) or "none"
                raise _fail(
                    path,
                    c,
                    f"{ref!r} is not a <parameter> or <run> defined before it (defined: {known}); "
                    "a source's <input> names those, or move their definition up",
                )
            (src.params if isinstance(sel, ParamSel) else src.runs).append(sel)
    if not src.results:
        raise _fail(path, elem, "no <result>; name the result values the source gives")
    names = [p.name for p in src.params]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup:
        raise _fail(path, elem, f"parameter {dup!r} is selected twice; put its filters in one <parameter>")
    return src


def _number(path: str, elem: etree._Element, what: str) -> float:
    text = elem.get("value")
    if text is None:
        raise _fail(path, elem, f"value= is missing; give {what}")
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value != value or value in (float("inf"), float("-inf")):
        raise _fail(path, elem, f"value={text!r} is not a number; give {what}")
    return value


def _operator(path: str, elem: etree._Element, q: QueryFile) -> Operator:
    _check_children(path, elem, ("input", "term"))
    ident = elem.get("id", "")
    kind = elem.get("type") or "null"  # perfbase: an operator without a type passes its inputs on
    if kind not in OPERATORS:
        raise _fail(path, elem, f"type={kind!r} is not an operator; use one of {', '.join(OPERATORS)}")
    op = Operator(
        ident,
        _inputs(path, elem, q),
        elem.sourceline,
        type=kind,
        alias=(elem.get("alias") or "").strip(),
        unit=elem.get("unit"),
    )
    op.intern = [i for c, i in zip(elem.findall("input"), op.inputs, strict=True)
                 if c.get("sweep_resolve") == "intern"]
    first = elem.find("input")
    if first is not None:
        op.label = ((first.get("label") or "auto").strip(), (first.get("labeltext") or "").strip())
    n = len(op.inputs)
    op.per_run = _choice(path, elem, "scope", ("global", "run"), "global") == "run"
    op.match = _choice(path, elem, "match", ("parameter", "index", "modulo"), "parameter")
    if op.match == "modulo" and len(op.inputs) != 2:  # perfbase's round-robin pairing of two vectors
        raise _fail(path, elem, f'match="modulo" pairs exactly two <input>s (it has {len(op.inputs)}); give two')
    if op.per_run and not (kind in STATISTICS or (kind in REDUCTIONS and n == 1)):
        raise _fail(path, elem, f'scope="run" is for a statistic or a reduction of one input, not {kind}; remove it')
    if kind in (*STATISTICS, *LIMITS, "normalize", *RUNS, *SLICES, *DISTRIBUTIONS) and n != 1:
        raise _fail(
            path,
            elem,
            f"{kind} takes exactly one <input> (it has {n}); combine vectors with element-wise operators first",
        )
    if kind in BINARY and n != 2 and not op.intern:  # an intern input counts once per sweep value
        raise _fail(path, elem, f"{kind} takes exactly two <input> elements (it has {n}): a, then b")
    named = (elem.get("value") or "").strip()
    if kind == "scale" and named.removeprefix("1/") in SCALE_NAMES:
        op.scale_name = named
        factor = SCALE_NAMES[named.removeprefix("1/")]
        op.value = 1 / factor if named.startswith("1/") else factor
    elif kind in LINEAR:
        op.value = _number(path, elem, "the factor" if kind == "scale" else "the summand")
    elif kind in DISTRIBUTIONS:
        what = "the bin width" if kind == "distrib" else "the interval width"
        op.value = _number(path, elem, what) if elem.get("value") is not None else None
        if op.value is not None and op.value <= 0:
            raise _fail(path, elem, f"value={elem.get('value')} is not positive; give {what}")
        variants = DISTRIB_VARIANTS if kind == "distrib" else ("relative", "absolute")
        op.variant = _choice(path, elem, "variant", variants, variants[0])
        if kind == "distrib":
            op.samples_note = _choice(path, elem, "option", ("none", "samples"), "none") == "samples"
    elif kind == "quantile":
        op.value = _number(path, elem, "the quantile as a fraction in [0, 1] or in percent up to 100, e.g. 0.9 or 90")
        if not 0 <= op.value <= 100:
            raise _fail(
                path, elem, f"value={elem.get('value')} is outside [0, 100]; give the quantile as a fraction or percent"
            )
        op.variant = _choice(path, elem, "variant", ("lower", "upper"), "lower")
    elif kind in LIMITS:
        if elem.get("variant") is None:
            raise _fail(path, elem, f"variant= is missing; give the comparison: {', '.join(LIMIT_VARIANTS)}")
        op.variant = _choice(path, elem, "variant", tuple(LIMIT_VARIANTS), "")
        op.value = _number(path, elem, "the limit the values are compared with")
        op.sort_by = [(elem.get("option") or "").strip()] if (elem.get("option") or "").strip() else []
    elif kind == "normalize":
        op.variant = _choice(path, elem, "variant", ("offset", "scale"), "offset")  # perfbase's default
        op.value = _number(path, elem, "the value the first one becomes") if elem.get("value") is not None else None
    elif kind == "param":
        op.parameter = (elem.get("value") or "").strip()
        if not op.parameter:
            raise _fail(path, elem, "value= is missing; give the parameter whose value in each row's run it gives")
    elif kind == "slice":
        op.slice = (elem.get("value") or "[:]").strip()
        m = re.fullmatch(r"\[(-?\d*):(-?\d*)\]", op.slice)
        if m is None:
            raise _fail(path, elem, f"value={op.slice!r} is not a slice; write [a:b] as in Python, e.g. [-1:] or [0:2]")
        if any(x and abs(int(x)) > INT64_MAX for x in m.groups()):
            raise _fail(path, elem, f"value={op.slice!r}: a run position out of range")
    elif kind == "sort":
        op.variant = _choice(path, elem, "variant", SORT_VARIANTS, "ascending")
        op.sort_by = [n for n in (elem.get("value") or "").replace(",", " ").split()]
    elif elem.get("value") is not None:
        raise _fail(path, elem, f"{kind} takes no value=; remove it")
    if kind not in (*LIMITS, "normalize", "sort", "quantile", *DISTRIBUTIONS) and elem.get("variant") is not None:
        raise _fail(path, elem, f"{kind} takes no variant=; remove it")
    xml_term = next((c for c in elem if c.tag == "term" and len(c)), None)
    if xml_term is not None and kind == "eval":  # perfbase's term: an XML tree of its arithmetic
        if len(elem.findall("term")) > 1:
            raise _fail(path, elem.findall("term")[1], "a second <term>; give one")
        text = _xml_term(path, xml_term, op)
        op.term, op.term_text = _term(path, xml_term, text, [*op.inputs, *op.term_vars]), text
        op.term_id = (xml_term.get("id") or "").strip()
        if xml_term.get("id") and not op.alias:  # perfbase names the column after the term's id
            scalar = {f"{v.get('name', '')}@{(v.text or '').strip()}" for v in xml_term.iter("variable")
                      if v.get("type") == "scalar"}  # perfbase leaves a scalar out of the name
            names = _py2_dict_order([f"{n}@{i}" for i, n in op.term_vars.values() if f"{n}@{i}" not in scalar])
            op.alias = f"{xml_term.get('id')}({','.join(k.split('@')[0] for k in names)})"
        op.unit = op.unit if op.unit is not None else xml_term.get("unit")
        return op
    term = _one(path, elem, ("term",), required=kind == "eval")
    if term is not None and kind != "eval":
        raise _fail(path, elem, 'only type="eval" takes a <term>; remove it')
    if term is not None:
        op.term, op.term_text = _term(path, elem, term, op.inputs), term
    return op


TERM_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)


def _py2_hash(text: str) -> int:
    """Python 2's hash of a str on 64 bits (no randomization), which orders its dicts."""
    if not text:
        return 0
    x = ord(text[0]) << 7
    for ch in text:
        x = ((1000003 * x) ^ ord(ch)) & (2**64 - 1)
    x ^= len(text)
    return x  # as size_t: the probing below uses it unsigned


def _py2_dict_order(keys: list[str]) -> list[str]:
    """The order in which a Python 2 dict of these keys (inserted in this order) lists them: perfbase
    names an eval's column after its dict of term variables.  Exact up to five keys (its 8-slot table);
    more keep their order."""
    if len(keys) > 5:
        return list(dict.fromkeys(keys))
    mask, slots = 7, {}
    for key in dict.fromkeys(keys):
        h = _py2_hash(key)
        i, perturb = h & mask, h
        while i & mask in slots:
            i = ((i << 2) + i + perturb + 1) & (2**64 - 1)
            perturb >>= 5
        slots[i & mask] = key
    return [slots[n] for n in sorted(slots)]


def _xml_term(path: str, elem: etree._Element, op: Operator) -> str:
    """perfbase's XML <term> (fraction, product, sum, difference, function, variable, constant) as the
    text of psbase's term; each <variable name="N">input</variable> becomes a symbol that op.term_vars
    maps to column N of that input."""
    parts = [c for c in elem if isinstance(c.tag, str)]
    if len(parts) != 1 or parts[0].tag not in _XML_TERMS:
        raise _fail(path, elem, f"give exactly one of {', '.join(f'<{t}>' for t in _XML_TERMS)}")
    node = parts[0]
    tag = node.tag

    def sub(child: str, many: bool = False) -> list[str]:
        found = [c for c in node if c.tag == child]
        if not found or (len(found) > 1 and not many):
            raise _fail(path, node, f"give {'one or more' if many else 'one'} <{child}>")
        return [f"({_xml_term(path, c, op)})" for c in found]

    if tag == "fraction":
        return "/".join(sub("dividend") + sub("divisor"))
    if tag == "difference":
        return "-".join(sub("minuend") + sub("subtrahend"))
    if tag == "product":
        return "*".join(sub("factor", many=True))
    if tag == "sum":
        return "+".join(sub("summand", many=True))
    if tag == "function":
        name = node.get("type", "")
        if name not in XML_FUNCTIONS:
            raise _fail(path, node, f"type={name!r} is not a function; use one of {', '.join(XML_FUNCTIONS)}")
        args = sub("argument", many=True)
        if len(args) != XML_FUNCTIONS[name]:
            raise _fail(path, node, f"{name} takes {XML_FUNCTIONS[name]} <argument>(s), not {len(args)}")
        return f"{name}({', '.join(args)})"
    if tag == "variable":
        src, name = _text(path, node), (node.get("name") or "").strip()
        if not name:
            raise _fail(path, node, "name= is missing; give the parameter or result of the input it reads")
        if src not in op.inputs:
            raise _fail(path, node, f"{src!r} is not an <input> of the operator; name one of {', '.join(op.inputs)}")
        symbol = next((s for s, v in op.term_vars.items() if v == (src, name)), f"_v{len(op.term_vars)}")
        op.term_vars[symbol] = (src, name)
        return symbol
    text = _text(path, node)  # a constant: a number (a <fixed> id was replaced by its content), e or pi
    if text in ("e", "pi"):
        return repr(getattr(math, text))
    try:
        float(text)
    except ValueError:
        raise _fail(path, node, f"{text!r} is no number, e, pi or <fixed> id; give one") from None
    return text


def _term(path: str, elem: etree._Element, text: str, inputs: list[str]) -> ast.Expression:
    """The term as a checked syntax tree: arithmetic over the input ids only."""
    try:
        tree = arith.check(text, TERM_OPERATORS, (*TERM_FUNCTIONS, *XML_FUNCTIONS), names="input ids")
    except ValueError as exc:
        raise _fail(path, elem, f"{exc}; fix it") from None
    for name in arith.names_in(tree):
        if name not in inputs:
            raise _fail(
                path,
                elem,
                f"term {text!r}: {name!r} is not one of its inputs "
                f"({', '.join(inputs)}); name inputs by their ids (ids usable in a term are "
                "letters, digits and _)",
            )
    return tree


def _output(path: str, elem: etree._Element, q: QueryFile) -> Output:
    _check_children(path, elem, ("input", "option", "filename"))
    ident = (elem.get("id") or "").strip() or f"output{len(q.outputs) + 1}"
    fmt = _format(path, elem)
    out = Output(
        ident,
        _inputs(path, elem, q),
        elem.sourceline,
        format=fmt,
        filename=_one(path, elem, ("filename",), required=False),
        # perfbase's gnuplot plot types (graphs, steps, bars, ...) are its renderer's, no psbase chart kind
        kind="auto" if fmt == "pbgnuplot" else _KIND_ALIASES.get(elem.get("type", ""), elem.get("type", "auto")),
        title=(elem.get("title") or "").strip(),
        options=[_text(path, c) for c in elem.findall("option")],
    )
    if out.format == "pbgnuplot":
        out.pb_attrs = dict(elem.attrib)
        out.pb_inputs = {_text(path, c): dict(c.attrib) for c in elem.findall("input")}
        fname = elem.find("filename")
        if fname is not None:
            out.unify = _choice(path, fname, "unify", ("no", "filter", "sweep", "fixed"), "no")
        _choice(path, elem, "format", ("screen", "ps", "eps", "pdf", "png"), "screen")
        _choice(path, elem, "dimensions", ("2", "3"), "2")
        _choice(path, elem, "color", ("yes", "no"), "yes")
        for attr in ("fontsize", "elements"):
            _choice(path, elem, attr, ("tiny", "small", "normal", "large", "huge"), "normal")
    if out.kind not in KINDS:
        raise _fail(path, elem, f"type={out.kind!r} is not a chart kind; use one of {', '.join(KINDS)}")
    if out.filename is None and out.format not in (*STDOUT_FORMATS, *PERFBASE_FORMATS):
        raise _fail(path, elem, f"format={out.format!r} writes a file; give <filename>")
    if out.kind != "auto" and out.format in STDOUT_FORMATS:
        raise _fail(
            path,
            elem,
            f"type={elem.get('type')!r} is a chart kind, and format={out.format!r} is no chart; "
            f"give format= one of {', '.join(f for f in FORMATS if f not in STDOUT_FORMATS)}, or drop type=",
        )
    return out


def _perfbase_doctype(elem: etree._Element) -> bool:
    """Whether the query file declares perfbase's DTD (<!DOCTYPE query SYSTEM ".../pb_query.dtd">):
    then an <output> without target= or format= is perfbase's raw_text, as perfbase reads it."""
    url = elem.getroottree().docinfo.system_url or ""
    return url.rsplit("/", 1)[-1] == "pb_query.dtd"


def _format(path: str, elem: etree._Element) -> str:
    """format= (psbase's), or perfbase's target= with its format= (raw_text:
    perfbase's text, whatever its format=, as perfbase ignores it; gnuplot:
    its command file as perfbase writes it, for every format=)."""
    target = elem.get("target")
    if target is None and elem.get("format") is None and _perfbase_doctype(elem):
        target = "raw_text"  # perfbase's default target, in a file that declares perfbase's DTD
    if target is None:
        return _choice(path, elem, "format", FORMATS, "text")
    fmt = elem.get("format", "screen")
    if target == "raw_text":
        return "pbtext"
    if target == "xml":
        return "pbxml"
    if target == "gnuplot":  # perfbase's command file, whatever the terminal (checked with the output)
        return "pbgnuplot"
    if target == "opendoc":  # perfbase's spreadsheet, NAME.ods
        return "pbopendoc"
    raise _fail(
        path,
        elem,
        f"target={target!r} format={fmt!r} (perfbase) is not supported; use target raw_text, xml, gnuplot or opendoc, "
        f"or psbase's format= alone: {', '.join(FORMATS)}",
    )
