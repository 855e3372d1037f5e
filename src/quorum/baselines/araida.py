"""ARAIDA (Huang et al., ACL 2024) as a router: kNN datastore + error-aware weighting.

ARAIDA has no public code. From the paper: a model suggests a label, a kNN module over the
already-labelled items (the datastore, updated after every human label) gives ``p_kNN``,
and an error-aware weight mixes them, ``p = lam(x) p_model + (1 - lam(x)) p_kNN``, trusting
the kNN more where the model looks wrong (neighbourhood errors, local density).

Here the model is the labelling LLM (cheapest by default), asked on every item. Our
guesses (parameters in brackets):

- ``p_model``: the LLM's label with probability ``1 - e``, the rest spread over the other
  labels, where ``e`` is the LLM's error rate among the ``k`` nearest human-labelled items
  (weights ``softmax(cos / temperature)``), shrunk towards its global error rate with
  ``prior_strength`` pseudo-neighbours.
- ``lam(x) = 1 - d(x) * e(x)``, ``d`` = mean cosine similarity of the neighbours in [0, 1]:
  many close neighbours where the LLM errs -> trust the kNN.
- routing: items arrive in batches of ``batch_size`` (random order); in each batch the
  items whose kept output is least probable under ``p`` go to the human (``p[LLM label]``
  with ``machine_output="llm"``, ``max p`` with "mixture"), as many as keep the human budget on
  pace (``humans left * batch / items left``, randomised rounding): the threshold is
  chosen to fit the budget.
- ``machine_output``: "llm" (default: items not sent to humans keep the LLM label, as the
  other baselines) or "mixture" (``argmax p``, ARAIDA's corrected suggestion).

Vectors: ``problem.embeddings`` (unit norm), else the standardised ``phi``.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np

from quorum.baselines._common import (
    LabelModelRouter,
    Routed,
    affordable_humans,
    human_cap,
    item_trace,
    item_vectors,
    label_frame,
    ranked,
)
from quorum.routing.core.run_core import RunCore


class _Walk(NamedTuple):
    """What the batches left: per item the confidence ``p[kept output]`` and the mixture's
    label index; which items went to the human; the datastore; the LLM errors seen."""

    conf: np.ndarray
    mixed: np.ndarray
    to_human: np.ndarray
    store: KNNDatastore
    n_err: int
    n_seen: int


def pace_quota(humans_left: int, batch: int, items_left: int, rng: np.random.Generator) -> int:
    """Humans for this batch so that the budget is spent evenly (randomised rounding)."""
    if items_left <= 0 or humans_left <= 0:
        return 0
    x = humans_left * batch / items_left
    q = int(np.floor(x)) + int(rng.random() < x - np.floor(x))
    return int(min(q, humans_left, batch))


class KNNDatastore:
    """Growing store of human-labelled items: vectors, label index, LLM-was-wrong flag."""

    def __init__(self, dim: int, capacity: int) -> None:
        self.x = np.zeros((capacity, dim), dtype=np.float32)
        self.y = np.zeros(capacity, dtype=np.int64)
        self.err = np.zeros(capacity, dtype=np.float64)
        self.n = 0

    def add(self, x: np.ndarray, y: int, err: bool) -> None:
        self.x[self.n] = x
        self.y[self.n] = y
        self.err[self.n] = float(err)
        self.n += 1

    def search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Cosine similarities and indices of the ``k`` nearest stored items (exact)."""
        k = min(k, self.n)
        sims = q @ self.x[: self.n].T
        if k < self.n:
            idx = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        else:
            idx = np.broadcast_to(np.arange(self.n), sims.shape).copy()
        return np.take_along_axis(sims, idx, axis=1), idx


def araida_scores(
    llm: np.ndarray,
    n_labels: int,
    sims: np.ndarray | None,
    nb_y: np.ndarray | None,
    nb_err: np.ndarray | None,
    global_err: float,
    temperature: float,
    prior_strength: float,
) -> np.ndarray:
    """Mixed label distributions ``p`` (batch x n_labels) for items whose LLM label index is
    ``llm`` (-1 = no usable answer), given their neighbours in the datastore."""
    b = len(llm)
    if sims is None or sims.shape[1] == 0:
        e = np.full(b, global_err)
        p_knn = np.full((b, n_labels), 1.0 / n_labels)
        lam = np.ones(b)
    else:
        w = np.exp((sims - sims.max(axis=1, keepdims=True)) / temperature)
        w /= w.sum(axis=1, keepdims=True)
        p_knn = np.zeros((b, n_labels))
        for j in range(nb_y.shape[1]):
            p_knn[np.arange(b), nb_y[:, j]] += w[:, j]
        k = sims.shape[1]
        e_nb = (w * nb_err).sum(axis=1)
        e = (k * e_nb + prior_strength * global_err) / (k + prior_strength)
        d = np.clip(sims.mean(axis=1), 0.0, 1.0)
        lam = 1.0 - d * e
    off = e / max(n_labels - 1, 1)
    p_model = np.repeat(off[:, None], n_labels, axis=1)
    has = llm >= 0
    p_model[has, llm[has]] = 1.0 - e[has]
    p_model[~has] = 1.0 / n_labels
    return lam[:, None] * p_model + (1.0 - lam[:, None]) * p_knn


