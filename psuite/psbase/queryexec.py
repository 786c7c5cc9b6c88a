"""Running a query file (psuite.psbase.queryfile) against an archive: each
element's output vector computed in file order, each output element's
inputs made into one ResultTable.

A vector is keys (parameter values) and values (results, with an error
per value where an operator gives one), per sweep instance.  perfbase's
three operator modes are chosen by the inputs, as the paper says:
  * one input that is a source, and a statistic or reduction: data-set
    aggregation, the rows with equal keys (runs with the same parameter
    values) reduced to one;
  * one input from any other element: the whole vector reduced to one row;
  * several inputs: element-wise, rows matched by equal keys.
scale, offset and eval work row by row (several inputs side by side).

Where SQL can do the work it does: a source with a statistic directly
behind it (avg, stddev, variance, count, min, max, sum) is one
GROUP BY per result, query.aggregate as the short form uses, so that only
the aggregated rows leave the database.  median (perfbase's lower middle
value, not the short form's mean of the two), quantile and prod, and everything
after the first operator, are computed here in Python (the vectors are
then small: one row per parameter combination)."""

from __future__ import annotations

import ast
import collections
import copy
import dataclasses
import datetime as _dt
import itertools
import math
import statistics
import sys
from dataclasses import dataclass, field

import regex
import sqlalchemy as sa

from psuite.cli_common import write_stdout
from psuite.errors import UsageError
from psuite.psbase import arith
from psuite.psbase import queryfile as qf
from psuite.psbase.model import Definition, Variable, convert
from psuite.psbase.output.perfbase_text import py2str, unit_text
from psuite.psbase.query import NUMERIC, aggregate, allowed_stats, from_clause, sort_key, stddev
from psuite.psbase.result import Column, ResultTable
from psuite.psbase.store import Store, from_db, to_db

SQL_STATS = {
    "avg": ["mean", "stddev"],
    "stddev": ["stddev"],
    "variance": ["stddev"],
    "count": [],
    "min": ["min"],
    "max": ["max"],
    "sum": ["sum"],
}


@dataclass
class Vec:
    """One element's output for one sweep instance."""

    keys: list[Column]
    values: list[Column]
    rows: list[tuple[tuple, list, list]]  # (key values, values, errors: None where there is none)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (source id, "NAME = VALUE"; "": none)
    # the run index of each row (perfbase's run index; -1: a row made from several runs), None where
    # no row has one (an aggregation by SQL)
    runs: list[int] | None = None


Instance = tuple[tuple[str, str], ...]  # (parameter, value label) per swept parameter, sorted
PB_FILTER = "\x00perfbase"  # the source id of a note that is a filter text as perfbase shows it
PB_QUOTED = ("string", "text", "date", "version", "boolean")  # the datatypes perfbase quotes in a filter text
_PB_CONDITIONS = (("lesser", "<"), ("lessequal", "<="), ("greater", ">"), ("greaterequal", ">="),
                  ("equal", "="), ("notequal", "!="))  # perfbase reads a filter's conditions in this order


def execute(
    store: Store, q: qf.QueryFile, where: dict[str, list[str]] | None = None, sweep: list[str] | None = None
) -> list[tuple[qf.Output, ResultTable]]:
    """Run the query; per output element, its table.  where: NAME -> values
    (text), an extra filter on every source (any of the values); sweep:
    parameters every source is swept over (all their values)."""
    q = copy.deepcopy(q)  # --where adds filters to the sources: the caller's query stays as parsed
    with store.engine.connect() as conn:
        exp_id, d = store._run(lambda: store._experiment_id(conn, q.experiment))
        run = _Run(store, conn, exp_id, d, q)
        for src in q.elements.values():
            if isinstance(src, qf.Source):  # every name checked before the first query, used or not
                _add_where(src, where or {})
                _add_sweep(src, sweep or [])
                for r in src.results:
                    run.variable(src, r, True)
                for p in src.params:
                    run.variable(p, p.name, False)
        run.warn_missing_runs()
        tables = []
        for out in q.outputs:
            inputs = [(i, run.output_of(i)) for i in out.inputs]
            if out.format in ("pbtext", "pbxml"):  # perfbase's order of the sweep instances
                inputs = [(i, dict(_pb_sweep_order(run, instances))) for i, instances in inputs]
            if out.format == "pbgnuplot":  # a plot's data titles show the sweep value of each instance, first
                inputs = [(i, {_pb_inst_order(run, inst): _sweep_shown(run, _pb_inst_order(run, inst), vec)
                               for inst, vec in _pb_sweep_order(run, instances)})
                          for i, instances in inputs]
                extern = [k for k, i in enumerate(out.inputs)
                          if out.pb_inputs.get(i, {}).get("sweep_resolve") == "extern" and len(inputs[k][1]) > 1]
                if extern:  # perfbase's sweep_resolve="extern": a plot (file) of its own per sweep instance
                    k = extern[0]
                    tables += [(out, _table(out, [*inputs[:k], (inputs[k][0], {inst: vec}), *inputs[k + 1:]],
                                            q.experiment)) for inst, vec in inputs[k][1].items()]
                    continue
            try:
                tables.append((out, _table(out, inputs, q.experiment)))
            except _Unmatched as exc:
                if len(inputs) == 1 or out.filename is not None:
                    raise UsageError(f"{q.path}: <output id={out.id!r}> (line {out.line}): {exc}") from None
                try:  # perfbase's: inputs that do not match row by row are shown one after the other
                    tables += [(out, _table(out, [one], q.experiment)) for one in inputs]
                except _Unmatched:
                    raise UsageError(f"{q.path}: <output id={out.id!r}> (line {out.line}): {exc}") from None
        for out, table in tables:
            if out.format == "pbxml":  # perfbase's xml output moves a filter found from the data to the end
                for b in table.pb_blocks or []:
                    b.filters = [*(f for f in b.filters if f not in run.open_filters),
                                 *(f for f in b.filters if f in run.open_filters)]
        return tables


def _pb_param_order(run: _Run) -> list[str]:
    """The parameters of the query's sources, in the order they are written."""
    return list(dict.fromkeys(p.name for e in run.q.elements.values() if isinstance(e, qf.Source)
                              for p in e.params))


def _pb_inst_order(run: _Run, inst: Instance) -> Instance:
    """A sweep instance with its parameters in the order the sources name them (perfbase's labels)."""
    order = _pb_param_order(run)
    return tuple(sorted(inst, key=lambda nl: order.index(nl[0]) if nl[0] in order else len(order)))


def _pb_sweep_order(run: _Run, instances: dict[Instance, Vec]) -> list[tuple[Instance, Vec]]:
    """The sweep instances in perfbase's order (as its suite shows it): the swept parameters shown as
    data outermost, then the others in the reverse of the order the sources name them (the first
    named varies fastest)."""
    params = [p for e in run.q.elements.values() if isinstance(e, qf.Source) for p in e.params]
    data = list(dict.fromkeys(p.name for p in params if p.show == "data"))
    others = list(dict.fromkeys(p.name for p in params if p.name not in data))
    order = data + others[::-1]  # slowest first
    seen: dict[str, list[str]] = {}
    for inst in instances:
        for name, label in inst:
            if label not in seen.setdefault(name, []):
                seen[name].append(label)

    def key(item: tuple[Instance, Vec]) -> tuple:
        ranks = dict(item[0])
        names = sorted(ranks, key=lambda n: order.index(n) if n in order else len(order))
        return tuple(seen[n].index(ranks[n]) for n in names)

    return sorted(instances.items(), key=key)


def _typed_text(v: Variable, text: str) -> object:
    """A sweep instance's value (text) as the variable's values are: integers as int, floats as float."""
    try:
        return int(text) if v.datatype == "integer" else float(text) if v.datatype == "float" else text
    except ValueError:
        return text


def _pb_compared(name: str, label: str) -> str | None:
    """A sweep instance of a comparing filter (">1.23") as perfbase shows it: "MPI_version > 1.23"."""
    for op in (">=", "<=", "!=", ">", "<"):
        if label.startswith(op):
            return f"{name} {op} {label[len(op):]}"
    return None


def _sweep_shown(run: _Run, inst: Instance, vec: Vec) -> Vec:
    """vec with its sweep instance's filter texts before each value column's filters (not twice)."""
    shows = {p.name: p.show for e in run.q.elements.values() if isinstance(e, qf.Source) for p in e.params}
    # a swept parameter shown as data is no filter of the data title
    shown = tuple(_pb_compared(name, label) or run._pb_sweep_text(name, label) for name, label in inst
                  if shows.get(name) != "data"
                  and not any(f.startswith(name + " ") for c in vec.values for f in c.pb_filters))
    # a swept parameter shown as data (show="data" or "all") that the values lost (an operator reduced
    # them): perfbase plots it as the parameter of each instance, its one value
    keys = {k.name for k in vec.keys}
    lost = [(name, label) for name, label in inst
            if shows.get(name) in ("data", "all") and name not in keys and label.startswith("=")]
    if lost:
        added = [run.variable(None, name, False) for name, _ in lost]
        values = tuple(_typed_text(v, label[1:]) for v, (_, label) in zip(added, lost, strict=True))
        vec = dataclasses.replace(vec, keys=[*[_column(v, "key") for v in added], *vec.keys],
                                  rows=[((*values, *kv), vals, *rest) for kv, vals, *rest in vec.rows])
    if not shown:
        return vec
    return dataclasses.replace(vec, values=[
        dataclasses.replace(c, pb_filters=(*[t for t in shown if t not in c.pb_filters], *c.pb_filters))
        for c in vec.values])


def parse_where(items: list[str]) -> dict[str, list[str]]:
    """--where NAME=VALUE items: the values (text) per name; one name given
    several times means any of its values."""
    out: dict[str, list[str]] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"--where {item!r}: write NAME=VALUE, e.g. --where ranks=4")
        out.setdefault(name.strip(), []).append(text.strip())
    return out


def _add_where(src: qf.Source, where: dict[str, list[str]]) -> None:
    for name, values in where.items():
        f = qf.Filter([("equal", v) for v in values], "or", command_line=True)
        at = next((i for i, p in enumerate(src.params) if p.name == name), None)
        if at is None:
            src.params.append(qf.ParamSel(name, [f]))
        else:  # a new selection: the old one may be shared with other sources
            old = src.params[at]
            src.params[at] = dataclasses.replace(old, filters=[*old.filters, f])


def _add_sweep(src: qf.Source, names: list[str]) -> None:
    for name in names:
        at = next((i for i, p in enumerate(src.params) if p.name == name), None)
        if at is None:
            src.params.append(qf.ParamSel(name, sweep=[]))
        elif src.params[at].sweep is None:  # a new selection: the old one may be shared with other sources
            old = src.params[at]
            src.params[at] = dataclasses.replace(old, filters=list(old.filters), sweep=[])


