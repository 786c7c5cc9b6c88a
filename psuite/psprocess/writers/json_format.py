"""JSON output.  Schema "psuite.count/1", stable:

{"schema": "psuite.count/1", "reports": [ {
    "source", "version", "generator", "date", "hostname", "domainname", "pid",
    "thread", "username", "command", "md5sum", "annotation",
    "wallclock", "usertime", "systemtime"          (seconds, or null),
    "counter_class", "counter_version", "domain", "multiplexed",
    "machine": {cpu_count, vendor, brand, family, model, stepping, mhz,
                hypervisor, caches: [...], tlbs: [...], memory_mb, page_size} | null,
    "events":  [{"name", "count", "type", "derived", "description"}],
    "metrics": [{"name", "value", "description", "unit"}] } ] }
"""

from __future__ import annotations

import json

from psuite.report import CountReport

EXTENSION = ".json"
SCHEMA = "psuite.count/1"


def render(reports: list[CountReport], **_options) -> str:
    return json.dumps({"schema": SCHEMA, "reports": [r.to_dict() for r in reports]}, indent=2) + "\n"
