"""Write a dataset *folder* that :func:`quorum.data.io.load_folder` reads back unchanged.

Also the small JSON and TOML writers the rest of the package uses (:func:`jsonable`,
:func:`toml_value`): the folder layout is described in :mod:`quorum.data.io`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import yaml

from quorum.data.io import DTYPES_FILE, FORMATS, META_FILE, TASK_FILES, Format
from quorum.data.schema import Dataset, TaskSpec

__all__ = [
    "clear_dataset_files",
    "jsonable",
    "save_folder",
    "toml_value",
    "write_table",
    "write_task",
]


def save_folder(
    dataset: Dataset,
    path: str | Path,
    fmt: Format = "csv",
    *,
    task_format: Literal["toml", "yaml"] = "toml",
    overwrite: bool = False,
) -> Path:
    """Write ``dataset`` as a folder that :func:`load_folder` reads back unchanged.

    Existing canonical files in ``path`` are replaced only with ``overwrite=True``.
    Returns the folder path.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    folder = Path(path).expanduser()
    clear_dataset_files(folder, overwrite)

    write_task(dataset.task, folder / f"task.{task_format}")
    write_table(dataset.items, folder / f"items.{fmt}", fmt)
    if len(dataset.annotations):
        write_table(dataset.annotations, folder / f"annotations.{fmt}", fmt)
    if fmt in ("csv", "jsonl"):
        parts = {"items": dataset.items, "annotations": dataset.annotations}
        types = {
            k: {c: str(df[c].dtype) for c in df.columns if c != "choices"}
            for k, df in parts.items()
        }
        (folder / DTYPES_FILE).write_text(json.dumps(types, indent=1) + "\n", encoding="utf-8")
    if dataset.meta:
        (folder / META_FILE).write_text(
            json.dumps(jsonable(dataset.meta), indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
    return folder


def clear_dataset_files(folder: Path, overwrite: bool, how: str = "overwrite=True") -> None:
    """Make ``folder`` and remove the dataset files it holds (task, items, annotations,
    meta, dtypes); where it holds any and ``overwrite`` is False, refuse (``how`` names the
    switch in the error)."""
    folder.mkdir(parents=True, exist_ok=True)
    ours = [*TASK_FILES, META_FILE, DTYPES_FILE]
    ours += [f"{part}.{f}" for part in ("items", "annotations") for f in FORMATS]
    existing = [folder / n for n in ours if (folder / n).exists()]
    if existing and not overwrite:
        raise FileExistsError(
            f"{folder} already holds dataset files {[p.name for p in existing]}; "
            f"pass {how} to replace them"
        )
    for p in existing:
        p.unlink()


def write_task(task: TaskSpec, path: str | Path) -> Path:
    """Write a task spec as TOML (``.toml``) or YAML (``.yaml``/``.yml``)."""
    path = Path(path)
    data = task.model_dump(mode="json", exclude_none=True)
    if path.suffix == ".toml":
        text = to_toml(data)
    else:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_table(df: pd.DataFrame, path: Path, fmt: str) -> None:
    if fmt == "parquet":
        df.to_parquet(path, index=False)
    elif fmt == "csv":
        out = df.copy()
        if "choices" in out.columns:
            out["choices"] = out["choices"].map(
                lambda v: (
                    json.dumps(jsonable(v), ensure_ascii=False)
                    if isinstance(v, list | tuple | np.ndarray)
                    else None
                )
            )
        out.to_csv(path, index=False, encoding="utf-8")
    else:  # jsonl: stdlib json keeps floats exact (repr), unlike DataFrame.to_json
        records = df.astype(object).where(df.notna(), None).to_dict("records")
        with path.open("w", encoding="utf-8") as fh:
            for rec in records:
                fh.write(json.dumps(jsonable(rec), ensure_ascii=False))
                fh.write("\n")


def jsonable(v):
    """``v`` with numpy values, NaN and timestamps as plain JSON values (recursively)."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple | np.ndarray):
        return [jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, pd.Timestamp):
        return v.isoformat()
    return v


# ---------------------------------------------------------------- minimal TOML writer
def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        if isinstance(v, float) and not math.isfinite(v):
            return "inf" if v > 0 else ("-inf" if v < 0 else "nan")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # JSON escapes are valid TOML basic strings
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def toml_key(k: str) -> str:
    bare = k and all(c.isascii() and (c.isalnum() or c in "-_") for c in k)
    return k if bare else json.dumps(k, ensure_ascii=False)


def to_toml(data: dict) -> str:
    """TOML for a TaskSpec dump: scalars and lists, then tables, then arrays of tables."""
    lines, tables, arrays = [], [], []
    for k, v in data.items():
        if isinstance(v, dict):
            tables.append((k, v))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            arrays.append((k, v))
        else:
            lines.append(f"{toml_key(k)} = {toml_value(v)}")
    for k, v in tables:
        lines += ["", f"[{toml_key(k)}]"]
        lines += [f"{toml_key(kk)} = {toml_value(vv)}" for kk, vv in v.items()]
    for k, rows in arrays:
        for row in rows:
            lines += ["", f"[[{toml_key(k)}]]"]
            lines += [f"{toml_key(kk)} = {toml_value(vv)}" for kk, vv in row.items()]
    return "\n".join(lines) + "\n"
