"""What the call-tree exporters (folded, speedscope, pprof, cube) share:
every thread's resolved tree with the profile it belongs to, frame names
for viewers that show names only, and the time a sample stands for."""

from __future__ import annotations

import os
from dataclasses import dataclass

from psuite.errors import UsageError
from psuite.model.calltree import UNKNOWN, Frame, ThreadTree, thread_trees
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


def first_lines(trees: list[SourceTree]) -> dict[tuple[str, str, bool], int]:
    """Per function (Frame.key), the lowest line seen in it: a frame's line
    is a sampled line or a call site inside the function, so this is the
    function's first line as far as the profile knows (CUBE's region begin,
    speedscope's frame line)."""
    out: dict[tuple[str, str, bool], int] = {}
    for st in trees:
        for node in st.thread.tree.nodes():
            f = node.frame
            if f.line > 0 and (f.key not in out or f.line < out[f.key]):
                out[f.key] = f.line
    return out
