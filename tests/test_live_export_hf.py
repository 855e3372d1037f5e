"""The Hugging Face dataset of a live export frame (label and text tasks, unknown labels),
and the glue of ``--push-to-hub`` with the Hub's calls replaced (no network here)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import datasets
import pandas as pd
import pytest
from huggingface_hub import DatasetCard

from quorum.data.schema import TaskType
from quorum.errors import ConfigError
from quorum.live.outputs import hf as export_hf


def _frame(labels: list[str | None]) -> pd.DataFrame:
    n = len(labels)
    return pd.DataFrame(
        {
            "item_id": [f"i{k}" for k in range(n)],
            "text": [f"text {k}" for k in range(n)],
            "label": labels,
            "label_name": labels,
            "source": ["one LLM" if x is not None else "no label" for x in labels],
            "labelled_by": [["llm"] if x is not None else [] for x in labels],
            "final": [True] * n,
            "agreement": [1.0] * n,
            "n_annotations": [1] * n,
            "human": [False] * n,
            "human_by": [None] * n,
            "annotators": [["llm"]] * n,
            "answers": [{"llm": x} for x in labels],
            "statuses": [{"llm": "ok"}] * n,
            "cost": [0.001] * n,
            "human_labels": [[]] * n,
            "human_confidence": [None] * n,
            "pending_human": [False] * n,
            "run_id": [1] * n,
        }
    )


def _cfg(ttype: TaskType, labels: list[str] | None) -> SimpleNamespace:
    return SimpleNamespace(task=SimpleNamespace(type=ttype, labels=labels))


def test_label_task_is_a_classlabel_and_none_is_minus_one() -> None:
    ds = export_hf.hf_dataset(_cfg(TaskType.multiple_choice, list("ABCD")), _frame(["C", None]))
    assert ds.features["label"] == datasets.ClassLabel(names=list("ABCD"))
    assert ds["label"] == [2, -1]
    assert ds.features["source"].int2str(ds["source"]) == ["one LLM", "no label"]
    assert json.loads(ds["answers"][0]) == {"llm": "C"} and ds["labelled_by"] == [["llm"], []]


def test_text_task_keeps_the_text_and_unknown_labels_are_refused() -> None:
    ds = export_hf.hf_dataset(_cfg(TaskType.summarization, None), _frame(["a summary", None]))
    assert ds.features["label"] == datasets.Value("string")
    assert ds["label"] == ["a summary", None]
    with pytest.raises(ConfigError, match=r"labels \['E'\] are not in task.labels"):
        export_hf.hf_dataset(_cfg(TaskType.classification, ["A", "B"]), _frame(["E"]))


def test_push_to_hub_glue(tmp_path, monkeypatch) -> None:
    """Dataset, then our card with the Hub card's metadata kept (the Hub's calls faked)."""
    import huggingface_hub

    ds = datasets.Dataset.from_dict({"x": [1, 2]})
    ds.save_to_disk(str(tmp_path))
    (tmp_path / "README.md").write_text("---\npretty_name: p\n---\n\n# p\n\nour card\n")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ConfigError, match="HF_HUB_OFFLINE"):
        export_hf.push_to_hub(tmp_path, "me/p")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    pushed: dict[str, object] = {}

    def push_ds(self, repo, **kw):
        pushed["dataset"] = (repo, len(self), kw.get("private"))

    def load(repo, **kw):
        return DatasetCard("---\ndataset_info:\n  splits:\n  - name: train\n---\nauto card\n")

    def push_card(self, repo, **kw):
        pushed["card"] = (repo, str(self))

    monkeypatch.setattr(datasets.Dataset, "push_to_hub", push_ds)
    monkeypatch.setattr(DatasetCard, "load", staticmethod(load))
    monkeypatch.setattr(DatasetCard, "push_to_hub", push_card)
    url = export_hf.push_to_hub(tmp_path, "me/p")
    assert url == "https://huggingface.co/datasets/me/p"
    assert pushed["dataset"] == ("me/p", 2, True)
    repo, text = pushed["card"]
    assert repo == "me/p" and "our card" in text and "auto card" not in text
    assert "pretty_name: p" in text and "dataset_info:" in text and "name: train" in text
