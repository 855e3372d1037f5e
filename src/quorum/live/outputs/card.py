"""The dataset card (``README.md``) of a Hugging Face export (:mod:`quorum.live.outputs.hf`):
YAML metadata, then the facts a reader needs, section by section (the task, how each item
was labelled, money, the team, the router's decisions, the estimated accuracy, columns)."""

from __future__ import annotations

import html
import re
from typing import Any

import pandas as pd

from quorum.live.humans.agreement import agreement_lines
from quorum.live.outputs.decisions import run_decision_lines
from quorum.live.outputs.provenance import SOURCES, source_counts
from quorum.live.outputs.status import QUALITY_KEYS
from quorum.live.project.config import ProjectConfig
from quorum.tasks.registry import kind_of

#: the card's last section: the columns and how to load the folder
_COLUMNS = [
    "",
    "## Columns",
    "",
    "`item_id, text, label, label_name, source, labelled_by, final, agreement, "
    "n_annotations, human, human_by, annotators, answers` (JSON), `statuses` (JSON), "
    "`cost, human_labels` (JSON), `human_confidence, pending_human, run_id`: as in "
    "`quorum export -f csv` (docs/live.md), with `source` added.",
    "",
    "```python",
    "import datasets",
    "ds = datasets.load_from_disk(PATH)",
    "ds.features['label'].int2str(ds[0]['label'])",
    "```",
    "",
]


def dataset_card(cfg: ProjectConfig, frame: pd.DataFrame, st: dict[str, Any]) -> str:
    """The dataset card (README.md): YAML metadata, then the facts a reader needs."""
    lines = _head(cfg, len(frame), st) + _task(cfg, frame)
    lines += _sources(frame) + _money(st) + _team(cfg, st)
    lines += _router(cfg, st) + _accuracy(st) + _COLUMNS
    return "\n".join(lines)


def _head(cfg: ProjectConfig, n: int, st: dict[str, Any]) -> list[str]:
    """The YAML metadata, the title and what the dataset is."""
    meta = {
        "pretty_name": cfg.name,
        "task_categories": [kind_of(cfg.task.type).hf_task_category],
        "size_categories": [_size(n)],
        "tags": ["quorum", "annotation", "llm-labels"],
    }
    state = "final" if st["labels_final"] else "provisional (the run waits for human answers)"
    return [
        *["---", *_yaml(meta), "---", "", f"# {_text(cfg.name)}", ""],
        f"{n} items of the QUORUM project {_code(cfg.name)}, labelled by routing each item "
        f"between LLM annotators and people under a budget of ${st['budget']}, and exported "
        f"with `quorum export PROJECT -f hf`. The labels are {state}.",
        "",
    ]


def _task(cfg: ProjectConfig, frame: pd.DataFrame) -> list[str]:
    """The task: its type, instructions and labels (with how many items have each)."""
    labels = [str(x) for x in (cfg.task.labels or [])]
    names = cfg.task.label_names or {}
    lines = ["## Task", "", f"- Type: {cfg.task.type.value}"]
    if cfg.task.instructions:
        lines.append(f"- Instructions: {_text(cfg.task.instructions)}")
    if labels:
        counts = frame["label"].astype(str).value_counts()
        lines += ["", "| label | name | items |", "|---|---|---:|"]
        lines += [
            f"| {_md(x)} | {_md(names.get(x, x))} | {int(counts.get(x, 0))} |" for x in labels
        ]
        lines += ["", "In the dataset `label` is a `ClassLabel` of these labels (-1: none)."]
    return lines


def _sources(frame: pd.DataFrame) -> list[str]:
    """How each item was labelled: items by the source of their label."""
    n = len(frame)
    src = source_counts(frame["source"])
    lines = [
        "",
        "## How each item was labelled",
        "",
        "`source` says where each label came from; `labelled_by` names the annotators whose "
        "answer it is, `answers` every answer bought for the item.",
        "",
        "| source | items | share |",
        "|---|---:|---:|",
    ]
    lines += [f"| {s} | {src[s]} | {100 * src[s] / n:.1f}% |" for s in SOURCES if n]
    return [
        *lines,
        "",
        "- **human vote**: the label of the item's human task (one person, or the weighted "
        "vote of k people);",
        "- **agreeing LLMs**: two or more machine annotators gave this label;",
        "- **one LLM**: a single machine annotator gave it;",
        "- **label model**: no annotator gave it; the router's label model chose it.",
    ]


