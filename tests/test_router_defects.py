"""Issue 14: the defects found in QUORUM's router, each pinned by a hand-made case."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from quorum.data.schema import AnnotatorSpec, Dataset, TaskSpec
from quorum.routing.core.budget import Budget, first_answer_reserve
from quorum.routing.core.replay import RecordedSource
from quorum.routing.quorum.audit.auditing import audit_human_count
from quorum.routing.quorum.calibration import agreement_reward
from quorum.routing.quorum.params import QuorumParams
from quorum.routing.quorum.phase3 import ValueRule, refine
from quorum.routing.quorum.policy import decayed_epsilon, value_choice
from quorum.routing.quorum.posterior import BayesianLinearPosterior
from quorum.routing.quorum.router import QuorumRouter
from quorum.routing.quorum.run import QuorumRun
from test_quorum_router import make_dataset, problem_for, run


def test_value_choice_buys_nothing_when_the_label_is_surely_right():
    # p = 1: every arm's value is 0; the tie used to go to the human, the dearest arm
    rng = np.random.default_rng(0)
    q, c = np.array([0.9, 0.8]), np.array([0.01, 0.03])
    assert value_choice(q, c, 0.1, 1.0, human_ok=True, epsilon=0.0, rng=rng) == (None, "none")
    assert value_choice(q, c, 0.1, 1.0, human_ok=False, epsilon=0.9, rng=rng) == (None, "none")
    # below 1 the rule is unchanged
    assert value_choice(q, c, 0.1, 0.5, human_ok=True, epsilon=0.0, rng=rng) == (0, "value")


def test_value_choice_skips_a_free_llm_that_is_never_right_without_a_warning():
    """A free LLM (c_b = 0, a local model) with q_b = 0 on an item whose label is surely
    wrong (p = 0): its value is 0/0. It was a NaN (and numpy's "invalid value" warning in a
    live run's output) that no comparison took; it is skipped, as before, in silence."""
    import warnings

    rng = np.random.default_rng(0)
    q, c = np.array([0.0, 0.6]), np.array([0.0, 0.01])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert value_choice(q, c, 0.1, 0.0, human_ok=False, epsilon=0.0, rng=rng) == (1, "value")
        assert value_choice(q[:1], c[:1], 0.1, 0.0, human_ok=True, epsilon=0.0, rng=rng) == (
            None,
            "value",
        )
        assert value_choice(q[:1], c[:1], 0.1, 0.0, human_ok=False, epsilon=0.0, rng=rng) == (
            None,
            "none",
        )


def test_no_human_is_bought_for_items_whose_label_is_surely_right():
    # LLMs that are always right: q >= 1 after calibration, phase 3 buys no human for p = 1
    ds = make_dataset(80, acc=(1.0, 1.0, 1.0))
    res, _ = run(ds, frac=0.7, dollars_strategy="bandit", spend_leftover=False)
    extra = res.trace[res.trace["phase"] == "extra"]
    p_one = extra[[c for c in extra if c.startswith("q:")]].max(axis=1) >= 1.0
    assert not (extra.loc[p_one, "arm"] == "gold").any()


def test_agreement_reward_is_the_measured_chance_that_consensus_is_right():
    pi, d = agreement_reward(8, 6, 3)
    assert np.isclose(pi, 0.7) and np.isclose(d, 0.15)


def _shared_error_dataset(n=120, seed=0):
    # llm0 and llm1 give the same answer on every item, right 60% of the time
    rng = np.random.default_rng(seed)
    gold = rng.choice(["A", "B"], size=n)
    shared = np.where(rng.random(n) < 0.6, gold, np.where(gold == "A", "B", "A"))
    third = np.where(rng.random(n) < 0.7, gold, np.where(gold == "A", "B", "A"))
    items = pd.DataFrame({"item_id": [f"i{t}" for t in range(n)], "text": ["x"] * n})
    items["gold"] = gold
    rows = []
    for name, outs in (("llm0", shared), ("llm1", shared), ("llm2", third)):
        rows += [{"item_id": f"i{t}", "annotator": name, "output": outs[t]} for t in range(n)]
    task = TaskSpec(
        name="shared",
        type="classification",
        labels=["A", "B"],
        annotators=[
            AnnotatorSpec(name="llm0", price=0.01),
            AnnotatorSpec(name="llm1", price=0.01),
            AnnotatorSpec(name="llm2", price=0.01),
        ],
    )
    return Dataset(task, items, pd.DataFrame(rows))


def test_shared_errors_are_not_rewarded_as_correct(monkeypatch):
    seen: list[float] = []
    orig = BayesianLinearPosterior.update

    def spy(self, x, r):
        seen.append(float(r))
        return orig(self, x, r)

    monkeypatch.setattr(BayesianLinearPosterior, "update", spy)
    ds = _shared_error_dataset()
    # the spy watches the Python steps (the compiled steps give the same run:
    # tests/test_phase3_loop.py)
    python = {"loop_backend": "python"}
    run(ds, frac=0.35, dollars_strategy="bandit", spend_leftover=False, **python)
    rewards = np.array(seen)
    # agreement without a human pays the measured P(consensus right), not 1
    partial = rewards[(rewards > 0) & (rewards < 1)]
    assert len(partial) > 0 and partial.max() < 0.95
    seen.clear()
    run(
        ds,
        frac=0.35,
        dollars_strategy="bandit",
        spend_leftover=False,
        agreement_reward_value="one",
        **python,
    )
    assert set(np.unique(seen)) <= {0.0, 1.0}


def test_phase3_exploration_time_continues_phase2():
    ds = make_dataset(80)
    res, _ = run(ds, frac=0.5, dollars_strategy="bandit")
    T = ds.n_items
    route = res.trace[res.trace["phase"] == "route"]
    extra = res.trace[res.trace["phase"] == "extra"]
    assert len(extra) > 0
    # phase 2: item j of the routing order is decision len(cal) + j
    n_cal = res.info["n_calibration"]
    want2 = [decayed_epsilon(n_cal + j, 0.3, 0.005) for j in range(len(route))]
    assert np.allclose(route["epsilon"].to_numpy(), want2)
    # phase 3: its i-th pick is decision T + i (it used to count trace rows)
    want3 = [decayed_epsilon(T + i, 0.3, 0.005) for i in range(len(extra))]
    assert np.allclose(extra["epsilon"].to_numpy(), want3)


def test_phase3_progress_is_not_stuck_at_one():
    ds = make_dataset(80)
    res, _ = run(ds, frac=0.5, dollars_strategy="bandit")
    p = res.trace.loc[res.trace["phase"] == "extra", "p_t"].to_numpy()
    assert len(p) > 1 and p[0] < 1.0
    assert np.all(np.diff(p) >= -1e-12) and p.max() <= 1.0


def test_first_answer_reserve_leaves_out_the_item_being_annotated():
    # one open item without an answer: annotating it keeps nothing; annotating another
    # item keeps its first answer
    assert first_answer_reserve(1, True, 0.01) == 0.0
    assert first_answer_reserve(1, False, 0.01) == 0.01


def test_refine_answers_the_last_unanswered_item_with_the_money_left():
    ds = make_dataset(10)
    prob = problem_for(ds)
    budget = Budget(0.01)  # exactly the cheapest LLM once
    r = QuorumRun(QuorumParams(), prob, RecordedSource(ds), budget, seed=0)
    r.arms.settled[:] = True
    r.arms.settled[0] = False  # one open item, no answer yet
    refine(r, ValueRule(r.cfg))
    assert len(r.answers.outputs(0)) == 1 and budget.remaining < 1e-9


def test_audit_human_count_is_not_lost_to_float_error():
    # (10 - 100 * 0.01) // 0.09 is 99.0 in floating point; 100 labels fit
    assert audit_human_count(10.0, 100, 0.01, 0.1) == 100
    assert audit_human_count(10.0, 200, 0.01, 0.1) == 88


def test_auditor_uses_every_human_label_of_its_budget():
    ds = make_dataset(100)
    res, _ = run(ds, "auditor", frac=0.3)
    assert res.human_labels == 30
    assert res.cost <= 30 * 0.1 + 100 * 0.01 + 1e-9
    # the old path gives up labels to pay for calibration's LLM answers
    old, _ = run(ds, "auditor", frac=0.3, audit_llm_first=False, auditor_cost_match=True)
    assert old.human_labels < 30
    # ... which is now off by default on that path too
    plain, _ = run(ds, "auditor", frac=0.3, audit_llm_first=False)
    assert plain.human_labels == 30


def test_router_params_include_the_label_model_switches():
    p = QuorumRouter(label_model_vote="off", audit_rounds=2).params
    assert p.label_model_vote == "off" and p.audit_rounds == 2


def test_label_model_vote_is_off_after_bandit_routing_by_default():
    ds = make_dataset(120, acc=(0.6, 0.9, 0.95))
    base, _ = run(ds, frac=0.5, dollars_strategy="bandit", label_model_vote="off")
    dflt, _ = run(ds, frac=0.5, dollars_strategy="bandit")
    assert dflt.labels["output"].tolist() == base.labels["output"].tolist()
    assert QuorumRouter(label_model_bandit=True).params.label_model_bandit


def test_label_model_is_capped_by_problem_size():
    """Above label_model_max_items the exact kNN label model is off: the run is the one-shot
    audit with the weighted vote, and says so."""
    ds = make_dataset(100, acc=(0.6, 0.8, 0.9))
    capped, _ = run(ds, "auditor", frac=0.3, label_model_max_items=99)
    plain, _ = run(ds, "auditor", frac=0.3, audit_llm_first=False, label_model_vote="off")
    assert capped.labels["output"].tolist() == plain.labels["output"].tolist()
    assert capped.cost == plain.cost and capped.human_labels == plain.human_labels
    assert capped.info["label_model"].startswith("off")
    on, _ = run(ds, "auditor", frac=0.3, label_model_max_items=100)
    assert on.info["label_model"] == "on"
    assert on.annotations["cost"].sum() != plain.annotations["cost"].sum()  # LLM on every item


def test_items_closed_by_the_value_rule_leave_the_refinement_queue(monkeypatch):
    """Phase 3 closes an item the value rule buys nothing for through the queue, so the
    queue's count of open items stays true (a stale count raised 'no open item' on IMDB)."""
    ds = make_dataset(80, acc=(0.6, 0.7, 0.8))
    monkeypatch.setattr(ValueRule, "choose", lambda self, *args: (None, "none"))
    res, budget = run(  # the patched rule is the Python loop's
        ds, frac=0.7, dollars_strategy="bandit", escalate_disagreement=False, loop_backend="python"
    )
    assert len(res.labels) == 80 and budget.spent <= budget.limit + 1e-9
    assert not (res.trace["phase"] == "extra").any()  # nothing bought in phase 3


@pytest.mark.parametrize(
    ("prior", "most", "acc"), [("frequencies", 45, 0.788), ("uniform", 25, 0.79)]
)
def test_final_labels_seldom_vote_against_every_llm_on_uninformative_features(prior, most, acc):
    """Issue 38: on features that say nothing about the label, the label model's final
    labels voted against the LLMs' common answer (58 items over 8 runs, 14 % of them right):
    the human labels are bought where the LLMs looked weakest, so their error rates and
    label frequencies are not the data's. With ``label_model_final_floor = "chance"`` an
    LLM counts at least at chance there (38 such items); with ``label_model_final_prior =
    "uniform"`` too (both the live defaults) the prior is the kNN vote shrunk to uniform by
    the one-standard-error rule (18). The mean accuracy was 0.787 before, 0.790 and 0.796
    with them."""
    flips, right, accs = 0, 0, []
    for seed in range(8):
        ds = make_dataset(300, seed=seed, acc=(0.75, 0.8, 0.85))
        res, _ = run(ds, setting="dollars", frac=0.3, seed=seed, label_model_final_prior=prior,
                     label_model_final_floor="chance")  # fmt: skip
        lab = res.labels.set_index("item_id")["output"]
        gold = ds.items.set_index("item_id")["gold"]
        ann = res.annotations
        ok = ann[(ann["status"] == "ok") & ann["output"].notna()]
        for item, g in ok.groupby("item_id"):
            if "gold" in set(g["annotator"]):
                continue
            if lab[item] not in set(g["output"]):
                flips += 1
                right += lab[item] == gold[item]
        accs.append(float((lab == gold[lab.index]).mean()))
    assert flips <= most, (flips, right)
    assert np.mean(accs) >= acc