class _Run:
    """One execution: the archive, the experiment and the element outputs."""

    def __init__(self, store: Store, conn: sa.Connection, exp_id: int, d: Definition, q: qf.QueryFile) -> None:
        self.store, self.conn, self.exp_id, self.d, self.q = store, conn, exp_id, d, q
        self.done: dict[str, dict[Instance, Vec]] = {}
        self.open_filters: set[str] = set()  # perfbase's "open" filters: the texts of values found in the data
        self.sweep_labels: dict[str, list[str]] = {}  # a swept parameter's values (labels) in sweep order
        self.need_runs = _run_readers(q)
        # a query with perfbase's outputs reads its sources in perfbase's order: run by run, each run's rows by
        # the first parameter (where it has several values per run), else as filed
        self.pb_order = any(out.format in qf.PERFBASE_FORMATS for out in q.outputs)

    def warn_missing_runs(self) -> None:
        """A <run> that names a run index the experiment does not have (one by one, not in a range): perfbase
        warns on standard output, before the query's outputs, and goes on without it; so does a query with
        perfbase's outputs (psbase's own warn on standard error)."""
        sels = list({id(sel): sel for e in self.q.elements.values() if isinstance(e, qf.Source)
                     for sel in e.runs}.values())
        if not any(sel.singles for sel in sels):
            return
        r = self.store.runs
        have = set(self.conn.execute(sa.select(r.c.idx).where(r.c.experiment == self.exp_id,
                                                              r.c.deleted.is_(False))).scalars())
        for sel in sels:
            for idx in sel.singles:
                if idx not in have:
                    text = f"<run> '{sel.id}' lists non-existing run <index> '{idx}' (ignored)"
                    if self.pb_order:
                        write_stdout(f"#* WARNING: {text}\n")
                    else:
                        sys.stderr.write(f"psbase: warning: {self.q.path}: {text}\n")

    def output_of(self, ident: str) -> dict[Instance, Vec]:
        """An element's output, computed when first asked for (a source whose
        only reader aggregates it in SQL is never read row by row)."""
        if ident not in self.done:
            elem = self.q.elements[ident]
            self.done[ident] = self.store._run(lambda: self.element(elem))
        return self.done[ident]

    def fail(self, elem: qf.Element | qf.ParamSel | qf.RunSel, problem: str) -> UsageError:
        if isinstance(elem, qf.ParamSel) and not elem.line:  # from the command line
            return UsageError(f"--{'sweep' if elem.sweep is not None else 'where'} {elem.name}: {problem}")
        what = type(elem).__name__.lower().replace("paramsel", "parameter").replace("runsel", "run")
        ident = f" id={elem.id!r}" if isinstance(elem, qf.Element) else ""
        return UsageError(f"{self.q.path}: <{what}{ident}> (line {elem.line}): {problem}")

    def variable(self, elem, name: str, want_result: bool) -> Variable:
        d = self.d
        v = next((x for x in d.variables if x.name == name), None)
        if v is None or v.is_result != want_result:
            kind = "result" if want_result else "parameter"
            have = ", ".join(x.name for x in (d.results if want_result else d.parameters)) or "none"
            also = f" ({name!r} is a {'result' if v.is_result else 'parameter'})" if v is not None else ""
            raise self.fail(elem, f"experiment {d.name!r} has no {kind} {name!r}{also}; its {kind}s: {have}")
        return v

    def element(self, elem: qf.Element) -> dict[Instance, Vec]:
        if isinstance(elem, qf.Source):
            return self.source(elem)
        if isinstance(elem, qf.Operator):
            src = self.q.elements[elem.inputs[0]]
            exact = elem.type in ("min", "max") and elem.id in self.need_runs  # the run of each min or max
            if (len(elem.inputs) == 1 and isinstance(src, qf.Source) and elem.type in SQL_STATS and not exact
                    and not elem.per_run):
                return self.sql_aggregate(elem, src)
            inputs = []
            for i in elem.inputs:
                if i in elem.intern:  # perfbase's sweep_resolve="intern": each sweep value an input of its own
                    inputs += [(i, {(): vec}) for vec in self.output_of(i).values()]
                else:
                    inputs.append((i, self.output_of(i)))
            if elem.type in qf.BINARY and len(inputs) != 2:
                raise self.fail(elem, f"{elem.type} takes exactly two inputs, and its inputs give {len(inputs)} "
                                "(a sweep_resolve=\"intern\" input one per sweep value); give it two")
            return {
                inst: _labelled(elem, vecs, self.operate(elem, vecs, isinstance(src, qf.Source) and len(vecs) == 1))
                for inst, vecs in _match(inputs)
            }
        inputs = []
        absorbed = []  # perfbase puts the inputs of a resolved sweep after the others
        for i in elem.inputs:
            if isinstance(elem, qf.Combiner) and i in elem.intern:
                # each sweep value an input of its own, named as perfbase names it: op.sort~p.speed~0
                if self.pb_order:
                    absorbed += [(f"{i}{self.pb_suffix(inst)}", {(): vec})
                                 for inst, vec in _pb_sweep_order(self, self.output_of(i))]
                    continue
                for k, (inst, vec) in enumerate(self.output_of(i).items()):
                    swept = "~".join(self.q.sweep_ids.get(name, name) for name, _ in inst)
                    inputs.append((f"{i}~{swept}~{k}", {(): vec}))
            else:
                inputs.append((i, self.output_of(i)))
        inputs += absorbed
        matched = _match(inputs)
        if isinstance(elem, qf.Combiner) and self.pb_order and elem.sweep_group:
            matched = self._sweep_grouped(elem, inputs)
        if isinstance(elem, qf.Combiner) and self.pb_order and len(inputs) > 1:
            # a swept input resolved outside (one combiner per sweep instance) is named by its instance
            swept = {i for i, instances in inputs if any(instances)}
            matched = [(inst, [(f"{i}{self.pb_suffix(inst)}" if i in swept else i, v)
                               for (i, _), (_, v) in zip(inputs, vecs, strict=True)])
                       for inst, vecs in matched]
        omit = elem.omit if isinstance(elem, qf.Combiner) else []
        if isinstance(elem, qf.Combiner) and elem.datasets == "append":
            # perfbase's datasets="append": the inputs' rows one after the other, under the first input's columns
            try:
                return {inst: _stack([(i, _omit([(i, v)], omit)) for i, v in vecs]) for inst, vecs in matched}
            except _Unmatched as exc:
                raise self.fail(elem, str(exc)) from None
        if isinstance(elem, qf.Combiner) and self.pb_order:
            # perfbase's datasets="merge": the inputs' rows side by side by their position
            return {inst: _omit(vecs, omit) if len(vecs) == 1
                    else _pb_merge(_pb_combined([(i, _omit([(i, v)], omit)) for i, v in vecs]), elem.parameters,
                                   elem.mkparam)
                    for inst, vecs in matched}
        try:
            # one input passes through as it is (perfbase's combiner of one swept input); several side by
            # side, each less its omitted columns, labelled as perfbase labels them
            return {inst: _omit(vecs, omit) if len(vecs) == 1
                    else _join(_pb_combined([(i, _omit([(i, v)], omit)) for i, v in vecs]), outer=True)
                    for inst, vecs in matched}
        except _Unmatched as exc:
            raise self.fail(elem, str(exc)) from None

    def _swept(self, src: qf.Source, notes: list[tuple[str, str]], inst: Instance) -> list[tuple[str, str]]:
        """notes with a sweep instance's values as perfbase's filter texts (its data title shows them), in
        the order of the source's parameters."""
        if not self.pb_order:
            return notes
        order = [p.name for p in src.params]
        inst = tuple(sorted(inst, key=lambda nl: order.index(nl[0]) if nl[0] in order else len(order)))
        shows = {p.name: p.show for e in self.q.elements.values() if isinstance(e, qf.Source) for p in e.params}
        # a swept parameter shown as data is a column, no filter of the data title
        return [*notes, *((PB_FILTER, _pb_compared(name, label) or self._pb_sweep_text(name, label))
                          for name, label in inst if shows.get(name) not in ("data", "all"))]

    def _sweep_grouped(self, elem: qf.Combiner, inputs: list[tuple[str, dict[Instance, Vec]]]
                       ) -> list[tuple[Instance, list[tuple[str, Vec]]]]:
        """perfbase's <combiner sweep_group="p.id">: one combination per value of that swept parameter, of
        the sweep instances with that value (each an input of its own, sorted by perfbase's name of it)."""
        name = next((n for n, ident in self.q.sweep_ids.items() if ident == elem.sweep_group), None)
        if name is None:
            raise self.fail(elem, f"sweep_group={elem.sweep_group!r} names no swept <parameter>; give the id of "
                            f"one: {', '.join(self.q.sweep_ids.values()) or 'none'}")
        fixed = [(i, v) for i, instances in inputs if not any(instances) for v in instances.values()]
        groups: dict[tuple[str, str], list[tuple[str, Vec]]] = {}
        for i, instances in inputs:
            if not any(instances):
                continue
            for inst, vec in _pb_sweep_order(self, instances):
                value = next(((n, lbl) for n, lbl in inst if n == name), None)
                groups.setdefault(value, []).append((f"{i}{self.pb_suffix(inst)}", vec))
        return [((value,) if value is not None else (), [*fixed, *sorted(members, key=lambda m: m[0])])
                for value, members in groups.items()]

    def pb_suffix(self, inst: Instance) -> str:
        """perfbase's name of a sweep instance, after the element's id: ~p.speed~0~p.api~1 (each swept
        parameter's id and the index of its value, in the order the sources name the parameters)."""
        return "".join(f"~{self.q.sweep_ids.get(name, name)}~{self.sweep_labels.get(name, [label]).index(label)}"
                       for name, label in _pb_inst_order(self, inst))

    def _pb_sweep_text(self, name: str, label: str) -> str:
        """A sweep instance as perfbase's filter text: "V_net = 100.0Mbit/s" (label: "=100"); as the
        parameter's style= asks ("content": "100.0Mbit/s", "plain": "V_net 100.0Mbit/s", ...)."""
        v = self.variable(None, name, False)
        text = label[1:] if label.startswith("=") else label
        if v.datatype == "float":
            text = py2str(float(text))
        value = f"{_pb_quoted(v, text)}{unit_text(v.unit or '')}"
        sel = next((p for e in self.q.elements.values() if isinstance(e, qf.Source) for p in e.params
                    if p.name == name), None)
        style = sel.style if sel else "full"
        name = sel.alias or name if sel else name  # perfbase names a parameter by its alias
        return {"content": value, "plain": f"{name} {value}", "reverse": f"{value} {name}",
                "value": name}.get(style, f"{name} = {value}")

    # -- sources ----------------------------------------------------------

    def _select(self, src: qf.Source):
        """(results, key parameters, FROM, column, run column (query.from_clause), conditions per instance,
        notes)."""
        results = [self.variable(src, r, True) for r in src.results]
        params = [self.variable(p, p.name, False) for p in src.params]
        source, col, run = from_clause(self.store, self.exp_id, self.d, [v.name for v in results + params])
        conds: list = []
        notes: list[tuple[str, str]] = [(src.id, "")]  # "": the source is there, with or without notes
        keys: list[Variable] = []
        sweeps: list[list[tuple[tuple[str, str], sa.ColumnElement]]] = []
        param_conds = []
        for sel, v in zip(src.params, params, strict=True):
            mine = [self.condition(sel, v, col(v.name), f) for f in sel.filters if not f.command_line]
            conds += [self.condition(sel, v, col(v.name), f) for f in sel.filters if f.command_line]
            if mine:
                param_conds.append(sa.or_(*mine) if sel.boolean == "or" else sa.and_(*mine))
            fixed = [f.single_value() for f in sel.filters]
            if sel.boolean == "or" and len(sel.filters) > 1:
                fixed = []  # one of several values: a key
            if sel.sweep is None:
                one = next((x for x in fixed if x is not None), None)
                # perfbase's show=: "data" or "all" a column, "filter", "title" or "nothing" none; a
                # parameter that occurs once and is filtered (to a list, a range) is none either
                hidden = sel.show in ("filter", "title", "nothing") or (
                    sel.show == "auto" and v.occurrence == "once" and any(not f.command_line for f in sel.filters))
                if sel.show in ("data", "all") or (one is None and not hidden):
                    keys.append(v)
                elif one is not None:
                    if sel.show != "nothing":
                        notes.append((src.id, f"{v.name} = {one}"))
                elif sel.show != "nothing":
                    join = " or " if sel.boolean == "or" else " and "
                    notes.append((src.id, join.join(f"{v.name} {_label(f)}" for f in sel.filters)))
            else:
                if self.pb_order and sel.show in ("data", "all"):  # perfbase: a swept parameter shown as data is a
                    keys.append(v)  # column (its one value in each sweep instance)
                if sel.sweep:
                    sweeps.append([((v.name, _label(f)), self.condition(sel, v, col(v.name), f)) for f in sel.sweep])
                else:
                    sweeps.append([])  # all values: found once the other conditions are known
        if param_conds:
            conds.append(sa.or_(*param_conds) if src.boolean == "or" else sa.and_(*param_conds))
        if src.runs:  # several <run> selections: a run of any of them (perfbase's source)
            selected = sa.or_(*(self.run_condition(r) for r in src.runs))
            conds.append(selected)
            r = self.store.runs
            if self.conn.execute(sa.select(r.c.idx).where(r.c.experiment == self.exp_id, r.c.deleted.is_(False),
                                                          selected).limit(1)).first() is None:
                # perfbase refuses a source whose <run>s select no run: a mistake, not an empty result
                ids = ", ".join(repr(x.id) for x in src.runs if x.id)
                what = f"its <run>s {ids}" if ids else "its <run>" if len(src.runs) == 1 else "its <run>s"
                raise self.fail(src, f"{what} select{'s' if what == 'its <run>' else ''} none of the experiment's "
                                     "runs; check the indices, dates or synopses (psbase ls lists the runs)")
        if self.pb_order:  # perfbase's filter texts: only its outputs show them
            notes += self.pb_filters(src, params, source, col, conds)
        swept = [v for s, v in zip(src.params, params, strict=True) if s.sweep is not None]
        for i, v in enumerate(swept):
            if not sweeps[i]:
                c = col(v.name)
                found = (
                    self.conn.execute(
                        sa.select(c).distinct().select_from(source).where(*conds, c.is_not(None)).order_by(c)
                    )
                    .scalars()
                    .all()
                )
                if v.datatype == "version":  # SQL sorted them as text: "1.10" before "1.9"
                    found.sort(key=lambda x: from_db(v, x).key())
                sweeps[i] = [((v.name, "=" + _show(from_db(v, x))), c == x) for x in found]
        for v, choices in zip(swept, sweeps, strict=True):
            self.sweep_labels.setdefault(v.name, [label for (_, label), _ in choices])
        instances = {
            tuple(sorted(lbl for lbl, _ in combo)): [c for _, c in combo] for combo in itertools.product(*sweeps)
        }
        return results, keys, source, col, run, conds, instances, notes

    def pb_filters(self, src: qf.Source, params: list[Variable], source, col, conds: list) -> list[tuple[str, str]]:
        """The filters perfbase shows for a source (its data title, e.g. "MPI_version = '1.2'"), as notes
        under PB_FILTER: those of the parameters it shows as filters (perfbase's showfilter: a parameter
        that occurs once per run, or show="filter" or "all"); one without a <filter> shows its value when
        every row has the same."""
        out = []
        for sel, v in zip(src.params, params, strict=True):
            if sel.sweep is not None:
                continue
            shown = {"nothing": False, "data": False, "filter": True, "all": True}.get(sel.show, v.occurrence == "once")
            mine = [f for f in sel.filters if not f.command_line]
            if not shown:
                continue
            if mine:
                out.append((PB_FILTER, pb_filter_text(v, mine, sel.boolean, sel.style, sel.alias)))
                continue
            c = col(v.name)
            found = self.conn.execute(
                sa.select(c).distinct().select_from(source).where(*conds).limit(2)).scalars().all()
            if len(found) == 1 and found[0] is not None:  # perfbase's "open" filter: the one value found
                out.append((PB_FILTER, f"{v.name} = {py2str(_plain(v, found[0]))}"))
                self.open_filters.add(out[-1][1])
        return out

    def condition(self, sel: qf.ParamSel, v: Variable, column: sa.ColumnElement, f: qf.Filter) -> sa.ColumnElement:
        ops = {
            "equal": lambda c, x: c == x,
            "notequal": lambda c, x: c != x,
            "lesser": lambda c, x: c < x,
            "lessequal": lambda c, x: c <= x,
            "greater": lambda c, x: c > x,
            "greaterequal": lambda c, x: c >= x,
        }
        parts = []
        for op, text in f.conditions:
            if op in qf.TEXT_CONDITIONS:
                parts.append(self.text_condition(sel, v, column, op, text))
                continue
            try:
                value = (
                    convert(v, text) if not (v.valid and op != "equal") else convert(Variable(v.name, v.datatype), text)
                )
            except UsageError as exc:
                if f.command_line:
                    raise UsageError(f"--where {v.name}={text}: {exc}") from None
                raise self.fail(sel, f"<{op}>: {exc}") from None
            if v.datatype == "version" and op not in ("equal", "notequal"):
                # SQL orders versions as text ("1.10" before "1.9"): the stored
                # versions are few, so they are compared here, part by part
                stored = self.conn.execute(sa.select(column).distinct().where(column.is_not(None))).scalars()
                bound = from_db(v, to_db(v, value))
                parts.append(column.in_([x for x in stored if ops[op](from_db(v, x), bound)]))
                continue
            parts.append(ops[op](column, to_db(v, value)))
        return sa.and_(*parts) if f.boolean == "and" else sa.or_(*parts)

    def text_condition(self, sel: qf.ParamSel, v: Variable, column: sa.ColumnElement, op: str,
                       text: str) -> sa.ColumnElement:
        """perfbase's <regexp> (found in the value, as PostgreSQL's ~) and <match> (SQL LIKE) filters of
        a string parameter; the regexp is matched here, not in SQL (SQLite has none), on the few
        distinct stored values, each within a time bound."""
        if v.datatype != "string":
            raise self.fail(sel, f"<{op}>: parameter {v.name!r} is of datatype {v.datatype}, and <{op}> filters "
                            "strings; use <equal>, <lesser>, ... on it")
        if op == "match":
            return column.like(text)
        pattern = regex.compile(text)
        stored = self.conn.execute(sa.select(column).distinct().where(column.is_not(None))).scalars().all()
        try:
            found = [x for x in stored if pattern.search(str(x), timeout=qf.REGEXP_SECONDS)]
        except TimeoutError:
            raise self.fail(sel, f"<regexp> {text!r} takes more than {qf.REGEXP_SECONDS:g} s on one value; "
                            "simplify it") from None
        return column.in_(found)

    def run_condition(self, sel: qf.RunSel) -> sa.ColumnElement:
        r = self.store.runs
        parts = []
        if sel.ranges:
            parts.append(
                sa.or_(
                    *(
                        sa.and_(
                            *([r.c.idx >= lo] if lo is not None else []), *([r.c.idx <= hi] if hi is not None else [])
                        )
                        for lo, hi in sel.ranges
                    )
                )
            )
        if sel.created_from is not None:
            parts.append(r.c.created >= sel.created_from)
        if sel.created_to is not None:
            parts.append(r.c.created < sel.created_to)
        if sel.performed_from is not None or sel.performed_to is not None:
            when = sa.func.coalesce(r.c.performed, r.c.created)  # none given: performed when filed
            parts.append(sa.and_(*([when >= sel.performed_from] if sel.performed_from else []),
                                 *([when <= sel.performed_to] if sel.performed_to else [])))
        if sel.synopsis:  # perfbase's regexps (any of them), matched here on the runs' synopses
            texts = self.conn.execute(sa.select(r.c.synopsis).distinct().where(
                r.c.experiment == self.exp_id, r.c.synopsis.is_not(None))).scalars().all()
            try:
                found = [t for t in texts if any(regex.search(x, t, timeout=qf.REGEXP_SECONDS) for x in sel.synopsis)]
            except TimeoutError:
                raise self.fail(sel, f"a <synopsis> regexp takes more than {qf.REGEXP_SECONDS:g} s on one "
                                "synopsis; simplify it") from None
            parts.append(r.c.synopsis.in_(found))
        cond = sa.or_(*parts) if sel.boolean == "or" else sa.and_(*parts)
        return sa.not_(cond) if sel.exclude else cond

    def source(self, src: qf.Source) -> dict[Instance, Vec]:
        results, keys, source, col, _, conds, instances, notes = self._select(src)
        out: dict[Instance, Vec] = {}
        r = self.store.runs
        order = [col(k.name).asc().nulls_last() for k in keys] + [r.c.idx]
        if self.pb_order:
            by_date = src.chronology == "performed" and "performed" in r.c
            when = [sa.func.coalesce(r.c.performed, r.c.created)] if by_date else []
            by_key = [] if src.order == "keep" else [
                (col(k.name).desc() if src.order == "descending" else col(k.name).asc()).nulls_last()
                for k in keys[:1] if k.occurrence == "multiple"]
            order = [*when, r.c.idx, *by_key]
        if any(v.occurrence == "multiple" for v in results + keys):
            order.append(sa.literal_column("psb_seq"))
        for inst, extra in instances.items():
            q = (
                sa.select(*(col(k.name) for k in keys), *(col(v.name) for v in results), r.c.idx)
                .select_from(source)
                # no result: no row; perfbase drops a row with any result undefined ("we surely don't want an
                # undefined result value", pb_source.py)
                .where(*conds, *extra, (sa.and_ if self.pb_order else sa.or_)(
                    *(col(v.name).is_not(None) for v in results)))
                .order_by(*order)
            )
            rows, runs = [], []
            for row in self.conn.execute(q):
                kv = tuple(_plain(k, x) for k, x in zip(keys, row[: len(keys)], strict=True))
                vals = [_plain(v, x) for v, x in zip(results, row[len(keys) : -1], strict=True)]
                rows.append((kv, vals, [None] * len(vals)))
                runs.append(int(row[-1]))
            if any(k.datatype == "version" for k in keys) and not self.pb_order:  # SQL sorted them as text
                order_ = sorted(range(len(rows)), key=lambda i: sort_key(rows[i][0]))
                rows, runs = [rows[i] for i in order_], [runs[i] for i in order_]
            out[inst] = Vec(
                [_pb_key(src, k) for k in keys],
                [_pb_source_column(src, v, self._swept(src, notes, inst), self.pb_order) for v in results],
                rows, _plain_notes(notes), runs
            )
        return out

    def sql_aggregate(self, op: qf.Operator, src: qf.Source) -> dict[Instance, Vec]:
        """Data-set aggregation of a source by the database: one GROUP BY per result."""
        results, keys, source, col, run, conds, instances, notes = self._select(src)
        for v in results:
            self.check_type(op, v.name, v.datatype)
        stats = list(dict.fromkeys([*SQL_STATS[op.type], "count"]))
        out: dict[Instance, Vec] = {}
        for inst, extra in instances.items():
            merged: dict[tuple, tuple[list, list]] = {}
            for j, v in enumerate(results):
                numeric = v.datatype in NUMERIC
                sel = aggregate(
                    source,
                    [*conds, *extra, col(v.name).is_not(None)],
                    [col(k.name) for k in keys],
                    col(v.name),
                    numeric,
                    stats,
                    run,
                    self.store.engine.dialect.name,
                )
                for row in self.conn.execute(sel):
                    kv = tuple(_plain(k, x) for k, x in zip(keys, row[: len(keys)], strict=True))
                    got = dict(zip(stats, row[len(keys) : len(keys) + len(stats)], strict=True))
                    n = int(got["count"] or 0)
                    if n == 0:
                        continue  # no keys and no rows: SQL's one row of nothing
                    value, error = self.sql_value(op.type, v, got, row[-1] if "stddev" in stats else n)
                    vals, errs = merged.setdefault(kv, ([None] * len(results), [None] * len(results)))
                    vals[j], errs[j] = value, error
            rows = [(kv, vals, errs) for kv, (vals, errs) in sorted(merged.items(), key=lambda kv: sort_key(kv[0]))]
            out[inst] = Vec(
                [_pb_key(src, k) for k in keys],
                [self.derived(op, _pb_source_column(src, v, self._swept(src, notes, inst), self.pb_order))
                 for v in results],
                rows,
                _plain_notes(notes),
            )
        return out

    def sql_value(self, kind: str, v: Variable, got: dict, n: int) -> tuple[object, float | None]:
        if kind == "count":
            return int(got["count"]), None
        if kind == "avg":
            return float(got["mean"]), stddev(got["stddev"], n)
        if kind == "stddev":
            return stddev(got["stddev"], n), None
        if kind == "variance":
            s = stddev(got["stddev"], n)
            return (s * s if s is not None else None), None
        x = got[SQL_STATS[kind][0]]
        if kind in ("min", "max") and v.datatype not in NUMERIC:
            return _plain(v, x), None
        if v.datatype == "integer" and kind in ("min", "max", "sum"):
            return int(x), None
        return float(x), None

    def check_type(self, op: qf.Operator, name: str, datatype: str) -> None:
        if datatype in NUMERIC:
            return
        allowed = allowed_stats(datatype)
        if op.type not in allowed:
            raise self.fail(
                op, f"{op.type} needs numbers, and {name!r} is a {datatype}; use {' or '.join(allowed)} on it"
            )

    # -- operators ----------------------------------------------------------

    def derived(self, op: qf.Operator, c: Column, other: Column | None = None) -> Column:
        """The column an operator makes from the value column c (and b's)."""
        kind = op.type
        if op.alias:
            name = op.alias
        elif kind == "eval":
            name = op.id
        elif other is not None and other.name != c.name:
            name = f"{c.name} {kind} {other.name}"
        else:
            name = f"{c.name} {kind}"
        unit = c.unit
        if kind in ("percentof", "above", "below"):
            unit = "%"
        elif kind in ("count", "prod") or kind == "eval":
            unit = op.unit or ""
        elif kind == "div":
            unit = "" if other is None or other.unit == c.unit else f"({c.unit})/({other.unit})" if c.unit else ""
        elif kind == "variance" and c.unit:
            unit = f"({c.unit})^2"
        elif kind == "scale" and (op.unit is not None or op.value != 1):
            # thousandths of MB/s are no longer MB/s: the operator's unit= names
            # what the factor makes (MB/s * 0.001: GB/s), else the values have none
            unit = op.unit or ""
        datatype = "integer" if kind == "count" else c.datatype if kind in ("min", "max") else "float"
        if kind in ("sum", "offset", "diff") and c.datatype == "integer" and float(op.value or 0).is_integer():
            datatype = "integer"
        label = op.alias or (op.term_text if kind == "eval" else f"{c.label or c.name} {kind}")
        pb_unit = _pb_unit(c)
        if kind == "div" and other is not None:
            pb_unit = f"{_pb_unit(c)}/{_pb_unit(other)}"
        elif kind in ("percentof", "above", "below"):
            pb_unit = "%"
        elif kind in ("runindex", "eval"):
            pb_unit = ""
        # perfbase's filters of a column from two: those of the second that the first has too
        filters = c.pb_filters if other is None else tuple(f for f in other.pb_filters if f in c.pb_filters)
        # perfbase's synopsis: the input's; of diff and div both inputs' with the sign between them
        syn = _pb_synopsis(c)
        if kind in ("diff", "div") and other is not None:
            syn = syn + ("-" if kind == "diff" else "/") + _pb_synopsis(other)
        elif kind in _PB_OP_SYNOPSIS:
            syn = _PB_OP_SYNOPSIS[kind]
        return Column(name, unit, "value", label=label, datatype=datatype, statistic=kind,
                      pb=_pb_op_label(op, c, other), pb_unit=pb_unit, pb_filters=filters, pb_synopsis=syn)

    def operate(self, op: qf.Operator, vecs: list[tuple[str, Vec]], from_source: bool) -> Vec:
        kind = op.type
        if kind in qf.PASSING:
            return self.passing(op, vecs)
        if kind in qf.LIMITS:
            return self.limit(op, vecs[0][1])
        if kind == "runindex":
            return self.runindex(op, vecs[0][1])
        if kind == "param":
            return self.param(op, vecs[0][1])
        if kind in qf.SLICES:
            return self.slice(op, vecs[0][1])
        if kind == "distrib":
            return self.distrib(op, vecs[0][1])
        if kind == "frequency":
            return self.frequency(op, vecs[0][1])
        for _, vec in vecs:
            for c in vec.values:
                self.check_type(op, c.name, c.datatype)
        if kind in qf.STATISTICS or (kind in qf.REDUCTIONS and len(vecs) == 1):
            vec = vecs[0][1]
            in_runs = vec.runs if vec.runs is not None else [-1] * len(vec.rows)
            pb_keep = False
            if op.per_run:  # perfbase's scope="run": each run's rows to one row
                by_run: dict[int, list[tuple[list, list, int]]] = {}
                for (_, v, e), ridx in zip(vec.rows, in_runs, strict=True):
                    by_run.setdefault(ridx, []).append((v, e, ridx))
                groups = {(ridx,): members for ridx, members in sorted(by_run.items())}
                keys = []
                # perfbase keeps the parameter columns: a min's or max's row's values, else none
                pb_keep = self.pb_order and bool(vec.values)
            elif from_source:  # data-set aggregation (Python: quantile, prod)
                groups: dict[tuple, list[tuple[list, list, int]]] = {}
                for (kv, vals, errs), ridx in zip(vec.rows, in_runs, strict=True):
                    groups.setdefault(kv, []).append((vals, errs, ridx))
                keys = vec.keys
            else:  # the whole vector to one row
                groups = {(): [(v, e, ridx) for (_, v, e), ridx in zip(vec.rows, in_runs, strict=True)]}
                groups = groups if vec.rows else {}
                keys = []
                # perfbase's min or max of a vector keeps the parameters of the (first) row it comes from
                pb_keep = self.pb_order and kind in ("min", "max") and vec.values
            rows, runs = [], []
            for kv, members in groups.items():
                group, kv = kv, () if op.per_run else kv  # the group was the run's
                vals, errs = [], []
                for j in range(len(vec.values)):
                    xs = [m[0][j] for m in members if m[0][j] is not None]
                    value, error = _reduce(kind, xs, op.value, op.variant == "upper")
                    vals.append(value)
                    errs.append(error)
                if pb_keep:
                    kv = next((k for (k, v, _), ridx in zip(vec.rows, in_runs, strict=True)
                               if kind in ("min", "max") and (not op.per_run or (ridx,) == group)
                               and v[0] is not None and v[0] == vals[0]), (None,) * len(vec.keys))
                rows.append((kv, vals, errs))
                # perfbase's run index of an aggregate: the run its value comes from (min, max), else -1
                runs.append(next((m[2] for m in members if m[0][0] is not None and m[0][0] == vals[0]), -1)
                            if kind in ("min", "max") and vals else -1)
            if pb_keep:
                keys = vec.keys
            at = range(len(rows)) if pb_keep and op.per_run else sorted(range(len(rows)),
                                                                         key=lambda i: sort_key(rows[i][0]))
            return Vec(keys, [self.derived(op, c) for c in vec.values], [rows[i] for i in at], list(vec.notes),
                       [runs[i] for i in at])
        try:  # row by row on one input: its rows as they are (a source's repetitions too)
            joined = vecs[0][1] if len(vecs) == 1 else _index_join(vecs, op.match == "modulo") \
                if op.match in ("index", "modulo") else _join(vecs, outer=False)
        except _Unmatched as exc:
            raise self.fail(op, str(exc)) from None
        widths = [len(v.values) for _, v in vecs]
        if kind == "normalize":
            return self.normalize(op, joined)
        if kind in qf.LINEAR:
            factor = op.value if kind == "scale" else 1.0
            # perfbase computed it in SQL, read it back (PostgreSQL's 15 digits) and stored it for the next
            # element with str() (12 digits): a later distrib bins those values
            stored = _pb_stored if self.pb_order else (lambda x: x)
            rows = [
                (
                    kv,
                    [stored(_linear(kind, x, op.value)) for x in vals],
                    [e * abs(factor) if e is not None else None for e in errs],
                )
                for kv, vals, errs in joined.rows
            ]
            cols = [self.derived(op, c) for c in joined.values]
            if op.scale_name and op.unit is None:  # a named factor moves the unit's prefix (s * Mega: us)
                cols = [dataclasses.replace(d, unit=_scaled_unit(c.unit, op.value)) for c, d in
                        zip(joined.values, cols, strict=True)]
            return Vec(joined.keys, cols, rows, joined.notes, joined.runs if len(vecs) == 1 else None)
        if kind == "eval" and op.term_vars:
            return self.xml_eval(op, vecs, joined)
        if kind == "eval":
            wide = next((i for (i, v), w in zip(vecs, widths, strict=True) if w != 1), None)
            if wide is not None:
                raise self.fail(
                    op,
                    f"input {wide!r} has {widths[[i for i, _ in vecs].index(wide)]} value columns; "
                    "eval takes inputs of one value each (one <result> per source)",
                )
            ids = [i for i, _ in vecs]
            rows = [
                (kv, [_evaluate(op.term, dict(zip(ids, vals, strict=True)))], [None]) for kv, vals, _ in joined.rows
            ]
            return Vec(joined.keys, [self.derived(op, Column(op.id))], rows, joined.notes)
        if len(set(widths)) != 1:
            raise self.fail(
                op,
                f"its inputs have {' and '.join(map(str, widths))} value columns; an element-wise "
                "operator needs the same number in each",
            )
        w = widths[0]
        rows = []
        for kv, vals, _ in joined.rows:
            out = []
            for j in range(w):
                xs = [vals[k * w + j] for k in range(len(vecs))]
                out.append(_elementwise(kind, xs))
            rows.append((kv, out, [None] * w))
        first, second = vecs[0][1], vecs[1][1]
        cols = [self.derived(op, first.values[j], second.values[j]) for j in range(w)]
        return Vec(joined.keys, cols, rows, joined.notes)


    def xml_eval(self, op: qf.Operator, vecs: list[tuple[str, Vec]], joined: Vec) -> Vec:
        """eval of perfbase's XML term: its variables name parameters or results of its inputs, row by row."""
        ids = [i for i, _ in vecs]
        offsets = list(itertools.accumulate([0] + [len(v.values) for _, v in vecs]))
        keys = [k.name for k in joined.keys]
        where: dict[str, tuple[str, int]] = {}  # symbol -> ("key" or "value", index in the joined row)
        for symbol, (src, name) in op.term_vars.items():
            k = ids.index(src)
            j = _column_index([c.name for c in vecs[k][1].values], name)
            if j is not None:
                where[symbol] = ("value", offsets[k] + j)
            elif name in keys:
                where[symbol] = ("key", keys.index(name))
            else:
                have = ", ".join([*keys, *(c.name for c in vecs[k][1].values)])
                raise self.fail(op, f"<variable name={name!r}>: input {src!r} gives no such column ({have}); "
                                "name one of those (a filtered parameter needs show=\"data\" in its <parameter>)")
        rows = []
        for kv, vals, _ in joined.rows:
            env = {s: (kv[i] if part == "key" else vals[i]) for s, (part, i) in where.items()}
            rows.append((kv, [_evaluate(op.term, env)], [None]))
        # perfbase's synopsis of the column is the term's id; its filters those of every input's first result
        firsts = [v.values[0].pb_filters for _, v in vecs if v.values]
        common = tuple(f for f in firsts[-1] if all(f in fs for fs in firsts)) if firsts else ()
        c = Column(op.id, pb_synopsis=op.term_id or None, pb_filters=common)
        return Vec(joined.keys, [self.derived(op, c)], rows, joined.notes, joined.runs if len(vecs) == 1 else None)

    def _samples(self, op: qf.Operator, vec: Vec) -> list[float]:
        """The values of a distrib's or frequency's input: one value column, numbers."""
        if len(vec.values) != 1:
            raise self.fail(op, f"{op.type} takes one value column (its input has {len(vec.values)}); "
                            "give its source one <result>")
        self.check_type(op, vec.values[0].name, vec.values[0].datatype)
        return [float(r[1][0]) for r in vec.rows if r[1][0] is not None]

    def distrib(self, op: qf.Operator, vec: Vec) -> Vec:
        """distrib (perfbase's): the values counted into bins of width value= (else a hundredth of their
        range; the first bin starts at a multiple of the width); a row per bin, keyed by its lower limit.
        variant normalized gives percent, cumulative the percent up to the bin, nonzero a row per value."""
        if len({r[0] for r in vec.rows}) > 1:
            raise self.fail(op, f"its input has rows for several values of {', '.join(k.name for k in vec.keys)}; "
                            "distrib takes one set of parameter values: filter the parameters to one value")
        samples = sorted(self._samples(op, vec))
        c = vec.values[0]
        bins: list[tuple[float, float]] = []
        if op.variant == "nonzero":
            bins = [(x, float(n)) for x, n in sorted(collections.Counter(samples).items())]
        elif samples:
            lo, hi = samples[0], samples[-1]
            width = op.value if op.value is not None else (hi - lo) / 100
            if op.value is not None:
                lo = math.floor(lo / width) * width
            bins = [(lo, x) for x in _bin_counts(samples, lo, width, op.variant)]
            limit = lo
            for n in range(len(bins)):  # perfbase adds up the limits bin by bin
                bins[n] = (limit, bins[n][1])
                limit += width
        integral = op.variant in ("absolute", "nonzero")
        # perfbase stores the limits (and fractions) as printed with %e: 7 significant digits
        rows = [((float(f"{lim:e}"),), [int(x) if integral else float(f"{x:e}")], [None]) for lim, x in bins]
        base = c.name.split(" ")[0]  # perfbase names it after the variable, not an operator's column
        key = Column(f"bin({base})", c.unit, "key", label="sample value distribution", datatype="float")
        label = {"normalized": "probability [%]", "cumulative": "cumulative probability [%]"}.get(
            op.variant, "sample value count")
        shown = (*c.pb_filters, f"N_samples = {len(samples)}") if op.samples_note else c.pb_filters
        value = Column(op.alias or f"samples({base})", "", "value", label=label,
                       datatype="integer" if integral else "float", statistic="distrib", pb_filters=shown)
        notes = list(vec.notes)
        if op.samples_note:
            notes += [(sid, f"N_samples = {len(samples)}") for sid in dict.fromkeys(sid for sid, _ in vec.notes)]
        return Vec([key], [value], rows, notes)

    def frequency(self, op: qf.Operator, vec: Vec) -> Vec:
        """frequency (perfbase's): the number of rows per interval of width value= (1 without it) of the
        first parameter's values, in the input's order, divided by the width; it starts and ends with 0."""
        if not vec.keys:
            raise self.fail(op, "its input has no parameter to count the rows over; give its source a parameter")
        self._samples(op, vec)
        width = op.value if op.value is not None else 1.0
        times = [float(r[0][0]) for r in vec.rows if r[0][0] is not None]
        rows: list[tuple[float, float]] = []
        if times:
            start, count = times[0], 0
            end = start + width
            rows.append((start, 0.0))
            for t in times:
                while t >= end:  # an interval complete (empty ones too)
                    rows.append((start, count / width))
                    count, start = 0, end
                    end = start + width
                count += 1
            rows += [(start, count / width), (start + width, count / width), (start + 2 * width, 0.0)]
        k, c = vec.keys[0], vec.values[0]
        unit = _frequency_unit(k.unit)
        value = Column(op.alias or f"freq({c.name.split(' ')[0]})", unit, "value", label="data frequency",
                       datatype="float", statistic="frequency", pb_filters=c.pb_filters)
        return Vec([k], [value], [((_py2_float(t),), [f], [None]) for t, f in rows], list(vec.notes))

    def passing(self, op: qf.Operator, vecs: list[tuple[str, Vec]]) -> Vec:
        """null and sort (perfbase's): the rows of all inputs in one vector, one
        column per value name; sort orders them by the value= columns (else
        by the first key), stable: rows that compare equal keep their order."""
        try:
            vec = _stack(vecs)
        except _Unmatched as exc:
            raise self.fail(op, str(exc)) from None
        if op.type == "null" or op.variant == "none":
            return vec
        names = [k.name for k in vec.keys] + [c.name for c in vec.values]
        if op.sort_by:
            at = []
            for name in op.sort_by:
                i = _column_index(names, name)
                if i is None:
                    raise self.fail(op, f"value= names {name!r}, which its inputs do not give; name one of "
                                    f"{', '.join(names)}")
                at.append(i)
        else:
            at = [0] if names else []
        def key(n: int) -> tuple:
            return sort_key(tuple((list(vec.rows[n][0]) + list(vec.rows[n][1]))[i] for i in at))

        if self.pb_order:  # perfbase sorted by SQL on PostgreSQL: rows that compare equal come as its qsort leaves them
            order = _pg_qsort([key(n) for n in range(len(vec.rows))], op.variant == "descending")
        else:
            order = sorted(range(len(vec.rows)), reverse=op.variant == "descending", key=key)
        return Vec(vec.keys, vec.values, [vec.rows[n] for n in order], vec.notes,
                   None if vec.runs is None else [vec.runs[n] for n in order])

    def limit(self, op: qf.Operator, vec: Vec) -> Vec:
        """limit and abslimit (perfbase's): the rows whose compared value (option=,
        else the first value) passes the condition; a row without it does not."""
        names = [k.name for k in vec.keys] + [c.name for c in vec.values]
        if op.sort_by:
            i = _column_index(names, op.sort_by[0])
            if i is None:
                raise self.fail(op, f"option= names {op.sort_by[0]!r}, which its input does not give; name one of "
                                f"{', '.join(names)}")
        else:
            i = len(vec.keys)
        test = {"less": float.__lt__, "lessequal": float.__le__, "equal": float.__eq__,
                "notequal": float.__ne__, "greaterequal": float.__ge__, "greater": float.__gt__}[op.variant]
        kept = []
        for n, row in enumerate(vec.rows):
            x = (list(row[0]) + list(row[1]))[i]
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                if test(float(abs(x) if op.type == "abslimit" else x), float(op.value)):
                    kept.append(n)
        # perfbase's label: "r1,r1>4 " (the compared value's name, the condition as written)
        what = op.sort_by[0] if op.sort_by else (vec.values[0].name.split(" ")[0] if vec.values else "")
        cond = {"less": "<", "lessequal": "<=", "equal": "=", "notequal": "!=", "greaterequal": ">=",
                "greater": ">"}[op.variant] + _show(op.value)
        values = [dataclasses.replace(c, pb=op.alias or (f"abs({_pb(c)})" if op.type == "abslimit" else _pb(c))
                                      + f",{what}{cond} ") for c in vec.values]
        return Vec(vec.keys, values, [vec.rows[n] for n in kept], vec.notes,
                   None if vec.runs is None else [vec.runs[n] for n in kept])

    def normalize(self, op: qf.Operator, vec: Vec) -> Vec:
        """normalize (perfbase's): each value column scaled (variant="scale") or
        shifted ("offset") so that its first value becomes value= (1 or 0)."""
        target = op.value if op.value is not None else (1.0 if op.variant == "scale" else 0.0)
        firsts = [next((r[1][j] for r in vec.rows if r[1][j] is not None), None) for j in range(len(vec.values))]
        rows = []
        for kv, vals, errs in vec.rows:
            out, oerr = [], []
            for x, e, first in zip(vals, errs, firsts, strict=True):
                if x is None or first is None or (op.variant == "scale" and first == 0):
                    out.append(None)
                    oerr.append(None)
                elif op.variant == "scale":
                    out.append(x * target / first)
                    oerr.append(e * abs(target / first) if e is not None else None)
                else:
                    shifted = x + target - first
                    # whole numbers shifted by a whole number stay whole (perfbase keeps the integer type)
                    keep = isinstance(x, int) and isinstance(first, int) and float(target).is_integer()
                    out.append(int(shifted) if keep else shifted)
                    oerr.append(e)
            rows.append((kv, out, oerr))
        return Vec(vec.keys, [self.derived(op, c) for c in vec.values], rows, vec.notes, vec.runs)

    def runindex(self, op: qf.Operator, vec: Vec) -> Vec:
        """runindex (perfbase's): each row's value replaced by the index of the
        run it comes from; -1 for a row made from several runs (an avg)."""
        if len(vec.values) != 1:
            raise self.fail(op, f"runindex takes one value column (its input has {len(vec.values)}); "
                            "give its source one <result>")
        runs = vec.runs if vec.runs is not None else [-1] * len(vec.rows)
        rows = [(kv, [ridx], [None]) for (kv, _, _), ridx in zip(vec.rows, runs, strict=True)]
        c = self.derived(op, vec.values[0])
        return Vec(vec.keys, [dataclasses.replace(c, unit="", datatype="integer")], rows, vec.notes, runs)

    def param(self, op: qf.Operator, vec: Vec) -> Vec:
        """param (perfbase's): a vector of run indexes (runindex's) made the
        values of a parameter that occurs once per run, in those runs."""
        v = self.variable(op, op.parameter, False)
        if v.occurrence != "once":
            raise self.fail(op, f"{v.name!r} has several values per run; give a parameter that occurs once")
        if len(vec.values) != 1 or vec.values[0].statistic != "runindex":
            raise self.fail(op, "its input is no vector of run indexes; give it a runindex operator's")
        idxs = {x for _, vals, _ in vec.rows for x in vals if x is not None}
        if -1 in idxs:
            raise self.fail(op, "a row comes from several runs (run index -1, e.g. an avg's); "
                            "give it the runindex of a min or max")
        source, col, _ = from_clause(self.store, self.exp_id, self.d, [v.name])
        r = self.store.runs
        found = dict(self.conn.execute(sa.select(r.c.idx, col(v.name)).select_from(source)
                                       .where(r.c.idx.in_(sorted(idxs)))).all()) if idxs else {}
        rows = [(kv, [_plain(v, found.get(vals[0]))], [None]) for kv, vals, _ in vec.rows]
        return Vec(vec.keys, [_column(v, "value")], rows, vec.notes, vec.runs)

    def slice(self, op: qf.Operator, vec: Vec) -> Vec:
        """slice, latest and oldest (perfbase's): the rows of the runs that the
        slice [a:b] of the vector's runs (in the order they were filed) spans."""
        runs = vec.runs if vec.runs is not None else [-1] * len(vec.rows)
        # the runs in filing order; perfbase's outputs: in the order they come (the source's chronology)
        order = list(dict.fromkeys(runs)) if self.pb_order else sorted(set(runs))
        text = {"latest": "[-1:]", "oldest": "[:1]"}.get(op.type, op.slice or "[:]")
        a, _, b = text[1:-1].partition(":")
        picked = order[slice(int(a) if a else None, int(b) if b else None)]
        if not picked:
            raise self.fail(op, f"the slice {text} of its {len(order)} runs is empty; give a range of them")
        kept = [n for n, ridx in enumerate(runs) if ridx in picked]
        values = [dataclasses.replace(c, pb=op.alias or f"{op.type}({_pb(c)})") for c in vec.values]
        return Vec(vec.keys, values, [vec.rows[n] for n in kept], vec.notes, [runs[n] for n in kept])


