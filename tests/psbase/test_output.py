"""psbase's outputs (psuite.psbase.output): every format from a real archive
query on both backends and from hand-made tables.  Numbers are checked
against the values filed (statistics computed here), charts by their
files: PNG sizes from the header, SVG parsed as XML, gnuplot's script run
by the real gnuplot, the HTML page read back."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from psuite.errors import UsageError
from psuite.psbase import output
from psuite.psbase.model import Definition, RunData, Variable
from psuite.psbase.query import run_query
from psuite.psbase.result import Column, ResultTable
from psuite.psbase.store import Store
from tests.conftest import one_line_error

# (nodes, method) -> the bandwidths of its repetitions
BW = {
    (1, "read"): [100.0, 104.0, 98.0],
    (1, "write"): [80.0, 82.0],
    (2, "read"): [190.0, 200.0, 195.0],
    (2, "write"): [150.0],  # one repetition: no standard deviation, no error bar
    (4, "read"): [370.0, 380.0],
    (4, "write"): [290.0, 300.0, 310.0],
}
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def archive(db_url) -> Store:
    s = Store(db_url, create=True)
    s.setup(
        Definition(
            name="io",
            synopsis="an I/O benchmark",
            variables=[
                Variable("nodes", "integer", synopsis="number of nodes", unit="node"),
                Variable("method", "string", synopsis="access method"),
                Variable("bw", "float", synopsis="bandwidth", unit="MB/s", is_result=True),
            ],
        )
    )
    s.add_runs("io", [RunData(values={"nodes": n, "method": m, "bw": b}) for (n, m), bs in BW.items() for b in bs])
    yield s
    s.close()


def by_nodes(method: str | None = None) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for (n, m), bs in BW.items():
        if method in (None, m):
            out.setdefault(n, []).extend(bs)
    return out


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def svg_texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()).strip() for t in root.iter(f"{SVG}text")]


# -- text, CSV, JSON --------------------------------------------------------------------------


def test_csv_and_json_equal_the_numbers_filed(archive):
    t = run_query(archive, "io", "bw", ["nodes"]).table()
    rows = list(csv.reader(io.StringIO(output.render(t, "csv"))))
    assert rows[0] == ["nodes", "bw mean", "bw stddev", "bw count"]
    expect = by_nodes()
    assert [int(r[0]) for r in rows[1:]] == sorted(expect)
    for r in rows[1:]:
        xs = expect[int(r[0])]
        assert float(r[1]) == pytest.approx(statistics.mean(xs), rel=1e-12)
        assert float(r[2]) == pytest.approx(statistics.stdev(xs), rel=1e-9)
        assert int(r[3]) == len(xs)
    doc = json.loads(output.render(t, "json"))
    assert doc["experiment"] == "io" and doc["title"] == t.title
    cols = {c["name"]: c for c in doc["columns"]}
    assert cols["nodes"] == {"name": "nodes", "role": "key", "unit": "node", "label": "number of nodes",
                             "datatype": "integer"}
    assert cols["bw mean"]["unit"] == "MB/s" and cols["bw mean"]["role"] == "value"
    assert cols["bw stddev"]["role"] == "error" and cols["bw stddev"]["of"] == "bw mean"
    assert cols["bw mean"]["label"] == "bandwidth mean"
    for row in doc["rows"]:
        xs = expect[row["nodes"]]
        assert row["bw mean"] == pytest.approx(statistics.mean(xs), rel=1e-12)
        assert row["bw count"] == len(xs)


def test_text_table_has_units_and_notes():
    t = ResultTable("t", [Column("size", "B", "key", datatype="integer"), Column("time", "s")],
                    [(1, 0.5), (1024, 1 / 3), (2048, None)], notes=["runs 1-3"])
    lines = output.render(t, "text").splitlines()
    assert lines[0] == "# runs 1-3"
    assert lines[1].split() == ["size", "[B]", "time", "[s]"]
    assert lines[2].split() == ["1", "0.5"]
    assert lines[3].split() == ["1024", f"{1 / 3:.12g}"]
    assert lines[4].split() == ["2048"]  # no value: an empty cell


def test_json_values_of_every_kind_are_json():
    import datetime as dt

    t = ResultTable("t", [Column("day", "", "key", datatype="date"), Column("took", "s", datatype="duration"),
                          Column("ratio")],
                    [(dt.date(2026, 1, 2), dt.timedelta(minutes=1, seconds=3), math.inf)])
    (row,) = json.loads(output.render(t, "json"))["rows"]
    assert row == {"day": "2026-01-02", "took": 63.0, "ratio": None}


# -- charts: PNG, SVG --------------------------------------------------------------------------


def test_png_has_the_documented_size(archive, tmp_path):
    t = run_query(archive, "io", "bw", ["nodes"]).table()
    for kind in ("line", "bar"):
        path = tmp_path / f"{kind}.png"
        assert output.write(t, "png", str(path), kind) == [str(path)]
        assert png_size(path) == (800, 500)


def test_svg_labels_from_the_definition_and_error_bars(archive, tmp_path):
    t = run_query(archive, "io", "bw", ["nodes", "method"]).table()
    path = tmp_path / "c.svg"
    output.write(t, "svg", str(path), "line")
    root = ET.parse(path).getroot()
    assert (root.get("width"), root.get("height")) == ("576pt", "360pt")
    texts = svg_texts(root)
    for label in ("number of nodes [node]", "bandwidth mean [MB/s]", "io: bw by nodes, method", "access method",
                  "read", "write"):
        assert label in texts, (label, texts)
    # one error-bar segment per point with two or more repetitions; per series, in its order
    for i, method in enumerate(("read", "write")):
        (g,) = [e for e in root.iter(f"{SVG}g") if e.get("id") == f"errorbars-{i}"]
        bars = sum(1 for e in g.iter(f"{SVG}path") if e.get("d"))  # a point without an error: an empty path
        assert bars == sum(1 for (n, m), bs in BW.items() if m == method and len(bs) > 1)


def test_line_plot_draws_the_means_over_the_parameter(archive):
    t = run_query(archive, "io", "bw", ["nodes", "method"]).table()
    fig = output.figure(t)  # auto: three numeric values -> a line per method
    (ax,) = fig.axes
    assert ax.get_xlabel() == "number of nodes [node]" and ax.get_ylabel() == "bandwidth mean [MB/s]"
    series = [c for c in ax.containers if type(c).__name__ == "ErrorbarContainer"]
    assert [c.get_label() for c in series] == ["read", "write"]
    for c in series:
        ln = c.lines[0]  # the data line
        expect = by_nodes(c.get_label())
        assert list(ln.get_xdata()) == sorted(expect)
        assert list(ln.get_ydata()) == pytest.approx([statistics.mean(expect[n]) for n in sorted(expect)])
    assert not ax.patches  # no bars


def test_bar_chart_groups_and_heights(archive):
    t = run_query(archive, "io", "bw", ["method", "nodes"]).table()
    fig = output.figure(t)  # a string key: bars, one group per method, one bar per node count
    (ax,) = fig.axes
    assert [x.get_text() for x in ax.get_xticklabels()] == ["read", "write"]
    bars = [c for c in ax.containers if type(c).__name__ == "BarContainer"]
    assert [b.get_label() for b in bars] == ["1 node", "2 node", "4 node"]
    for b, nodes in zip(bars, (1, 2, 4), strict=True):
        heights = [p.get_height() for p in b.patches]
        assert heights == pytest.approx([statistics.mean(BW[(nodes, m)]) for m in ("read", "write")])
        err = b.errorbar  # the error bars: stddev where there are two or more repetitions
        (segments,) = err.lines[2]
        spans = [abs(s[1][1] - s[0][1]) / 2 for s in segments.get_segments() if len(s)]  # none: no error
        want = [statistics.stdev(BW[(nodes, m)]) for m in ("read", "write") if len(BW[(nodes, m)]) > 1]
        assert sorted(spans) == pytest.approx(sorted(want))


def test_auto_chooses_line_or_bar(archive):
    def kind(t: ResultTable) -> str:
        (ax,) = output.figure(t).axes
        return "bar" if ax.patches else "line"

    assert kind(run_query(archive, "io", "bw", ["nodes"]).table()) == "line"  # 1, 2, 4
    two = run_query(archive, "io", "bw", ["nodes"], where=["nodes=1", "nodes=2"]).table()
    assert kind(two) == "bar"  # two values: bars
    assert kind(run_query(archive, "io", "bw", ["method"]).table()) == "bar"  # a string
    with pytest.raises(UsageError, match="numeric x axis.*--plot bar"):
        output.figure(run_query(archive, "io", "bw", ["method"]).table(), "line")


def fig8() -> ResultTable:
    """The paper's Fig. 8 by hand: relative difference per chunk size and access method."""
    return ResultTable(
        "relative difference list-less vs. list-based",
        [
            Column("chunk", "byte", "key", label="chunk size", datatype="integer"),
            Column("read", "%", label="read (rel. difference)"),
            Column("read err", "%", "error", of="read"),
            Column("write", "%", label="write (rel. difference)"),
        ],
        [(32, -2.5, 0.5, 1.0), (1024, -10.0, 1.5, 3.0), (1048576, -60.0, None, -5.0), (2097152, -55.0, 2.0, None)],
        experiment="b_eff_io",
    )


