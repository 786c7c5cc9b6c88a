"""A chart as one self-contained HTML page drawn by plotly: the same bars
or lines, error bars, labels and legend as the PNG, interactive (hover,
zoom), with plotly.js inline so that it opens from disk with no network.
The chart is 500 pixels high and as wide as the window."""

from __future__ import annotations

import html
import math

from psuite.psbase.output.chart import Chart, integer_step, text

HEIGHT = 500


def _none(xs: list[float]) -> list[float | None]:
    return [None if math.isnan(x) else x for x in xs]


# plotly's defaults would offer a button that uploads the chart to Plotly's
# cloud and a logo linking to plotly.com: an offline page reaches no server
# (plotly.js 2's Chart Studio link is off by default; 3 and later have none)
CONFIG = {"displaylogo": False, "showSendToCloud": False, "plotlyServerURL": "", "responsive": True}


def _h(text: str) -> str:
    """Plain text for plotly, which reads labels as a little HTML (<b>, <br>)."""
    return html.escape(text, quote=False)


def page(chart: Chart) -> str:
    import plotly.graph_objects as go

    fig = go.Figure()
    for s in chart.series:
        err = {"type": "data", "array": _none(s.errs), "visible": True} if s.errs is not None else None
        if chart.kind == "bar":
            fig.add_trace(go.Bar(x=[_h(chart.groups[g]) for g in s.xs], y=_none(s.ys), name=_h(s.label),
                                 error_y=err))
        else:
            fig.add_trace(go.Scatter(x=s.xs, y=_none(s.ys), name=_h(s.label), mode="lines+markers",
                                     error_y=err))
    fig.update_layout(
        title={"text": _h(chart.title)},
        xaxis_title={"text": _h(chart.xlabel)},
        yaxis_title={"text": _h(chart.ylabel)},
        legend_title={"text": _h(chart.legend_title)},
        showlegend=True,
        barmode="group",
        height=HEIGHT,
        template="plotly_white",
    )
    if chart.xlog:
        fig.update_xaxes(type="log")
    elif chart.xticks:  # an integer key's few values: the ticks (ranks 1, 2, 4; not 1.5, 2.5)
        fig.update_xaxes(tickmode="array", tickvals=chart.xticks, ticktext=[text(x) for x in chart.xticks])
    elif chart.xint:  # plotly has no integer-only ticks of its own: a whole step, from 0
        xs = [x for s in chart.series for x in s.xs]
        fig.update_xaxes(tickmode="linear", tick0=0, dtick=integer_step(min(xs), max(xs)))
    if chart.kind == "bar":  # the groups as categories, in the table's order, even when they look like numbers
        fig.update_xaxes(type="category", categoryorder="array", categoryarray=[_h(g) for g in chart.groups])
    out = fig.to_html(include_plotlyjs=True, full_html=True, config=CONFIG)
    return out.replace("<head>", f"<head>\n    <title>{html.escape(chart.title)}</title>", 1)
