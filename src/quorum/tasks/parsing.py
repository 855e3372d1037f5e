"""Turn raw LLM answers into labels, summaries and confidences, or say they are unusable.

Numbers are indices into the option list the prompt showed (the paper's prompts ask for
"Label: the predicted index"); a single letter is an index too (A = 0) unless it is itself a
label. An answer that names no label, names several, or gives an index out of range is
``unparseable``: it is recorded with its cost, never guessed into a label.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ParseStatus = Literal["ok", "unparseable"]


@dataclass(frozen=True)
class Parsed:
    status: ParseStatus
    output: str | None = None
    reason: str = ""
    confidence: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _bad(reason: str) -> Parsed:
    return Parsed("unparseable", None, reason)


_EXPLICIT = [
    re.compile(r"\blabel\s*(?:index)?\s*(?:is|:|=|-)?\s*[(\[\"'`]?\s*([^\n)\]\"'`,;]+)", re.I),
    re.compile(
        r"\b(?:answer|prediction|choice|option|class|category)\s*(?:is|:|=)\s*[(\[\"'`]?\s*"
        r"([^\n)\]\"'`,;]+)",
        re.I,
    ),
    re.compile(r"\(\s*([A-Za-z]|\d+)\s*\)"),
]
_STRIP = " \t\r\n.!?:;,'\"`*_()[]{}<>"


def _clean(s: str) -> str:
    return re.sub(r"\s+", " ", s.replace("**", "").replace("`", "")).strip(_STRIP)


def label_key(label: str) -> str:
    """How an answer and a label are compared: outer quotes, brackets and punctuation
    stripped, spaces collapsed, case folded (``'Yes!'`` -> ``'yes'``). A label that is only
    punctuation keeps its folded text."""
    folded = " ".join(str(label).split()).casefold()
    return _clean(folded) or folded


class LabelParser:
    """Parser for one task: ``labels`` are the label values, ``options`` the names shown."""

    def __init__(self, labels: list[str], names: dict[str, str] | None = None) -> None:
        self.labels = [str(x) for x in labels]
        self.names = {lab: (names or {}).get(lab, lab) for lab in self.labels}

    def _lookup(self, options: list[str] | None) -> dict[str, str]:
        """Lower-cased label values, names and the item's options -> label."""
        table: dict[str, str] = {}
        for lab in self.labels:
            table.setdefault(lab.lower(), lab)
            table.setdefault(self.names[lab].lower(), lab)
        for lab in self.labels:  # normalised like the answer is (issue 37: 'yes!')
            table.setdefault(label_key(lab), lab)
            table.setdefault(label_key(self.names[lab]), lab)
        for i, opt in enumerate(options or []):
            if i < len(self.labels):
                table.setdefault(_clean(str(opt)).lower(), self.labels[i])
        return table

    def _resolve(self, token: str, n: int, table: dict[str, str]) -> Parsed | None:
        tok = _clean(token)
        if not tok:
            return None
        low = tok.lower()
        if re.fullmatch(r"\d+", tok):
            i = int(tok)
            if i < n:
                return Parsed("ok", self.labels[i])
            return _bad(f"index {i} out of range 0..{n - 1}")
        if low in table:
            return Parsed("ok", table[low])
        if re.fullmatch(r"[A-Za-z]", tok):
            i = ord(low) - ord("a")
            if i < n:
                return Parsed("ok", self.labels[i])
            return _bad(f"option letter {tok} out of range")
        m = re.match(r"(\d+)\b", tok)
        if m:
            return self._resolve(m.group(1), n, table)
        m = re.match(r"([A-Za-z])(?:[).:]|\s|$)", tok)
        if m and len(tok) > 1 and tok[1] in ").:":
            return self._resolve(m.group(1), n, table)
        for key, lab in sorted(table.items(), key=lambda kv: -len(kv[0])):
            if not key.isdigit() and len(key) > 1 and re.match(rf"{re.escape(key)}\b", low):
                return Parsed("ok", lab)
        return None

    def parse(self, raw: str | None, options: list[str] | None = None) -> Parsed:
        if raw is None or not raw.strip():
            return _bad("empty answer")
        text = raw.replace("**", "")
        n = min(len(options), len(self.labels)) if options else len(self.labels)
        table = self._lookup(options)
        for pat in _EXPLICIT:
            m = pat.search(text)
            if m:
                got = self._resolve(m.group(1), n, table)
                if got is not None:
                    return got
        whole = self._resolve(text, n, table) if len(_clean(text)) <= 40 else None
        if whole is not None:
            return whole
        low = text.lower()
        hits = {
            lab
            for key, lab in table.items()
            if not key.isdigit() and len(key) > 1 and re.search(rf"\b{re.escape(key)}\b", low)
        }
        if len(hits) == 1:
            return Parsed("ok", hits.pop())
        if len(hits) > 1:
            return _bad(f"names several labels: {sorted(hits)}")
        return _bad("no label found")


def parse_summary(raw: str | None) -> Parsed:
    text = (raw or "").strip()
    if not text:
        return _bad("empty answer")
    return Parsed("ok", text)


_NUM = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*(%)?")


def parse_confidence(raw: str | None) -> Parsed:
    """A probability in [0, 1]: '0.8', 'Probability: .75', '85%'. Else unparseable."""
    if raw is None or not raw.strip():
        return _bad("empty answer")
    m = _NUM.search(raw)
    if not m:
        return _bad("no number found")
    x = float(m.group(1))
    if m.group(2):
        x /= 100.0
    if not 0.0 <= x <= 1.0:
        return _bad(f"{m.group(0).strip()} is not a probability")
    return Parsed("ok", f"{x:.6g}", confidence=x)
