"""Multi-label (a set of labels from a fixed list per item): the per-label weighted vote,
set agreement by Jaccard, micro-/macro-F1 and exact match (scikit-learn's).

An output is a *set* of labels, possibly empty (``min_labels = 0``). The router's outputs
are strings, so a set travels as one canonical string: a compact JSON array of the labels
in the task's label order, e.g. ``["care","purity"]``; the empty set is ``[]``. Every
choice below is ours (the paper has no multi-label task); docs/router.md, "Multi-label",
gives the reasons:

* the similarity of two outputs, the score of an output against a reference and the
  quality estimate's score are the Jaccard index |A & B| / |A | B| (1 for two empty
  sets): in [0, 1], 1 only for the same set, and equal to classification's 0/1 on
  single-label answers;
* aggregation is per label (binary relevance): a label is kept when its weighted support
  (the weight of the answers holding it over the weight of all answers; human weight w_H,
  LLM weight w_LLM) passes ``support`` (one half); a label at exactly one half goes the
  way of the most trusted answer (the trust order, asked only then); ``min_labels`` /
  ``max_labels`` then add / drop labels by their support;
* the agreement of an item is the weighted mean Jaccard of its answers with the
  aggregate (classification's winner's weight share when every answer is one label), and
  Delta_t is one minus the unweighted mean Jaccard with the unweighted aggregate.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from quorum.errors import DataValidationError
from quorum.tasks.base import ItemView, TaskKind, TaskType
from quorum.tasks.parsing import LabelParser, Parsed

#: the separator of labels in a file-queue answer (``label = "care;purity"``) and in the
#: free-text fallback of an LLM's answer; a label name may not contain it
FILE_SEPARATOR = ";"
#: characters a label name may not hold (they separate labels in answers and exports)
FORBIDDEN_IN_LABEL = (",", ";")
#: a label's weighted support within this of ``support`` is "exactly one half" (a tie)
TIE_TOLERANCE = 1e-12
#: the most labels a set held as an int64 bitmask may have (bit 63, the sign, stays 0)
BITMASK_LABELS = 63


def encode(labels: Iterable[str], order: Sequence[str] | None = None) -> str:
    """The canonical string of a label set: a compact JSON array in ``order`` (the task's
    label order; sorted without one).

    >>> encode({"purity", "care"}, ["care", "loyalty", "purity"])
    '["care","purity"]'
    >>> encode([])
    '[]'
    """
    s = set(labels)
    if order is not None:
        rank = {lab: i for i, lab in enumerate(order)}
        items = sorted(s, key=lambda x: (rank.get(x, len(rank)), x))
    else:
        items = sorted(s)
    return json.dumps(items, ensure_ascii=False, separators=(",", ":"))


@lru_cache(maxsize=65536)
def decode(output: str) -> frozenset[str]:
    """The label set of a canonical string (cached: a task has few distinct sets).

    >>> sorted(decode('["care","purity"]'))
    ['care', 'purity']
    """
    return frozenset(json.loads(output))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a & b| / |a | b|; 1.0 for two empty sets.

    >>> jaccard(frozenset({"a", "b"}), frozenset({"a"}))
    0.5
    >>> jaccard(frozenset(), frozenset())
    1.0
    """
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def as_label_list(value: Any) -> list[str] | None:
    """A recorded answer as a list of label strings: a list / tuple / array, a canonical
    JSON array, or a ``;``-separated string (None / NaN: no answer).

    >>> as_label_list("care; purity"), as_label_list('["a"]'), as_label_list([])
    (['care', 'purity'], ['a'], [])
    """
    if value is None:
        return None
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, (list, tuple, np.ndarray, set, frozenset)):
        return [str(x).strip() for x in value]
    s = str(value).strip()
    if s.startswith("["):
        try:
            got = json.loads(s)
        except json.JSONDecodeError:
            got = None
        if isinstance(got, list):
            return [str(x).strip() for x in got]
    if not s:
        return []
    return [p.strip() for p in s.split(FILE_SEPARATOR) if p.strip()]


def check_label_names(labels: Sequence[str]) -> None:
    """Raise a one-line error for a label name a set cannot hold (empty, or with ``,``
    or ``;``)."""
    for lab in labels:
        if not lab.strip():
            raise DataValidationError("multilabel: an empty label name")
        bad = [c for c in FORBIDDEN_IN_LABEL if c in lab]
        if bad:
            raise DataValidationError(
                f"multilabel: label {lab!r} contains {bad[0]!r}, which separates labels in "
                "answers and exports; rename it"
            )


