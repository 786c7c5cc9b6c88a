"""What the original PerfSuite wrote where its DTDs leave a choice, and the
real readers of its documents (Eclipse PTP's PerfSuite parser, TAU
ParaProf's PSRun loader) depend on it:

- a DOCTYPE line naming the DTD under /usr/share/perfsuite/dtds/pshwpc/
  (ParaProf recognises a document by it; readers need not find the file);
- <date> in C's ctime() form, "Tue Mar 04 10:12:09 2014" (PTP parses it);
- <wallclock units="ticks">, seconds x clockspeed MHz x 10^6 (TAU divides
  by the clock speed whatever the units say);
- a <thread> in every report (TAU starts a new thread of data only there).
"""

from __future__ import annotations

import datetime

DTD_DIR = "/usr/share/perfsuite/dtds/pshwpc/"
DTDS = {"hwpcreport": "hwpcreport-0.3.dtd", "hwpcprofilereport": "hwpcprofilereport-0.3.dtd",
        "multihwpcreport": "multihwpcreport-0.3.dtd", "multihwpcprofilereport": "multihwpcprofilereport-0.3.dtd"}
CTIME = "%a %b %d %H:%M:%S %Y"  # zero-padded day, as PTP's parser reads it


def doctype(root_tag: str) -> str:
    return f'<!DOCTYPE {root_tag} SYSTEM "{DTD_DIR}{DTDS[root_tag]}">'


def ctime_date(text: str) -> str:
    """A date in ctime form: ISO 8601 (older psuite) is converted, in its
    own local time; anything else is kept as written."""
    try:
        when = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        return text
    return when.strftime(CTIME)


def wallclock_ticks(seconds: float, mhz_text: str) -> int:
    """Seconds as ticks of the clock written as mhz_text in the document,
    so that ticks / (clockspeed * 1e6) gives the seconds back."""
    return round(seconds * float(mhz_text) * 1e6)
