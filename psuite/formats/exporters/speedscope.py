"""speedscope's own JSON file format (https://www.speedscope.app/file-format-schema.json,
shipped in speedscope's npm package as dist/release/file-format-schema.json).

Rendered from the analysis model (psuite.model.experiment.Experiment):

- One "sampled" profile per location (thread), named by its run
  attributes ("rank 3 thread 1", "host pid 1234 thread 1"; a Score-P
  cube's by its place in the system tree): its samples are the call paths
  with a value of their own there (frame indices, outermost first, the
  program root psuite adds left out), each once, weighted by its
  exclusive value.
- Units: for a timer profile (and a cube with a time metric) a weight is
  the call path's time in "microseconds" (samples x the period, whole
  microseconds, so weights stay exact integers); for event-overflow
  sources the weight is the number of samples, unit "none" (an event
  count estimated from samples would claim a precision it does not have).
- One shared frame table: a frame per region (an inlined function named
  "f [inlined]", an unresolved one by its module in brackets) with its
  source file and its first line, as speedscope groups frames by name,
  file and line.  The file is given only with a line: a region without a
  line is an unresolved one, named after its object file, not a source.

The profiles are written as they are walked; the frame table, which they
build, comes after them (JSON objects are unordered)."""

from __future__ import annotations

import json

import numpy as np

from psuite._version import __version__
from psuite.formats.exporters.calltree_common import (
    added_root,
    as_int,
    check_call_paths,
    location_name,
    text,
    time_metric,
)
from psuite.model.experiment import Experiment

EXTENSION = ".speedscope.json"
SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def _program(exp: Experiment) -> str:
    command = exp.attributes.get("command", "").split()
    return text(command[0].rsplit("/", 1)[-1]) if command else "program"


def targets(path: str) -> list[str]:
    """The files write(..., path) creates."""
    return [path]


def _weights(exp: Experiment) -> tuple[np.ndarray, bool]:
    """(cnodes, locations) integer weights, and whether they are microseconds."""
    timed = time_metric(exp)
    if timed is not None:
        return as_int(exp.exclusive(timed.name).astype(np.float64) * 1e6), True
    metric = "samples" if "samples" in exp.values else next(
        (m.name for m in exp.metrics if not m.derived and m.name in exp.values), None)
    if metric is None:
        return np.zeros((len(exp.cnodes), len(exp.locations)), dtype=np.int64), False
    a = exp.exclusive(metric)
    return (a if a.dtype.kind == "i" else as_int(a.astype(np.float64))), False


def write(exp: Experiment, path: str, module: str | None = None, force: bool = False) -> str:
    """Write the experiment's call tree as one speedscope profile per
    location (module: unused); says what was written."""
    from psuite.cli_common import atomic_output

    check_call_paths(exp, "--speedscope")
    weights, us = _weights(exp)
    skipped = {c for c in exp.roots if added_root(exp, c)}  # the program root psuite added: no frame
    index = [-1] * len(exp.regions)  # region -> frame table index, -1 until met
    frames: list[dict] = []
    cnodes = exp.cnodes

    def frame(r: int) -> int:
        index[r] = len(frames)
        region = exp.regions[r]
        entry: dict = {"name": text(region.name)}
        if region.begin > 0:
            if region.module:
                entry["file"] = text(region.module)
            entry["line"] = region.begin
        frames.append(entry)
        return index[r]

    def stack(c: int) -> list[int]:
        regions = []  # the call path's regions, innermost first, up to the root (the added one left out)
        x: int | None = c
        while x is not None and x not in skipped:
            node = cnodes[x]
            regions.append(node.region)
            x = node.parent
        regions.reverse()  # frames numbered outermost first, as met
        return [i if (i := index[r]) >= 0 else frame(r) for r in regions]

    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    with atomic_output(path, force) as f:
        f.write(f'{{"$schema":{dumps(SCHEMA)},"exporter":{dumps("psuite " + __version__)},'
                f'"name":{dumps(_program(exp))},"activeProfileIndex":0,"profiles":[')
        for k, loc in enumerate(exp.locations):
            column = weights[:, k]
            rows = np.flatnonzero(column).tolist()
            rows = [c for c in rows if c not in skipped]  # the added root's own value has no frame to show
            samples = [stack(c) for c in rows]
            ws = column[rows].tolist()
            f.write(("," if k else "") +
                    f'{{"type":"sampled","name":{dumps(location_name(loc))},'
                    f'"unit":"{"microseconds" if us else "none"}","startValue":0,"endValue":{dumps(sum(ws))},'
                    f'"samples":{dumps(samples)},"weights":{dumps(ws)}}}')
        f.write(f'],"shared":{{"frames":{dumps(frames)}}}}}\n')
    return f"speedscope ({len(exp.locations)} threads) {path}"