@dataclass(frozen=True)
class LabelSetVote:
    """Per-label weighted vote over label sets (binary relevance), with Jaccard agreement.

    ``support``: a label is kept when its weighted share of the answers is above it (at
    exactly it, when the most trusted answer holds it); ``min_labels``/``max_labels``
    bound the aggregate's size (labels added / dropped by support, then label order).
    """

    labels: tuple[str, ...] = ()
    w_human: float = 10.0
    w_llm: float = 1.0
    threshold: float = 0.66
    support: float = 0.5
    min_labels: int = 0
    max_labels: int | None = None
    #: a share within this of ``support`` is a tie
    tolerance: float = TIE_TOLERANCE
    #: the votes of weighted answer sets with no tie, by their sorted (weight, output)
    #: pairs (a run meets few distinct ones); cleared past :data:`_MEMO_SIZE`
    _memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def _encode(self, s: Iterable[str]) -> str:
        return encode(s, self.labels)

    def vote(
        self,
        outputs: Mapping[str, str],
        is_human: Callable[[str], bool],
        priority: list[str] | Callable[[], list[str]] | None = None,
    ) -> tuple[str | None, float]:
        """(aggregate set as a canonical string, weighted agreement); (None, 0.0) when
        empty."""
        if not outputs:
            return None, 0.0
        if len(outputs) == 1:
            (first,) = outputs.values()
            same = True
        else:
            vals = list(outputs.values())
            first = vals[0]
            same = all(v == first for v in vals)
        if same:
            s = decode(first)
            if self.min_labels <= len(s) <= (self.max_labels or len(s)):
                return first, 1.0
        w_h, w_l = self.w_human, self.w_llm
        weights = {a: (w_h if is_human(a) else w_l) for a in outputs}
        key = tuple(sorted((weights[a], o) for a, o in outputs.items()))
        memo = self._memo
        known = memo.get(key, _UNSEEN)  # the same weighted answers: the same vote
        if known is _UNSEEN:
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            known = memo[key] = _untied_vote(self, key)
        if known is not None:
            return known
        sets = {a: decode(o) for a, o in outputs.items()}
        keep = self._keep(sets, weights, priority)
        total = sum(weights.values())
        agr = sum(weights[a] * jaccard(sets[a], keep) for a in sets) / total
        return self._encode(keep), agr

    def _tied(self, key: tuple[tuple[float, str], ...]) -> bool:
        """Whether a label has exactly ``support`` of the weight of ``key``'s answers."""
        total = sum(w for w, _ in key)
        sup: dict[str, float] = {}
        for w, o in key:
            for lab in decode(o):
                sup[lab] = sup.get(lab, 0.0) + w
        return any(abs(x / total - self.support) <= self.tolerance for x in sup.values())

    def _keep(
        self,
        sets: Mapping[str, frozenset[str]],
        weights: Mapping[str, float],
        priority: list[str] | Callable[[], list[str]] | None,
    ) -> frozenset[str]:
        total = sum(weights.values())
        sup: dict[str, float] = {}
        for a, s in sets.items():
            for lab in s:
                sup[lab] = sup.get(lab, 0.0) + weights[a]
        share = {lab: w / total for lab, w in sup.items()}
        keep = {lab for lab, x in share.items() if x > self.support + self.tolerance}
        tied = [lab for lab, x in share.items() if abs(x - self.support) <= self.tolerance]
        if tied:
            order = (priority() if callable(priority) else priority) or list(sets)
            top = next((a for a in order if a in sets), next(iter(sets)))
            keep.update(lab for lab in tied if lab in sets[top])
        rank = {lab: i for i, lab in enumerate(self.labels)}

        def by_support(lab: str) -> tuple[float, int, str]:
            return (-share.get(lab, 0.0), rank.get(lab, len(rank)), lab)

        if len(keep) < self.min_labels:
            extra = sorted((lab for lab in share if lab not in keep), key=by_support)
            keep.update(extra[: self.min_labels - len(keep)])
        if self.max_labels is not None and len(keep) > self.max_labels:
            keep = set(sorted(keep, key=by_support)[: self.max_labels])
        return frozenset(keep)

    def weighted_agreement(self, outputs: Mapping[str, str], is_human) -> float:
        return self.vote(outputs, is_human, list(outputs))[1] if outputs else 0.0

    def consensus(self, agreement: float, n: int) -> bool:
        """As classification's: at least two answers and agreement >= the threshold."""
        return n >= 2 and agreement >= self.threshold

    # -- the kind's aggregator (:class:`~quorum.tasks.base.Aggregator`) ---------------
    def vote_item(self, outputs, is_h, priority, embed=None) -> tuple[str | None, float]:
        return self.vote(outputs, is_h, priority)

    def agreement_item(self, outputs, is_h, embed=None) -> float:
        """The agreement of :meth:`vote` (an exact tie goes to the first answer here; the
        agreement is the vote's when no label sits at exactly one half)."""
        return self.weighted_agreement(outputs, is_h)

    def majority(self, outputs, is_h, priority=None, embed=None) -> str | None:
        """The aggregate with every answer weighted alike."""
        if not outputs:
            return None
        sets = {a: decode(o) for a, o in outputs.items()}
        return self._encode(self._keep(sets, dict.fromkeys(sets, 1.0), priority))

    def delta(self, outputs: list[str], embed=None) -> float:
        """Delta_t = 1 - mean Jaccard of the answers with their unweighted aggregate."""
        if not outputs:
            return 0.0
        sets = {str(i): decode(o) for i, o in enumerate(outputs)}
        keep = self._keep(sets, dict.fromkeys(sets, 1.0), list(sets))
        return 1.0 - float(np.mean([jaccard(s, keep) for s in sets.values()]))

    def similarity(self, out: str | None, ref: str, embed=None) -> float:
        """Jaccard of the two sets; 0 without an output.

        >>> LabelSetVote().similarity('["a","b"]', '["a"]')
        0.5
        """
        if out is None:
            return 0.0
        if out == ref:
            return 1.0
        return jaccard(decode(out), decode(ref))


