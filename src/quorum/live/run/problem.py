"""Build the routing problem of a project: the TaskSpec, the arms and the item features."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from quorum.data.schema import GOLD_HUMAN, AnnotatorSpec, TaskSpec
from quorum.features.light import light_features
from quorum.live.humans.queue import FileHumanQueue, HumanQueue
from quorum.live.machines.calls import Annotator, Redactor
from quorum.live.machines.llm import LLMAnnotator
from quorum.live.machines.local import CallableAnnotator, LocalAnnotator
from quorum.live.machines.prompts import PromptBuilder, PromptTemplate, has_template
from quorum.live.machines.swap import SwapAnnotator
from quorum.live.project.annotators import AnnotatorConfig
from quorum.live.project.config import ProjectConfig
from quorum.live.run.source import HumanArm
from quorum.models.classifiers import LocalModel, ZeroShotClassifier
from quorum.routing.core.base import RoutingProblem, item_texts
from quorum.tasks.base import ItemView, TaskKind
from quorum.tasks.parsing import LabelParser
from quorum.tasks.registry import kind_of

log = logging.getLogger("quorum.live")


def make_builder(cfg: ProjectConfig, a: AnnotatorConfig | None = None) -> PromptBuilder:
    """The prompts of annotator ``a`` (None: the human tasks'); a project with a context
    column gets the kind's bundled ``<template>_context`` prompt where there is one."""
    t = cfg.task
    kind = t.kind.template_name
    context = cfg.items.context_column is not None
    if context and has_template(f"{kind}_context"):
        kind = f"{kind}_context"
    name = f"annotator {a.name!r}" if a else "prompt"
    return PromptBuilder(
        t.type,
        t.labels,
        t.label_names,
        t.instructions,
        PromptTemplate.resolve(a.prompt if a else None, kind, cfg.root, f"{name} prompt"),
        PromptTemplate.resolve(
            a.confidence_prompt if a else None, "confidence", cfg.root, f"{name} confidence"
        ),
        a.system_prompt if a else None,
        t.instructions_in_prompt,
        kind=t.kind,
        has_context=context,
    )


class GoldLookup(LocalModel):
    """The gold column acting as a perfect human (simulation and tests)."""

    ident = "gold-column"

    def __init__(self, gold: dict[str, str | None]) -> None:
        self.gold = gold

    def predict_many(self, items):
        return [self.gold.get(it.item_id) for it in items]


def make_parser(cfg: ProjectConfig) -> LabelParser | None:
    """The task kind's parser of an LLM's raw answer (None: free text)."""
    return cfg.task.kind.parser()


def build_arms(
    cfg: ProjectConfig, items: pd.DataFrame, views: list[ItemView], redactor: Redactor
) -> tuple[dict[str, Annotator], HumanArm | None]:
    """Machine annotators by name (the gold human too), and the queue-backed human arm."""
    arms: dict[str, Annotator] = {}
    human: HumanArm | None = None
    kind = kind_of(cfg.task.type, cfg.task.labels, cfg.task.label_names)
    max_tok = kind.max_tokens
    swapped = swapped_views(kind, items, views) if any(a.swap for a in cfg.annotators) else {}
    for a in cfg.annotators:
        if a.kind == "llm":
            arms[a.name] = LLMAnnotator(
                a, make_builder(cfg, a), [*views, *swapped.values()] if a.swap else views,
                redactor, max_tok, engine=cfg.engine, ray_address=cfg.ray_address,
            )  # fmt: skip
        elif a.kind == "model":
            model: LocalModel
            if a.model == "zero-shot":
                if not kind.discrete:
                    from quorum.errors import ConfigError

                    raise ConfigError(f"annotator {a.name!r}: zero-shot needs a label task")
                model = ZeroShotClassifier(
                    cfg.task.labels or [], cfg.task.label_names, cfg.task.label_descriptions
                )
            else:
                model = CallableAnnotator.from_path(str(a.model))
            arms[a.name] = LocalAnnotator(a.name, model, a.price or 0.0, a.confidence_price)
        else:
            queue: HumanQueue
            if cfg.humans.backend == "labelstudio":
                from quorum.live.labelstudio.queue import LabelStudioHumanQueue

                queue = LabelStudioHumanQueue.from_config(cfg)
            else:
                queue_dir = cfg.path(a.queue) if a.queue else cfg.queue_dir
                queue = FileHumanQueue(queue_dir)
            hc = cfg.humans
            human = HumanArm(
                a.name, float(a.price or 0.0), queue, make_builder(cfg),
                labels_per_item=hc.labels_per_item, timeout=hc.timeout, team_size=hc.team_size,
                prior_accuracy=hc.prior_accuracy, prior_strength=hc.prior_strength,
                arm_quality=hc.arm_quality, min_evidence=hc.min_evidence,
            )  # fmt: skip
    for a in cfg.annotators:
        if a.swap:  # asked in both orders: one arm, two calls per item (machines/swap.py)
            arms[a.name] = SwapAnnotator(arms[a.name], swapped, kind, a.swap_rule)
    if cfg.human == GOLD_HUMAN:
        gold = dict(zip(items["item_id"], items["gold"], strict=True))
        arms[GOLD_HUMAN] = LocalAnnotator(
            GOLD_HUMAN, GoldLookup(gold), cfg.human_price, kind="human"
        )
    return arms, human


def swapped_views(
    kind: TaskKind, items: pd.DataFrame, views: list[ItemView]
) -> dict[str, ItemView]:
    """Each item with its parts exchanged (a pair's two outputs), by item id: the second
    order of a ``swap`` annotator (its text is the items' ``text_swapped``)."""
    texts = items["text_swapped"] if "text_swapped" in items.columns else items["text"]
    return {v.item_id: kind.swapped_view(v, str(t)) for v, t in zip(views, texts, strict=True)}


def build_task(cfg: ProjectConfig, arms: dict[str, Annotator], human: HumanArm | None) -> TaskSpec:
    specs = []
    for a in cfg.annotators:
        if a.kind == "human":
            assert human is not None
            specs.append(AnnotatorSpec(name=a.name, kind="human", price=human.task_price))
        else:
            arm = arms[a.name]
            specs.append(
                AnnotatorSpec(
                    name=a.name,
                    kind=a.kind,
                    price=arm.price(),
                    confidence_price=arm.confidence_price(),
                )
            )
    t = cfg.task
    return TaskSpec(
        name=cfg.name,
        type=t.type,
        labels=t.labels,
        label_names=t.label_names,
        instructions=t.instructions,
        language=t.language,
        annotators=specs,
        human=cfg.human or GOLD_HUMAN,
        human_price=cfg.human_price,
    )


# -- features ------------------------------------------------------------------------
def compute_features(
    cfg: ProjectConfig, texts: list[str], cache_dir: Path
) -> tuple[np.ndarray, np.ndarray | None, str]:
    """(phi, embeddings, how): the features module, or a fallback named by ``features``."""
    mode = cfg.features
    if mode in ("auto", "full"):
        try:
            from quorum.features.pipeline import FeatureExtractor
        except ImportError as exc:
            if mode == "full":
                raise
            log.warning("features module unavailable (%s); using embeddings only", exc)
            mode = "embeddings"
        else:
            fx = FeatureExtractor(
                show_progress=False, cache_dir=str(cache_dir), engine=cfg.engine,
                ray_address=cfg.ray_address,
            )  # fmt: skip
            k = min(5, max(1, len(texts) - 1))
            fx.k = k
            fs = fx.fit_transform(texts, language=cfg.task.language)
            return fs.phi, fs.embeddings, "full"
    phi, emb = light_features(texts)
    if mode == "embeddings":
        from quorum.models.embedders import embed

        emb = embed(texts)
    return phi, emb, mode


def build_problem(
    cfg: ProjectConfig, task: TaskSpec, items: pd.DataFrame, cache_dir: Path
) -> RoutingProblem:
    texts = items["text"].tolist()
    phi, emb, _ = compute_features(cfg, texts, cache_dir)
    return RoutingProblem(
        task=task,
        item_ids=items["item_id"].to_numpy(),
        phi=phi,
        embeddings=emb,
        setting=cfg.budget.setting,
        human_budget=cfg.budget.human_limit,
        text_lengths=np.array([len(str(t)) for t in texts], dtype=np.int64),
        texts=item_texts(texts),
    )
