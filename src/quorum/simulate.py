"""Replay simulations: run a routing method on recorded annotations and score it.

Budget fractions mean what the paper means:
- auditor: ``B = round(fraction * T)`` human labels; the money limit is the cost of the
  paper's allocation, ``B * c_H + T * c_min``, plus what the method says its uncertainty
  estimation needs (``Router.extra_cost_estimate``), which is reported apart;
- dollars: the money limit is ``fraction * T * c_H``, a share of labelling everything by
  humans; a fraction above 1.0 gives more money than that (auditor fractions stop at 1.0).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from quorum.data.schema import GOLD_HUMAN, AnnotatorSpec, Dataset, TaskSpec
from quorum.errors import DataValidationError, UnsupportedTaskError
from quorum.features.summary_embeddings import SummaryEmbeddings
from quorum.methods import make_router
from quorum.metrics import machine_cumulative_accuracy
from quorum.routing.core.base import Router, RoutingProblem, RoutingResult, item_texts
from quorum.routing.core.budget import MAX_PRICE, Budget, budget_for_setting
from quorum.routing.core.replay import RecordedSource
from quorum.tasks.base import TaskKind


def parse_annotators(spec: str | None) -> dict[str, float | None] | None:
    """'a=0.05,b=0.01,c' -> {'a': 0.05, 'b': 0.01, 'c': None} (None: keep the default price).

    A price is a finite number from 0 to :data:`~quorum.routing.core.budget.MAX_PRICE`,
    and a name comes once; anything else is a one-line ValueError.

    >>> parse_annotators("a=0.05, b")
    {'a': 0.05, 'b': None}
    """
    if spec is None or not spec.strip():
        return None
    out: dict[str, float | None] = {}
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        name, _, price = part.partition("=")
        name = name.strip()
        if name in out:
            raise ValueError(f"--annotators names {name!r} twice")
        try:
            value = float(price) if price.strip() else None
        except ValueError as exc:
            raise ValueError(f"bad price in --annotators: {part!r}") from exc
        if value is not None and not (math.isfinite(value) and 0 <= value <= MAX_PRICE):
            raise ValueError(
                f"bad price in --annotators: {part!r}; a price is a finite number from 0 to "
                f"{MAX_PRICE:g}"
            )
        out[name] = value
    return out


def select_task(
    dataset: Dataset,
    annotators: dict[str, float | None] | None = None,
    human: str = GOLD_HUMAN,
) -> TaskSpec:
    """The task restricted to the chosen LLM panel (default: dataset.meta['panel'])."""
    task = dataset.task
    known = {a.name: a for a in task.annotators}
    if annotators is None:
        panel = dataset.meta.get("panel") or [a.name for a in task.llms]
        annotators = {n: None for n in panel}
    chosen: list[AnnotatorSpec] = []
    for name, price in annotators.items():
        if name not in known:
            raise DataValidationError(
                f"annotator {name!r} is not in dataset {task.name!r}; known: {sorted(known)}"
            )
        spec = known[name]
        if price is not None:
            spec = spec.model_copy(update={"price": price})
        chosen.append(spec)
    if not any(a.kind != "human" and a.name != human for a in chosen):
        raise DataValidationError(
            f"dataset {task.name!r} has no machine annotator to route to (panel "
            f"{list(annotators)}, annotators {sorted(known)}): a simulation replays the "
            "recorded answers of at least one LLM or model"
        )
    if human != GOLD_HUMAN:
        if human not in known:
            raise DataValidationError(
                f"human {human!r} is not an annotator of {task.name!r}; known: {sorted(known)}"
            )
        if human not in annotators:
            chosen.append(known[human].model_copy(update={"kind": "human"}))
    elif not dataset.has_gold and task.kind.discrete:
        raise DataValidationError(f"dataset {task.name!r} has no gold labels for --human gold")
    return task.with_annotators(chosen, human=human)


@dataclass
class Prepared:
    """A dataset, its chosen task, features and the replay source, ready to route."""

    dataset: Dataset
    task: TaskSpec
    phi: np.ndarray
    embeddings: np.ndarray | None
    source: RecordedSource
    feature_seconds: float = 0.0
    feature_names: list[str] | None = None
    #: features before normalisation (FeatureSet.raw), when the feature set has them
    raw_features: np.ndarray | None = None


def prepare(
    dataset: Dataset | str,
    annotators: dict[str, float | None] | None = None,
    human: str = GOLD_HUMAN,
    features: Any | None = None,
) -> Prepared:
    if isinstance(dataset, str):
        from quorum.data.loaders import load_dataset

        dataset = load_dataset(dataset)
    task = select_task(dataset, annotators, human)
    keep = {a.name for a in task.annotators}
    ann = dataset.annotations.loc[dataset.annotations["annotator"].isin(keep)]
    ds = Dataset(task, dataset.items, ann, dataset.source, dict(dataset.meta))
    t0 = time.perf_counter()
    if features is None:
        from quorum.features.pipeline import extract_dataset_features

        features = extract_dataset_features(ds)
    secs = time.perf_counter() - t0
    embed_fn = SummaryEmbeddings(ds) if task.kind.embeds_outputs else task.kind.output_vectors()
    src = RecordedSource(ds, embed_fn=embed_fn)
    names = list(getattr(features, "names", None) or []) or None
    raw = getattr(features, "raw", None)
    return Prepared(ds, task, features.phi, features.embeddings, src, secs, names, raw)


#: the largest budget fraction: a million times the all-human cost (issue 37: 1e300)
MAX_FRACTION = 1e6


def human_gaps(dataset: Dataset, human: str = GOLD_HUMAN) -> list[str]:
    """The items on which ``human`` (``"gold"``: the reference column; else a recorded
    annotator) has no answer. A human label bought there in a replay is paid and brings
    no label: replay cannot tell what the person would have said (live, an unanswered
    task is withdrawn and not paid). :func:`human_gaps_note` says so in one line.

    >>> import pandas as pd
    >>> from quorum.data.schema import AnnotatorSpec, TaskSpec
    >>> task = TaskSpec(name="t", type="classification", labels=["a", "b"],
    ...                 annotators=[AnnotatorSpec(name="m", price=0.01)])
    >>> items = pd.DataFrame({"item_id": ["1", "2"], "text": ["x", "y"], "gold": ["a", None]})
    >>> ans = pd.DataFrame({"item_id": ["1", "2"], "annotator": ["m", "m"], "output": ["a", "b"]})
    >>> human_gaps(Dataset(task, items, ans))
    ['2']
    """
    ids = dataset.items["item_id"].astype(str)
    if human == GOLD_HUMAN:
        col = dataset.task.kind.reference_column
        if col not in dataset.items.columns:
            return list(ids)
        ref = dataset.items[col]
        missing = ref.isna() | ref.map(lambda v: isinstance(v, str) and not v.strip())
        return list(ids[missing.astype(bool).to_numpy()])
    ann = dataset.annotations
    answered = set(ann.loc[ann["annotator"] == human, "item_id"].astype(str))
    return [i for i in ids if i not in answered]


def human_gaps_note(dataset: Dataset, human: str = GOLD_HUMAN) -> str | None:
    """One line where ``human`` has no answer on some items (:func:`human_gaps`), else
    None."""
    gaps = human_gaps(dataset, human)
    if not gaps:
        return None
    return (
        f"human {human!r} has no answer on {len(gaps)} of {dataset.n_items} items (e.g. "
        f"{gaps[:3]}): a human label bought there in a replay is paid and brings no label, "
        "so keep only the items the human answered for a faithful replay"
    )


def check_fraction(setting: str, fraction: float) -> None:
    """A budget fraction the setting can mean.

    dollars: any share >= 0 of the all-human cost, above 1.0 included (1.2 = 20 % more
    money than labelling every item by humans); auditor: the share of items a human may
    label, so at most 1.0 (every item), as B = round(fraction * T) human labels.
    """
    if not math.isfinite(fraction) or fraction < 0.0:
        raise ValueError(f"budget fraction must be a number >= 0, got {fraction}")
    if fraction > MAX_FRACTION:  # beyond it the money overflows the budget's units
        raise ValueError(
            f"budget fraction {fraction:g} is more than {MAX_FRACTION:g} times the cost of "
            "labelling every item by humans; give a share such as 0.3"
        )
    if setting == "auditor" and fraction > 1.0:
        raise ValueError(
            f"auditor budget {fraction} is the share of items a human may label (at most 1.0, "
            "every item); for more money than labelling everything by humans use the "
            "dollars setting, e.g. --setting dollars --budget 1.2"
        )


def text_lengths(items: pd.DataFrame) -> np.ndarray | None:
    """Characters of each item's text (None without a text column)."""
    if "text" not in items:
        return None
    return items["text"].fillna("").astype(str).str.len().to_numpy(dtype=np.int64)


