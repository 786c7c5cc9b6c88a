"""psbase's PNG/SVG charts are readable: the legend never covers the plot,
and on a logarithmic size axis no two tick labels overlap (b_eff_io's
chunk sizes 1024 and 1032, 1048576 and 1048584 side by side)."""

from __future__ import annotations

from psuite.psbase.output import figure
from psuite.psbase.result import Column, ResultTable

SIZES = [32, 1024, 1032, 32768, 32776, 1048576, 1048584, 2097152]


def table(series: int) -> ResultTable:
    cols = [Column("size", "B", "key", datatype="integer")]
    cols += [Column(f"bw {i}", "MB/s", "value") for i in range(series)]
    # negative bars from the top: where a legend inside the axes would sit on them
    rows = [(s, *(-50.0 - i for i in range(series))) for s in SIZES]
    return ResultTable("bw by size", cols, rows)


def test_legend_is_outside_the_axes():
    for series, kind in ((1, "line"), (3, "bar"), (8, "bar")):
        fig = figure(table(series), kind)
        fig.canvas.draw()
        ax = fig.axes[0]
        [legend] = fig.legends
        assert not legend.get_window_extent().overlaps(ax.get_window_extent()), (series, kind)


def test_log_axis_tick_labels_do_not_overlap():
    fig = figure(table(1), "line")
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    labels = [t for t in ax.get_xticklabels() if t.get_text() and t.get_visible()]
    assert labels[0].get_text() == "32" and labels[-1].get_text() == "2097152"
    boxes = sorted((t.get_window_extent() for t in labels), key=lambda b: b.x0)
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:], strict=False)), [t.get_text() for t in labels]