class ARAIDARouter(LabelModelRouter):
    """Escalate the items whose output is least probable under the kNN-corrected ``p``.

    Parameters
    ----------
    k: neighbours from the datastore (10).
    temperature: softmax temperature over cosine similarities (0.1).
    prior_strength: pseudo-neighbours at the LLM's global error rate (2.0).
    batch_size: items scored together between datastore updates (100).
    machine_output: "llm" or "mixture" (see the module docstring).
    labeller: the suggesting LLM (default: the cheapest).
    n_threads: BLAS threads while routing (1: fast for these small searches, reproducible).
    """

    name = "araida"
    supports_summarization = False

    def __init__(
        self,
        k: int = 10,
        temperature: float = 0.1,
        prior_strength: float = 2.0,
        batch_size: int = 100,
        machine_output: Literal["llm", "mixture"] = "llm",
        labeller: str | None = None,
        n_threads: int | None = 1,
    ) -> None:
        if k < 1 or batch_size < 1 or temperature <= 0 or prior_strength < 0:
            raise ValueError("need k >= 1, batch_size >= 1, temperature > 0, prior >= 0")
        if machine_output not in ("llm", "mixture"):
            raise ValueError("machine_output must be 'llm' or 'mixture'")
        self.k = k
        self.temperature = temperature
        self.prior_strength = prior_strength
        self.batch_size = batch_size
        self.machine_output = machine_output
        self.labeller = labeller
        self.n_threads = n_threads

    def _scores(
        self, store: KNNDatastore, x: np.ndarray, llm: np.ndarray, n_labels: int, ge: float
    ) -> np.ndarray:
        """p(y) of a batch (:func:`araida_scores`): its k nearest human labels in ``store``
        (none yet: the LLM label and the error rate ``ge`` alone)."""
        if not store.n:
            return araida_scores(
                llm, n_labels, None, None, None, ge, self.temperature, self.prior_strength
            )
        sims, idx = store.search(x, self.k)
        return araida_scores(
            llm,
            n_labels,
            sims,
            store.y[idx],
            store.err[idx],
            ge,
            self.temperature,
            self.prior_strength,
        )

    def _route(self, run: RunCore) -> Routed:
        """The labeller on every item (random order), then the batches (:meth:`_walk`)."""
        problem, rec, ids, T = run.problem, run.rec, run.ids, run.T
        lab = self.labeller or problem.llms[0].name
        labels_list = list(problem.task.labels or [])
        li = {y: j for j, y in enumerate(labels_list)}
        order = run.rng.permutation(T)
        outs = rec.annotate_many([(ids[t], lab) for t in order], phase="label")
        llm = np.full(T, -1, dtype=np.int64)
        for t, o in zip(order, outs, strict=True):
            if o is not None and o.ok and o.output in li:
                llm[t] = li[o.output]
        # every item has its LLM label now; the money left pays for humans
        h_total = affordable_humans(rec, human_cap(problem, run.budget))
        walk = self._walk(run, order, llm, li, h_total)

        kept = walk.mixed if self.machine_output == "mixture" else llm
        outputs = {ids[t]: (labels_list[kept[t]] if kept[t] >= 0 else None) for t in range(T)}
        labels = label_frame(ids, rec, outputs)
        keep = "keep" if self.machine_output == "llm" else "mixture"  # the output kept
        arm = np.where(walk.to_human, run.human, lab).astype(object)
        mode = np.where(walk.to_human, "escalate", keep).astype(object)
        trace = item_trace(run, order, arm, mode, confidence=walk.conf)
        info = {
            "confidence_source": "label-based: kNN over human labels + LLM label",
            "substitute": False,
            "labeller": lab,
            "rule": "least probable output under p per batch to humans, paced to the budget",
            "machine_output": self.machine_output,
            "n_human_target": int(h_total),
            "datastore_size": int(walk.store.n),
            "llm_error_rate_seen": (walk.n_err / walk.n_seen) if walk.n_seen else None,
        }
        return Routed(labels, info, trace)

    def _walk(
        self, run: RunCore, order: np.ndarray, llm: np.ndarray, li: dict[str, int], h_total: int
    ) -> _Walk:
        """Batches of ``batch_size`` items in ``order``: score each batch (:meth:`_scores`),
        send its least probable outputs to the human (as many as :func:`pace_quota` keeps
        on pace) and add their labels to the datastore."""
        rng, rec, ids, T, human = run.rng, run.rec, run.ids, run.T, run.human
        X = item_vectors(run.problem)
        store = KNNDatastore(X.shape[1], max(h_total, 1))
        n_err = n_seen = 0
        h_left = h_total
        conf = np.full(T, np.nan)
        mixed = np.full(T, -1, dtype=np.int64)
        to_human = np.zeros(T, dtype=bool)
        for b0 in range(0, T, self.batch_size):
            batch = order[b0 : b0 + self.batch_size]
            p = self._scores(store, X[batch], llm[batch], len(li), (n_err + 1.0) / (n_seen + 2.0))
            mixed[batch] = p.argmax(axis=1)
            if self.machine_output == "mixture":
                conf[batch] = p.max(axis=1)
            else:  # probability that the LLM label (the output kept) is right
                lb = llm[batch]
                conf[batch] = np.where(lb >= 0, p[np.arange(len(batch)), np.maximum(lb, 0)], 0.0)
            q = pace_quota(h_left, len(batch), T - b0, rng)
            if q == 0:
                continue
            pick = batch[ranked(conf[batch], rng, descending=False)[:q]]
            to_human[pick] = True
            houts = rec.annotate_many([(ids[t], human) for t in pick], phase="route")
            for t, o in zip(pick, houts, strict=True):
                if o is None:
                    continue
                h_left -= 1
                if o.ok and o.output in li:
                    wrong = llm[t] != li[o.output]
                    store.add(X[t], li[o.output], wrong)
                    n_err += int(wrong)
                    n_seen += 1
        return _Walk(conf, mixed, to_human, store, n_err, n_seen)