def make_problem(
    prep: Prepared, setting: str, fraction: float, router: Router | None = None
) -> tuple[RoutingProblem, Budget]:
    if setting not in ("dollars", "auditor"):
        raise ValueError("setting must be 'dollars' or 'auditor'")
    check_fraction(setting, fraction)
    task = prep.task
    T = prep.dataset.n_items
    c_h = task.human_spec.price
    problem = RoutingProblem(
        task=task,
        item_ids=prep.dataset.items["item_id"].to_numpy(),
        phi=prep.phi,
        embeddings=prep.embeddings,
        setting=setting,  # type: ignore[arg-type]
        feature_names=prep.feature_names,
        raw_features=prep.raw_features,
        text_lengths=text_lengths(prep.dataset.items),
        texts=item_texts(prep.dataset.items["text"]) if "text" in prep.dataset.items else None,
    )
    c_min = min((a.price for a in task.llms), default=0.0)
    extra = 0.0
    if setting == "auditor":
        problem.human_budget = round(fraction * T)
        extra = router.extra_cost_estimate(problem, prep.source) if router is not None else 0.0
    budget, _ = budget_for_setting(setting, fraction, T, c_h, c_min, extra)
    return problem, budget


def score(prep: Prepared, result: RoutingResult) -> dict[str, Any]:
    """Quality metrics of a result against the dataset's gold / references."""
    items = prep.dataset.items.set_index("item_id")
    out = result.labels.set_index("item_id")["output"]
    row: dict[str, Any] = {}
    kind = prep.task.kind
    refs = items[kind.reference_column]
    row[kind.metric_name] = kind.metric(out, refs, prep.task.language)
    row["metric"], row["score"] = kind.metric_name, row[kind.metric_name]  # any kind's
    row.update(kind.extra_metrics(out, refs))
    if not kind.discrete:  # MCA counts label errors
        row["mca"] = None
    else:
        gold = refs
        ref = prep.task.mca_reference
        human_items = result.labels.loc[result.labels["human"], "item_id"]
        if ref is not None:
            pred = prep.dataset.predictions(ref)
            pred.index = prep.dataset.items["item_id"]
            mca = machine_cumulative_accuracy(pd.Index(human_items), pred, gold)
            row["mca"] = None if math.isnan(mca) else mca
        else:
            row["mca"] = None
        row["mca_reference"] = ref
    return row


