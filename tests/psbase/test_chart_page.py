"""psbase's charts: a count is not drawn on a statistic's axis (even a
unit-less one), and the HTML page reaches no server: opened in Debian's
chromium, none of plotly's modebar buttons or links leads off the page."""

from __future__ import annotations

import os

from psuite.psbase.model import Variable
from psuite.psbase.output import chart, write
from psuite.psbase.query import QueryResult

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def unitless_table():
    """task clock (no unit) by command: mean, stddev and count per group."""
    result = Variable("task_clock", "float", is_result=True)
    by = [Variable("command", "string")]
    rows = [("a", 4.0e8, 1.0e6, 1), ("b", 3.5e8, 2.0e6, 4)]
    return QueryResult("myapp", result, by, ["mean", "stddev", "count"], rows).table()


def test_count_is_not_drawn_beside_a_unitless_statistic():
    c = chart.chart(unitless_table(), "bar")
    assert [s.label for s in c.series] == ["task_clock mean"]
    assert c.series[0].ys == [4.0e8, 3.5e8] and c.series[0].errs == [1.0e6, 2.0e6]
    assert c.left_out == ["task_clock count"]


def test_a_count_alone_is_drawn():
    result = Variable("task_clock", "float", is_result=True)
    table = QueryResult("myapp", result, [Variable("command", "string")], ["count"], [("a", 1), ("b", 4)]).table()
    assert [s.ys for s in chart.chart(table, "bar").series] == [[1, 4]]


def test_html_chart_page_reaches_no_server(tmp_path):
    for path in (CHROMIUM, CHROMEDRIVER):
        assert os.access(path, os.X_OK), f"{path} is missing: tests/run.sh installs chromium and chromium-driver"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    out = tmp_path / "chart.html"
    write(unitless_table(), "html", str(out))
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        driver.get(out.as_uri())
        buttons = driver.execute_script(
            "return Array.from(document.querySelectorAll('.modebar-btn, .modebar a'))"
            ".map(b => [b.getAttribute('data-title') || '', b.getAttribute('data-attr') || '',"
            " b.getAttribute('href') || '']);"
        )
        assert buttons, "the chart has no modebar: the page did not draw"
        for title, attr, href in buttons:
            assert "cloud" not in (title + attr).lower() and "plotly" not in (title + href).lower(), (title, attr, href)
        links = driver.execute_script("return Array.from(document.querySelectorAll('a[href]')).map(a => a.href);")
        assert all(not h.startswith(("http:", "https:")) for h in links), links
        assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        driver.quit()
