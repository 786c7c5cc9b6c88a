"""-f html: the HTML report (psuite.psprocess.html), one self-contained
page for one report or one combination (-c)."""

from __future__ import annotations

from collections.abc import Sequence

from psuite.errors import UsageError

EXTENSION = ".html"


def render(reports: list, source_dirs: Sequence[str] = (), statistics: str | None = None, **_options) -> str:
    if len(reports) != 1:
        raise UsageError(f"-f html shows one report in one page, and {len(reports)} inputs were given; give one, "
                         "or combine them with -c")
    from psuite.psprocess.html.export import page

    return page(reports[0], source_dirs=source_dirs, statistics=statistics)
