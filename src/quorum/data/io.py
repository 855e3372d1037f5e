"""Read a dataset *folder*: the canonical on-disk form of a labelling job.

A folder holds::

    task.toml | task.yaml          the TaskSpec (required)
    items.{csv,jsonl,parquet}      item_id, text, [gold, choices, reference, language, ...]
    annotations.{csv,jsonl,parquet}  item_id, annotator, output, [confidence, cost, raw, ...]
                                   (optional: a job with no annotations yet is valid)
    meta.json                      free metadata, e.g. the default LLM panel (optional)
    dtypes.json                    column dtypes of the CSV files (optional, written by
                                   ``writer.save_folder``; without it CSV metadata types
                                   are inferred)

In CSV files ``choices`` is a JSON list (``["yes", "no"]``). Every text file must be UTF-8.
"""

from __future__ import annotations

import io
import json
import math
import tomllib
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
import yaml
from pydantic import ValidationError

from quorum.data.defaults import (
    apply_text_template,
    declare_from_annotations,
    fill_defaults,
    placeholder_prices,
    record_drops,
    split_folder_keys,
)
from quorum.data.schema import ANNOTATION_REQUIRED, Dataset, TaskSpec, drop_unusable
from quorum.errors import DatasetNotFoundError, DataValidationError, validation_summary

Format = Literal["csv", "jsonl", "parquet"]
FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")
TASK_FILES: tuple[str, ...] = ("task.toml", "task.yaml", "task.yml")
#: the answers' file: ``annotations.<fmt>``, or ``answers.<fmt>`` (the shared data's name)
ANSWER_FILES: tuple[str, ...] = ("annotations", "answers")
META_FILE = "meta.json"
#: column dtypes of CSV files, so that a CSV round trip keeps metadata types exactly
DTYPES_FILE = "dtypes.json"

#: columns always read as strings from CSV (everything else is type-inferred)
_STR_COLUMNS = (
    "item_id",
    "text",
    "gold",
    "reference",
    "language",
    "annotator",
    "output",
    "raw",
)
_FLOAT_COLUMNS = ("confidence", "cost")

__all__ = ["load_folder", "read_task"]


# --------------------------------------------------------------------------- load
def load_folder(path: str | Path) -> Dataset:
    """Load and validate a dataset folder.

    What ``task.toml`` leaves out (annotators, prices, panel) gets the defaults of
    :mod:`quorum.data.defaults`, recorded in ``meta["defaults"]`` and ``meta["notes"]``;
    answers outside the label set are dropped and counted (``meta["dropped"]``).
    Raises :class:`DatasetNotFoundError` when the folder or a required file is missing and
    :class:`DataValidationError` (naming the file) when a file is malformed or inconsistent.
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise DatasetNotFoundError(f"dataset folder not found: {folder}")
    task_file = _find_one(folder, TASK_FILES, required=False, what="task file")
    items_file = _find_one(folder, [f"items.{f}" for f in FORMATS], required=True, what="items")
    ann_file = _find_one(
        folder, [f"{n}.{f}" for n in ANSWER_FILES for f in FORMATS], required=False, what=""
    )
    assert items_file is not None
    if task_file is None:  # a folder as it is: its kind recognised from its columns
        return _load_bare(folder, items_file, ann_file)

    task_data, extras = split_folder_keys(_read_task_data(task_file))
    items, annotations = _read_frames(folder, items_file, ann_file)
    meta: dict[str, Any] = {}
    meta_file = folder / META_FILE
    if meta_file.is_file():
        meta = _read_json(meta_file)
        if not isinstance(meta, dict):
            raise DataValidationError(f"{meta_file}: expected a JSON object, got {type(meta)}")

    panel, panel_file = _given_panel(extras, meta, task_file, folder / META_FILE)

    def where(msg: str) -> Path:
        if msg.startswith("annotations") and ann_file:
            return ann_file
        return panel_file if msg.startswith("panel") else items_file

    try:
        return _assemble(folder, task_file, task_data, extras, items, annotations, meta, panel)
    except DataValidationError as exc:
        msg = str(exc)
        if msg.startswith(str(task_file)):
            raise
        raise DataValidationError(f"{where(msg)}: {msg}") from exc


def _load_bare(folder: Path, items_file: Path, ann_file: Path | None) -> Dataset:
    """A folder with no task file: the task kind whose columns its files have
    (:func:`quorum.tasks.registry.recognise_folder`) gives the task and the canonical
    frames; a task file, where present, wins."""
    from quorum.tasks.registry import recognise_folder

    items = _read_table(items_file)
    if len(items) == 0:
        raise DataValidationError(f"{items_file}: no items (the file has no data rows)")
    answers = _read_table(ann_file, allow_empty=True) if ann_file else pd.DataFrame()
    kind = recognise_folder(items, answers)
    if kind is None:
        raise DatasetNotFoundError(
            f"{folder}: no task file found; looked for {', '.join(TASK_FILES)}; and its "
            f"columns (items: {list(items.columns)}; answers: {list(answers.columns)}) match "
            "no task kind"
        )
    try:
        task_data, items, annotations = kind.folder_task(folder.name, items, answers)
        return _assemble(folder, items_file, task_data, {}, items, annotations, {}, None)
    except DataValidationError as exc:  # the message starts with the file it is about
        msg = str(exc)
        if msg.startswith(str(folder)):
            raise
        about_answers = ann_file is not None and msg.startswith(("answers", "annotations"))
        raise DataValidationError(f"{ann_file if about_answers else items_file}: {msg}") from exc


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise DataValidationError(f"{path}: malformed JSON: {exc}") from exc


def _read_frames(
    folder: Path, items_file: Path, ann_file: Path | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The items (choices decoded) and the answers (an empty table without a file), with
    the column types of ``dtypes.json`` where the folder has one."""
    dtypes: dict[str, dict[str, str]] = {}
    dtypes_file = folder / DTYPES_FILE
    if dtypes_file.is_file():
        dtypes = _read_json(dtypes_file)
    items = _read_table(items_file, dtypes=dtypes.get("items"))
    if len(items) == 0:
        raise DataValidationError(f"{items_file}: no items (the file has no data rows)")
    if ann_file is None:
        annotations = pd.DataFrame({c: pd.Series(dtype="str") for c in ANNOTATION_REQUIRED})
    else:
        annotations = _read_table(ann_file, allow_empty=True, dtypes=dtypes.get("annotations"))
        if len(annotations.columns) == 0:
            annotations = pd.DataFrame({c: pd.Series(dtype="str") for c in ANNOTATION_REQUIRED})
    return _decode_choices(items, items_file), annotations