def test_hand_made_bar_chart_like_the_papers_fig8(tmp_path):
    t = fig8()
    (ax,) = output.figure(t, "bar").axes
    bars = [c for c in ax.containers if type(c).__name__ == "BarContainer"]
    assert [b.get_label() for b in bars] == ["read (rel. difference)", "write (rel. difference)"]
    assert ax.get_ylabel() == "rel. difference [%]"  # the words the two labels share
    assert [p.get_height() for p in bars[0].patches] == [-2.5, -10.0, -60.0, -55.0]
    assert [x.get_text() for x in ax.get_xticklabels()] == ["32", "1024", "1048576", "2097152"]
    assert bars[1].errorbar is None  # no error column for write
    path = tmp_path / "fig8.svg"
    output.write(t, "svg", str(path), "bar")
    root = ET.parse(path).getroot()
    assert {"chunk size [byte]", "b_eff_io: relative difference list-less vs. list-based"} <= set(svg_texts(root))
    (g,) = [e for e in root.iter(f"{SVG}g") if e.get("id") == "errorbars-0"]
    assert sum(1 for e in g.iter(f"{SVG}path") if e.get("d")) == 3  # the one without an error has no bar
    assert png_size(Path(output.write(t, "png", str(tmp_path / "fig8.png"))[0])) == (800, 500)


