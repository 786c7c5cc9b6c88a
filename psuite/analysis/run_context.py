"""The view's "context" and "dropped" sections: what a run's reports say
about it (machine, host, command, date, ranks, threads, counters, events
not counted and why), or what an experiment's attributes say (CUBE files,
results of the algebra)."""

from __future__ import annotations

import re
from collections.abc import Sequence

NOT_COUNTED = "not counted: "
SKIPPED_METRICS = "psuite::skipped_metrics"  # readers/cube.py: metrics whose values the model cannot hold
COMMAND_KEYS = {"command", "command line", "commandline", "cmdline", "executable", "program"}
DATE_KEYS = {"date", "creation date", "creation time", "start time", "timestamp", "time stamp", "run date"}
MANY_HOSTS = 8  # hosts named one by one in the context; beyond, a count and the first few


def run_context(reports: Sequence, totals: int = 0) -> list[list[str]]:
    """[label, value] pairs for the reports of one run (one report, or a
    MultiReport's members); `totals`: process totals set apart by -c."""
    from psuite.model.report import CountReport, ProfileReport

    first = reports[0]
    out: list[list[str]] = []

    def add(label: str, value: object) -> None:
        if value not in (None, ""):
            out.append([label, str(value)])

    add("Command", first.command)
    dates = sorted({r.date for r in reports if r.date})
    add("Date", dates[0] if len(dates) == 1 else f"{dates[0]} ... {dates[-1]}" if dates else "")
    hosts = sorted({r.hostname + (f".{r.domainname}" if r.domainname else "") for r in reports if r.hostname})
    if len(hosts) > MANY_HOSTS:
        add("Hosts", f"{len(hosts)}: {', '.join(hosts[:3])} ...")
    else:
        add("Host" if len(hosts) == 1 else "Hosts", ", ".join(hosts))
    ranks = {r.rank for r in reports if r.rank is not None}
    processes = {(r.hostname, r.rank if r.rank is not None else r.pid) for r in reports}
    if ranks:
        add("MPI ranks", len(ranks))
    elif len(processes) == 1 and first.pid is not None:
        add("Process ID", first.pid)
    else:
        add("Processes", len(processes))
    add("Threads", len(reports))
    if totals:
        add("Process totals", f"{totals} (psrun -p; their threads are shown)")
    add("User", first.username)
    if isinstance(first, CountReport):
        add("Collector", first.collector)
        add("Counting domain", first.domain)
        if any(r.multiplexed for r in reports):
            add("Multiplexed", "yes (counts are scaled estimates)")
    elif isinstance(first, ProfileReport):
        add("Profile class", first.profile_class)
        add("Event", first.event)
        if first.threshold:
            unit = "microseconds" if first.is_timer else "events"
            add("Period" if first.is_timer else "Threshold", f"{first.threshold:,} {unit}")
        add("Total samples", f"{sum(r.total_samples for r in reports):,}")
        add("Domain", first.domain)
        add("Mapper", first.mapper)
        if any(r.callpaths is not None for r in reports):
            add("Call paths", "recorded (psrun --callpath)")
    walls = [r.wallclock for r in reports if r.wallclock is not None]
    if walls:
        add("Wall clock", f"{max(walls):.3f} s" + (" (the longest)" if len(walls) > 1 else ""))
    cpus = [r.cputime for r in reports if r.cputime is not None]
    if cpus:
        add("CPU time", f"{sum(cpus):.3f} s" + (" (all together)" if len(cpus) > 1 else ""))
    m = first.machine
    if m is not None:
        add("Machine", " ".join(x for x in (m.vendor, m.brand) if x))
        add("Clock", f"{m.mhz:.0f} MHz" if m.mhz else "")
        add("CPUs", m.cpu_count)
        add("Memory", f"{m.memory_mb:,} MB" if m.memory_mb else "")
    notes = {_note(r.annotation) for r in reports} - {""}
    if len(notes) == 1:
        add("Note", notes.pop())
    elif notes:
        add("Notes", f"{len(notes)} different (one per rank or thread); first: {sorted(notes)[0]}")
    add("Generator", first.generator)
    sources = [r.source for r in reports if r.source]
    if len(sources) == 1:
        add("Source", sources[0])
    elif sources:
        add("Sources", f"{len(sources)} documents: {sources[0]} ...")
    return out


