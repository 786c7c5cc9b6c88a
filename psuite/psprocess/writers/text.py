"""The human-readable report (PerfSuite psprocess style)."""

from __future__ import annotations

from psuite.hwpc.names import canonical, descriptions
from psuite.report import CountReport

EXTENSION = ".txt"
RULE = "=" * 78


def _fmt_value(v: float) -> str:
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
    lines = ["PerfSuite Hardware Performance Summary Report", ""]
    _pairs(lines, [("Version", r.version), ("Created", r.date), ("Generator", r.generator),
                   ("XML Source", r.source)])
    _section(lines, "Execution Information")
    _pairs(lines, [("Collector", r.collector), ("Host", r.hostname + (f".{r.domainname}" if r.domainname else "")),
                   ("Process ID", r.pid), ("Thread", r.thread), ("User", r.username), ("Command", r.command),
                   ("Executable MD5", r.md5sum), ("Counting domain", r.domain),
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
        for c in sorted(m.caches, key=lambda c: (c.level, c.type)):
            assoc = "fully associative" if c.associativity == 0 else f"{c.associativity}-way"
            line = f" line {c.line_size} B," if c.line_size else ""
            lines.append(f"Level {c.level} {c.type:<12}: {c.size_kb} KB,{line} {assoc}")
    _section(lines, "Event Counts")
    desc = descriptions()
    width = max([len(e.name) for e in r.events] + [10])
    lines.append(f"{'Index':>5}  {'Description':<44}  {'Event':<{width}}  {'Count':>20}")
    for i, e in enumerate(r.events, 1):
        d = e.description or desc.get(canonical(e.name), "")
        lines.append(f"{i:>5}  {d[:44]:<44}  {e.name:<{width}}  {_fmt_value(e.count):>20}")
    if not r.events:
        lines.append("  (no events were counted)")
    if r.metrics:
        _section(lines, "Statistics")
        for mt in r.metrics:
            lines.append(f"{mt.name + ' ':.<60} {_fmt_value(mt.value)}")
    return "\n".join(lines) + "\n"


def render(reports: list, threshold: float = 0.0, **_options) -> str:
    from psuite.psprocess.writers import text_multi, text_profile, text_resource
    from psuite.report import MultiReport, ProfileReport, ResourceReport

    def one(r) -> str:
        if isinstance(r, ResourceReport):
            return text_resource.render_one(r)
        if isinstance(r, ProfileReport):
            return text_profile.render_one(r, threshold)
        if isinstance(r, MultiReport):
            return text_multi.render_one(r)
        return render_one(r)

    return "\n\n".join(one(r) for r in reports)