def test_sizes_over_decades_get_a_log_axis_with_the_values_as_ticks(tmp_path):
    import datetime as dt

    sizes = [2**k for k in range(0, 21, 4)]  # 1 B .. 1 MiB
    t = ResultTable("bw", [Column("size", "B", "key", datatype="integer"), Column("bw", "MB/s")],
                    [(n, float(k)) for k, n in enumerate(sizes)])
    (ax,) = output.figure(t).axes
    assert ax.get_xscale() == "log"
    assert [x.get_text() for x in ax.get_xticklabels()] == [str(n) for n in sizes]
    output.write(t, "gnuplot", str(tmp_path / "bw.dat"))
    assert "set logscale x 2" in (tmp_path / "bw.gp").read_text()
    # a small range stays linear; durations are seconds on the x axis
    t = ResultTable("t", [Column("took", "s", "key", datatype="duration"), Column("bw", "MB/s")],
                    [(dt.timedelta(seconds=s), float(s)) for s in (1, 2, 90)])
    (ax,) = output.figure(t).axes
    assert ax.get_xscale() == "linear"
    (c,) = ax.containers
    assert list(c.lines[0].get_xdata()) == [1.0, 2.0, 90.0]


def test_value_columns_of_another_unit_are_not_drawn(archive):
    t = run_query(archive, "io", "bw", ["nodes"]).table()
    (ax,) = output.figure(t, "bar").axes
    bars = [c for c in ax.containers if type(c).__name__ == "BarContainer"]
    assert [b.get_label() for b in bars] == ["bandwidth mean"]  # not the count (no unit)
    # several statistics in the result's unit: one bar each, the y axis named by what they share
    t = run_query(archive, "io", "bw", ["method"], stats=["min", "mean", "max", "count"]).table()
    (ax,) = output.figure(t).axes
    bars = [c for c in ax.containers if type(c).__name__ == "BarContainer"]
    assert [b.get_label() for b in bars] == ["bandwidth min", "bandwidth mean", "bandwidth max"]
    assert ax.get_ylabel() == "bandwidth [MB/s]"
    for b, f in zip(bars, (min, statistics.mean, max), strict=True):
        want = [f([x for (_, m), bs in BW.items() if m == method for x in bs]) for method in ("read", "write")]
        assert [p.get_height() for p in b.patches] == pytest.approx(want)


