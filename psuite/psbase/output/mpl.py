"""A chart as a PNG or SVG, drawn by matplotlib on its Agg canvas (never a
display): grouped bars (one group per value of the first key, one bar per
series: the paper's Fig. 8) or lines over a numeric first key, with error
bars, the axes labelled with names and units, a legend and a title.

Size: 800 x 500 pixels for PNG (8 x 5 inches at 100 dpi); SVG is the same
figure, 576 x 360 pt (8 x 5 inches), its texts kept as <text> elements.
The error bars of series i are the SVG group with id "errorbars-i", one
path per bar."""

from __future__ import annotations

import io
import math

from psuite.psbase.output.chart import Chart, text

WIDTH, HEIGHT, DPI = 800, 500, 100  # pixels of a PNG
MARGIN = 8  # pixels kept free at the image's edges by the legend
# legend labels wrapped at this many characters (small font: about 6 pixels each)
BELOW_CHARS, BESIDE_CHARS = 70, 28


def _t(text_: str) -> str:
    """Plain text for matplotlib: a $ is a dollar, not mathematics."""
    return text_.replace("$", r"\$")


def figure(chart: Chart):
    """The matplotlib Figure of a chart (its axes: figure.axes[0])."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH / DPI, HEIGHT / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if chart.kind == "bar":
        _bars(ax, chart)
    else:
        _lines(ax, chart)
    ax.set_title(_t(chart.title))
    ax.set_xlabel(_t(chart.xlabel))
    ax.set_ylabel(_t(chart.ylabel))
    # long texts wrapped to stay inside the image: the y label along the axes' side (about
    # 2/3 of the height once the title, x label and legend have theirs), the title and x label
    # centred over the axes, which the y axis's labels push right: 4/5 of the width
    _fit(fig, ax.title, WIDTH * 4 // 5, vertical=False)
    _fit(fig, ax.xaxis.label, WIDTH * 4 // 5, vertical=False)
    _fit(fig, ax.yaxis.label, HEIGHT * 2 // 3, vertical=True)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    _legend(fig, chart)
    ax = fig.axes[0]
    if chart.kind == "bar" and not ax.xaxis.get_ticklabels()[0].get_rotation():
        fig.canvas.draw()  # the layout: a legend beside the plot narrows it
        if _touching(ax):
            _slant(ax)
    return fig


def _fit(fig, artist, size: int, vertical: bool) -> None:
    """Wrap a text at word boundaries, on ever shorter lines, until it is
    at most size pixels long (a single word longer than that stays)."""
    import textwrap

    renderer = fig.canvas.get_renderer()
    text_ = artist.get_text()
    chars = len(text_)
    while chars > 8:
        box = artist.get_window_extent(renderer)
        if (box.height if vertical else box.width) <= size:
            return
        chars = chars * 4 // 5
        artist.set_text(textwrap.fill(text_, chars, break_long_words=False, break_on_hyphens=False))


def _legend(fig, chart: Chart) -> None:
    """The legend outside the axes, never over bars or lines, and inside the
    image: below the plot in as many columns (up to three) as fit its width,
    or beside it when long (more than six series); labels too long for
    either wrapped at word boundaries."""
    import textwrap

    ax = fig.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    kw = {"title": _t(chart.legend_title) or None, "fontsize": "small"}
    beside = len(handles) > 6
    # beside: at most a quarter of the width; below: one column of up to 3/4 of it
    wrap = BESIDE_CHARS if beside else BELOW_CHARS
    labels = [textwrap.fill(lb, wrap, break_long_words=False, break_on_hyphens=False) for lb in labels]
    if beside:
        fig.legend(handles, labels, loc="outside right upper", **kw)
        return
    renderer = fig.canvas.get_renderer()
    for ncols in range(min(len(handles), 3), 0, -1):
        legend = fig.legend(handles, labels, loc="outside lower center", ncols=ncols, **kw)
        if ncols == 1 or legend.get_window_extent(renderer).width <= WIDTH - 2 * MARGIN:
            return
        legend.remove()


def _bars(ax, chart: Chart) -> None:
    n = len(chart.series)
    width = 0.8 / n
    for i, s in enumerate(chart.series):
        xs = [x - 0.4 + width * (i + 0.5) for x in s.xs]
        bars = ax.bar(xs, s.ys, width, label=_t(s.label), yerr=s.errs, capsize=3 if s.errs else 0,
                      error_kw={"elinewidth": 1})
        if bars.errorbar is not None:
            _tag(bars.errorbar, i)
    ax.set_xticks(range(len(chart.groups)), [_t(g) for g in chart.groups])
    ax.axhline(0, color="black", linewidth=0.8)
    if len(chart.groups) > 8 or max(map(len, chart.groups)) > 10:
        _slant(ax)


def _slant(ax) -> None:
    """The group labels at 30 degrees, each ending under its group."""
    ax.tick_params(axis="x", labelrotation=30)
    for t in ax.get_xticklabels():
        t.set_horizontalalignment("right")


def _touching(ax) -> bool:
    """Whether two x tick labels, as drawn, touch or overlap."""
    boxes = sorted((t.get_window_extent() for t in ax.get_xticklabels() if t.get_text()), key=lambda b: b.x0)
    return any(a.x1 >= b.x0 for a, b in zip(boxes, boxes[1:], strict=False))


def _lines(ax, chart: Chart) -> None:
    from matplotlib.ticker import MaxNLocator, NullFormatter, ScalarFormatter

    for i, s in enumerate(chart.series):
        c = ax.errorbar(s.xs, s.ys, yerr=s.errs, marker="o", markersize=4, capsize=3, label=_t(s.label))
        if s.errs is not None:
            _tag(c, i)
    if chart.xlog:
        ax.set_xscale("log", base=chart.xlog)
        xs = _spaced(sorted({x for s in chart.series for x in s.xs if x is not None and x > 0}))
        if len(xs) <= 12:  # the values themselves as ticks, written out (1024, not 2^10)
            ax.set_xticks(xs, [text(x) for x in xs])
            ax.xaxis.set_minor_formatter(NullFormatter())
        else:
            ax.xaxis.set_major_formatter(ScalarFormatter())
    elif chart.xticks:  # an integer key's few values: the ticks (ranks 1, 2, 4; not 1.5, 2.5)
        ax.set_xticks(chart.xticks, [text(x) for x in chart.xticks])
    elif chart.xint:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _spaced(xs: list[float]) -> list[float]:
    """The values far enough apart on a log axis for their labels not to
    overlap (1024 and 1032 side by side would): at least 1/14 of the axis's
    decades from the previous one kept; the largest is kept."""
    if len(xs) < 2:
        return xs
    gap = (math.log10(xs[-1]) - math.log10(xs[0])) / 14
    kept = [xs[0]]
    for x in xs[1:]:
        if math.log10(x) - math.log10(kept[-1]) >= gap:
            kept.append(x)
        elif x == xs[-1]:
            kept[-1] = x
    return kept


def _tag(container, i: int) -> None:
    """Name the error bars of series i in the SVG ("errorbars-i")."""
    for lc in container.lines[2]:
        lc.set_gid(f"errorbars-{i}")


def image(chart: Chart, fmt: str) -> bytes:
    """The chart as PNG or SVG bytes."""
    import warnings

    import matplotlib

    buf = io.BytesIO()
    # SVG texts as <text>, not glyph paths: searchable, and smaller; no timestamp: equal inputs, equal files
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "psbase"}), warnings.catch_warnings():
        # layout advice (a legend too large to place well) is not for a command's standard error
        warnings.filterwarnings("ignore", category=UserWarning, module="matplotlib")
        figure(chart).savefig(buf, format=fmt, dpi=DPI, metadata={"Date": None} if fmt == "svg" else None)
    return buf.getvalue()

