"""Summarization (a free-text output per item): the embedding-centroid aggregation
(paper, sec. 3.3), the clipped cosine between two summaries, ROUGE-1.

Agreement r_t = 2 * mean pairwise cosine - 1 over the annotations' embeddings; the output
is the annotation closest to the (weighted) centroid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from quorum.metrics import rouge1
from quorum.tasks.base import ItemView, TaskKind, TaskType
from quorum.tasks.parsing import LabelParser, Parsed, parse_summary


class OutputEmbeddings:
    """Unit-norm embeddings of annotation texts, each text embedded once a run.

    ``embed`` is the source's ``embed_outputs`` (a batch of texts -> one row each).
    """

    def __init__(self, embed: Callable[[list[str]], np.ndarray]) -> None:
        self.embed = embed
        self._emb: dict[str, np.ndarray] = {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        """The rows of ``texts`` (missing ones embedded together, in first-seen order)."""
        missing = [s for s in dict.fromkeys(texts) if s not in self._emb]
        if missing:
            vecs = np.asarray(self.embed(missing), dtype=np.float64)
            for s, v in zip(missing, vecs, strict=True):
                n = np.linalg.norm(v)
                self._emb[s] = v / n if n > 0 else v
        return np.stack([self._emb[s] for s in texts])


@dataclass(frozen=True)
class CentroidSummary:
    """Embedding-centroid aggregation for summaries.

    r_t = 2 * (sum_{i != j} cos(e_i, e_j)) / (n (n - 1)) - 1, consensus if r_t >= threshold;
    the output is the summary closest to the weighted centroid (human weight w_H).
    """

    w_human: float = 10.0
    w_llm: float = 1.0
    threshold: float = 0.66

    def agreement(self, emb: np.ndarray) -> float:
        n = len(emb)
        if n < 2:
            return 1.0
        sims = emb @ emb.T
        off = (sims.sum() - np.trace(sims)) / (n * (n - 1))
        return float(2.0 * off - 1.0)

    def choose(self, emb: np.ndarray, weights: np.ndarray) -> int:
        w = np.asarray(weights, dtype=np.float64)
        c = (emb * w[:, None]).sum(axis=0) / w.sum()
        norm = np.linalg.norm(c)
        if norm > 0:
            c = c / norm
        return int(np.argmax(emb @ c))

    def consensus(self, agreement: float, n: int) -> bool:
        return n >= 2 and agreement >= self.threshold

    # -- the kind's aggregator (:class:`~quorum.tasks.base.Aggregator`) ---------------
    def vote_item(self, outputs, is_h, priority=None, embed=None) -> tuple[str | None, float]:
        """The summary nearest the weighted centroid of the embeddings, and r_t."""
        names = list(outputs)
        emb = embed([outputs[a] for a in names])
        w = np.array([self.w_human if is_h(a) else self.w_llm for a in names])
        agr = self.agreement(emb)
        return outputs[names[self.choose(emb, w)]], agr

    def agreement_item(self, outputs, is_h, embed=None) -> float:
        return self.agreement(embed(list(outputs.values())))

    def majority(self, outputs, is_h, priority=None, embed=None) -> str | None:
        """The summary nearest the unweighted centroid."""
        names = list(outputs)
        emb = embed([outputs[a] for a in names])
        return outputs[names[self.choose(emb, np.ones(len(names)))]]

    def delta(self, outputs: list[str], embed=None) -> float:
        """Delta_t = (1 - r_t) / 2, clipped to [0, 1]."""
        return float(np.clip((1.0 - self.agreement(embed(outputs))) / 2.0, 0.0, 1.0))

    def similarity(self, out: str | None, ref: str, embed=None) -> float:
        """clip(cos, 0, 1) of the embeddings; 0 without an output."""
        if out is None:
            return 0.0
        e = embed([out, ref])
        return float(np.clip(e[0] @ e[1], 0.0, 1.0))


class Summarization(TaskKind):
    """A free-text summary per item (paper: the summarization datasets).

    Outputs are texts; two outputs are as close as the clipped cosine of their embeddings;
    the summary nearest the embeddings' weighted centroid aggregates them; the metric is
    ROUGE-1 F1 against the reference.
    """

    type = TaskType.summarization
    discrete = False
    graded = True
    reference_column = "reference"
    bench_few_seeds = True
    metric_name = "rouge1"
    metric_label = "rouge1_f"
    metric_short = "R1"
    metric_title = "ROUGE-1"
    hf_task_category = "summarization"
    template_name = "summarization"
    task_verb = "summarized"
    max_tokens = 256
    labelstudio_name = "summary"
    people_vote = False
    embeds_outputs = True

    def aggregator(self, w_human: float, w_llm: float, threshold: float) -> CentroidSummary:
        return CentroidSummary(w_human, w_llm, threshold)

    def metric(self, outputs: pd.Series, references: pd.Series, language: str) -> float:
        return rouge1(outputs, references, language)

    def scorer(self, language: str) -> Callable[[str, str], float]:
        return rouge1_scorer(language)

    def parse(self, parser: LabelParser | None, text: str | None, item: ItemView) -> Parsed:
        return parse_summary(text)

    def placeholder(self, item_id: str, gold: Any, rng: np.random.Generator) -> str:
        return f"summary of item {item_id}"

    def match_human(self, raw: str, item: ItemView) -> str | None:
        """A summary: its text."""
        return raw.strip() or None

    def labelstudio_control(self) -> str:
        return (
            f'<TextArea name="{self.labelstudio_name}" toName="text" rows="5" editable="true" '
            'maxSubmissions="1" required="true" placeholder="Write the summary"/>'
        )

    def labelstudio_raw(
        self, result: Mapping[str, Any], unshown: Callable[[str], str]
    ) -> tuple[bool, str | None]:
        v = result.get("value") or {}
        if result.get("from_name") == self.labelstudio_name or "text" in v:
            text = v.get("text")
            if isinstance(text, list):
                text = "\n".join(map(str, text))
            return True, ((str(text).strip() or None) if text is not None else None)
        return False, None

    def labelstudio_prediction(
        self, output: str, options: list[str], shown: Callable[[str], str]
    ) -> tuple[dict[str, Any], str] | None:
        return {"text": [output]}, "textarea"


def rouge1_scorer(language: str = "en") -> Callable[[str, str], float]:
    """The score of a summary: ROUGE-1 F of ``output`` against ``reference``."""

    def score(output: str, reference: str) -> float:
        return rouge1(pd.Series([output]), pd.Series([reference]), language)

    return score
