"""The human-readable report (PerfSuite psprocess style)."""

from __future__ import annotations

from collections.abc import Iterator

from psuite.formats.writers import documents
from psuite.model.report import CountReport

EXTENSION = ".txt"
RULE = "=" * 78


def _fmt_value(v: float) -> str:
    if type(v) is int and -10**18 < v < 10**18:  # most counts: no float round trip
        return f"{v:,}"
    if float(v).is_integer() and abs(v) < 1e18:
        return f"{int(v):,}"
    if abs(v) >= 100:
        return f"{v:,.2f}"
    return f"{v:.4g}" if abs(v) < 0.001 else f"{v:.4f}"


def _section(lines: list[str], title: str) -> None:
    lines += ["", title, RULE]


def _pairs(lines: list[str], pairs: list[tuple[str, object]]) -> None:
    for k, v in pairs:
        if v not in (None, ""):
            lines.append(f"{k:<24}: {v}")


def render_one(r: CountReport) -> str:
    return "".join(chunks_one(r))


def chunks_one(r: CountReport) -> Iterator[str]:
    return _chunks(documents.of_report(r))


def _chunks(c: documents.Counts) -> Iterator[str]:
    """The report in pieces: a report can hold a million events, and their
    lines are joined and written a block at a time, never all at once."""
    r = c.run
    lines = ["PerfSuite Hardware Performance Summary Report", ""]
    _pairs(lines, [("Version", r.version), ("Created", r.date), ("Generator", r.generator),
                   ("XML Source", r.source)])
    _section(lines, "Execution Information")
    _pairs(lines, [("Collector", r.collector), ("Host", r.hostname + (f".{r.domainname}" if r.domainname else "")),
                   ("Process ID", r.pid), ("Thread", r.thread), ("User", r.username), ("Command", r.command),
                   ("Executable MD5", r.md5sum), ("Executable build-id", r.buildid), ("Counting domain", r.domain),
                   ("Multiplexed", "yes (counts are scaled estimates)" if r.multiplexed else "no"),
                   ("Note", r.annotation)])
    m = r.machine
    if m:
        _section(lines, "Processor and System Information")
        _pairs(lines, [("Node CPUs", m.cpu_count), ("Vendor", m.vendor), ("Brand", m.brand),
                       ("CPUID", m.cpuidinfo), ("Revision", m.revision),
                       ("Clock (MHz)", f"{m.mhz:.3f}" if m.mhz else None), ("Memory (MB)", m.memory_mb),
                       ("System page size (KB)", m.page_size // 1024)])
        _section(lines, "Cache Information")
        for cache in sorted(m.caches, key=lambda cache: (cache.level, cache.type)):
            assoc = "fully associative" if cache.associativity == 0 else f"{cache.associativity}-way"
            line = f" line {cache.line_size} B," if cache.line_size else ""
            lines.append(f"Level {cache.level} {cache.type:<12}: {cache.size_kb} {cache.size_units},{line} {assoc}")
    _section(lines, "Event Counts")
    width = max(c.names_width(), 10)
    lines.append(f"{'Index':>5}  {'Description':<44}  {'Event':<{width}}  {'Count':>20}")
    yield "\n".join(lines) + "\n"
    index = 1
    for block in c.blocks:
        yield "".join(f"{i:>5}  {description[:44]:<44}  {name:<{width}}  {_fmt_value(count):>20}\n"
                      for i, (name, count, _, _, description, _) in enumerate(block, index))
        index += len(block)
    lines = []
    if not c.size:
        lines.append("  (no events were counted)")
    if c.metrics:
        _section(lines, "Statistics")
        for mt in c.metrics:
            lines.append(f"{mt.name + ' ':.<60} {_fmt_value(mt.value)}")
    if lines:
        yield "\n".join(lines) + "\n"


def render(reports: list, threshold: float = 0.0, **options) -> str:
    return "".join(render_chunks(reports, threshold, **options))


def render_chunks(reports: list, threshold: float = 0.0, **_options) -> Iterator[str]:
    from psuite.formats.writers import text_multi, text_profile, text_resource
    from psuite.model.report import MultiReport, ProfileReport, ResourceReport

    for k, r in enumerate(reports):
        if k:
            yield "\n"
        if isinstance(r, ResourceReport):
            yield text_resource.render_one(r)
        elif isinstance(r, ProfileReport):
            yield text_profile.render_one(r, threshold)
        elif isinstance(r, MultiReport):
            yield text_multi.render_one(r)
        elif documents.is_profile(r):  # a profile document's experiment
            yield "\n".join(text_profile.render_lines(d, threshold) for d in documents.profiles(r, sampled=False))
        elif documents.is_counts(r):  # a counting document's experiment: each of its locations' reports
            for j, c in enumerate(documents.of_experiment(r)):
                if j:
                    yield "\n"
                yield from _chunks(c)
        else:
            yield from chunks_one(r)
