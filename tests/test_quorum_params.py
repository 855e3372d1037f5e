"""QuorumParams: one validated home for QuorumRouter's hyperparameters."""

from __future__ import annotations

import inspect

import pytest

from quorum.routing.quorum.params import QuorumParams
from quorum.routing.quorum.router import QuorumRouter


def test_router_defaults_equal_params_defaults() -> None:
    sig = inspect.signature(QuorumRouter.__init__)
    init = {k: p.default for k, p in sig.parameters.items() if k != "self"}
    fields = {k: f.default for k, f in QuorumParams.model_fields.items()}
    assert init == fields


def test_router_params_round_trip() -> None:
    r = QuorumRouter(tau_h=0.7, auditor_rule="centroid")
    p = r.params
    assert (p.tau_h, p.auditor_rule, p.max_annotations) == (0.7, "centroid", 3)
    with pytest.raises(Exception, match="frozen"):
        p.tau_h = 0.1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reserve_share": 1.5}, "reserve_share: Input should be less than or equal to 1"),
        ({"tau_h": -0.1}, "tau_h: Input should be greater than or equal to 0"),
        ({"auditor_rule": "nearest"}, "auditor_rule: Input should be 'knn' or 'centroid'"),
        ({"max_annotations": 0}, "max_annotations: Input should be greater than or equal to 1"),
        ({"w_human": 0}, "w_human: Input should be greater than 0"),
        ({"reward_noise": True}, "reward_noise: expected a number, got True"),
        ({"dollars_strategy": "cheap"}, "dollars_strategy: Input should be 'auto'"),
    ],
)
def test_bad_values_name_the_field(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QuorumRouter(**kwargs)
    with pytest.raises(ValueError, match=message):
        QuorumParams(**kwargs)


def test_unknown_parameter_is_named() -> None:
    with pytest.raises(ValueError, match="unknown parameter 'tauh'"):
        QuorumParams(tauh=0.5)
    with pytest.raises(TypeError):
        QuorumRouter(tauh=0.5)  # type: ignore[call-arg]


def test_a_value_changed_after_construction_is_checked_at_route() -> None:
    r = QuorumRouter()
    r.calibration_share = 2.0
    with pytest.raises(ValueError, match="calibration_share"):
        r.route(None, None, None)  # type: ignore[arg-type]