# -- vectors --------------------------------------------------------------------


def _pg_qsort(keys: list[tuple], descending: bool = False) -> list[int]:
    """The order (indices into keys) in which PostgreSQL's ORDER BY leaves rows read in this order: its
    in-memory sort is Bentley and McIlroy's quicksort (src/port/qsort.c), which is not stable, so that rows
    with equal keys come in an order of its own, deterministic for a given input order.  perfbase's sort
    operator (ORDER BY on its query table) gives its ties in that order."""
    a = list(range(len(keys)))

    def cmp(x: int, y: int) -> int:
        kx, ky = keys[x], keys[y]
        r = (kx > ky) - (kx < ky)
        return -r if descending else r

    def med3(x: int, y: int, z: int) -> int:
        if cmp(a[x], a[y]) < 0:
            return y if cmp(a[y], a[z]) < 0 else z if cmp(a[x], a[z]) < 0 else x
        return y if cmp(a[y], a[z]) > 0 else x if cmp(a[x], a[z]) < 0 else z

    def swap(i: int, j: int, k: int = 1) -> None:
        for t in range(k):
            a[i + t], a[j + t] = a[j + t], a[i + t]

    todo = [(0, len(a))]  # the parts left to sort (PostgreSQL recurses: the parts are apart, the order is the same)
    while todo:
        lo, n = todo.pop()
        while True:
            if n < 7:  # insertion sort
                for pm in range(lo + 1, lo + n):
                    pl = pm
                    while pl > lo and cmp(a[pl - 1], a[pl]) > 0:
                        swap(pl, pl - 1)
                        pl -= 1
                break
            if all(cmp(a[i - 1], a[i]) <= 0 for i in range(lo + 1, lo + n)):  # already in order
                break
            pm = lo + n // 2
            if n > 7:
                pl, pn = lo, lo + n - 1
                if n > 40:
                    d = n // 8
                    pl, pm, pn = med3(pl, pl + d, pl + 2 * d), med3(pm - d, pm, pm + d), med3(pn - 2 * d, pn - d, pn)
                pm = med3(pl, pm, pn)
            swap(lo, pm)
            pa = pb = lo + 1
            pc = pd = lo + n - 1
            while True:
                while pb <= pc and (r := cmp(a[pb], a[lo])) <= 0:
                    if r == 0:
                        swap(pa, pb)
                        pa += 1
                    pb += 1
                while pb <= pc and (r := cmp(a[pc], a[lo])) >= 0:
                    if r == 0:
                        swap(pc, pd)
                        pd -= 1
                    pc -= 1
                if pb > pc:
                    break
                swap(pb, pc)
                pb += 1
                pc -= 1
            pn = lo + n
            r = min(pa - lo, pb - pa)
            swap(lo, pb - r, r)
            r = min(pd - pc, pn - pd - 1)
            swap(pb, pn - r, r)
            if pb - pa > 1:
                todo.append((lo, pb - pa))
            if pd - pc <= 1:
                break
            lo, n = pn - (pd - pc), pd - pc

    return a


