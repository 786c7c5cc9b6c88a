"""Writing the HTML report: `psprocess --html FILE` (the exporters'
targets/write convention of psuite.psprocess.cli), `-f html` and the
algebra's results (psuite.psprocess.subcommands)."""

from __future__ import annotations

from collections.abc import Sequence

from psuite.cli_common import write_output


def targets(path: str) -> list[str]:
    """The files write(..., path) creates: the page alone."""
    return [path]


_last: list = []  # [subject, inputs, source_dirs, statistics, page]: --html FILE with -f html builds it once


def page(subject, inputs: list[list | None] | None = None, source_dirs: Sequence[str] = (),
         statistics: str | None = None) -> str:
    """The whole page for a report or an experiment (an algebra result
    with its inputs' reports, see viewdoc.build); source_dirs: where source
    files may be shown from besides the program's build tree; statistics:
    a CUBE statistics file (.stat) to show."""
    from psuite.psprocess.html import page as html_page
    from psuite.psprocess.html import viewdoc

    if _last and _last[0] is subject and _last[1] is inputs and _last[2:4] == [list(source_dirs), statistics]:
        return _last[4]
    text = html_page.render(viewdoc.build(subject, inputs=inputs, source_dirs=source_dirs, statistics=statistics))
    _last[:] = [subject, inputs, list(source_dirs), statistics, text]
    return text


def write(subject, path: str, module: str | None = None, force: bool = False,
          inputs: list[list | None] | None = None, source_dirs: Sequence[str] = (),
          statistics: str | None = None) -> str:
    """The page for a report or an experiment written to path, whole or not
    at all (never over an existing file without force); says its size.
    module: unused (the exporters' convention)."""
    text = page(subject, inputs, source_dirs, statistics)
    write_output(path, text, force)
    return f"{len(text.encode('utf-8')):,} bytes"
