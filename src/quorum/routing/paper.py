"""QUORUM as the authors' code runs it (``--method quorum-paper``).

A re-implementation of what the public code of the paper does (amazon-science/QUORUM:
``main.py`` builds the features, ``routers/QUORUM_router.py`` routes), read rule by rule;
no text of that code is used. Where the code and the paper's text disagree this preset
follows the code; where the code has a bug it follows the paper's intent. Every such
place is listed in docs/paper-preset.md. Our default router (:mod:`quorum.routing.quorum`)
is a different, documented design; nothing here changes it.

Features: the 6 linguistic features min-max scaled with one min and max over the whole
block, one density feature ``1 - minmax(1 / (mean kNN cosine distance + 1e-6))``, then
every column z-scored (std + 1e-8). Context ``x_t = [base(d_t), b_t, p_t, m_t]`` with
p_t = t / (T - 1) for the item's index t, no bias term.

Dollars: (1) calibration on the items of highest Mahalanobis uncertainty (covariance +
1e-6 I): each gets a human label, which is its output, and every LLM's answer, used once
to update the LLM posteriors (N(0, I) priors, sigma^2 = 0.5; they are never updated
again). (2) Routing, in item order: the arms priced at most (money left / items left),
or the cheapest LLM alone, or stop when it is unaffordable; then escalate to the human
when it is among those arms and the best clipped q = mu^T x is below tau_H, else explore
an LLM with probability 0.1 / (1 + 0.005 t), else take the best LLM (ties: the dearest).
(3) While the cheapest arm is affordable: the item of highest priority
D0_t + U_t + 2 Delta_t + 0.5 1(no human) gets one more annotation by the same rule.
(4) Weighted majority vote (human 10, LLM 1; consensus at 0.6).

Auditor: a random calibration slice of max(5, int(0.15 B)) items gets human labels;
the other human labels go to the items nearest (Euclidean, base features) the centroid
of the cheapest LLM's calibration errors; the cheapest LLM labels the rest.

Accounting. This preset pays for everything it uses: the LLM answers on calibration
items are bought (so calibration buys ``int(0.8 B / (c_H + sum c_a))`` items, the same
share of the money as the code's ``int(0.8 int(B / c_H))`` human labels), and items the
money does not reach stay unlabelled (output None, scored wrong; the code without
``--backup`` gives them a certainly wrong label). ``authors_accounting=True`` (method
``quorum-paper-authors-accounting``) reproduces the code's accounting instead: those
calibration answers are free, and every unlabelled item gets the cheapest LLM's answer
for free (``--backup``). Free calls are recorded with phase ``unpaid-calibration`` /
``unpaid-backup`` and reported in ``info["unpaid_cost"]``; ``cost`` is what the code
counts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from quorum.data.schema import TaskType
from quorum.features.linguistic import LINGUISTIC_FEATURES
from quorum.routing.aggregation import CentroidSummary, WeightedMajorityVote, disagreement
from quorum.routing.auditing import calibration_error_mask, error_order
from quorum.routing.base import AnnotationSource, Router, RoutingProblem, RoutingResult
from quorum.routing.budget import Budget
from quorum.routing.outputs import LABEL_COLUMNS
from quorum.routing.policy import decayed_epsilon
from quorum.routing.posterior import BayesianLinearPosterior
from quorum.routing.recorder import CallRecorder

__all__ = [
    "AuthorsAccountingPaperQuorumRouter",
    "PaperQuorumRouter",
    "auditor_calibration_size",
    "paper_base_features",
    "paper_calibration_size",
    "paper_select",
    "paper_uncertainty",
    "per_step_arms",
    "refinement_order",
]

#: tolerance of money comparisons (the code compares floats directly)
_TOL = 1e-9
#: a budget no free call can exhaust (authors' accounting)
_UNMETERED = 1e12


# ---------------------------------------------------------------------------- pure rules
def _global_minmax(a: np.ndarray) -> np.ndarray:
    """(a - min) / (max - min) with ONE min and max over the whole array (0 if constant)."""
    lo, hi = float(np.min(a)), float(np.max(a))
    if not hi > lo:
        return np.zeros_like(a, dtype=np.float64)
    return (a - lo) / (hi - lo)


def paper_base_features(raw: np.ndarray, n_linguistic: int = 6) -> np.ndarray:
    """The code's item features: (T, n_linguistic + 1), every column z-scored.

    ``raw`` holds the linguistic features (first ``n_linguistic`` columns, NaN read as 0)
    and the cosine distances to the k nearest other items (the other columns). The
    linguistic block is min-max scaled with one min and max over the whole block; the
    distances become one density feature 1 - minmax(1 / (mean distance + 1e-6)); then
    each column is z-scored with std + 1e-8.

    Examples
    --------
    >>> import numpy as np
    >>> raw = np.array([[4.0, 0.5, 0.1, 0.2], [5.0, 0.7, 0.1, 0.3], [6.0, 0.6, 0.9, 0.8]])
    >>> X = paper_base_features(raw, n_linguistic=2)
    >>> X.shape, np.allclose(X.mean(axis=0), 0.0)
    ((3, 3), True)
    >>> int(np.argmax(X[:, 2]))  # the most isolated item has the highest density feature
    2
    """
    raw = np.asarray(raw, dtype=np.float64)
    if raw.ndim != 2 or raw.shape[1] < n_linguistic:
        raise ValueError(f"raw must be (T, >= {n_linguistic}), got {raw.shape}")
    ling = np.nan_to_num(raw[:, :n_linguistic], nan=0.0, posinf=0.0, neginf=0.0)
    cols = [_global_minmax(ling)] if n_linguistic else []
    dist = raw[:, n_linguistic:]
    if dist.shape[1]:
        mean_d = np.nan_to_num(dist, nan=1.0).mean(axis=1)
        density = 1.0 / (mean_d + 1e-6)
        cols.append((1.0 - _global_minmax(density))[:, None])
    X = np.hstack(cols) if cols else np.zeros((len(raw), 0))
    return (X - X.mean(axis=0)) / (X.std(axis=0) + 1e-8)


def paper_uncertainty(base: np.ndarray) -> np.ndarray:
    """Mahalanobis distance to the mean, covariance + 1e-6 I inverted (the code's u_t).

    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [1.0, 0.1], [2.0, 0.2], [3.0, 0.3], [1.0, 2.0]])
    >>> int(np.argmax(paper_uncertainty(X)))
    4
    """
    X = np.asarray(base, dtype=np.float64)
    if len(X) < 2 or X.shape[1] == 0:
        return np.zeros(len(X))
    cov = np.atleast_2d(np.cov(X, rowvar=False))
    inv = np.linalg.inv(cov + 1e-6 * np.eye(cov.shape[0]))
    d = X - X.mean(axis=0)
    return np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", d, inv, d), 0.0))


def paper_calibration_size(
    money: float,
    c_h: float,
    share: float = 0.8,
    per_item_cost: float | None = None,
    n_items: int | None = None,
) -> int:
    """Dollars calibration size.

    The code: max(1, int(share * int(B / c_H))) human labels, the LLM answers free
    (``per_item_cost=None``). Paid (``per_item_cost = c_H + sum c_a``): the same share of
    the money, max(1, int(share * B / per_item_cost)) items, never more than B affords.
    At most ``n_items``.

    >>> paper_calibration_size(45.0, 0.1)  # int(0.8 * 450)
    360
    >>> paper_calibration_size(45.0, 0.1, per_item_cost=0.19)  # int(0.8 * 45 / 0.19)
    189
    """
    if per_item_cost is None:
        n = max(1, int(share * int(money / c_h + _TOL)))
    else:
        if per_item_cost > money + _TOL:
            return 0
        n = max(1, int(share * money / per_item_cost + _TOL))
        n = min(n, int(money / per_item_cost + _TOL))
    return n if n_items is None else min(n, n_items)


def auditor_calibration_size(human_budget: int, share: float = 0.15, minimum: int = 5) -> int:
    """Auditor calibration slice: max(minimum, int(share * B)), at most B.

    (The code does not cap it; with B < 5 its slice of the remaining items goes negative.)

    >>> auditor_calibration_size(450), auditor_calibration_size(20), auditor_calibration_size(3)
    (67, 5, 3)
    """
    return max(0, min(max(minimum, int(share * human_budget)), human_budget))


def per_step_arms(
    remaining: float, steps_left: int, prices: np.ndarray, cheapest: int
) -> list[int] | None:
    """Arms phase 2 may use for one item (the code's per-step spending rule).

    ``prices`` lists every arm (the human included); arms priced at most
    remaining / steps_left qualify; if none does, the ``cheapest`` LLM alone while it is
    affordable; None (stop routing) when even that is not.

    >>> import numpy as np
    >>> prices = np.array([0.01, 0.03, 0.05, 0.1])  # three LLMs and the human
    >>> per_step_arms(5.0, 50, prices, 0), per_step_arms(1.0, 50, prices, 0)
    ([0, 1, 2, 3], [0])
    >>> per_step_arms(0.3, 50, prices, 0), per_step_arms(0.005, 50, prices, 0)
    ([0], None)
    """
    per_step = remaining / max(int(steps_left), 1)
    avail = [a for a, c in enumerate(np.asarray(prices)) if c <= per_step + _TOL]
    if avail:
        return avail
    if remaining + _TOL < float(prices[cheapest]):
        return None
    return [int(cheapest)]


def paper_select(
    q: np.ndarray,
    *,
    human_ok: bool,
    epsilon: float,
    tau_h: float,
    rng: np.random.Generator,
) -> tuple[int | None, str]:
    """The code's arm choice among available LLMs (``q`` clipped to [0, 1], in arm order).

    Escalation comes first: the human when it is available and the best q is below
    tau_H; then exploration with probability ``epsilon``; else the best LLM (ties: the
    first in arm order). No LLM available: the human if available, else nobody.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> paper_select(np.array([0.4, 0.3]), human_ok=True, epsilon=1.0, tau_h=0.5, rng=rng)
    (None, 'escalate')
    >>> paper_select(np.array([1.0, 1.0]), human_ok=True, epsilon=0.0, tau_h=0.5, rng=rng)
    (0, 'exploit')
    """
    q = np.asarray(q, dtype=np.float64)
    if len(q) == 0:
        return (None, "escalate") if human_ok else (None, "none")
    best = int(np.argmax(q))
    if human_ok and float(q[best]) < tau_h:
        return None, "escalate"
    if rng.random() < epsilon:
        return int(rng.integers(len(q))), "explore"
    return best, "exploit"


def refinement_order(
    d0: np.ndarray,
    uncertainty: np.ndarray,
    disagreement: np.ndarray,
    has_human: np.ndarray,
    n_valid: np.ndarray,
    consensus: np.ndarray,
    *,
    max_annotations: int = 3,
    disagreement_weight: float = 2.0,
    no_human_bonus: float = 0.5,
) -> np.ndarray:
    """Items in the code's refinement priority order (highest first, ties by index).

    Eligible: fewer than ``max_annotations`` usable annotations and not (consensus with
    at least 2). Score D0_t + U_t + 2 Delta_t + 0.5 1(no human); items with no usable
    annotation come first (score +inf).

    >>> import numpy as np
    >>> refinement_order(np.zeros(4), np.array([0.1, 0.2, 0.3, 0.0]), np.array([0, 0, 0, .5]),
    ...                  np.array([True, False, True, False]), np.array([1, 1, 3, 2]),
    ...                  np.array([True, True, False, False])).tolist()
    [3, 1, 0]
    """
    n_valid = np.asarray(n_valid)
    has_human = np.asarray(has_human, dtype=bool)
    eligible = (n_valid < max_annotations) & ~(np.asarray(consensus, dtype=bool) & (n_valid >= 2))
    score = (
        np.asarray(d0, dtype=np.float64)
        + np.asarray(uncertainty, dtype=np.float64)
        + disagreement_weight * np.asarray(disagreement, dtype=np.float64)
        + no_human_bonus * (~has_human)
    )
    score = np.where(n_valid == 0, np.inf, score)
    idx = np.flatnonzero(eligible)
    return idx[np.argsort(-score[idx], kind="stable")]


# ---------------------------------------------------------------------------- router
class PaperQuorumRouter(Router):
    """QUORUM as the authors' code runs it; see the module docstring and docs/paper-preset.md.

    Parameters (the code's values; "kw" = a keyword its router reads, "fixed" = a
    constant in its code)
    ----------
    authors_accounting : False (ours): pay for everything used, leave unreached items
        unlabelled. True: the code's accounting (free calibration LLM answers, free
        cheapest-LLM labels for unreached items), flagged in ``info["accounting"]``.
    epsilon0, gamma : exploration epsilon_t = epsilon0 / (1 + gamma t), t the item index
        (kw ``epsilon_start`` 0.1, ``epsilon_decay`` 0.005).
    tau_h : escalation threshold (kw ``human_threshold`` 0.5).
    noise_var : reward noise sigma^2 (kw ``noise_var`` 0.5).
    prior_var_llm : LLM prior N(0, prior_var_llm I) (fixed 1).
    calibration_share : dollars calibration share of the affordable human labels (fixed
        0.8).
    auditor_calibration_share, auditor_min_calibration : auditor slice max(5, 0.15 B).
    max_annotations : annotations per item in refinement (kw ``max_annotations`` 3).
    consensus_threshold : weighted agreement that settles an item (kw
        ``agreement_threshold`` 0.6).
    w_human, w_llm : vote weights (fixed 10, 1).
    disagreement_weight, no_human_bonus : refinement priority weights (fixed 2.0, 0.5).
    summary_error_quantile : auditor, summaries: a calibration summary counts as an error
        below this quantile of the similarities (ours; None = the code's exact mismatch,
        which makes every summary an error).
    """

    name = "quorum-paper"
    supports_summarization = True

    def __init__(
        self,
        authors_accounting: bool = False,
        epsilon0: float = 0.1,
        gamma: float = 0.005,
        tau_h: float = 0.5,
        noise_var: float = 0.5,
        prior_var_llm: float = 1.0,
        calibration_share: float = 0.8,
        auditor_calibration_share: float = 0.15,
        auditor_min_calibration: int = 5,
        max_annotations: int = 3,
        consensus_threshold: float = 0.6,
        w_human: float = 10.0,
        w_llm: float = 1.0,
        disagreement_weight: float = 2.0,
        no_human_bonus: float = 0.5,
        summary_error_quantile: float | None = 0.5,
    ) -> None:
        self.authors_accounting = authors_accounting
        self.epsilon0 = epsilon0
        self.gamma = gamma
        self.tau_h = tau_h
        self.noise_var = noise_var
        self.prior_var_llm = prior_var_llm
        self.calibration_share = calibration_share
        self.auditor_calibration_share = auditor_calibration_share
        self.auditor_min_calibration = auditor_min_calibration
        self.max_annotations = max_annotations
        self.consensus_threshold = consensus_threshold
        self.w_human = w_human
        self.w_llm = w_llm
        self.disagreement_weight = disagreement_weight
        self.no_human_bonus = no_human_bonus
        self.summary_error_quantile = summary_error_quantile
        self._validate()

    def _validate(self) -> None:
        if not 0.0 <= self.epsilon0 <= 1.0 or self.gamma < 0:
            raise ValueError("need 0 <= epsilon0 <= 1 and gamma >= 0")
        if self.noise_var <= 0 or self.prior_var_llm <= 0:
            raise ValueError("noise_var and prior_var_llm must be > 0")
        if not 0.0 <= self.calibration_share <= 1.0:
            raise ValueError("calibration_share must be in [0, 1]")
        if not 0.0 <= self.auditor_calibration_share <= 1.0 or self.auditor_min_calibration < 0:
            raise ValueError("auditor_calibration_share in [0, 1], auditor_min_calibration >= 0")
        if self.max_annotations < 1:
            raise ValueError("max_annotations must be >= 1")
        if self.w_human <= 0 or self.w_llm <= 0:
            raise ValueError("vote weights must be > 0")
        q = self.summary_error_quantile
        if q is not None and not 0.0 <= q <= 1.0:
            raise ValueError("summary_error_quantile must be in [0, 1] or None")

    @property
    def method_name(self) -> str:
        """``quorum-paper``, or ``quorum-paper-authors-accounting`` with the code's accounting."""
        return "quorum-paper-authors-accounting" if self.authors_accounting else "quorum-paper"

    def route(
        self, problem: RoutingProblem, source: AnnotationSource, budget: Budget, seed: int = 0
    ) -> RoutingResult:
        self._validate()
        if not problem.llms:
            raise ValueError("QUORUM needs at least one machine annotator (LLM or model)")
        run = _PaperRun(self, problem, source, budget, seed)
        if problem.setting == "auditor":
            run.auditor()
        else:
            run.dollars()
        return run.result()


