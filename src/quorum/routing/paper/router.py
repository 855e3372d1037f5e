"""QUORUM as the authors' code runs it (``--method quorum-paper``).

A re-implementation of what the public code of the paper does (amazon-science/QUORUM:
``main.py`` builds the features, ``routers/QUORUM_router.py`` routes), read rule by rule;
no text of that code is used. Where the code and the paper's text disagree this preset
follows the code; where the code has a bug it follows the paper's intent. Every such
place is listed in docs/paper-preset.md. Our default router (:mod:`quorum.routing.quorum.router`)
is a different, documented design; nothing here changes it. The rules are pure functions
in :mod:`~quorum.routing.paper.rules`; the run is :mod:`~quorum.routing.paper.run`.

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

from quorum.routing.core.base import AnnotationSource, Router, RoutingProblem, RoutingResult
from quorum.routing.core.budget import Budget
from quorum.routing.paper.run import PaperRun

__all__ = ["AuthorsAccountingPaperQuorumRouter", "PaperQuorumRouter"]


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
    uses_item_features = True
    is_quorum = True

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
        run = PaperRun(self, problem, source, budget, seed)
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