def _bin_counts(samples: list[float], lo: float, width: float, variant: str) -> list[float]:
    """perfbase's bins of the sorted samples from lo: a sample on a bin's upper limit is in that bin."""
    limit, at = lo + width, 0
    bins = [0.0]
    share = 100.0 / len(samples)
    for x in samples:
        if x > limit:
            more = int(1 + math.floor((x - limit) / width))
            limit += width * more
            bins += [bins[at] if variant == "cumulative" else 0.0] * more
            at += more
        bins[at] += 1 if variant == "absolute" else share
    return bins


# the prefixes of perfbase's units by their factor (its pb_scale_values), longest first
_PREFIXES = {"Ki": 1024.0, "Mi": 1024.0**2, "Gi": 1024.0**3, "Ti": 1024.0**4, "Pi": 1024.0**5, "K": 1e3, "M": 1e6,
             "G": 1e9, "T": 1e12, "P": 1e15, "m": 1e-3, "u": 1e-6, "n": 1e-9, "p": 1e-12, "f": 1e-15}
_BASE_UNITS = ("none", "%", "ppm", "byte", "bit", "flop", "op", "process", "event", "s", "Hz", "h", "d", "a", "m",
               "g", "A", "K", "mol", "cd", "$", "Y", "EUR")


def _prefix_of(unit: str) -> tuple[str, float]:
    if unit in _BASE_UNITS:
        return "", 1.0
    return next(((p, f) for p, f in _PREFIXES.items() if unit.startswith(p)), ("", 1.0))


