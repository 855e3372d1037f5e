"""Write a dataset folder from one table of items and answers (``quorum datasets init``).

The table is CSV, TSV, JSONL, JSON or Parquet with one row per item; answers are either
columns of it (one per annotator, *wide*) or a second table with one row per answer
(``item_id, annotator, output``, or crowd-kit's ``task, worker, label``; *long*).
The folder written holds only what the table says: prices and panel left out are filled
by :mod:`quorum.data.defaults` when the folder is loaded, and the folder is loaded once
before returning, so every problem is reported with the file it is in.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from quorum.data.io import FORMATS, META_FILE, Format
from quorum.data.loaders._common import LETTERS, mc_text
from quorum.data.schema import TaskType
from quorum.data.writer import clear_dataset_files, toml_value, write_table
from quorum.errors import DatasetNotFoundError, DataValidationError

__all__ = ["init_folder", "read_source"]

#: crowd-kit's column names for long answers
_CROWDKIT = {"task": "item_id", "worker": "annotator", "label": "output"}
_LONG = ("item_id", "annotator", "output")
_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".parquet")


def read_source(path: str | Path) -> pd.DataFrame:
    """A CSV/TSV/JSONL/JSON/Parquet table; text files are read with every column a string."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DatasetNotFoundError(f"file not found: {path}")
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            return pd.read_parquet(path)
        text = path.read_bytes().decode("utf-8").removeprefix("\ufeff")
        if suffix in (".csv", ".tsv"):
            return pd.read_csv(
                io.StringIO(text),
                sep="\t" if suffix == ".tsv" else ",",
                dtype=str,
                keep_default_na=False,
                na_values=[""],
            )
        if suffix == ".jsonl":
            return pd.read_json(io.StringIO(text), lines=True, dtype=False)
        if suffix == ".json":
            return pd.read_json(io.StringIO(text), dtype=False)
    except UnicodeDecodeError as exc:
        raise DataValidationError(
            f"{path}: not valid UTF-8 at byte offset {exc.start}; re-save the file as UTF-8"
        ) from exc
    except (ValueError, OSError) as exc:
        raise DataValidationError(f"{path}: cannot read: {exc}") from exc
    raise DataValidationError(f"{path}: use one of {', '.join(_SUFFIXES)}")


