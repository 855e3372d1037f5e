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

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import numpy as np
import pandas as pd

from quorum.data.schema import GOLD_HUMAN, AnnotatorSpec, Dataset, TaskSpec, TaskType
from quorum.errors import DataValidationError, UnsupportedTaskError
from quorum.routing.base import Router, RoutingResult

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
    quality: bool | dict[str, Any] = False,
    target_quality: float | None = None,
    confidence: float | None = None,
) -> RoutingResult:
    """Route recorded answers under a budget, as if the annotators were called.

    ``answers`` is one long frame with a row per recorded answer: ``item_id, annotator,
    output`` (or crowd-kit's ``task, worker, label``). ``human`` names the annotator whose
    answers a paid human label returns; ``prices`` gives every annotator's price per
    answer (the human's included). ``items`` holds each item's text (a frame with
    ``item_id, text`` or a mapping id -> text); without it the item ids are the texts.
    ``budget`` is a fraction as in the paper: dollars, a share of labelling every item by
    humans; auditor, a share of the items that may get a human label.
    ``features="full"`` computes the paper's phi(d_t) (spaCy, MiniLM, kNN; cached on
    disk); ``"light"`` uses text statistics only (fast, no model).
    ``quality=True`` (or a dict of :class:`~quorum.quality.checks.QualityChecks`
    parameters) buys random human checks out of the budget and estimates the labels'
    quality: ``result.info["quality"]`` holds ``quality_estimate``, ``quality_low``,
    ``quality_high`` (a 95 % interval, or ``confidence``). ``target_quality`` spends in
    steps up to the budget and stops once the lower bound reaches it (``confidence``
    default 0.9); ``result.info["target"]`` says where it stopped (docs/quality.md).

    Examples
    --------
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
    >>> len(result.labels), result.cost <= 0.3 * 40 * 0.1
    (40, True)
    """
    ans = _long_frame(answers)
    recorded = set(ans["annotator"])
    missing = sorted((recorded | {human}) - set(prices))
    if missing:
        raise DataValidationError(f"prices: no price for annotator(s) {missing}")
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
    ttype = TaskType(task_type)
    if ttype.has_labels and labels is None:
        labels = sorted(ans["output"].dropna().astype(str).unique())
    item_frame = _items_frame(items, ans)
    specs = [
        AnnotatorSpec(name=a, kind="human" if a == human else "llm", price=float(prices[a]))
        for a in sorted(recorded)
    ]
    task = TaskSpec(
        name="replay",
        type=ttype,
        labels=list(labels) if labels is not None else None,
        annotators=specs,
        human=human,
        human_price=float(prices[human]),
        language=language,
    )
    dataset = Dataset(task, item_frame, ans, source="quorum.replay")
    from quorum.simulate import make_problem, prepare

    fs = None
    if features == "light":
        fs = _light_feature_set(dataset.items["text"].tolist())
    elif features != "full":
        raise ValueError(f"features must be 'full' or 'light', got {features!r}")
    r = make_router(router)
    if ttype is TaskType.summarization and not r.supports_summarization:
        raise UnsupportedTaskError(f"{r.name} needs label-based confidence: not for summaries")
    prep = prepare(dataset, annotators={a.name: None for a in task.llms}, human=human, features=fs)
    problem, money = make_problem(prep, setting, budget, r)
    if not quality and target_quality is None:
        return r.route(problem, prep.source, money, seed=seed)
    from quorum.quality.checks import QualityChecks
    from quorum.quality.target import TargetQuality

    kw = dict(quality) if isinstance(quality, dict) else {}
    if target_quality is not None:
        target = TargetQuality(target_quality, 0.9 if confidence is None else confidence)
        checks = QualityChecks(**kw) if kw else None
        result, _ = target.run(
            lambda: make_router(router) if isinstance(router, str) else r,
            lambda share: make_problem(prep, setting, budget * share, r),
            prep.source,
            checks,
            seed,
        )
        return result
    if confidence is not None:
        kw["confidence"] = confidence
    return QualityChecks(**kw).route(r, problem, prep.source, money, seed)[0]


def annotate(project: Any, *, wait: float = 0.0, quiet: bool = True) -> Any:
    """Run (or resume) a live project and return its run summary.

    ``project`` is a project file (TOML/YAML), or a
    :class:`quorum.live.config.ProjectConfig` built in Python (``root`` sets the folder
    its relative paths start from). See docs/live.md.
    """
    from quorum.live.config import ProjectConfig, load_project
    from quorum.live.runner import annotate as run

    cfg = project if isinstance(project, ProjectConfig) else load_project(Path(project))
    return run(cfg, wait=wait, quiet=quiet)


def labels(project: Any, *, format: Literal["pandas", "hf"] = "pandas") -> Any:
    """A live project's labels with their provenance, from its ledger.

    ``format="pandas"``: a DataFrame, one row per item, the columns of ``quorum export``
    (docs/live.md) and ``source`` (human vote, agreeing LLMs, one LLM, label model, no
    label). ``format="hf"``: the same as a ``datasets.Dataset`` (``label`` a ``ClassLabel``
    for label tasks), as ``quorum export -f hf`` writes it.
    """
    from quorum.live.export_hf import hf_dataset, labels_frame

    cfg = _project(project)
    if format == "pandas":
        return labels_frame(cfg)
    if format == "hf":
        return hf_dataset(cfg)
    raise ValueError(f"format must be 'pandas' or 'hf', got {format!r}")


def report(project: Any, path: str | Path | None = None) -> Path:
    """Write a live project's HTML report (``quorum report PROJECT``); returns its path."""
    from quorum.live.report import write_report

    return write_report(_project(project), path)


def _project(project: Any) -> Any:
    from quorum.live.config import ProjectConfig, load_project

    return project if isinstance(project, ProjectConfig) else load_project(Path(project))


# ---------------------------------------------------------------------------- helpers
def _long_frame(answers: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(answers, pd.DataFrame):
        raise TypeError(f"answers must be a pandas DataFrame, got {type(answers).__name__}")
    ans = answers.rename(columns={k: v for k, v in _CROWDKIT.items() if k in answers.columns})
    need = [c for c in ("item_id", "annotator", "output") if c not in ans.columns]
    if need:
        raise DataValidationError(
            f"answers: missing column(s) {need} (item_id, annotator, output; or crowd-kit's "
            f"task, worker, label); found {list(answers.columns)}"
        )
    return ans.copy()


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
