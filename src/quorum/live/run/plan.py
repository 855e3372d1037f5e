"""``quorum plan PROJECT``: what a project will cost and ask for, before anything is spent.

The project's own router runs once on its real items and features against a simulated
source: no request leaves the machine and no API key is needed. Each machine annotator
answers correctly with probability ``llm_accuracy`` (independently), humans always; prices
are the reservation prices a live run would use. The counts are an estimate under that
assumption; the maximum spend is the budget itself (the hard limit of a run).
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from quorum.data.schema import GOLD_HUMAN, AnnotatorSpec, TaskSpec
from quorum.live.machines.calls import Redactor
from quorum.live.project.config import ProjectConfig
from quorum.live.project.items import item_views, load_items
from quorum.routing.core.base import Outcome
from quorum.routing.core.budget import Budget, from_units, to_units
from quorum.tasks.registry import kind_of


@dataclass
class Plan:
    """The estimate: money, calls per annotator, human labels and hours."""

    project: str
    method: str
    n_items: int
    budget: float
    max_spend: float
    ask_everything: float
    expected_spend: float
    llm_calls: dict[str, int]
    confidence_calls: int
    human_tasks: int
    human_labels: int
    seconds_per_label: float
    llm_accuracy: float
    prices: dict[str, float] = field(default_factory=dict)
    #: per LLM: what is sent besides its prompt, and its first item's prompt as sent
    prompt_added: dict[str, str] = field(default_factory=dict)
    prompt_sent: dict[str, str] = field(default_factory=dict)
    #: the random quality checks the run will buy, in words (the run's first line), and
    #: whether the budget buys fewer than an interval of ``quality_width`` needs
    checks: str | None = None
    checks_short: bool = False

    @property
    def human_hours(self) -> float:
        return self.human_labels * self.seconds_per_label / 3600.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "human_hours": self.human_hours}

    def lines(self) -> list[str]:
        calls = ", ".join(f"{k} {v}" for k, v in self.llm_calls.items()) or "none"
        return [
            f"plan for {self.project}: method {self.method}, {self.n_items} items, "
            f"budget ${self.budget:.6f}",
            f"max spend: ${self.max_spend:.6f} (the budget is a hard limit; asking every "
            f"annotator about every item would cost ${self.ask_everything:.6f})",
            f"expected, if each LLM is right {self.llm_accuracy:.0%} of the time: "
            f"spend ${self.expected_spend:.6f}",
            f"LLM calls: {sum(self.llm_calls.values())} ({calls}); "
            f"confidence calls: {self.confidence_calls}",
            f"human labels: {self.human_labels} ({self.human_tasks} item(s)); human time: "
            f"{self.human_hours:.2f} h at {self.seconds_per_label:g} s per label",
            *([f"{self.checks} (besides the human labels above)"] if self.checks else []),
            "these counts assume every LLM answer can be read as a label: try a few items "
            "first (items.limit) and look at the unparsed column of `quorum status`",
            *[
                f"prompt of {name} (added to it: {self.prompt_added[name]}); the first item's "
                f"prompt as sent:\n{sent}"
                for name, sent in self.prompt_sent.items()
            ],
        ]


class PlanSource:
    """An :class:`~quorum.routing.core.base.AnnotationSource` that answers from a coin per call."""

    def __init__(
        self,
        task: TaskSpec,
        truth: dict[str, str],
        labels: list[str],
        conf_prices: dict[str, float],
        llm_accuracy: float,
        seed: int,
        accuracy: dict[str, float] | None = None,
        recorded: dict[tuple[str, str], str] | None = None,
    ) -> None:
        self.task = task
        self.truth = truth
        self.labels = labels
        self.prices = {a.name: a.price for a in task.annotators}
        self.prices[task.human] = task.human_spec.price
        self.conf_prices = conf_prices
        self.llm_accuracy = llm_accuracy
        #: per annotator: its accuracy (else ``llm_accuracy``), and recorded answers
        #: (item, annotator) -> output that replace its coin
        self.accuracy = dict(accuracy or {})
        self.recorded = dict(recorded or {})
        self.seed = seed
        #: labels each human task wants (``humans.labels_per_item``)
        self.labels_per_item = 1
        self.calls: Counter[str] = Counter()
        self.confidence_calls = 0

    def _rng(self, item_id: str, annotator: str) -> np.random.Generator:
        key = zlib.crc32(f"{item_id}\x00{annotator}".encode())
        return np.random.default_rng([self.seed, key])

    def price(self, annotator: str) -> float:
        return self.prices[annotator]

    def check_price(self, annotator: str) -> float:
        """What a live run holds for one random check (``LiveSource.check_price``): the
        task's labels and, with two or more, half a label for a third person."""
        price = self.price(annotator)
        k = self.labels_per_item
        return price + 0.5 * price / k if annotator == self.task.human and k >= 2 else price

    def confidence_price(self, annotator: str) -> float:
        return self.conf_prices.get(annotator, 0.0)

    def annotate(self, item_id: str, annotator: str) -> Outcome:
        self.calls[annotator] += 1
        truth = self.truth[item_id]
        out = truth
        if (item_id, annotator) in self.recorded:
            out = self.recorded[(item_id, annotator)]
        elif annotator != self.task.human:
            rng = self._rng(item_id, annotator)
            if rng.random() >= self.accuracy.get(annotator, self.llm_accuracy):
                out = self.task.kind.wrong_placeholder(truth, rng)
        return Outcome(item_id, annotator, out, self.price(annotator))

    def annotate_many(self, requests: list[tuple[str, str]]) -> list[Outcome]:
        return [self.annotate(i, a) for i, a in requests]

    def confidence(self, item_id: str, annotator: str) -> Outcome:
        self.confidence_calls += 1
        c = float(self._rng(item_id, annotator + "/conf").uniform(0.5, 1.0))
        return Outcome(item_id, annotator, f"{c:.6g}", self.confidence_price(annotator),
                       confidence=c)  # fmt: skip

    def embed_outputs(self, texts: list[str]) -> np.ndarray:
        vecs = np.zeros((len(texts), 64))
        for i, t in enumerate(texts):
            for w in t.lower().split():
                vecs[i, zlib.crc32(w.encode()) % 64] += 1.0
        norm = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.where(norm == 0, 1.0, norm)


