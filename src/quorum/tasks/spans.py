"""Span tasks (entities, error spans): an output is a list of typed character spans over the
item's text. Encoding, the matching rule, span F1, the weighted span vote, quotes to offsets.

An output is the *canonical span string*: the JSON list of ``[start, end, label]`` triples
(character offsets into the item's text, end exclusive), sorted, without duplicates, with no
spaces (:func:`encode_spans`); ``[]`` is "no span". Every choice here is ours (the paper has
no spans) and is written in docs/router.md, "Span tasks".

Matching rule (``overlap``, the default): a predicted span is correct when it overlaps (one
character or more) a reference span of the same label; a reference span is found when a
predicted span of its label overlaps it. Precision and recall are counted per side (so two
short spans inside one long one both count), F1 = 2PR / (P + R); two empty lists agree
(1.0), one empty and one not do not (0.0). ``exact`` counts only equal (start, end, label).
Exact boundaries barely agree even between people on error spans (0.06 F1 on d2t-eval),
so the router's agreement, Delta_t and the per-item score use ``overlap``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from quorum.errors import DataValidationError
from quorum.tasks.base import ItemView, TaskKind, TaskType
from quorum.tasks.parsing import LabelParser, Parsed

Span = tuple[int, int, str]

#: the answer columns of a span folder without a task file
ITEM_COLUMNS = ("item_id", "text")
GOLD_COLUMN = "gold_spans"
ANSWER_COLUMN = "spans"


# -- the canonical string ------------------------------------------------------------
def encode_spans(spans: Iterable[Any]) -> str:
    """The canonical span string of spans given as ``(start, end, label)`` triples or
    ``{"start", "end", "label"}`` mappings: sorted, duplicates dropped, no spaces.

    >>> encode_spans([{"start": 5, "end": 9, "label": "B"}, (0, 3, "A"), (0, 3, "A")])
    '[[0,3,"A"],[5,9,"B"]]'
    """
    out = {_triple(s) for s in spans}
    return json.dumps(sorted(out), separators=(",", ":"), ensure_ascii=False)


def _triple(s: Any) -> Span:
    if isinstance(s, Mapping):
        try:
            start, end, label = s["start"], s["end"], s["label"]
        except KeyError as exc:
            raise ValueError(f"a span needs start, end and label: {dict(s)!r}") from exc
    else:
        try:
            start, end, label = s
        except (TypeError, ValueError) as exc:
            raise ValueError(f"a span is (start, end, label), got {s!r}") from exc
    if isinstance(start, bool) or isinstance(end, bool):
        raise ValueError(f"span offsets must be integers, got {s!r}")
    try:
        a, b = int(start), int(end)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"span offsets must be integers, got {s!r}") from exc
    if a != start or b != end:
        raise ValueError(f"span offsets must be integers, got {s!r}")
    return a, b, str(label)


@lru_cache(maxsize=200_000)
def decode_spans(output: str) -> tuple[Span, ...]:
    """The spans of a canonical (or any JSON) span string, sorted and unique.

    >>> decode_spans('[{"start": 4, "end": 6, "label": "X"}]')
    ((4, 6, 'X'),)
    """
    try:
        data = json.loads(output)
    except (TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a span list: {output!r:.80}") from exc
    if not isinstance(data, list):
        raise ValueError(f"not a span list: {output!r:.80}")
    return tuple(sorted({_triple(s) for s in data}))


def check_spans(
    spans: Sequence[Span], text_len: int, labels: Sequence[str] | None = None
) -> list[str]:
    """What is wrong with ``spans`` over a text of ``text_len`` characters (empty: nothing):
    an offset outside the text, start >= end, a label outside ``labels``. Overlapping spans
    are allowed (error spans and nested entities overlap)."""
    problems = []
    known = set(labels or [])
    for a, b, lab in spans:
        if a < 0 or b > text_len:
            problems.append(f"span {[a, b, lab]} lies outside the text (0..{text_len})")
        elif a >= b:
            problems.append(f"span {[a, b, lab]} has start >= end")
        if known and lab not in known:
            problems.append(f"span {[a, b, lab]} has an unknown type {lab!r}")
    return problems


# -- matching ---------------------------------------------------------------------------
def _by_label(spans: Sequence[Span]) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for a, b, lab in spans:
        out.setdefault(lab, []).append((a, b))
    return out


def _hits(xs: list[tuple[int, int]], ys: list[tuple[int, int]] | None) -> int:
    """How many of ``xs`` overlap one of ``ys`` (both sorted by start)."""
    if not ys:
        return 0
    n = 0
    for a, b in xs:
        for c, d in ys:
            if c >= b:
                break
            if d > a:
                n += 1
                break
    return n


def match_counts(pred: Sequence[Span], ref: Sequence[Span], rule: str = "overlap"):
    """(correct predicted, number predicted, found reference, number of reference) under
    ``rule`` (``overlap`` or ``exact``)."""
    if rule == "exact":
        both = len(set(pred) & set(ref))
        return both, len(pred), both, len(ref)
    if rule != "overlap":
        raise ValueError(f"span matching rule must be 'overlap' or 'exact', got {rule!r}")
    p, r = _by_label(pred), _by_label(ref)
    tp_p = sum(_hits(xs, r.get(lab)) for lab, xs in p.items())
    tp_r = sum(_hits(ys, p.get(lab)) for lab, ys in r.items())
    return tp_p, len(pred), tp_r, len(ref)


def f1_of(tp_p: int, n_p: int, tp_r: int, n_r: int) -> float:
    """F1 of match counts; 1.0 when both sides are empty, 0.0 when only one is."""
    if n_p == 0 and n_r == 0:
        return 1.0
    if n_p == 0 or n_r == 0:
        return 0.0
    prec, rec = tp_p / n_p, tp_r / n_r
    return 0.0 if prec + rec == 0 else 2 * prec * rec / (prec + rec)


@lru_cache(maxsize=500_000)
def span_f1(out: str, ref: str, rule: str = "overlap") -> float:
    """Span F1 of two canonical span strings (symmetric for both rules).

    >>> span_f1('[[0,5,"A"]]', '[[3,9,"A"]]'), span_f1('[[0,5,"A"]]', '[[3,9,"B"]]')
    (1.0, 0.0)
    >>> span_f1('[[0,5,"A"]]', '[[3,9,"A"]]', "exact"), span_f1("[]", "[]")
    (0.0, 1.0)
    """
    return f1_of(*match_counts(decode_spans(out), decode_spans(ref), rule))


def corpus_f1(outputs: Iterable[str | None], refs: Iterable[str], rule: str) -> dict[str, float]:
    """Micro precision, recall and F1 over all items (counts pooled; a missing output is
    an empty list)."""
    tp_p = n_p = tp_r = n_r = 0
    for o, r in zip(outputs, refs, strict=True):
        c = match_counts(decode_spans(o) if isinstance(o, str) else (), decode_spans(r), rule)
        tp_p, n_p, tp_r, n_r = tp_p + c[0], n_p + c[1], tp_r + c[2], n_r + c[3]
    prec = tp_p / n_p if n_p else 0.0
    rec = tp_r / n_r if n_r else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"precision": prec, "recall": rec, "f1": f1}


# -- the weighted span vote ---------------------------------------------------------------
@dataclass(frozen=True)
class SpanVote:
    """Several weighted span lists of one item as one.

    Candidates are the annotations' spans; spans of the same label that overlap (directly or
    through a chain) form one group. A group is kept when the weight of the annotators with a
    span in it is more than ``support`` of the weight of all annotators of the item (those
    who marked nothing included); it is represented by its medoid: the span overlapped by the
    most weight of other annotators (ties: the heaviest annotator, then the one listed first
    in the trust order, then the earliest span). Agreement r_t is the weighted mean of each
    annotation's span F1 against the result (``rule``), so it is the winner's share of the
    weight when every span list is equal or disjoint, as in the label vote. Human weight
    w_H, LLM weight w_LLM.
    """

    w_human: float = 10.0
    w_llm: float = 1.0
    threshold: float = 0.66
    support: float = 0.5
    rule: str = "overlap"

    def vote(
        self,
        outputs: Mapping[str, str],
        is_human: Callable[[str], bool],
        priority: Callable[[], list[str]] | list[str] | None = None,
    ) -> tuple[str | None, float]:
        """(the voted span string, r_t) with weight w_H for ``is_human`` annotators, else
        w_LLM (the label vote's signature); (None, 0.0) when empty."""
        return self.weighted(outputs, self._weights(outputs, is_human), priority)

    def weighted(
        self,
        outputs: Mapping[str, str],
        weights: Mapping[str, float],
        priority: Callable[[], list[str]] | list[str] | None = None,
    ) -> tuple[str | None, float]:
        """:meth:`vote` with each annotator's weight given."""
        if not outputs:
            return None, 0.0
        names = list(outputs)
        if len(set(outputs.values())) == 1:  # all equal: that list, full agreement
            return outputs[names[0]], 1.0
        total = sum(weights[a] for a in names)
        order = (priority() if callable(priority) else priority) or names
        rank = {a: i for i, a in enumerate(order)}
        cands: list[tuple[int, int, str, str]] = []
        for a in names:
            cands.extend((s, e, lab, a) for s, e, lab in decode_spans(outputs[a]))
        kept: list[Span] = []
        for group in _groups(cands):
            who = {c[3] for c in group}
            if sum(weights[a] for a in who) <= self.support * total:
                continue

            def key(c, group=group):
                over = {d[3] for d in group if d[3] != c[3] and d[0] < c[1] and c[0] < d[1]}
                return (
                    -sum(weights[a] for a in over),
                    -weights[c[3]],
                    rank.get(c[3], len(rank)),
                    c[0],
                    c[1],
                )

            best = min(group, key=key)
            kept.append(best[:3])
        out = encode_spans(kept)
        agr = sum(weights[a] * span_f1(outputs[a], out, self.rule) for a in names) / total
        return out, float(agr)

    def _weights(self, outputs: Mapping[str, str], is_h: Callable[[str], bool]):
        return {a: (self.w_human if is_h(a) else self.w_llm) for a in outputs}

    # -- the kind's aggregator (:class:`~quorum.tasks.base.Aggregator`) ---------------
    def vote_item(self, outputs, is_h, priority=None, embed=None) -> tuple[str | None, float]:
        return self.vote(outputs, is_h, priority)

    def agreement_item(self, outputs, is_h, embed=None) -> float:
        return self.vote(outputs, is_h)[1]

    def majority(self, outputs, is_h, priority=None, embed=None) -> str | None:
        """The vote with the weights of :meth:`vote_item`."""
        return self.vote(outputs, is_h, priority)[0]

    def delta(self, outputs: list[str], embed=None) -> float:
        """Delta_t = 1 - mean pairwise span F1 (unweighted; 0 for fewer than two)."""
        n = len(outputs)
        if n < 2:
            return 0.0
        tot = sum(
            span_f1(outputs[i], outputs[j], self.rule) for i in range(n) for j in range(i + 1, n)
        )
        return float(1.0 - tot / (n * (n - 1) / 2))

    def similarity(self, out: str | None, ref: str, embed=None) -> float:
        """Span F1 of ``out`` against ``ref``; 0 without an output."""
        return 0.0 if out is None else span_f1(out, ref, self.rule)

    def consensus(self, agreement: float, n: int) -> bool:
        return n >= 2 and agreement >= self.threshold


def _groups(cands: list[tuple[int, int, str, str]]) -> list[list[tuple[int, int, str, str]]]:
    """Same-label spans that overlap, chained (a sweep over spans sorted by start)."""
    out: list[list[tuple[int, int, str, str]]] = []
    by_lab: dict[str, list[tuple[int, int, str, str]]] = {}
    for c in cands:
        by_lab.setdefault(c[2], []).append(c)
    for lab in sorted(by_lab):
        cur: list[tuple[int, int, str, str]] = []
        end = -1
        for c in sorted(by_lab[lab]):
            if cur and c[0] >= end:
                out.append(cur)
                cur, end = [], -1
            cur.append(c)
            end = max(end, c[1])
        if cur:
            out.append(cur)
    return out


# -- quotes to offsets ----------------------------------------------------------------------
@dataclass(frozen=True)
class Located:
    """Quoted spans placed in a text: the spans, and the quotes left out with why."""

    spans: tuple[Span, ...]
    unfound: tuple[str, ...] = ()
    ambiguous: tuple[str, ...] = ()


def locate_quotes(
    text: str, quotes: Sequence[tuple[str, str, int | None]], ambiguous: str = "first_unused"
) -> Located:
    """Character offsets of ``(quote, label, occurrence)`` answers in ``text``.

    A quote is looked up exactly, then with white space and case relaxed. One occurrence:
    its offsets. Several: the ``occurrence``-th (1-based) when the answer gives it; else,
    with ``ambiguous="first_unused"``, the first occurrence not already taken by an earlier
    quote of the same label, and the quote is listed in ``ambiguous`` (recorded, not
    silent); with ``ambiguous="drop"`` it is left out and listed. A quote that does not occur
    is left out and listed in ``unfound``; an empty quote too.
    """
    spans: list[Span] = []
    unfound: list[str] = []
    amb: list[str] = []
    taken: set[Span] = set()
    for quote, label, occ in quotes:
        hits = _occurrences(text, quote)
        if not hits:
            unfound.append(quote)
            continue
        if len(hits) == 1:
            pick = hits[0]
        elif occ is not None and 1 <= occ <= len(hits):
            pick = hits[occ - 1]
        else:
            amb.append(quote)
            if ambiguous == "drop":
                continue
            free = [h for h in hits if (h[0], h[1], label) not in taken]
            pick = (free or hits)[0]
        span = (pick[0], pick[1], label)
        taken.add(span)
        spans.append(span)
    return Located(tuple(sorted(set(spans))), tuple(unfound), tuple(amb))


def _occurrences(text: str, quote: str) -> list[tuple[int, int]]:
    q = quote.strip()
    if not q:
        return []
    hits = [(m.start(), m.start() + len(q)) for m in re.finditer(re.escape(q), text)]
    if hits:
        return hits
    words = [re.escape(w) for w in q.split()]
    pat = re.compile(r"\s+".join(words), re.IGNORECASE)
    return [(m.start(), m.end()) for m in pat.finditer(text)]


_JSON_LIST = re.compile(r"\[.*\]", re.S)


def _complete_part(body: str) -> list[Any] | None:
    """The complete entries of a JSON list of objects cut off mid-way (an answer that ran
    out of ``max_tokens``): the list up to its last ``}``, closed; None where there is no
    complete entry."""
    start, end = body.find("["), body.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        data = json.loads(body[start : end + 1] + "]")
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, list) and data else None


