"""A remapping specification applied to a CUBE experiment, as CubeLib's
cube_remap2 applies it (Score-P's share/scorep/scorep.spec is the one in
use; Score-P also stores it in every profile, as the tar member
"remapping.spec").

A specification is XML: an optional <doc><mirrors><murl>..</murl></mirrors>
</doc>, then <metrics> holding nested <metric> elements (attributes type =
EXCLUSIVE | INCLUSIVE | POSTDERIVED | PREDERIVED_EXCLUSIVE |
PREDERIVED_INCLUSIVE, viztype = NORMAL | GHOST; children disp_name,
uniq_name, dtype, uom, val, url, descr, cubepl, cubeplinit, cubeplaggr).
What cube_remap2 does with it, and so what remap does:

- the specification's metric tree becomes the experiment's, in its order;
- a metric the profile has (same unique name) gets the profile's values
  unless the specification makes it derived; the values are the profile's
  metric in the view the specification's type asks (exclusive or
  inclusive along the call tree); a derived metric of the profile named
  by a stored metric of the specification is evaluated and stored;
- a metric the specification names and the profile lacks is zero (a
  stored one) or evaluated from its CubePL (a derived one);
- a metric of the profile the specification does not name is kept, under
  its parent (by unique name), after the specification's metrics (a
  derived one with its CubePL, which cube_remap2 drops, leaving a derived
  metric without an expression);
- the <cubeplinit> programs run once, in order; a metric they set
  ("value", "VOID") - Score-P's spec voids MPI's metrics in an OpenMP
  profile, OpenMP's in an MPI one - is left out with its subtree, as a
  <val>VOID</val> is, unless the profile has the metric (cube_remap2 then
  takes the profile's value setting);
- the call tree and the system tree are the profile's, call path by call
  path and location by location; regions no call path enters are dropped;
  topologies are kept.

Not held by psuite's model, so not written: a metric's url and its GHOST
visibility (a ghost metric is written as a visible one)."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

import numpy as np

from psuite.analysis.algebra import called_regions
from psuite.errors import InputError, UsageError
from psuite.model.experiment import (
    DERIVED_KINDS,
    EXCLUSIVE,
    INCLUSIVE,
    Experiment,
    ExpressionError,
    Metric,
    derived_order,
)

EMBEDDED = "remapping.spec"  # the tar member Score-P stores its specification in
MAX_SPEC_BYTES = 16 << 20
_METRIC_TAGS = ("disp_name", "uniq_name", "dtype", "uom", "val", "url", "descr", "cubepl", "cubeplinit",
                "cubeplaggr", "metric")
# CubeLib's names of data types (CubeMetric.cpp is_*), as the model holds them
_DTYPES = {
    "INTEGER": "INT64", "SIGNED INTEGER": "INT64", "INT64": "INT64",
    "UINT64": "UINT64", "UNSIGNED INTEGER": "UINT64",
    "INT32": "INT32", "INT": "INT32", "SIGNED INT": "INT32", "UINT32": "UINT32", "UNSIGNED INT": "UINT32",
    "INT16": "INT16", "UINT16": "UINT16", "INT8": "INT8", "UINT8": "UINT8", "CHAR": "INT8",
    "DOUBLE": "DOUBLE", "FLOAT": "DOUBLE", "MINDOUBLE": "MINDOUBLE", "MAXDOUBLE": "MAXDOUBLE",
}


@dataclass
class SpecMetric:
    """One <metric> of a remapping specification."""

    metric: Metric
    val: str = ""  # CUBE's <val>: "VOID" leaves the metric (and its subtree) out
    ghost: bool = False
    convertible: bool = True  # convertible="false": stays derived under convert (cube_remap2 -d)
    children: list[int] = field(default_factory=list)


def parse_spec(text: bytes | str, source: str = "the specification") -> list[SpecMetric]:
    """The metric tree of a remapping specification, depth first (a parent
    before its children; Metric.parent indexes this list).  UsageError,
    one line, for what cube_remap2's parser refuses and for what psuite
    cannot evaluate."""
    from lxml import etree

    data = text.encode("utf-8") if isinstance(text, str) else text
    # a specification has two top-level elements (<doc>, <metrics>): parsed under one made-up root,
    # after the XML declaration, which may only open a document
    body = data.lstrip()
    if body.startswith(b"\xef\xbb\xbf"):
        body = body[3:].lstrip()
    if body.startswith(b"<?xml"):
        end = body.find(b"?>")
        body = body[end + 2:] if end >= 0 else body
    body, raw = _lift_cubepl(body)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        root = etree.fromstring(b"<remapping>" + body + b"</remapping>", parser)
    except etree.XMLSyntaxError as exc:
        if "Excessive depth" in str(exc):  # libxml2's bound without huge_tree: 256 levels
            raise UsageError(f"{source} nests its metrics deeper than 250 levels; give a shallower metric "
                             "tree") from None
        msg = str(exc).replace("\n", " ")
        raise UsageError(f"{source} is not a remapping specification (not well-formed XML: {msg}); give "
                         "a specification such as Score-P's share/scorep/scorep.spec") from None
    tops = [el for el in root if isinstance(el.tag, str)]
    if [el.tag for el in tops] not in (["metrics"], ["doc", "metrics"]):
        got = ", ".join(f"<{el.tag}>" for el in tops) or "no element"
        raise UsageError(f"{source} holds {got}; a remapping specification is an optional <doc> and one "
                         "<metrics> with the <metric> tree (as Score-P's share/scorep/scorep.spec)")
    metrics_el = tops[-1]
    out: list[SpecMetric] = []
    stack = [(el, None, raw) for el in reversed(_elements(metrics_el, source))]
    if not stack:
        raise UsageError(f"{source} names no metric (its <metrics> is empty); give at least one <metric> "
                         "with a <uniq_name>")
    seen: set[str] = set()
    while stack:
        el, parent, raw = stack.pop()
        if el.tag != "metric":
            raise UsageError(f"{source}: <{el.tag}> inside <metrics>; only <metric> elements go there")
        sm = _metric(el, parent, source, raw)
        if sm.metric.name in seen:
            raise UsageError(f"{source}: two metrics are named {sm.metric.name!r}; give each metric its own "
                             "<uniq_name>")
        seen.add(sm.metric.name)
        out.append(sm)
        index = len(out) - 1
        if parent is not None:
            out[parent].children.append(index)
        stack.extend((c, index, raw) for c in reversed([c for c in _elements(el, source) if c.tag == "metric"]))
    return out


def _elements(el, source: str) -> list:
    kids = [c for c in el if isinstance(c.tag, str)]  # comments and processing instructions pass
    stray = (el.text or "").strip() or next((c.tail.strip() for c in el if (c.tail or "").strip()), "")
    if stray and el.tag in ("metrics", "metric"):
        raise UsageError(f"{source}: text {stray[:40]!r} inside <{el.tag}>; put it in an element such as "
                         "<descr> or <cubepl>")
    return kids


_CUBEPL = re.compile(rb"(<(cubepl|cubeplinit|cubeplaggr)(?:\s[^>]*)?>)(.*?)(</\2\s*>)", re.S)
_ATTR = re.compile(rb"""([A-Za-z_]+)\s*=\s*["']?([A-Za-z0-9_]*)["']?""")
_LIFTED = re.compile(r"@psuite-cubepl-(\d+)@")


def _lift_cubepl(body: bytes) -> tuple[bytes, list[str]]:
    """CubePL in a specification is not XML (Score-P's holds `${i} < ...`):
    CubeLib's scanner takes the text of <cubepl>, <cubeplinit> and
    <cubeplaggr> raw up to the closing tag, then decodes XML's five
    entities.  Each such text is set aside here and a placeholder parsed."""
    raw: list[str] = []

    def lift(m: re.Match) -> bytes:
        raw.append(_from_xml(m.group(3).decode("utf-8", "replace")))
        # CubeLib writes and reads these tags' attributes unquoted (<cubeplaggr cubeplaggrtype=plus>)
        attrs = b"".join(b' %s="%s"' % (k, v) for k, v in _ATTR.findall(m.group(1)[len(m.group(2)) + 1:-1]))
        return b"<" + m.group(2) + attrs + b">" + f"@psuite-cubepl-{len(raw) - 1}@".encode() + m.group(4)

    return _CUBEPL.sub(lift, body), raw


def _from_xml(text: str) -> str:
    """CubeLib's services::escapeFromXML."""
    for entity, char in (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&")):
        text = text.replace(entity, char)
    return text


def _unlift(text: str, raw: list[str]) -> str:
    return _LIFTED.sub(lambda m: raw[int(m.group(1))], text)


def _metric(el, parent: int | None, source: str, raw: list[str]) -> SpecMetric:
    tags: dict[str, str] = {}
    operators: dict[str, str] = {}  # <cubeplaggr> by its type: plus, minus, aggr
    for child in _elements(el, source):
        if child.tag not in _METRIC_TAGS:
            raise UsageError(f"{source}: <{child.tag}> in a <metric>; a metric holds "
                             f"{', '.join('<' + t + '>' for t in _METRIC_TAGS)}")
        if child.tag == "metric":
            continue
        if child.tag == "cubeplaggr":  # one per type; CubeLib keeps the last of a type given twice
            kind_of = (child.get("cubeplaggrtype") or "").strip().lower()
            if kind_of not in ("plus", "minus", "aggr"):
                raise UsageError(f"{source}: a <cubeplaggr> of type {kind_of or 'none'!r}; its cubeplaggrtype is "
                                 "plus, minus or aggr")
            operators[kind_of] = _unlift(child.text or "", raw).strip()
            continue
        if child.tag in tags:
            raise UsageError(f"{source}: a <metric> with two <{child.tag}> elements (CubeLib refuses it); "
                             "keep one")
        if len(child):
            raise UsageError(f"{source}: <{child.tag}> holds elements; it holds text only")
        tags[child.tag] = _unlift(child.text or "", raw)
    name = tags.get("uniq_name", "").strip()
    if not name:
        raise UsageError(f"{source}: a <metric> without a <uniq_name> (after {tags.get('disp_name', '?')!r}); "
                         "give every metric its unique name")
    kind = (el.get("type") or "").strip()
    kind = {"": EXCLUSIVE, "DERIVED": "POSTDERIVED", "SIMPLE": EXCLUSIVE}.get(kind, kind)
    if kind not in (EXCLUSIVE, INCLUSIVE, *DERIVED_KINDS):
        kind = EXCLUSIVE  # CubeLib's Metric::get_type_of_metric: any other word is EXCLUSIVE
    raw_dtype = tags.get("dtype", "").strip().upper()
    dtype = _DTYPES.get(raw_dtype)
    if dtype is None:
        if raw_dtype and kind not in DERIVED_KINDS:
            raise UsageError(f"{source}: metric {name!r} has data type {raw_dtype!r}; psuite remaps metrics of "
                             "INTEGER, FLOAT, DOUBLE, MINDOUBLE, MAXDOUBLE and the (U)INT types")
        dtype = "DOUBLE"
    m = Metric(name, (tags.get("disp_name") or "").strip(), (tags.get("uom") or "").strip(), dtype, kind,
               (tags.get("descr") or "").strip(), parent)
    if kind in DERIVED_KINDS:
        m.expression = (tags.get("cubepl") or "").strip()
        m.init = (tags.get("cubeplinit") or "").strip()
        m.aggregation = {k: v for k, v in operators.items() if v}
        if not m.expression:
            raise UsageError(f"{source}: derived metric {name!r} ({kind}) has no <cubepl> expression; give one")
        _check_cubepl(m, source)
    elif tags.get("cubepl", "").strip() or tags.get("cubeplinit", "").strip() or operators:
        raise UsageError(f"{source}: metric {name!r} has CubePL but type {kind}; give it type=\"POSTDERIVED\", "
                         "\"PREDERIVED_EXCLUSIVE\" or \"PREDERIVED_INCLUSIVE\"")
    viz = (el.get("viztype") or "").strip().lower()
    convertible = (el.get("convertible") or "true").strip().lower() != "false"
    return SpecMetric(m, (tags.get("val") or "").strip(), viz == "ghost", convertible)


def _check_cubepl(m: Metric, source: str) -> None:
    from psuite.model.cubepl import aggregation, compiled

    programs = [("<cubepl>", m.expression, compiled), ("<cubeplinit>", m.init, compiled)]
    programs += [(f"<cubeplaggr> {k}", text, aggregation) for k, text in m.aggregation.items()]
    for what, text, parse in programs:
        if not text:
            continue
        try:
            parse(text)
        except ExpressionError as exc:
            raise UsageError(f"{source}: metric {m.name!r}: its {what} is not CubePL psuite evaluates "
                             f"({exc}); correct the expression") from None


def embedded_spec(path: str) -> bytes | None:
    """The specification a cube holds (Score-P stores its own as the tar
    member remapping.spec), or None."""
    from psuite.formats.readers import cube as reader

    try:
        with open(path, "rb") as raw:
            member = reader.members(raw).get(EMBEDDED)
            if member is None:
                return None
            if member.size > MAX_SPEC_BYTES:
                raise InputError(f"{path}: its {EMBEDDED} is larger than 16 MiB; give a specification with -r")
            return reader.member_bytes(raw, member)
    except (InputError, UsageError):
        raise
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc}); check the file") from None
    except Exception:  # not a tar: reading it as a cube says what it is
        return None


