"""A combiner's bar chart with long value labels (b_eff_io's weighted
average bandwidth for write, rewrite and read) is readable in the 800 x
500 PNG: its legend is inside the image (not clipped at both edges), never
over the bars, and its entries say every label in full; the y axis says
what the values share in whole words ("weighted average bandwidth
[MB/s]", not "weighted average bandwidth for [MB/s]"), or "value [MB/s]"
when they share nothing that names a quantity.  gnuplot's script puts such
a legend below the plot, which keeps its width (beside, the legend took
half of it)."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from psuite.psbase import output
from psuite.psbase.output import chart, figure
from psuite.psbase.result import Column, ResultTable
from tests.psbase.test_output import SVG, run_gnuplot

SIZES = [32, 1024, 1032, 32768, 32776, 1048576, 1048584, 2097152]
PATTERNS = ["write", "rewrite", "read", "scatter", "shared", "separate", "segmented", "collective"]
LONG = " measured over every chunk size and every access pattern of the benchmark run"


def table(labels: list[str], unit: str = "MB/s") -> ResultTable:
    cols = [Column("chunk", "B", "key", label="chunk size", datatype="integer")]
    cols += [Column(f"v{i}", unit, "value", label=lb) for i, lb in enumerate(labels)]
    rows = [(s, *(100.0 + 10 * i + j for i in range(len(labels)))) for j, s in enumerate(SIZES)]
    return ResultTable("b_eff_io bandwidths", cols, rows, experiment="b_eff_io")


def bandwidths(n: int, tail: str = "") -> list[str]:
    return [f"weighted average bandwidth for {p}{tail}" for p in PATTERNS[:n]]


@pytest.mark.parametrize("labels", [bandwidths(3), bandwidths(2, LONG), bandwidths(5), bandwidths(8)],
                         ids=["3", "2 long", "5", "8 beside"])  # fmt: skip
def test_legend_and_labels_fit_the_image(labels):
    fig = figure(table(labels), "bar")
    fig.canvas.draw()
    w, h = fig.canvas.get_width_height()
    assert (w, h) == (800, 500)
    ax = fig.axes[0]
    [legend] = fig.legends
    box = legend.get_window_extent()
    assert 0 <= box.x0 and box.x1 <= w and 0 <= box.y0 and box.y1 <= h, (box, labels[0])
    assert not box.overlaps(ax.get_window_extent())
    # every label in full (wrapped lines joined)
    assert [" ".join(t.get_text().split()) for t in legend.get_texts()] == labels
    y = ax.yaxis.label
    assert y.get_text() == "weighted average bandwidth [MB/s]"
    yb = y.get_window_extent()
    assert 0 <= yb.x0 and yb.x1 <= w and 0 <= yb.y0 and yb.y1 <= h
    # the chunk sizes readable, even beside a wide legend: side by side with room between them,
    # or slanted with their parallel lines a text height apart at least
    texts = [t for t in ax.get_xticklabels() if t.get_text()]
    assert len(texts) == len(SIZES)
    ticks = sorted((t.get_window_extent() for t in texts), key=lambda b: b.x0)
    angle = texts[0].get_rotation()
    if angle == 0:
        assert all(a.x1 < b.x0 for a, b in zip(ticks, ticks[1:], strict=False)), labels[0]
    else:
        height = texts[0].get_fontsize() * fig.dpi / 72  # pixels
        xs = sorted(ax.transData.transform((x, 0))[0] for x in ax.get_xticks())
        apart = min(b - a for a, b in zip(xs, xs[1:], strict=False)) * math.sin(math.radians(angle))
        assert apart > height, (apart, height)


@pytest.mark.parametrize(
    ("labels", "unit", "want"),
    [
        (["weighted average bandwidth for write", "weighted average bandwidth for read"], "MB/s",
         "weighted average bandwidth [MB/s]"),
        (["bandwidth, write", "bandwidth, read"], "MB/s", "bandwidth [MB/s]"),
        (["time of the read", "time of the write"], "s", "time [s]"),
        (["read (rel. difference)", "write (rel. difference)"], "%", "rel. difference [%]"),
        (["the write", "the read"], "MB/s", "value [MB/s]"),  # only a joining word in common
        (["read of the file", "write of the file"], "MB/s", "value [MB/s]"),  # a qualifier, not a quantity
        (["B_write", "B_read"], "MB/s", "value [MB/s]"),  # no whole word in common
        (["B_write", "B_read"], "", "value"),
    ],
)  # fmt: skip
def test_y_label_is_shared_whole_words_or_value(labels, unit, want):
    assert chart.chart(table(labels, unit), "bar").ylabel == want


def tick_xs(svg: Path) -> list[float]:
    """The x positions of the numbers gnuplot centres under the x axis."""
    xs = []
    for g in ET.parse(svg).getroot().iter(f"{SVG}g"):
        texts = ["".join(t.itertext()).strip() for t in g.iter(f"{SVG}text")]
        m = re.match(r"translate\(([\d.]+),", g.get("transform") or "")
        if g.get("text-anchor") == "middle" and m and texts and texts[0].isdigit():
            xs.append(float(m.group(1)))
    return xs


def test_gnuplot_long_legend_goes_below_and_leaves_the_plot_its_width(tmp_path):
    for n in (3, 8):
        data = tmp_path / f"g{n}.dat"
        output.write(table(bandwidths(n)), "gnuplot", str(data), "bar")
        script = data.with_suffix(".gp")
        assert "set key outside below" in script.read_text()
        run_gnuplot(script, tmp_path / f"g{n}.svg", cwd=tmp_path)
        xs = tick_xs(tmp_path / f"g{n}.svg")
        assert len(xs) == len(SIZES) and max(xs) - min(xs) > 0.6 * 800, xs  # beside: about 200 pixels
    # short entries stay beside the plot
    output.write(table(["write", "read"]), "gnuplot", str(tmp_path / "s.dat"), "bar")
    assert "set key outside right top" in (tmp_path / "s.gp").read_text()


def test_long_title_and_axis_labels_are_wrapped_inside_the_image():
    synopsis = "weighted average bandwidth for write" + LONG
    title = "a query comparing every access pattern of b_eff_io over chunk sizes, node counts and file systems"
    cols = [Column("n", "", "key", label="number of processes" + LONG, datatype="integer"),
            Column("v", "MB/s", "value", label=synopsis)]  # fmt: skip
    fig = figure(ResultTable(title, cols, [(1, 1.0), (2, 2.0), (4, 3.0)], experiment="b_eff_io"), "line")
    fig.canvas.draw()
    ax = fig.axes[0]
    for artist, want in ((ax.title, f"b_eff_io: {title}"), (ax.xaxis.label, f"number of processes{LONG}"),
                         (ax.yaxis.label, f"{synopsis} [MB/s]")):  # fmt: skip
        assert " ".join(artist.get_text().split()) == want  # every word, on several lines
        box = artist.get_window_extent()
        assert 0 <= box.x0 and box.x1 <= 800 and 0 <= box.y0 and box.y1 <= 500, (want, box)