def check_supported(method: str, kind: TaskKind, name: str = "") -> None:
    """Refuse a method that cannot run on this kind of task, before any preparation."""
    from quorum.methods import get_router_class

    if not get_router_class(method).supports(kind):
        raise UnsupportedTaskError(
            f"{method} needs label-based confidence and cannot run on {kind.type.value} ({name})"
        )


def simulate_once(
    prep: Prepared,
    method: str,
    setting: str,
    fraction: float,
    seed: int,
    params: dict[str, Any] | None = None,
    target: Any | None = None,
) -> tuple[dict[str, Any], RoutingResult]:
    """One run and its row.

    Random quality checks (:class:`quorum.quality.checks.QualityChecks`): on by default
    for QUORUM (``method="quorum"``), off for the other methods (the paper's baselines run
    as the paper ran them; docs/quality.md); ``params`` ``quality=False`` turns them off,
    ``quality=True`` or ``quality_*`` keys on. ``target`` (a
    :class:`quorum.quality.target.TargetQuality`) climbs a budget ladder up to ``fraction``
    and stops once the target is reached (its checks: the ``quality_*`` keys, else the
    target mode's own)."""
    checks, params = run_checks(method, params, target)
    router = make_router(method, **params)
    if not router.supports(prep.task.kind):
        raise UnsupportedTaskError(
            f"{method} needs label-based confidence and cannot run on "
            f"{prep.task.kind.type.value} ({prep.task.name})"
        )
    problem, budget = make_problem(prep, setting, fraction, router)
    load = getattr(prep.source.embed_fn, "load", None)
    if callable(load):  # summary embeddings: built (or read from disk) outside the timer
        load()
    t0 = time.perf_counter()
    est, outcome = None, None
    if target is not None:
        result, outcome = target.run(
            lambda: make_router(method, **params),
            lambda share: make_problem(prep, setting, fraction * share, router),
            prep.source,
            checks,
            seed,
        )
        est = outcome.estimate
    elif checks is not None:
        result, est = checks.route(router, problem, prep.source, budget, seed)
    else:
        result = router.route(problem, prep.source, budget, seed=seed)
    secs = time.perf_counter() - t0
    if result.cost > budget.limit + 1e-9:  # pragma: no cover - guarded by Budget
        raise AssertionError(f"{method} spent {result.cost} over its limit {budget.limit}")
    row = run_row(prep, method, setting, fraction, seed, problem, budget, result, secs)
    row.update(quality_fields(est, outcome))
    for key in ("confidence_source", "substitute", "note", "accounting", "unpaid_cost"):
        if key in result.info:
            row[key] = result.info[key]
    return row, result


