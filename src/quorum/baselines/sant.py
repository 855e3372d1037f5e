"""SANT (Huang et al., EMNLP 2024): budgeted triage of items between experts and the model.

SANT has no public code. From the paper: informative items (active learning) and hard items
(error-aware triage: the estimated probability that the model mislabels the item) go to
the experts, easy ones to the model; a bi-weighting mechanism combines the two.

Here the model is the labelling LLM (cheapest by default), asked on every item, and the
experts are the human arm. Our guesses (parameters in brackets):

- rounds (``n_rounds``): a random warm start of ``init_share`` of the human budget, then
  the rest split evenly over the remaining rounds; models are refitted every round on all
  human labels so far.
- informativeness: entropy (normalised to [0, 1]) of a logistic-regression classifier
  trained on the human labels (uncertainty sampling).
- error probability: a logistic regression on the same features plus the LLM's label,
  predicting "the LLM label differs from the human label".
- bi-weighting: ``score = weight * rank(informativeness) + (1 - weight) * rank(P(error))``
  (ranks scaled to [0, 1] so the two are comparable; ``normalize="none"`` uses the raw
  values); the top-scored items of each round go to humans.
- features: ``problem.embeddings`` reduced to ``n_components`` by PCA, next to ``phi``,
  standardised.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
from scipy.stats import rankdata

from quorum.baselines._common import (
    LabelModelRouter,
    Routed,
    affordable_humans,
    human_cap,
    item_trace,
    label_frame,
    ranked,
)
from quorum.routing.core.base import RoutingProblem
from quorum.routing.core.run_core import RunCore
from quorum.routing.core.trace import DecisionTrace


def sant_features(problem: RoutingProblem, n_components: int) -> np.ndarray:
    """[PCA(embeddings), phi], standardised."""
    parts = [np.asarray(problem.phi, dtype=np.float64)]
    if problem.embeddings is not None and n_components > 0:
        e = np.asarray(problem.embeddings, dtype=np.float64)
        e = e - e.mean(0)
        nc = min(n_components, e.shape[1], max(1, e.shape[0] - 1))
        if nc < e.shape[1]:  # exact PCA through the d x d covariance (d << n)
            _, vecs = np.linalg.eigh(e.T @ e)
            e = e @ vecs[:, ::-1][:, :nc]
        parts.insert(0, e)
    x = np.hstack(parts)
    return (x - x.mean(0)) / (x.std(0) + 1e-9)


def _fit_proba(x: np.ndarray, y: np.ndarray, x_new: np.ndarray, c: float) -> np.ndarray | None:
    """Class probabilities of a logistic regression, or None if y has a single class."""
    if len(np.unique(y)) < 2:
        return None
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LogisticRegression(C=c, max_iter=200, tol=1e-3).fit(x, y)
    return m.predict_proba(x_new)


def informativeness(x_lab, y_lab, x_pool, c: float) -> np.ndarray:
    """Normalised predictive entropy of a classifier trained on the human labels."""
    p = _fit_proba(x_lab, y_lab, x_pool, c)
    if p is None:
        return np.ones(len(x_pool))
    h = -(p * np.log(np.clip(p, 1e-12, 1.0))).sum(axis=1)
    return h / np.log(p.shape[1])


def error_probability(x_lab, err_lab, x_pool, c: float) -> np.ndarray:
    """P(LLM label is wrong) from a classifier trained on human-checked items."""
    err_lab = np.asarray(err_lab, dtype=int)
    p = _fit_proba(x_lab, err_lab, x_pool, c)
    if p is None:
        rate = (err_lab.sum() + 1.0) / (len(err_lab) + 2.0)
        return np.full(len(x_pool), rate)
    return p[:, 1]


def biweight(inf: np.ndarray, perr: np.ndarray, weight: float, normalize: str) -> np.ndarray:
    if normalize == "rank":
        n = max(len(inf), 1)
        inf = rankdata(inf) / n
        perr = rankdata(perr) / n
    return weight * inf + (1.0 - weight) * perr


class SANTRouter(LabelModelRouter):
    """Send informative and error-prone items to humans, over a few rounds.

    Parameters
    ----------
    weight: weight of informativeness vs error probability (0.5).
    n_rounds: rounds, the first a random warm start (5).
    init_share: share of the human budget spent on the random warm start (0.2).
    n_components: PCA dimensions of the embeddings in the features (32).
    C: inverse L2 regularisation of both logistic regressions (1.0).
    normalize: "rank" (default) or "none" (see the module docstring).
    labeller: the model LLM (default: the cheapest).
    n_threads: BLAS threads while routing (1: fast for these small fits and reproducible).
    """

    name = "sant"
    supports_summarization = False

    def __init__(
        self,
        weight: float = 0.5,
        n_rounds: int = 5,
        init_share: float = 0.2,
        n_components: int = 32,
        C: float = 1.0,
        normalize: Literal["rank", "none"] = "rank",
        labeller: str | None = None,
        n_threads: int | None = 1,
    ) -> None:
        if not 0.0 <= weight <= 1.0 or not 0.0 <= init_share <= 1.0:
            raise ValueError("weight and init_share must be in [0, 1]")
        if n_rounds < 1 or C <= 0 or n_components < 0:
            raise ValueError("need n_rounds >= 1, C > 0 and n_components >= 0")
        if normalize not in ("rank", "none"):
            raise ValueError("normalize must be 'rank' or 'none'")
        self.weight = weight
        self.n_rounds = n_rounds
        self.init_share = init_share
        self.n_components = n_components
        self.C = C
        self.normalize = normalize
        self.labeller = labeller
        self.n_threads = n_threads

    def round_sizes(self, n_human: int) -> list[int]:
        """Humans per round: the warm start, then the rest split evenly."""
        if n_human <= 0:
            return [0] * self.n_rounds
        if self.n_rounds == 1:
            return [n_human]
        n0 = min(n_human, max(1, round(self.init_share * n_human)))
        rest = np.array_split(np.arange(n_human - n0), self.n_rounds - 1)
        return [n0] + [len(r) for r in rest]

    @staticmethod
    def _trace(
        run: RunCore, lab: str, score: np.ndarray, rnd: np.ndarray, seq: list[int]
    ) -> DecisionTrace:
        """The decisions: the items a human labelled (``seq``), round by round (``phase``
        ``round<r>``; round 0 drawn at random, later ones by ``score``, the ``priority``),
        then the items that keep the labeller's answer."""
        asked = rnd >= 0
        rows = np.concatenate([seq, np.flatnonzero(~asked)]).astype(int)
        arm = np.where(asked, run.human, lab).astype(object)
        mode = np.where(rnd == 0, "random", np.where(asked, "escalate", "keep")).astype(object)
        phase = np.array([f"round{r}" if r >= 0 else "route" for r in rnd], dtype=object)
        return item_trace(run, rows, arm, mode, phase, priority=score)

    def _route(self, run: RunCore) -> Routed:
        problem, budget, rng, rec = run.problem, run.budget, run.rng, run.rec
        ids, T, human = run.ids, run.T, run.human
        lab = self.labeller or problem.llms[0].name
        labels_list = list(problem.task.labels or [])
        li = {y: j for j, y in enumerate(labels_list)}

        order = rng.permutation(T)
        outs = rec.annotate_many([(ids[t], lab) for t in order], phase="label")
        llm = np.full(T, -1, dtype=np.int64)
        for t, o in zip(order, outs, strict=True):
            if o is not None and o.ok and o.output in li:
                llm[t] = li[o.output]
        n_human = affordable_humans(rec, human_cap(problem, budget))
        sizes = self.round_sizes(n_human)

        x = sant_features(problem, self.n_components) if n_human else None
        onehot = np.zeros((T, len(labels_list) + 1))
        onehot[np.arange(T), np.where(llm >= 0, llm, len(labels_list))] = 1.0
        asked = np.zeros(T, dtype=bool)
        y_h = np.full(T, -1, dtype=np.int64)
        score = np.full(T, np.nan)
        rnd = np.full(T, -1, dtype=np.int64)
        seq: list[int] = []  # the items a human labelled, in order
        for r, q in enumerate(sizes):
            pool = np.flatnonzero(~asked)
            q = min(q, len(pool))
            if q <= 0:
                continue
            have = np.flatnonzero(y_h >= 0)
            if r == 0 or len(have) == 0:
                pick = rng.choice(pool, size=q, replace=False)
            else:
                inf = informativeness(x[have], y_h[have], x[pool], self.C)
                xe = np.hstack([x, onehot])
                perr = error_probability(xe[have], llm[have] != y_h[have], xe[pool], self.C)
                s = biweight(inf, perr, self.weight, self.normalize)
                score[pool] = s
                pick = pool[ranked(s, rng, descending=True)[:q]]
            houts = rec.annotate_many([(ids[t], human) for t in pick], phase=f"round{r}")
            for t, o in zip(pick, houts, strict=True):
                if o is None:
                    continue
                asked[t] = True
                rnd[t] = r
                seq.append(int(t))
                if o.ok and o.output in li:
                    y_h[t] = li[o.output]

        outputs = {ids[t]: (labels_list[llm[t]] if llm[t] >= 0 else None) for t in range(T)}
        labels = label_frame(ids, rec, outputs)
        trace = self._trace(run, lab, score, rnd, seq)
        info = {
            "confidence_source": "label-based: classifiers over human labels + LLM label",
            "substitute": False,
            "labeller": lab,
            "rule": "top w*informativeness + (1-w)*P(LLM error) per round to humans",
            "round_sizes": sizes,
            "n_human_target": int(n_human),
        }
        return Routed(labels, info, trace)