class AuthorsAccountingPaperQuorumRouter(PaperQuorumRouter):
    """:class:`PaperQuorumRouter` with the authors' accounting (free calibration answers and
    free cheapest-LLM labels for items the money did not reach); flagged in every result."""

    name = "quorum-paper-authors-accounting"

    def __init__(self, authors_accounting: bool = True, **params) -> None:
        super().__init__(authors_accounting=authors_accounting, **params)


def _base_from_problem(problem: RoutingProblem) -> tuple[np.ndarray, str]:
    """The code's base features for ``problem`` and where they came from."""
    names = list(problem.feature_names or [])
    n_ling = len(LINGUISTIC_FEATURES)
    standard = tuple(names[:n_ling]) == LINGUISTIC_FEATURES and all(
        n.startswith("knn_dist") for n in names[n_ling:]
    )
    raw = problem.raw_features
    if raw is not None and standard:
        return paper_base_features(raw, n_ling), "raw linguistic + kNN distances"
    if standard:
        return (
            paper_base_features(problem.phi, n_ling),
            "phi (percentile-scaled: no raw features given)",
        )
    src = problem.phi if raw is None else raw
    return paper_base_features(src, src.shape[1]), "other features: all columns as one block"


class _PaperRun:
    """State of one run (the estimator keeps only its parameters)."""

    def __init__(
        self,
        cfg: PaperQuorumRouter,
        problem: RoutingProblem,
        source: AnnotationSource,
        budget: Budget,
        seed: int,
    ) -> None:
        self.cfg = cfg
        self.p = problem
        self.source = source
        self.budget = budget
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.rec = CallRecorder(problem.task, source, budget)
        self.free = (
            CallRecorder(problem.task, source, Budget(_UNMETERED))
            if cfg.authors_accounting
            else None
        )
        self.summ = problem.task.type is TaskType.summarization
        self.ids = problem.item_ids
        self.T = len(self.ids)
        self.llm_names = [a.name for a in problem.llms]  # cheapest first
        self.K = len(self.llm_names)
        self.human = problem.task.human
        self.c = np.array([self.rec.price(a) for a in self.llm_names], dtype=np.float64)
        self.c_h = float(self.rec.price(self.human))
        self.cheapest = int(np.argmin(self.c))
        # the code's arm order (claude, nova_pro, qwen at 0.05, 0.03, 0.01): dearest first
        self.arm_order = sorted(range(self.K), key=lambda k: -self.c[k])
        self.base, feature_source = _base_from_problem(problem)
        self.progress = np.arange(self.T) / max(self.T - 1, 1)
        self.dim = self.base.shape[1] + 2 + self.K
        self.post = [
            BayesianLinearPosterior(self.dim, 0.0, cfg.prior_var_llm, cfg.noise_var)
            for _ in range(self.K)
        ]
        self.mask = np.zeros((self.T, self.K))
        #: the code's per-item annotation list: (annotator, output or None), in order
        self.votes: list[list[tuple[str, str | None]]] = [[] for _ in range(self.T)]
        self.n_valid = np.zeros(self.T, dtype=int)
        self.has_human = np.zeros(self.T, dtype=bool)
        self.consensus = np.zeros(self.T, dtype=bool)
        self.dis = np.zeros(self.T)
        if self.summ:
            self.agg = CentroidSummary(cfg.w_human, cfg.w_llm, cfg.consensus_threshold)
        else:
            self.agg = WeightedMajorityVote(cfg.w_human, cfg.w_llm, cfg.consensus_threshold)
        self._emb: dict[str, np.ndarray] = {}
        self.trace: list[dict] = []
        self.step = 0
        self.info: dict = {
            "accounting": "authors" if cfg.authors_accounting else "paid",
            "feature_source": feature_source,
            "unpaid_cost": 0.0,
            "unpaid_calls": 0,
        }

    # ------------------------------------------------------------ helpers
    def context(self, t: int, b: float | None = None) -> np.ndarray:
        """x_t = [base(d_t), b_t, p_t, m_t]; b_t is the money left / B unless given."""
        b = self.budget.remaining_fraction if b is None else b
        return np.concatenate([self.base[t], [b, self.progress[t]], self.mask[t]])

    def contexts(self, idx: np.ndarray, b: float) -> np.ndarray:
        n = len(idx)
        return np.hstack(
            [self.base[idx], np.full((n, 1), b), self.progress[idx, None], self.mask[idx]]
        )

    def qualities(self, x: np.ndarray) -> np.ndarray:
        """clip(mu_a^T x, 0, 1) for every LLM (our order)."""
        return np.clip([post.pull(x) for post in self.post], 0.0, 1.0)

    def mean_variance(self, X: np.ndarray) -> np.ndarray:
        """(1/K) sum_a x^T Sigma_a x for the rows of X."""
        return np.mean([post.variance(X) for post in self.post], axis=0)

    def epsilon(self, t: int) -> float:
        return decayed_epsilon(t, self.cfg.epsilon0, self.cfg.gamma)

    def _embed(self, texts: list[str]) -> np.ndarray:
        missing = [s for s in dict.fromkeys(texts) if s not in self._emb]
        if missing:
            vecs = np.asarray(self.source.embed_outputs(missing), dtype=np.float64)
            for s, v in zip(missing, vecs, strict=True):
                n = np.linalg.norm(v)
                self._emb[s] = v / n if n > 0 else v
        return np.stack([self._emb[s] for s in texts])

    def similarity(self, out: str | None, ref: str) -> float:
        """1(out == ref) for labels; clip(cos, 0, 1) of the embeddings for summaries."""
        if out is None:
            return 0.0
        if not self.summ:
            return float(out == ref)
        e = self._embed([out, ref])
        return float(np.clip(e[0] @ e[1], 0.0, 1.0))

    def _log(self, t: int, phase: str, arm: str, mode: str, x=None, priority=None) -> None:
        self.step += 1
        row = {
            "step": self.step,
            "phase": phase,
            "item_id": self.ids[t],
            "arm": arm,
            "mode": mode,
            "epsilon": self.epsilon(t),
            "b_t": float(x[self.base.shape[1]]) if x is not None else np.nan,
            "p_t": float(self.progress[t]),
            "price": self.c_h if arm == self.human else self.rec.price(arm),
            "budget_left": self.budget.remaining,
            "priority": priority,
        }
        if x is not None:
            for a, v in zip(self.llm_names, self.qualities(x), strict=True):
                row[f"q:{a}"] = float(v)
        self.trace.append(row)

    @staticmethod
    def _out(outcome) -> str | None:
        return outcome.output if outcome is not None and outcome.ok else None

    def buy(self, t: int, arm: str, phase: str) -> str | None:
        return self._out(self.rec.annotate(self.ids[t], arm, phase=phase))

    def get_free(self, requests: list[tuple[int, str]], phase: str) -> list[str | None]:
        """Calls the authors' code makes without paying (authors' accounting only)."""
        assert self.free is not None
        outs = self.free.annotate_many([(self.ids[t], a) for t, a in requests], phase=phase)
        self.info["unpaid_calls"] += len(requests)
        self.info["unpaid_cost"] = round(self.free.budget.spent, 9)
        return [self._out(o) for o in outs]

    def add_vote(self, t: int, arm: str, out: str | None) -> None:
        """Append an annotation to item t and refresh its consensus and disagreement."""
        self.votes[t].append((arm, out))
        if arm == self.human:
            self.has_human[t] = True
        valid = [(a, o) for a, o in self.votes[t] if o is not None]
        self.n_valid[t] = len(valid)
        if len(valid) < 2:
            self.consensus[t] = len(valid) == 1
            self.dis[t] = 0.0
            return
        if self.summ:
            emb = self._embed([o for _, o in valid])
            n = len(valid)
            sims = emb @ emb.T
            avg = (sims.sum() - np.trace(sims)) / (n * (n - 1))
            self.consensus[t] = bool(avg >= self.cfg.consensus_threshold)
            self.dis[t] = 0.0  # the code computes Delta_t for labels only
        else:
            _y, agr = self.agg.vote(dict(valid), lambda a: a == self.human)
            self.consensus[t] = bool(agr >= self.cfg.consensus_threshold)
            self.dis[t] = disagreement([o for _, o in valid])

    # ------------------------------------------------------------ dollars
    def dollars(self) -> None:
        cfg, T = self.cfg, self.T
        B = self.budget.limit
        if B <= 0 or self.c.min() > B + _TOL:
            self.info["note"] = "budget below one annotation: nothing was annotated"
            self.info["n_calibration"] = 0
            return
        # D0_t: the prior's x^T Sigma x at b = 1, before any spending (the code's difficulty)
        X0 = self.contexts(np.arange(T), 1.0)
        self.d0 = self.mean_variance(X0)
        self._calibrate()
        self._route()
        if cfg.max_annotations > 1:
            self._refine()

    def _calibrate(self) -> None:
        cfg = self.cfg
        per_item = None if cfg.authors_accounting else self.c_h + float(self.c.sum())
        n_cal = paper_calibration_size(
            self.budget.limit, self.c_h, cfg.calibration_share, per_item, self.T
        )
        order = np.argsort(-paper_uncertainty(self.base), kind="stable")[:n_cal]
        done = 0
        for t in order:
            t = int(t)
            need = self.c_h + (0.0 if cfg.authors_accounting else float(self.c.sum()))
            if not self.budget.can_afford(need - _TOL, human=True):
                break
            reqs = [(self.ids[t], self.human)]
            if not cfg.authors_accounting:
                reqs += [(self.ids[t], a) for a in self.llm_names]
            outs = [self._out(o) for o in self.rec.annotate_many(reqs, phase="calibration")]
            y = outs[0]
            answers = (
                self.get_free([(t, a) for a in self.llm_names], "unpaid-calibration")
                if cfg.authors_accounting
                else outs[1:]
            )
            self.add_vote(t, self.human, y)
            x = self.context(t)
            self._log(t, "calibration", self.human, "calibration", x)
            done += 1
            if y is None:
                continue
            for k in range(self.K):
                self.post[k].update(x, self.similarity(answers[k], y))
        self.info["n_calibration"] = done

    def _choose(self, t: int, llms: list[int], human_ok: bool) -> tuple[str, str, np.ndarray]:
        x = self.context(t)
        q = self.qualities(x)
        cand = [k for k in self.arm_order if k in llms]
        choice, mode = paper_select(
            q[cand], human_ok=human_ok, epsilon=self.epsilon(t), tau_h=self.cfg.tau_h, rng=self.rng
        )
        if choice is None:
            return (self.human if mode != "none" else "-"), mode, x
        return self.llm_names[cand[choice]], mode, x

    def _route(self) -> None:
        uncovered = [t for t in range(self.T) if not self.votes[t]]
        n = len(uncovered)
        prices = np.append(self.c, self.c_h)
        routed = 0
        for j, t in enumerate(uncovered):
            avail = per_step_arms(self.budget.remaining, n - j, prices, self.cheapest)
            if avail is None:
                break
            human_ok = self.K in avail and self.budget.can_afford(self.c_h, human=True)
            # the rule compares prices with a float tolerance; the budget is exact (nano-units)
            llms = [k for k in avail if k < self.K and self.budget.can_afford(self.c[k])]
            if not llms and not human_ok:
                break
            arm, mode, x = self._choose(t, llms, human_ok)
            if arm == "-":
                break
            self._log(t, "route", arm, mode, x)
            out = self.buy(t, arm, "route")
            if arm != self.human:
                self.mask[t, self.llm_names.index(arm)] = 1.0
            self.add_vote(t, arm, out)
            routed += 1
        self.info["routed"] = routed
        self.info["not_reached"] = n - routed

    def _refine(self) -> None:
        cfg = self.cfg
        min_cost = float(min(self.c.min(), self.c_h))
        picks = 0
        while self.budget.can_afford(min_cost):
            cand = np.flatnonzero(
                (self.n_valid < cfg.max_annotations) & ~(self.consensus & (self.n_valid >= 2))
            )
            if len(cand) == 0:
                break
            unc = np.zeros(self.T)
            unc[cand] = self.mean_variance(self.contexts(cand, self.budget.remaining_fraction))
            order = refinement_order(
                self.d0,
                unc,
                self.dis,
                self.has_human,
                self.n_valid,
                self.consensus,
                max_annotations=cfg.max_annotations,
                disagreement_weight=cfg.disagreement_weight,
                no_human_bonus=cfg.no_human_bonus,
            )
            if len(order) == 0:
                break
            t = int(order[0])
            voted = {a for a, _ in self.votes[t]}
            llms = [
                k
                for k in range(self.K)
                if self.llm_names[k] not in voted and self.budget.can_afford(self.c[k])
            ]
            # ours (bug fix): never buy the same human label twice
            human_ok = self.human not in voted and self.budget.can_afford(self.c_h, human=True)
            if not llms and not human_ok:
                break
            prio = float(self.d0[t] + unc[t])
            arm, mode, x = self._choose(t, llms, human_ok)
            if arm == "-":
                break
            held = self.rec.by_item.get(self.ids[t], {}).get(arm)
            if held is not None and arm != self.human:
                # paid: a calibration answer already bought is used, not bought again
                out = self._out(held)
                self._log(t, "extra", arm, "held", x, prio)
            else:
                self._log(t, "extra", arm, mode, x, prio)
                out = self.buy(t, arm, "extra")
            if arm != self.human:
                self.mask[t, self.llm_names.index(arm)] = 1.0
            self.add_vote(t, arm, out)
            picks += 1
        self.info["refinement_picks"] = picks

    # ------------------------------------------------------------ auditor
    def auditor(self) -> None:
        cfg, T = self.cfg, self.T
        B = int(min(self.p.human_budget or 0, T))
        cheap = self.llm_names[self.cheapest]
        n_cal = auditor_calibration_size(
            B, cfg.auditor_calibration_share, cfg.auditor_min_calibration
        )
        cal = np.sort(self.rng.choice(T, size=n_cal, replace=False)) if n_cal else np.array([], int)
        reqs = [(self.ids[t], self.human) for t in cal]
        if not cfg.authors_accounting:
            reqs += [(self.ids[t], cheap) for t in cal]
        outs = [self._out(o) for o in self.rec.annotate_many(reqs, phase="calibration")]
        human_out = outs[:n_cal]
        if cfg.authors_accounting:
            cheap_out = self.get_free([(int(t), cheap) for t in cal], "unpaid-calibration")
        else:
            cheap_out = outs[n_cal:]
        for t, y in zip(cal, human_out, strict=True):
            self.add_vote(int(t), self.human, y)
            self._log(int(t), "calibration", self.human, "calibration")
        judged = [(int(t), o, y) for t, o, y in zip(cal, cheap_out, human_out, strict=True) if y]
        sims = np.array([self.similarity(o, y) for _, o, y in judged])
        if self.summ and cfg.summary_error_quantile is not None:
            wrong = calibration_error_mask(sims, True, cfg.summary_error_quantile)
        else:
            wrong = sims < 1.0
        judged_idx = np.array([t for t, _, _ in judged], dtype=int)
        self.info["n_calibration"] = int(n_cal)
        self.info["calibration_errors"] = int(wrong.sum())
        in_cal = np.zeros(T, dtype=bool)
        in_cal[cal] = True
        rest = np.flatnonzero(~in_cal)
        order, how = error_order(rest, judged_idx, wrong, self.base, rule="centroid", cosine=False)
        if how != "error-centroid":
            how = "item order (fewer than 2 calibration errors)"
        self.info["auditor_order"] = how
        n_h = max(0, B - n_cal)
        for i, t in enumerate(order):
            arm = self.human if i < n_h else cheap
            self._log(int(t), "route", arm, "error-centroid" if i < n_h else "llm")
        got = self.rec.annotate_many(
            [(self.ids[t], self.human) for t in order[:n_h]]
            + [(self.ids[t], cheap) for t in order[n_h:]],
            phase="route",
        )
        for i, (t, o) in enumerate(zip(order, got, strict=True)):
            self.add_vote(int(t), self.human if i < n_h else cheap, self._out(o))

    # ------------------------------------------------------------ result
    def _final(self, t: int) -> tuple[str | None, float]:
        valid = [(a, o) for a, o in self.votes[t] if o is not None]
        if not valid:
            return None, 0.0
        if not self.summ:
            return self.agg.vote(dict(valid), lambda a: a == self.human)
        names = [o for _, o in valid]
        emb = self._embed(names)
        pick = self.agg.choose(emb, np.ones(len(names)))  # the code's unweighted centroid
        n = len(names)
        sims = emb @ emb.T
        agr = 1.0 if n < 2 else float((sims.sum() - np.trace(sims)) / (n * (n - 1)))
        return names[pick], agr

    def result(self) -> RoutingResult:
        cfg = self.cfg
        empty = [t for t in range(self.T) if self.n_valid[t] == 0]
        backup: dict[int, str | None] = {}
        if empty and cfg.authors_accounting:
            cheap = self.llm_names[self.cheapest]
            outs = self.get_free([(t, cheap) for t in empty], "unpaid-backup")
            backup = dict(zip(empty, outs, strict=True))
            self.info["unpaid_backup_labels"] = len(empty)
        else:
            self.info["unlabelled_items"] = len(empty)
        rows = []
        for t in range(self.T):
            if t in backup:
                y, agr = backup[t], float(backup[t] is not None)
                names = [self.llm_names[self.cheapest]]
            else:
                y, agr = self._final(t)
                names = [a for a, _ in self.votes[t]]
            human = any(a == self.human and o is not None for a, o in self.votes[t])
            rows.append(
                {
                    "item_id": self.ids[t],
                    "output": y,
                    "n_annotations": len(names),
                    "agreement": agr,
                    "human": human,
                    "annotators": ";".join(names),
                }
            )
        labels = pd.DataFrame(rows, columns=LABEL_COLUMNS)
        frames = [self.rec.frame()]
        if self.free is not None and self.free.rows:
            frames.append(self.free.frame())
        annotations = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        self.info["cost_if_paid"] = round(self.budget.spent + self.info["unpaid_cost"], 9)
        self.info["posterior_means"] = {
            a: p.mean_.tolist() for a, p in zip(self.llm_names, self.post, strict=True)
        }
        return RoutingResult(
            method=cfg.method_name,
            setting=self.p.setting,
            seed=self.seed,
            labels=labels,
            annotations=annotations,
            budget_limit=self.budget.limit,
            cost=self.budget.spent,
            human_labels=self.budget.human_used,
            llm_calls=self.rec.llm_calls,
            trace=pd.DataFrame(self.trace),
            info=self.info,
        )