def _scaled_unit(unit: str, factor: float) -> str:
    """The unit of values multiplied by a named factor: its prefix divided by it (s * 1e6: us); unchanged
    where no prefix stands for the quotient."""
    prefix, scale = _prefix_of(unit)
    new = scale / factor
    if math.isclose(new, 1.0):
        return unit[len(prefix):]
    name = next((p for p, f in _PREFIXES.items() if math.isclose(f, new)), None)
    return unit if name is None else name + unit[len(prefix):]


def _frequency_unit(unit: str) -> str:
    """Hz for a time unit, with the inverse of its prefix (us: MHz); none for other units."""
    if unit[-1:] not in ("s", "h", "d", "a"):
        return ""
    _, scale = _prefix_of(unit)
    return next((p for p, f in _PREFIXES.items() if math.isclose(f, 1 / scale)), "") + "Hz"


def _py2_float(x: float) -> float:
    """A float as perfbase stored it through Python 2's str(): 12 significant digits."""
    return float(f"{x:.12g}")


def _pb_stored(x: object) -> object:
    """A float as perfbase passed it from one element to the next: read from PostgreSQL (15 significant
    digits), then written into the next query table with Python 2's str() (12)."""
    return _py2_float(float(f"{x:.15g}")) if isinstance(x, float) and math.isfinite(x) else x