def _assemble(
    folder: Path,
    task_file: Path,
    task_data: dict[str, Any],
    extras: dict[str, Any],
    items: pd.DataFrame,
    annotations: pd.DataFrame,
    meta: dict[str, Any],
    panel: list[str] | None,
) -> Dataset:
    """The dataset: text template applied, annotators declared and priced (defaults where
    the task leaves them out), unusable answers dropped and counted."""
    if "text_template" in extras:
        items = apply_text_template(items, extras["text_template"])
        meta["text_template"] = extras["text_template"]
    task_data, declared = declare_from_annotations(task_data, annotations)
    task_data, unpriced = placeholder_prices(task_data)
    task = _validate_task(task_data, task_file)
    dropped, examples = {}, {}
    if "output" in annotations.columns:
        annotations, dropped, examples = drop_unusable(
            annotations, task.labels if task.type.has_labels else None, task.kind.usable_outputs
        )
    ds = Dataset(task, items, annotations, source=str(folder), meta=meta)
    record_drops(ds, dropped, examples)
    fill_defaults(ds, unpriced, panel, declared)
    return ds


def _given_panel(
    extras: dict[str, Any], meta: dict[str, Any], task_file: Path, meta_file: Path
) -> tuple[list[str] | None, Path]:
    """The panel the folder gives (task.toml or meta.json ``panel``; None) and its file."""
    found = {}
    for src, value in ((task_file, extras.get("panel")), (meta_file, meta.get("panel"))):
        if value is None or value == []:
            continue
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise DataValidationError(f"{src}: panel must be a list of annotator names")
        found[src] = value
    if len(found) == 2 and found[task_file] != found[meta_file]:
        raise DataValidationError(
            f"{task_file}: panel {found[task_file]} differs from the panel "
            f"{found[meta_file]} in {meta_file}; keep one"
        )
    if not found:
        return None, task_file
    src, value = next(iter(found.items()))
    return value, src


def read_task(path: str | Path) -> TaskSpec:
    """Parse a ``task.toml`` / ``task.yaml`` file into a :class:`TaskSpec`.

    The folder keys ``panel`` and ``text_template`` are not part of the TaskSpec and are
    left out; every annotator needs a ``price`` here (:func:`load_folder` fills missing
    ones from the data).
    """
    path = Path(path)
    task_data, _ = split_folder_keys(_read_task_data(path))
    return _validate_task(task_data, path)


