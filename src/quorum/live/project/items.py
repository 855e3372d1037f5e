"""Read the project's items file into ``item_id, text[, gold, choices, context]`` and the
task kind's own columns (a pair's ``instruction, output_1, output_2, text_swapped``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from quorum.errors import ConfigError, DataValidationError
from quorum.live.project.config import ProjectConfig
from quorum.tasks.base import ItemView

log = logging.getLogger("quorum.live")

_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".parquet")


def _read(path: Path) -> pd.DataFrame:
    if path.is_dir():
        found = sorted(p.name for p in path.iterdir() if p.suffix.lower() in _SUFFIXES)
        hint = f"; it holds {found[:5]}" if found else ""
        raise ConfigError(f"items.path {path} is a folder, not a file{hint}")
    if not path.is_file():
        raise ConfigError(f"items file not found: {path}")
    suf = "".join(path.suffixes[-2:]).lower() if path.suffix == ".gz" else path.suffix.lower()
    try:
        if suf.startswith(".csv"):
            return pd.read_csv(path, dtype=str, keep_default_na=False)
        if suf.startswith(".tsv"):
            return pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
        if suf == ".jsonl":
            return _read_jsonl(path)
        if suf.startswith(".jsonl"):
            return pd.read_json(path, lines=True, dtype=False)
        if suf.startswith(".json"):
            return pd.read_json(path, dtype=False)
        if suf == ".parquet":
            return pd.read_parquet(path)
    except DataValidationError:
        raise
    except (ValueError, OSError) as exc:
        raise DataValidationError(f"cannot read items file {path}: {exc}") from None
    raise ConfigError(f"items file {path}: use .csv, .tsv, .jsonl, .json or .parquet")


def _read_jsonl(path: Path) -> pd.DataFrame:
    """One JSON object per line; a broken line is reported with its number."""
    rows = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataValidationError(
                    f"items file {path}, line {n}: not valid JSON ({exc.msg} at column "
                    f"{exc.colno}): {line.strip()[:80]!r}"
                ) from None
            if not isinstance(obj, dict):
                raise DataValidationError(
                    f"items file {path}, line {n}: expected a JSON object, got {type(obj).__name__}"
                )
            rows.append(obj)
    return pd.DataFrame(rows)


def _label(x) -> str | None:
    if x is None or (isinstance(x, float) and x != x) or (isinstance(x, str) and not x.strip()):
        return None
    if isinstance(x, list | tuple | dict | np.ndarray):  # a JSON or parquet list
        return _context(x)
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x).strip()


def _choices(x) -> tuple[str, ...] | None:
    if x is None or (isinstance(x, float) and x != x):
        return None
    if isinstance(x, str):
        s = x.strip()
        if not s:
            return None
        try:
            x = json.loads(s)
        except json.JSONDecodeError:
            x = s.split("||")
    return tuple(str(c) for c in list(x))


def _missing(x) -> bool:
    """None or NaN: a JSON ``null``, or a cell a row does not have."""
    return x is None or (isinstance(x, float) and x != x)


def _ids(df: pd.DataFrame, id_col: str | None, where: str) -> pd.Series:
    """The item ids as text with outer spaces stripped (so ``' a'`` and ``'a'`` are one id,
    and a duplicate is caught); a missing or empty id is a :class:`DataValidationError`."""
    if id_col is None:
        return pd.Series([str(i) for i in range(len(df))])
    ids = []
    for n, x in enumerate(df[id_col].tolist()):
        if _missing(x):
            raise DataValidationError(
                f"{where}: item {n + 1} has no id ({id_col!r} is null or missing)"
            )
        s = (str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)).strip()
        if not s:
            raise DataValidationError(f"{where}: item {n + 1} has an empty id ({id_col!r})")
        ids.append(s)
    out = pd.Series(ids)
    raw = [str(x) for x in df[id_col].tolist()]
    dup = out[out.duplicated(keep=False)]
    if len(dup):
        first = dup.iloc[0]
        same = sorted({raw[i] for i in dup.index if out[i] == first})
        how = "" if len(same) == 1 else " once outer spaces are stripped"
        raise DataValidationError(
            f"{where}: duplicate item id {first!r}{how} (as written: {same}); "
            "give each item its own id"
        )
    return out


def load_items(cfg: ProjectConfig) -> pd.DataFrame:
    """Items as a frame with ``item_id, text`` and, when configured, ``gold, choices``; a
    kind with its own columns adds them (:meth:`~quorum.tasks.base.TaskKind.live_items`:
    a pair's ``instruction, output_1, output_2`` and ``text_swapped``)."""
    ic = cfg.items
    path = cfg.path(ic.path)
    df = _read(path)
    where = f"items file {path}"
    if ic.limit:
        df = df.head(ic.limit)
    cols = list(df.columns)
    id_col = ic.id_column or ("item_id" if "item_id" in cols else None)
    if id_col is not None and id_col not in cols:
        raise ConfigError(f"{where}: id_column {id_col!r} not found; columns are {cols}")
    ids = _ids(df, id_col, where)
    kind = cfg.task.kind
    own = kind.live_items(df, ids.tolist(), where, ic.pair_columns, ic.text_template)
    if own is not None:  # the kind's own columns (a pair's instruction and outputs)
        text = own[0]["text"]
        for note in own[1]:
            log.warning("%s: %s", where, note)
    elif ic.text_template:
        try:
            text = pd.Series([ic.text_template.format(**r) for r in df.to_dict("records")])
        except KeyError as exc:
            raise ConfigError(
                f"{where}: text_template uses column {exc} which is not in {cols}"
            ) from None
        if kind.marks_text and ic.gold_column:  # offsets into which text? say it
            log.warning(
                "%s: items.text_template on a span task: the gold spans (%r) are read as "
                "offsets into the text the template makes (e.g. %r), not into a column of "
                "the file; shift them, or use text_column",
                where, ic.gold_column, text.iloc[0][:60] if len(text) else "",
            )  # fmt: skip
    else:
        if ic.text_column not in cols:
            raise ConfigError(
                f"{where}: text_column {ic.text_column!r} not found; columns are {cols} "
                "(set items.text_column or items.text_template)"
            )
        text = df[ic.text_column]
        nulls = [ids.iloc[i] for i, x in enumerate(text.tolist()) if _missing(x)]
        if nulls:
            raise DataValidationError(
                f"{where}: no text ({ic.text_column!r} is null or missing) for "
                f"{len(nulls)} item(s), e.g. {nulls[:5]}"
            )
    out = pd.DataFrame({"item_id": ids.to_numpy(), "text": text.astype(str).to_numpy()})
    if own is not None:
        for col in own[0].columns.drop("text"):
            out[col] = own[0][col].to_numpy()
    if ic.gold_column:
        if ic.gold_column not in cols:
            raise ConfigError(f"{where}: gold_column {ic.gold_column!r} not in {cols}")
        out["gold"] = [_label(x) for x in df[ic.gold_column]]
        labels = set(cfg.task.labels or []) if cfg.task.type.has_labels else set()
        if labels:
            bad = out.loc[out["gold"].notna() & ~out["gold"].isin(labels)]
            if len(bad):
                raise DataValidationError(
                    f"{where}: {len(bad)} gold label(s) outside the label set {sorted(labels)}, "
                    f"e.g. {bad['gold'].head(3).tolist()}"
                )
    if ic.choices_column:
        if ic.choices_column not in cols:
            raise ConfigError(f"{where}: choices_column {ic.choices_column!r} not in {cols}")
        out["choices"] = [_choices(x) for x in df[ic.choices_column]]
    if ic.context_column:
        if ic.context_column not in cols:
            raise ConfigError(f"{where}: context_column {ic.context_column!r} not in {cols}")
        out["context"] = [None if _missing(x) else _context(x) for x in df[ic.context_column]]
    dup = out["item_id"][out["item_id"].duplicated()]
    if len(dup):
        raise DataValidationError(f"{where}: duplicate item ids, e.g. {dup.head(3).tolist()}")
    empty = out["item_id"][out["text"].str.strip() == ""]
    if len(empty):
        raise DataValidationError(f"{where}: empty text for items {empty.head(5).tolist()}")
    if out.empty:
        raise DataValidationError(f"{where}: no items")
    if "gold" in out.columns:  # the kind's canonical gold, or a one-line error naming the item
        try:
            out, _ = cfg.task.kind.check_frames(out, pd.DataFrame())
        except DataValidationError as exc:
            raise DataValidationError(f"{where}: {exc}") from None
    return out


def _context(x) -> str:
    """A context cell as text: a string as it is, anything else (a parquet struct or list,
    a JSON value) as JSON."""
    if isinstance(x, str):
        return x
    if isinstance(x, np.ndarray):
        x = x.tolist()
    return json.dumps(x, ensure_ascii=False, default=str)


def item_views(items: pd.DataFrame, fields: Sequence[str] = ()) -> list[ItemView]:
    """The items as prompts and people see them; ``fields``: the kind's named parts
    (:attr:`~quorum.tasks.base.TaskKind.item_fields`) the frame holds."""
    has_choices = "choices" in items.columns
    has_context = "context" in items.columns
    names = [f for f in fields if f in items.columns]
    return [
        ItemView(
            str(r["item_id"]),
            str(r["text"]),
            r["choices"] if has_choices else None,
            tuple((f, str(r[f])) for f in names),
            r["context"] if has_context else None,
        )
        for r in items.to_dict("records")
    ]