def _run_readers(q: qf.QueryFile) -> set[str]:
    """The elements whose rows' runs a later runindex, slice, latest or oldest
    reads (through the operators that pass rows on)."""
    need: set[str] = set()
    for elem in reversed(list(q.elements.values())):
        if isinstance(elem, qf.Operator) and (elem.type in (*qf.RUNS, *qf.SLICES) or elem.id in need):
            if elem.type in (*qf.RUNS, *qf.SLICES, *qf.PASSING, *qf.LIMITS, "normalize", *qf.LINEAR):
                need.update(elem.inputs)
    return need


def _column_index(names: list[str], name: str) -> int | None:
    """The column a value= or option= names: by its name, or by the variable an
    operator's column was made from ("r1" for "r1 max")."""
    if name in names:
        return names.index(name)
    return next((i for i, n in enumerate(names) if n.split(" ")[0] == name), None)


def _labelled(op: qf.Operator, vecs: list[tuple[str, Vec]], out: Vec) -> Vec:
    """An operator's vector with perfbase's labels as its first <input label=...> asks: "ignore" keeps the
    input's labels, "explicit" gives labeltext (of one input column to one column, by position)."""
    kind, text = op.label
    if kind not in ("ignore", "explicit") or not vecs or len(vecs[0][1].values) != len(out.values):
        return out
    return dataclasses.replace(out, values=[dataclasses.replace(c, pb=text if kind == "explicit" else _pb(src))
                                            for c, src in zip(out.values, vecs[0][1].values, strict=True)])