def remap(exp: Experiment, spec: list[SpecMetric], convert: bool = False,
          source: str = "the specification") -> tuple[Experiment, list[str]]:
    """The experiment with the specification's metric tree (see the
    module's description); returns it and the metrics left out (void).
    convert (cube_remap2 -d): every metric the specification does not mark
    convertible="false" is stored, its values computed: derived metrics
    become stored INCLUSIVE ones holding what they evaluate to per call
    path and location (a POSTDERIVED ratio then adds up over locations
    and callees as stored values do, as in CubeLib); stored sums are kept
    INCLUSIVE, minimum and maximum metrics EXCLUSIVE."""
    spec = [copy.deepcopy(s) for s in spec]
    metrics = [s.metric for s in spec]
    vals = [s.val for s in spec]
    index = {m.name: i for i, m in enumerate(metrics)}
    kids = [list(s.children) for s in spec]
    source_of: dict[int, str] = {}  # new metric -> the profile's metric its values come from

    def set_val(i: int, value: str) -> None:  # CubeLib's Metric::set_val: the metric and its subtree
        todo = [i]
        while todo:
            j = todo.pop()
            vals[j] = value
            todo.extend(kids[j])

    for m in exp.metrics:  # cube_remap2's metric_remap, in the profile's order
        i = index.get(m.name)
        if i is None:
            parent = None if m.parent is None else index.get(exp.metrics[m.parent].name)
            new = copy.copy(m)
            new.parent = parent
            metrics.append(new)
            vals.append("")
            kids.append([])
            i = index[m.name] = len(metrics) - 1
            if parent is not None:
                kids[parent].append(i)
        else:
            set_val(i, "")  # the profile's value setting: psuite reads only metrics in use
        if not metrics[i].derived:
            source_of[i] = m.name

    fixed = {s.metric.name for s in spec if not s.convertible}
    regions, cnodes = called_regions(exp)
    out = Experiment(metrics=metrics, regions=regions, cnodes=cnodes, locations=list(exp.locations),
                     attributes={k: v for k, v in exp.attributes.items() if not _about_metrics(k)},
                     topologies=copy.deepcopy(exp.topologies))
    try:
        settings = out.init_state().settings
    except ExpressionError as exc:
        raise UsageError(f"{source}: its <cubeplinit> programs fail ({exc}); correct them") from None
    for i in _tree_order(metrics, kids):  # parents first: a setting covers the subtree
        got = settings.get(metrics[i].name, {}).get("value")
        if got is not None:
            set_val(i, got)
    keep = _active(metrics, kids, vals)
    left_out = [m.name for i, m in enumerate(metrics) if i not in keep]
    for i, name in source_of.items():
        if i not in keep:
            continue
        m = metrics[i]
        values = exp.inclusive(name) if m.kind == INCLUSIVE else exp.exclusive(name)
        out.values[m.name] = _as_dtype(np.asarray(values), m)
    out = _only(out, keep)
    _no_cycle(out, source)
    if convert:
        _store(out, fixed)
    return out, left_out


