"""CDI, confidence-driven inference (Gligoric et al., NAACL 2025), as a labeller.

``cdi`` is CDI as the QUORUM paper reproduced it (amazon-science/QUORUM,
``routers/ppi_router.py``; ``sampling="authors"``): the labelling LLM's own confidence
(``confidence="paper"``: recorded or verbalised, else a named substitute); a warm-up of
``warmup`` items (30; ``warmup_share * T`` when the human budget exceeds that share) gets
a human; the error model is fitted once on the warm-up; every other item is asked with
``pi = min(1, c * sqrt(predicted error))``, ``c`` bisected so that the ``pi`` sum to the
human labels left; the Bernoulli draws beyond that count are dropped at random. Their
squared error of label *indices* is a bug: here the 0-1 error (``1 - cos`` for summaries).

``cdi-ensemble`` is the project's earlier CDI (``sampling="stream"``, below) on the
``confidence="auto"`` signal (entropy over the task's models where no confidence is
recorded). The label outside the human arm is the labeller's answer in both.

Stream over the items in a random order (their notebooks shuffle the data). Every item has
the LLM's label and its confidence. The first ``burnin`` items get a human label; an error
model maps confidence to the expected squared error of the LLM label, fitted on the
human-labelled items and refitted every ``refit_every`` items; ``u = sqrt(error)`` for all
items. At step t the human is asked with probability

    pi_t = clip((1 - tau) * u_t / mean(u) * frac + tau * frac, 0, 1),
    frac = (n_human - burnin) / (n - burnin),

(kristinagligoric/confidence-driven-inference, ``code/*.ipynb``). The human count is random
with ``n_human`` as its expectation; we cap it at the budget (no item is asked once the
human budget or the money is spent). As a labeller (our guess): human label where
asked, the LLM label elsewhere.

Error model: their code uses XGBoost (depth 3, eta 0.001, 2000 rounds) on the confidence.
``error_model="gbr"`` is sklearn gradient boosting (depth 3, 20 rounds, learning rate 0.1:
about the same total shrinkage, 1 - 0.9^20 = 0.88 vs 1 - 0.999^2000 = 0.86) on 256
quantile bins of the confidence (as XGBoost's ``hist`` method): a refit takes milliseconds;
"isotonic" (error non-increasing in confidence) and "logistic" are faster alternatives.
For summaries the "squared error" is ``1 - cos`` between the human and LLM summaries
(our choice).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from quorum.baselines._common import (
    Routed,
    affordable_humans,
    item_trace,
    label_frame,
)
from quorum.baselines._confidence import (
    ConfidenceBaseline,
    ConfidenceMode,
    Substitute,
    plan_info,
)
from quorum.baselines._signals import ConfidencePlan, Signals
from quorum.baselines.cdi_rules import (
    ErrorModel,
    budget_probabilities,
    fit_error_model,
    sampling_probability,
    summary_errors,
)
from quorum.routing.core.run_core import RunCore
from quorum.routing.core.trace import DecisionTrace

Sampling = Literal["authors", "stream"]


class CDIRouter(ConfidenceBaseline):
    """Bernoulli human sampling proportional to predicted LLM error.

    Parameters
    ----------
    sampling: "authors" (default: the QUORUM authors' reproduction, see the module
        docstring) or "stream" (CDI's own notebooks: burn-in, refits, ``tau`` mixing).
    warmup, warmup_share: "authors": warm-up items with a human (30, or
        ``warmup_share * T`` = 20 % of the items when the human budget exceeds that).
    burnin: "stream": items at the start of the stream that always get a human (50 in
        their code).
    refit_every: "stream": refit the error model every this many items (200 per the
        notes; their stance notebook uses 50).
    tau: "stream": mixing weight of uniform sampling (0.1).
    error_model: "gbr" (default), "isotonic" or "logistic" (see the module docstring).
    llm_label: "labeller" (default, CDI's LLM label) or "majority" (vote over the answers
        bought for the entropy substitute).
    confidence, labeller, entropy_annotators, substitute: see ``ConfidenceBaseline``
        (default ``confidence="paper"``: the labeller's own confidence).
    """

    name = "cdi"

    def __init__(
        self,
        burnin: int = 50,
        refit_every: int = 200,
        tau: float = 0.1,
        error_model: ErrorModel = "gbr",
        llm_label: Literal["labeller", "majority"] = "labeller",
        confidence: ConfidenceMode = "paper",
        labeller: str | None = None,
        entropy_annotators: list[str] | None = None,
        substitute: Substitute = "agreement",
        sampling: Sampling = "authors",
        warmup: int = 30,
        warmup_share: float = 0.2,
    ) -> None:
        super().__init__(confidence, labeller, entropy_annotators, substitute)
        if burnin < 0 or refit_every < 1 or not 0.0 <= tau <= 1.0:
            raise ValueError("need burnin >= 0, refit_every >= 1 and 0 <= tau <= 1")
        if sampling not in ("authors", "stream"):
            raise ValueError("sampling must be 'authors' or 'stream'")
        if warmup < 0 or not 0.0 <= warmup_share <= 1.0:
            raise ValueError("need warmup >= 0 and 0 <= warmup_share <= 1")
        if error_model not in ("gbr", "isotonic", "logistic"):
            raise ValueError("error_model must be 'gbr', 'isotonic' or 'logistic'")
        if llm_label not in ("labeller", "majority"):
            raise ValueError("llm_label must be 'labeller' or 'majority'")
        self.burnin = burnin
        self.refit_every = refit_every
        self.tau = tau
        self.error_model = error_model
        self.llm_label = llm_label
        self.sampling = sampling
        self.warmup = warmup
        self.warmup_share = warmup_share

    def _route(self, run: RunCore) -> Routed:
        if self.sampling == "authors":
            return self._route_authors(run)
        return self._route_stream(run)

    def _route_authors(self, run: RunCore) -> Routed:
        """Warm-up, one error model, ``pi`` bisected to the budget (the authors' code)."""
        problem, budget, rng, rec = run.problem, run.budget, run.rng, run.rec
        ids, T, human = run.ids, run.T, run.human
        summaries = not problem.task.type.has_labels
        plan, sig, order, cap = self.buy_signals(problem, rec, budget, rng)
        llm_out = sig.aggregate if self.llm_label == "majority" else sig.label
        conf = _filled(sig.confidence)

        n_human = affordable_humans(rec, cap)
        share = int(self.warmup_share * T)
        warm = min(share if n_human > share else self.warmup, n_human, T)
        warm_items = [int(t) for t in order[:warm]]
        outs = rec.annotate_many([(ids[t], human) for t in warm_items], phase="burnin")
        got = [(t, o.output) for t, o in zip(warm_items, outs, strict=True) if o is not None]
        ok = [(t, h) for t, h in got if h is not None]
        if summaries:
            err = summary_errors(rec.source, ok, llm_out)
        else:
            err = [0.0 if llm_out[t] == h else 1.0 for t, h in ok]
        model = fit_error_model(self.error_model, conf[[t for t, _ in ok]], np.array(err))

        rest = order[warm:]
        pred = np.clip(model(conf[rest]), 1e-12, None) if len(rest) else np.empty(0)
        n_left = max(0, n_human - len(got))
        pi = budget_probabilities(np.sqrt(pred), n_left)
        xi = rng.random(len(rest)) < pi
        if xi.sum() > n_left:  # the authors drop the extra draws at random
            ones = np.flatnonzero(xi)
            xi[rng.choice(ones, size=int(xi.sum()) - n_left, replace=False)] = False
        chosen = [int(t) for t in rest[xi]]
        outs = rec.annotate_many([(ids[t], human) for t in chosen], phase="route")
        asked = [t for t, _ in got] + [
            t for t, o in zip(chosen, outs, strict=True) if o is not None
        ]

        pis = np.full(T, np.nan)
        pis[order[:warm]] = 1.0
        pis[rest] = pi
        kept = (plan.labeller, self._keep)
        labels, trace = _labels_and_trace(run, sig, order, asked, pis, llm_out, warm, kept)
        info = self._info(
            plan,
            sig,
            rule="warm-up, then Bernoulli(pi), pi = min(1, c sqrt(predicted error)) "
            "summing to the budget (authors' ppi_router)",
            sampling="authors",
            n_human_expected=int(n_human),
            warmup_used=int(warm),
        )
        return Routed(labels, info, trace)

    def _route_stream(self, run: RunCore) -> Routed:
        """CDI's own notebooks: burn-in, refits every ``refit_every`` items, ``tau``."""
        problem, budget, rng, rec, T = run.problem, run.budget, run.rng, run.rec, run.T
        plan, sig, order, cap = self.buy_signals(problem, rec, budget, rng)
        llm_out = sig.aggregate if self.llm_label == "majority" else sig.label

        n_human = affordable_humans(rec, cap)
        burn = min(self.burnin, n_human, T)
        frac = (n_human - burn) / (T - burn) if burn < T else 0.0
        conf = _filled(sig.confidence)

        pis = np.full(T, np.nan)
        asked = self._ask_stream(run, order, conf, llm_out, n_human, burn, frac, pis)
        kept = (plan.labeller, self._keep)
        labels, trace = _labels_and_trace(run, sig, order, asked, pis, llm_out, burn, kept)
        info = self._info(
            plan,
            sig,
            rule="Bernoulli(pi_t), pi_t ~ sqrt(predicted error(confidence))",
            sampling="stream",
            n_human_expected=int(n_human),
            burnin_used=int(burn),
            frac=float(frac),
        )
        return Routed(labels, info, trace)

    @property
    def _keep(self) -> str:
        """The trace's mode where the LLM label is kept: the labeller's or the majority."""
        return "keep" if self.llm_label == "labeller" else "majority"

    def _info(self, plan: ConfidencePlan, sig: Signals, **fields: Any) -> dict[str, Any]:
        """The result's info: the signal's (:func:`plan_info`), ``fields``, the model."""
        info = plan_info(plan, sig)
        info.update(fields)
        info["error_model"] = self.error_model
        info["llm_label"] = self.llm_label
        info["degraded"] = bool(sig.estimated.sum() < len(sig.label))
        return info

    def _ask_stream(
        self,
        run: RunCore,
        order: np.ndarray,
        conf: np.ndarray,
        llm_out: np.ndarray,
        n_human: int,
        burn: int,
        frac: float,
        pis: np.ndarray,
    ) -> list[int]:
        """The stream: the first ``burn`` items to humans, then each with probability
        pi_t (written to ``pis``), the error model refitted every ``refit_every`` items;
        returns the items a human was asked on."""
        rec, rng, ids, human, T = run.rec, run.rng, run.ids, run.human, run.T
        summaries = not run.problem.task.type.has_labels
        # predict once per distinct confidence (rounded to 1e-4): a refit costs milliseconds
        conf_values, conf_index = np.unique(np.round(conf, 4), return_inverse=True)
        asked: list[int] = []
        train_x: list[float] = []
        train_e: list[float] = []
        pending: list[tuple[int, str]] = []  # summaries: (item, human text) not yet scored
        u = np.ones(T)
        mean_u = 1.0

        def refit() -> tuple[np.ndarray, float]:
            if pending:
                train_x.extend(conf[t] for t, _ in pending)
                train_e.extend(summary_errors(rec.source, pending, llm_out))
                pending.clear()
            model = fit_error_model(self.error_model, np.array(train_x), np.array(train_e))
            uu = np.sqrt(np.clip(model(conf_values), 0.0, None))[conf_index]
            return uu, float(uu.mean())

        for s, t in enumerate(order):
            if len(asked) >= n_human:
                break
            if s < burn:
                ask = True
            else:
                if (s - burn) % self.refit_every == 0:
                    u, mean_u = refit()
                pis[t] = sampling_probability(u[t], mean_u, frac, self.tau)
                ask = rng.random() < pis[t]
            if not (ask and rec.can_afford(human)):
                continue
            out = rec.annotate(ids[t], human, phase="burnin" if s < burn else "route")
            asked.append(int(t))
            if not out.ok:
                continue
            if summaries:
                pending.append((int(t), out.output))
            else:
                train_x.append(conf[t])
                train_e.append(0.0 if llm_out[t] == out.output else 1.0)

        return asked


class CDIEnsembleRouter(CDIRouter):
    """The project's earlier CDI: CDI's own stream rule (``sampling="stream"``) on the
    ``confidence="auto"`` signal (entropy over the task's models where no confidence is
    recorded). Same parameters as :class:`CDIRouter`."""

    name = "cdi-ensemble"

    def __init__(
        self,
        burnin: int = 50,
        refit_every: int = 200,
        tau: float = 0.1,
        error_model: ErrorModel = "gbr",
        llm_label: Literal["labeller", "majority"] = "labeller",
        confidence: ConfidenceMode = "auto",
        labeller: str | None = None,
        entropy_annotators: list[str] | None = None,
        substitute: Substitute = "agreement",
        sampling: Sampling = "stream",
        warmup: int = 30,
        warmup_share: float = 0.2,
    ) -> None:
        super().__init__(
            burnin,
            refit_every,
            tau,
            error_model,
            llm_label,
            confidence,
            labeller,
            entropy_annotators,
            substitute,
            sampling,
            warmup,
            warmup_share,
        )


def _filled(confidence: np.ndarray) -> np.ndarray:
    """The confidences, an unknown one replaced by the mean of the known (0.5 if none)."""
    conf = confidence.copy()
    seen = conf[~np.isnan(conf)]
    conf[np.isnan(conf)] = float(seen.mean()) if len(seen) else 0.5
    return conf


def _labels_and_trace(
    run: RunCore,
    sig: Signals,
    order: np.ndarray,
    asked: list[int],
    pis: np.ndarray,
    llm_out: np.ndarray,
    n_burnin: int,
    arm_kept: tuple[str, str],
) -> tuple[pd.DataFrame, DecisionTrace]:
    """The LLM's label where no human answered; the trace: the items in the order the
    rule took them (the first ``n_burnin``: phase ``burnin``), the human where one was
    asked, else ``arm_kept`` (the labeller, and the mode: its label or the majority kept),
    the confidence and pi_t (``p_human``)."""
    ids, T = run.ids, run.T
    labels = label_frame(ids, run.rec, {ids[t]: llm_out[t] for t in range(T)})
    lab, keep = arm_kept
    arm = np.full(T, lab, dtype=object)
    mode = np.full(T, keep, dtype=object)
    arm[asked], mode[asked] = run.human, "escalate"
    phase = np.full(T, "route", dtype=object)
    phase[order[:n_burnin]] = "burnin"
    mode[order[:n_burnin]] = np.where(arm[order[:n_burnin]] == run.human, "burnin", keep)
    conf = sig.confidence
    trace = item_trace(run, order, arm, mode, phase, confidence=conf, p_human=pis)
    return labels, trace