def init_folder(
    out: str | Path,
    source: str | Path,
    *,
    task_type: str | None = None,
    id_column: str | None = None,
    text: Sequence[str] = ("text",),
    template: str | None = None,
    gold: str | None = None,
    choices: Sequence[str] = (),
    answers: Sequence[str] = (),
    answers_file: str | Path | None = None,
    humans: Sequence[str] = (),
    prices: Mapping[str, float] | None = None,
    labels: Sequence[str] | None = None,
    name: str | None = None,
    language: str = "en",
    fmt: Format = "csv",
    overwrite: bool = False,
):
    """Write the dataset folder ``out`` from the table ``source`` and return it loaded.

    - ``source``: the table, or a folder laid out as a dataset with no task file
      (``items.*`` and ``answers.*``, e.g. ``mfrc_multilabel``): its items table, and its
      answers table unless ``answers_file`` is given;
    - ``task_type``: the task kind; None: the kind whose columns the items' gold and the
      answers have (:func:`~quorum.tasks.registry.recognise_folder`: label lists are
      multi-label), else classification;
    - ``id_column``: item ids (default: ``item_id`` if present, else the row number);
    - ``text``: the column with the item text, or several columns joined by ``template``
      (default ``"<col>: {<col>}"`` one per line), written as ``text_template``;
    - ``gold``: gold labels, or for summarization the reference summary;
    - ``choices`` (multiple choice): one column holding a JSON list (or ``a||b||c``), or
      one column per option; labels are then letters and the text is the question
      followed by lettered options (as the named loaders write it); gold given as a
      0-based index is turned into a letter;
    - ``answers``: answer columns of ``source``, one per annotator (the column name is the
      annotator's name); ``answers_file``: a long table of answers instead;
    - ``humans``: annotators that are people (kind ``human``); the others are LLMs; not
      given, long answers with an ``annotator_kind`` column say who is a person
      ("human");
    - ``prices``: price per call of some annotators; the others get the default rule;
    - ``labels``: the label set (default: the gold labels found, else the answers found).

    Above 60 lines because of its signature and this list of its arguments; the body is a
    sequence of named steps (ids, text, choices, gold, answers, labels, the files).
    """
    folder = Path(out).expanduser()
    src = Path(source).expanduser()
    if src.is_dir():  # a dataset folder as it is: its items and answers tables
        src, found = _folder_tables(src)
        _refuse_read_as_is(src.parent, src, found, task_type)
        answers_file = answers_file if answers_file is not None else found
    df, need = _read_rows(src)
    items, ids = _item_ids(df, id_column, answers, need, str(src))
    ann = _answers(df, ids, answers, answers_file)
    ttype = TaskType(task_type) if task_type else _recognised(items, ann, gold)
    opts = _choices(df, choices, need) if choices else None
    items, text_template = _item_text(items, df, ttype, text, template, opts, need)
    if opts is not None:
        items = items.drop(columns=[c for c in choices if c in items.columns])
        items["choices"] = opts.to_numpy()
    gold_col = "reference" if ttype is TaskType.summarization else "gold"
    items, notes = _gold(items, df, gold, gold_col, opts, need)
    first = [c for c in ("item_id", "text", gold_col, "choices") if c in items.columns]
    items = items[first + [c for c in items.columns if c not in first]]
    from quorum.tasks.registry import KINDS

    items, ann = KINDS[ttype].table_values(items, ann)  # e.g. label lists as JSON text
    label_set = _labels(ttype, labels, items, ann, opts)
    names = list(dict.fromkeys(ann["annotator"].astype(str)))
    if not humans and "annotator_kind" in ann.columns:  # who is a person, as the answers say
        people = ann.loc[ann["annotator_kind"].astype(str) == "human", "annotator"]
        humans = sorted(set(people.astype(str)))
    ann = ann.drop(columns=[c for c in ("annotator_kind",) if c in ann.columns])
    unknown = sorted(set(humans) - set(names)) + sorted(set(prices or {}) - set(names))
    if unknown:
        raise DataValidationError(f"annotator(s) {unknown} have no answers; annotators: {names}")

    task: dict[str, Any] = {
        "name": name or folder.name,
        "type": ttype.value,
        "language": language,
    }
    if label_set is not None:
        task["labels"] = label_set
    if text_template is not None:
        task["text_template"] = text_template
    decl = [
        {"name": a, "kind": "human" if a in humans else "llm"}
        | ({"price": float(prices[a])} if prices and a in prices else {})
        for a in names
    ]
    write_folder_files(folder, fmt, overwrite, task, decl, items, ann, src, notes)
    from quorum.data.io import load_folder

    return load_folder(folder)


def _folder_tables(folder: Path) -> tuple[Path, Path | None]:
    """A dataset folder's items table and its answers table (None without one)."""

    def first(names: Sequence[str]) -> Path | None:
        got = [
            folder / f"{n}{x}" for n in names for x in _SUFFIXES if (folder / f"{n}{x}").is_file()
        ]
        return got[0] if got else None

    items = first(["items"])
    if items is None:
        raise DatasetNotFoundError(
            f"{folder}: no items table (items{', items'.join(_SUFFIXES)}); give --from a table"
        )
    return items, first(["answers", "annotations"])


#: kinds whose folder (no task file) the loader reads as it is, its own columns mapped by
#: the kind (``gold_spans``/``spans``; the instruction and two outputs, swap annotators):
#: rewriting it as an items table and long answers would lose that mapping
_READ_AS_IS = (TaskType.spans, TaskType.pairwise)


def _refuse_read_as_is(
    folder: Path, items: Path, answers: Path | None, task_type: str | None
) -> None:
    """A span or pairwise folder given to ``--from`` (no ``--type`` saying otherwise): one
    line saying that it is a dataset already, instead of a missing ``output`` or ``text``
    column."""
    from quorum.tasks.registry import recognise_folder

    ann = read_source(answers) if answers is not None else pd.DataFrame()
    kind = recognise_folder(read_source(items), ann)
    if kind is None or kind.type not in _READ_AS_IS:
        return
    if task_type is not None and TaskType(task_type) is not kind.type:
        return
    raise DataValidationError(
        f"{folder}: a {kind.type.value} folder is a dataset as it is (no task file needed): "
        f"`quorum datasets show {folder}` and `quorum simulate -d {folder}` read it; "
        "`datasets init --from` writes folders from tables of labels (classification, "
        "multiple choice, summarization, multi-label)"
    )


