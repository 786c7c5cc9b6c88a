"""psuite: PerfSuite-style performance measurement for Linux.

    import psuite
    report = psuite.read("app.1234.host.xml")      # or an http(s) URL
    rows = report.to_records()                     # pandas.DataFrame(rows)

Every psprocess and psinv run imports this package, so nothing heavy is
imported here until read() is called."""

from __future__ import annotations

__all__ = ["read"]


def read(path_or_url: str, resolve: bool = True):
    """The report model of one PerfSuite document: a CountReport,
    ProfileReport (its PCs resolved to source unless resolve is False),
    ResourceReport, or the reader's error (psuite.errors.InputError)."""
    from psuite.psprocess.inputs import load
    from psuite.report import ProfileReport

    report = load(path_or_url)
    if resolve and isinstance(report, ProfileReport):
        from psuite.psprocess import srcmap

        srcmap.resolve_into(report)
    return report