#: how many untied votes an aggregator keeps (:attr:`LabelSetVote._memo`)
_MEMO_SIZE = 1 << 16
#: "not in the memo" (None there is a vote with a tie)
_UNSEEN = object()


def _untied_vote(agg: LabelSetVote, key: tuple[tuple[float, str], ...]) -> tuple[str, float] | None:
    """The vote of the weighted answers ``key`` (sorted ``(weight, output)`` pairs) where no
    label sits at exactly the support threshold (None there: the trust order decides)."""
    if agg._tied(key):
        return None
    outs = {str(i): o for i, (_, o) in enumerate(key)}
    weights = {str(i): w for i, (w, _) in enumerate(key)}
    sets = {a: decode(o) for a, o in outs.items()}
    keep = agg._keep(sets, weights, None)
    total = sum(weights.values())
    agr = sum(weights[a] * jaccard(sets[a], keep) for a in sets) / total
    return agg._encode(keep), agr


def set_jaccard(output: str, reference: str) -> float:
    """The score of one output against its reference: the Jaccard of the two sets."""
    if output == reference:
        return 1.0
    return jaccard(decode(output), decode(reference))


class MultiLabel(TaskKind):
    """A set of labels from a fixed list per item (possibly empty where ``min_labels`` is 0).

    Outputs are canonical JSON arrays (:func:`encode`); two outputs are as close as the
    Jaccard of their sets; the per-label weighted vote aggregates them; the headline metric
    is the mean Jaccard over items (scikit-learn's ``jaccard_score(average="samples")``),
    with micro-/macro-F1 and exact match reported beside it (:meth:`metrics`).
    """

    type = TaskType.multilabel
    discrete = False
    graded = False
    reference_column = "gold"
    metric_name = "jaccard"
    metric_label = "jaccard"
    metric_short = "J"
    metric_title = "Jaccard"
    template_name = "multilabel"
    task_verb = "labelled"
    max_tokens = 96
    labelstudio_name = "labels"
    people_vote = True
    people_choose = True
    constrained_output = True
    #: replay's compiled loops hold a set as a bitmask (:meth:`output_bitmasks`)
    compiled_outputs = "label_sets"
    #: outputs are label sets: people voted, and reported, label by label
    label_set_outputs = True
    #: an answer's token log-probabilities are no confidence of a whole label set
    logprob_confidence = False
    #: the ``[task]`` keys this kind takes beyond labels
    option_keys: ClassVar[tuple[str, ...]] = ("min_labels", "max_labels")

    def __init__(
        self,
        labels: Sequence[str] | None = None,
        label_names: Mapping[str, str] | None = None,
        min_labels: int | None = None,
        max_labels: int | None = None,
    ) -> None:
        super().__init__(labels, label_names)
        check_label_names(self.labels)
        for name in self.label_names.values():
            check_label_names([str(name)])
        self.min_labels = int(min_labels or 0)
        self.max_labels = None if max_labels is None else int(max_labels)
        if self.min_labels < 0:
            raise DataValidationError(f"multilabel: min_labels {self.min_labels} is below 0")
        if self.max_labels is not None and self.max_labels < max(1, self.min_labels):
            raise DataValidationError(
                f"multilabel: max_labels {self.max_labels} is below max(1, min_labels)"
            )
        if self.labels and self.min_labels > len(self.labels):
            raise DataValidationError(
                f"multilabel: min_labels {self.min_labels} exceeds the {len(self.labels)} labels"
            )

    @classmethod
    def needs_labels(cls) -> bool:
        return True

    # -- outputs -------------------------------------------------------------------
    def encode(self, labels: Iterable[str]) -> str:
        return encode(labels, self.labels)

    def label_set(self, output: str) -> frozenset[str] | None:
        """The labels of an output: a canonical string, or a set as a person or an items
        file writes it (``a;b``, a JSON list, label names); None where it is no set of
        this task.

        >>> sorted(MultiLabel(["a", "b", "c"]).label_set("c; a"))
        ['a', 'c']
        """
        try:
            got = decode(output)
            if got <= set(self.labels):
                return got
        except (ValueError, TypeError):
            pass
        canon = self.match_human(output, ItemView("", ""))
        return None if canon is None else decode(canon)

    def output_of_labels(self, labels: Iterable[str]) -> str:
        return self.encode(labels)

    def check_set(self, labels: Sequence[str]) -> str | None:
        """Why a label list is not an output of this task (None: it is): a label outside
        the set, a duplicate, fewer than ``min_labels`` or more than ``max_labels``."""
        known = set(self.labels)
        unknown = [x for x in labels if x not in known] if known else []
        if unknown:
            return f"label(s) outside the label set: {unknown[:3]}"
        if len(set(labels)) != len(labels):
            dup = sorted({x for x in labels if list(labels).count(x) > 1})
            return f"duplicate label(s): {dup}"
        if len(labels) < self.min_labels:
            return f"{len(labels)} label(s), fewer than min_labels = {self.min_labels}"
        if self.max_labels is not None and len(labels) > self.max_labels:
            return f"{len(labels)} label(s), more than max_labels = {self.max_labels}"
        return None

    def output_bitmasks(self, outputs: Sequence[str]) -> np.ndarray | None:
        """Each canonical output as an int64 bitmask, bit j for the task's label j; None
        with more than :data:`BITMASK_LABELS` labels or an output that is no set of them.

        >>> MultiLabel(["a", "b", "c"]).output_bitmasks(['["a","c"]', "[]"]).tolist()
        [5, 0]
        """
        if len(self.labels) > BITMASK_LABELS:
            return None
        bit = {lab: 1 << j for j, lab in enumerate(self.labels)}
        out = np.zeros(len(outputs), dtype=np.int64)
        for i, o in enumerate(outputs):
            try:
                labs = decode(o)
            except (ValueError, TypeError):
                return None
            if not labs <= bit.keys():
                return None
            out[i] = sum(bit[x] for x in labs)
        return out

    def canonical(self, value: Any) -> str | None:
        """A recorded answer (list, JSON array or ``a;b``) as its canonical string; None
        for no answer; DataValidationError (one line) for an answer that is no output."""
        got = as_label_list(value)
        if got is None:
            return None
        why = self.check_set(got)
        if why is not None:
            raise DataValidationError(f"multilabel answer {value!r}: {why}")
        return self.encode(got)

    def aggregator(self, w_human: float, w_llm: float, threshold: float) -> LabelSetVote:
        return LabelSetVote(
            tuple(self.labels), w_human, w_llm, threshold, 0.5, self.min_labels, self.max_labels
        )

    def indicator(self, outputs: Sequence[str | None]) -> np.ndarray:
        """Rows of 0/1 per label (label order) for canonical outputs (None: no label)."""
        col = {lab: j for j, lab in enumerate(self.labels)}
        m = np.zeros((len(outputs), len(self.labels)), dtype=np.int8)
        for i, o in enumerate(outputs):
            if o is None or (isinstance(o, float) and o != o):
                continue
            for lab in decode(o):
                j = col.get(lab)
                if j is not None:
                    m[i, j] = 1
        return m

    def _pairs(self, outputs: pd.Series, references: pd.Series):
        g = references.dropna()
        o = outputs.reindex(g.index)
        answered = o.notna().to_numpy()
        return self.indicator(list(o)), self.indicator(list(g)), answered

    def metric(self, outputs: pd.Series, references: pd.Series, language: str) -> float:
        """Mean Jaccard over the items with a reference (an item without an output
        scores 0)."""
        return self.metrics(outputs, references)[self.metric_name]

    def metrics(self, outputs: pd.Series, references: pd.Series) -> dict[str, float]:
        """``jaccard`` (samples), ``micro_f1``, ``macro_f1``, ``exact_match``: scikit-learn's
        on the 0/1 label indicators; NaN without references."""
        from sklearn.metrics import accuracy_score, f1_score, jaccard_score

        pred, gold, answered = self._pairs(outputs, references)
        n = len(gold)
        if n == 0:
            return dict.fromkeys(("jaccard", "micro_f1", "macro_f1", "exact_match"), np.nan)
        k = int(answered.sum())
        jac = 0.0
        if k:
            jac = jaccard_score(
                gold[answered], pred[answered], average="samples", zero_division=1.0
            ) * (k / n)
        em = accuracy_score(gold[answered], pred[answered]) * (k / n) if k else 0.0
        return {
            "jaccard": float(jac),
            "micro_f1": float(f1_score(gold, pred, average="micro", zero_division=0.0)),
            "macro_f1": float(f1_score(gold, pred, average="macro", zero_division=0.0)),
            "exact_match": float(em),
        }

    def extra_metrics(self, outputs: pd.Series, references: pd.Series) -> dict[str, float]:
        m = self.metrics(outputs, references)
        m.pop(self.metric_name)
        return m

    def scorer(self, language: str) -> Callable[[str, str], float]:
        return set_jaccard

    def output_vectors(self) -> Callable[[list[str]], np.ndarray]:
        """Outputs as 0/1 label rows: the baselines' cosine of two answers is then the
        Ochiai coefficient of the two sets (1 for the same set, 0 for disjoint ones)."""
        return lambda texts: self.indicator(list(texts)).astype(np.float64)

    # -- parsing ---------------------------------------------------------------------
    def parser(self) -> LabelParser:
        return MultiLabelParser(self)

    def parse(self, parser: LabelParser | None, text: str | None, item: ItemView) -> Parsed:
        """An LLM's answer (read by the task's own kind where ``parser`` carries it)."""
        if isinstance(parser, MultiLabelParser) and parser.kind is not self:
            return parser.kind.parse_answer(text)
        return self.parse_answer(text)

    def parse_answer(self, text: str | None) -> Parsed:
        """An LLM's answer: a JSON array of label names (the constrained form), else the
        names separated by commas, semicolons or lines. A name outside the label set, a
        duplicate or a size outside [min_labels, max_labels] is unparseable (recorded and
        paid, never trimmed)."""
        raw = (text or "").strip()
        if not raw:
            return Parsed("unparseable", None, "empty answer")
        names = self._names(raw)
        if names is None:
            return Parsed("unparseable", None, "no label list found")
        table = {lab.casefold(): lab for lab in self.labels}
        for lab in self.labels:
            table.setdefault(str(self.label_names.get(lab, lab)).casefold(), lab)
        got, unknown = [], []
        for n in names:
            key = " ".join(n.split()).casefold()
            if key in table:
                got.append(table[key])
            else:
                unknown.append(n)
        if unknown:
            return Parsed("unparseable", None, f"label(s) outside the label set: {unknown[:3]}")
        why = self.check_set(got)
        if why is not None:
            return Parsed("unparseable", None, why)
        return Parsed("ok", self.encode(got))

    @staticmethod
    def _names(raw: str) -> list[str] | None:
        s = raw.strip().strip("`")
        if s.lower().startswith("json"):
            s = s[4:].strip()
        m = re.search(r"\[.*?\]", s, re.S)
        if m:
            try:
                got = json.loads(m.group(0))
            except json.JSONDecodeError:
                got = None
            if isinstance(got, list) and all(isinstance(x, str) for x in got):
                return [x.strip() for x in got]
        m = re.match(r"(?is)\s*labels?\s*[:=-]\s*(.*)", s)
        if m:
            s = m.group(1)
        if s.lower() in ("none", "(none)", "no labels"):
            return []
        parts = [p.strip(" \t.*'\"") for p in re.split(r"[,;\n]", s)]
        parts = [p for p in parts if p]
        return parts or None

    def confidence_prediction(self, prediction: str, item: ItemView) -> str:
        try:
            labs = decode(prediction)
        except (ValueError, TypeError):
            return prediction
        names = [self.label_names.get(x, x) for x in self.labels if x in labs]
        return ", ".join(names) if names else "(no label)"

    def placeholder(self, item_id: str, gold: Any, rng: np.random.Generator) -> str:
        got = as_label_list(gold)
        if got is not None and self.check_set(got) is None:
            return self.encode(got)
        k = max(1, self.min_labels)
        pick = rng.choice(len(self.labels), size=min(k, len(self.labels)), replace=False)
        return self.encode(self.labels[int(i)] for i in pick)

    def output_name(self, output: str) -> str:
        """A set as people read it: a JSON list of its labels' names, in label order.

        >>> MultiLabel(["a", "b"], {"b": "Bee"}).output_name('["a","b"]')
        '["a","Bee"]'
        """
        try:
            labs = decode(output)
        except (ValueError, TypeError):
            return output
        names = [str(self.label_names.get(x, x)) for x in self.labels if x in labs]
        return json.dumps(names, ensure_ascii=False, separators=(",", ":"))

    def wrong_placeholder(self, truth: str, rng: np.random.Generator) -> str:
        """Another label set (``quorum plan``'s wrong answer): the truth with one drawn
        label put in or taken out, or, where that breaks ``min_labels`` / ``max_labels``,
        one of its labels exchanged for one it lacks.

        >>> k = MultiLabel(["a", "b", "c"], min_labels=1, max_labels=1)
        >>> k.wrong_placeholder('["a"]', np.random.default_rng(0)) in ('["b"]', '["c"]')
        True
        """
        try:
            have = set(decode(truth)) & set(self.labels)
        except (ValueError, TypeError):
            have = set()
        out = have ^ {self.labels[int(rng.integers(len(self.labels)))]}
        absent = [x for x in self.labels if x not in have]
        if self.check_set(list(out)) is not None and have and absent:
            gone = sorted(have)[int(rng.integers(len(have)))]
            out = (have - {gone}) | {absent[int(rng.integers(len(absent)))]}
        return self.encode(out)

    # -- prompts and options -----------------------------------------------------------
    def options(self, item: ItemView) -> list[str]:
        return self.display_labels()

    def answer_forms(self, item: ItemView) -> list[str]:
        """The label names an answer's array may hold (the JSON schema's enum)."""
        return self.display_labels()

    def answer_schema(self) -> dict[str, Any]:
        """The JSON schema of an answer: an array of distinct label names, its size in
        [min_labels, max_labels]."""
        schema: dict[str, Any] = {
            "type": "array",
            "items": {"type": "string", "enum": self.display_labels()},
            "uniqueItems": True,
            "minItems": self.min_labels,
        }
        if self.max_labels is not None:
            schema["maxItems"] = self.max_labels
        return schema

    # -- people ------------------------------------------------------------------------
    def human_options(self, item: ItemView) -> list[str]:
        return self.options(item)

    def match_human(self, raw: str, item: ItemView) -> str | None:
        """A person's answer ``a;b`` (or a JSON array) as an output; None where a name is
        outside the set or the size breaks min/max."""
        got = as_label_list(raw)
        if got is None:
            return None
        table = {lab.casefold(): lab for lab in self.labels}
        for lab in self.labels:
            table.setdefault(str(self.label_names.get(lab, lab)).casefold(), lab)
        labs = [table.get(" ".join(x.split()).casefold()) for x in got]
        if any(x is None for x in labs):
            return None
        clean = [x for x in labs if x is not None]
        return None if self.check_set(clean) is not None else self.encode(clean)

    def human_answer_help(self, item: ItemView) -> str | None:
        """What a set answer may be: label names joined by ``;`` (or a JSON list), each
        once, as many as ``min_labels`` / ``max_labels`` allow (no index: a set is named).

        >>> h = MultiLabel(["a", "b", "c"], max_labels=2).human_answer_help(ItemView("", ""))
        >>> h[:58]
        "give labels from ['a', 'b', 'c'] joined by ';' (a;b) or as"
        >>> h[58:]
        ' a JSON list, each at most once, at most 2 of them; [] for no label'
        """
        names = self.display_labels()
        sizes = []
        if self.min_labels > 0:
            sizes.append(f"at least {self.min_labels}")
        if self.max_labels is not None:
            sizes.append(f"at most {self.max_labels}")
        size = f", {' and '.join(sizes)} of them" if sizes else ""
        example = FILE_SEPARATOR.join(names[:2])
        empty = "; [] for no label" if self.min_labels == 0 else ""
        return (
            f"give labels from {names} joined by {FILE_SEPARATOR!r} ({example}) or as a JSON "
            f"list, each at most once{size}{empty}"
        )

    def labelstudio_control(self) -> str:
        """Check boxes over the task's options (``$options``), any number of them."""
        required = "true" if self.min_labels > 0 else "false"
        return (
            f'<Choices name="{self.labelstudio_name}" toName="text" choice="multiple" '
            f'required="{required}" value="$options"/>'
        )

    def labelstudio_raw(
        self, result: Mapping[str, Any], unshown: Callable[[str], str]
    ) -> tuple[bool, str | None]:
        v = result.get("value") or {}
        if result.get("from_name") == self.labelstudio_name or "choices" in v:
            ch = v.get("choices") or []
            return True, FILE_SEPARATOR.join(unshown(str(c)).strip() for c in ch)
        return False, None

    def labelstudio_value(self, raw: str, options: list[str]) -> str:
        """The chosen options (``;``-joined) as a label set: an option is known by its
        position among ``options``; an answer that is no set stays as given (unusable)."""
        parts = [p for p in raw.split(FILE_SEPARATOR) if p.strip()] if raw else []
        labs = []
        for p in parts:
            if p in options and options.index(p) < len(self.labels):
                labs.append(self.labels[options.index(p)])
            else:
                labs.append(p)
        got = self.match_human(FILE_SEPARATOR.join(labs), ItemView("", ""))
        if got is None and not parts and self.min_labels == 0:
            return "[]"
        return raw if got is None else got

    def constraint(self, mode: str, forms: list[str]) -> dict[str, Any] | None:
        """Request fields that constrain an answer to a list of distinct labels: a GBNF
        grammar of a JSON array of the label names (llama.cpp; its size bounded by
        min/max, distinctness left to the parser) or an OpenAI JSON schema (an object
        ``{"labels": [...]}`` with ``uniqueItems``)."""
        if mode == "grammar":
            # labels in the task's order, each at most once: rule l<i> is label i followed
            # by any later one (the size bounds are the parser's to check)
            n = len(forms)
            rules = []
            for i, f in enumerate(forms):
                later = " | ".join(f"l{j}" for j in range(i + 1, n))
                tail = f' ("," " "? ({later}))?' if later else ""
                rules.append(f"l{i} ::= {json.dumps(json.dumps(f))}{tail}")
            first = " | ".join(f"l{i}" for i in range(n))
            body = f"({first})" if self.min_labels >= 1 else f"({first})?"
            return {"grammar": "\n".join([f'root ::= "[" {body} "]"', *rules])}
        if mode == "json_schema":
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "labels",
                        "strict": True,
                        "schema": {
                            "type": "object",
                            "properties": {"labels": self.answer_schema()},
                            "required": ["labels"],
                            "additionalProperties": False,
                        },
                    },
                }
            }
        return None

    def labelstudio_prediction(
        self, output: str, options: list[str], shown: Callable[[str], str]
    ) -> tuple[dict[str, Any], str] | None:
        try:
            labs = decode(output)
        except (ValueError, TypeError):
            return None
        names = [shown(self.label_names.get(x, x)) for x in self.labels if x in labs]
        return {"choices": names}, "choices"

    def hf_label_column(self, values: list[str | None]) -> tuple[list[Any], Any]:
        """``Sequence(ClassLabel(labels))``: each item's label indices (an empty list for
        no label); an output that is no set of this task is an error."""
        import datasets

        index = {lab: k for k, lab in enumerate(self.labels)}
        out: list[list[int]] = []
        for v in values:
            if v is None:
                out.append([])
                continue
            try:
                labs = decode(v)
            except (ValueError, TypeError):
                raise DataValidationError(f"export: {v!r} is not a label set") from None
            bad = sorted(labs - set(index))
            if bad:
                raise DataValidationError(f"export: labels {bad} are not in task.labels")
            out.append(sorted(index[x] for x in labs))
        return out, datasets.Sequence(datasets.ClassLabel(names=list(self.labels)))

    # -- a dataset folder as it is (no task file) -----------------------------------
    @classmethod
    def recognise(cls, items: pd.DataFrame, answers: pd.DataFrame) -> bool:
        """Items with ``item_id, text`` whose ``gold`` holds lists, or answers whose
        ``output`` holds lists (parquet / JSON arrays)."""
        if not {"item_id", "text"} <= set(items.columns):
            return False

        def lists(s: pd.Series) -> bool:
            v = s.dropna()
            return len(v) > 0 and all(isinstance(x, (list, tuple, np.ndarray)) for x in v.head(50))

        if "gold" in items.columns and lists(items["gold"]):
            return True
        return "output" in answers.columns and lists(answers["output"])

    @classmethod
    def folder_task(
        cls, name: str, items: pd.DataFrame, answers: pd.DataFrame
    ) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
        """The label set = the labels of gold (else of the answers), sorted; gold and
        answers as canonical strings. An answer naming a label outside that set is
        left to the loader, which drops and counts it."""
        items = items.copy()
        pool: list[str] = []
        if "gold" in items.columns:
            for g in items["gold"]:
                got = as_label_list(g)
                if got:
                    pool.extend(got)
        if not pool and "output" in answers.columns:
            for o in answers["output"]:
                pool.extend(as_label_list(o) or [])
        labels = sorted(set(pool))
        kind = cls(labels)
        if "gold" in items.columns:
            items["gold"] = [kind.canonical(g) for g in items["gold"]]
        answers = answers.copy()
        if "output" in answers.columns:
            out = []
            for o in answers["output"]:
                got = as_label_list(o)
                if got is None:
                    out.append(None)
                elif len(set(got)) == len(got) and set(got) <= set(labels):
                    out.append(kind.encode(got))
                else:  # kept as given: the loader drops it as outside the label set
                    out.append(FILE_SEPARATOR.join(got) or "<unknown>")
            answers["output"] = out
        task: dict[str, Any] = {"name": name, "type": "multilabel", "labels": labels}
        if {"annotator", "annotator_kind"} <= set(answers.columns):  # who is a person
            kinds = answers.groupby("annotator", sort=True)["annotator_kind"].first()
            task["annotators"] = [
                {"name": str(a), "kind": "human" if str(k) == "human" else "llm"}
                for a, k in kinds.items()
            ]
        return task, items, answers

    @classmethod
    def table_values(
        cls, items: pd.DataFrame, answers: pd.DataFrame
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Label lists as JSON arrays (a CSV cell holds one string)."""

        def cell(v: Any) -> Any:
            got = as_label_list(v)
            return v if got is None else json.dumps(got, ensure_ascii=False)

        items, answers = items.copy(), answers.copy()
        if "gold" in items.columns:
            items["gold"] = [cell(v) for v in items["gold"]]
        if "output" in answers.columns:
            answers["output"] = [cell(v) for v in answers["output"]]
        return items, answers

    @classmethod
    def labels_found(cls, values: pd.Series) -> list[str]:
        """The labels named in label lists, sorted."""
        return sorted({x for v in values for x in (as_label_list(v) or []) if x})

    def check_frames(
        self, items: pd.DataFrame, annotations: pd.DataFrame
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Gold and answers as canonical strings; a gold or an answer with an unknown
        label, a duplicate or a size outside [min_labels, max_labels] is a one-line error
        (a dataset folder drops and counts such answers before, :meth:`usable_outputs`)."""
        if "gold" in items.columns:
            items = items.copy()
            ids = items["item_id"] if "item_id" in items.columns else None
            items["gold"] = self._canonical_column(items["gold"], "gold", ids)
        if "output" in annotations.columns and len(annotations):
            annotations = annotations.copy()
            annotations["output"] = self._canonical_column(annotations["output"], "answer")
        return items, annotations

    def _canonical_column(
        self, values: pd.Series, what: str, ids: pd.Series | None = None
    ) -> list[str | None]:
        """:meth:`canonical` of each value, once per distinct value; an error names the
        first item (``ids``) holding the value.

        >>> k = MultiLabel(["a", "b"], max_labels=1)
        >>> try:
        ...     k._canonical_column(pd.Series(["a", "a;b"]), "gold", pd.Series(["x", "y"]))
        ... except DataValidationError as exc:
        ...     print(str(exc)[:45])
        gold of item y: multilabel answer 'a;b': 2 la
        """
        keys = [tuple(v) if isinstance(v, (list, tuple, np.ndarray)) else v for v in values]
        names = list(ids) if ids is not None else None
        table: dict[Any, str | None] = {}
        out = []
        for n, k in enumerate(keys):
            if k not in table:
                try:
                    table[k] = self.canonical(list(k) if isinstance(k, tuple) else k)
                except DataValidationError as exc:
                    where = f"{what} of item {names[n]}" if names is not None else what
                    raise DataValidationError(f"{where}: {exc}") from None
            out.append(table[k])
        return out

    def usable_outputs(self, outputs: pd.Series) -> pd.Series:
        """Whether each recorded output is an output of this task (a canonical set)."""

        def ok(o: Any) -> bool:
            if not isinstance(o, str) or not o.startswith("["):
                return False
            try:
                return self.check_set(list(json.loads(o))) is None
            except (ValueError, TypeError):
                return False

        table = {v: ok(v) for v in pd.unique(outputs)}
        return outputs.map(table).astype(bool)


class MultiLabelParser(LabelParser):
    """The parser of a multi-label task: its kind (labels, names, min/max) travels with it,
    so an answer is read against the task's own bounds wherever it is parsed."""

    def __init__(self, kind: MultiLabel) -> None:
        super().__init__(kind.labels, kind.label_names)
        self.kind = kind

    def parse(self, raw: str | None, options: list[str] | None = None) -> Parsed:
        return self.kind.parse_answer(raw)