@contextlib.contextmanager
def _placeholder_keys(cfg: ProjectConfig) -> Iterator[None]:
    """Planning makes no request: a missing API key variable must not stop it."""
    missing = [
        a.api_key_env for a in cfg.annotators if a.api_key_env and not os.environ.get(a.api_key_env)
    ]
    for var in missing:
        os.environ[var] = "quorum-plan-no-request"
    try:
        yield
    finally:
        for var in missing:
            os.environ.pop(var, None)


@dataclass
class PlanSetup:
    """What :func:`plan` and :func:`quorum.live.run.plan_target.plan_target` simulate on."""

    cfg: ProjectConfig
    items: Any
    task: TaskSpec
    problem: Any
    specs: list[AnnotatorSpec]
    conf: dict[str, float]
    truth: dict[str, str]
    labels: list[str]
    added: dict[str, str]
    sent: dict[str, str]

    def source(self, llm_accuracy: float, seed: int, **kw: Any) -> PlanSource:
        return PlanSource(self.task, self.truth, self.labels, self.conf, llm_accuracy, seed,
                          **kw)  # fmt: skip


def plan(cfg: ProjectConfig, llm_accuracy: float = 0.8, features: str | None = None) -> Plan:
    """Run the project's router on its items against :class:`PlanSource`; nothing is paid."""
    from quorum.live.run.runner import make_method
    from quorum.live.run.target import LiveTarget, checks_outlook

    ps = setup(cfg, features)
    cfg, items, task, specs = ps.cfg, ps.items, ps.task, ps.specs
    human = task.human
    source = ps.source(llm_accuracy, cfg.seed)
    budget = Budget(cfg.budget.limit, human_limit=cfg.budget.human_limit)
    make_method(cfg.method, cfg.method_params).route(ps.problem, source, budget, seed=cfg.seed)
    source.labels_per_item = cfg.humans.labels_per_item if cfg.human != GOLD_HUMAN else 1
    b = cfg.budget
    ladder = None if b.target_quality is None else LiveTarget(b.target_quality, b.level, b.limit)
    outlook = checks_outlook(cfg, ps.problem, source, ladder)
    human_price = task.human_spec.price
    machines = [s for s in specs if s.kind != "human"]
    everything = len(items) * (sum(s.price for s in machines) + human_price)
    overlap = cfg.humans.labels_per_item if cfg.human != GOLD_HUMAN else 1
    n_human = source.calls.get(human, 0)
    return Plan(
        project=cfg.name,
        method=cfg.method,
        n_items=len(items),
        budget=cfg.budget.limit,
        max_spend=min(cfg.budget.limit, everything),
        ask_everything=everything,
        expected_spend=float(budget.spent),
        llm_calls={s.name: source.calls.get(s.name, 0) for s in machines},
        confidence_calls=source.confidence_calls,
        human_tasks=n_human,
        human_labels=n_human * overlap,
        seconds_per_label=cfg.humans.seconds_per_label,
        llm_accuracy=llm_accuracy,
        prices={**{s.name: s.price for s in machines}, human: human_price},
        prompt_added=ps.added,
        prompt_sent=ps.sent,
        checks=None if outlook is None else outlook[0],
        checks_short=bool(outlook and outlook[1]),
    )


