"""A template dataset folder (``quorum datasets template``): a commented task.toml and
example rows, for a user to fill in with their own items and answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from quorum.data.importer import write_folder_files
from quorum.data.schema import TaskType

__all__ = ["write_template"]


_TASK_HEAD = """\
# A dataset folder: task.toml (this file), items.csv, annotations.csv, optional meta.json.
# Keys after a # are optional; docs/datasets.md explains each one. Replace the rows of
# items.csv and annotations.csv with yours, then: quorum datasets show <this folder>
name = "{name}"
# classification | multiple_choice | summarization
type = "{type}"
{labels}language = "en"
# the task as you would tell an annotator:
# instructions = "..."
# build each item's text from columns of items.csv (then it has no text column):
# text_template = "{{title}}\\n{{body}}"
# the human arm: "gold" (the gold label / reference) or a human annotator:
# human = "gold"
# price of one human label:
# human_price = 0.10
# machine annotators the router uses (default: the rule in docs/datasets.md):
# panel = ["llm-a", "llm-b"]
# the LLM of the MCA metric (default: set with the panel):
# reference_llm = "llm-a"
"""
_ANNOTATOR = """
# one block per annotator of annotations.csv; kind: llm | model | human;
# price per call (without it, the default rule prices it)
[[annotators]]
name = "{name}"
kind = "llm"
# price = 0.03
"""
_TEMPLATES: dict[str, tuple[str, list[dict[str, Any]], dict[str, list[str]]]] = {
    "classification": (
        "# answers outside the label set are dropped and counted\n"
        'labels = ["positive", "negative"]\n'
        '# label_names = { positive = "a positive review", negative = "a negative review" }\n',
        [
            {"item_id": "r1", "text": "A joy from start to end.", "gold": "positive"},
            {"item_id": "r2", "text": "I left after twenty minutes.", "gold": "negative"},
            {"item_id": "r3", "text": "Not bad; I would watch it again.", "gold": "positive"},
        ],
        {
            "llm-a": ["positive", "negative", "positive"],
            "llm-b": ["positive", "negative", "negative"],
        },
    ),
    "multiple_choice": (
        '# the letters of the options\nlabels = ["A", "B", "C"]\n',
        [
            {
                "item_id": "q1",
                "text": "2 + 2 = ?\nA. 3\nB. 4\nC. 5",
                "gold": "B",
                "choices": ["3", "4", "5"],
            },
            {
                "item_id": "q2",
                "text": "The capital of Peru?\nA. Lima\nB. Cusco\nC. Quito",
                "gold": "A",
                "choices": ["Lima", "Cusco", "Quito"],
            },
        ],
        {"llm-a": ["B", "A"], "llm-b": ["B", "C"]},
    ),
    "summarization": (
        "",
        [
            {
                "item_id": "d1",
                "text": "The town council voted on Monday to reopen the old bridge to "
                "cyclists after two years of repairs. Cars remain banned.",
                "reference": "The old bridge reopens to cyclists, not to cars.",
            },
        ],
        {"llm-a": ["The council reopened the bridge to cyclists."], "llm-b": ["A bridge."]},
    ),
}


def write_template(out: str | Path, task_type: str, *, overwrite: bool = False) -> Path:
    """A small commented dataset folder of ``task_type`` to fill in; it loads as is."""
    ttype = TaskType(task_type)
    folder = Path(out).expanduser()
    labels, rows, answers = _TEMPLATES[ttype.value]
    items = pd.DataFrame(rows)
    ids = items["item_id"]
    ann = pd.concat(
        [pd.DataFrame({"item_id": ids, "annotator": a, "output": o}) for a, o in answers.items()]
    )
    write_folder_files(folder, "csv", overwrite, {}, [], items, ann, folder, [])
    text = _TASK_HEAD.format(name=folder.name, type=ttype.value, labels=labels)
    text += "".join(_ANNOTATOR.format(name=a) for a in answers)
    (folder / "task.toml").write_text(text, encoding="utf-8")
    return folder
