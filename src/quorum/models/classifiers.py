"""Local predictors: the :class:`LocalModel` contract and the bundled zero-shot classifier.

A local model answers a batch of items at once (``predict_many``); an item is anything with
a ``text`` attribute (the live runner passes :class:`quorum.live.machines.prompts.ItemView`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from quorum.models.embedders import embed


class HasText(Protocol):
    text: str


#: what a local model returns for one text: a label/text, or (label, confidence), or a dict
#: with ``output`` and optional ``confidence``
Prediction = str | tuple[str | None, float | None] | dict[str, Any] | None


class LocalModel:
    """Base of local predictors: ``predict_many(items) -> list[Prediction]``."""

    ident: str = "local"

    def predict_many(self, items: Sequence[HasText]) -> list[Prediction]:
        raise NotImplementedError


class ZeroShotClassifier(LocalModel):
    """Cosine similarity between the text and each "name: description" label string
    (MiniLM); confidence = softmax over similarities / ``temperature``."""

    ident = "zero-shot/all-MiniLM-L6-v2"

    def __init__(
        self,
        labels: list[str],
        names: dict[str, str] | None = None,
        descriptions: dict[str, str] | None = None,
        temperature: float = 0.05,
    ) -> None:
        self.labels = list(labels)
        names = names or {}
        descriptions = descriptions or {}
        self.label_texts = []
        for lab in self.labels:
            t = names.get(lab, lab)
            if descriptions.get(lab):
                t = f"{t}: {descriptions[lab]}"
            self.label_texts.append(t)
        self.temperature = temperature
        self._label_emb: np.ndarray | None = None

    def predict_many(self, items: Sequence[HasText]) -> list[Prediction]:
        return self.predict_texts([it.text for it in items])

    def predict_texts(self, texts: Sequence[str]) -> list[Prediction]:
        """One ``{"output": label, "confidence": p}`` per text."""
        if self._label_emb is None:
            self._label_emb = embed(self.label_texts)
        sims = embed(list(texts)) @ self._label_emb.T
        z = sims / self.temperature
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        out: list[Prediction] = []
        for row in range(len(texts)):
            j = int(np.argmax(sims[row]))
            out.append({"output": self.labels[j], "confidence": float(p[row, j])})
        return out
