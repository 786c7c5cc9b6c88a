"""What the call-tree exporters (folded, speedscope, pprof, cube) share:
every thread's resolved tree with the profile it belongs to, frame names
for viewers that show names only, and the time a sample stands for; and
for the exporters that render the analysis model (folded, speedscope),
its call tree's names and the metric a flame graph weighs."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from psuite.errors import UsageError
from psuite.model.calltree import UNKNOWN, Frame, ThreadTree, thread_trees
from psuite.model.experiment import Experiment, Location, Metric
from psuite.model.report import MultiReport, ProfileReport


@dataclass
class SourceTree:
    """One thread's tree and the profile it came from."""

    report: ProfileReport
    thread: ThreadTree

    @property
    def event(self) -> str:
        """The sample source: the call-path document's (it describes these
        samples), else the profile's."""
        cp = self.report.callpaths
        return (cp.event if cp and cp.event else "") or self.report.event

    @property
    def threshold(self) -> int | None:
        """Microseconds for the ITIMER_ sources, events otherwise (None: not known)."""
        cp = self.report.callpaths
        return (cp.threshold if cp and cp.threshold else None) or self.report.threshold

    @property
    def is_timer(self) -> bool:
        return self.event.startswith("ITIMER_")


def source_trees(obj: ProfileReport | MultiReport, option: str) -> list[SourceTree]:
    """Every thread's resolved tree of a profile or a combination of
    profiles, in document order; a tree reached twice (two reports sharing
    one companion document) is taken once.  `option` names the export in
    the error when there is nothing to export."""
    members = obj.reports if isinstance(obj, MultiReport) else [obj]
    if not all(isinstance(r, ProfileReport) for r in members) or not members:
        raise UsageError(f"{option} exports call paths of profiles (psrun --callpath), not counting or resource "
                         "reports")
    out: list[SourceTree] = []
    seen: set[int] = set()
    for r in members:
        for t in thread_trees(r):
            if id(t.tree) not in seen:
                seen.add(id(t.tree))
                out.append(SourceTree(r, t))
    if not out:
        raise UsageError(f"{option}: the profile has no call paths; record them with psrun --callpath")
    return out


def text(s: str) -> str:
    """s as valid Unicode: bytes a name or path could not be decoded from
    (kept as surrogates by the readers) become U+FFFD."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def frame_name(frame: Frame) -> str:
    """The function's name, or for an unresolved frame its module in brackets
    (as perf's flame graphs show it): "[libc.so.6]", else "[unknown]"."""
    if frame.function and frame.function != UNKNOWN:
        return text(frame.function)
    return f"[{text(os.path.basename(frame.module))}]" if frame.module else "[unknown]"


def frame_file(frame: Frame) -> str:
    """The frame's source file, "" when unknown."""
    return text(frame.file) if frame.file and frame.file != UNKNOWN else ""


def executable(trees: list[SourceTree]) -> str:
    """The program's own module among the recorded ones, "" when not known."""
    for st in trees:
        cp = st.report.callpaths
        program = os.path.basename(st.report.command.split()[0]) if st.report.command.split() else ""
        for m in cp.modules.values() if cp else ():
            if program and os.path.basename(m.file) == program:
                return m.file
    return ""


def microseconds_per_sample(st: SourceTree) -> int | None:
    """The CPU (or wall, for ITIMER_REAL) time one sample of the tree stands
    for, in microseconds (the ITIMER_ sources' threshold); None for
    event-overflow sources, whose samples are events, not time."""
    return st.threshold if st.is_timer and st.threshold else None


# -- the analysis model's call tree (psuite.model.experiment) ----------------------
# The description psuite.analysis.experiments (ROOT_DESCRIPTION) gives the program root it adds above a
# profile's call trees, the attribute it sets on the experiment of profiles without call paths, and the
# attributes below it gives a profile's experiment (a format does not import the analysis layer;
# tests/psprocess/test_model_flame.py checks they agree)
PROGRAM_ROOT = "the whole program"
FLAT_PROFILE = "psuite::flat"
INLINED = "inlined into its caller"  # the description of an inlined function's region ("f [inlined]")
SAMPLED_ON = "psuite::event"  # the experiment attribute of a profile: the event its samples were taken on
OBJECT = "psuite::object"  # region attribute: the object file of a function whose region's module is its source
RECORDED_FUNCTION = "psuite::function"  # region attribute: the function as the call paths name it, where the
# region's name is not it (an unresolved frame's "??" shown as "[libc.so.6]", an inlined one's "f [inlined]")
WALLCLOCK = "wallclock"  # location attribute: the wall-clock seconds of the location's run
_SECONDS = ("sec", "s", "second", "seconds")


def added_root(exp: Experiment, cnode: int) -> bool:
    """Whether the call path is the program root psuite added (no frame of
    the program: stacks start below it)."""
    c = exp.cnodes[cnode]
    r = exp.regions[c.region]
    return c.parent is None and r.role == "artificial" and r.description == PROGRAM_ROOT


def location_name(loc: Location) -> str:
    """"rank R thread T", or without an MPI rank "host pid P thread T", from
    the run attributes psuite gives a location (as a document's thread is
    labelled); else its system-tree label."""
    a = loc.attributes
    if "thread" not in a:
        return text(loc.label)
    where = f"rank {a['rank']}" if "rank" in a else f"{a.get('host', loc.node)} pid {a.get('pid', '?')}"
    return text(f"{where} thread {a['thread']}")


def region_names(exp: Experiment) -> list[tuple[str, bool]]:
    """Per region, its name as valid Unicode without the " [inlined]" psuite
    adds to an inlined function's, and whether it is one."""
    out = []
    for r in exp.regions:
        inlined = r.description == INLINED and r.name.endswith(" [inlined]")
        out.append((text(r.name.removesuffix(" [inlined]") if inlined else r.name), inlined))
    return out


def weight_metric(exp: Experiment) -> tuple[Metric, float]:
    """The metric a flame graph weighs call paths by and its scale: a
    profile's "samples"; else (a Score-P cube) its time in microseconds;
    else the first measured metric.  UsageError when none is measured."""
    measured = [m for m in exp.metrics if not m.derived and m.name in exp.values]
    for m in measured:
        if m.name == "samples":
            return m, 1.0
    timed = time_metric(exp)
    if timed is not None:
        return timed, 1e6
    if not measured:
        raise UsageError("the experiment has no measured metric to weigh its call paths by")
    return measured[0], 1.0


def time_metric(exp: Experiment) -> Metric | None:
    """The experiment's time (a timer profile's "time", a Score-P cube's),
    seconds summed over callees and locations; None when it has none."""
    timed = [m for m in exp.metrics if not m.derived and m.name in exp.values and m.unit.lower() in _SECONDS
             and m.combine is np.add]
    return next((m for m in sorted(timed, key=lambda m: m.name != "time")), None)


def check_call_paths(exp: Experiment, option: str) -> None:
    """UsageError unless the experiment has call paths to export: not the
    functions of profiles without call paths, not a counting report (its
    program root alone)."""
    if exp.attributes.get(FLAT_PROFILE):
        raise UsageError(f"{option}: the profile has no call paths; record them with psrun --callpath")
    if all(added_root(exp, c) for c in range(len(exp.cnodes))):
        raise UsageError(f"{option} exports call paths of profiles (psrun --callpath) and cubes, not counting or "
                         "resource reports")


def as_int(a: np.ndarray) -> np.ndarray:
    """Weights as integers, rounded half up (a mean's fractions)."""
    return np.floor(a + 0.5).astype(np.int64)
