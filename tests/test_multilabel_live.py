"""Multi-label live: `[task] type = "multilabel"` with the real llama.cpp SmolLM2 server
(constrained to a JSON list of labels) and a file-queue team (k = 2, one noisy person);
every item labelled, the budget kept, the export read back by `datasets`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from live_servers.fixtures import write_project
from live_servers.scripted_team import FileQueueTeam
from quorum.live.machines.output import OutputConstraint
from quorum.live.machines.prompts import PromptBuilder, PromptTemplate
from quorum.live.project.config import load_project
from quorum.tasks.base import ItemView
from quorum.tasks.registry import kind_of
from test_live_e2e import smollm2  # noqa: F401 - the real llama.cpp server fixture

LABELS = ["care", "equality", "non-moral", "purity"]


def _builder(**kw) -> PromptBuilder:
    kind = kind_of("multilabel", LABELS, **kw)
    return PromptBuilder(
        kind.type, LABELS, None, None,
        PromptTemplate.resolve(None, "multilabel", None, "prompt"),
        PromptTemplate.resolve(None, "confidence", None, "confidence"), None, kind=kind,
    )  # fmt: skip


def test_request_fields_and_prompt():
    b = _builder(max_labels=2)
    item = ItemView("1", "a text")
    msg = b.annotation_messages(item)[0]["content"]
    assert "JSON list" in msg and "'non-moral'" in msg and "a text" in msg
    g = OutputConstraint("grammar", False, b).params(item)["grammar"]
    assert g.startswith('root ::= "["') and 'l2 ::= "\\"non-moral\\""' in g
    js = OutputConstraint("json_schema", False, b).params(item)["response_format"]
    schema = js["json_schema"]["schema"]["properties"]["labels"]
    assert schema["items"]["enum"] == LABELS and schema["maxItems"] == 2


def test_project_file_checks(tmp_path):
    base = {"name": "ml", "items": {"path": "items.csv"}, "budget": {"limit": 1.0},
            "annotators": [{"name": "team", "kind": "human", "price": 0.1},
                           {"name": "m", "model": "openai/m", "price": 0.01}],
            "human": "team"}  # fmt: skip
    pd.DataFrame({"item_id": ["1"], "text": ["x"]}).to_csv(tmp_path / "items.csv", index=False)
    cfg = load_project(write_project(tmp_path, {**base, "task": {
        "type": "multilabel", "labels": LABELS, "min_labels": 1, "max_labels": 2}}))  # fmt: skip
    assert cfg.task.kind.min_labels == 1 and cfg.task.kind.max_labels == 2
    for task, why in [
        ({"type": "multilabel", "labels": ["a;b", "c"]}, "';'"),
        ({"type": "multilabel", "labels": ["a", "a"]}, "duplicates"),
        ({"type": "classification", "labels": ["a", "b"], "max_labels": 2}, "max_labels"),
    ]:
        with pytest.raises(Exception, match=why):
            load_project(write_project(tmp_path, {**base, "task": task}))


def _items(data_dir: Path, folder: Path, n: int) -> tuple[Path, dict[str, list[str]]]:
    df = pd.read_parquet(data_dir / "mfrc_multilabel" / "items.parquet")
    keep = [i for i, g in zip(df["item_id"], df["gold"], strict=True) if set(g) <= set(LABELS)]
    df = df[df["item_id"].isin(keep[:n])]
    gold = {i: list(g) for i, g in zip(df["item_id"], df["gold"], strict=True)}
    out = folder / "items.csv"
    df.assign(gold=[";".join(g) for g in df["gold"]]).to_csv(out, index=False)
    return out, gold


class Team(FileQueueTeam):
    """ann and bea answer the gold set, bad always the set {purity}; two different people
    per item (as pending.csv asks), each in turn; the answers go to answers.csv as a;b."""

    PEOPLE = ("ann", "bea", "bad")

    def __init__(self, queue: Path, gold: dict[str, list[str]]) -> None:
        self.gold = gold
        super().__init__(queue, self._label, self.PEOPLE)

    def _label(self, who: str, item: str) -> str:
        return "purity" if who == "bad" else ";".join(self.gold[item])


@pytest.mark.slow
@pytest.mark.realdata
def test_live_run_with_smollm2_and_a_team(tmp_path, shared_data_dir, smollm2):  # noqa: F811
    import datasets

    from quorum.live.outputs.hf import write_hf
    from quorum.live.outputs.status import status
    from quorum.live.run.runner import annotate

    api_base, _log = smollm2
    items, gold = _items(shared_data_dir, tmp_path, 8)
    data = {
        "name": "mfrc-live",
        "method": "quorum",
        "features": "light",
        "items": {"path": str(items), "gold_column": None},
        "task": {"type": "multilabel", "labels": LABELS, "min_labels": 1},
        "budget": {"limit": 1.2},
        "annotators": [
            {
                "name": "smollm2",
                "model": "openai/smollm2",
                "api_base": api_base,
                "price": 0.01,
                "max_tokens": 24,
                "temperature": 0,
                "seed": 0,
                "timeout": 60,
            },
            {"name": "team", "kind": "human", "price": 0.1},
        ],
        "human": "team",
        "humans": {"labels_per_item": 2},
    }
    cfg = load_project(write_project(tmp_path, data))
    team = Team(cfg.queue_dir, gold)
    try:
        s = annotate(cfg, quiet=True, wait=180)
    finally:
        team.close()
    con = sqlite3.connect(cfg.ledger_path)
    calls = pd.read_sql_query("SELECT * FROM calls", con)
    con.close()
    assert s.status == "finished"
    llm = calls[(calls["annotator"] == "smollm2") & (calls["kind"] == "annotate")]
    assert len(llm) >= 1
    assert "grammar" in json.loads(llm["params"].iloc[0])  # constrained by default
    for r in llm.to_dict("records"):  # every answer a set of the task, or recorded unusable
        if r["status"] == "ok":
            got = json.loads(r["output"])
            assert set(got) <= set(LABELS) and len(got) >= 1
        else:
            assert r["output"] is None and r["cost"] >= 0
    st = status(cfg)
    assert float(st["spent"]) <= 1.2 + 1e-9
    out = write_hf(cfg, tmp_path / "hf")
    ds = datasets.load_from_disk(str(out))
    assert len(ds) == len(gold)
    feat = ds.features["label"]
    assert isinstance(feat, datasets.Sequence) and feat.feature.names == LABELS
    assert all(len(v) >= 1 for v in ds["label"])  # every item labelled (min_labels = 1)
    humans = calls[calls["annotator"] == "team"]
    for iid in set(humans["item_id"]):  # the careful people out-vote bad where it differs
        row = ds[next(r for r, x in enumerate(ds["item_id"]) if x == iid)]
        names = {feat.feature.int2str(k) for k in row["label"]}
        assert names in ({*gold[iid]}, {"purity"})


@pytest.mark.realdata
def test_report_shows_each_label(tmp_path, shared_data_dir):
    """A multi-label run (a local keyword model, a file-queue team of k = 2 with one noisy
    person): the status and the report give each label's counts and agreement, the same
    numbers as the ledger's labels read label by label; the noisy person's label (purity)
    is outvoted on the items she shares with a careful one."""
    from quorum.live.humans.agreement import ledger_labels
    from quorum.live.ledger.store import Ledger
    from quorum.live.outputs.export import export_frame
    from quorum.live.outputs.report import write_report
    from quorum.live.outputs.status import status
    from quorum.live.run.runner import annotate

    items, gold = _items(shared_data_dir, tmp_path, 10)
    data = {
        "name": "mfrc-report",
        "method": "live_servers.routers:CascadeRouter",
        "method_params": {"batch": 4, "human_every": 2, "confidence_every": 0},
        "features": "light",
        "items": {"path": str(items), "gold_column": None},
        "task": {"type": "multilabel", "labels": LABELS},
        "budget": {"limit": 2.0},
        "annotators": [
            {"name": "kw", "kind": "model", "model": "live_servers.models:moral_keywords",
             "price": 0.001},
            {"name": "team", "kind": "human", "price": 0.1},
        ],
        "human": "team",
        "humans": {"labels_per_item": 2},
    }  # fmt: skip
    cfg = load_project(write_project(tmp_path, data))
    team = Team(cfg.queue_dir, gold)
    try:
        s = annotate(cfg, quiet=True, wait=120)
    finally:
        team.close()
    assert s.status == "finished"
    st = status(cfg)
    per = {p["label"]: p for p in st["agreement"]["per_label"]}
    assert list(per) == LABELS
    ledger = Ledger(cfg.ledger_path, readonly=True)
    try:
        people, vote, models = ledger_labels(ledger)
    finally:
        ledger.close()
    kind = cfg.task.kind
    # two people an item, three on a check whose two disagreed (a third person, issue 38)
    per_item = people.groupby("item_id")["annotator"].nunique()
    assert len(vote) >= 3 and per_item.isin([2, 3]).all() and len(per_item) == len(vote)
    assert (per_item == 3).sum() <= s.quality["quality_n_checks"]
    for lab in LABELS:
        holding = sum(lab in kind.label_set(v) for v in vote)
        assert per[lab]["human_votes"] == holding and per[lab]["votes"] == len(vote)
        kw = per[lab]["models"]["kw"]
        assert kw["answers"] == len(models) and kw["holding"] == sum(
            lab in kind.label_set(v) for v in models["label"]
        )
    # the noisy person always ticks purity alone; the vote keeps purity only where the
    # gold holds it, and the careful person's other labels
    for iid, v in vote.items():
        assert kind.label_set(v) == set(gold[iid]), (iid, v)
    frame = export_frame(cfg)
    page = write_report(cfg).read_text()
    assert "<h2>Each label</h2>" in page and "Labels: counts and the people" in page
    for lab in LABELS:
        n = sum(lab in kind.label_set(v) for v in frame["label"])
        assert f"<td>{lab}</td><td>{n}</td>" in page.replace("\n", "").replace(" ", "")
