"""A chart as one self-contained HTML page drawn by plotly: the same bars
or lines, error bars, labels and legend as the PNG, interactive (hover,
zoom), with plotly.js inline so that it opens from disk with no network.
The chart is 500 pixels high and as wide as the window."""

from __future__ import annotations

import html
import math

from psuite.psbase.output.chart import Chart

HEIGHT = 500


def _none(xs: list[float]) -> list[float | None]:
    return [None if math.isnan(x) else x for x in xs]


def page(chart: Chart) -> str:
    import plotly.graph_objects as go

    fig = go.Figure()
    for s in chart.series:
        err = {"type": "data", "array": _none(s.errs), "visible": True} if s.errs is not None else None
        if chart.kind == "bar":
            fig.add_trace(go.Bar(x=[chart.groups[g] for g in s.xs], y=_none(s.ys), name=s.label, error_y=err))
        else:
            fig.add_trace(go.Scatter(x=s.xs, y=_none(s.ys), name=s.label, mode="lines+markers", error_y=err))
    fig.update_layout(
        title={"text": html.escape(chart.title)},
        xaxis_title={"text": html.escape(chart.xlabel)},
        yaxis_title={"text": html.escape(chart.ylabel)},
        legend_title={"text": html.escape(chart.legend_title)},
        showlegend=True,
        barmode="group",
        height=HEIGHT,
        template="plotly_white",
    )
    if chart.xlog:
        fig.update_xaxes(type="log")
    if chart.kind == "bar":  # the groups as categories, in the table's order, even when they look like numbers
        fig.update_xaxes(type="category", categoryorder="array", categoryarray=chart.groups)
    text = fig.to_html(include_plotlyjs=True, full_html=True)
    return text.replace("<head>", f"<head>\n    <title>{html.escape(chart.title)}</title>", 1)
