"""The common router interface: a problem, a source of annotations, and a result.

Every routing method (QUORUM and the baselines) is a small class with named
hyper-parameters in ``__init__`` and one verb, ``route(problem, source, budget)``.
A *source* answers "what does annotator ``a`` say about item ``t``?" and reports what
that cost. In replay the source is recorded annotations; live, it calls LLMs and asks
humans. Routers never see gold labels except through the human arm of the source.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from quorum.data.schema import AnnotatorSpec, TaskSpec
from quorum.routing.core.budget import Budget
from quorum.tasks.base import TaskKind

Setting = Literal["dollars", "auditor"]


def item_texts(texts: Any) -> list[str]:
    """Each item's text as a string (missing: "").

    >>> item_texts(["a", None, float("nan"), 3])
    ['a', '', '', '3']
    """
    return ["" if t is None or t != t else str(t) for t in texts]


Status = Literal["ok", "unparseable", "failed", "pending"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one call to an annotator returned.

    ``output`` is a label (str) or a text (summaries); ``None`` unless status is "ok".
    ``cost`` is what the call really cost (paid even when the answer is unusable).
    """

    item_id: str
    annotator: str
    output: str | None
    cost: float
    status: Status = "ok"
    confidence: float | None = None
    raw: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.output is not None


@runtime_checkable
class AnnotationSource(Protocol):
    """Where annotations come from (recorded, or live LLM calls and humans)."""

    def price(self, annotator: str) -> float:
        """Upper bound of the cost of one annotation call (used to reserve budget)."""
        ...

    def annotate(self, item_id: str, annotator: str) -> Outcome:
        """Ask ``annotator`` to label ``item_id``. The caller has reserved ``price``."""
        ...

    def annotate_many(self, requests: list[tuple[str, str]]) -> list[Outcome]:
        """Answer independent ``(item_id, annotator)`` requests, possibly concurrently.

        Results come back in request order. Replay loops; live sources run them in parallel.
        """
        ...

    def confidence(self, item_id: str, annotator: str) -> Outcome:
        """Ask ``annotator`` for a verbalised confidence (0..1) in its own answer.

        ``Outcome.confidence`` holds the value, ``Outcome.cost`` what the call cost.
        Sources without confidences return status "failed" at zero cost.
        """
        ...

    def confidence_price(self, annotator: str) -> float: ...

    def embed_outputs(self, texts: list[str]) -> np.ndarray:
        """Unit-norm embeddings of annotation texts (summaries); used for agreement."""
        ...


@dataclass
class RoutingProblem:
    """Everything a router may know before it starts.

    ``phi`` are the normalised item features phi(d_t) (T x m), ``embeddings`` the
    unit-norm item embeddings (T x d), both aligned with ``item_ids``.
    """

    task: TaskSpec
    item_ids: np.ndarray
    phi: np.ndarray
    embeddings: np.ndarray | None = None
    setting: Setting = "dollars"
    #: auditor setting: number of human labels allowed (B in Algorithm 2)
    human_budget: int | None = None
    #: names of the columns of ``phi`` (default ``phi0``, ``phi1``, ...)
    feature_names: list[str] | None = None
    #: the same features before normalisation (T x m, NaN where undefined), for routers
    #: that scale them their own way (``quorum-paper``); None when not computed
    raw_features: np.ndarray | None = None
    #: characters of each item's text (for a summary, its source), None when unknown; the
    #: summary audit's ``longest`` order reads it
    text_lengths: np.ndarray | None = None
    #: each item's text (:func:`item_texts`; for a summary, its source), None when unknown;
    #: the summary audit's ``lead`` order reads it
    texts: list[str] | None = None

    def __post_init__(self) -> None:
        self.item_ids = np.asarray(self.item_ids, dtype=object).astype(str)
        self.phi = np.asarray(self.phi, dtype=np.float64)
        if self.phi.ndim != 2 or len(self.phi) != len(self.item_ids):
            raise ValueError(
                f"phi must be (T, m) with T = {len(self.item_ids)}, got {self.phi.shape}"
            )
        if self.embeddings is not None and len(self.embeddings) != len(self.item_ids):
            raise ValueError("embeddings must have one row per item")
        if self.texts is not None and len(self.texts) != len(self.item_ids):
            raise ValueError("texts must have one text per item")
        if self.raw_features is not None:
            self.raw_features = np.asarray(self.raw_features, dtype=np.float64)
            if self.raw_features.shape != self.phi.shape:
                raise ValueError(
                    f"raw_features must have the shape of phi {self.phi.shape}, "
                    f"got {self.raw_features.shape}"
                )
        if self.feature_names is None:
            self.feature_names = [f"phi{i}" for i in range(self.phi.shape[1])]
        elif len(self.feature_names) != self.phi.shape[1]:
            raise ValueError(
                f"{len(self.feature_names)} feature names for {self.phi.shape[1]} columns of phi"
            )

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def llms(self) -> list[AnnotatorSpec]:
        return self.task.llms

    @property
    def human(self) -> AnnotatorSpec:
        return self.task.human_spec


@dataclass
class RoutingResult:
    """Final outputs, every annotation paid for, and the decision trace."""

    method: str
    setting: str
    seed: int
    labels: pd.DataFrame  # item_id, output, n_annotations, agreement, human, annotators
    annotations: pd.DataFrame  # item_id, annotator, output, status, cost, phase, step
    budget_limit: float
    cost: float
    human_labels: int
    llm_calls: int
    #: cost of calls made only to estimate confidence/uncertainty (baselines)
    confidence_cost: float = 0.0
    confidence_calls: int = 0
    trace: pd.DataFrame | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def cost_without_confidence(self) -> float:
        return self.cost - self.confidence_cost


class Router(ABC):
    """Base class: hyper-parameters are ``__init__`` arguments; ``route`` does the work."""

    #: short name used by ``quorum simulate --method``
    name: str = "router"
    #: whether it runs on kinds whose outputs are not labels from a fixed set (summaries:
    #: label-based confidence does not exist there)
    supports_summarization: bool = True
    # traits the bench and the docs ask of a method (class attributes, never name lists)
    #: reads the item features phi(d_t) / embeddings (their extraction time counts: ET)
    uses_item_features: bool = False
    #: pays for calls made only to estimate confidence or uncertainty (CT)
    pays_for_confidence: bool = False
    #: a QUORUM row (ours or the paper preset): compared with the baselines, not each other
    is_quorum: bool = False

    @classmethod
    def supports(cls, kind: TaskKind) -> bool:
        """Whether the router can run on a task of ``kind``."""
        return kind.discrete or cls.supports_summarization

    @abstractmethod
    def route(
        self, problem: RoutingProblem, source: AnnotationSource, budget: Budget, seed: int = 0
    ) -> RoutingResult: ...

    def extra_cost_estimate(self, problem: RoutingProblem, source: AnnotationSource) -> float:
        """Money the method's uncertainty estimation needs on top of its labels (auditor).

        The simulator adds this to the auditor money limit ``B * c_H + T * c_min`` so that
        methods that pay for confidence calls or extra answers can afford them. Methods
        that need no paid uncertainty signal (QUORUM, Random, ARAIDA, SANT) return 0.
        """
        return 0.0

    def get_params(self) -> dict[str, Any]:
        import inspect

        sig = inspect.signature(type(self).__init__)
        return {k: getattr(self, k) for k in sig.parameters if k != "self" and hasattr(self, k)}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
