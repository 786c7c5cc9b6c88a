"""psuite: PerfSuite-style performance measurement for Linux.

Any input psuite reads - a PerfSuite document (counting report, profile
with or without call paths, combined document) or a CUBE 4 file - as the
analysis model every psuite output renders, CUBE's performance space
(metrics x call paths x threads, the operands of the performance
algebra):

    import psuite
    exp = psuite.read_experiment("app.1234.host.xml")   # or a .cubex, or an http(s) URL
    rows = exp.to_records()         # pandas.DataFrame(rows): metric, path, depth, rank, thread, node, value
    gf = exp.to_hatchet()           # a profile's LLNL hatchet GraphFrame (pip install 'psuite[hatchet]')
    from psuite.analysis import algebra
    d = algebra.diff(exp, psuite.read_experiment("base.cubex"))   # compare, mean, merge, cut too

A PerfSuite document as its XML says it (the machine, run times and
events as listed), its profiles resolved, is psuite.read_document's:

    report = psuite.read_document("app.1234.host.xml")
    rows = report.to_records()          # its events and metrics, or its profile's source lines
    report.callpaths                    # psrun --callpath's companion X.callpaths.xml, read beside X.xml
    rows = report.calltree_records()    # one row per calling context of every thread

Records name the thread that took the samples, as an int (docs/formats/
numbering.md: 0 the whole process, 1 the main thread), in both models.
psuite.read is read_document with a FutureWarning: it will return the
analysis model.

Every psprocess and psinv run imports this package, so nothing heavy is
imported here until a read is called."""

from __future__ import annotations

__all__ = ["read", "read_document", "read_experiment"]


def read_experiment(path_or_url: str):
    """Any input psuite reads - a PerfSuite document (counting report,
    profile with or without call paths, combined document) or a CUBE 4
    file - as one psuite.model.experiment.Experiment, symbols resolved.
    (psuite.api.read_experiment)"""
    from psuite.api import read_experiment as read_any

    return read_any(path_or_url)


def read_document(path_or_url: str, resolve: bool = True):
    """The document model of one PerfSuite document: a CountReport,
    ProfileReport (its PCs resolved to source and its call paths to call
    trees unless resolve is False), MultiReport (a combined document, its
    profiles so, with the call paths beside it), ResourceReport, or the
    reader's error (psuite.errors.InputError).  A companion that names
    another profile is left out with a warning (warnings.warn).
    (psuite.api.read_document)"""
    from psuite.api import read_document as read_one

    return read_one(path_or_url, resolve)


def read(path_or_url: str, resolve: bool = True):
    """Deprecated: read_document with a FutureWarning; psuite.read will
    return the analysis model (read_experiment).  (psuite.api.read)"""
    from psuite.api import read as read_deprecated

    return read_deprecated(path_or_url, resolve)
