"""Classification (one label from a fixed set) and its multiple-choice variant: the weighted
majority vote (paper, sec. 3.3), Delta_t, how a person's answer names a label.

Labels: weighted majority vote, human weight w_H, LLM weight w_LLM; the weighted agreement
is the winning label's share of the total weight, and consensus is reached when it is at
least the threshold. The vote works per item on a mapping ``annotator -> output`` and,
crowd-kit style, on a long ``task, worker, label`` (here ``item_id, annotator, output``)
DataFrame.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from quorum.metrics import accuracy
from quorum.tasks.base import ItemView, TaskKind, TaskType
from quorum.tasks.parsing import LabelParser, Parsed, parse_summary


@dataclass(frozen=True)
class WeightedMajorityVote:
    """Weighted majority vote with a consensus threshold.

    tie_break: "weight" keeps the tied label whose single heaviest vote came from the
    annotator listed first in ``priority`` (callers list the most trusted first, e.g. the
    human, then LLMs from the most to the least expensive); "first" keeps the label that
    was given first. Ties are not covered by the paper; this rule is ours.
    """

    w_human: float = 10.0
    w_llm: float = 1.0
    threshold: float = 0.66

    def weight(self, is_human: bool) -> float:
        return self.w_human if is_human else self.w_llm

    def vote(
        self,
        outputs: Mapping[str, str],
        is_human: Callable[[str], bool],
        priority: list[str] | Callable[[], list[str]] | None = None,
    ) -> tuple[str | None, float]:
        """Return (label, weighted agreement) for one item; (None, 0.0) when empty.

        ``priority`` may be a function giving the trust order: it is then only called
        when there is a tie to break.
        """
        if not outputs:
            return None, 0.0
        totals = self._totals(outputs, is_human)
        total = sum(totals.values())
        best = max(totals.values())
        tied = [y for y, w in totals.items() if w == best]
        if len(tied) == 1:
            label = tied[0]
        else:
            order = (priority() if callable(priority) else priority) or list(outputs)
            rank = {a: i for i, a in enumerate(order)}
            label = min(
                tied,
                key=lambda y: min(rank.get(a, len(rank)) for a, v in outputs.items() if v == y),
            )
        return label, best / total

    def _totals(self, outputs: Mapping[str, str], is_human: Callable[[str], bool]):
        """Weight of each label, added in the order of ``outputs``."""
        w_h, w_llm = self.w_human, self.w_llm
        totals: dict[str, float] = {}
        get = totals.get
        for a, y in outputs.items():
            totals[y] = get(y, 0.0) + (w_h if is_human(a) else w_llm)
        return totals

    def weighted_agreement(
        self, outputs: Mapping[str, str], is_human: Callable[[str], bool]
    ) -> float:
        """The weighted agreement of :meth:`vote` alone (the same number), which needs no
        tie-break; 0.0 when empty."""
        if not outputs:
            return 0.0
        totals = self._totals(outputs, is_human)
        return max(totals.values()) / sum(totals.values())

    def consensus(self, agreement: float, n: int) -> bool:
        """Consensus needs at least two annotations (one answer agrees with itself)."""
        return n >= 2 and agreement >= self.threshold

    def aggregate(
        self, annotations: pd.DataFrame, humans: set[str] | frozenset[str] = frozenset()
    ) -> pd.DataFrame:
        """Long ``item_id, annotator, output`` frame -> ``item_id, output, agreement``."""
        rows = []
        for item, grp in annotations.dropna(subset=["output"]).groupby("item_id", sort=False):
            outs = dict(zip(grp["annotator"], grp["output"], strict=True))
            y, agr = self.vote(outs, lambda a: a in humans)
            rows.append({"item_id": item, "output": y, "agreement": agr})
        return pd.DataFrame(rows, columns=["item_id", "output", "agreement"])

    # -- the kind's aggregator (:class:`~quorum.tasks.base.Aggregator`) ---------------
    def vote_item(self, outputs, is_h, priority, embed=None) -> tuple[str | None, float]:
        """:meth:`vote` (``embed`` is not used: labels are compared by equality)."""
        return self.vote(outputs, is_h, priority)

    def agreement_item(self, outputs, is_h, embed=None) -> float:
        return self.weighted_agreement(outputs, is_h)

    def majority(self, outputs, is_h, priority=None, embed=None) -> str | None:
        """The voted label of ``outputs`` (the weights as :meth:`vote`'s)."""
        return self.vote(outputs, is_h, priority)[0]

    def delta(self, outputs: list[str], embed=None) -> float:
        return disagreement(outputs)

    def similarity(self, out: str | None, ref: str, embed=None) -> float:
        """1(out == ref); 0 without an output.

        >>> vote = WeightedMajorityVote()
        >>> vote.similarity("pos", "pos"), vote.similarity(None, "pos")
        (1.0, 0.0)
        """
        return 0.0 if out is None else float(out == ref)


def disagreement(outputs: list[str]) -> float:
    """Delta_t = 1 - max_y count(y) / |Y_t| (unweighted, as in the paper)."""
    if not outputs:
        return 0.0
    return 1.0 - max(Counter(outputs).values()) / len(outputs)


def match_label(
    raw: str, labels: list[str], names: dict[str, str], options: list[str]
) -> str | None:
    """The label ``raw`` names exactly, or None.

    ``raw`` may be a label value, a label name, one of ``options`` (the choices shown) or
    the index of one of them. Case and surrounding white space are ignored.

    >>> match_label(" Positive ", ["0", "1"], {"0": "negative", "1": "positive"}, [])
    '1'
    >>> match_label("not positive", ["0", "1"], {"0": "negative", "1": "positive"}, []) is None
    True
    """
    key = " ".join(raw.split()).casefold()
    if not key:
        return None
    for lab in labels:
        if key == lab.casefold():
            return lab
    for lab in labels:
        if key == str(names.get(lab, lab)).casefold():
            return lab
    shown = options or [names.get(lab, lab) for lab in labels]
    for i, opt in enumerate(shown[: len(labels)]):
        if key == " ".join(str(opt).split()).casefold():
            return labels[i]
    if key.isdigit() and int(key) < min(len(shown), len(labels)):
        return labels[int(key)]
    return None


class Classification(TaskKind):
    """One label from a fixed set per item (paper: the classification datasets).

    Outputs are label values; two outputs agree when equal; the weighted majority vote
    aggregates them; the metric is accuracy.
    """

    type = TaskType.classification
    discrete = True
    graded = False
    reference_column = "gold"
    metric_name = "accuracy"
    metric_label = "accuracy"
    metric_short = "acc"
    template_name = "classification"
    task_verb = "classified"
    max_tokens = 32
    labelstudio_name = "label"
    people_vote = True
    people_choose = True
    constrained_output = True
    compiled_outputs = "labels"

    def aggregator(self, w_human: float, w_llm: float, threshold: float) -> WeightedMajorityVote:
        return WeightedMajorityVote(w_human, w_llm, threshold)

    def metric(self, outputs: pd.Series, references: pd.Series, language: str) -> float:
        return accuracy(outputs, references)

    def scorer(self, language: str) -> Callable[[str, str], float]:
        return exact_match

    def parser(self) -> LabelParser:
        return LabelParser(self.labels, self.label_names)

    def parse(self, parser: LabelParser | None, text: str | None, item: ItemView) -> Parsed:
        if parser is None:
            return parse_summary(text)
        return parser.parse(text, list(item.choices) if item.choices else None)

    def confidence_prediction(self, prediction: str, item: ItemView) -> str:
        """A label value as the option the prompt showed for it."""
        if prediction not in self.labels:
            return prediction
        opts = self.options(item)
        i = self.labels.index(prediction)
        return opts[i] if i < len(opts) else prediction

    def placeholder(self, item_id: str, gold: Any, rng: np.random.Generator) -> str:
        if isinstance(gold, str) and gold in self.labels:
            return gold
        return self.labels[int(rng.integers(len(self.labels)))]

    def options(self, item: ItemView) -> list[str]:
        return self.display_labels()

    def answer_forms(self, item: ItemView) -> list[str]:
        return [str(x) for x in self.options(item)]

    def human_options(self, item: ItemView) -> list[str]:
        return self.options(item)

    def match_human(self, raw: str, item: ItemView) -> str | None:
        return match_label(raw, self.labels, self.label_names, self.options(item))

    def labelstudio_control(self) -> str:
        return (
            f'<Choices name="{self.labelstudio_name}" toName="text" choice="single-radio" '
            'required="true" value="$options"/>'
        )

    def labelstudio_raw(
        self, result: Mapping[str, Any], unshown: Callable[[str], str]
    ) -> tuple[bool, str | None]:
        v = result.get("value") or {}
        if result.get("from_name") == self.labelstudio_name or "choices" in v:
            ch = v.get("choices") or []
            return True, (unshown(str(ch[0])).strip() if ch else None)
        return False, None

    def labelstudio_value(self, raw: str, options: list[str]) -> str:
        """A chosen option's label value (known by its position, so never ambiguous); any
        other answer as given."""
        if raw in options and options.index(raw) < len(self.labels):
            return self.labels[options.index(raw)]
        return raw

    def labelstudio_prediction(
        self, output: str, options: list[str], shown: Callable[[str], str]
    ) -> tuple[dict[str, Any], str] | None:
        """A label answer is shown as the option at its label's position."""
        i = self.labels.index(output) if output in self.labels else -1
        if not 0 <= i < len(options):
            return None
        return {"choices": [shown(options[i])]}, "choices"


class MultipleChoice(Classification):
    """Classification whose options are the item's own choices (an answer is an index)."""

    type = TaskType.multiple_choice
    template_name = "multiple_choice"
    hf_task_category = "multiple-choice"

    def options(self, item: ItemView) -> list[str]:
        if item.choices:
            return list(item.choices)
        return self.display_labels()

    def answer_forms(self, item: ItemView) -> list[str]:
        """Option indices (the choices are long texts)."""
        if item.choices:
            return [str(i) for i in range(min(len(item.choices), len(self.labels) or 10**6))]
        return super().answer_forms(item)


def exact_match(output: str, reference: str) -> float:
    """1.0 when the output is the reference, else 0.0."""
    return float(output == reference)