def parse_span_answer(
    raw: str | None,
    text: str,
    labels: Sequence[str],
    ambiguous: str = "first_unused",
    names: Mapping[str, str] | None = None,
) -> Parsed:
    """An LLM's answer (a JSON list of ``{"quote", "type"[, "occurrence"]}``, or a JSON
    object with such a list under ``spans``) as a canonical span string.

    Unusable (``unparseable``): no JSON list; an entry without a quote or a type; a type
    outside ``labels`` (when given). A list cut off mid-way (the answer ran out of tokens)
    keeps its complete entries, and ``reason`` says so. Quotes that are not in the text,
    or occur several times without an occurrence, are kept out or placed by
    :func:`locate_quotes` and named in ``reason`` (the answer stays usable: what was found
    counts). ``names`` (label -> the name a prompt shows) lets a type be given by its
    name; the span keeps the label."""
    body = (raw or "").strip()
    if not body:
        return Parsed("unparseable", None, "empty answer")
    data: Any = None
    cut = False
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        m = _JSON_LIST.search(body)
        if m:
            try:
                data = json.loads(m.group(0))
            except json.JSONDecodeError:
                data = None
        if data is None:
            data, cut = _complete_part(body), True
    if isinstance(data, dict):
        data = data.get("spans")
    if not isinstance(data, list):
        return Parsed("unparseable", None, "no JSON list of spans")
    known = _type_table(labels, names)
    quotes: list[tuple[str, str, int | None]] = []
    for entry in data:
        if not isinstance(entry, dict):
            return Parsed("unparseable", None, f"a span is not an object: {entry!r:.60}")
        quote = entry.get("quote", entry.get("text"))
        typ = entry.get("type", entry.get("label"))
        if not isinstance(quote, str) or not isinstance(typ, str):
            return Parsed("unparseable", None, f"a span needs a quote and a type: {entry!r:.60}")
        lab = known.get(typ.strip().casefold()) if known else typ.strip()
        if lab is None:
            return Parsed("unparseable", None, f"unknown span type {typ!r}")
        occ = entry.get("occurrence")
        quotes.append((quote, lab, occ if isinstance(occ, int) else None))
    found = locate_quotes(text, quotes, ambiguous)
    notes = [f"the answer stops mid-list: its {len(data)} complete span(s) kept"] if cut else []
    if found.unfound:
        notes.append(f"quotes not in the text: {list(found.unfound)}")
    if found.ambiguous:
        notes.append(f"quotes found several times: {list(found.ambiguous)} ({ambiguous})")
    return Parsed("ok", encode_spans(found.spans), "; ".join(notes))


