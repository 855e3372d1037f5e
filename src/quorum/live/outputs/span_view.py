"""A few items of a span task with their spans highlighted by source, for the report page.

For each item shown, its text once per source: the **label** (where it came from: the human
vote, one LLM, ...), each **LLM**'s answer and each **person**'s label, every span a
``<mark>`` whose title names its type and offsets. Spans may overlap (nested entities, an
error inside an error): the text is cut at every span boundary and each piece is marked
with all the spans that cover it. Everything from the project (text, types, names) is
HTML-escaped. A long text is shown around its spans (``window`` characters either side,
``max_chars`` at most), so a 1 MB item does not make a 1 MB page.

Which items: those that have both a person's label and an LLM's answer first, then those
with the most spans, ``n`` in all (ties by item id).
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Sequence
from typing import Any

import pandas as pd

from quorum.live.outputs.provenance import label_source

Span = tuple[int, int, str]

#: the section's place on the page (its id and title)
SECTION_ID, SECTION_TITLE = "spans", "Spans by source"
#: the mark classes of the three sources
KINDS = {"label": "span-label", "llm": "span-llm", "person": "span-person"}


def highlight(text: str, spans: Sequence[Span], window: int = 300, max_chars: int = 4000) -> str:
    """``text`` as HTML with ``spans`` marked (escaped; overlapping spans split into
    pieces, each marked with every span over it); a long text is cut to the part around
    its spans.

    >>> highlight("a <b> c", [(2, 5, "T")])
    'a <mark class="span" data-labels="T" title="T [2, 5)">&lt;b&gt;</mark> c'
    """
    n = len(text)
    lo, hi = 0, n
    if n > max_chars:
        starts = [a for a, _, _ in spans if 0 <= a < n]
        lo = max(0, min(starts, default=0) - window)
        hi = min(n, lo + max_chars)
    cuts = sorted({lo, hi, *(min(max(x, lo), hi) for a, b, _ in spans for x in (a, b))})
    out = ["&hellip;" if lo > 0 else ""]
    for a, b in itertools.pairwise(cuts):
        piece = html.escape(text[a:b])
        over = [(s, e, lab) for s, e, lab in spans if s < b and a < e]
        if not over:
            out.append(piece)
            continue
        labels = "; ".join(dict.fromkeys(lab for _, _, lab in over))
        where = "; ".join(f"{lab} [{s}, {e})" for s, e, lab in over)
        nested = f' data-n="{min(len(over), 3)}"' if len(over) > 1 else ""
        out.append(
            f'<mark class="span" data-labels="{html.escape(labels)}"{nested} '
            f'title="{html.escape(where)}">{piece}</mark>'
        )
    out.append("&hellip;" if hi < n else "")
    return "".join(out)


def _rows(r: dict[str, Any], kind: Any, human: str | None) -> list[tuple[str, str, list[Span]]]:
    """(who, source kind, spans) of one exported row: its label, each LLM, each person."""
    rows: list[tuple[str, str, list[Span]]] = []
    if isinstance(r.get("label"), str):
        src = label_source(r.get("labelled_by"), human)
        rows.append((f"label ({src})", "label", kind.text_spans(r["label"])))
    for who, out in (r.get("answers") or {}).items():
        if who != human and isinstance(out, str):
            rows.append((who, "llm", kind.text_spans(out)))
    for g in r.get("human_labels") or []:
        if g.get("status") in ("answered", "late") and isinstance(g.get("label"), str):
            rows.append((str(g.get("by") or human or "person"), "person",
                         kind.text_spans(g["label"])))  # fmt: skip
    return rows


def pick(frame: pd.DataFrame, kind: Any, human: str | None, n: int = 4) -> list[dict[str, Any]]:
    """The rows shown: items with both a person's label and an LLM's answer first, then
    those with the most spans (ties by item id)."""

    def key(r: dict[str, Any]) -> tuple:
        rows = _rows(r, kind, human)
        both = {"llm", "person"} <= {k for _, k, _ in rows}
        return (not both, -sum(len(s) for _, _, s in rows), str(r["item_id"]))

    recs = [r for r in frame.to_dict("records") if isinstance(r.get("label"), str)]
    return sorted(recs, key=key)[:n]


def spans_section(frame: pd.DataFrame | None, kind: Any, human: str | None, n: int = 4) -> dict:
    """The report section (``id``, ``title``, ``body``, ``figures``) of a span task."""
    if frame is None or frame.empty:
        body = "<p class='none'>No labels yet.</p>"
        return {"id": SECTION_ID, "title": SECTION_TITLE, "body": body, "figures": []}
    shown = pick(frame, kind, human, n)
    parts = [
        "<p>"
        + html.escape(
            f"{len(shown)} of {len(frame)} item(s), each text once per source: the label "
            "(and where it came from), each LLM's answer, each person's label. Hover a span "
            "for its type and offsets."
        )
        + "</p>"
    ]
    for r in shown:
        text = str(r.get("text") or "")
        iid = html.escape(str(r["item_id"]))
        parts.append(f"<div class='span-item' data-item='{iid}'><h3>item {iid}</h3><table>")
        for who, src, spans in _rows(r, kind, human):
            marked = highlight(text, spans).replace('class="span"', f'class="span {KINDS[src]}"')
            parts.append(
                f"<tr class='span-row' data-source='{src}' data-who='{html.escape(who)}'>"
                f"<th>{html.escape(who)}</th><td>{marked}</td></tr>"
            )
        parts.append("</table></div>")
    return {"id": SECTION_ID, "title": SECTION_TITLE, "body": "\n".join(parts), "figures": []}