def setup(cfg: ProjectConfig, features: str | None = None) -> PlanSetup:
    """The project's task, routing problem and simulated truth (gold where the items have
    it, else a random label); nothing is called."""
    from quorum.live.run.problem import build_problem

    if features is not None:
        cfg = cfg.model_copy(update={"features": features})
    items = load_items(cfg)
    specs, conf, added, sent = _annotator_specs(cfg, item_views(items, cfg.task.kind.item_fields))
    t = cfg.task
    task = TaskSpec(
        name=cfg.name, type=t.type, labels=t.labels, label_names=t.label_names,
        instructions=t.instructions, language=t.language, annotators=specs,
        human=cfg.human or GOLD_HUMAN, human_price=cfg.human_price,
    )  # fmt: skip
    problem = build_problem(cfg, task, items, cfg.ledger_path.parent / "features")
    labels = list(t.labels or [])
    truth = _truth(cfg, items, labels)
    return PlanSetup(cfg, items, task, problem, specs, conf, truth, labels, added, sent)


def _annotator_specs(
    cfg: ProjectConfig, views: list[Any]
) -> tuple[list[AnnotatorSpec], dict[str, float], dict[str, str], dict[str, str]]:
    """Each annotator's spec at the prices a live run would reserve (an LLM's from its
    prompt; a human's times ``humans.labels_per_item``), the confidence prices, and per
    LLM what is added to its prompt and its first item's prompt as sent."""
    from quorum.live.machines.llm import LLMAnnotator
    from quorum.live.run.problem import make_builder

    specs, conf = [], {}
    added: dict[str, str] = {}
    sent: dict[str, str] = {}
    max_tok = kind_of(cfg.task.type).max_tokens
    with _placeholder_keys(cfg):
        for a in cfg.annotators:
            if a.kind == "llm":
                builder = make_builder(cfg, a)
                arm = LLMAnnotator(a, builder, views, Redactor(), max_tok)
                price, cprice = arm.price(), arm.confidence_price()
                added[a.name] = builder.added()
                if views:
                    msgs = builder.annotation_messages(views[0])
                    sent[a.name] = "\n".join(f"[{m['role']}] {m['content']}" for m in msgs)
            else:
                k = cfg.humans.labels_per_item if a.kind == "human" else 1
                price = float(a.price or 0.0) * k
                cprice = float(a.confidence_price if a.confidence_price is not None else 0.0)
            if a.swap:  # a pairwise judge asked in both orders: two calls per item
                price = from_units(2 * to_units(price))
            specs.append(AnnotatorSpec(name=a.name, kind=a.kind, price=price,
                                       confidence_price=cprice))  # fmt: skip
            conf[a.name] = cprice
    return specs, conf, added, sent


def _truth(cfg: ProjectConfig, items: Any, labels: list[str]) -> dict[str, str]:
    """The simulated truth of each item: its gold label where it has one in ``labels``,
    else a label drawn with the project's seed (a summary's placeholder text)."""
    rng = np.random.default_rng(cfg.seed)
    kind = kind_of(cfg.task.type, labels)
    truth: dict[str, str] = {}
    golds = items["gold"] if "gold" in items.columns else [None] * len(items)
    for iid, gold in zip(items["item_id"], golds, strict=True):
        truth[iid] = kind.placeholder(iid, gold, rng)
    return truth
