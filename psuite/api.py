"""psuite's Python API (psuite.read_experiment, psuite.read_document and
the deprecated psuite.read, which the package root forwards to): any
input as the analysis model, or a PerfSuite document as its XML reads,
its profiles resolved.  Above the analysis and formats layers, beside the
hatchet converter."""

from __future__ import annotations

READ_CHANGES = ("psuite.read() returns PerfSuite's document model and will return the analysis model "
                "(psuite.read_experiment) in a future release; call psuite.read_experiment() for the model every "
                "psuite output renders (to_records, to_hatchet, the algebra), or psuite.read_document() to keep "
                "the document")


def read(path_or_url: str, resolve: bool = True):
    """Deprecated: read_document, with a FutureWarning (READ_CHANGES)."""
    import warnings

    warnings.warn(READ_CHANGES, FutureWarning, stacklevel=3)  # the caller of psuite.read
    return read_document(path_or_url, resolve)


def read_document(path_or_url: str, resolve: bool = True):
    """The document model of one PerfSuite document (what its XML says): a CountReport,
    ProfileReport (its PCs resolved to source and its call paths to call
    trees unless resolve is False), MultiReport (a combined document, its
    profiles so, with the call paths beside it), ResourceReport, or the reader's error
    (psuite.errors.InputError).  A companion that names another profile
    is left out with a warning (warnings.warn)."""
    from psuite.analysis.inputs import load
    from psuite.model.report import MultiReport, ProfileReport

    report = load(path_or_url)
    # a combined document's profiles (psprocess -c -x) are resolved as each alone
    for member in report.reports if isinstance(report, MultiReport) else [report]:
        if resolve and isinstance(member, ProfileReport):
            from psuite.analysis import calltree_resolve, srcmap

            srcmap.resolve_into(member)
            calltree_resolve.resolve_into(member)
            _resolve_thread_locations(member)
    return report


def _resolve_thread_locations(report) -> None:
    """Each thread's flat profile from its recorded call paths
    (ThreadCallPaths.locations): the sampled addresses resolved as the flat
    profile's PCs are (the innermost frame, an unusable binary's marker),
    so that to_records() files a process report's samples under their
    threads, as calltree_records() does."""
    cp = report.callpaths
    if cp is None or not cp.threads:
        return
    from psuite.analysis import srcmap
    from psuite.formats.binaries import bindings
    from psuite.model.calltree import BLOCKED_FUNCTION, KIND_BLOCKED, KIND_SAMPLE, KIND_TRUNCATED, TRUNCATED_FUNCTION
    from psuite.model.calltree import UNKNOWN as U
    from psuite.model.report import Location

    sampled = [t.sampled() for t in cp.threads]
    wanted: dict[int, dict[int, None]] = {}  # module id -> its addresses with samples, of every thread
    for table in sampled:
        for kind, module, addr in table:
            if kind <= KIND_SAMPLE and module in cp.modules:
                wanted.setdefault(module, {})[addr] = None
    bound = bindings(report)  # the very binaries profiled (warned about once, when the profile was resolved)
    where: dict[tuple[int, int], tuple[str, str, str, int]] = {}  # (module id, addr) -> Location's key
    for ident, addrs in wanted.items():
        mod = cp.modules[ident]
        binding = bound.get(mod.file)
        if binding is not None and binding.problem:  # as the flat profile: marked, never resolved wrongly
            where.update(dict.fromkeys(((ident, a) for a in addrs), (mod.file, U, binding.marker, 0)))
            continue
        where.update(dict.fromkeys(((ident, a) for a in addrs), (mod.file, U, U, 0)))
        valid = [a for a in addrs if 0 <= a - mod.offset < 2**64]
        moved = (binding.file,) if binding is not None and binding.file != mod.file else ()
        found = srcmap.resolve_frames(mod.file, [a - mod.offset for a in valid], *moved) if valid else []
        for a, stack in zip(valid, found, strict=True):
            if stack:  # innermost first: the flat profile's location of the address
                where[(ident, a)] = (mod.file, stack[0].file, stack[0].function, stack[0].line)
    placeholder = {KIND_TRUNCATED: TRUNCATED_FUNCTION, KIND_BLOCKED: BLOCKED_FUNCTION}
    for t, table in zip(cp.threads, sampled, strict=True):
        per: dict[tuple[str, str, str, int], int] = {}
        for (kind, module, addr), n in table.items():
            key = where.get((module, addr)) if kind <= KIND_SAMPLE else None
            if key is None:  # a placeholder, or an address in no recorded module
                key = ("", U, placeholder.get(kind, U), 0)
            per[key] = per.get(key, 0) + n
        t.locations = [Location(*key, n) for key, n in per.items()]


def read_experiment(path_or_url: str):
    """Any input psuite reads - a PerfSuite document (counting report,
    profile with or without call paths, combined document) or a CUBE 4
    file - as one psuite.model.experiment.Experiment, symbols resolved."""
    from psuite.analysis.experiments import load

    return load(path_or_url)
