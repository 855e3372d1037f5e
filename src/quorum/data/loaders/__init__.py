"""Named loaders for the shared real datasets, and :func:`load_dataset` for names or folders.

>>> ds = load_dataset("imdb-mlapi")          # doctest: +SKIP
>>> ds.meta["panel"], ds.task.llms           # doctest: +SKIP

Files are read from :func:`quorum.data.paths.data_dir` (``$QUORUM_DATA_DIR`` or
``../shared/data`` next to the checkout) and never copied. Nothing is cached on disk.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from quorum.data.loaders import classification as _c
from quorum.data.loaders import pairwise as _p
from quorum.data.loaders import spans as _sp
from quorum.data.loaders import summarization as _s
from quorum.data.loaders import unannotated as _u
from quorum.data.loaders._common import annotator_scores, rank_prices, unigram_f1
from quorum.data.paths import data_dir as _default_data_dir
from quorum.data.schema import Dataset, TaskType
from quorum.errors import DatasetNotFoundError, DataValidationError

__all__ = [
    "DATASETS",
    "DatasetEntry",
    "annotator_scores",
    "list_datasets",
    "load_dataset",
    "rank_prices",
    "unigram_f1",
]

Loader = Callable[[Path, "str | None", str], Dataset]


@dataclass(frozen=True)
class DatasetEntry:
    """A named dataset (or a family ``prefix/<sub>`` whose subs are found in the file)."""

    prefix: str
    file: str  # main file, relative to the data dir
    load: Loader
    subs: Callable[[Path], list[str]] | tuple[str, ...] | None = None
    summary: str = ""
    #: the kind of its task, known without loading it (the bench plans by it)
    kind: TaskType = TaskType.classification

    def sub_names(self, root: Path) -> list[str] | None:
        if self.subs is None:
            return None
        return list(self.subs) if isinstance(self.subs, tuple) else self.subs(root)


DATASETS: tuple[DatasetEntry, ...] = (
    DatasetEntry(
        "mmlu-redux",
        _c.MMLU_FILE,
        _c.load_mmlu_redux,
        summary="MMLU-Redux + HELM",
        kind=TaskType.multiple_choice,
    ),
    DatasetEntry(
        "llms-for-css", _c.CSS_FILE, _c.load_llms_for_css, _c.css_tasks, "Ziems et al. 2023"
    ),
    DatasetEntry("imdb-mlapi", _c.IMDB_FILE, _c.load_imdb_mlapi, summary="IMDB + 4 APIs"),
    DatasetEntry("sentimp-en", _c.SENTIMP_FILE, _c.load_sentimp_en, summary="3 human labellers"),
    DatasetEntry(
        "coannotating-stance",
        _c.STANCE_FILES["es"],
        _c.load_stance,
        tuple(_c.STANCE_FILES),
        "GPT-4o-mini x 11 prompts",
    ),
    DatasetEntry("ag-news", _u.AG_NEWS_FILE, _u.load_ag_news, summary="no annotators"),
    DatasetEntry("sst2", _u.SST2_FILE, _u.load_sst2, summary="no annotators"),
    DatasetEntry(
        "jmmlu",
        _u.JMMLU_FILE,
        _u.load_jmmlu,
        summary="no annotators",
        kind=TaskType.multiple_choice,
    ),
    DatasetEntry(
        "summ-goyal22",
        _s.GOYAL_FILE,
        _s.load_goyal22,
        _s.goyal_sources,
        "Goyal et al. 2022",
        TaskType.summarization,
    ),
    DatasetEntry(
        "summ-selfrec-cnndm",
        _s.SELFREC_FILE,
        _s.load_selfrec,
        None,
        "4 LLMs",
        TaskType.summarization,
    ),
    DatasetEntry(
        "summ-summeval",
        _s.SUMMEVAL_FILE,
        _s.load_summeval,
        None,
        "12 systems",
        TaskType.summarization,
    ),
    DatasetEntry(
        "summ-zhang23",
        _s.ZHANG_FILE,
        _s.load_zhang23,
        None,
        "writers vs GPT-3",
        TaskType.summarization,
    ),
    DatasetEntry(
        "llmbar",
        _p.LLMBAR_FILE,
        _p.load_llmbar,
        None,
        "pairwise, 4 judges x 2 orders",
        TaskType.pairwise,
    ),
    DatasetEntry(
        "mfrc",
        _c.MFRC_FILE,
        _c.load_mfrc,
        None,
        "multi-label, 7 models, 6 people",
        TaskType.multilabel,
    ),
    DatasetEntry(
        "span-d2t-eval",
        _sp.D2T_FILE,
        _sp.load_span_d2t,
        None,
        "error spans, 6 LLMs",
        TaskType.spans,
    ),
)
_BY_PREFIX = {e.prefix: e for e in DATASETS}


def _root(data_dir: str | Path | None) -> Path:
    if data_dir is None:
        return _default_data_dir()  # raises DatasetNotFoundError naming every place looked
    root = Path(data_dir).expanduser()
    if not root.is_dir():
        raise DatasetNotFoundError(f"data directory not found: {root}")
    return root


def _entry_file_exists(entry: DatasetEntry, root: Path) -> bool:
    if entry.prefix == "coannotating-stance":
        return any((root / f).is_file() for f in _c.STANCE_FILES.values())
    return (root / entry.file).is_file()


def list_datasets(data_dir: str | Path | None = None) -> list[str]:
    """Names of the named datasets whose files are present (per-task names discovered)."""
    root = _root(data_dir)
    names: list[str] = []
    for e in DATASETS:
        if not _entry_file_exists(e, root):
            continue
        subs = e.sub_names(root)
        if subs is None:
            names.append(e.prefix)
        elif e.prefix == "coannotating-stance":
            names += [f"{e.prefix}/{s}" for s in subs if (root / _c.STANCE_FILES[s]).is_file()]
        else:
            names += [f"{e.prefix}/{s}" for s in subs]
    return names


def resolve(name: str) -> tuple[DatasetEntry, str | None] | None:
    """``(entry, sub)`` for a dataset name, or None if it is not a registered name."""
    key = name.strip().lower()
    if key in _BY_PREFIX:
        return _BY_PREFIX[key], None
    prefix, _, sub = key.partition("/")
    if sub and prefix in _BY_PREFIX and _BY_PREFIX[prefix].subs is not None:
        return _BY_PREFIX[prefix], sub
    return None


def load_dataset(name_or_path: str | Path, data_dir: str | Path | None = None) -> Dataset:
    """Load a named dataset (see :func:`list_datasets`) or a dataset folder.

    Registered names win over a folder of the same name; write ``./name`` for the folder.
    """
    if isinstance(name_or_path, Path):
        from quorum.data.io import load_folder

        return load_folder(name_or_path)
    hit = resolve(name_or_path)
    if hit is None:
        p = Path(name_or_path).expanduser()
        if p.is_dir():
            from quorum.data.io import load_folder

            return load_folder(p)
        known = [e.prefix + ("/<sub>" if e.subs is not None else "") for e in DATASETS]
        close = difflib.get_close_matches(name_or_path.lower(), [e.prefix for e in DATASETS])
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise DatasetNotFoundError(
            f"unknown dataset {name_or_path!r} and no folder {p} exists.{hint} "
            f"Named datasets: {', '.join(known)}"
        )
    entry, sub = hit
    root = _root(data_dir)
    canonical = entry.prefix if sub is None else f"{entry.prefix}/{sub}"
    if entry.subs is not None:
        if entry.prefix != "coannotating-stance" and not (root / entry.file).is_file():
            raise DatasetNotFoundError(
                f"dataset {canonical!r}: file not found: {root / entry.file}"
            )
        subs = entry.sub_names(root) or []
        if not subs:
            raise DataValidationError(
                f"dataset {canonical!r}: no rows in {root / entry.file} to find its "
                f"{entry.prefix}/<sub> names in"
            )
        if sub is None or sub not in subs:
            what = "needs a sub-name" if sub is None else f"has no {sub!r}"
            raise DatasetNotFoundError(
                f"dataset {entry.prefix!r} {what}; choose one of "
                f"{', '.join(f'{entry.prefix}/{s}' for s in subs)}"
            )
    return entry.load(root, sub, canonical)
