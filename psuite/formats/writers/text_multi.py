"""The human-readable combination of counting reports: what was combined,
then one table of statistics per event and per derived metric."""

from __future__ import annotations

from psuite.formats.writers import documents
from psuite.model.report import MultiReport, Statistic

RULE = "=" * 78


def _num(v: float | None) -> str:
    if v is None:
        return "-"
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.4g}" if abs(v) < 1e6 else f"{v:,.0f}"


def _table(lines: list[str], title: str, stats: list[Statistic]) -> None:
    if not stats:
        return
    lines += ["", title, RULE]
    for s in stats:
        lines += [
            f"{s.name}",
            f"  count {s.count:,}   sum {_num(s.sum)}   mean {_num(s.mean)}   std dev {_num(s.stddev)}",
            f"  min {_num(s.min)} ({s.min_who})   max {_num(s.max)} ({s.max_who})",
            f"  quartiles {_num(s.q1)} / {_num(s.median)} / {_num(s.q3)}   imbalance (max/mean) "
            + (f"{s.imbalance:.3f}" if s.imbalance is not None else "-"),
        ]


def _profiles(lines: list[str], m: MultiReport, top: int = 30) -> None:
    total = sum(s.sum for s in m.statistics) or 1
    lines += ["", "Combined Function Summary", RULE, f"{'Samples':>10} {'Self %':>8}  Function"]
    lines += [f"{int(s.sum):>10,} {100 * s.sum / total:>7.2f}%  {s.name}" for s in m.statistics[:top]]
    lines += ["", "Function Spread across the profiles (samples)", RULE]
    for s in m.statistics[:top]:
        lines += [f"{s.name}",
                  f"  mean {_num(s.mean)}   std dev {_num(s.stddev)}   min {_num(s.min)} ({s.min_who})   "
                  f"max {_num(s.max)} ({s.max_who})   imbalance "
                  + (f"{s.imbalance:.3f}" if s.imbalance is not None else "-")]
    if len(m.statistics) > top:
        lines.append(f"({len(m.statistics) - top} more functions)")


def render_one(m: MultiReport) -> str:
    kind = "Profiles" if m.of_profiles else "Reports"
    # a combination of counting reports: the runs its experiment's locations came from
    runs = [loc.run for loc in m.experiment.locations if loc.run is not None] \
        if documents.is_counts(m.experiment) else m.reports
    lines = [f"PerfSuite Combined {kind}", "", f"{kind + ' combined':<24}: {len(runs):,}"]
    hosts = sorted({r.hostname for r in runs if r.hostname})
    if hosts:
        shown = ", ".join(hosts[:8]) + (f" and {len(hosts) - 8} more" if len(hosts) > 8 else "")
        lines.append(f"{'Hosts':<24}: {shown}")
    ranks = sorted({r.rank for r in runs if r.rank is not None})
    if ranks:
        lines.append(f"{'MPI ranks':<24}: {len(ranks)} ({ranks[0]}-{ranks[-1]})")
    if m.totals:
        lines.append(f"{'Process totals':<24}: {len(m.totals):,} left out (their threads are combined)")
    if m.of_profiles:
        _profiles(lines, m)
        return "\n".join(lines) + "\n"
    _table(lines, "Event Statistics", [s for s in m.statistics if s.kind == "event"])
    _table(lines, "Derived Metric Statistics", [s for s in m.statistics if s.kind == "metric"])
    return "\n".join(lines) + "\n"