def _type_table(labels: Sequence[str], names: Mapping[str, str] | None) -> dict[str, str]:
    """The span type each spelling names (casefolded label, then casefolded shown name).

    >>> _type_table(["T"], {"T": "Team name"})
    {'t': 'T', 'team name': 'T'}
    """
    known = {lab.casefold(): lab for lab in labels}
    for lab in labels:
        known.setdefault(str((names or {}).get(lab, lab)).casefold(), lab)
    return known


# -- constrained answers ---------------------------------------------------------------------
#: a token of the text a grammar quote is made of: a word, or one other visible character
_TOKEN = re.compile(r"\w+|[^\w\s]")


def _gbnf(s: str) -> str:
    """``s`` as a GBNF string literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def span_grammar(text: str, labels: Sequence[str], max_spans: int = 20,
                 max_tokens: int = 2000) -> str:  # fmt: skip
    """A GBNF grammar (llama.cpp) of a span answer on ``text``: a JSON list of at most
    ``max_spans`` objects ``{"quote": ..., "type": ...[, "occurrence": 1-9]}`` whose type
    is one of ``labels``. A quote is a run of consecutive tokens of the text (words, and
    single other characters, with the text's spacing between them: a single space where
    the text has any white space), so every quote the grammar allows is in the text; a text
    of more than ``max_tokens`` tokens gets any JSON string as quote instead (the grammar
    would hold a rule per token).

    >>> g = span_grammar("He said no.", ["Other"])
    >>> [line for line in g.splitlines() if line[:1] == "t" and line[1].isdigit()]
    ['t0 ::= "He" (" " t1)?', 't1 ::= "said" (" " t2)?', 't2 ::= "no" (t3)?', 't3 ::= "."']
    """
    toks = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
    types = " | ".join(_gbnf(json.dumps(lab, ensure_ascii=False)) for lab in labels)
    more = f' (ws "," ws span){{0,{max_spans - 1}}}' if max_spans > 1 else ""
    lines = [
        f'root ::= "[" ws (span{more})? ws "]"',
        'span ::= "{" ws "\\"quote\\"" ws ":" ws quote ws "," ws "\\"type\\"" ws ":" ws type '
        '(ws "," ws "\\"occurrence\\"" ws ":" ws [1-9])? ws "}"',
        f"type ::= {types}",
        "ws ::= [ ]?",
    ]
    if not toks or len(toks) > max_tokens:
        lines.append(r'quote ::= "\"" ([^"\\\x00-\x1F] | "\\" ["\\/bfnrt])+ "\""')
        return "\n".join(lines)
    lines.append('quote ::= "\\"" (' + " | ".join(f"t{i}" for i in range(len(toks))) + ') "\\""')
    for i, (a, b) in enumerate(toks):
        lit = _gbnf(json.dumps(text[a:b], ensure_ascii=False)[1:-1])
        if i + 1 == len(toks):
            lines.append(f"t{i} ::= {lit}")
        else:
            sep = '" " ' if toks[i + 1][0] > b else ""
            lines.append(f"t{i} ::= {lit} ({sep}t{i + 1})?")
    return "\n".join(lines)


def span_schema(labels: Sequence[str]) -> dict[str, Any]:
    """The OpenAI structured-output schema of a span answer: an object ``{"spans": [...]}``
    of ``{"quote", "type"}`` objects, the type one of ``labels`` (strict mode: every
    property required, so no ``occurrence``)."""
    item = {
        "type": "object",
        "properties": {
            "quote": {"type": "string"},
            "type": {"type": "string", "enum": list(labels)},
        },
        "required": ["quote", "type"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"spans": {"type": "array", "items": item}},
        "required": ["spans"],
        "additionalProperties": False,
    }


# -- Label Studio regions ----------------------------------------------------------------------
def _index_of_utf16(text: str, units: int) -> int:
    """The character index of ``text`` at ``units`` UTF-16 code units (JavaScript's string
    offsets count a character outside the BMP twice)."""
    n = 0
    for i, ch in enumerate(text):
        if n >= units:
            return i
        n += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


def region_offsets(value: Mapping[str, Any], text: str | None) -> tuple[int | None, int | None]:
    """The character offsets of a Label Studio text region: its ``start``/``end``, read as
    UTF-16 code units where that is what makes them cover the region's own ``text`` (a
    character outside the BMP before it); (None, None) without integer offsets."""
    try:
        a, b = int(value["start"]), int(value["end"])
    except (KeyError, TypeError, ValueError):
        return None, None
    quoted = value.get("text")
    if text is None or not isinstance(quoted, str) or text[a:b] == quoted:
        return a, b
    a2, b2 = _index_of_utf16(text, a), _index_of_utf16(text, b)
    return (a2, b2) if text[a2:b2] == quoted else (a, b)


# -- the kind ----------------------------------------------------------------------------------
class Spans(TaskKind):
    """Typed character spans over the item's text (named entities, error spans).

    Outputs are canonical span strings (:func:`encode_spans`); ``labels`` are the span
    types. Two outputs are as close as their overlap span F1; :class:`SpanVote` aggregates
    them; the headline metric ``span_f1`` is the mean per-item overlap F1 against the
    reference (an item where both are empty scores 1), beside micro exact and overlap F1.
    """

    type = TaskType.spans
    discrete = False
    graded = True
    reference_column = "gold"
    bench_few_seeds = True
    metric_name = "span_f1"
    metric_label = "span_f1"
    metric_short = "spanF1"
    metric_title = "Span F1"
    hf_task_category = "token-classification"
    template_name = "spans"
    task_verb = "annotated"
    max_tokens = 512
    labelstudio_name = "spans"
    people_vote = True
    people_choose = True
    constrained_output = True
    logprob_confidence = False
    audit_llm_by_value = True
    marks_text = True
    graded_people = True

    #: the share of the item's weight a span group needs to be kept (SpanVote.support)
    support: float = 0.5
    #: the most spans a constrained answer may list
    max_spans: int = 20
    #: a text with more tokens gets a grammar whose quotes are any string (span_grammar)
    grammar_max_tokens: int = 2000

    def aggregator(self, w_human: float, w_llm: float, threshold: float) -> SpanVote:
        return SpanVote(w_human, w_llm, threshold, self.support)

    def weighted_vote(
        self,
        outputs: Mapping[str, str],
        weights: Mapping[str, float],
        priority: list[str] | None = None,
    ) -> str | None:
        """The span vote (:class:`SpanVote`) of people's span lists with their weights."""
        return SpanVote(support=self.support).weighted(outputs, weights, priority)[0]

    def people_score(self, output: str, reference: str) -> float:
        """Overlap span F1."""
        return span_f1(output, reference)

    def metric(self, outputs: pd.Series, references: pd.Series, language: str) -> float:
        refs = references.reindex(outputs.index) if len(outputs) else references
        vals = [
            span_f1(o, r) if isinstance(o, str) else (1.0 if decode_spans(r) == () else 0.0)
            for o, r in zip(outputs.reindex(refs.index), refs, strict=True)
            if isinstance(r, str)
        ]
        return float(np.mean(vals)) if vals else float("nan")

    def extra_metrics(self, outputs: pd.Series, references: pd.Series) -> dict[str, float]:
        """Micro exact and overlap precision/recall/F1 (spans pooled over items)."""
        refs = references.dropna()
        outs = outputs.reindex(refs.index)
        row: dict[str, float] = {}
        for rule in ("overlap", "exact"):
            for k, v in corpus_f1(outs, refs, rule).items():
                row[f"{rule}_{k}"] = round(v, 6)
        return row

    def scorer(self, language: str) -> Callable[[str, str], float]:
        return span_f1

    def parse(self, parser: LabelParser | None, text: str | None, item: ItemView) -> Parsed:
        """Quoted spans (:func:`parse_span_answer`); an answer that is already a span list
        with offsets (a local model's, the gold column's) is taken as it is where every
        span fits the text and has a known type, and is unusable where one does not."""
        try:
            spans = self._named(decode_spans(text or ""))
        except ValueError:
            return parse_span_answer(text, item.text, self.labels, names=self.label_names)
        bad = check_spans(spans, len(item.text), self.labels)
        if bad:
            return Parsed("unparseable", None, bad[0])
        return Parsed("ok", encode_spans(spans))

    def output_name(self, output: str) -> str:
        """A span list as people read it: each span typed by its type's name.

        >>> Spans(["T"], {"T": "Team"}).output_name('[[0,3,"T"]]')
        '[[0,3,"Team"]]'
        """
        try:
            spans = decode_spans(output)
        except ValueError:
            return output
        return encode_spans((a, b, str(self.label_names.get(lab, lab))) for a, b, lab in spans)

    def _named(self, spans: Sequence[Span]) -> tuple[Span, ...]:
        """Spans whose type is given by the name a prompt or a person sees (a label's
        ``label_names`` entry, any case) typed by the label itself; other types as given."""
        if not self.labels:
            return tuple(spans)
        known = _type_table(self.labels, self.label_names)
        return tuple((a, b, known.get(lab.casefold(), lab)) for a, b, lab in spans)

    def placeholder(self, item_id: str, gold: Any, rng: np.random.Generator) -> str:
        if isinstance(gold, str):
            try:
                return encode_spans(decode_spans(gold))
            except ValueError:
                pass
        return "[]"

    def wrong_placeholder(self, truth: str, rng: np.random.Generator) -> str:
        """No span where the truth has one, else one short span of a drawn type."""
        if decode_spans(truth):
            return "[]"
        lab = self.labels[int(rng.integers(len(self.labels)))] if self.labels else "span"
        return encode_spans([(0, 1, lab)])

    def options(self, item: ItemView) -> list[str]:
        return self.display_labels()

    def human_options(self, item: ItemView) -> list[str]:
        return self.display_labels()

    def answer_forms(self, item: ItemView) -> list[str]:
        """The span types a constrained answer may name."""
        return self.display_labels()

    def constraint_for(self, mode: str, item: ItemView) -> dict[str, Any] | None:
        """A grammar whose quotes are runs of the item's text (:func:`span_grammar`), or
        the JSON schema of a span answer (:func:`span_schema`)."""
        if mode == "grammar":
            g = span_grammar(item.text, self.display_labels(), self.max_spans,
                             self.grammar_max_tokens)  # fmt: skip
            return {"grammar": g}
        if mode == "json_schema":
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "spans", "strict": True,
                                    "schema": span_schema(self.display_labels())},
                }
            }  # fmt: skip
        return None

    def text_spans(self, output: str | None) -> list[tuple[int, int, str]]:
        if not isinstance(output, str):
            return []
        try:
            return list(decode_spans(output))
        except ValueError:
            return []

    def human_answer_help(self, item: ItemView) -> str | None:
        return (
            'give a JSON list of {"start", "end", "label"} (character offsets into the text, '
            f"0 <= start < end <= {len(item.text)}, end exclusive) with labels from "
            f'{self.labels}, or of {{"quote", "type"}} whose quotes occur once in the text; '
            "[] for no span"
        )

    def match_human(self, raw: str, item: ItemView) -> str | None:
        """A person's spans: a JSON list of ``{start, end, label}`` (offsets) or of
        ``{quote, type}``; None when unreadable or a span does not fit the text."""
        try:
            spans = self._named(decode_spans(raw))
        except ValueError:
            got = parse_span_answer(raw, item.text, self.labels, names=self.label_names)
            return got.output if got.ok and not got.reason else None
        if check_spans(spans, len(item.text), self.labels):
            return None
        return encode_spans(spans)

    def labelstudio_control(self) -> str:
        """``Labels`` over the text whose labels are the task's options (``$options``, task
        data: the config holds no project text)."""
        return f'<Labels name="{self.labelstudio_name}" toName="text" value="$options"/>'

    def labelstudio_raw(
        self, result: Mapping[str, Any], unshown: Callable[[str], str]
    ) -> tuple[bool, str | None]:
        """One region of a ``Labels`` control as a one-span JSON list."""
        v = result.get("value") or {}
        if result.get("from_name") == self.labelstudio_name or "labels" in v:
            try:
                labs = v.get("labels") or []
                span = [int(v["start"]), int(v["end"]), unshown(str(labs[0]))]
            except (KeyError, IndexError, TypeError, ValueError):
                return True, None
            return True, json.dumps([span])
        return False, None

    def labelstudio_result(
        self,
        results: Sequence[Mapping[str, Any]],
        unshown: Callable[[str], str],
        text: str | None = None,
    ) -> str | None:
        """Every region of the ``Labels`` control in one annotation, joined into one span
        list (a region with several labels is one span per label; its offsets read by
        :func:`region_offsets`); an annotation without a region is ``[]``, no span. A
        region without offsets gives an answer that is not a span list, reported as such."""
        value_of = {self.label_names.get(lab, lab): lab for lab in self.labels}
        spans: list[list[Any]] = []
        for r in results:
            v = r.get("value") or {}
            if r.get("from_name") != self.labelstudio_name and "labels" not in v:
                continue
            a, b = region_offsets(v, text)
            labs = [unshown(str(x)) for x in v.get("labels") or []] or [None]
            spans.extend([a, b, value_of.get(lab, lab) if lab else lab] for lab in labs)
        return json.dumps(spans, ensure_ascii=False)

    def labelstudio_prediction(
        self, output: str, options: list[str], shown: Callable[[str], str]
    ) -> tuple[Any, str] | None:
        """Every span as a region of the ``Labels`` control (a list of values)."""
        try:
            spans = decode_spans(output)
        except ValueError:
            return None
        if not spans:
            return None
        return [
            {"start": a, "end": b, "labels": [shown(self.label_names.get(lab, lab))]}
            for a, b, lab in spans
        ], "labels"

    def hf_label_column(self, values: list[str | None]) -> tuple[list[Any], Any]:
        """A list of span structs ``{start, end, label}`` per item (``label`` a
        ``ClassLabel`` of the span types; ``[]``: no span; None: the item has no label);
        an output that is no span list of this task is an error."""
        import datasets

        index = {lab: k for k, lab in enumerate(self.labels)}
        out: list[list[dict[str, int]] | None] = []
        for v in values:
            if v is None:
                out.append(None)
                continue
            try:
                spans = decode_spans(v)
            except ValueError:
                raise DataValidationError(f"export: {v!r:.80} is not a span list") from None
            bad = sorted({lab for _, _, lab in spans} - set(index))
            if bad:
                raise DataValidationError(f"export: span types {bad} are not in task.labels")
            out.append([{"start": a, "end": b, "label": index[lab]} for a, b, lab in spans])
        feature = datasets.List(
            {
                "start": datasets.Value("int64"),
                "end": datasets.Value("int64"),
                "label": datasets.ClassLabel(names=list(self.labels)),
            }
        )
        return out, feature

    def check_frames(
        self, items: pd.DataFrame, annotations: pd.DataFrame
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Gold spans (and answers, where the frame has ``text``) as canonical strings
        checked against the item's text and the span types; a span outside its text, with
        start >= end or of an unknown type is a one-line DataValidationError naming the
        item."""
        if "gold" not in items.columns or "text" not in items.columns:
            return items, annotations
        items = items.copy()
        items["gold"] = [
            _canonical(g, t, f"gold of item {i}", self.labels)
            for i, t, g in zip(items["item_id"], items["text"].astype(str), items["gold"],
                               strict=True)
        ]  # fmt: skip
        return items, annotations

    # -- a dataset folder as it is ------------------------------------------------------------
    @classmethod
    def recognise(cls, items: pd.DataFrame, answers: pd.DataFrame) -> bool:
        """items: ``item_id, text, gold_spans``; answers (if any): ``item_id, annotator,
        spans``."""
        if not {*ITEM_COLUMNS, GOLD_COLUMN} <= set(items.columns):
            return False
        return answers.empty or {"item_id", "annotator", ANSWER_COLUMN} <= set(answers.columns)

    @classmethod
    def folder_task(
        cls, name: str, items: pd.DataFrame, answers: pd.DataFrame
    ) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
        """The task (type spans, the span types seen, most frequent first), the items with
        ``gold`` as canonical strings, the answers with ``output``. Annotators named
        ``human:...`` are declared people; such a person whose answers equal the gold on every
        item (the gold's own source) is left out. A span outside its text or with start >= end
        raises :class:`~quorum.errors.DataValidationError` naming the item."""
        items = items.copy()
        items["item_id"] = items["item_id"].astype(str)
        blank = items["item_id"][
            items["text"].isna() | items["text"].astype(str).str.strip().eq("")
        ]
        if len(blank):  # offsets need a text to point into
            raise DataValidationError(
                f"items: {len(blank)} empty text(s), e.g. item_id {list(blank)[:5]}"
            )
        texts = dict(zip(items["item_id"], items["text"].astype(str), strict=True))
        items["gold"] = [
            _canonical(g, texts[i], f"items: gold_spans of item {i}")
            for i, g in zip(items["item_id"], items[GOLD_COLUMN], strict=True)
        ]
        ann = pd.DataFrame(columns=["item_id", "annotator", "output"])
        if not answers.empty:
            ann = answers.copy()
            ann["item_id"] = ann["item_id"].astype(str)
            unknown = sorted(set(ann["item_id"]) - set(texts))
            if unknown:
                raise DataValidationError(f"answers: unknown item_id(s), e.g. {unknown[:5]}")
            ann["output"] = [
                _canonical(s, texts[i], f"answers: spans of {a!r} on item {i}")
                for i, a, s in zip(
                    ann["item_id"], ann["annotator"], ann[ANSWER_COLUMN], strict=True
                )
            ]
            gold = dict(zip(items["item_id"], items["gold"], strict=True))
            same = ann["output"] == ann["item_id"].map(gold)
            copies = [
                a
                for a, ok in same.groupby(ann["annotator"]).all().items()
                if ok and str(a).startswith("human:") and ann["annotator"].eq(a).sum() == len(items)
            ]
            ann = ann.loc[~ann["annotator"].isin(copies)]
            ann = ann[["item_id", "annotator", "output"]].reset_index(drop=True)
        counts: dict[str, int] = {}
        for g in items["gold"].dropna():  # a missing gold: no reference for that item
            for _, _, lab in decode_spans(g):
                counts[lab] = counts.get(lab, 0) + 1
        for o in ann["output"].dropna():  # a missing answer: no answer (the loader's rule)
            for _, _, lab in decode_spans(o):
                counts.setdefault(lab, 0)
        labels = sorted(counts, key=lambda lab: (-counts[lab], lab))
        people = sorted({a for a in ann["annotator"].astype(str) if a.startswith("human:")})
        llms = sorted(set(ann["annotator"].astype(str)) - set(people))
        task: dict[str, Any] = {"name": name, "type": "spans"}
        if labels:
            task["labels"] = labels
        if llms or people:
            task["annotators"] = [{"name": a, "kind": "llm"} for a in llms] + [
                {"name": a, "kind": "human"} for a in people
            ]
        return task, items.drop(columns=[GOLD_COLUMN]), ann


def _canonical(
    value: Any, text: str, where: str, labels: Sequence[str] | None = None
) -> str | None:
    """A span list (JSON string or list) as the canonical string, checked against its
    text (and the span types ``labels``, where given); None for a missing value."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, str) and not value.strip():
        return None
    try:
        spans = (
            decode_spans(value) if isinstance(value, str) else decode_spans(json.dumps(list(value)))
        )
    except (ValueError, TypeError) as exc:
        raise DataValidationError(f"{where}: {exc}") from exc
    bad = check_spans(spans, len(text), labels)
    if bad:
        raise DataValidationError(f"{where}: {bad[0]}")
    return encode_spans(spans)
