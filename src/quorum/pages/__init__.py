"""What the HTML reports share: one page style, figures as embedded PNGs, tables, Markdown.

The bench report (``quorum report BENCH_DIR``) and a live project's report (``quorum report
PROJECT``) are one self-contained HTML page each: ``base.html`` holds the style, the header
band, the sticky nav and its script; a report's template ``{% extends "base.html" %}`` and
fills the blocks ``title``, ``header``, ``nav``, ``main`` (and ``style`` for extra rules).

- :func:`render`: a report's template (``package/name``) with ``base.html`` as its parent;
- :func:`pyplot`: matplotlib with the Agg backend and the reports' font sizes;
- :func:`png_base64`: a figure as the base64 text of an ``<img src="data:...">``;
- :func:`md_inline`: the Markdown of intros and captions as HTML (markdown-it-py);
- :class:`~quorum.pages.tables.Table`: a table as Markdown or HTML.
"""

from __future__ import annotations

import base64
import io
from functools import cache
from importlib import resources
from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend with the reports' font sizes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "figure.dpi": 110})
    return plt


def png_base64(fig: Any, dpi: int = 110) -> str:
    """The figure as PNG, base64-encoded (for ``data:image/png;base64,...``); closes it."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    pyplot().close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _template(name: str) -> str:
    """``base.html`` (this package) or ``package/file`` (e.g. ``quorum.bench/report.html``)."""
    pkg, _, file = name.rpartition("/")
    return resources.files(pkg or __name__).joinpath(file).read_text(encoding="utf-8")


def render(template: str, **context: Any) -> str:
    """Render ``template`` (``package/file``, extending ``base.html``) with ``context``;
    ``markup`` (markupsafe's ``Markup``) is passed for HTML built in Python."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(_template), autoescape=True, keep_trailing_newline=False
    )
    return env.get_template(template).render(markup=Markup, **context)


def md_inline(text: str) -> str:
    """The Markdown of the intros and captions (bold, italics, code, bullets, and the
    ``<u>`` the tables use for second best) as HTML, through markdown-it-py (CommonMark).

    Raw HTML is escaped except ``<u>``/``</u>``; bold and italics are ``<b>``/``<i>``, as in
    the table cells.
    """
    html = _markdown().render((text or "").strip())
    return html.replace("&lt;u&gt;", "<u>").replace("&lt;/u&gt;", "</u>").strip()


@cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False})
    for tag, name in (("b", "strong"), ("i", "em")):
        md.add_render_rule(f"{name}_open", lambda *_a, t=tag, **_k: f"<{t}>")
        md.add_render_rule(f"{name}_close", lambda *_a, t=tag, **_k: f"</{t}>")
    return md
