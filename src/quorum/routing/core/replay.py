"""Replay: an annotation source backed by recorded annotations of real models.

Calling annotator ``a`` on item ``t`` returns what ``a`` really answered (as recorded in the
dataset) and charges its price. A recorded "no answer" (an empty or unparseable prediction)
is returned as status "unparseable" and is still paid for, as it would be live.
The human arm is either the gold label (``human="gold"``, the paper's perfect human) or a
recorded human annotator (e.g. one of SentiMP's three labellers).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from quorum.data.schema import GOLD_HUMAN, Dataset
from quorum.routing.core.base import Outcome


class RecordedSource:
    def __init__(
        self,
        dataset: Dataset,
        *,
        embed_fn: Callable[[list[str]], np.ndarray] | None = None,
    ) -> None:
        self.dataset = dataset
        self.task = dataset.task
        self.embed_fn = embed_fn
        ann = dataset.annotations
        self._out: dict[tuple[str, str], str] = dict(
            zip(zip(ann["item_id"], ann["annotator"], strict=True), ann["output"], strict=True)
        )
        self._conf: dict[tuple[str, str], float] = {}
        if "confidence" in ann.columns:
            sub = ann.loc[ann["confidence"].notna()]
            self._conf = dict(
                zip(
                    zip(sub["item_id"], sub["annotator"], strict=True),
                    sub["confidence"].astype(float),
                    strict=True,
                )
            )
        items = dataset.items.set_index("item_id")
        self._gold: dict[str, str] = {}
        col = self.task.kind.reference_column
        if col in items.columns:
            self._gold = {k: v for k, v in items[col].items() if isinstance(v, str) and v != ""}
        self._prices = {a.name: a.price for a in self.task.annotators}
        self._prices[GOLD_HUMAN] = self.task.human_price
        self._conf_prices = {a.name: a.confidence_cost for a in self.task.annotators}
        self._conf_prices[GOLD_HUMAN] = 0.0
        self._emb_cache: dict[str, np.ndarray] = {}

    # -- prices ------------------------------------------------------------
    def price(self, annotator: str) -> float:
        if annotator == self.task.human:
            return self.task.human_spec.price
        return self._prices[annotator]

    def confidence_price(self, annotator: str) -> float:
        return self._conf_prices.get(annotator, 0.0)

    # -- calls -------------------------------------------------------------
    def annotate(self, item_id: str, annotator: str) -> Outcome:
        cost = self.price(annotator)
        if annotator == GOLD_HUMAN:
            out = self._gold.get(item_id)
        else:
            out = self._out.get((item_id, annotator))
        if out is None:
            return Outcome(item_id, annotator, None, cost, status="unparseable")
        return Outcome(item_id, annotator, out, cost, status="ok")

    def annotate_many(self, requests: list[tuple[str, str]]) -> list[Outcome]:
        return [self.annotate(i, a) for i, a in requests]

    def fixed_outputs(self, annotator: str, item_ids: list[str]) -> list[str | None]:
        """What :meth:`annotate` returns for ``annotator`` on each of ``item_ids`` (None:
        an unusable answer, still paid): replay answers do not depend on when they are
        asked, so the compiled routing loops read them here when they buy them
        (:mod:`quorum.routing.quorum.compiled.fixed_answers`)."""
        if annotator == GOLD_HUMAN:
            return [self._gold.get(i) for i in item_ids]
        get = self._out.get
        return [get((i, annotator)) for i in item_ids]

    def recorded_output(self, item_id: str, annotator: str) -> str | None:
        """Free look-up for evaluation (MCA, metrics); routers must not use it."""
        if annotator == GOLD_HUMAN:
            return self._gold.get(item_id)
        return self._out.get((item_id, annotator))

    def has_recorded_confidence(self, annotator: str) -> bool:
        return any(k[1] == annotator for k in self._conf)

    def confidence(self, item_id: str, annotator: str) -> Outcome:
        c = self._conf.get((item_id, annotator))
        if c is None:
            return Outcome(item_id, annotator, None, 0.0, status="failed")
        return Outcome(
            item_id, annotator, None, self.confidence_price(annotator), "ok", confidence=c
        )

    def embed_outputs(self, texts: list[str]) -> np.ndarray:
        if self.embed_fn is None:
            raise RuntimeError("this source has no embedder; pass embed_fn= for summaries")
        missing = [t for t in dict.fromkeys(texts) if t not in self._emb_cache]
        if missing:
            vecs = np.asarray(self.embed_fn(missing), dtype=np.float32)
            for t, v in zip(missing, vecs, strict=True):
                self._emb_cache[t] = v
        return np.stack([self._emb_cache[t] for t in texts])
