"""speedscope's own JSON file format (https://www.speedscope.app/file-format-schema.json,
shipped in speedscope's npm package as dist/release/file-format-schema.json).

- One "sampled" profile per thread, named by the thread's label ("rank 3
  thread 1", "host pid 1234 thread 1"): its samples are the thread's call
  paths with samples of their own (frame indices, outermost first), each
  once, weighted by its exclusive value.
- Units: for the ITIMER_ sources a weight is time, samples x the period,
  in "microseconds" (the period is whole microseconds, so weights stay
  exact integers); for event-overflow sources the weight is the number of
  samples, unit "none" (an event count estimated from samples would claim
  a precision they do not have).
- One shared frame table: a frame per function (an inlined one named
  "f [inlined]", an unresolved one by its module in brackets) with its
  source file and the first line the profile saw in it, as speedscope
  groups frames by name, file and line.

The profiles are written as they are walked; the frame table, which they
build, comes after them (JSON objects are unordered)."""

from __future__ import annotations

import json

from psuite._version import __version__
from psuite.formats.exporters.calltree_common import (
    first_lines,
    frame_file,
    frame_name,
    microseconds_per_sample,
    source_trees,
    text,
)
from psuite.model.calltree import Frame
from psuite.model.report import MultiReport, ProfileReport

EXTENSION = ".speedscope.json"
SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def speedscope_name(frame: Frame) -> str:
    name = frame_name(frame)
    return f"{name} [inlined]" if frame.inlined else name


def _program(report: ProfileReport | MultiReport) -> str:
    members = getattr(report, "reports", None) or [report]
    command = members[0].command.split() if members[0].command else []
    return text(command[0].rsplit("/", 1)[-1]) if command else "program"


def targets(path: str) -> list[str]:
    """The files write(..., path) creates."""
    return [path]


def write(report: ProfileReport | MultiReport, path: str, module: str | None = None, force: bool = False) -> str:
    """Write every thread's call tree as a speedscope profile (module:
    unused); says what was written."""
    from psuite.cli_common import atomic_output

    trees = source_trees(report, "--speedscope")
    lines = first_lines(trees)
    index: dict[tuple[str, str, bool], int] = {}  # Frame.key -> frame table index
    frames: list[dict] = []
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    with atomic_output(path, force) as f:
        f.write(f'{{"$schema":{dumps(SCHEMA)},"exporter":{dumps("psuite " + __version__)},'
                f'"name":{dumps(_program(report))},"activeProfileIndex":0,"profiles":[')
        for k, st in enumerate(trees):
            us = microseconds_per_sample(st)
            samples, weights = [], []
            for node in st.thread.tree.nodes():
                if not node.exclusive:
                    continue
                stack = []
                for fr in node.path():
                    i = index.get(fr.key)
                    if i is None:
                        i = index[fr.key] = len(frames)
                        entry: dict = {"name": speedscope_name(fr)}
                        if frame_file(fr):
                            entry["file"] = frame_file(fr)
                        if fr.key in lines:
                            entry["line"] = lines[fr.key]
                        frames.append(entry)
                    stack.append(i)
                samples.append(stack)
                weights.append(node.exclusive * us if us else node.exclusive)
            weights = [int(w) if float(w).is_integer() else w for w in weights]
            f.write(("," if k else "") +
                    f'{{"type":"sampled","name":{dumps(text(st.thread.label))},'
                    f'"unit":"{"microseconds" if us else "none"}","startValue":0,"endValue":{dumps(sum(weights))},'
                    f'"samples":{dumps(samples)},"weights":{dumps(weights)}}}')
        f.write(f'],"shared":{{"frames":{dumps(frames)}}}}}\n')
    return f"speedscope ({len(trees)} threads) {path}"