def run_checks(
    method: str, params: dict[str, Any] | None, target: Any | None = None
) -> tuple[Any | None, dict[str, Any]]:
    """A run's :class:`~quorum.quality.checks.QualityChecks` (None: none) and the router's
    parameters. In target mode the checks are the ``quality_*`` keys' or, without any,
    the target mode's own (None here)."""
    from quorum.quality.checks import QualityChecks, checks_by_default

    if target is None:
        return QualityChecks.split_params(params, default=checks_by_default(method))
    on, kw, rest = QualityChecks.read_params(params)
    if on is False:
        raise ValueError("a target quality needs the checks: drop quality = false")
    return (QualityChecks(**kw) if kw else None), rest


def run_row(
    prep: Prepared,
    method: str,
    setting: str,
    fraction: float,
    seed: int,
    problem: RoutingProblem,
    budget: Budget,
    result: RoutingResult,
    seconds: float,
) -> dict[str, Any]:
    """A run's row: what ran, its quality against gold, its spend and its calls."""
    row: dict[str, Any] = {
        "dataset": prep.task.name,
        "method": method,
        "setting": setting,
        "budget": fraction,
        "seed": seed,
        "n_items": prep.dataset.n_items,
    }
    row.update(score(prep, result))
    row.update(
        {
            "cost": round(result.cost, 6),
            "cost_without_confidence": round(result.cost_without_confidence, 6),
            "confidence_cost": round(result.confidence_cost, 6),
            "budget_limit": round(budget.limit, 6),
            "human_labels": result.human_labels,
            "human_budget": problem.human_budget,
            "llm_calls": result.llm_calls,
            "confidence_calls": result.confidence_calls,
            "annotators": [a.name for a in prep.task.llms],
            "human": prep.task.human,
            "routing_seconds": round(seconds, 4),
        }
    )
    return row


def quality_fields(est: Any | None, outcome: Any | None = None) -> dict[str, Any]:
    """``quality_estimate``, ``quality_low``, ``quality_high`` (None without checks), the
    checks' numbers, and the target mode's outcome when there is one."""
    row: dict[str, Any] = {"quality_estimate": None, "quality_low": None, "quality_high": None}
    if est is not None:
        row.update(est.row())
    if outcome is not None:
        row.update(outcome.row())
    return row


def run_simulation(
    dataset: Dataset | str,
    method: str = "quorum",
    setting: str = "dollars",
    budget: float = 0.3,
    seeds: int | list[int] = 10,
    annotators: dict[str, float | None] | None = None,
    human: str = GOLD_HUMAN,
    params: dict[str, Any] | None = None,
    prepared: Prepared | None = None,
) -> list[dict[str, Any]]:
    """One result row per seed (see ``simulate_once``)."""
    prep = prepared
    if prep is None:
        if isinstance(dataset, str):
            from quorum.data.loaders import load_dataset

            dataset = load_dataset(dataset)
        check_supported(method, dataset.task.kind, dataset.name)
        prep = prepare(dataset, annotators, human)
    seed_list = list(range(seeds)) if isinstance(seeds, int) else list(seeds)
    return [simulate_once(prep, method, setting, budget, s, params)[0] for s in seed_list]
