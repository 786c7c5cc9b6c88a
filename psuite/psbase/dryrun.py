"""What perfbase's `input -t` (a test import) prints for runs read but not filed: per run, each value of one
occurrence as "Storing single value(s) in run  N" and "  NAME<tab>= VALUE", and each data-set row as
"Dataset I in run N" and the row as perfbase's Python 2 printed a dict (its keys in that dictionary's order).

perfbase prints these as its parser meets them in the file; psbase prints from the runs as read: first the
values the files gave, in the order psbase read them, then the rows, then the values taken from defaults
(perfbase fills those in at the end of a run too); fixed values come first and counts last, as in
perfbase."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Set

from psuite.psbase.model import RunData

_MASK64 = (1 << 64) - 1


def _py2_hash(s: str) -> int:
    """Python 2's hash of a str (64-bit), which orders its dictionaries."""
    if not s:
        return 0
    x = (ord(s[0]) << 7) & _MASK64
    for c in s:
        x = ((1000003 * x) & _MASK64) ^ ord(c)
    x ^= len(s)
    if x >= 1 << 63:
        x -= 1 << 64
    return -2 if x == -1 else x


def py2_dict_order(keys: Iterable[str]) -> list[str]:
    """The order Python 2 lists a dict's keys in, given the order they were inserted (open addressing in a
    table of 8 slots and more, perturbed probing, resized to 4 x used when two thirds full)."""
    size, table, used = 8, [None] * 8, 0

    def insert(tab: list, key: str) -> None:
        mask = len(tab) - 1
        h = _py2_hash(key)
        i, perturb = h & mask, h & _MASK64
        while tab[i & mask] is not None:
            i = (i << 2) + i + perturb + 1
            perturb >>= 5
        tab[i & mask] = key

    for k in keys:
        insert(table, k)
        used += 1
        if used * 3 >= size * 2:
            size = 8
            while size <= 4 * used:
                size <<= 1
            old, table = [x for x in table if x is not None], [None] * size
            for o in old:
                insert(table, o)
    return [x for x in table if x is not None]


def text(value: object) -> str:
    """A value as perfbase held it: the text read (here a float's shortest form; booleans t and f, as
    perfbase's database gave them back)."""
    if isinstance(value, bool):
        return "t" if value else "f"
    return getattr(value, "text", None) or str(value)  # a number read from a file: its text


def _py2_repr(value: str | None) -> str:
    if value is None:
        return "None"
    return repr(value)  # Python 3's repr of a str of ASCII text is Python 2's


def _derived_first(order: list[tuple[str, object]], derived: Mapping[str, tuple[str, ...]]) -> list[tuple[str, object]]:
    """perfbase computes a derived parameter when the last of its inputs is read, and stores it before that
    input (its hook runs ahead of the input's own store): each derived value moved before its latest input."""
    for name, inputs in derived.items():
        at = [i for i, (n, _) in enumerate(order) if n == name]
        if not at or not inputs:
            continue
        item = order.pop(at[0])
        places = [i for i, (n, _) in enumerate(order) if n in inputs]
        if len(places) < len(set(inputs)):  # an input not among these values (a row's, or a default)
            order.insert(at[0], item)
            continue
        order.insert(max(places), item)
    return order


def trace(runs: list[RunData], from_files: list[dict[str, object]], first: Set[str] = frozenset(),
          last: Set[str] = frozenset(), early: Set[str] = frozenset(), booleans: Set[str] = frozenset(),
          derived: Mapping[str, tuple[str, ...]] | None = None) -> str:
    """What perfbase's input -t prints for runs (trace_steps, joined)."""
    return "".join(trace_steps(runs, from_files, first, last, early, booleans, derived))


def trace_steps(runs: list[RunData], from_files: list[dict[str, object]], first: Set[str] = frozenset(),
                last: Set[str] = frozenset(), early: Set[str] = frozenset(), booleans: Set[str] = frozenset(),
                derived: Mapping[str, tuple[str, ...]] | None = None) -> Iterator[str]:
    """What perfbase's input -t prints, two texts per run: up to its rows, then (made when asked for, so that
    values added to the run meanwhile are among them: perfbase's answers to -a ask) what follows them.
    from_files: per run, the values of one occurrence its files gave (the others came from defaults);
    first: fixed values (perfbase stores them before it reads the file, a default among them too);
    last: counts and booleans (stored when a run ends); early: values of the file's name (perfbase reads the
    name, or stores its default, before the fixed values); booleans: of <named_location mode="boolean">,
    which perfbase also stores as 'f' (not yet seen) with the first data-set
    row; derived: derived parameters and the variables they are computed from."""
    index, last_sources = 0, None
    for run, found in zip(runs, from_files, strict=True):
        out: list[str] = []
        # perfbase numbers a test import's runs from 1 again for each input file
        index = index + 1 if run.sources == last_sources else 1
        last_sources = run.sources
        present = [(n, v) for n, v in run.values.items() if v is not None]
        head = [x for x in present if x[0] in early] + [x for x in present if x[0] in first and x[0] not in early]
        given = [x for x in present if x[0] in found and x[0] not in first | early]
        # counts and booleans are known when the run ends: after its rows
        ending = [x for x in given if x[0] in last]
        given = [x for x in given if x[0] not in last]
        filled = [x for x in present if x[0] not in found and x[0] not in first | early]
        for name, value in _derived_first(head + given, derived or {}):
            out.append(f"Storing single value(s) in run  {index}\n  {name}\t= {text(value)}\n")
        for i, row in enumerate(run.rows):
            if i == 0:
                # a boolean's state is stored with the first row as 'f' (its value is known at the run's end)
                for name in (n for n, _ in present if n in booleans):
                    out.append(f"Storing single value(s) in run  {index}\n  {name}\t= f\n")
            keys = py2_dict_order([k for k in row if row[k] is not None])  # perfbase prints what it read
            body = ", ".join(f"{k!r}: {_py2_repr(None if row[k] is None else text(row[k]))}" for k in keys)
            out.append(f"Dataset {i} in run {index}\n{{{body}}}\n")
        yield "".join(out)
        filled += [(n, v) for n, v in run.values.items() if v is not None and n not in dict(present)]
        yield "".join(f"Storing single value(s) in run  {index}\n  {name}\t= {text(value)}\n"
                      for name, value in ending + filled)