# -- gnuplot -----------------------------------------------------------------------------------


def run_gnuplot(script: Path, out: Path, cwd: Path) -> None:
    gnuplot = shutil.which("gnuplot")
    assert gnuplot, "gnuplot is needed (tests/run.sh installs gnuplot-nox)"
    p = subprocess.run([gnuplot, "-e", f"out='{out}'", str(script)], cwd=cwd, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and "warning" not in p.stderr.lower(), p.stderr


def test_gnuplot_line_data_and_script_run_by_gnuplot(archive, tmp_path):
    t = run_query(archive, "io", "bw", ["nodes", "method"]).table()
    d = tmp_path / "out"
    d.mkdir()
    data, script = d / "bw.dat", d / "bw.gp"
    assert output.write(t, "gnuplot", str(data)) == [str(data), str(script)]
    # the data: one block per method, x, mean and stddev as filed
    blocks = data.read_text().split("\n\n\n")
    assert len(blocks) == 2
    for block, method in zip(blocks, ("read", "write"), strict=True):
        expect = by_nodes(method)
        rows = [line.split() for line in block.splitlines() if line and not line.startswith("#")]
        assert [float(r[0]) for r in rows] == sorted(expect)
        assert [float(r[1]) for r in rows] == pytest.approx([statistics.mean(expect[n]) for n in sorted(expect)])
        for r, n in zip(rows, sorted(expect), strict=True):
            xs = BW[(n, method)]
            assert (r[2] == "NaN") if len(xs) < 2 else float(r[2]) == pytest.approx(statistics.stdev(xs))
    assert "# not here (another unit, or not numbers): bw count" in data.read_text()
    text = script.read_text()
    assert "yerrorlines" in text and "set xlabel 'number of nodes [node]'" in text
    # run from another directory: the script finds its data beside itself
    run_gnuplot(script, tmp_path / "gp.png", cwd=Path("/"))
    assert png_size(tmp_path / "gp.png") == (800, 500)
    run_gnuplot(script, tmp_path / "gp.svg", cwd=tmp_path)
    texts = svg_texts(ET.parse(tmp_path / "gp.svg").getroot())
    for label in ("number of nodes [node]", "bandwidth mean [MB/s]", "io: bw by nodes, method", "read", "write"):
        assert label in texts, (label, texts)


def test_gnuplot_bar_chart_with_error_bars(tmp_path):
    t = fig8()
    data = tmp_path / "fig8.txt"
    assert output.write(t, "gnuplot", str(data), "bar") == [str(data), str(tmp_path / "fig8.gp")]
    rows = [line.split() for line in data.read_text().splitlines() if not line.startswith("#")]
    assert rows == [['"32"', "-2.5", "0.5", "1.0", "NaN"], ['"1024"', "-10.0", "1.5", "3.0", "NaN"],
                    ['"1048576"', "-60.0", "NaN", "-5.0", "NaN"], ['"2097152"', "-55.0", "2.0", "NaN", "NaN"]]
    text = (tmp_path / "fig8.gp").read_text()
    assert "set style histogram errorbars" in text and "title 'read (rel. difference)'" in text
    run_gnuplot(tmp_path / "fig8.gp", tmp_path / "fig8.svg", cwd=tmp_path)
    texts = svg_texts(ET.parse(tmp_path / "fig8.svg").getroot())
    assert {"chunk size [byte]", "read (rel. difference)", "write (rel. difference)", "1048576"} <= set(texts)


def test_gnuplot_script_name_beside_the_data():
    from psuite.psbase.output.gnuplot import script_path

    assert script_path("a/b.dat") == "a/b.gp"
    assert script_path("b") == "b.gp"
    assert script_path("b.gp") == "b.gp.gp"  # never the data file itself


# -- HTML --------------------------------------------------------------------------------------


def test_html_page_is_self_contained_with_the_chart(archive, tmp_path):
    t = run_query(archive, "io", "bw", ["nodes", "method"]).table()
    path = tmp_path / "c.html"
    output.write(t, "html", str(path))
    page = path.read_text()
    assert page.startswith("<!doctype html>") or page.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", page, re.I)  # plotly.js inline
    assert "Plotly.newPlot" in page and len(page) > 1_000_000  # plotly.js itself is in the page
    assert "<title>io: bw by nodes, method</title>" in page
    # the figure's data: one trace per method with the means and their error bars
    start = re.search(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*", page).end()
    dec = json.JSONDecoder()
    traces, end = dec.raw_decode(page, start)
    layout, _ = dec.raw_decode(page, page.index("{", end))
    assert [tr["name"] for tr in traces] == ["read", "write"]
    for tr in traces:
        expect = by_nodes(tr["name"])
        assert tr["x"] == sorted(expect)
        assert tr["y"] == pytest.approx([statistics.mean(expect[n]) for n in sorted(expect)])
        errs = tr["error_y"]["array"]
        for e, n in zip(errs, sorted(expect), strict=True):
            xs = BW[(n, tr["name"])]
            assert e is None if len(xs) < 2 else e == pytest.approx(statistics.stdev(xs))
    assert layout["xaxis"]["title"]["text"] == "number of nodes [node]"
    assert layout["yaxis"]["title"]["text"] == "bandwidth mean [MB/s]"
    assert layout["legend"]["title"]["text"] == "access method"


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium with every network request sent to a closed port:
    a page that draws works offline."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    assert chromium and driver, "chromium and chromium-driver are needed (tests/run.sh installs them)"
    o = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>"):
        o.add_argument(a)
    o.binary_location = chromium
    d = webdriver.Chrome(options=o, service=Service(driver))
    yield d
    d.quit()


def drawn_texts(browser, path: Path) -> dict[str, list[str]]:
    browser.get(path.as_uri())
    return browser.execute_script(
        "const t = s => Array.from(document.querySelectorAll(s)).map(e => e.textContent);"
        "return {legend: t('.legendtext'), title: t('.gtitle'), x: t('.xtitle'), y: t('.ytitle'),"
        " ticks: t('.xtick text'),"
        " bars: Array.from(document.querySelectorAll('.bars .point path')).map(e => e.getAttribute('d')),"
        " errorbars: Array.from(document.querySelectorAll('.errorbar path')).map(e => e.getAttribute('d'))};"
    )


def drawn(paths: list[str]) -> int:
    """Bars or error bars of some height: plotly draws no value as a path
    of none ("M12,30V30H61V30Z", "M32,38h8m-4,0V38m-4,0h8")."""
    n = 0
    for d in paths:
        y0 = float(re.match(r"M[-\d.]+,([-\d.]+)", d).group(1))
        n += float(re.search(r"V([-\d.]+)", d).group(1)) != y0
    return n


def test_html_chart_draws_offline_in_a_browser(tmp_path, browser):
    path = tmp_path / "fig8.html"
    output.write(fig8(), "html", str(path), "bar")
    got = drawn_texts(browser, path)
    assert got["legend"] == ["read (rel. difference)", "write (rel. difference)"]
    assert got["title"] == ["b_eff_io: relative difference list-less vs. list-based"]
    assert got["x"] == ["chunk size [byte]"] and got["y"] == ["rel. difference [%]"]
    assert got["ticks"] == ["32", "1024", "1048576", "2097152"]
    assert drawn(got["bars"]) == 7 and drawn(got["errorbars"]) == 3  # write has no value at 2 MiB, read one error


ODD = 'cost $1 & <b>x</b> it\'s "d" #1'


def odd_table() -> ResultTable:
    """Texts each library would read as markup: $ (matplotlib), <b> (plotly), quotes and # (gnuplot)."""
    return ResultTable(
        ODD,
        [Column("host", "", "key", label="host #", datatype="string"), Column("cost", "$/h", label="price $ <i>"),
         Column("e", "$/h", "error", of="cost")],
        [('a "b"', 1.0, 0.1), ("c#d", 2.0, 0.2), ("it's", 3.0, None)],
    )


def test_texts_are_shown_as_written_in_every_format(tmp_path, browser):
    t = odd_table()
    output.write(t, "svg", str(tmp_path / "o.svg"))
    texts = svg_texts(ET.parse(tmp_path / "o.svg").getroot())
    assert {ODD, "price $ <i> [$/h]", "host #", 'a "b"', "c#d", "it's"} <= set(texts)
    assert png_size(Path(output.write(t, "png", str(tmp_path / "o.png"))[0])) == (800, 500)
    output.write(t, "gnuplot", str(tmp_path / "o.dat"))
    run_gnuplot(tmp_path / "o.gp", tmp_path / "g.svg", cwd=tmp_path)
    texts = svg_texts(ET.parse(tmp_path / "g.svg").getroot())
    # gnuplot's data strings have no escapes: a double quote becomes a single one
    assert {ODD, "price $ <i> [$/h]", "host #", "a 'b'", "c#d", "it's"} <= set(texts)
    output.write(t, "html", str(tmp_path / "o.html"))
    got = drawn_texts(browser, tmp_path / "o.html")
    assert got["title"] == [ODD] and got["y"] == ["price $ <i> [$/h]"] and got["ticks"] == ['a "b"', "c#d", "it's"]


def test_a_table_without_numbers_is_no_chart(tmp_path):
    t = ResultTable("names", [Column("nodes", role="key", datatype="integer"),
                              Column("host min", datatype="string")], [(1, "a"), (2, "b")])
    with pytest.raises(UsageError, match="no numeric value to plot.*text, csv or json"):
        output.write(t, "png", str(tmp_path / "x.png"))
    assert output.render(t, "csv") == "nodes,host min\n1,a\n2,b\n"


# -- files: never over an existing one, nothing half-written ---------------------------------


def test_existing_files_are_refused_unless_force(tmp_path):
    t = fig8()
    path = tmp_path / "c.png"
    path.write_bytes(b"keep")
    with pytest.raises(UsageError, match=f"{re.escape(str(path))} exists.*--force"):
        output.write(t, "png", str(path))
    assert path.read_bytes() == b"keep"
    output.write(t, "png", str(path), force=True)
    assert png_size(path) == (800, 500)
    # gnuplot: the script's name is taken: neither file is written
    (tmp_path / "g.gp").write_text("keep")
    with pytest.raises(UsageError, match="g.gp exists"):
        output.write(t, "gnuplot", str(tmp_path / "g.dat"))
    assert sorted(os.listdir(tmp_path)) == ["c.png", "g.gp"]  # no data file, no temporary file


def test_csv_to_a_file_is_the_rendered_text(tmp_path):
    t = fig8()
    path = tmp_path / "t.csv"
    output.write(t, "csv", str(path))
    assert path.read_text() == output.render(t, "csv")
    with pytest.raises(UsageError, match="plot kind"):
        output.write(t, "csv", str(tmp_path / "u.csv"), "bar")
    assert not (tmp_path / "u.csv").exists()


@pytest.mark.parametrize("fmt", output.FORMATS)
def test_empty_table_or_no_value_column_is_one_clear_error(fmt, tmp_path):
    empty = ResultTable("bw by nodes", [Column("nodes", role="key"), Column("bw")], [])
    keys_only = ResultTable("keys", [Column("nodes", role="key")], [(1,)])
    for t, message in ((empty, "no rows"), (keys_only, "no value column")):
        with pytest.raises(UsageError, match=message):
            output.write(t, fmt, str(tmp_path / "x"))
    assert os.listdir(tmp_path) == []


def test_bad_format_and_kind_are_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="format 'xls'"):
        output.write(fig8(), "xls", str(tmp_path / "x"))
    with pytest.raises(UsageError, match="format 'png'"):
        output.render(fig8(), "png")
    with pytest.raises(UsageError, match="plot kind 'pie'"):
        output.write(fig8(), "png", str(tmp_path / "x.png"), "pie")
    assert os.listdir(tmp_path) == []


# -- the command line ------------------------------------------------------------------------


def psbase(*args: str, cwd: Path, db: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PSBASE_DB"}
    return subprocess.run([sys.executable, "-m", "psuite.psbase", "--db", db, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_cli_writes_every_chart_format(archive, db_url, tmp_path):
    db = db_url  # the archive fixture's, filed on each backend
    tmp_path = tmp_path / "cwd"  # not the SQLite archive's directory
    tmp_path.mkdir()
    q = ("query", "io", "bw", "--by", "nodes", "--by", "method")
    p = psbase(*q, "-f", "png", "-o", "c.png", cwd=tmp_path, db=db)
    assert p.returncode == 0 and p.stderr == "" and p.stdout == "psbase: wrote c.png\n", p.stderr
    assert png_size(tmp_path / "c.png") == (800, 500)
    p = psbase(*q, "-f", "gnuplot", "-o", "c.dat", "--plot", "bar", cwd=tmp_path, db=db)
    assert p.returncode == 0 and p.stdout == "psbase: wrote c.dat, c.gp\n", p.stderr
    assert "set style data histograms" in (tmp_path / "c.gp").read_text()
    p = psbase(*q, "-f", "svg", "-o", "c.svg", "--plot", "bar", cwd=tmp_path, db=db)
    assert p.returncode == 0, p.stderr
    assert "access method" in svg_texts(ET.parse(tmp_path / "c.svg").getroot())
    p = psbase(*q, "-f", "json", cwd=tmp_path, db=db)
    assert p.returncode == 0 and json.loads(p.stdout)["rows"][0]["bw count"] == len(BW[(1, "read")])
    # the same file again: refused, kept; replaced with --force
    before = (tmp_path / "c.png").read_bytes()
    p = psbase(*q, "-f", "png", "-o", "c.png", "--plot", "bar", cwd=tmp_path, db=db)
    assert "c.png exists" in one_line_error(p, "psbase") and "--force" in p.stderr
    assert (tmp_path / "c.png").read_bytes() == before
    p = psbase(*q, "-f", "png", "-o", "c.png", "--plot", "bar", "--force", cwd=tmp_path, db=db)
    assert p.returncode == 0 and (tmp_path / "c.png").read_bytes() != before


def test_cli_failed_write_leaves_nothing(archive, db_url, tmp_path):
    """A file size limit (ulimit -f) below the page's size: one line naming
    the file, and neither it nor a temporary file is left."""
    import resource
    import signal

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PSBASE_DB"}
    p = subprocess.run([sys.executable, "-m", "psuite.psbase", "--db", db_url, "query", "io", "bw", "--by",
                        "nodes", "-f", "html", "-o", "c.html"], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=120, preexec_fn=limit)
    assert "cannot write c.html: the file is too large" in one_line_error(p, "psbase")
    assert os.listdir(cwd) == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["-f", "png"], "-f png writes files: give -o FILE"),
        (["-f", "gnuplot"], "give -o FILE"),
        (["-f", "html"], "give -o FILE"),
        (["-f", "csv", "--plot", "bar"], "--plot goes with a chart"),
        (["-f", "csv", "--force"], "--force goes with -o FILE"),
        (["-f", "svg", "-o", "x.svg", "--plot", "pie"], "invalid choice"),
        (["-f", "xls"], "invalid choice"),
        (["--by", "method", "-f", "png", "-o", "x.png", "--plot", "line"], "numeric x axis"),
        (["--where", "nodes=3", "-f", "svg", "-o", "x.svg"], "no rows"),
    ],
)
def test_cli_bad_output_options_are_one_line_exit_2(archive, db_url, tmp_path, args, message):
    by = [] if "--by" in args else ["--by", "nodes"]
    cwd = tmp_path / "cwd"  # not the SQLite archive's directory
    cwd.mkdir()
    p = psbase("query", "io", "bw", *by, *args, cwd=cwd, db=db_url)
    msg = one_line_error(p, "psbase query" if p.stderr.startswith("psbase query:") else "psbase")
    assert message in msg
    assert os.listdir(cwd) == []  # nothing written