def _money(st: dict[str, Any]) -> list[str]:
    """Money: spent, paid, held and left, and each annotator's calls and cost."""
    lines = [
        "",
        "## Money",
        "",
        f"Spent ${st['spent']} of a budget of ${st['budget']} (paid ${st['paid']}, held for "
        f"pending human tasks ${st['held_for_humans']}, left ${st['left']}).",
        "",
        "| annotator | calls | cost |",
        "|---|---:|---:|",
    ]
    for r in st["per_annotator"].to_dict("records"):
        lines.append(f"| {_md(r['annotator'])} | {r['calls']} | ${r['cost']} |")
    return lines


def _team(cfg: ProjectConfig, st: dict[str, Any]) -> list[str]:
    """The team: the annotators, each person's reliability, the agreement figures."""
    lines = ["", "## The team", ""]
    for a in cfg.annotators:
        what = "person or people" if a.kind == "human" else (a.model or a.kind)
        lines.append(f"- {_code(a.name)} ({a.kind}): {_text(what)}")
    team = st.get("human_team") or []
    if team:
        lines += ["", "| person | labels | reliability | gold right/of |", "|---|---:|---:|---:|"]
        for p in team:
            acc = p.get("accuracy")
            lines.append(
                f"| {_md(p['person'])} | {p['labels']} | "
                f"{'' if acc is None else f'{acc:.3f}'} | {p['gold_correct']}/{p['gold']} |"
            )
    ag = agreement_lines(st["agreement"])
    if ag:
        lines += ["", *[f"- {html.escape(x, quote=False)}" for x in ag]]
    return lines


def _router(cfg: ProjectConfig, st: dict[str, Any]) -> list[str]:
    """The router: method, seed, runs, and its decisions in words."""
    last = st.get("last_run") or {}
    lines = [
        "",
        "## The router and its decisions",
        "",
        f"Method {_code(last.get('method') or cfg.method)}, seed {last.get('seed', cfg.seed)}, "
        f"{st['runs']} run(s).",
        "",
    ]
    dec = run_decision_lines(cfg, st)
    # the lines name annotators and labels: no HTML of theirs reaches the page
    dec = [html.escape(x, quote=False) for x in dec]
    return lines + ([f"- {x}" for x in dec] or ["- The router reported no decisions."])


def _accuracy(st: dict[str, Any]) -> list[str]:
    """The estimated accuracy with its interval, where the run has one, and where a
    quality target stopped the run."""
    q = st.get("quality") or st  # the status's ``quality`` object (or the keys at its top)
    est, lo, hi = (q.get(k) for k in QUALITY_KEYS)
    lines = ["", "## Estimated accuracy", ""]
    if est is None:
        lines.append("No estimate: this run has none.")
    else:
        lines.append(
            f"Estimated accuracy {float(est):.3f}"
            + (f" (interval {float(lo):.3f} to {float(hi):.3f})." if lo is not None else ".")
        )
    if (st.get("target") or {}).get("message"):
        lines.append(f"Quality target: {st['target']['message']}.")
    return lines


def _md(x: Any) -> str:
    """Text for a Markdown table cell: :func:`_text`, pipes escaped."""
    return _text(x).replace("|", "\\|")


#: Markdown characters a project's own text (its name, instructions, labels, people) may
#: not use to make a link, an image, emphasis or a code span on the Hub's page
_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]!"})


def _text(x: Any) -> str:
    """A project's own text as inert Markdown: one line, HTML escaped (no tag, no entity
    of its own reaches the page: issue 37), Markdown's link, image and emphasis marks
    escaped."""
    one = " ".join(str(x).split())
    return html.escape(one, quote=False).translate(_MD_SPECIAL)


def _code(x: Any) -> str:
    """A project's own name as a code span where it is a plain name (letters, digits,
    ``_ . : / -`` and spaces), else as escaped text (:func:`_text`)."""
    one = " ".join(str(x).split())
    return f"`{one}`" if re.fullmatch(r"[\w .:/-]+", one) else _text(one)


def _yaml(meta: dict[str, Any]) -> list[str]:
    """``meta`` as YAML lines (for the card's front matter)."""
    import yaml

    return yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).rstrip().splitlines()


def _size(n: int) -> str:
    """The Hub's size category of ``n`` items."""
    for limit, name in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ):
        if n < limit:
            return name
    return "n>1M"
