"""The multi-label task kind: encoding, the per-label vote, Jaccard scores, sklearn metrics,
bad input, folder recognition and a replay through QUORUM, Random and the baselines
(synthetic data: mechanics only, never quality)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from quorum.data.io import load_folder
from quorum.data.schema import AnnotatorSpec, Dataset, TaskSpec
from quorum.errors import DataValidationError
from quorum.methods import get_router_class, make_router
from quorum.routing.core.base import RoutingProblem
from quorum.routing.core.budget import Budget
from quorum.routing.core.replay import RecordedSource
from quorum.tasks.base import ItemView
from quorum.tasks.multilabel import LabelSetVote, MultiLabel, decode, encode
from quorum.tasks.registry import kind_of

LABELS = ["care", "loyalty", "purity", "none"]
ITEM = ItemView("1", "text")


def kind(**kw) -> MultiLabel:
    return kind_of("multilabel", LABELS, **kw)  # type: ignore[return-value]


def test_encode_is_canonical_in_label_order():
    k = kind()
    assert k.encode(["purity", "care"]) == k.encode({"care", "purity"}) == '["care","purity"]'
    assert k.encode([]) == "[]"
    assert decode(k.encode(["loyalty"])) == frozenset({"loyalty"})


def test_vote_keeps_labels_above_half_of_the_weight():
    v = LabelSetVote(tuple(LABELS), w_human=10.0, w_llm=1.0)
    outs = {
        "a": encode(["care", "purity"], LABELS),
        "b": encode(["care"], LABELS),
        "c": encode(["loyalty"], LABELS),
    }
    y, agr = v.vote(outs, lambda a: False)
    assert decode(y) == {"care"}  # care 2/3, purity 1/3, loyalty 1/3
    # agreement: mean Jaccard with {care}: (1/2 + 1 + 0) / 3
    assert agr == pytest.approx(0.5)
    # a human outweighs the LLMs on every label
    y, agr = v.vote({**outs, "h": encode(["purity"], LABELS)}, lambda a: a == "h")
    assert decode(y) == {"purity"}
    assert 0.0 <= agr <= 1.0


def test_exact_half_goes_the_way_of_the_most_trusted_answer():
    v = LabelSetVote(tuple(LABELS))
    outs = {"a": encode(["care"], LABELS), "b": encode(["purity"], LABELS)}
    assert decode(v.vote(outs, lambda a: False, ["b", "a"])[0]) == {"purity"}
    assert decode(v.vote(outs, lambda a: False, ["a", "b"])[0]) == {"care"}


def test_min_and_max_labels_bound_the_aggregate():
    v = LabelSetVote(tuple(LABELS), min_labels=1)
    outs = {"a": encode(["care"], LABELS), "b": encode(["purity"], LABELS), "c": encode([], LABELS)}
    assert len(decode(v.vote(outs, lambda a: False, ["a", "b", "c"])[0])) == 1
    v2 = LabelSetVote(tuple(LABELS), max_labels=1)
    outs = {"a": encode(["care", "purity"], LABELS), "b": encode(["care", "purity"], LABELS)}
    assert decode(v2.vote(outs, lambda a: False)[0]) == {"care"}  # tie by label order


def test_similarity_delta_and_consensus():
    v = LabelSetVote(tuple(LABELS))
    a, b = encode(["care", "purity"], LABELS), encode(["care"], LABELS)
    assert v.similarity(a, b) == 0.5
    assert v.similarity(None, b) == 0.0
    assert v.similarity("[]", "[]") == 1.0
    assert v.delta([a, a]) == 0.0
    assert 0.0 < v.delta([a, b, encode(["loyalty"], LABELS)]) <= 1.0
    assert v.consensus(0.9, 2) and not v.consensus(0.9, 1)


def test_metrics_are_sklearns():
    from sklearn.metrics import f1_score
    from sklearn.preprocessing import MultiLabelBinarizer

    k = kind()
    gold = [["care"], ["care", "purity"], ["none"], ["loyalty"]]
    pred = [["care"], ["care"], ["purity"], None]
    refs = pd.Series([k.encode(g) for g in gold], index=list("abcd"))
    outs = pd.Series([None if p is None else k.encode(p) for p in pred], index=list("abcd"))
    m = k.metrics(outs, refs)
    mlb = MultiLabelBinarizer(classes=LABELS)
    G = mlb.fit_transform(gold)
    P = mlb.transform([p or [] for p in pred])
    assert m["micro_f1"] == pytest.approx(f1_score(G, P, average="micro"))
    assert m["macro_f1"] == pytest.approx(f1_score(G, P, average="macro", zero_division=0))
    assert m["exact_match"] == pytest.approx(0.25)
    assert m["jaccard"] == pytest.approx((1 + 0.5 + 0 + 0) / 4)  # no output scores 0
    assert k.metric(outs, refs, "en") == m["jaccard"]
    assert k.scorer("en")(k.encode(["care"]), k.encode(["care", "purity"])) == 0.5


def test_parse_llm_answers():
    k = kind(max_labels=2)
    assert k.parse(None, '["Care", "purity"]', ITEM).output == '["care","purity"]'
    assert k.parse(None, "Labels: care, loyalty", ITEM).output == '["care","loyalty"]'
    assert k.parse(None, "[]", ITEM).output == "[]"
    for bad, why in [
        ('["care", "fairness"]', "outside the label set"),
        ('["care", "care"]', "duplicate"),
        ('["care", "purity", "loyalty"]', "max_labels"),
        ("", "empty"),
    ]:
        p = k.parse(None, bad, ITEM)
        assert not p.ok and why in p.reason, (bad, p)
    k1 = kind(min_labels=1)
    p = k1.parse(None, "[]", ITEM)
    assert not p.ok and "min_labels" in p.reason


def test_people_answers_and_label_studio():
    k = kind()
    assert k.match_human("care;purity", ITEM) == '["care","purity"]'
    assert k.match_human("care;fairness", ITEM) is None
    assert 'choice="multiple"' in k.labelstudio_control()
    mine, raw = k.labelstudio_raw(
        {"from_name": "labels", "value": {"choices": ["purity", "care"]}}, lambda s: s
    )
    assert mine and k.labelstudio_value(raw, []) == '["care","purity"]'
    value, typ = k.labelstudio_prediction('["care"]', [], lambda s: s)
    assert value == {"choices": ["care"]} and typ == "choices"
    schema = k.answer_schema()
    assert schema["items"]["enum"] == LABELS and schema["uniqueItems"] is True


@pytest.mark.parametrize("label", ["a,b", "a;b", " "])
def test_label_names_that_cannot_be_held_are_one_line_errors(label):
    with pytest.raises(DataValidationError) as exc:
        kind_of("multilabel", ["x", label])
    assert "\n" not in str(exc.value)


def test_task_spec_checks():
    with pytest.raises(ValueError, match="duplicates"):
        TaskSpec(name="t", type="multilabel", labels=["a", "a"])
    with pytest.raises(ValueError, match="labels"):
        TaskSpec(name="t", type="multilabel")
    with pytest.raises(ValueError, match="min_labels"):
        TaskSpec(name="t", type="classification", labels=["a"], min_labels=1)
    t = TaskSpec(name="t", type="multilabel", labels=LABELS, min_labels=1, max_labels=2)
    assert t.kind.min_labels == 1 and t.kind.max_labels == 2


def toy(n=80, seed=0, acc=(0.5, 0.7, 0.9)) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    gold = [sorted(set(rng.choice(LABELS, size=rng.integers(1, 3)).tolist())) for _ in range(n)]
    items = pd.DataFrame({"item_id": [f"i{t}" for t in range(n)], "text": ["x"] * n, "gold": gold})
    rows = []
    for k, a in enumerate(acc):
        for t in range(n):
            out = gold[t] if rng.random() < a else [str(rng.choice(LABELS))]
            rows.append(
                {"item_id": f"i{t}", "annotator": f"m{k}", "output": out, "annotator_kind": "model"}
            )
    return items, pd.DataFrame(rows)


def test_folder_without_task_file_is_recognised(tmp_path):
    items, answers = toy()
    answers.loc[0, "output"] = ["fairness"]  # outside the label set: dropped and counted
    items.to_parquet(tmp_path / "items.parquet")
    answers.to_parquet(tmp_path / "answers.parquet")
    ds = load_folder(tmp_path)
    assert ds.task.type.value == "multilabel"
    assert set(ds.task.labels) == set(LABELS)
    assert ds.meta["dropped"] == {"m0": 1}
    assert all(isinstance(g, str) and g.startswith("[") for g in ds.items["gold"])


def test_folder_with_a_task_file_wins_and_unknown_gold_is_an_error(tmp_path):
    items, answers = toy()
    items["gold"] = [";".join(g) for g in items["gold"]]
    items.to_csv(tmp_path / "items.csv", index=False)
    answers["output"] = [json.dumps(list(o)) for o in answers["output"]]
    answers.drop(columns="annotator_kind").to_csv(tmp_path / "annotations.csv", index=False)
    (tmp_path / "task.toml").write_text(
        'name = "ml"\ntype = "multilabel"\nlabels = ["care", "loyalty", "purity", "none"]\n'
    )
    ds = load_folder(tmp_path)
    assert ds.task.type.value == "multilabel" and ds.items["gold"][0].startswith("[")
    (tmp_path / "task.toml").write_text(
        'name = "ml"\ntype = "multilabel"\nlabels = ["care", "loyalty", "purity"]\n'
    )
    with pytest.raises(DataValidationError, match="outside the label set"):
        load_folder(tmp_path)


def _dataset(n=80) -> Dataset:
    items, answers = toy(n)
    k = kind()
    task = TaskSpec(
        name="toy-ml",
        type="multilabel",
        labels=LABELS,
        annotators=[AnnotatorSpec(name=f"m{i}", price=p) for i, p in enumerate((0.01, 0.03, 0.05))],
    )
    items["gold"] = [k.encode(g) for g in items["gold"]]
    answers["output"] = [k.encode(o) for o in answers["output"]]
    return Dataset(task, items, answers.drop(columns="annotator_kind"))


def _problem(ds: Dataset, setting: str, human_budget=None) -> RoutingProblem:
    rng = np.random.default_rng(1)
    n = ds.n_items
    emb = rng.normal(size=(n, 8))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return RoutingProblem(
        task=ds.task,
        item_ids=ds.items["item_id"].to_numpy(),
        phi=rng.random((n, 4)),
        embeddings=emb,
        setting=setting,
        human_budget=human_budget,
    )


@pytest.mark.parametrize("method", ["quorum", "random", "cdi", "coannotating", "hypac"])
@pytest.mark.parametrize("setting", ["dollars", "auditor"])
def test_replay_labels_every_item_within_budget(method, setting):
    ds = _dataset()
    k = ds.task.kind
    T = ds.n_items
    if setting == "auditor":
        n_h = round(0.3 * T)
        prob = _problem(ds, "auditor", n_h)
        budget = Budget(n_h * 0.1 + T * 0.01 + T * 0.1, human_limit=n_h)
    else:
        prob = _problem(ds, "dollars")
        budget = Budget(0.3 * T * 0.1)
    src = RecordedSource(ds, embed_fn=k.output_vectors())
    res = make_router(method).route(prob, src, budget, seed=0)
    assert res.cost <= budget.limit + 1e-9
    assert len(res.labels) == T
    outs = res.labels["output"].dropna()
    assert len(outs) == T
    assert all(k.check_set(sorted(decode(o))) is None for o in outs)


def test_label_model_baselines_refuse_the_kind():
    k = kind()
    assert get_router_class("quorum").supports(k) and get_router_class("random").supports(k)
    assert not get_router_class("araida").supports(k)
    assert not get_router_class("sant").supports(k)


def test_datasets_init_writes_a_folder_of_label_lists(tmp_path):
    from typer.testing import CliRunner

    from quorum.cli.main import app

    items, answers = toy(20)
    items.to_parquet(tmp_path / "items.parquet")
    answers.drop(columns="annotator_kind").to_parquet(tmp_path / "answers.parquet")
    out = tmp_path / "ds"
    res = CliRunner().invoke(app, ["datasets", "init", str(out), "--type", "multilabel",
                                   "--from", str(tmp_path / "items.parquet"), "--answers-file",
                                   str(tmp_path / "answers.parquet")])  # fmt: skip
    assert res.exit_code == 0, res.output
    ds = load_folder(out)
    assert ds.task.type.value == "multilabel" and set(ds.task.labels) == set(LABELS)
    assert len(ds.annotations) == len(answers) and ds.items["gold"][0].startswith("[")


def test_datasets_init_takes_a_folder_as_it_is_and_recognises_the_kind(tmp_path):
    """`quorum datasets init OUT --from FOLDER` on a folder laid out as mfrc's (items and
    answers parquet, label lists, no task file): the kind recognised without --type, the
    people (annotator_kind) declared as humans; --help lists every kind."""
    from typer.testing import CliRunner

    from quorum.cli.main import app

    items, answers = toy(20)
    answers.loc[answers["annotator"] == "m2", "annotator_kind"] = "human"
    src = tmp_path / "mfrc-like"
    src.mkdir()
    items.to_parquet(src / "items.parquet")
    answers.to_parquet(src / "answers.parquet")
    out = tmp_path / "ds"
    res = CliRunner().invoke(app, ["datasets", "init", str(out), "--from", str(src)])
    assert res.exit_code == 0, res.output
    ds = load_folder(out)
    assert ds.task.type.value == "multilabel" and set(ds.task.labels) == set(LABELS)
    assert {a.name: a.kind for a in ds.task.annotators}["m2"] == "human"
    assert len(ds.annotations) == len(answers)
    # a table without label lists stays classification, as before
    flat = tmp_path / "flat.csv"
    pd.DataFrame({"item_id": ["1", "2"], "text": ["a", "b"], "gold": ["x", "y"]}).to_csv(flat)
    res = CliRunner().invoke(app, ["datasets", "init", str(tmp_path / "c"), "--from", str(flat)])
    assert res.exit_code == 0 and load_folder(tmp_path / "c").task.type.value == "classification"
    assert (
        CliRunner()
        .invoke(app, ["datasets", "init", str(tmp_path / "e"), "--from", str(tmp_path / "ds2")])
        .exit_code
        != 0
    )
    text = CliRunner().invoke(app, ["datasets", "init", "--help"], terminal_width=200).output
    assert all(t in text for t in ("multilabel", "spans", "pairwise", "summarization"))
