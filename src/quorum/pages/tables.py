"""A table of a page: Markdown (bench tables) and HTML (the bench and live reports).

A cell is text with an optional mark: ``best`` (**bold**) or ``second`` (<u>underlined</u>),
the paper's marks of the best and second-best mean.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace
from typing import Any


@dataclass
class Cell:
    text: str
    mark: str = ""  # "" | "best" | "second"

    def md(self) -> str:
        t = self.text.replace("|", "\\|")
        if self.mark == "best":
            return f"**{t}**"
        if self.mark == "second":
            return f"<u>{t}</u>"
        return t

    def html(self) -> str:
        t = html.escape(self.text).replace("&lt;br&gt;", "<br>")
        if self.mark == "best":
            return f"<b>{t}</b>"
        if self.mark == "second":
            return f"<u>{t}</u>"
        return t


def _cell(x: Cell | str) -> Cell:
    return x if isinstance(x, Cell) else Cell(str(x))


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[Cell | str]]
    caption: str = ""

    def to_markdown(self) -> str:
        head = "| " + " | ".join(self.header) + " |"
        align = "|" + "|".join("---" if i < 1 else ":---:" for i in range(len(self.header))) + "|"
        body = ["| " + " | ".join(_cell(c).md() for c in r) + " |" for r in self.rows]
        parts = [f"### {self.title}", ""]
        if self.caption:
            parts += [self.caption, ""]
        return "\n".join([*parts, head, align, *body, ""])

    def to_html(self) -> str:
        th = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        trs = "\n".join(
            "<tr>" + "".join(f"<td>{_cell(c).html()}</td>" for c in r) + "</tr>" for r in self.rows
        )
        cap = f"<p class='caption'>{html.escape(self.caption)}</p>" if self.caption else ""
        return (
            f"<h3>{html.escape(self.title)}</h3>{cap}"
            f"<div class='tw'><table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table></div>"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "caption": self.caption,
            "header": self.header,
            "rows": [
                [{"text": _cell(c).text, "mark": _cell(c).mark} for c in r] for r in self.rows
            ],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Table:
        rows = [[Cell(c["text"], c["mark"]) for c in r] for r in d["rows"]]
        return cls(d["title"], d["header"], rows, d.get("caption", ""))


def table_html(t: Table) -> str:
    """``Table.to_html`` with the caption's Markdown (bold, italics, code, underline) rendered:
    ``to_html`` escapes it, so the page showed ``**Bold**`` and ``<u>underlined</u>`` literally."""
    from quorum.pages import md_inline

    body = replace(t, caption="").to_html()
    if not t.caption:
        return body
    head, sep, rest = body.partition("</h3>")
    return f"{head}{sep}<div class='caption'>{md_inline(t.caption)}</div>{rest}"