def _read_task_data(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise DatasetNotFoundError(f"task file not found: {path}")
    text = _read_text(path)
    if path.suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise DataValidationError(f"{path}: malformed TOML: {exc}") from exc
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise DataValidationError(f"{path}: malformed YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise DataValidationError(
            f"{path}: expected a mapping of task fields, got {type(data).__name__}"
        )
    return data


def _validate_task(data: dict[str, Any], path: Path) -> TaskSpec:
    try:
        return TaskSpec.model_validate(data)
    except ValidationError as exc:
        raise DataValidationError(f"{path}: invalid task spec: {validation_summary(exc)}") from exc


def _find_one(folder: Path, names, *, required: bool, what: str) -> Path | None:
    found = [folder / n for n in names if (folder / n).is_file()]
    if len(found) > 1:
        raise DataValidationError(
            f"{folder}: more than one file for the same part: {[p.name for p in found]}; "
            "keep exactly one"
        )
    if not found:
        if required:
            raise DatasetNotFoundError(f"{folder}: no {what} found; looked for {', '.join(names)}")
        return None
    return found[0]


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        start = max(0, exc.start - 20)
        raise DataValidationError(
            f"{path}: not valid UTF-8 at byte offset {exc.start} "
            f"(bytes {raw[exc.start : exc.start + 4]!r}, after {raw[start : exc.start]!r}); "
            "re-save the file as UTF-8"
        ) from exc


def _read_table(
    path: Path, *, allow_empty: bool = False, dtypes: dict[str, str] | None = None
) -> pd.DataFrame:
    fmt = path.suffix.lstrip(".")
    if fmt == "parquet":
        try:
            df = pd.read_parquet(path)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise DataValidationError(f"{path}: cannot read parquet: {exc}") from exc
        return _lists_from_arrays(df)
    text = _read_text(path)
    if not text.strip():
        if allow_empty:
            return pd.DataFrame()
        raise DataValidationError(f"{path}: file is empty")
    if fmt == "jsonl":
        return _apply_dtypes(_read_jsonl(text, path), dtypes, path)
    # CSV: canonical string columns stay strings; metadata columns get the dtypes saved in
    # dtypes.json, else are type-inferred. Only empty cells are missing ("NA" stays text).
    try:
        header = pd.read_csv(io.StringIO(text), nrows=0).columns
    except (pd.errors.ParserError, ValueError) as exc:
        raise DataValidationError(f"{path}: malformed CSV: {exc}") from exc
    dtype: dict[str, str] = {}
    dates: list[str] = []
    for c in header:
        saved = (dtypes or {}).get(c)
        if c in _STR_COLUMNS or c == "choices":
            dtype[c] = "str"
        elif c in _FLOAT_COLUMNS:
            dtype[c] = "float64"
        elif saved is None:
            continue
        elif saved.startswith("datetime64"):
            dates.append(c)
        else:
            dtype[c] = "str" if saved in ("object", "string") else saved
    try:
        return pd.read_csv(
            io.StringIO(text),
            dtype=dtype,
            parse_dates=dates or False,
            keep_default_na=False,
            na_values=[""],
        )
    except (pd.errors.ParserError, ValueError, TypeError) as exc:
        hint = f" (dtypes from {DTYPES_FILE}: {dtypes})" if dtypes else ""
        raise DataValidationError(f"{path}: malformed CSV: {exc}{hint}") from exc


def _read_jsonl(text: str, path: Path) -> pd.DataFrame:
    records = []
    for lineno, line in enumerate(text.split("\n"), start=1):  # not splitlines: U+2028
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataValidationError(f"{path}: line {lineno}: malformed JSON: {exc}") from exc
        if not isinstance(rec, dict):
            raise DataValidationError(f"{path}: line {lineno}: expected a JSON object")
        records.append(rec)
    df = pd.DataFrame.from_records(records)
    for c in _FLOAT_COLUMNS:
        if c in df.columns:
            df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def _apply_dtypes(df: pd.DataFrame, dtypes: dict[str, str] | None, path: Path) -> pd.DataFrame:
    """Restore saved dtypes JSON cannot express (e.g. nullable Int64, str)."""
    for c, saved in (dtypes or {}).items():
        if c not in df.columns or c == "choices" or saved == "object":
            continue
        try:
            df[c] = pd.to_datetime(df[c]) if saved.startswith("datetime64") else df[c].astype(saved)
        except (TypeError, ValueError) as exc:
            raise DataValidationError(
                f"{path}: column {c!r} cannot be read as {saved} (from {DTYPES_FILE}): {exc}"
            ) from exc
    return df


def _lists_from_arrays(df: pd.DataFrame) -> pd.DataFrame:
    """pyarrow gives list columns as numpy arrays; the canonical form uses Python lists."""
    for c in df.columns:
        if df[c].dtype == object:
            first = df[c].dropna().head(1)
            if len(first) and isinstance(first.iloc[0], np.ndarray):
                df[c] = df[c].map(lambda v: v.tolist() if isinstance(v, np.ndarray) else v)
    return df


def _decode_choices(items: pd.DataFrame, path: Path) -> pd.DataFrame:
    if "choices" not in items.columns:
        return items

    def parse(v, item_id):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        if isinstance(v, list | tuple | np.ndarray):
            return [str(x) for x in v]
        try:
            out = json.loads(v)
        except (TypeError, json.JSONDecodeError) as exc:
            raise DataValidationError(
                f"{path}: item {item_id!r}: `choices` must be a JSON list of strings, "
                f"got {str(v)[:60]!r} ({exc})"
            ) from exc
        if not isinstance(out, list):
            raise DataValidationError(
                f"{path}: item {item_id!r}: `choices` must be a JSON list, got {str(v)[:60]!r}"
            )
        return [str(x) for x in out]

    items = items.copy()
    ids = items["item_id"] if "item_id" in items.columns else items.index
    items["choices"] = pd.Series(
        [parse(v, i) for v, i in zip(items["choices"], ids, strict=True)],
        index=items.index,
        dtype=object,
    )
    return items
