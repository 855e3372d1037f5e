"""A live project's labels as a Hugging Face ``datasets`` folder with a dataset card.

``quorum export PROJECT -f hf [-o DIR]`` writes ``DIR`` with ``Dataset.save_to_disk`` (read it
back with ``datasets.load_from_disk(DIR)``) and ``DIR/README.md``, the dataset card: the task
and its label set, how each item was labelled (:mod:`quorum.live.provenance`), the money
spent, the team (people and models, with their agreement), the router and its decisions, and
the estimated accuracy when the run has one.

The rows are those of the CSV export (:func:`quorum.live.export.export_frame`), one per item.
For a label task ``label`` is a ``ClassLabel`` over the project's labels (``int2str`` gives
the label of the CSV export; ``-1``, the ``datasets`` convention, an item without a label);
the dict and list columns (``answers``, ``statuses``, ``human_labels``) are JSON text, as in
the CSV, since their keys differ from item to item.

``--push-to-hub REPO`` pushes the dataset and then its card to the Hub under the user's own
token (``HF_TOKEN`` or ``hf auth login``); it needs the network, so it is not tested here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from quorum.errors import ConfigError
from quorum.live.config import ProjectConfig
from quorum.live.export import export_frame
from quorum.live.provenance import SOURCES, label_sources, source_counts
from quorum.live.status import status

#: columns written as JSON text (their keys or lengths vary by item)
JSON_COLUMNS = ("answers", "statuses", "human_labels")


def labels_frame(cfg: ProjectConfig) -> pd.DataFrame:
    """The export frame with ``source`` (where each label came from) after ``labelled_by``."""
    frame = export_frame(cfg)
    at = frame.columns.get_loc("labelled_by") + 1
    frame.insert(at, "source", label_sources(frame, cfg.human))
    return frame


def hf_dataset(cfg: ProjectConfig, frame: pd.DataFrame | None = None) -> Any:
    """The project's labels as a ``datasets.Dataset`` (``ClassLabel`` for label tasks)."""
    import datasets

    frame = labels_frame(cfg) if frame is None else frame
    labels = [str(x) for x in (cfg.task.labels or [])]
    has_labels = cfg.task.type.has_labels and bool(labels)
    cols: dict[str, list[Any]] = {}
    feats: dict[str, Any] = {}
    s, i, f, b = (datasets.Value(t) for t in ("string", "int64", "float64", "bool"))
    for name, kind in (("item_id", s), ("text", s)):
        cols[name] = [_str(v) for v in frame[name]]
        feats[name] = kind
    if has_labels:
        index = {lab: k for k, lab in enumerate(labels)}
        other = sorted({str(v) for v in frame["label"] if _str(v) is not None} - set(index))
        if other:
            raise ConfigError(f"labels {other} are not in task.labels {labels}: cannot export")
        cols["label"] = [-1 if _str(v) is None else index[str(v)] for v in frame["label"]]
        feats["label"] = datasets.ClassLabel(names=labels)
    else:
        cols["label"] = [_str(v) for v in frame["label"]]
        feats["label"] = s
    cols["label_name"] = [_str(v) for v in frame["label_name"]]
    feats["label_name"] = s
    cols["source"] = frame["source"].astype(str).tolist()
    feats["source"] = datasets.ClassLabel(names=list(SOURCES))
    cols["labelled_by"] = [[str(x) for x in v] for v in frame["labelled_by"]]
    feats["labelled_by"] = datasets.List(s)
    cols["annotators"] = [[str(x) for x in v] for v in frame["annotators"]]
    feats["annotators"] = datasets.List(s)
    for name, kind in (("final", b), ("human", b), ("pending_human", b)):
        cols[name] = [bool(v) for v in frame[name]]
        feats[name] = kind
    cols["human_by"] = [_str(v) for v in frame["human_by"]]
    feats["human_by"] = s
    for name in ("agreement", "cost", "human_confidence"):
        cols[name] = [_float(v) for v in frame[name]]
        feats[name] = f
    for name in ("n_annotations", "run_id"):
        cols[name] = [None if _float(v) is None else int(v) for v in frame[name]]
        feats[name] = i
    for name in JSON_COLUMNS:
        cols[name] = [json.dumps(v, ensure_ascii=False, default=str) for v in frame[name]]
        feats[name] = s
    order = [
        "item_id",
        "text",
        "label",
        "label_name",
        "source",
        "labelled_by",
        "final",
        "agreement",
        "n_annotations",
        "human",
        "human_by",
        "annotators",
        "answers",
        "statuses",
        "cost",
        "human_labels",
        "human_confidence",
        "pending_human",
        "run_id",
    ]
    features = datasets.Features({k: feats[k] for k in order})
    return datasets.Dataset.from_dict({k: cols[k] for k in order}, features=features)


