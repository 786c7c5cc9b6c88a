"""A chart as perfbase wrote it for gnuplot: a data file and a script
beside it that plots the data with its title, axis labels with units, a
legend, and error bars where the table has error columns.

The data file: for a bar chart one line per group (its label quoted, then
each series' value and error); for a line plot one block per series (x,
value, error), blocks separated by two blank lines (gnuplot's `index`).
No value or no error: NaN.  Comment lines name the columns and units.

The script finds the data file beside itself (gnuplot's ARG0), whatever
the directory gnuplot runs in.  `gnuplot -p NAME.gp` shows the plot;
`gnuplot -e "out='NAME.png'" NAME.gp` writes an 800 x 500 pixel PNG
(pngcairo), or an SVG of that size when the name ends in .svg."""

from __future__ import annotations

import math
import os

from psuite.psbase.output.chart import Chart, integer_step, text

WIDTH, HEIGHT = 800, 500


def script_path(data_path: str) -> str:
    """The script beside the data file: its name with .gp for its suffix."""
    base, ext = os.path.splitext(data_path)
    return data_path + ".gp" if ext == ".gp" else base + ".gp"


def _num(x: float) -> str:
    return "NaN" if math.isnan(x) else repr(x)


def _q(text: str) -> str:
    """A gnuplot string: single quotes, where only '' is special."""
    return "'" + " ".join(str(text).split()).replace("'", "''") + "'"


def _label(text: str) -> str:
    """A group's label as a data file's quoted string (which has no escapes)."""
    return '"' + " ".join(text.split()).replace('"', "'") + '"'


KEY_BESIDE = 24  # the longest legend entry (characters) kept beside the plot; longer: below it
CHAR_PX = 8  # about a character of gnuplot's default font at 12 points, in pixels


def _key(chart: Chart) -> str:
    """The legend beside the plot, or below it in as many columns as fit
    800 pixels when its entries are long (beside, they would squeeze the
    plot to a strip)."""
    longest = max((len(" ".join(s.label.split())) for s in chart.series), default=0)
    if longest <= KEY_BESIDE:
        return "set key outside right top"
    cols = max(1, min(3, len(chart.series), (WIDTH - 40) // (longest * CHAR_PX + 60)))
    return f"set key outside below center horizontal maxcols {cols}"


def data(chart: Chart) -> str:
    out = [f"# psbase: {' '.join(chart.title.split())}", *(f"# {' '.join(n.split())}" for n in chart.notes),
           f"# x: {chart.xlabel}; y: {chart.ylabel}"]
    if chart.left_out:
        out.append(f"# not here (another unit, or not numbers): {', '.join(chart.left_out)}")
    if chart.kind == "bar":
        out.append("# columns: group, then value and error of: "
                   + "; ".join(f"{2 + 2 * i}-{3 + 2 * i}: {s.label}" for i, s in enumerate(chart.series)))
        cells: list[list[str]] = [[_label(g)] + ["NaN", "NaN"] * len(chart.series) for g in chart.groups]
        for i, s in enumerate(chart.series):
            for n, (g, y) in enumerate(zip(s.xs, s.ys, strict=True)):
                cells[g][1 + 2 * i] = _num(y)
                cells[g][2 + 2 * i] = _num(s.errs[n]) if s.errs else "NaN"
        out += [" ".join(c) for c in cells]
        return "\n".join(out) + "\n"
    out.append("# one block per series (gnuplot's index): x, value, error")
    for i, s in enumerate(chart.series):
        out += ["", ""] if i else []
        out.append(f"# index {i}: {' '.join(s.label.split())}")
        out += [f"{_num(x)} {_num(y)} {_num(s.errs[n]) if s.errs else 'NaN'}"
                for n, (x, y) in enumerate(zip(s.xs, s.ys, strict=True))]
    return "\n".join(out) + "\n"


def script(chart: Chart, data_path: str) -> str:
    name = os.path.basename(data_path)
    gp = os.path.basename(script_path(data_path))
    lines = [
        f"# gnuplot script written by psbase: plots {name} (beside this script)",
        f"# show it: gnuplot -p {gp}",
        f"# into a file: gnuplot -e \"out='chart.png'\" {gp}   (a name ending in .svg: SVG)",
        f"data = {_q(name)}",
        "if (strstrt(ARG0, '/') > 0) {",
        "    i = strlen(ARG0)",
        "    while (ARG0[i:i] ne '/') { i = i - 1 }",
        "    data = ARG0[1:i] . data",
        "}",
        "if (exists('out')) {",
        f"    set terminal pngcairo size {WIDTH},{HEIGHT} noenhanced",
        "    if (strlen(out) > 4) {",
        "        if (out[strlen(out) - 3:] eq '.svg') {",
        f"            set terminal svg size {WIDTH},{HEIGHT} noenhanced",
        "        }",
        "    }",
        "    set output out",
        "}",
        "set termoption noenhanced",
        "set datafile missing 'NaN'",
        f"set title {_q(chart.title)}",
        f"set xlabel {_q(chart.xlabel)}",
        f"set ylabel {_q(chart.ylabel)}",
        _key(chart) + (f" title {_q(chart.legend_title)}" if chart.legend_title else ""),
        "set grid ytics",
        "set xzeroaxis",
    ]
    plots = []
    if chart.kind == "bar":
        style = "errorbars gap 1 lw 1" if chart.has_errors else "clustered gap 1"
        lines += ["set yrange [*<0:*]",  # bars stand on zero
                  "set style data histograms", f"set style histogram {style}",
                  "set style fill solid 0.7 border -1", "set boxwidth 0.9"]
        if len(chart.groups) > 8 or max(map(len, chart.groups)) > 10:
            lines.append("set xtics rotate by -30")
        for i, s in enumerate(chart.series):
            y, e = 2 + 2 * i, 3 + 2 * i
            err = f":(valid({e}) ? column({e}) : 0)" if chart.has_errors else ""
            xtic = ":xtic(1)" if i == 0 else ""
            plots.append(f"{'data' if i == 0 else chr(39) * 2} using {y}{err}{xtic} title {_q(s.label)}")
    else:
        if chart.xlog:
            lines.append(f"set logscale x {chart.xlog}")
        elif chart.xticks:  # an integer key's few values: the ticks (ranks 1, 2, 4; not 1.5, 2.5)
            lines.append(f"set xtics ({', '.join(_q(text(x)) + ' ' + _num(x) for x in chart.xticks)})")
        elif chart.xint:
            xs = [x for s in chart.series for x in s.xs]
            lines.append(f"set xtics {integer_step(min(xs), max(xs))}")
        for i, s in enumerate(chart.series):
            if s.errs is not None:
                how = "using 1:2:(valid(3) ? column(3) : 0) with yerrorlines"
            else:
                how = "using 1:2 with linespoints"
            plots.append(f"data index {i} {how} pointtype 7 title {_q(s.label)}")
    lines.append("plot " + ", \\\n     ".join(plots))
    return "\n".join(lines) + "\n"
