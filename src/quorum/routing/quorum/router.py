"""The QUORUM router (paper, sec. 3 and Algorithms 1-2).

Dollars setting (Algorithm 1)
  1. Calibration: N_cal = floor(calibration_share * floor(B / c_H)) items with the highest
     Mahalanobis uncertainty u_t of phi(d_t) get a human label and every LLM's answer; the
     rewards r_a = 1(y_hat_a == y) initialise the LLM posteriors. (Ours, by default: a probe
     of half those items first; if no dearer LLM beats a human label on accuracy per unit of
     money, the run is audited instead of routed, see ``dollars_strategy``.)
  2. Routing: every other item, in a random order, goes to the arm chosen by decaying
     epsilon-greedy on q_a = mu_a^T x_t, escalated to the human when max q < tau_H.
  3. Extra annotations: while money remains, the unsettled item with the highest priority
     P_t = D_t + Delta_t + 1(no human) gets one more annotation (at most
     ``max_annotations``); an item settles on consensus (weighted agreement >= threshold),
     a human label, or when it has no arm left. Rewards come from the human label where
     there is one and from agreement with the weighted majority otherwise.
  4. Aggregation: weighted majority vote (labels) or embedding centroid (summaries).

Auditor setting (Algorithm 2): the cheapest LLM everywhere; a random calibration slice of
calibration_share * B items gets human labels; the remaining B - |C| human labels go to
the items nearest the centroid of the LLM's calibration errors.

Choices the paper leaves open are parameters, documented in docs/router.md. This module
holds the estimator (its parameters); the run is :mod:`~quorum.routing.quorum.flow` (the two
settings, step by step) over the state of :mod:`~quorum.routing.quorum.run`.
"""

from __future__ import annotations

import inspect
from typing import Any

from pydantic import ValidationError

from quorum.routing.core.base import AnnotationSource, Router, RoutingProblem, RoutingResult
from quorum.routing.core.budget import Budget
from quorum.routing.quorum import flow
from quorum.routing.quorum.calibration import mahalanobis_uncertainty
from quorum.routing.quorum.final_labels import result
from quorum.routing.quorum.params import QuorumParams, _one_line, group_models, parameters_doc
from quorum.routing.quorum.policy import EpsilonGreedyPolicy
from quorum.routing.quorum.run import QuorumRun

__all__ = ["QuorumRouter", "mahalanobis_uncertainty"]


class QuorumRouter(Router):
    """QUORUM: features-based contextual bandit routing with calibration and refinement.

    Every hyperparameter is a named keyword argument (scikit-learn style), validated by
    :class:`~quorum.routing.quorum.params.QuorumParams`; a group of them may also be given
    as one object, ``QuorumRouter(exploration=Exploration(tau_h=0.6))`` being
    ``QuorumRouter(tau_h=0.6)`` (:func:`~quorum.routing.quorum.params.group_models`). The
    parameters below are made from their one description each
    (:data:`~quorum.routing.quorum.params.DESCRIPTIONS`).
    """

    name = "quorum"
    supports_summarization = True
    uses_item_features = True
    is_quorum = True

    def __init__(self, **params: Any) -> None:
        """Every hyperparameter a named keyword argument, kept as given (scikit-learn
        style). The names, defaults and types are :class:`QuorumParams`'s fields, written
        once there (``__init__.__signature__``, what ``get_params`` and ``help`` read); a
        group given as one object (``exploration=...``) sets the fields it names."""
        params = _flatten_groups(params)
        unknown = sorted(set(params) - set(QuorumParams.model_fields))
        if unknown:
            raise TypeError(f"QuorumRouter() got unexpected keyword arguments {unknown}")
        for name, field in QuorumParams.model_fields.items():
            setattr(self, name, params.get(name, field.default))
        self._validate()

    __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [
            inspect.Parameter(
                k, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.annotation
            )
            for k, f in QuorumParams.model_fields.items()
        ]
    )

    @property
    def params(self) -> QuorumParams:
        """The hyperparameters, validated (:class:`~quorum.routing.quorum.params.QuorumParams`)."""
        given = self.get_params()
        return QuorumParams(**{k: given[k] for k in QuorumParams.model_fields if k in given})

    def _validate(self) -> QuorumParams:
        params = self.params
        EpsilonGreedyPolicy(params.epsilon0, params.gamma, params.tau_h)
        return params

    @property
    def groups(self) -> dict[str, Any]:
        """The hyperparameters by group, each a validated group object."""
        params = self.params
        return {
            key: model(**{f: getattr(params, f) for f in model.model_fields})
            for key, model in group_models().items()
        }

    # ------------------------------------------------------------------ API
    def route(
        self, problem: RoutingProblem, source: AnnotationSource, budget: Budget, seed: int = 0
    ) -> RoutingResult:
        params = self._validate()
        if not problem.llms:
            raise ValueError("QUORUM needs at least one machine annotator (LLM or model)")
        run = QuorumRun(params, problem, source, budget, seed, method=self.name)
        plans = flow.Plans.of(params)  # every plan, chosen once
        if problem.setting == "auditor":
            flow.auditor(run, plans)
            return result(run)
        path = flow.dollars(run, plans)
        return result(run, after_bandit=path is flow.DollarsPath.BANDIT)


QuorumRouter.__doc__ = (QuorumRouter.__doc__ or "").rstrip() + "\n\n" + parameters_doc() + "\n"


def _flatten_groups(params: dict[str, Any]) -> dict[str, Any]:
    """``exploration=Exploration(tau_h=0.6)`` (or a dict) as ``tau_h=0.6``; a field given
    both ways with two values is an error."""
    models = group_models()
    flat = {k: v for k, v in params.items() if k not in models}
    for key in params.keys() & models.keys():
        given = params[key]
        try:
            obj = given if isinstance(given, models[key]) else models[key](**dict(given))
        except ValidationError as exc:
            raise ValueError(f"{key}: {_one_line(exc)}") from None
        for f in obj.model_fields_set:
            v = getattr(obj, f)
            if f in flat and flat[f] != v:
                raise TypeError(f"QuorumRouter(): {f} given as {flat[f]!r} and in {key}= as {v!r}")
            flat[f] = v
    return flat