def _stack(vecs: list[tuple[str, Vec]]) -> Vec:
    """The rows of the vectors one after the other (perfbase's operators that
    store all their inputs in one table): the keys of the first, one value
    column per distinct name, empty where an input has no such column."""
    if len(vecs) == 1:
        return vecs[0][1]
    keys = vecs[0][1].keys
    names = [k.name for k in keys]
    for i, v in vecs[1:]:
        if [k.name for k in v.keys] != names:
            raise _Unmatched(
                f"inputs {vecs[0][0]!r} and {i!r} have different parameters "
                f"({', '.join(names)} vs {', '.join(k.name for k in v.keys)}); "
                "give them the same parameters in their sources"
            )
    cols: dict[str, Column] = {}
    for _, v in vecs:
        for c in v.values:
            cols.setdefault(c.name, c)
    runs = None if any(v.runs is None for _, v in vecs) else [x for _, v in vecs for x in v.runs]
    order = list(cols)
    rows = []
    for _, v in vecs:
        where = [order.index(c.name) for c in v.values]
        for kv, vals, errs in v.rows:
            out, oerr = [None] * len(order), [None] * len(order)
            for j, x, e in zip(where, vals, errs, strict=True):
                out[j], oerr[j] = x, e
            rows.append((kv, out, oerr))
    notes = list(dict.fromkeys(n for _, v in vecs for n in v.notes))
    return Vec(keys, list(cols.values()), rows, notes, runs)


def _omit(vecs: list[tuple[str, Vec]], omit: list[tuple[str, str]]) -> Vec:
    """One input's vector without the columns a combiner's <omit> names (by name or by the variable a
    column was made from): parameters leave the keys, results the values."""
    ident, vec = vecs[0]
    names = {name for src, name in omit if src in ("", ident)}
    if not names:
        return vec

    def gone(c: Column) -> bool:
        return c.name in names or c.name.split(" ")[0] in names

    keep_k = [j for j, c in enumerate(vec.keys) if not gone(c)]
    keep_v = [j for j, c in enumerate(vec.values) if not gone(c)]
    rows = [(tuple(kv[j] for j in keep_k), [vals[j] for j in keep_v], [errs[j] for j in keep_v])
            for kv, vals, errs in vec.rows]
    return Vec([vec.keys[j] for j in keep_k], [vec.values[j] for j in keep_v], rows, vec.notes, vec.runs)


class _Unmatched(UsageError):
    """Vectors that cannot be put side by side (the element using them names itself)."""


def _match(inputs: list[tuple[str, dict[Instance, Vec]]]) -> list[tuple[Instance, list[tuple[str, Vec]]]]:
    """The sweep instances an element with these inputs works on: every
    consistent choice of one instance per input (an input that is not swept
    over a parameter goes with every value of it)."""
    combos: list[tuple[dict[str, str], list[tuple[str, Vec]]]] = [({}, [])]
    for ident, instances in inputs:
        nxt = []
        for labels, chosen in combos:
            for inst, vec in instances.items():
                if all(labels.get(k, v) == v for k, v in inst):
                    nxt.append(({**labels, **dict(inst)}, [*chosen, (ident, vec)]))
        combos = nxt
    return [(tuple(sorted(labels.items())), chosen) for labels, chosen in combos]


def _index_join(vecs: list[tuple[str, Vec]], modulo: bool = False) -> Vec:
    """perfbase's match="index": the inputs' rows paired by their position (as far as every input has one),
    with the parameters of the last input (perfbase's SQL takes them from the last table it names).
    modulo (two inputs): each row of the longer paired with the row of the shorter at its position modulo
    the shorter's length, with the parameters of the first input (perfbase's match="modulo")."""
    if modulo and any(not v.rows for _, v in vecs):
        raise _Unmatched('match="modulo" needs rows in both inputs (one has none); check their filters')
    long = max(len(v.rows) for _, v in vecs)
    n = long if modulo else min(len(v.rows) for _, v in vecs)
    at = Column("#", "", "key", datatype="integer")
    indexed = [(i, dataclasses.replace(v, keys=[at], rows=[((k,), *v.rows[k % len(v.rows)][1:]) for k in range(n)]
                                       if modulo else [((k,), vals, errs) for k, (_, vals, errs)
                                                       in enumerate(v.rows[:n])]))
               for i, v in vecs]
    joined = _join(indexed, outer=False)
    src = vecs[0][1] if modulo else vecs[-1][1]
    return dataclasses.replace(joined, keys=src.keys, rows=[(src.rows[kv[0] % len(src.rows)][0], vals, errs)
                                                             for kv, vals, errs in joined.rows])


def _join(vecs: list[tuple[str, Vec]], outer: bool) -> Vec:
    """The vectors side by side, rows matched by equal keys; vectors without
    keys go with every row.  outer: rows missing from an input are empty
    there (combiners), else left out (element-wise operators)."""
    if not vecs:  # e.g. a sweep over a parameter without values
        return Vec([], [], [])
    keyed = [(i, v) for i, v in vecs if v.keys]
    keys = keyed[0][1].keys if keyed else []
    names = [k.name for k in keys]
    for i, v in keyed:
        if [k.name for k in v.keys] != names:
            raise _Unmatched(
                f"inputs {keyed[0][0]!r} and {i!r} have different parameters "
                f"({', '.join(names)} vs {', '.join(k.name for k in v.keys)}); "
                "match them with the same parameters in their sources"
            )
    tables = []
    for i, v in vecs:
        by: dict[tuple, tuple[list, list]] = {}
        for kv, vals, errs in v.rows:
            if kv in by:
                shown = ", ".join(f"{n}={_show(x)}" for n, x in zip(names, kv, strict=True)) or "its one row"
                raise _Unmatched(
                    f"input {i!r} has several rows for {shown}; aggregate it first (an avg, max, ... operator on it)"
                )
            by[kv] = (vals, errs)
        tables.append((i, v, by))
    if keys:
        all_keys = [kv for kv in dict.fromkeys(kv for _, v, by in tables if v.keys for kv in by)]
        if not outer:
            all_keys = [kv for kv in all_keys if all(kv in by for _, v, by in tables if v.keys)]
        all_keys.sort(key=sort_key)
    else:
        all_keys = [()] if outer or all(by for _, _, by in tables) else []
    if not outer and any(not by for _, v, by in tables if not v.keys):
        all_keys = []  # a reduction without a value matches nothing
    rows = []
    for kv in all_keys:
        vals, errs = [], []
        for _, v, by in tables:
            got = by.get(kv if v.keys else ())
            vals += got[0] if got else [None] * len(v.values)
            errs += got[1] if got else [None] * len(v.values)
        rows.append((kv, vals, errs))
    cols = []
    seen = [c.name for _, v in vecs for c in v.values]
    for i, v in vecs:
        for c in v.values:
            if seen.count(c.name) > 1:  # the same name from two inputs: tell them apart by input id
                c = dataclasses.replace(c, name=f"{c.name} ({i})", label=f"{c.label or c.name} ({i})")
            cols.append(c)
    notes = list(dict.fromkeys(n for _, v in vecs for n in v.notes))
    return Vec(keys, cols, rows, notes)


def _table(out: qf.Output, inputs: list[tuple[str, dict[Instance, Vec]]], experiment: str) -> ResultTable:
    """An output's inputs, all sweep instances, as one table: one value
    column per input value and instance.  perfbase's outputs print each
    input on its own: their table carries the blocks (pb_blocks)."""
    if out.format in qf.PERFBASE_FORMATS:
        return _pb_table(out, inputs, experiment)
    parts: list[tuple[str, Vec]] = []
    swept = any(inst for _, instances in inputs for inst in instances)
    for ident, instances in inputs:
        for inst, vec in instances.items():
            if swept and inst:
                suffix = " [" + ", ".join(f"{n}{x}" for n, x in inst) + "]"
                vec = Vec(
                    vec.keys,
                    [
                        dataclasses.replace(c, name=c.name + suffix, label=(c.label or c.name) + suffix)
                        for c in vec.values
                    ],
                    vec.rows,
                    vec.notes,
                )
            parts.append((ident, vec))
    if not parts:  # every input swept over a parameter without values
        raise _Unmatched(
            "no run matches its sources (a sweep found no values); check the filters and --where "
            "(psbase ls EXPERIMENT lists the runs)"
        )
    joined = parts[0][1] if len(parts) == 1 else _join(parts, outer=True)
    has_error = [any(r[2][j] is not None for r in joined.rows) for j in range(len(joined.values))]
    cols = list(joined.keys)
    for c, e in zip(joined.values, has_error, strict=True):
        cols.append(c)
        if e:
            cols.append(Column(f"{c.name} stddev", c.unit, "error", of=c.name, label=f"{c.label or c.name} stddev"))
    rows = []
    for kv, vals, errs in joined.rows:
        row = list(kv)
        for x, err, e in zip(vals, errs, has_error, strict=True):
            row.append(x)
            if e:
                row.append(err)
        rows.append(tuple(row))
    title = out.title or (
        ", ".join(c.name for c in joined.values)
        + (f" by {', '.join(k.name for k in joined.keys)}" if joined.keys else "")
    )
    return ResultTable(title, cols, rows, experiment=experiment, notes=_notes(joined.notes), empty_ok=True)


def _notes(notes: list[tuple[str, str]]) -> list[str]:
    """The fixed parameter values of the sources: plain where every source
    has it, else after the ids of the sources that have it."""
    sources = {sid for sid, _ in notes}
    out = []
    for text in dict.fromkeys(t for _, t in notes if t):
        ids = [sid for sid in dict.fromkeys(sid for sid, t in notes if t == text)]
        out.append(text if set(ids) == sources else f"{', '.join(ids)}: {text}")
    return out


# -- arithmetic -------------------------------------------------------------------


def _reduce(kind: str, xs: list, q: float | None, upper: bool = False) -> tuple[object, float | None]:
    """A statistic or reduction of the values xs: (value, error)."""
    if kind == "count":
        return len(xs), None
    if not xs:
        return None, None
    if kind == "avg":
        return statistics.fmean(xs), (statistics.stdev(xs) if len(xs) > 1 else None)
    if kind == "stddev":
        return (statistics.stdev(xs) if len(xs) > 1 else None), None
    if kind == "variance":
        return (statistics.variance([float(x) for x in xs]) if len(xs) > 1 else None), None
    if kind == "median":  # perfbase's: the lower middle value of an even count (its 50 % quantile)
        return float(sorted(xs)[math.ceil(len(xs) * 0.5) - 1]), None
    if kind == "quantile" and q > 1:  # perfbase's: percent, the empirical quantile (a value of xs)
        s = sorted(xs, reverse=upper)
        return float(s[min(math.ceil(len(s) * q / 100.0) - 1, len(s) - 1)]), None
    if kind == "quantile":
        s = sorted(xs, reverse=upper)
        pos = (len(s) - 1) * q
        lo = math.floor(pos)
        hi = min(lo + 1, len(s) - 1)
        return float(s[lo] + (s[hi] - s[lo]) * (pos - lo)), None
    if kind == "min":
        return min(xs), None
    if kind == "max":
        return max(xs), None
    if kind == "sum":
        return sum(xs), None
    return float(math.prod(xs)), None


def _elementwise(kind: str, xs: list) -> object:
    if any(x is None for x in xs):
        return None
    if kind in qf.REDUCTIONS:
        return _reduce(kind, xs, None)[0]
    a, b = xs
    if kind == "diff":
        return a - b
    if b == 0:
        return None  # no value rather than infinity: a plot or a later operator cannot use one
    return {"div": a / b, "percentof": 100.0 * a / b, "above": 100.0 * (a - b) / b, "below": 100.0 * (b - a) / b}[kind]


