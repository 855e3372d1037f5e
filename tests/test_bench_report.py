"""The report page's Markdown (intros and captions) through markdown-it-py."""

from __future__ import annotations

from quorum.bench.report import _md_inline, _table_html
from quorum.bench.tables import Cell, Table


def test_inline_marks_become_the_tags_the_page_styles() -> None:
    got = _md_inline("**Bold**: best; <u>underlined</u>: second; *mean* of `q`.")
    assert got == (
        "<p><b>Bold</b>: best; <u>underlined</u>: second; <i>mean</i> of <code>q</code>.</p>"
    )


def test_raw_html_other_than_u_is_escaped() -> None:
    got = _md_inline('error: <script>alert("x")</script> & 1 < 2')
    assert "<script>" not in got and "&lt;script&gt;" in got and "&amp; 1 &lt; 2" in got


def test_paragraphs_lines_and_bullets() -> None:
    got = _md_inline("first line\nsame paragraph\n\n- one **1**\n- two `2`\n\nlast")
    assert got.count("<p>") == 2 and "first line\nsame paragraph</p>" in got
    assert "<ul>\n<li>one <b>1</b></li>\n<li>two <code>2</code></li>\n</ul>" in got
    assert got.endswith("<p>last</p>")
    assert _md_inline("") == "" and _md_inline("  \n") == ""


def test_code_spans_keep_their_stars_and_underscores_literal() -> None:
    got = _md_inline("`a*b*c` and snake_case_name")
    assert got == "<p><code>a*b*c</code> and snake_case_name</p>"


def test_table_caption_is_rendered_inside_the_caption_div() -> None:
    t = Table("T", ["a", "b"], [["x", Cell("1", "best")]], "**Bold**: best")
    h = _table_html(t)
    assert "<div class='caption'><p><b>Bold</b>: best</p></div>" in h
    assert h.index("</h3>") < h.index("caption") < h.index("<table>")
    assert "<td><b>1</b></td>" in h