def _store(exp: Experiment, fixed: set[str]) -> None:
    """cube_remap2 -d: metrics stored with their values (each view's
    values unchanged); the values are all computed before any metric
    changes, as derived metrics refer to the others."""
    stored: dict[str, tuple[str, np.ndarray]] = {}
    for m in exp.metrics:
        if m.name in fixed:
            continue
        if m.combine is not np.add:  # a least or greatest value cannot be inclusive in CUBE
            stored[m.name] = (EXCLUSIVE, exp.exclusive(m.name))
        else:
            stored[m.name] = (INCLUSIVE, exp.inclusive(m.name))
    for m in exp.metrics:
        if m.name not in stored:
            continue
        kind, values = stored[m.name]
        if m.derived:
            m.expression = m.init = ""
            if not m.integer:
                m.dtype = "DOUBLE"
        m.kind = kind
        exp.values[m.name] = _as_dtype(np.asarray(values), m)


def _no_cycle(exp: Experiment, source: str) -> None:
    """psuite evaluates every derived metric it writes: derived metrics
    that need their own value are refused here.  One walk over all of
    them (a specification may hold many): the first metric met on a
    cycle is checked as derived_order checks it, which names the cycle."""
    from psuite.model.cubepl import metric_names

    derived = {m.name for m in exp.metrics if m.derived}
    refs = {m.name: [r for r in dict.fromkeys(metric_names(m.expression)) if r in derived]
            for m in exp.metrics if m.derived}
    state: dict[str, int] = {}  # 1: on the walk's path, 2: done
    for start in refs:
        if state.get(start):
            continue
        state[start] = 1
        stack = [(start, iter(refs[start]))]
        while stack:
            name, it = stack[-1]
            for ref in it:
                if state.get(ref) == 1:
                    try:
                        derived_order(exp, ref)
                    except ExpressionError as exc:
                        raise UsageError(f"{source}: metric {ref!r}: {exc}") from None
                if not state.get(ref):
                    state[ref] = 1
                    stack.append((ref, iter(refs[ref])))
                    break
            else:
                stack.pop()
                state[name] = 2