def _pieces(annotation: str) -> list[str]:
    return [p.strip() for p in (annotation or "").split("; ") if p.strip()]


def _note(annotation: str) -> str:
    """The annotation without its "not counted" parts (shown as dropped)."""
    return "; ".join(p for p in _pieces(annotation) if not p.startswith(NOT_COUNTED))


_DROPPED = re.compile(r"not counted: (.+?): (.*)$")


def dropped_events(reports: Sequence) -> list[dict[str, str]]:
    """Events asked for and not counted, with why: psrun writes
    "not counted: A, B: why" into each report's <annotation>."""
    seen: dict[tuple[str, str], None] = {}
    for r in reports:
        for piece in _pieces(r.annotation):
            m = _DROPPED.match(piece)
            if m:
                for name in m.group(1).split(", "):
                    seen[(name.strip(), m.group(2).strip())] = None
    return [{"event": e, "why": w} for e, w in seen]


def experiment_context(exp) -> list[list[str]]:
    """[label, value] pairs of an experiment read from a CUBE file or made
    by the algebra: its provenance attributes and its dimensions."""
    a = exp.attributes
    out: list[list[str]] = []
    processes = len({(loc.node, loc.rank) for loc in exp.locations})
    shown = {"operation", "source", "Creator", "CUBE_CT_AGGR", SKIPPED_METRICS}
    if a.get("operation"):
        out.append(["Operation", str(a["operation"])])
    # the command and the date under whatever key the cube's producer gave them
    for label, keys in (("Command", COMMAND_KEYS), ("Date", DATE_KEYS)):
        found = [k for k in a if _bare(k) in keys and a[k]]
        if found:
            out.append([label, str(a[found[0]])[:500]])
            shown.update(found)
    if a.get("source"):
        source = str(a["source"])
        if a.get("Creator") == "psuite" and not a.get("operation") and processes > 1:
            # psuite's CUBE export names the first document only: not the source of every rank's values
            out.append(["Made from", f"{source} and the other {processes - 1} processes' documents"])
        else:
            out.append(["Source", source])
    for key, label in (("Creator", "Creator"), ("CUBE_CT_AGGR", "Call-tree aggregation")):
        if a.get(key):
            out.append([label, str(a[key])])
    others = [(k, v) for k, v in a.items() if k not in shown and v]
    out += [[k, str(v)[:200]] for k, v in others[:20]]  # a Score-P cube's own attributes, a few
    nodes = {loc.node for loc in exp.locations}
    out.append(["Nodes", str(len(nodes))])
    out.append(["Processes", str(processes)])
    out.append(["Threads", str(len(exp.locations))])
    out.append(["Call paths", str(len(exp.cnodes))])
    return out


def _bare(key: str) -> str:
    """An attribute's key without its producer's prefix ("Score-P::date"), in lower case."""
    return key.rsplit("::", 1)[-1].strip().lower().replace("_", " ")


def input_context(inputs: Sequence[Sequence | None], operation: str = "") -> list[list[str]]:
    """One [label, value] per input of an algebra result: its document,
    command and date (a CUBE file: "a CUBE file"); a difference's are the
    minuend and the subtrahend."""
    out = []
    for i, reports in enumerate(inputs, 1):
        label = ("Minuend", "Subtrahend")[i - 1] if operation == "diff" and i <= 2 else f"Input {i}"
        if not reports:
            out.append([label, "a CUBE file"])
            continue
        first = reports[0]
        where = f"{len(reports)} ranks or threads" if len(reports) > 1 else first.source
        words = [w for w in (where, first.command, first.date) if w]
        out.append([label, ", ".join(words)])
    return out


def skipped_metrics(exp) -> list[dict[str, str]]:
    """A CUBE file's metrics psuite's reader left out, as dropped."""
    names = [n for n in exp.attributes.get(SKIPPED_METRICS, "").split(",") if n]
    return [{"event": n, "why": "in the CUBE file, but its values are of a kind psuite does not read"}
            for n in names]
