"""The dollars audit path's plans (``dollars_audit_plan``): "llm-first", "humans-instead" and
"check", on hand-made recorded answers (mechanics; the quality is measured on real data in
docs/router.md)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from quorum.data.schema import AnnotatorSpec, Dataset, TaskSpec
from quorum.routing.core.base import RoutingProblem
from quorum.routing.core.budget import Budget
from quorum.routing.core.replay import RecordedSource
from quorum.routing.quorum.params import QuorumParams
from quorum.routing.quorum.router import QuorumRouter

PRICES = {"cheap": 0.01, "mid": 0.03, "dear": 0.05}
C_H = 0.1


def _dataset(
    n: int, cheap_right: np.ndarray, seed: int = 0, gold: np.ndarray | None = None
) -> Dataset:
    """Binary labels (at random unless ``gold``); ``cheap`` right where ``cheap_right``, the
    dearer LLMs at chance (so the panel is dominated and the run audits)."""
    rng = np.random.default_rng(seed)
    gold = rng.choice(["A", "B"], size=n) if gold is None else gold
    flip = {"A": "B", "B": "A"}
    items = pd.DataFrame({"item_id": [f"i{t}" for t in range(n)], "text": ["x"] * n})
    items["gold"] = gold
    rows = []
    for name in PRICES:
        right = cheap_right if name == "cheap" else rng.random(n) < 0.5
        for t in range(n):
            out = gold[t] if right[t] else flip[gold[t]]
            rows.append({"item_id": f"i{t}", "annotator": name, "output": out})
    task = TaskSpec(
        name="plans",
        type="classification",
        labels=["A", "B"],
        annotators=[AnnotatorSpec(name=a, price=p) for a, p in PRICES.items()],
    )
    return Dataset(task, items, pd.DataFrame(rows))


def _problem(ds: Dataset, emb: np.ndarray) -> RoutingProblem:
    n = ds.n_items
    return RoutingProblem(
        task=ds.task,
        item_ids=ds.items["item_id"].to_numpy(),
        phi=np.random.default_rng(1).random((n, 4)),
        embeddings=emb,
        setting="dollars",
    )


def _clusters(n: int, seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Two tight clusters of unit vectors; the first half of the items in cluster 0."""
    rng = np.random.default_rng(seed)
    which = (np.arange(n) >= n // 2).astype(int)
    centre = np.eye(8)[which]
    emb = centre + 0.05 * rng.normal(size=(n, 8))
    return emb / np.linalg.norm(emb, axis=1, keepdims=True), which


def _answer_shows_the_errors(n: int = 600) -> tuple[Dataset, np.ndarray]:
    """Labels follow the clusters 3 times in 4 and the cheap LLM is right 85% of the time:
    its answer against its cluster's usual label marks the items whose label is in doubt."""
    emb, which = _clusters(n)
    rng = np.random.default_rng(7)
    usual = np.where(which == 0, "A", "B")
    gold = np.where(rng.random(n) < 0.75, usual, np.where(usual == "A", "B", "A"))
    return _dataset(n, rng.random(n) < 0.85, gold=gold), emb


def _route(ds, emb, frac, **params):
    budget = Budget(frac * ds.n_items * C_H)
    res = QuorumRouter(dollars_strategy="audit", **params).route(
        _problem(ds, emb), RecordedSource(ds), budget, seed=0
    )
    return res, budget


def _route_answers(res) -> pd.DataFrame:
    ann = res.annotations
    return ann[ann["phase"] == "route"]


def test_params_validate_the_plan() -> None:
    assert QuorumParams().dollars_audit_plan == "check"
    with pytest.raises(ValueError, match="dollars_audit_plan"):
        QuorumParams(dollars_audit_plan="sometimes")
    with pytest.raises(ValueError, match="audit_check_share"):
        QuorumParams(audit_check_share=0.0)


def test_humans_instead_gives_each_item_one_answer_and_more_humans() -> None:
    n = 400
    emb, _ = _clusters(n)
    ds = _dataset(n, np.random.default_rng(3).random(n) < 0.5)
    # llm_sample=0: the plans alone, without the sample of LLM answers before them
    first, b1 = _route(ds, emb, 0.5, dollars_audit_plan="llm-first", llm_sample=0)
    inst, b2 = _route(ds, emb, 0.5, dollars_audit_plan="humans-instead", llm_sample=0)
    assert inst.info["dollars_audit_plan"] == "humans-instead"
    assert first.info["dollars_audit_plan"] == "llm-first"
    for res, budget in ((first, b1), (inst, b2)):
        assert res.cost <= budget.limit + 1e-9
        assert res.labels["output"].notna().all()
    # humans-instead: every routed item has exactly one answer, a human's or the cheap LLM's
    routed = _route_answers(inst)
    assert routed.groupby("item_id").size().eq(1).all()
    assert set(routed["annotator"]) <= {"gold", "cheap"}
    # the money buys c_H / (c_H - c_l) as many humans, less what rounding leaves
    n_rest = routed["item_id"].nunique()
    spare = b2.limit - (inst.cost - routed["cost"].sum()) - n_rest * PRICES["cheap"]
    expect = int(spare / (C_H - PRICES["cheap"]) + 1e-9)
    assert (routed["annotator"] == "gold").sum() == min(expect, n_rest)
    assert inst.human_labels > first.human_labels
    # llm-first: the cheap LLM answered every routed item, humans on top of it
    r1 = _route_answers(first)
    assert (r1["annotator"] == "cheap").sum() == r1["item_id"].nunique()


def test_check_keeps_llm_first_where_the_llms_answer_shows_the_errors() -> None:
    # labels follow the clusters 3 times in 4, the cheap LLM is right 85% of the time: its
    # answer against its cluster's usual label marks the items whose label is in doubt,
    # which the prior alone cannot see, so a human there changes more labels
    ds, emb = _answer_shows_the_errors()
    res, budget = _route(ds, emb, 0.5)
    chk = res.info["audit_check"]
    assert chk["plan"] == "llm-first" == res.info["dollars_audit_plan"]
    (f_w, n_w), (f_u, n_u) = chk["fixed_llm_first"], chk["fixed_humans_instead"]
    assert n_w + n_u == chk["humans"] > 0 and abs(n_w - n_u) <= 1  # half each
    assert f_w / n_w > f_u / n_u  # llm-first's half found more of the LLM's errors
    assert res.cost <= budget.limit + 1e-9
    # no item is asked of the cheap LLM twice (the sample is not bought again)
    cheap = res.annotations[res.annotations["annotator"] == "cheap"]
    assert cheap["item_id"].is_unique
    assert chk["sample"] == int(np.ceil(0.25 * _route_answers(res)["item_id"].nunique()))


def test_check_buys_humans_instead_where_the_llm_is_at_chance() -> None:
    # an LLM at chance with labels unrelated to the clusters: no answer says where the
    # errors are, so more humans fix more
    n = 400
    emb, _ = _clusters(n)
    ds = _dataset(n, np.random.default_rng(5).random(n) < 0.5)
    res, budget = _route(ds, emb, 0.7)
    chk = res.info["audit_check"]
    assert chk["plan"] == "humans-instead" == res.info["dollars_audit_plan"]
    (f_w, n_w), (f_u, n_u) = chk["fixed_llm_first"], chk["fixed_humans_instead"]
    # about half of either half's labels were changed by the human: the answer says nothing
    assert 0.3 < f_w / n_w < 0.7 and 0.3 < f_u / n_u < 0.7
    assert res.cost <= budget.limit + 1e-9
    cheap = res.annotations[res.annotations["annotator"] == "cheap"]
    assert cheap["item_id"].is_unique
    first, _ = _route(ds, emb, 0.7, dollars_audit_plan="llm-first")
    assert res.human_labels > first.human_labels


def test_check_is_skipped_where_the_sample_would_get_too_few_humans() -> None:
    n = 200  # a quarter of the items at 30%: about 12 humans, fewer than 40
    emb, which = _clusters(n)
    ds = _dataset(n, which == 1)
    res, _ = _route(ds, emb, 0.3)
    assert "audit_check" not in res.info
    assert res.info["dollars_audit_plan"] == "llm-first"


def test_shared_neighbour_search_gives_the_same_label_model() -> None:
    # the router searches the k nearest human-labelled items once and hands them to the
    # kNN prior and to the error rate: the same numbers as each searching on its own
    from quorum.routing.core.label_model import knn_error_rate, knn_label_probs, knn_neighbours

    rng = np.random.default_rng(0)
    space = rng.normal(size=(300, 16))
    space /= np.linalg.norm(space, axis=1, keepdims=True)
    labelled = rng.choice(300, 120, replace=False)
    y = rng.integers(0, 3, 120)
    err = rng.random(120) < 0.3
    query = np.setdiff1d(np.arange(300), labelled)[:100]
    nb = knn_neighbours(space, query, labelled, 7)
    own = knn_label_probs(space, labelled, y, query, 3, k=7, strength=2.0)
    shared = knn_label_probs(space, labelled, y, query, 3, k=7, strength=2.0, neighbours=nb)
    assert np.array_equal(own, shared)
    own_e = knn_error_rate(space, labelled, err, query, k=7)
    assert np.array_equal(own_e, knn_error_rate(space, labelled, err, query, k=7, neighbours=nb))
    # not vacuous: other neighbours (k = 3) give other numbers
    nb3 = knn_neighbours(space, query, labelled, 3)
    assert nb3[1].shape == (100, 3)
    assert not np.array_equal(own, knn_label_probs(space, labelled, y, query, 3, neighbours=nb3))


def _route_auditor(ds, emb, frac, **params):
    """Auditor setting: round(frac T) human labels, the limit B c_H + T c_l."""
    n_h = round(frac * ds.n_items)
    prob = replace(_problem(ds, emb), setting="auditor", human_budget=n_h)
    budget = Budget(n_h * C_H + ds.n_items * PRICES["cheap"], human_limit=n_h)
    res = QuorumRouter(**params).route(prob, RecordedSource(ds), budget, seed=0)
    return res, budget, n_h


def test_auditor_check_buys_humans_instead_where_the_llm_is_at_chance() -> None:
    # the auditor's human labels are a count: humans instead of the LLM keep the count and
    # save the LLM's price on each, which is what the check weighs
    n = 400
    emb, _ = _clusters(n)
    ds = _dataset(n, np.random.default_rng(5).random(n) < 0.5)
    res, budget, n_h = _route_auditor(ds, emb, 0.7)
    first, _, _ = _route_auditor(ds, emb, 0.7, auditor_audit_plan="llm-first")
    assert res.info["audit_check"]["plan"] == "humans-instead" == res.info["auditor_audit_plan"]
    assert first.info["auditor_audit_plan"] == "llm-first" and "audit_check" not in first.info
    assert res.human_labels == first.human_labels == n_h
    # the LLM was not asked on most human-labelled items: the run spent less
    assert res.llm_calls < first.llm_calls == n
    assert res.cost < first.cost <= budget.limit + 1e-9
    assert res.labels["output"].notna().all()


def test_auditor_check_keeps_llm_first_where_the_llms_answer_shows_the_errors() -> None:
    ds, emb = _answer_shows_the_errors()
    res, budget, n_h = _route_auditor(ds, emb, 0.5)
    assert res.info["audit_check"]["plan"] == "llm-first" == res.info["auditor_audit_plan"]
    assert res.human_labels == n_h and res.llm_calls == ds.n_items
    assert res.cost <= budget.limit + 1e-9
    with pytest.raises(ValueError, match="auditor_audit_plan"):
        QuorumParams(auditor_audit_plan="sometimes")


def _constant_llm(n: int = 400) -> tuple[Dataset, np.ndarray]:
    """Random binary labels; the cheap LLM answers "A" on every item."""
    emb, _ = _clusters(n)
    gold = np.random.default_rng(11).choice(["A", "B"], size=n)
    return _dataset(n, gold == "A", gold=gold), emb


def test_a_constant_llm_is_dropped_and_its_money_buys_humans() -> None:
    ds, emb = _constant_llm()
    # "skill": the label model's prior is the label frequencies, so items nobody was
    # asked on get the LLM's commonest answer (with "skill+knn", wherever the kNN prior
    # learnt something from the neighbours, they get its label)
    res, budget = _route(ds, emb, 0.5, label_model_vote="skill")
    old, _ = _route(ds, emb, 0.5, llm_sample=0, label_model_vote="skill")
    sample = res.info["llm_sample"]
    assert (sample["answers"], sample["differ_from_commonest"], sample["r"]) == (40, 0, 1 / 42)
    # c_l / c_H (1 - p_maj), p_maj from the probe's human labels: at most 0.1 (1 - 1/2)
    assert sample["r"] < sample["humans_worth"] <= 0.05 and sample["humans_only"]
    assert res.info["dollars_audit_plan"] == "humans-only"
    ann = res.annotations
    assert (ann["annotator"] == "cheap").sum() == 40  # the sample, nothing after it
    assert set(_route_answers(res)["annotator"]) == {"cheap", "gold"}
    # every cent left after the sample went to humans: not one more is affordable
    assert budget.limit - C_H < res.cost <= budget.limit + 1e-9
    assert res.human_labels > old.human_labels
    # items nobody was asked on get what the LLM would have said there
    labels = res.labels.set_index("item_id")
    unasked = labels[labels["n_annotations"] == 0]
    assert len(unasked) == ds.n_items - res.human_labels - 40 + len(
        set(ann.loc[ann["annotator"] == "cheap", "item_id"])
        & set(ann.loc[ann["annotator"] == "gold", "item_id"])
    )
    assert (unasked["output"] == "A").all()
    assert labels["output"].notna().all()
    gold = ds.items.set_index("item_id")["gold"]
    acc = (labels["output"] == gold.reindex(labels.index)).mean()
    old_acc = (old.labels.set_index("item_id")["output"] == gold.reindex(labels.index)).mean()
    assert acc > old_acc


def test_an_informative_llm_keeps_the_plan_and_its_labels() -> None:
    # the sample only moves 40 of the answers llm-first buys anyway to the front
    ds, emb = _answer_shows_the_errors()
    res, _ = _route(ds, emb, 0.5, dollars_audit_plan="llm-first")
    old, _ = _route(ds, emb, 0.5, dollars_audit_plan="llm-first", llm_sample=0)
    assert res.info["llm_sample"]["humans_only"] is False
    assert res.info["dollars_audit_plan"] == "llm-first"
    assert "llm_sample" not in old.info
    pd.testing.assert_frame_equal(res.labels, old.labels)
    assert res.cost == pytest.approx(old.cost, abs=1e-9)
    assert res.human_labels == old.human_labels and res.llm_calls == old.llm_calls


def test_auditor_drops_a_constant_llm_and_keeps_its_human_count() -> None:
    ds, emb = _constant_llm()
    res, budget, n_h = _route_auditor(ds, emb, 0.3, label_model_vote="skill")
    assert res.info["auditor_audit_plan"] == "humans-only"
    assert res.human_labels == n_h  # a count in this setting: the saving is money
    assert res.llm_calls == 40  # calibration answers count towards the sample
    assert res.cost == pytest.approx(n_h * C_H + 40 * PRICES["cheap"])
    assert res.cost < budget.limit
    labels = res.labels.set_index("item_id")
    assert (labels.loc[labels["n_annotations"] == 0, "output"] == "A").all()
    with pytest.raises(ValueError, match="llm_sample"):
        QuorumParams(llm_sample=-1)


def test_unasked_items_get_their_neighbours_label_where_neighbours_know_it() -> None:
    # labels follow the two clusters; the LLM answers "A" everywhere: the items nobody is
    # asked on get their cluster's label from the kNN vote, not the LLM's "A"
    n = 400
    emb, which = _clusters(n)
    gold = np.where(which == 0, "A", "B")
    ds = _dataset(n, gold == "A", gold=gold)
    res, budget = _route(ds, emb, 0.3)
    assert res.info["dollars_audit_plan"] == "humans-only"
    assert res.info["unasked_labels"] == "kNN vote, uniform prior"
    labels = res.labels.set_index("item_id")
    unasked = labels[labels["n_annotations"] == 0]
    assert len(unasked) > 100
    truth = pd.Series(gold, index=ds.items["item_id"]).reindex(unasked.index)
    assert (unasked["output"] == truth).mean() > 0.95
    assert (unasked["output"] == "B").sum() > 50
    assert res.cost <= budget.limit + 1e-9


def test_instead_z_at_one_half_is_the_means_rule() -> None:
    # audit_check_confidence=0.5 (z > 0) chooses exactly as the rule before issue 39:
    # "humans-instead" iff p_instead / (c_H - c_l) > p_first / c_H (Beta(1, 1) means)
    from quorum.routing.quorum.audit.plans import instead_z

    for n_w, n_u in ((20, 20), (58, 57), (101, 101)):
        for f_w in range(0, n_w + 1, 3):
            for f_u in range(0, n_u + 1, 3):
                p_w, p_u = (f_w + 1) / (n_w + 2), (f_u + 1) / (n_u + 2)
                means = p_u / (C_H - PRICES["cheap"]) > p_w / C_H
                assert (instead_z(f_w, n_w, f_u, n_u, C_H, PRICES["cheap"]) > 0) == means
    assert QuorumParams().audit_check_confidence == 0.9
    with pytest.raises(ValueError, match="audit_check_confidence"):
        QuorumParams(audit_check_confidence=1.0)


def test_check_keeps_llm_first_on_a_tie_where_the_llm_is_mostly_right() -> None:
    # the cheap LLM right 85% of the time, the labels unrelated to the clusters and no
    # calibration before the check: in one round both halves of its sample are random picks
    # (2 and 4 of 26 labels changed) and the means' rule took "humans-instead" on that tie.
    # Now the first round (13 + 13) shows the LLM mostly right, so the second is picked by
    # the refitted label model, and a tie would need z > 1.28 to leave "llm-first"
    n = 600
    emb, _ = _clusters(n)
    ds = _dataset(n, np.random.default_rng(100).random(n) < 0.85, seed=0)
    old, _ = _route(ds, emb, 0.5, audit_check_confidence=0.5)
    new, budget = _route(ds, emb, 0.5)
    c_old, c_new = old.info["audit_check"], new.info["audit_check"]
    for key in ("sample", "humans"):
        assert c_old[key] == c_new[key]
    assert c_old["fixed_llm_first"] == [2, 26] and c_old["fixed_humans_instead"] == [4, 26]
    assert c_old["plan"] == "humans-instead" and c_old["confidence"] == 0.5
    assert c_new["fixed_llm_first"][1] == c_new["fixed_humans_instead"][1] == 26
    assert c_new["fixed_llm_first"][0] > c_old["fixed_llm_first"][0]  # the targeted round
    assert c_new["z_humans_instead"] < 1.2816 and c_new["confidence"] == 0.9
    assert c_new["plan"] == "llm-first" == new.info["dollars_audit_plan"]
    assert new.cost <= budget.limit + 1e-9
    # llm-first: the cheap LLM answered every routed item (the sample's included) once
    cheap = new.annotations[new.annotations["annotator"] == "cheap"]
    assert cheap["item_id"].is_unique
    assert new.human_labels < old.human_labels  # humans on top of the LLM cost c_H each
    # an LLM at chance: the first round does not show it mostly right, the picks are the
    # one-round picks (bought in two rounds) and the means' rule decides as before
    weak = _dataset(n, np.random.default_rng(5).random(n) < 0.5, seed=0)
    w_old, _ = _route(weak, emb, 0.7, audit_check_confidence=0.5)
    w_new, _ = _route(weak, emb, 0.7)
    assert {k: v for k, v in w_new.info["audit_check"].items() if k != "confidence"} == {
        k: v for k, v in w_old.info["audit_check"].items() if k != "confidence"
    }
    assert w_new.cost == w_old.cost and w_new.human_labels == w_old.human_labels
    assert (w_new.labels["output"] == w_old.labels["output"]).all()


def test_check_is_not_made_where_the_calibration_shows_the_llm_mostly_right() -> None:
    # 26 calibration items with the human's and the cheap LLM's answers (85% right on two
    # labels: below (1 - 1/2) / 2 = 0.25 changed) are enough at audit_check_min=20: no
    # sample, "llm-first" at once; 0.5 restores the check
    n = 1000
    emb, _ = _clusters(n)
    ds = _dataset(n, np.random.default_rng(100).random(n) < 0.85, seed=0)
    res, budget = _route(ds, emb, 0.5, audit_check_min=20)
    chk = res.info["audit_check"]
    assert "skipped" in chk and chk["plan"] == "llm-first" == res.info["dollars_audit_plan"]
    wrong, known = chk["calibration_errors"]
    assert known == res.info["n_calibration"] >= 20 and wrong / known < 0.25
    assert res.cost <= budget.limit + 1e-9
    old, _ = _route(ds, emb, 0.5, audit_check_min=20, audit_check_confidence=0.5)
    assert "skipped" not in old.info["audit_check"] and old.info["audit_check"]["humans"] > 0
    # an LLM at chance: the calibration does not settle it, the check is made
    weak = _dataset(n, np.random.default_rng(5).random(n) < 0.5, seed=0)
    res_w, _ = _route(weak, emb, 0.5, audit_check_min=20)
    assert "skipped" not in res_w.info["audit_check"]
    assert res_w.info["audit_check"]["confidence"] == 0.5  # humans changed about half


def test_the_decisions_page_says_why_the_check_was_not_made() -> None:
    from quorum.live.outputs.decisions import decision_lines

    skipped = {"dollars_audit_plan": "llm-first", "audit_check": {
        "skipped": "the calibration shows the cheapest LLM mostly right",
        "calibration_errors": [6, 45], "plan": "llm-first"}}  # fmt: skip
    text = " ".join(decision_lines(skipped))
    assert "not made" in text and "6 of the cheapest LLM's 45" in text and "None" not in text
    made = {"audit_check": {"sample": 97, "humans": 53, "fixed_llm_first": [13, 27],
                            "fixed_humans_instead": [13, 26], "plan": "llm-first"}}  # fmt: skip
    assert "a sample of 97 item(s) with 53 human label(s)" in " ".join(decision_lines(made))
