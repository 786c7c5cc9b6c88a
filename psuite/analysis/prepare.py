"""A report read made ready to show: profiles resolved (PCs to source
locations, call paths to call trees), counting reports' metrics derived,
a multi-document's members so and combined again.

The command line, the algebra's inputs (experiments.load) and the HTML
view all read documents this one way; it lives below them so that none of
them imports another's command line."""

from __future__ import annotations

from collections.abc import Callable

from psuite.cli_common import progress


def resolve(report) -> None:
    """PCs to source locations, call paths to call trees, with progress on
    a terminal."""
    from psuite.analysis import srcmap

    srcmap.resolve_into(report, progress("psprocess", f"resolving {report.source}:", "PCs"))
    if report.callpaths is not None:  # only then: psuite.model.calltree costs milliseconds to import
        from psuite.analysis import calltree_resolve

        calltree_resolve.resolve_into(report, progress("psprocess", f"resolving {report.callpaths.source}:",
                                                       "addresses"))


def prepare(report, derive: Callable[[object], None]):
    """The report made ready: a profile resolved, a counting report's
    metrics set by derive(report); a MultiReport's members so, and combined
    again.  Returns the report (a new one for a MultiReport)."""
    from psuite.model.report import CountReport, MultiReport, ProfileReport

    if isinstance(report, MultiReport):
        from psuite.analysis import combine

        return combine.summarize([prepare(member, derive) for member in combine.members(report)])
    if isinstance(report, ProfileReport):
        resolve(report)
    elif isinstance(report, CountReport):
        derive(report)
    return report
