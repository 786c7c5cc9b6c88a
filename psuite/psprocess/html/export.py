"""Writing the HTML report: `psprocess --html FILE` (the exporters'
targets/write convention of psuite.psprocess.cli), `-f html` and the
algebra's results (psuite.psprocess.subcommands)."""

from __future__ import annotations

from psuite.cli_common import write_output


def targets(path: str) -> list[str]:
    """The files write(..., path) creates: the page alone."""
    return [path]


def page(subject, sources: list[dict] | None = None) -> str:
    """The whole page for a report or an experiment (with its sources
    section, see viewdoc.build)."""
    from psuite.psprocess.html import page as html_page
    from psuite.psprocess.html import viewdoc

    return html_page.render(viewdoc.build(subject, sources=sources))


def write(subject, path: str, module: str | None = None, force: bool = False,
          sources: list[dict] | None = None) -> str:
    """The page for a report or an experiment written to path, whole or not
    at all (never over an existing file without force); says its size.
    module: unused (the exporters' convention)."""
    text = page(subject, sources)
    write_output(path, text, force)
    return f"{len(text.encode('utf-8')):,} bytes"