def _recognised(items: pd.DataFrame, ann: pd.DataFrame, gold: str | None) -> TaskType:
    """The kind the items' gold column (``gold`` or a column named gold) and the answers
    are of (label lists: multi-label), else classification."""
    from quorum.tasks.registry import recognise_folder

    probe = pd.DataFrame({"item_id": items["item_id"], "text": ""})
    col = gold or ("gold" if "gold" in items.columns else None)
    if col is not None and col in items.columns:
        probe["gold"] = items[col].to_numpy()
    kind = recognise_folder(probe, ann)
    return kind.type if kind is not None else TaskType.classification


def _read_rows(src: Path) -> tuple[pd.DataFrame, Callable[[str, str], str]]:
    """The source table (string column names) and ``need(col, what)``: the column, or a
    one-line error naming the file and its columns."""
    df = read_source(src)
    where = str(src)
    if df.empty:
        raise DataValidationError(f"{where}: no rows")
    cols = [str(c) for c in df.columns]
    df.columns = cols

    def need(col: str, what: str) -> str:
        if col not in cols:
            raise DataValidationError(f"{where}: {what} column {col!r} not found; columns: {cols}")
        return col

    return df, need


def _item_ids(
    df: pd.DataFrame, id_column: str | None, answers: Sequence[str], need, where: str
) -> tuple[pd.DataFrame, pd.Series]:
    """The item rows (answer columns dropped) with ``item_id`` first, and the ids."""
    for c in answers:
        need(c, "answer")
    used = set(answers)
    items = df.drop(columns=list(answers))
    id_col = id_column or ("item_id" if "item_id" in df.columns else None)
    if id_col is not None:
        need(id_col, "id")
        ids = df[id_col].astype(str).str.strip()
    else:
        ids = pd.Series([str(i) for i in range(len(df))])
    if "item_id" in used:
        raise DataValidationError(f"{where}: 'item_id' cannot be an answer column")
    items = items.drop(columns=[id_col] if id_col else [])
    items.insert(0, "item_id", ids.to_numpy())
    return items, ids


def _item_text(
    items: pd.DataFrame,
    df: pd.DataFrame,
    ttype: TaskType,
    text: Sequence[str],
    template: str | None,
    opts: pd.Series | None,
    need,
) -> tuple[pd.DataFrame, str | None]:
    """The items' ``text`` column, or the ``text_template`` over several columns."""
    if template is not None or len(text) > 1:
        text_template = template or "\n".join(f"{c}: {{{c}}}" for c in text)
        if "text" in items.columns:
            items = items.rename(columns={"text": "text_column"})
            text_template = text_template.replace("{text}", "{text_column}")
        return items, text_template
    col = need(text[0], "text")
    body = df[col].astype(str)
    if ttype is TaskType.multiple_choice and opts is not None:
        body = mc_text(body, opts)
    items = items.drop(columns=[col] if col != "text" else [])
    items["text"] = body.to_numpy()
    return items, None


def _gold(
    items: pd.DataFrame,
    df: pd.DataFrame,
    gold: str | None,
    gold_col: str,
    opts: pd.Series | None,
    need,
) -> tuple[pd.DataFrame, list[str]]:
    """The gold (or reference) column as ``gold_col``, option indices turned into letters."""
    notes: list[str] = []
    if gold is not None:
        g = df[need(gold, "gold")]
        if opts is not None:
            g, converted = _gold_letters(g, opts)
            if converted:
                notes.append(f"gold {gold!r} given as 0-based option indices: written as letters")
        items = items.drop(columns=[gold] if gold != gold_col else [])
        items[gold_col] = g.to_numpy()
    return items, notes


