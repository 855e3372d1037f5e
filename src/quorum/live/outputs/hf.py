"""A live project's labels as a Hugging Face ``datasets`` folder with a dataset card.

``quorum export PROJECT -f hf [-o DIR]`` writes ``DIR`` with ``Dataset.save_to_disk`` (read it
back with ``datasets.load_from_disk(DIR)``) and ``DIR/README.md``, the dataset card: the task
and its label set, how each item was labelled (:mod:`quorum.live.outputs.provenance`), the money
spent, the team (people and models, with their agreement), the router and its decisions, and
the estimated accuracy when the run has one.

The rows are those of the CSV export (:func:`quorum.live.outputs.export.export_frame`), one per
item.
For a label task ``label`` is a ``ClassLabel`` over the project's labels (``int2str`` gives
the label of the CSV export; ``-1``, the ``datasets`` convention, an item without a label);
the dict and list columns (``answers``, ``statuses``, ``human_labels``, a pairwise
project's ``swap_verdicts``) are JSON text, as in the CSV, since their keys differ from item
to item; a pairwise project's ``instruction, output_1, output_2`` follow ``text``.

``--push-to-hub REPO`` pushes the dataset and then its card to the Hub under the user's own
token (``HF_TOKEN`` or ``hf auth login``); it needs the network, so it is not tested here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from quorum.errors import ConfigError
from quorum.live.ledger.schema import float_or_none, text_or_none
from quorum.live.outputs.card import dataset_card
from quorum.live.outputs.export import export_frame
from quorum.live.outputs.provenance import SOURCES, label_sources
from quorum.live.outputs.status import status
from quorum.live.project.config import ProjectConfig

#: columns written as JSON text (their keys or lengths vary by item)
JSON_COLUMNS = ("answers", "statuses", "human_labels")


def labels_frame(cfg: ProjectConfig) -> pd.DataFrame:
    """The export frame with ``source`` (where each label came from) after ``labelled_by``."""
    frame = export_frame(cfg)
    at = frame.columns.get_loc("labelled_by") + 1
    frame.insert(at, "source", label_sources(frame, cfg.human))
    return frame


#: the dataset's columns, in order
HF_COLUMNS = (
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
)


def hf_dataset(cfg: ProjectConfig, frame: pd.DataFrame | None = None) -> Any:
    """The project's labels as a ``datasets.Dataset`` (``ClassLabel`` for label tasks)."""
    import datasets

    frame = labels_frame(cfg) if frame is None else frame
    cols: dict[str, list[Any]] = {}
    feats: dict[str, Any] = {}
    s = datasets.Value("string")
    for name, kind in (("item_id", s), ("text", s)):
        cols[name] = [text_or_none(v) for v in frame[name]]
        feats[name] = kind
    cols["label"], feats["label"] = _label_column(cfg, frame)
    cols["label_name"] = [text_or_none(v) for v in frame["label_name"]]
    feats["label_name"] = s
    _add_provenance(cols, feats, frame)
    order = list(HF_COLUMNS)
    # a kind's own columns after the text (a pair's instruction and outputs); the swap
    # judges' verdicts in each order (JSON text, as the answers) after the statuses
    fields = getattr(getattr(cfg.task, "kind", None), "item_fields", ())
    parts = [c for c in fields if c in frame.columns]
    for k, name in enumerate(parts):
        cols[name], feats[name] = [text_or_none(v) for v in frame[name]], s
        order.insert(order.index("text") + 1 + k, name)
    if "swap_verdicts" in frame.columns:
        cols["swap_verdicts"] = [json.dumps(v, ensure_ascii=False, default=str)
                                 for v in frame["swap_verdicts"]]  # fmt: skip
        feats["swap_verdicts"] = s
        order.insert(order.index("statuses") + 1, "swap_verdicts")
    features = datasets.Features({k: feats[k] for k in order})
    return datasets.Dataset.from_dict({k: cols[k] for k in order}, features=features)


def _label_column(cfg: ProjectConfig, frame: pd.DataFrame) -> tuple[list[Any], Any]:
    """The ``label`` column and its feature: a ``ClassLabel`` of ``task.labels`` (-1: no
    label) for a task with labels, else the text; a label outside them is an error."""
    import datasets

    kind = getattr(cfg.task, "kind", None)
    own = None if kind is None else kind.hf_label_column([text_or_none(v) for v in frame["label"]])
    if own is not None:  # the kind's own column (e.g. a label set per item)
        return own
    labels = [str(x) for x in (cfg.task.labels or [])]
    if not (cfg.task.type.has_labels and bool(labels)):
        return [text_or_none(v) for v in frame["label"]], datasets.Value("string")
    index = {lab: k for k, lab in enumerate(labels)}
    other = sorted({str(v) for v in frame["label"] if text_or_none(v) is not None} - set(index))
    if other:
        raise ConfigError(f"labels {other} are not in task.labels {labels}: cannot export")
    values = [-1 if text_or_none(v) is None else index[str(v)] for v in frame["label"]]
    return values, datasets.ClassLabel(names=labels)


def _add_provenance(cols: dict[str, list[Any]], feats: dict[str, Any], frame: pd.DataFrame) -> None:
    """Add the provenance columns (source, who labelled, answers, money, human tasks) of
    ``frame`` to ``cols`` with their features ``feats``."""
    import datasets

    s, i, f, b = (datasets.Value(t) for t in ("string", "int64", "float64", "bool"))
    cols["source"] = frame["source"].astype(str).tolist()
    feats["source"] = datasets.ClassLabel(names=list(SOURCES))
    cols["labelled_by"] = [[str(x) for x in v] for v in frame["labelled_by"]]
    feats["labelled_by"] = datasets.List(s)
    cols["annotators"] = [[str(x) for x in v] for v in frame["annotators"]]
    feats["annotators"] = datasets.List(s)
    for name, kind in (("final", b), ("human", b), ("pending_human", b)):
        cols[name] = [bool(v) for v in frame[name]]
        feats[name] = kind
    cols["human_by"] = [text_or_none(v) for v in frame["human_by"]]
    feats["human_by"] = s
    for name in ("agreement", "cost", "human_confidence"):
        cols[name] = [float_or_none(v) for v in frame[name]]
        feats[name] = f
    for name in ("n_annotations", "run_id"):
        cols[name] = [None if float_or_none(v) is None else int(v) for v in frame[name]]
        feats[name] = i
    for name in JSON_COLUMNS:
        cols[name] = [json.dumps(v, ensure_ascii=False, default=str) for v in frame[name]]
        feats[name] = s


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
