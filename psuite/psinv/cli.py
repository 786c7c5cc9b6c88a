"""psinv: what is this machine, and what can be measured on it?"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

from psuite.cli_common import check_outputs, run_cli, write_output
from psuite.cli_parser import ArgumentParser

DESCRIPTION = """\
Machine inventory: processor, caches, TLBs, memory, page size, operating
system, and the performance counters available here (PAPI version and
components, perf_event and its paranoid setting, hardware PMU or not).

Machine facts come from the kernel (/proc, /sys) and cpuid.  With -e, every
event a psrun configuration can name is listed, and each one's availability
is established by actually starting it here."""

EPILOG = """\
examples:
  psinv                 readable inventory
  psinv -x -o host.xml  <machineinfo> XML (machineinfo-0.3.dtd)
  psinv -e --available  the events that really count on this machine
  psinv --json | jq .machine.caches

output: -o FILE is written whole or not at all (a temporary file beside
FILE, moved into place when complete); an existing FILE is kept unless
--force is given.

exit status: 0 on success, 2 on a usage or output error."""


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="psinv", description=DESCRIPTION, epilog=EPILOG)
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("-x", "--xml", action="store_true",
                     help="write a <machineinfo> document valid against machineinfo-0.3.dtd")
    fmt.add_argument("--json", action="store_true", help="write JSON for scripts (the same facts as the text)")
    p.add_argument("-e", "--events", action="store_true",
                   help="list the events psrun can count: PAPI presets and native events, and the "
                        "kernel's perf_event generic events, each with its measured availability")
    p.add_argument("--available", action="store_true", help="with -e: only the events that count here")
    p.add_output_options()
    return p



def _kb(kb: int) -> str:
    if kb >= 1024 and kb % 1024 == 0:
        return f"{kb // 1024} MB"
    return f"{kb} KB"


def _ways(n: int) -> str:
    return "full" if n == 0 else f"{n}-way"


def render_text(inv) -> str:
    m, c = inv.machine, inv.counters
    lines = [f"Machine inventory of {inv.hostname}", ""]
    row = lines.append
    row("Processor")
    row(f"  Vendor               {m.vendor}")
    if m.brand:
        row(f"  Brand                {m.brand}")
    row(f"  Family/model/step    {m.family}/{m.model}/{m.stepping} "
        f"(0x{m.family:x}/0x{m.model:x}/0x{m.stepping:x})")
    row(f"  Clock                {m.mhz:.3f} MHz")
    row(f"  Logical CPUs         {m.cpu_count}")
    row(f"  Virtual machine      {'yes (' + m.hypervisor + ')' if inv.virtual_machine else 'no'}")
    row("")
    row("Caches")
    row("  Level  Type          Size      Line   Associativity  Shared by")
    for k in m.caches:
        shared = f"{k.shared_cpus} CPU{'s' if k.shared_cpus != 1 else ''}" if k.shared_cpus else "?"
        row(f"  L{k.level:<5} {k.type:<13} {_kb(k.size_kb):>8}  {k.line_size:>3} B  {_ways(k.associativity):<13}  "
            f"{shared}")
    if not m.caches:
        row("  (not reported by this kernel or CPU)")
    row("")
    row("TLBs")
    if m.tlbs:
        row("  Level  Type          Page     Entries  Associativity")
        for t in m.tlbs:
            row(f"  L{t.level:<5} {t.type:<13} {_kb(t.page_kb):>7}  {t.entries:>7}  {_ways(t.associativity)}")
    else:
        row("  (not reported by this CPU)")
    row("")
    row("Memory")
    row(f"  Total                {m.memory_mb} MB")
    row(f"  Page size            {m.page_size // 1024} KB")
    row("")
    row("Operating system")
    o = inv.os
    row(f"  Kernel               {o['system']} {o['kernel']} ({o['architecture']})")
    if o["distribution"]:
        row(f"  Distribution         {o['distribution']}")
    row("")
    row("Performance counters")
    if c.papi_version:
        row(f"  PAPI                 {c.papi_version}")
        for comp in c.papi_components:
            state = f"disabled: {comp['reason']}" if comp["disabled"] else f"active, {comp['counters']} counters"
            row(f"    component {comp['name']:<18} {state}")
    else:
        row("  PAPI                 not found (install libpapi, or set PSUITE_PAPI_LIBRARY); "
            "psrun counts through perf_event")
    row(f"  perf_event           {'available' if c.perf_event_available else 'not available'}")
    if c.perf_event_paranoid is not None:
        row(f"  perf_event_paranoid  {c.perf_event_paranoid}: {c.paranoid_meaning}")
    if c.hardware_pmu:
        row(f"  Hardware counters    {c.hardware_counters}")
    else:
        row(f"  Hardware counters    none usable ({c.hardware_pmu_reason}); software events "
            "(task-clock, page-faults, context-switches) and timers still work")
    return "\n".join(lines) + "\n"


def render_events_text(evs) -> str:
    width = max((len(e.name) for e in evs), default=10)
    lines = [f"{'Event':<{width}}  Backend     Kind    Avail  Description"]
    for e in evs:
        desc = e.description
        if not e.available and e.reason:
            desc = f"{desc} [{e.reason}]"
        lines.append(f"{e.name:<{width}}  {e.backend:<10}  {e.kind:<6}  {'yes' if e.available else 'no':<5}  {desc}")
    n_ok = sum(e.available for e in evs)
    lines.append("")
    lines.append(f"{len(evs)} events, {n_ok} available here")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.available and not args.events:
        build_parser().error("--available goes with -e/--events")
    if args.xml and args.events:
        build_parser().error("-x writes machine information only; use -e with text or --json")
    if args.output:
        check_outputs([args.output], args.force)  # before the inventory, which takes a while with -e
    write_output(args.output, _render(args), args.force)
    return 0


def _render(args) -> str:
    if args.events:
        from psuite.hwpc import events

        evs = [e for e in events.all_events() if e.available or not args.available]
        if args.json:
            return json.dumps({"events": [e.to_dict() for e in evs]}, indent=2) + "\n"
        return render_events_text(evs)
    if args.xml:
        from lxml import etree

        from psuite.formats import machineinfo
        from psuite.libperfsuite.machine import machine_info

        root = machineinfo.to_element(machine_info())
        return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True).decode()
    from psuite.psinv.inventory import gather

    inv = gather()
    if args.json:
        return json.dumps(inv.to_dict(), indent=2) + "\n"
    return render_text(inv)


def entry() -> int:
    return run_cli("psinv", main, None)


if __name__ == "__main__":
    sys.exit(entry())
