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


def parse_span_answer(
    raw: str | None, text: str, labels: Sequence[str], ambiguous: str = "first_unused"
) -> Parsed:
    """An LLM's answer (a JSON list of ``{"quote", "type"[, "occurrence"]}``, or a JSON
    object with such a list under ``spans``) as a canonical span string.

    Unusable (``unparseable``): no JSON list; an entry without a quote or a type; a type
    outside ``labels`` (when given). Quotes that are not in the text, or occur several times
    without an occurrence, are kept out or placed by :func:`locate_quotes` and named in
    ``reason`` (the answer stays usable: what was found counts)."""
    body = (raw or "").strip()
    if not body:
        return Parsed("unparseable", None, "empty answer")
    data: Any = None
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        m = _JSON_LIST.search(body)
        if m:
            try:
                data = json.loads(m.group(0))
            except json.JSONDecodeError:
                data = None
    if isinstance(data, dict):
        data = data.get("spans")
    if not isinstance(data, list):
        return Parsed("unparseable", None, "no JSON list of spans")
    known = {lab.casefold(): lab for lab in labels}
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
    notes = []
    if found.unfound:
        notes.append(f"quotes not in the text: {list(found.unfound)}")
    if found.ambiguous:
        notes.append(f"quotes found several times: {list(found.ambiguous)} ({ambiguous})")
    return Parsed("ok", encode_spans(found.spans), "; ".join(notes))


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
    constrained_output = False
    audit_llm_by_value = True

    #: the share of the item's weight a span group needs to be kept (SpanVote.support)
    support: float = 0.5

    def aggregator(self, w_human: float, w_llm: float, threshold: float) -> SpanVote:
        return SpanVote(w_human, w_llm, threshold, self.support)

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
        return parse_span_answer(text, item.text, self.labels)

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

    def match_human(self, raw: str, item: ItemView) -> str | None:
        """A person's spans: a JSON list of ``{start, end, label}`` (offsets) or of
        ``{quote, type}``; None when unreadable or a span does not fit the text."""
        try:
            spans = decode_spans(raw)
        except ValueError:
            got = parse_span_answer(raw, item.text, self.labels)
            return got.output if got.ok and not got.reason else None
        if check_spans(spans, len(item.text), self.labels):
            return None
        return encode_spans(spans)

    def labelstudio_control(self) -> str:
        labels = "".join(f'<Label value="{lab}"/>' for lab in self.display_labels())
        return f'<Labels name="{self.labelstudio_name}" toName="text">{labels}</Labels>'

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

    def labelstudio_prediction(
        self, output: str, options: list[str], shown: Callable[[str], str]
    ) -> tuple[dict[str, Any], str] | None:
        spans = decode_spans(output)
        if not spans:
            return None
        a, b, lab = spans[0]
        return {"start": a, "end": b, "labels": [shown(lab)]}, "labels"

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
        for g in items["gold"]:
            for _, _, lab in decode_spans(g):
                counts[lab] = counts.get(lab, 0) + 1
        for o in ann["output"]:
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


def _canonical(value: Any, text: str, where: str) -> str | None:
    """A span list (JSON string or list) as the canonical string, checked against its
    text; None for a missing value."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    try:
        spans = (
            decode_spans(value) if isinstance(value, str) else decode_spans(json.dumps(list(value)))
        )
    except (ValueError, TypeError) as exc:
        raise DataValidationError(f"{where}: {exc}") from exc
    bad = check_spans(spans, len(text))
    if bad:
        raise DataValidationError(f"{where}: {bad[0]}")
    return encode_spans(spans)
