"""Shared pieces of the named loaders: file lookup, wide-to-long, scoring, prices, panel."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from quorum.data.schema import AnnotatorSpec, Dataset, TaskSpec, TaskType, drop_unusable
from quorum.errors import DatasetNotFoundError, DataValidationError

#: default per-call prices of the 3-LLM panel (most accurate first) and of accuracy terciles
PANEL_PRICES: tuple[float, float, float] = (0.05, 0.03, 0.01)
HUMAN_PRICE = 0.10
#: an LLM needs answers on at least this share of items to be ranked for the panel
PANEL_MIN_COVERAGE = 0.90

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_TOKEN = re.compile(r"\w+")


def source_file(root: Path, rel: str, name: str) -> Path:
    """``root / rel``, or a DatasetNotFoundError that says which path was looked at."""
    path = Path(root) / rel
    if not path.is_file():
        raise DatasetNotFoundError(
            f"dataset {name!r}: file not found: {path} "
            f"(data dir {root}; set $QUORUM_DATA_DIR or pass data_dir=)"
        )
    return path


def read_text_csv(path: Path, **kw) -> pd.DataFrame:
    """A CSV with every column as a string and no NA guessing ("" stays "")."""
    return pd.read_csv(path, dtype=str, keep_default_na=False, **kw)


def require_rows(
    df: pd.DataFrame, name: str, path: Path, reason: str = "the file has no data rows"
) -> pd.DataFrame:
    """``df``, or a DataValidationError naming the dataset, the file and the rows looked for."""
    if df.empty:
        raise DataValidationError(f"dataset {name!r}: no items found in {path} ({reason})")
    return df


def blank_to_na(s: pd.Series) -> pd.Series:
    """Strip strings and turn empty ones into NA."""
    s = s.astype("str").str.strip()
    return s.where(s != "")


def mc_text(question: pd.Series, choices: pd.Series) -> pd.Series:
    """Question followed by lettered options ``A. ...`` on their own lines."""
    opts = choices.map(lambda cs: "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(cs)))
    return question.astype("str").str.rstrip() + "\n" + opts


def wide_to_long(
    item_ids: pd.Series,
    outputs: Mapping[str, pd.Series],
    *,
    confidence: Mapping[str, pd.Series] | None = None,
    raw: Mapping[str, pd.Series] | None = None,
) -> pd.DataFrame:
    """Long annotations from one output column per annotator (rows aligned with item_ids).

    Missing outputs (NA) are kept here; :func:`finalize` drops and counts them.
    """
    frames = []
    ids = item_ids.astype("str").to_numpy()
    for name, out in outputs.items():
        f = pd.DataFrame({"item_id": ids, "annotator": name, "output": out.to_numpy()})
        if confidence is not None:
            f["confidence"] = (
                pd.to_numeric(confidence[name], errors="coerce").to_numpy()
                if name in confidence
                else np.nan
            )
        if raw is not None:
            vals = raw[name].to_numpy() if name in raw else np.full(len(ids), None)
            f["raw"] = pd.Series(vals, dtype="str")
        frames.append(f)
    if not frames:
        return empty_annotations()
    return pd.concat(frames, ignore_index=True)


def empty_annotations() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="str") for c in ("item_id", "annotator", "output")})


def tokens(text: str) -> Counter:
    return Counter(_TOKEN.findall(text.lower()))


def unigram_f1(hyps: Iterable[str], refs: Iterable[str]) -> np.ndarray:
    """ROUGE-1-style unigram F1 (lower-cased ``\\w+`` tokens, no stemming) per pair."""
    cache: dict[str, Counter] = {}
    out = []
    for h, r in zip(hyps, refs, strict=True):
        ch = tokens(h)
        cr = cache.get(r)
        if cr is None:
            cr = cache[r] = tokens(r)
        nh, nr = sum(ch.values()), sum(cr.values())
        overlap = sum((ch & cr).values())
        out.append(0.0 if not overlap else 2 * overlap / (nh + nr))
    return np.asarray(out, dtype=float)


def annotator_scores(
    task_type: TaskType, items: pd.DataFrame, annotations: pd.DataFrame
) -> tuple[dict[str, float], dict[str, float]]:
    """Quality and coverage of each annotator over *all* items.

    Quality is accuracy against ``gold`` (labels) or mean unigram F1 against ``reference``
    (summaries); an item without an answer counts as wrong (0). Coverage is the share of
    items with an answer. Empty dicts when there is no gold/reference.
    """
    n = len(items)
    counts = annotations.groupby("annotator", sort=True).size()
    coverage = {str(k): float(v / n) for k, v in counts.items()} if n else {}
    col = "reference" if task_type is TaskType.summarization else "gold"
    if col not in items.columns or not items[col].notna().any() or not n:
        return {}, coverage
    truth = items.set_index("item_id")[col]
    t = truth.reindex(annotations["item_id"]).to_numpy()
    ok = pd.notna(t)
    if task_type is TaskType.summarization:
        val = np.zeros(len(annotations))
        val[ok] = unigram_f1(annotations["output"].to_numpy()[ok], t[ok])
    else:
        val = (annotations["output"].to_numpy() == t) & ok
    s = pd.Series(val.astype(float)).groupby(annotations["annotator"].to_numpy()).sum()
    return {str(k): float(v / n) for k, v in s.items()}, coverage


def rank_prices(
    machines: list[str], scores: Mapping[str, float], coverage: Mapping[str, float]
) -> tuple[dict[str, float], list[str]]:
    """Default prices and 3-LLM panel (our reading of the paper's setup).

    Machines with >= 90 % coverage are ranked by score; the panel is the ones at ranks
    ``0, n//3, 2n//3`` priced 0.05 / 0.03 / 0.01. Every other machine is priced by the
    tercile of its rank among all machines (0.05 top, 0.03 middle, 0.01 bottom).
    """
    if not machines:
        return {}, []

    def order(names):
        return sorted(names, key=lambda a: (-scores.get(a, 0.0), a))

    ranked_all = order(machines)
    eligible = [a for a in ranked_all if coverage.get(a, 0.0) >= PANEL_MIN_COVERAGE]
    if not eligible:
        eligible = ranked_all
    n = len(eligible)
    prices: dict[str, float] = {}
    for r, a in enumerate(ranked_all):
        prices[a] = PANEL_PRICES[min(2, 3 * r // len(ranked_all))]
    panel: list[str] = []
    for idx, price in zip((0, n // 3, 2 * n // 3), PANEL_PRICES, strict=True):
        a = eligible[idx]
        if a not in panel:
            panel.append(a)
            prices[a] = price
    return prices, panel


def _with_answers(
    kinds: Mapping[str, str],
    coverage: Mapping[str, float],
    counts: pd.Series,
    n: int,
    notes: list[str],
) -> tuple[dict[str, str], dict[str, int]]:
    """The annotators with at least one usable answer, and per annotator how many items it
    has no usable answer for; ``notes`` gets the left-out and the sparse ones."""
    absent = [a for a in kinds if coverage.get(a, 0.0) == 0.0]
    if absent:
        notes.append(f"no recorded answers (left out): {', '.join(absent)}")
    kept = {a: k for a, k in kinds.items() if a not in absent}
    # no usable answer = empty, unparseable or outside the label set, or not in the file
    unparseable = {a: int(n - counts.get(a, 0)) for a in kept}
    for a in kept:
        if coverage.get(a, 0.0) < PANEL_MIN_COVERAGE:
            notes.append(f"{a} has answers for only {int(counts.get(a, 0))} of {n} items")
    return kept, unparseable


def _prices_and_panel(
    kinds: Mapping[str, str],
    scores: Mapping[str, float],
    coverage: Mapping[str, float],
    prices: Mapping[str, float] | None,
    panel: list[str] | None,
) -> tuple[Mapping[str, float], list[str]]:
    """The given prices, else :func:`rank_prices` for machines and ``HUMAN_PRICE`` for
    people (and the rule's panel where none is given)."""
    machines = [a for a, k in kinds.items() if k != "human"]
    if prices is None:
        auto_prices, auto_panel = rank_prices(machines, scores, coverage)
        prices = {**auto_prices, **{a: HUMAN_PRICE for a, k in kinds.items() if k == "human"}}
        panel = auto_panel if panel is None else panel
    return prices, [] if panel is None else list(panel)


def finalize(
    name: str,
    task_type: TaskType,
    items: pd.DataFrame,
    annotations: pd.DataFrame,
    *,
    kinds: Mapping[str, str],
    sources: list[Path],
    labels: list[str] | None = None,
    label_names: dict[str, str] | None = None,
    language: str = "en",
    instructions: str | None = None,
    description: str | None = None,
    prices: Mapping[str, float] | None = None,
    panel: list[str] | None = None,
    reference_llm: str | None = None,
    notes: list[str] | None = None,
    extra_meta: dict | None = None,
    empty_reason: str | None = None,
) -> Dataset:
    """Drop empty/unparseable answers (counting them), score, price, and build the Dataset.

    ``kinds`` lists every recorded annotator (name -> llm/model/human). Without ``prices``
    machines get :func:`rank_prices` prices and panel; humans cost 0.10 each. Answers are
    kept or dropped by :func:`quorum.data.schema.drop_unusable` (``meta["dropped"]``
    counts answers outside the label set). No items at all is an error that names the
    source files and ``empty_reason`` (which rows were looked for).

    Above 60 lines because of its signature (the task's fields, 17 keyword arguments); the
    body is the named steps (:func:`_with_answers`, :func:`_prices_and_panel`) and the spec.
    """
    notes = list(notes or [])
    n = len(items)
    if n == 0:
        files = ", ".join(str(p) for p in sources)
        raise DataValidationError(
            f"dataset {name!r}: no items found in {files} "
            f"({empty_reason or 'the file has no data rows'})"
        )
    ann, dropped, _ = drop_unusable(annotations, labels if task_type.has_labels else None)
    counts = ann["annotator"].value_counts()

    scores, coverage = annotator_scores(task_type, items, ann)
    kinds, unparseable = _with_answers(kinds, coverage, counts, n, notes)
    prices, panel = _prices_and_panel(kinds, scores, coverage, prices, panel)
    if reference_llm is None and panel:
        reference_llm = panel[0]

    task = TaskSpec(
        name=name,
        type=task_type,
        labels=labels,
        label_names=label_names,
        instructions=instructions,
        language=language,
        annotators=[
            AnnotatorSpec(name=a, kind=k, price=float(prices[a]))  # type: ignore[arg-type]
            for a, k in kinds.items()
        ],
        human_price=HUMAN_PRICE,
        reference_llm=reference_llm,
        description=description,
    )
    meta = {
        "source": [str(p) for p in sources],
        "panel": panel,
        "notes": notes,
        "unparseable": unparseable,
        "dropped": dropped,
        "scores": {a: round(scores[a], 6) for a in kinds if a in scores},
        "coverage": {a: round(coverage.get(a, 0.0), 6) for a in kinds},
        **(extra_meta or {}),
    }
    return Dataset(task, items, ann, source=str(sources[0]) if sources else None, meta=meta)