def _about_metrics(key: str) -> bool:
    """psuite's experiment attributes that describe the profile's metrics,
    which the specification's tree replaces."""
    return key in ("psuite::no_formula", "psuite::skipped_metrics") or key.startswith("psuite::stand_in")


def _as_dtype(a: np.ndarray, m: Metric) -> np.ndarray:
    if m.integer and a.dtype.kind == "f":
        return np.trunc(a).astype(np.int64)  # a double stored into an integer metric: C++'s conversion
    if not m.integer and a.dtype.kind != "f":
        return a.astype(np.float64)
    return a


def _tree_order(metrics: list[Metric], kids: list[list[int]]) -> list[int]:
    order: list[int] = []
    stack = [i for i, m in enumerate(metrics) if m.parent is None][::-1]
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(kids[i]))
    return order


def _active(metrics: list[Metric], kids: list[list[int]], vals: list[str]) -> set[int]:
    """Metrics CubeLib writes: not VOID, nor below a VOID one."""
    keep: set[int] = set()
    stack = [i for i, m in enumerate(metrics) if m.parent is None]
    while stack:
        i = stack.pop()
        if vals[i] == "VOID":
            continue
        keep.add(i)
        stack.extend(kids[i])
    return keep


def _only(exp: Experiment, keep: set[int]) -> Experiment:
    new_index: dict[int, int] = {}
    metrics: list[Metric] = []
    kids: list[list[int]] = [[] for _ in exp.metrics]
    for i, m in enumerate(exp.metrics):
        if m.parent is not None:
            kids[m.parent].append(i)
    for i in _tree_order(exp.metrics, kids):
        if i not in keep:
            continue
        m = copy.copy(exp.metrics[i])
        m.parent = None if m.parent is None else new_index[m.parent]
        new_index[i] = len(metrics)
        metrics.append(m)
    exp.metrics = metrics
    names = {m.name for m in metrics}
    exp.values = {k: v for k, v in exp.values.items() if k in names}
    return exp
