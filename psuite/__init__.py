"""psuite: PerfSuite-style performance measurement for Linux.

    import psuite
    report = psuite.read("app.1234.host.xml")      # or an http(s) URL
    rows = report.to_records()                     # pandas.DataFrame(rows)

Call paths (profiles recorded with `psrun --callpath`): reading a profile
X.xml also reads its companion X.callpaths.xml when it is beside it (a
companion read alone is a ProfileReport of its call paths), and resolves
them with the flat profile:

    report.callpaths                    # the document as recorded
                                        # (psuite.model.calltree.CallPathProfile)
    psuite.model.calltree.thread_trees(report)  # each thread's resolved CallTree
    rows = report.calltree_records()    # pandas.DataFrame(rows)

Records name the thread that took the samples, as an int (docs/formats/
numbering.md: 0 the whole process, 1 the main thread): to_records() of a
`psrun -p --callpath` process total gives each thread's flat profile
from its recorded call paths, under the same numbers as its
calltree_records() and read_experiment(...).to_records(); a report with
no per-thread data gives its rows under its own thread (0 for the
process total or a report without <thread>).

calltree_records() gives one row per calling context of every thread:
the run's identity (source, hostname, pid, rank), "thread" and "tid",
"path" (a tuple of function names, outermost first), "function" (the
leaf), "module", "inlined", "inclusive" and "exclusive" samples, "depth"
(1 for an outermost frame); "thread" is an int, numbered as everywhere
(docs/formats/numbering.md: 1 the main thread).  E.g. the share of each
path of the main thread:

    df = pandas.DataFrame(report.calltree_records())
    df[df.thread == 1].assign(share=df.inclusive / df[df.depth == 1].inclusive.sum())

Experiments (CUBE's performance space: metrics x call paths x threads,
the operands of the performance algebra) from any input psuite reads,
CUBE 4 files included:

    a = psuite.read_experiment("base.cubex")
    b = psuite.read_experiment("app.5678.host.xml")
    from psuite.analysis import algebra
    d = algebra.diff(b, a)                 # compare, mean, merge, cut too
    rows = d.to_records()                  # pandas.DataFrame(rows)

Every psprocess and psinv run imports this package, so nothing heavy is
imported here until read() is called."""

from __future__ import annotations

__all__ = ["read", "read_experiment"]


def read(path_or_url: str, resolve: bool = True):
    """The report model of one PerfSuite document: a CountReport,
    ProfileReport (its PCs resolved to source and its call paths to call
    trees unless resolve is False), MultiReport (a combined document, its
    profiles so, with the call paths beside it), ResourceReport, or the reader's error
    (psuite.errors.InputError).  A companion that names another profile
    is left out with a warning (warnings.warn).  (psuite.api.read)"""
    from psuite.api import read as read_document

    return read_document(path_or_url, resolve)


def read_experiment(path_or_url: str):
    """Any input psuite reads - a PerfSuite document (counting report,
    profile with or without call paths, combined document) or a CUBE 4
    file - as one psuite.model.experiment.Experiment, symbols resolved.
    (psuite.api.read_experiment)"""
    from psuite.api import read_experiment as read_any

    return read_any(path_or_url)