def write_hf(cfg: ProjectConfig, out: Path | None = None) -> Path:
    """Write the dataset folder (``save_to_disk``) and its card ``README.md``."""
    out = Path(out) if out is not None else cfg.root / f"{cfg.name}-hf"
    if out.exists() and not out.is_dir():
        raise ConfigError(f"cannot write the export to {out}: it is a file, not a folder")
    frame = labels_frame(cfg)
    ds = hf_dataset(cfg, frame)
    card = dataset_card(cfg, frame, status(cfg))
    import datasets

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # one line per export, not a bar per shard
    try:
        out.mkdir(parents=True, exist_ok=True)
        ds.save_to_disk(str(out))
        (out / "README.md").write_text(card, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the export to {out}: {exc.strerror or exc}") from None
    finally:
        if bars:
            datasets.enable_progress_bars()
    return out


def push_to_hub(folder: Path, repo: str, private: bool = True) -> str:
    """Push a written export folder (dataset and card) to the Hub repo ``repo``.

    Uses the user's token (``HF_TOKEN`` or ``hf auth login``); needs the network, so
    ``HF_HUB_OFFLINE`` must be 0 (``quorum`` sets it to 1 unless it is set). Returns the
    dataset's URL. Not tested offline.
    """
    import datasets
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        raise ConfigError(
            "--push-to-hub needs the network, but HF_HUB_OFFLINE is on; run it with "
            "HF_HUB_OFFLINE=0 (and a token: HF_TOKEN or `hf auth login`)"
        )
    from huggingface_hub import DatasetCard, DatasetCardData

    ds = datasets.load_from_disk(str(folder))
    ds.push_to_hub(repo, private=private, commit_message="quorum export")
    # the push wrote a card holding the dataset's metadata (features, splits): ours
    # replaces its text and keeps that metadata next to its own
    ours = DatasetCard((folder / "README.md").read_text(encoding="utf-8"))
    hub = DatasetCard.load(repo, repo_type="dataset")
    ours.data = DatasetCardData(**{**hub.data.to_dict(), **ours.data.to_dict()})
    ours.push_to_hub(repo, commit_message="quorum export: dataset card")
    return f"https://huggingface.co/datasets/{repo}"


# -- the card ---------------------------------------------------------------------------
def dataset_card(cfg: ProjectConfig, frame: pd.DataFrame, st: dict[str, Any]) -> str:
    """The dataset card (README.md): YAML metadata, then the facts a reader needs."""
    from quorum.live.agreement import agreement_lines
    from quorum.live.report import QUALITY_KEYS, run_decision_lines

    labels = [str(x) for x in (cfg.task.labels or [])]
    names = cfg.task.label_names or {}
    n = len(frame)
    ttype = cfg.task.type.value
    meta = {
        "pretty_name": cfg.name,
        "task_categories": [
            "text-classification"
            if ttype == "classification"
            else "multiple-choice"
            if ttype == "multiple_choice"
            else "summarization"
        ],
        "size_categories": [_size(n)],
        "tags": ["quorum", "annotation", "llm-labels"],
    }
    lines = ["---", *_yaml(meta), "---", "", f"# {cfg.name}", ""]
    last = st.get("last_run") or {}
    state = "final" if st["labels_final"] else "provisional (the run waits for human answers)"
    lines += [
        f"{n} items of the QUORUM project `{cfg.name}`, labelled by routing each item "
        f"between LLM annotators and people under a budget of ${st['budget']}, and exported "
        f"with `quorum export PROJECT -f hf`. The labels are {state}.",
        "",
        "## Task",
        "",
        f"- Type: {ttype}",
    ]
    if cfg.task.instructions:
        lines.append(f"- Instructions: {cfg.task.instructions.strip()}")
    if labels:
        counts = frame["label"].astype(str).value_counts()
        lines += ["", "| label | name | items |", "|---|---|---:|"]
        lines += [
            f"| {_md(x)} | {_md(names.get(x, x))} | {int(counts.get(x, 0))} |" for x in labels
        ]
        lines += ["", "In the dataset `label` is a `ClassLabel` of these labels (-1: none)."]
    src = source_counts(frame["source"])
    lines += [
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
    lines += [
        "",
        "- **human vote**: the label of the item's human task (one person, or the weighted "
        "vote of k people);",
        "- **agreeing LLMs**: two or more machine annotators gave this label;",
        "- **one LLM**: a single machine annotator gave it;",
        "- **label model**: no annotator gave it; the router's label model chose it.",
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
    lines += ["", "## The team", ""]
    for a in cfg.annotators:
        what = "person or people" if a.kind == "human" else (a.model or a.kind)
        lines.append(f"- `{a.name}` ({a.kind}): {what}")
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
        lines += ["", *[f"- {x}" for x in ag]]
    lines += [
        "",
        "## The router and its decisions",
        "",
        f"Method `{last.get('method') or cfg.method}`, seed {last.get('seed', cfg.seed)}, "
        f"{st['runs']} run(s).",
        "",
    ]
    dec = run_decision_lines(cfg, st)
    lines += [f"- {x}" for x in dec] or ["- The router reported no decisions."]
    q = st.get("quality") or st  # the status's ``quality`` object (or the keys at its top)
    est, lo, hi = (q.get(k) for k in QUALITY_KEYS)
    lines += ["", "## Estimated accuracy", ""]
    if est is None:
        lines.append("No estimate: this run has none.")
    else:
        lines.append(
            f"Estimated accuracy {float(est):.3f}"
            + (f" (interval {float(lo):.3f} to {float(hi):.3f})." if lo is not None else ".")
        )
    if (st.get("target") or {}).get("message"):
        lines.append(f"Quality target: {st['target']['message']}.")
    lines += [
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
    return "\n".join(lines)


def _md(x: Any) -> str:
    """Text for a Markdown table cell: pipes escaped, one line."""
    return " ".join(str(x).split()).replace("|", "\\|")


def _yaml(meta: dict[str, Any]) -> list[str]:
    import yaml

    return yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).rstrip().splitlines()


def _size(n: int) -> str:
    for limit, name in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ):
        if n < limit:
            return name
    return "n>1M"


def _str(v: Any) -> str | None:
    if v is None or (isinstance(v, float) and v != v):
        return None
    return str(v)


def _float(v: Any) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if x != x else x
