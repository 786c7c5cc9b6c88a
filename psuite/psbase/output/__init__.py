"""psbase's outputs: every query's ResultTable as a text table, CSV, JSON,
gnuplot data and script, a PNG or SVG chart (matplotlib), or an HTML page
with the same chart (plotly), one module per format:

  tables   text, CSV, JSON
  chart    what a chart shows (bar or line, series, labels), for all plots
  mpl      PNG and SVG: 800 x 500 pixels (SVG: 576 x 360 pt)
  gnuplot  a data file and a .gp script beside it
  html     a self-contained page, plotly.js inline

Files are written whole or not at all (a temporary file beside the name,
moved into place), and an existing file is replaced only with force."""

from __future__ import annotations

from psuite.cli_common import atomic_outputs, check_outputs
from psuite.errors import UsageError
from psuite.psbase.output.chart import KINDS, check_table
from psuite.psbase.result import ResultTable

FORMATS = ("text", "csv", "json", "gnuplot", "png", "svg", "html")
TEXT_FORMATS = ("text", "csv", "json")  # those render() gives as a string (standard output)
PLOT_FORMATS = ("gnuplot", "png", "svg", "html")  # files only; a plot kind applies to them

__all__ = ["FORMATS", "KINDS", "PLOT_FORMATS", "TEXT_FORMATS", "figure", "render", "write"]


def _check_format(fmt: str, allowed: tuple[str, ...]) -> None:
    if fmt not in allowed:
        raise UsageError(f"output format {fmt!r} is not one of {', '.join(allowed)}")


def render(table: ResultTable, fmt: str) -> str:
    """The table as text (aligned, units in the header), csv or json; pbtext:
    a query file's perfbase raw_text output (see output.perfbase_text)."""
    from psuite.psbase.output import tables

    if fmt == "pbtext":
        from psuite.psbase.output import perfbase_text

        return perfbase_text.text(table.pb_blocks)
    if fmt == "pbxml":
        from psuite.psbase.output import perfbase_xml

        return perfbase_xml.text(table.pb_blocks)
    if fmt == "pbgnuplot":  # on the screen without a file: the command file perfbase pipes to gnuplot
        from psuite.psbase.output import perfbase_gnuplot

        return perfbase_gnuplot.script(table.pb_blocks, table.pb_spec, None) or ""
    if fmt == "pbopendoc":  # a spreadsheet is a file: perfbase names it <filename>.ods
        raise UsageError("an opendoc output writes a spreadsheet file; give its <output> a <filename>")

    _check_format(fmt, TEXT_FORMATS)
    check_table(table, text=True)
    return {"text": tables.text, "csv": tables.csv_text, "json": tables.json_text}[fmt](table)


def write(table: ResultTable, fmt: str, path: str, kind: str = "auto", force: bool = False) -> list[str]:
    """Write the table in format fmt to path; the files written.

    text, csv, json: path.  gnuplot: path is the data file, and the script
    is beside it (its name with .gp as suffix; see output.gnuplot).  png,
    svg: a chart of 800 x 500 pixels (SVG 576 x 360 pt); html: a page with
    the chart.  kind (charts only): "bar" (grouped bars, one group per
    value of the first key), "line" (over a numeric first key) or "auto"
    (line for a numeric first key with more than two values, else bar).
    An existing file is refused unless force."""
    from psuite.psbase.output import chart as chartmod

    if fmt == "pbgnuplot":  # perfbase's gnuplot output: its command file NAME.gp
        from psuite.psbase.output import perfbase_gnuplot

        content = perfbase_gnuplot.script(table.pb_blocks, table.pb_spec, path)
        if content is None:  # nothing to plot: perfbase writes no file
            return []
        paths = [path + ".gp"]
        drawn = perfbase_gnuplot.drawing(table.pb_spec, path)  # ps, eps: gnuplot draws it from the script
        exe = perfbase_gnuplot.check_gnuplot(table.pb_spec)
        if drawn:
            check_outputs([*paths, drawn], force)
        with atomic_outputs(paths, force) as files:
            files[0].write(content)
        if drawn and exe:
            perfbase_gnuplot.draw(exe, paths[0], drawn)
            paths.append(drawn)
        return paths
    if fmt == "pbopendoc":  # perfbase's OpenDocument spreadsheet: NAME.ods
        from psuite.psbase.output import perfbase_opendoc

        paths = [path + ".ods"]
        content = perfbase_opendoc.document(table.pb_blocks or [], table.title)
        with atomic_outputs(paths, force, binary=True) as files:
            files[0].write(content)
        return paths
    if fmt in ("pbtext", "pbxml"):  # perfbase's raw_text (xml) output to a file: NAME.dat (NAME.xml), as perfbase
        paths = [path + (".dat" if fmt == "pbtext" else ".xml")]
        with atomic_outputs(paths, force) as files:
            files[0].write(render(table, fmt))
        return paths
    _check_format(fmt, FORMATS)
    check_table(table, text=fmt in TEXT_FORMATS)
    if fmt in TEXT_FORMATS:
        if kind != "auto":
            raise UsageError(f"a plot kind ({kind}) goes with a chart format: {', '.join(PLOT_FORMATS)}")
        paths, contents = [path], [render(table, fmt)]
    else:
        c = chartmod.chart(table, kind)
        if fmt == "gnuplot":
            from psuite.psbase.output import gnuplot

            paths = [path, gnuplot.script_path(path)]
            check_outputs(paths, force)
            contents = [gnuplot.data(c), gnuplot.script(c, path)]
        elif fmt == "html":
            from psuite.psbase.output import html

            check_outputs([path], force)
            paths, contents = [path], [html.page(c)]
        else:
            from psuite.psbase.output import mpl

            check_outputs([path], force)
            paths, contents = [path], [mpl.image(c, fmt)]
    with atomic_outputs(paths, force, binary=[isinstance(x, bytes) for x in contents]) as files:
        for f, content in zip(files, contents, strict=True):
            f.write(content)
    return paths


def figure(table: ResultTable, kind: str = "auto"):
    """The matplotlib Figure that png and svg save (its axes and artists
    show what is drawn: bars, lines, error bars, labels)."""
    from psuite.psbase.output import chart as chartmod
    from psuite.psbase.output import mpl

    return mpl.figure(chartmod.chart(table, kind))
