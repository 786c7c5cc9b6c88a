"""The page: one HTML file with the view (JSON) and the page's own script
and style, all inline, so it opens from disk with no network.  The charts
are the script's own SVG: no chart library goes into the page."""

from __future__ import annotations

import html
import json
from importlib import resources

VIEW_ID = "psuite-view"  # <script type="application/json" id=...> holding the view


def _asset(name: str) -> str:
    return resources.files("psuite.psprocess.html").joinpath(name).read_text(encoding="utf-8")


def embed_json(view: dict) -> str:
    """JSON safe inside <script>: with no "<" at all, neither "</script>" nor
    "<!--" (which switches the HTML parser into a state where "<script>"
    nests) can occur in it; "<" appears only inside JSON strings, where
    \\u003c reads back as the same character."""
    return json.dumps(view, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def render(view: dict) -> str:
    """The whole page for a view (see psuite.psprocess.html)."""
    title = str(view.get("title", "psuite report"))
    esc = html.escape(title, quote=False)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<link rel=\"icon\" href=\"data:,\">\n"  # no favicon request from file://
        f"<title>{esc}</title>\n<style>{_asset('page.css')}</style>\n"
        "</head><body>\n"
        f"<script type=\"application/json\" id=\"{VIEW_ID}\">{embed_json(view)}</script>\n"
        f"<script>{_asset('app.js')}</script>\n</body></html>\n"
    )
