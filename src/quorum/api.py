"""The library face: route a pandas DataFrame of recorded answers, or run a live project.

``import quorum`` gives these functions and the routers; see the README for both ways.

- :func:`replay`: recorded answers (one long ``item_id, annotator, output`` frame, the
  crowd-kit ``task, worker, label`` names work too) and a budget -> a :class:`RoutingResult`
  with one label per item, every paid annotation and the decision trace. Nothing is
  called: the answers stand in for the annotators, so routers can be compared for free.
- :func:`annotate`: a live project (a project file, or a :class:`ProjectConfig` built in
  Python) -> its run summary; LLMs are called, humans asked, every call is in the ledger.
- :func:`labels`: a live project's labels with provenance, as a DataFrame or a
  ``datasets.Dataset``; :func:`report`: its HTML page.
- :func:`make_router`: a router by name (``"quorum"``, ``"random"``, ``"cdi"``, ...) or
  ``module:Class``.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import ValidationError

from quorum.data.schema import (
    GOLD_HUMAN,
    AnnotatorSpec,
    Dataset,
    TaskSpec,
    TaskType,
    label_str,
)
from quorum.errors import DataValidationError, UnsupportedTaskError, validation_summary
from quorum.routing.core.base import Router, RoutingResult
from quorum.routing.core.budget import MAX_PRICE

__all__ = ["annotate", "labels", "make_router", "replay", "report"]

#: crowd-kit's column names and ours
_CROWDKIT = {"task": "item_id", "worker": "annotator", "label": "output"}


def make_router(method: str | Router = "quorum", **params: Any) -> Router:
    """A router instance: pass one through, or build one by registry name or
    ``module:Class`` (:func:`quorum.methods.make_router`, the one factory).

    >>> make_router("random")
    RandomRouter(...)
    """
    if isinstance(method, Router):
        if params:
            raise ValueError("pass parameters to the router's constructor, not with an instance")
        return method
    from quorum.methods import make_router as by_name

    return by_name(method, **params)


def replay(
    answers: pd.DataFrame,
    *,
    prices: Mapping[str, float],
    human: str,
    items: pd.DataFrame | Mapping[str, str] | None = None,
    task_type: Literal["classification", "multiple_choice", "summarization"] = "classification",
    labels: Sequence[str] | None = None,
    setting: Literal["dollars", "auditor"] = "dollars",
    budget: float = 0.3,
    router: str | Router = "quorum",
    seed: int = 0,
    features: Literal["full", "light"] = "full",
    language: str = "en",
    quality: bool | dict[str, Any] | None = None,
    target_quality: float | None = None,
    confidence: float | None = None,
) -> RoutingResult:
    """Route recorded answers under a budget, as if the annotators were called.

    ``answers``: one row per recorded answer, ``item_id, annotator, output`` (or
    crowd-kit's ``task, worker, label``, read where ours are absent; ids and annotator
    names are strings, an integer worker ``3`` being ``"3"`` in ``prices`` and ``human``
    too; a missing or blank output is no answer, and labels are strings, ``1.0`` being
    ``"1"``); ``human`` names the annotator a paid human label returns (where it has no
    answer on some items a ``UserWarning`` says so: a human label bought there is paid
    and brings none, :func:`quorum.simulate.human_gaps`); ``prices`` every annotator's
    price per answer (the human's included);
    ``items`` each item's text (``item_id, text`` frame or id -> text; default: the ids).
    ``budget``: dollars, a share of labelling every item by humans; auditor, a share of
    the items a human may label. ``features``: "full" (the paper's phi(d_t), cached) or
    "light" (text statistics only). ``quality``: random human checks bought out of the
    budget estimate the labels' quality (``result.info["quality"]``: ``quality_estimate``,
    ``quality_low``, ``quality_high`` at ``confidence``, default 0.95); None: on for
    QUORUM, off for other routers (the baselines run as the paper ran them); False off,
    True on, a dict: :class:`~quorum.quality.checks.QualityChecks` parameters.
    ``target_quality`` spends in steps up to the budget and stops once the lower bound
    reaches it (``confidence`` default 0.9; ``result.info["target"]``; docs/quality.md).

    >>> import pandas as pd, quorum
    >>> answers = pd.DataFrame({
    ...     "item_id": [f"i{k}" for k in range(40) for _ in range(3)],
    ...     "annotator": ["cheap", "dear", "expert"] * 40,
    ...     "output": [lab for k in range(40)
    ...                for lab in ("pos" if k % 3 else "neg", "pos" if k % 2 else "neg",
    ...                            "pos" if k % 2 else "neg")],
    ... })
    >>> result = quorum.replay(answers, prices={"cheap": 0.01, "dear": 0.05, "expert": 0.1},
    ...                        human="expert", budget=0.3, features="light")
    >>> len(result.labels), result.cost <= 0.3 * 40 * 0.1, "quality" in result.info
    (40, True, True)
    """
    human = str(human)  # an integer worker id names the annotator its string does
    prices = {str(k): v for k, v in prices.items()}
    dataset = _replay_dataset(answers, prices, human, items, task_type, labels, language)
    from quorum.simulate import human_gaps_note

    if (gaps := human_gaps_note(dataset, human)) is not None:
        warnings.warn(gaps, UserWarning, stacklevel=2)
    r = make_router(router)
    prep = _replay_prepare(dataset, human, features, r)
    if target_quality is not None:
        return _replay_target(
            prep, router, r, setting, budget, seed, quality, target_quality, confidence
        )
    from quorum.simulate import make_problem

    problem, money = make_problem(prep, setting, budget, r)
    checks = _replay_checks(r, quality, confidence)
    if checks is None:
        return r.route(problem, prep.source, money, seed=seed)
    return checks.route(r, problem, prep.source, money, seed)[0]


def _replay_prepare(dataset: Dataset, human: str, features: str, r: Router) -> Any:
    """The dataset prepared for routing (``features``: "full" or "light")."""
    from quorum.simulate import prepare

    fs = None
    if features == "light":
        fs = _light_feature_set(dataset.items["text"].tolist())
    elif features != "full":
        raise ValueError(f"features must be 'full' or 'light', got {features!r}")
    if not r.supports(dataset.task.kind):
        raise UnsupportedTaskError(
            f"{r.name} needs label-based confidence: not for {dataset.task.kind.type.value}"
        )
    llms = {a.name: None for a in dataset.task.llms}
    return prepare(dataset, annotators=llms, human=human, features=fs)


def _replay_target(
    prep: Any,
    router: str | Router,
    r: Router,
    setting: str,
    budget: float,
    seed: int,
    quality: Any,
    target_quality: float,
    confidence: float | None,
) -> RoutingResult:
    """:func:`replay` in target mode (its checks: ``quality``'s dict, else its own)."""
    from quorum.quality.target import TargetQuality
    from quorum.simulate import make_problem

    if quality is False:
        raise ValueError("a target quality needs the checks: drop quality=False")
    kw = dict(quality) if isinstance(quality, dict) else {}
    target = TargetQuality(target_quality, 0.9 if confidence is None else confidence)
    result, _ = target.run(
        lambda: make_router(router) if isinstance(router, str) else r,
        lambda share: make_problem(prep, setting, budget * share, r),
        prep.source,
        _checks(kw) if kw else None,
        seed,
    )
    return result


def _replay_dataset(
    answers: pd.DataFrame,
    prices: Mapping[str, float],
    human: str,
    items: pd.DataFrame | Mapping[str, str] | None,
    task_type: str,
    labels: Sequence[str] | None,
    language: str,
) -> Dataset:
    """:func:`replay`'s inputs checked and made a :class:`Dataset` (one clear error each).

    Answers are read by the datasets' one rule (docs/datasets.md, "Answers"): a missing or
    blank output is no answer, and labels are compared in their canonical form
    (:func:`~quorum.data.schema.label_str`: ``1.0`` is ``"1"``, ``" pos "`` is ``"pos"``),
    the label set found included."""
    ttype = _task_type(task_type)
    ans = _long_frame(answers)
    recorded = set(ans["annotator"])
    missing = sorted((recorded | {human}) - set(prices))
    if missing:
        raise DataValidationError(f"prices: no price for annotator(s) {missing}")
    for a in sorted(recorded | {human}):
        p = prices[a]
        ok = isinstance(p, numbers.Real) and not isinstance(p, bool | np.bool_)
        if not ok or not math.isfinite(p) or not 0 <= p <= MAX_PRICE:
            raise DataValidationError(
                f"prices: annotator {a!r} has price {p!r}; a price is a finite number from "
                f"0 to {MAX_PRICE:g}"
            )
    if human == GOLD_HUMAN:
        if not isinstance(items, pd.DataFrame) or "gold" not in items.columns:
            raise DataValidationError(
                "human='gold' takes the human's answers from a `gold` column of `items`; "
                "pass items with item_id, text, gold, or name a recorded annotator"
            )
    elif human not in recorded:
        raise DataValidationError(
            f"human {human!r} has no recorded answers; annotators: {sorted(recorded)}"
        )
    item_frame = _items_frame(items, ans)  # an item whose answers are all blank stays
    out = ans["output"]  # missing and blank outputs: no answer (a label set is kept whole)
    blank = out.isna() | out.map(lambda v: isinstance(v, str) and not v.strip()).astype(bool)
    ans = ans.loc[~blank].reset_index(drop=True)
    if ttype.has_labels:
        if labels is None:
            labels = sorted({label_str(x) for x in ans["output"]})
        else:
            labels = [label_str(x) for x in labels]
        if not labels:
            raise DataValidationError(
                "answers: no usable answer (every output is missing or blank), so there is "
                "no label set; pass labels=[...] or answers with outputs"
            )
    specs = [
        AnnotatorSpec(name=a, kind="human" if a == human else "llm", price=float(prices[a]))
        for a in sorted(recorded)
    ]
    try:
        task = TaskSpec(
            name="replay",
            type=ttype,
            labels=list(labels) if labels is not None else None,
            annotators=specs,
            human=human,
            human_price=float(prices[human]),
            language=language,
        )
    except ValidationError as exc:
        raise DataValidationError(f"replay task: {validation_summary(exc)}") from None
    return Dataset(task, item_frame, ans, source="quorum.replay")


def _task_type(task_type: str) -> TaskType:
    """``task_type`` as a :class:`TaskType` (a clear error naming the kinds)."""
    try:
        return TaskType(task_type)
    except ValueError:
        kinds = [t.value for t in TaskType]
        raise ValueError(f"task_type must be one of {kinds}, got {task_type!r}") from None


def _replay_checks(router: Router, quality: Any, confidence: float | None) -> Any | None:
    """The checks of a plain replay: ``quality`` None takes the router's default (on for
    QUORUM, :func:`~quorum.quality.checks.checks_by_default`)."""
    from quorum.quality.checks import checks_by_default

    if quality is None:  # --confidence alone asks for the checks
        quality = checks_by_default(getattr(router, "name", "")) or confidence is not None
    if quality is False:
        if confidence is not None:
            raise ValueError("confidence sets the checks' interval: drop quality=False")
        return None
    if quality is not True and not isinstance(quality, dict):
        raise ValueError(f"quality must be None, True, False or a dict, got {quality!r}")
    kw = dict(quality) if isinstance(quality, dict) else {}
    if confidence is not None:
        kw["confidence"] = confidence
    return _checks(kw)


def _checks(kw: dict[str, Any]) -> Any:
    """:class:`~quorum.quality.checks.QualityChecks` from a dict of its parameters."""
    from quorum.quality.checks import PARAM_PREFIX, QualityChecks

    checks, _ = QualityChecks.split_params({PARAM_PREFIX + k: v for k, v in kw.items()})
    return checks if checks is not None else QualityChecks()


def annotate(project: Any, *, wait: float = 0.0, quiet: bool = True) -> Any:
    """Run (or resume) a live project and return its run summary.

    ``project`` is a project file (TOML/YAML), or a
    :class:`quorum.live.project.config.ProjectConfig` built in Python (``root`` sets the folder
    its relative paths start from). See docs/live.md.
    """
    from quorum.live.project.config import ProjectConfig, load_project
    from quorum.live.run.runner import annotate as run

    cfg = project if isinstance(project, ProjectConfig) else load_project(Path(project))
    return run(cfg, wait=wait, quiet=quiet)


def labels(project: Any, *, format: Literal["pandas", "hf"] = "pandas") -> Any:
    """A live project's labels with their provenance, from its ledger.

    ``format="pandas"``: a DataFrame, one row per item, the columns of ``quorum export``
    (docs/live.md) and ``source`` (human vote, agreeing LLMs, one LLM, label model, no
    label). ``format="hf"``: the same as a ``datasets.Dataset`` (``label`` a ``ClassLabel``
    for label tasks), as ``quorum export -f hf`` writes it.
    """
    from quorum.live.outputs.hf import hf_dataset, labels_frame

    cfg = _project(project)
    if format == "pandas":
        return labels_frame(cfg)
    if format == "hf":
        return hf_dataset(cfg)
    raise ValueError(f"format must be 'pandas' or 'hf', got {format!r}")


def report(project: Any, path: str | Path | None = None) -> Path:
    """Write a live project's HTML report (``quorum report PROJECT``); returns its path."""
    from quorum.live.outputs.report import write_report

    return write_report(_project(project), path)


def _project(project: Any) -> Any:
    from quorum.live.project.config import ProjectConfig, load_project

    return project if isinstance(project, ProjectConfig) else load_project(Path(project))


# ---------------------------------------------------------------------------- helpers
def _long_frame(answers: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(answers, pd.DataFrame):
        raise TypeError(f"answers must be a pandas DataFrame, got {type(answers).__name__}")
    cols = set(answers.columns)
    # crowd-kit's names stand for ours only where ours are absent: a frame of ours may have
    # a `task` or `label` column of its own (e.g. the task's name), kept as metadata
    theirs = {k: v for k, v in _CROWDKIT.items() if k in cols and v not in cols}
    ans = answers.rename(columns=theirs)
    need = [c for c in ("item_id", "annotator", "output") if c not in ans.columns]
    if need:
        raise DataValidationError(
            f"answers: missing column(s) {need} (item_id, annotator, output; or crowd-kit's "
            f"task, worker, label); found {list(answers.columns)}"
        )
    ans = ans.copy()
    for col in ("item_id", "annotator"):
        gone = ans[col].isna()
        if gone.any():
            raise DataValidationError(
                f"answers: {int(gone.sum())} row(s) without {col}, e.g. row(s) "
                f"{list(ans.index[gone][:5])}"
            )
        ans[col] = ans[col].astype(str)  # crowd-kit's integer tasks and workers: strings
    return ans


def _items_frame(items: Any, ans: pd.DataFrame) -> pd.DataFrame:
    ids = pd.unique(ans["item_id"].astype(str))
    if items is None:
        return pd.DataFrame({"item_id": ids, "text": ids})
    if isinstance(items, Mapping):
        return pd.DataFrame({"item_id": list(map(str, items)), "text": list(items.values())})
    if isinstance(items, pd.DataFrame):
        return items.copy()
    raise TypeError("items must be a DataFrame (item_id, text), a mapping id -> text, or None")


def _light_feature_set(texts: list[str]) -> SimpleNamespace:
    """What :func:`~quorum.simulate.prepare` reads of a feature set."""
    from quorum.features.light import LIGHT_FEATURE_NAMES, light_features

    phi, emb = light_features(texts)
    return SimpleNamespace(phi=phi, embeddings=np.asarray(emb), names=list(LIGHT_FEATURE_NAMES))