def _linear(kind: str, x: object, value: float | None) -> object:
    if x is None:
        return None
    out = x * value if kind == "scale" else x + value
    return int(out) if isinstance(x, int) and float(out).is_integer() and kind == "offset" else out


def _evaluate(tree: ast.Expression, env: dict[str, object]) -> float | None:
    """An eval term (checked by queryfile) for one row; None where an input
    has no value or the arithmetic has none (division by zero, log of 0)."""
    try:
        value = float(arith.evaluate(tree, env))
    except (ArithmeticError, ValueError, TypeError):
        return None
    return value if math.isfinite(value) else None


# -- values -----------------------------------------------------------------------


def _plain(v: Variable, x: object) -> object:
    """A database value as a vector holds it: durations as seconds."""
    value = from_db(v, x)
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if v.datatype == "integer" and value is not None:
        return int(value)
    return value


def _column(v: Variable, role: str) -> Column:
    datatype = "float" if v.datatype == "duration" else v.datatype
    unit = v.unit or ("s" if v.datatype == "duration" else "")
    return Column(v.name, unit, role, label=v.synopsis, datatype=datatype, pb_unit=unit_text(v.unit or ""))


def _show(x: object) -> str:
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def _label(f: qf.Filter) -> str:
    """A sweep filter as the text after the parameter's name: =1, =2|4, >=2&<=4."""
    if all(op == "equal" for op, _ in f.conditions) and (f.boolean == "or" or len(f.conditions) == 1):
        return "=" + "|".join(x for _, x in f.conditions)
    signs = {"equal": "=", "notequal": "!=", "lesser": "<", "lessequal": "<=", "greater": ">", "greaterequal": ">=",
             "regexp": "~", "match": " like "}
    return ("&" if f.boolean == "and" else "|").join(f"{signs[op]}{x}" for op, x in f.conditions)



# -- perfbase's labels ------------------------------------------------------------


def pb_filter_text(v: Variable, filters: list[qf.Filter], boolean: str, style: str = "full", alias: str = "") -> str:
    """A parameter's filters as perfbase writes them in a data title: "S_msg >= 2byte OR S_msg = 0byte",
    values as written in the query (quoted for strings, versions, dates), each followed by the unit; the
    parameter named by its <value alias=...> where it has one, as perfbase names it."""
    name = alias or v.name
    unit = unit_text(v.unit or "")
    parts = []
    for f in filters:
        left = list(f.conditions)
        ordered = []
        while left:  # perfbase takes one condition of each kind per round, kinds in a fixed order
            for kind, _ in _PB_CONDITIONS:
                at = next((i for i, (op, _) in enumerate(left) if op == kind), None)
                if at is not None:
                    ordered.append(left.pop(at))
        sign = dict(_PB_CONDITIONS)
        texts = [_pb_condition_text(name, op, sign[op], f"{_pb_quoted(v, x)}{unit}", style) for op, x in ordered]
        parts.append(f" {f.boolean.upper()} ".join(texts))
    return f" {boolean.upper()} ".join(parts)


def _pb_condition_text(name: str, op: str, sign: str, value: str, style: str) -> str:
    """One condition of a filter as perfbase shows it by the parameter's style= (its equal and notequal
    have styles; the other conditions are always NAME SIGN VALUE)."""
    if op == "equal":
        return {"plain": f"{name} {value}", "content": value, "reverse": f"{value} {name}",
                "value": name}.get(style, f"{name} = {value}")
    if op == "notequal":
        return {"content": f"not {value}", "value": name}.get(style, f"{name} != {value}")
    return f"{name} {sign} {value}"


def _pb_quoted(v: Variable, text: str) -> str:
    return f"'{text}'" if v.datatype in PB_QUOTED else text


def _pb_source_column(src: qf.Source, v: Variable, notes: list[tuple[str, str]], pb: bool = False) -> Column:
    """A source's result column with perfbase's label (its alias) and the filters perfbase shows for it
    (the notes under PB_FILTER)."""
    # for perfbase's outputs (pb) a duration keeps its datatype: they print its values as Python's timedelta
    plain = _column(v, "value")
    return dataclasses.replace(plain, pb=src.aliases.get(v.name, ""),
                               datatype="duration" if pb and v.datatype == "duration" else plain.datatype,
                               pb_filters=tuple(t for sid, t in notes if sid == PB_FILTER))


def _pb_key(src: qf.Source, v: Variable) -> Column:
    """A source's parameter column with perfbase's label (its alias)."""
    return dataclasses.replace(_column(v, "key"), pb=next((p.alias for p in src.params if p.name == v.name), ""))


def _plain_notes(notes: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [n for n in notes if n[0] != PB_FILTER]


def _pb(c: Column) -> str:
    """A column's perfbase label."""
    return c.pb or c.name


def _pb_unit(c: Column) -> str:
    return c.unit if c.pb_unit is None else c.pb_unit


_PB_SIGNS = {"percentof": " % of ", "above": " % more than ", "below": " % less then "}  # perfbase's words


def _pb_op_label(op: qf.Operator, c: Column, other: Column | None) -> str:
    """The label perfbase gives an operator's column made from c (and other's): avg(r), sum(r,r), r-r,
    [r % of r], r*2.0, 20.0-quantile(r), runindex(min(T_pp))."""
    kind, a = op.type, _pb(c)
    b = _pb(other) if other is not None else a
    if op.alias:
        return op.alias
    if kind in ("diff", "div"):
        return a + ("-" if kind == "diff" else "/") + b
    if kind in _PB_SIGNS:  # perfbase names the inputs last to first
        return f"[{b}{_PB_SIGNS[kind]}{a}]"
    if kind in ("scale", "offset"):
        return a + ("*" if kind == "scale" else "+") + py2str(float(op.value or 0))
    if kind == "normalize":
        target = op.value if op.value is not None else (1.0 if op.variant == "scale" else 0.0)
        return f"{a} {'normalized' if op.variant == 'scale' else 'shifted'} to {py2str(float(target))}"
    if kind == "quantile":
        return f"{py2str(float(op.value or 0))}-quantile({a})"
    if other is not None:
        return f"{kind}({a},{b})"
    return f"{kind}({a})"


def _pb_table(out: qf.Output, inputs: list[tuple[str, dict[Instance, Vec]]], experiment: str) -> ResultTable:
    """perfbase's view of an output: per input (and sweep instance) a block of its parameter and result
    columns (perfbase's label and unit), the filters it shows and its rows as they are (no join: perfbase
    prints each input separately).  The table's own columns and rows are those of the first block."""
    from psuite.psbase.output.perfbase_gnuplot import PlotBlock
    from psuite.psbase.output.perfbase_text import Block

    blocks = []
    for ident, instances in inputs:
        for _, vec in instances.items():
            filters = [f for c in vec.values for f in c.pb_filters]  # perfbase's: each result's, repeated
            durations = [c.datatype == "duration" for c in vec.values]
            rows = [(*kv, *vals) for kv, vals, _ in vec.rows]
            if any(durations) and out.format != "pbgnuplot":  # perfbase prints a duration as Python's timedelta
                rows = [(*kv, *(_dt.timedelta(seconds=x) if d and isinstance(x, int | float) else x
                                for d, x in zip(durations, vals, strict=True))) for kv, vals, _ in vec.rows]
            args = (ident, [(_pb(k), _pb_unit(k)) for k in vec.keys], [(_pb(c), _pb_unit(c)) for c in vec.values],
                    filters, rows)
            if out.format == "pbgnuplot":  # a plot also shows the synopses and the first result's filters
                blocks.append(PlotBlock(*args, synopses=[_pb_synopsis(c) for c in [*vec.keys, *vec.values]],
                                        first_filters=list(vec.values[0].pb_filters) if vec.values else []))
            else:
                blocks.append(Block(*args))
    first = next((vec for _, instances in inputs for vec in instances.values()), Vec([], [], []))
    # the columns without units: perfbase's outputs print the values as they are (--unit converts none)
    cols = [dataclasses.replace(c, unit="") for c in [*first.keys, *first.values]]
    spec = None
    if out.format == "pbgnuplot":
        from psuite.psbase.output.perfbase_gnuplot import Spec

        spec = Spec(out.pb_attrs, out.pb_inputs, out.options, out.filename, out.unify, out.title)
    return ResultTable(out.title or out.id, cols, [(*kv, *vals) for kv, vals, _ in first.rows],
                       experiment=experiment, empty_ok=True, pb_blocks=blocks, pb_spec=spec)


_PB_OP_SYNOPSIS = {"percentof": "", "above": "relative increase", "below": "relative decrease"}  # perfbase's


def _pb_synopsis(c: Column) -> str:
    """perfbase's synopsis of a column (an operator's: see _Run.derived), else its label."""
    return c.label if c.pb_synopsis is None else c.pb_synopsis


def _pb_merge(vecs: list[tuple[str, Vec]], parameters: str = "unique", mkparam: bool = False) -> Vec:
    """perfbase's combiner datasets="merge" (its SQL joins the inputs' query tables on the row index): the
    n-th rows of all inputs make its n-th row, as far as every input has one; its parameters are each
    input's (parameters="unique": a name already there is left out; "all": every one; "none": none), then
    all their results; with mkparam, a combination without parameters takes its first result as one."""
    keys: list[Column] = []
    take: list[tuple[int, int]] = []  # (input, key) of each parameter column
    for n, (_, v) in enumerate(vecs):
        for j, k in enumerate(v.keys):
            if parameters == "all" or parameters == "unique" and k.name not in {c.name for c in keys}:
                keys.append(k)
                take.append((n, j))
    values = [c for _, v in vecs for c in v.values]
    made = mkparam and not keys and bool(values)  # the first result becomes the parameter
    rows = []
    for parts in zip(*(v.rows for _, v in vecs), strict=False):
        kv = tuple(parts[n][0][j] for n, j in take)
        vals, errs = [x for p in parts for x in p[1]], [e for p in parts for e in p[2]]
        rows.append(((vals[0],), vals[1:], errs[1:]) if made else (kv, vals, errs))
    notes = list(dict.fromkeys(x for _, v in vecs for x in v.notes))
    if made:
        keys, values = [dataclasses.replace(values[0], role="key")], values[1:]
    return Vec(keys, values, rows, notes)


def _pb_combined(vecs: list[tuple[str, Vec]]) -> list[tuple[str, Vec]]:
    """A combiner's inputs with perfbase's labels: of several inputs, each value column's label gets
    "|INPUT" (once: not where it has one), and so do its parameters (not where it ends in ">")."""
    if len(vecs) < 2:
        return vecs
    out = []
    for ident, v in vecs:
        keys = [k if _pb(k).endswith(">") else dataclasses.replace(k, pb=f"{_pb(k)}|{ident}") for k in v.keys]
        values = [c if "|" in _pb(c) else dataclasses.replace(c, pb=f"{_pb(c)}|{ident}") for c in v.values]
        out.append((ident, dataclasses.replace(v, keys=keys, values=values)))
    return out
