"""Issue 37, finding 10: the Hugging Face dataset card carries the project's own text (its
name, instructions, labels, annotators) escaped: no raw HTML, no Markdown link or image,
no code span it can close."""

from __future__ import annotations

import json
from pathlib import Path

from live_servers.fixtures import write_project
from quorum.live.outputs.card import dataset_card
from quorum.live.outputs.hf import labels_frame
from quorum.live.outputs.status import status
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate

EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _card(tmp_path: Path) -> str:
    rows = [{"id": f"i{k}", "text": "good fun" if k % 2 else "dull", "gold": ["<b>no</b>",
             "[yes](http://evil)"][k % 2]} for k in range(4)]  # fmt: skip
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    proj = write_project(
        tmp_path,
        {
            "name": f"evil {EVIL}",
            "method": "random",
            "features": "light",
            "items": {"path": "items.jsonl", "id_column": "id", "gold_column": "gold"},
            "task": {
                "type": "classification",
                "labels": ["<b>no</b>", "[yes](http://evil)"],
                "label_names": {"<b>no</b>": f"no {EVIL}"},
                "instructions": f"Label it.\n\n# injected heading\n{EVIL} ![i](http://x/t.png)",
            },
            "budget": {"limit": 0.05, "quality_checks": 0},
            "human_price": 0.01,
            "annotators": [{"name": "kw`<i>x</i>", "kind": "model", "price": 0.001,
                            "model": "live_servers.models:keyword_sentiment"}],
        },
    )  # fmt: skip
    cfg = load_project(proj)
    annotate(cfg, quiet=True)
    return dataset_card(cfg, labels_frame(cfg), status(cfg))


def test_the_card_escapes_the_projects_own_text(tmp_path) -> None:
    card = _card(tmp_path)
    body = card.split("---", 2)[2]  # the YAML front matter quotes its strings itself
    for raw in ("<script", "<img", "<b>", "<i>", "[yes](http://evil)", "![i]"):
        assert raw not in body, (raw, body)
    assert "&lt;script&gt;" in body
    assert "\n# injected heading" not in body  # the instructions stay on one line
    assert "kw\\`&lt;i&gt;x&lt;/i&gt;" in body  # not a code span: escaped text
    assert "`random`" in body  # a plain name stays a code span
