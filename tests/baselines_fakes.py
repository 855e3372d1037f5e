"""Tiny hand-made datasets and problems for the baseline tests (synthetic labels)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from quorum.data.schema import AnnotatorSpec, Dataset, TaskSpec, TaskType
from quorum.routing.core.base import RoutingProblem
from quorum.routing.core.budget import Budget
from quorum.routing.core.replay import RecordedSource


def make_dataset(
    gold: list[str],
    answers: dict[str, list[str | None]],
    prices: dict[str, float],
    *,
    labels: list[str] | None = None,
    confidence: dict[str, list[float]] | None = None,
    human_price: float = 0.10,
    summarization: bool = False,
    name: str = "toy",
) -> Dataset:
    """``answers[a][i]`` is what annotator ``a`` says on item ``i`` (None: no answer)."""
    n = len(gold)
    ids = [f"i{j:03d}" for j in range(n)]
    if summarization:
        items = pd.DataFrame(
            {"item_id": ids, "text": [f"doc {j}" for j in range(n)], "reference": gold}
        )
        task = TaskSpec(
            name=name,
            type=TaskType.summarization,
            annotators=[AnnotatorSpec(name=a, price=p) for a, p in prices.items()],
            human_price=human_price,
        )
    else:
        labs = labels or sorted(set(gold) | {y for v in answers.values() for y in v if y})
        items = pd.DataFrame(
            {"item_id": ids, "text": [f"text {j}" for j in range(n)], "gold": gold}
        )
        task = TaskSpec(
            name=name,
            type=TaskType.classification,
            labels=labs,
            annotators=[AnnotatorSpec(name=a, price=p) for a, p in prices.items()],
            human_price=human_price,
        )
    rows = []
    for a, outs in answers.items():
        for j, y in enumerate(outs):
            if y is None:
                continue
            row = {"item_id": ids[j], "annotator": a, "output": y}
            if confidence is not None:
                row["confidence"] = confidence.get(a, [np.nan] * n)[j]
            rows.append(row)
    ann = pd.DataFrame(rows)
    return Dataset(task, items, ann)


def make_problem(
    ds: Dataset,
    setting: str = "auditor",
    human_budget: int | None = None,
    embeddings: np.ndarray | None = None,
    phi: np.ndarray | None = None,
    seed: int = 0,
) -> RoutingProblem:
    n = ds.n_items
    rng = np.random.default_rng(seed)
    if phi is None:
        phi = rng.random((n, 4))
    if embeddings is None:
        e = rng.normal(size=(n, 8))
        embeddings = e / np.linalg.norm(e, axis=1, keepdims=True)
    return RoutingProblem(
        task=ds.task,
        item_ids=ds.items["item_id"].to_numpy(),
        phi=phi,
        embeddings=embeddings,
        setting=setting,  # type: ignore[arg-type]
        human_budget=human_budget,
    )


def auditor_budget(problem: RoutingProblem, router, source, human_budget: int) -> Budget:
    """The simulator's auditor limit: B * c_H + T * c_min + the method's extra cost."""
    c_h = problem.human.price
    c_min = min(a.price for a in problem.llms)
    extra = router.extra_cost_estimate(problem, source)
    return Budget(
        limit=human_budget * c_h + problem.n_items * c_min + extra, human_limit=human_budget
    )


def toy_embed(texts: list[str]) -> np.ndarray:
    """Deterministic bag-of-characters embedding for summaries (unit norm)."""
    out = np.zeros((len(texts), 32))
    for i, t in enumerate(texts):
        for ch in t:
            out[i, ord(ch) % 32] += 1.0
    n = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(n > 0, n, 1.0)


def source_of(ds: Dataset, summaries: bool = False) -> RecordedSource:
    """Replay source; ``summaries`` adds the toy embedder (else bag-of-words is used)."""
    return RecordedSource(ds, embed_fn=toy_embed if summaries else None)
