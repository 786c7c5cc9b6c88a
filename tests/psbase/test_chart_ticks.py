"""A line plot over an integer key (ranks 1, 2, 4) has ticks at whole
numbers only, in every plotter: matplotlib (the figure's tick labels),
plotly (the tick texts Chromium draws) and gnuplot (the tick texts of the
SVG the real gnuplot writes); the key's values themselves when few, whole
steps when many."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from psuite.psbase import output
from psuite.psbase.output import figure
from psuite.psbase.result import Column, ResultTable
from tests.psbase.test_output import SVG, browser, drawn_texts, run_gnuplot  # noqa: F401 (a fixture)

FEW = [1, 2, 4]
MANY = list(range(3, 60, 4))  # 15 values: too many to be ticks, 3 .. 59


def table(ranks: list[int]) -> ResultTable:
    cols = [Column("ranks", "", "key", datatype="integer"), Column("time", "s", "value")]
    return ResultTable("time by ranks", cols, [(n, 10.0 / n) for n in ranks])


def mpl_ticks(ranks: list[int]) -> list[str]:
    fig = figure(table(ranks), "line")
    fig.canvas.draw()
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    return [t.get_text().replace("\u2212", "-") for t in ax.get_xticklabels()
            if t.get_visible() and lo <= t.get_position()[0] <= hi]  # fmt: skip


def whole(labels: list[str]) -> bool:
    return bool(labels) and all(s.lstrip("-").isdigit() for s in labels)


def test_matplotlib_integer_axis_has_whole_ticks():
    assert mpl_ticks(FEW) == ["1", "2", "4"]
    assert mpl_ticks([1, 2]) == ["1", "2"]  # a range of one: never 1.2, 1.4
    many = mpl_ticks(MANY)
    assert whole(many) and 3 <= len(many) <= 12, many


def test_float_key_keeps_fractional_ticks():
    # a float key (a message size in KiB, say) is no integer: its ticks are matplotlib's own
    cols = [Column("kib", "", "key", datatype="float"), Column("time", "s", "value")]
    fig = figure(ResultTable("t", cols, [(1.0, 1.0), (1.5, 2.0), (2.0, 3.0)]), "line")
    fig.canvas.draw()
    assert any("." in t.get_text() for t in fig.axes[0].get_xticklabels())


def gnuplot_ticks(ranks: list[int], tmp_path: Path) -> list[str]:
    """The x tick texts of gnuplot's SVG: the numbers centred under their
    ticks (the y axis's are right-aligned; the labels and title are words)."""
    data = tmp_path / f"t{len(ranks)}.dat"
    output.write(table(ranks), "gnuplot", str(data), "line")
    svg = tmp_path / f"t{len(ranks)}.svg"
    run_gnuplot(data.with_suffix(".gp"), svg, cwd=tmp_path)
    texts = [
        "".join(t.itertext()).strip()
        for g in ET.parse(svg).getroot().iter(f"{SVG}g")
        if g.get("text-anchor") == "middle"
        for t in g.iter(f"{SVG}text")
    ]
    return [t for t in texts if re.fullmatch(r"-?[\d.]+", t)]


def test_gnuplot_integer_axis_has_whole_ticks(tmp_path):
    assert gnuplot_ticks(FEW, tmp_path) == ["1", "2", "4"]
    assert gnuplot_ticks([1, 2], tmp_path) == ["1", "2"]
    many = gnuplot_ticks(MANY, tmp_path)
    assert whole(many) and 3 <= len(many) <= 12, many


def test_plotly_integer_axis_has_whole_ticks(tmp_path, browser):  # noqa: F811 (the fixture)
    for ranks, name in ((FEW, "few"), ([1, 2], "two"), (MANY, "many")):
        path = tmp_path / f"{name}.html"
        output.write(table(ranks), "html", str(path), "line")
        ticks = drawn_texts(browser, path)["ticks"]
        assert whole(ticks) and 2 <= len(ticks) <= 12, (name, ticks)
        if ranks is FEW:
            assert ticks == ["1", "2", "4"]
