"""Structured task kinds live (spans, multi-label, pairwise): machine answers are read
against the task's own labels and names, whatever the annotator (local model or LLM)."""

from __future__ import annotations

import sqlite3

import pandas as pd

from live_servers.fixtures import write_project
from quorum.live.project.config import load_project


def _calls(cfg) -> pd.DataFrame:
    con = sqlite3.connect(cfg.ledger_path)
    try:
        return pd.read_sql_query("SELECT * FROM calls WHERE kind = 'annotate'", con)
    finally:
        con.close()


def _span_project(tmp_path, models: list[str], label_names: dict | None = None):
    texts = ["Arsenal beat Spurs on Sunday.", "Leeds lost to Chelsea on Monday.",
             "Chelsea drew.", "Spurs won on Sunday."]  # fmt: skip
    ids = [f"i{k}" for k in range(len(texts))]
    items = pd.DataFrame({"item_id": ids, "text": texts, "gold": ["[]"] * len(texts)})
    items.to_csv(tmp_path / "items.csv", index=False)
    task = {"type": "spans", "labels": ["Team", "Day"]}
    if label_names:
        task["label_names"] = label_names
    data = {
        "name": "spans-answers",
        "method": "live_servers.routers:CascadeRouter",
        "method_params": {"batch": 4, "human_every": 100, "confidence_every": 0,
                          "second": 1.0},
        "features": "light",
        "items": {"path": str(tmp_path / "items.csv"), "gold_column": "gold"},
        "task": task,
        "budget": {"limit": 1.0, "quality_checks": 0},
        "annotators": [{"name": m.split(":")[-1], "kind": "model", "model": m,
                        "price": 0.001} for m in models],
        "human": "gold",
        "human_price": 0.1,
    }  # fmt: skip
    return load_project(write_project(tmp_path, data))


def test_a_span_type_outside_the_task_is_unparseable_not_a_label(tmp_path):
    """docs/live.md: an unknown span type makes the answer unparseable (paid, recorded);
    the machine path read answers without the task's labels and took any type."""
    from quorum.live.run.runner import annotate

    cfg = _span_project(tmp_path, ["live_servers.models:span_unknown_type",
                                   "live_servers.models:span_spotter"])  # fmt: skip
    annotate(cfg, quiet=True)
    calls = _calls(cfg)
    bad = calls[calls["annotator"] == "span_unknown_type"]
    assert len(bad) > 0
    assert set(bad["status"]) == {"unparseable"}
    assert bad["parse_note"].str.contains("unknown span type 'Bogus'").all()
    assert (bad["cost"] > 0).all()  # paid and recorded
    for out in calls.loc[calls["status"] == "ok", "output"]:
        assert "Bogus" not in out


def test_span_types_given_by_their_shown_names_are_read_as_the_labels(tmp_path):
    """The prompt and the grammar show a span type by its ``label_names`` entry; an answer
    naming it so is a span of the label (not of the name), and the Hugging Face export,
    whose types are ``task.labels``, loads."""
    import datasets

    from quorum.live.outputs.hf import write_hf
    from quorum.live.run.runner import annotate
    from quorum.tasks.spans import decode_spans

    names = {"Team": "Team name", "Day": "Day of week"}
    cfg = _span_project(tmp_path, ["live_servers.models:span_named_types"], names)
    annotate(cfg, quiet=True)
    calls = _calls(cfg)
    calls = calls[calls["annotator"] == "span_named_types"]
    assert len(calls) == 4 and set(calls["status"]) == {"ok"}
    for text_id, out in zip(calls["item_id"], calls["output"], strict=True):
        types = {lab for _, _, lab in decode_spans(out)}
        assert types and types <= {"Team", "Day"}, (text_id, out)
    ds = datasets.load_from_disk(str(write_hf(cfg, tmp_path / "hf")))
    feat = ds.features["label"].feature["label"]
    assert feat.names == ["Team", "Day"]
    by_model = dict(zip(calls["item_id"], calls["output"], strict=True))
    mine = [row for row in ds if row["labelled_by"] == ["span_named_types"]]
    assert len(mine) >= 2
    for row in mine:  # the items the model labelled hold its spans, typed by label index
        got = [(s["start"], s["end"], feat.int2str(s["label"])) for s in row["label"]]
        assert sorted(got) == sorted(decode_spans(by_model[row["item_id"]]))
