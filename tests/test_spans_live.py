"""A span project file: items with span gold, the bundled prompt, `quorum plan`'s dry run."""

from __future__ import annotations

import json

import pandas as pd
import yaml

from quorum.live.project.config import load_project
from quorum.live.run.plan import plan

TEXT = "Arsenal beat Spurs 2-0 at home on Sunday; the away side scored twice."


def _project(tmp_path):
    gold = [json.dumps([{"start": 13, "end": 18, "label": "Misleading"}]) if i % 2 else "[]"
            for i in range(12)]  # fmt: skip
    pd.DataFrame({"item_id": [f"r{i}" for i in range(12)], "text": [TEXT] * 12,
                  "gold_spans": gold}).to_csv(tmp_path / "items.csv", index=False)  # fmt: skip
    dead = {"api_base": "http://127.0.0.1:9/v1", "api_key_env": "QUORUM_SPANS_TEST_KEY"}
    data = {
        "name": "spans",
        "method": "quorum",
        "features": "light",
        "items": {"path": str(tmp_path / "items.csv"), "gold_column": "gold_spans"},
        "task": {"type": "spans", "labels": ["Contradictory", "Misleading"]},
        "budget": {"limit": 0.5},
        "annotators": [
            {"name": "a", "model": "openai/a", "price": 0.002, **dead},
            {"name": "b", "model": "openai/b", "price": 0.004, **dead},
            {"name": "team", "kind": "human", "price": 0.05},
        ],
        "humans": {"backend": "file"},
    }
    p = tmp_path / "project.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def test_a_span_project_plans_within_budget_with_the_span_prompt(tmp_path, monkeypatch):
    monkeypatch.delenv("QUORUM_SPANS_TEST_KEY", raising=False)
    cfg = load_project(_project(tmp_path))
    p = plan(cfg, llm_accuracy=0.6)
    assert p.expected_spend <= 0.5 + 1e-12
    assert sum(p.llm_calls.values()) > 0 and p.human_labels > 0
    shown = json.dumps(p.row() if hasattr(p, "row") else p.__dict__, default=str)
    assert "Quote each span exactly" in shown and "Misleading" in shown