def _choices(df: pd.DataFrame, choices: Sequence[str], need) -> pd.Series:
    if len(choices) > 1:
        for c in choices:
            need(c, "choice")
        rows = df[list(choices)].astype(object).where(df[list(choices)].notna(), None)
        return pd.Series(
            [[str(v) for v in r if v is not None] for r in rows.to_numpy().tolist()], dtype=object
        )
    col = need(choices[0], "choices")

    def parse(v: Any) -> list[str]:
        if isinstance(v, list | tuple):
            return [str(x) for x in v]
        s = "" if v is None or v != v else str(v).strip()
        if s.startswith("["):
            try:
                return [str(x) for x in json.loads(s)]
            except json.JSONDecodeError:
                pass
        return [x for x in s.split("||") if x] if s else []

    return pd.Series([parse(v) for v in df[col]], dtype=object)


def _gold_letters(g: pd.Series, opts: pd.Series) -> tuple[pd.Series, bool]:
    s = g.astype(object).where(g.notna(), None).map(lambda v: None if v is None else str(v).strip())
    vals = s.dropna()
    n = opts.map(len)
    if len(vals) and vals.str.fullmatch(r"\d+").all():
        idx = pd.to_numeric(s, errors="coerce")
        ok = idx.isna() | ((idx >= 0) & (idx < n))
        if ok.all():
            return idx.map(lambda i: None if pd.isna(i) else LETTERS[int(i)]), True
    return s, False


def _answers(
    df: pd.DataFrame, ids: pd.Series, answers: Sequence[str], answers_file: str | Path | None
) -> pd.DataFrame:
    frames = []
    for c in answers:
        frames.append(
            pd.DataFrame({"item_id": ids.to_numpy(), "annotator": c, "output": df[c].to_numpy()})
        )
    if answers_file is not None:
        long = read_source(answers_file)
        long.columns = [str(c) for c in long.columns]
        long = long.rename(columns={k: v for k, v in _CROWDKIT.items() if k in long.columns})
        miss = [c for c in ("item_id", "annotator", "output") if c not in long.columns]
        if miss:
            raise DataValidationError(
                f"{answers_file}: missing column(s) {miss} (item_id, annotator, output; or "
                f"crowd-kit's task, worker, label); found {list(long.columns)}"
            )
        long["item_id"] = long["item_id"].astype(str).str.strip()
        long["annotator"] = long["annotator"].astype(str)
        frames.append(long)
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in _LONG})
    ann = pd.concat(frames, ignore_index=True)
    return ann.loc[ann["output"].notna()].reset_index(drop=True)


def _labels(
    ttype: TaskType,
    labels: Sequence[str] | None,
    items: pd.DataFrame,
    ann: pd.DataFrame,
    opts: pd.Series | None,
) -> list[str] | None:
    from quorum.tasks.registry import KINDS

    if not ttype.has_labels and not KINDS[ttype].needs_labels():
        return None
    if labels:
        return [str(x) for x in labels]
    if opts is not None:
        return list(LETTERS[: max(1, int(opts.map(len).max()))])
    found = items["gold"].dropna() if "gold" in items.columns else pd.Series(dtype=object)
    if found.empty:
        found = ann["output"].dropna()
    out = KINDS[ttype].labels_found(found)
    if not out:
        raise DataValidationError("no labels: give --labels, a gold column or answers")
    return out


def write_folder_files(
    folder: Path,
    fmt: str,
    overwrite: bool,
    task: dict[str, Any],
    decl: list[dict[str, Any]],
    items: pd.DataFrame,
    ann: pd.DataFrame,
    src: Path,
    notes: list[str],
) -> None:
    """Write task.toml (``task`` and the annotator declarations ``decl``), the items, the
    answers and the notes into ``folder``; existing dataset files only with ``overwrite``."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {FORMATS}")
    clear_dataset_files(folder, overwrite, how="overwrite=True (--overwrite)")
    lines = [
        f"# written by `quorum datasets init` from {src.name}; see docs/datasets.md",
        "# An annotator without `price` and a missing `panel` get the default rule when the",
        "# folder is loaded (`quorum datasets show` says which defaults were used).",
    ]
    lines += [f"{k} = {toml_value(v)}" for k, v in task.items()]
    for a in decl:
        lines += ["", "[[annotators]]"] + [f"{k} = {toml_value(v)}" for k, v in a.items()]
    (folder / "task.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_table(items.reset_index(drop=True), folder / f"items.{fmt}", fmt)
    if len(ann):
        write_table(ann, folder / f"annotations.{fmt}", fmt)
    if notes:
        (folder / META_FILE).write_text(json.dumps({"notes": notes}, indent=1) + "\n", "utf-8")
