"""What a dataset folder may leave out, and the defaults it then gets.

The named loaders price every annotator and choose a panel by one rule
(:func:`quorum.data.loaders._common.rank_prices`); a folder gets the same rule for what its
``task.toml`` does not say, and ``meta["defaults"]`` plus a line in ``meta["notes"]`` say
which defaults were used:

- no ``[[annotators]]`` at all: every annotator found in the annotations is declared, as an
  LLM (as a human if ``human`` names it);
- an annotator without ``price``: a machine gets the price the named loaders' rule gives it
  (ranked by accuracy / ROUGE-1 against gold / reference, 0.05 / 0.03 / 0.01), a human
  ``human_price``;
- no panel (``panel`` in ``task.toml`` or in ``meta.json``): when no machine annotator has
  a price, the rule's panel (ranks ``0, n//3, 2n//3``, and ``reference_llm`` its first
  member), as for a named dataset; otherwise every machine annotator, cheapest first
  (what ``quorum simulate`` uses when there is no panel).

``text_template`` (in ``task.toml``) builds each item's ``text`` from several columns.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from typing import Any

import pandas as pd

from quorum.data.schema import GOLD_HUMAN, Dataset
from quorum.errors import DataValidationError

#: keys of ``task.toml`` that belong to the folder, not to the TaskSpec
FOLDER_KEYS: tuple[str, ...] = ("panel", "text_template")


def split_folder_keys(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(TaskSpec fields, folder keys)`` of a parsed task file."""
    task = {k: v for k, v in data.items() if k not in FOLDER_KEYS}
    return task, {k: data[k] for k in FOLDER_KEYS if k in data}


def apply_text_template(items: pd.DataFrame, template: Any) -> pd.DataFrame:
    """Items with ``text`` built from columns by ``template`` (``str.format`` fields).

    A missing value formats as an empty string. Raises DataValidationError (message
    starting with ``items:``) for a ``text`` column next to a template, an unknown column
    or a malformed template.

    >>> df = pd.DataFrame({"item_id": ["1"], "premise": ["It rains."], "hypothesis": ["Wet."]})
    >>> apply_text_template(df, "Premise: {premise}\\nHypothesis: {hypothesis}")["text"][0]
    'Premise: It rains.\\nHypothesis: Wet.'
    """
    if not isinstance(template, str) or not template.strip():
        raise DataValidationError("items: text_template must be a non-empty string")
    cols = [str(c) for c in items.columns]
    if "text" in cols:
        raise DataValidationError(
            "items: the file has a `text` column and task.toml sets text_template; keep one of them"
        )
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
    except ValueError as exc:
        raise DataValidationError(f"items: malformed text_template {template!r}: {exc}") from exc
    names = {f.split(".")[0].split("[")[0] for f in fields}
    if not names or "" in names or any(n.isdigit() for n in names):
        raise DataValidationError(
            f"items: text_template {template!r} must name columns, e.g. '{{premise}}'"
        )
    unknown = sorted(names - set(cols))
    if unknown:
        raise DataValidationError(
            f"items: text_template uses column(s) {unknown} that the items file lacks; "
            f"columns: {cols}"
        )
    used = items[sorted(names)].astype(object)
    rows = used.where(used.notna(), "").to_dict("records")
    try:
        text = [template.format(**r) for r in rows]
    except (ValueError, IndexError, KeyError, AttributeError, TypeError) as exc:
        raise DataValidationError(f"items: cannot apply text_template {template!r}: {exc}") from exc
    out = items.copy()
    out["text"] = text
    return out


def declare_from_annotations(
    task: dict[str, Any], annotations: pd.DataFrame
) -> tuple[dict[str, Any], list[str]]:
    """Declare every annotator of the annotations when the task declares none."""
    if task.get("annotators") or "annotator" not in annotations.columns:
        return task, []
    names = sorted(set(annotations["annotator"].dropna().astype(str)))
    human = task.get("human", GOLD_HUMAN)
    decl = [{"name": n, "kind": "human" if n == human else "llm"} for n in names]
    return {**task, "annotators": decl}, names


def placeholder_prices(task: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Annotators without a price get 0.0 for validation; returns their names."""
    decl = task.get("annotators")
    if not isinstance(decl, list):
        return task, []
    out, unpriced = [], []
    for a in decl:
        if isinstance(a, dict) and a.get("price") is None:
            a = {**a, "price": 0.0}
            unpriced.append(str(a.get("name")))
        out.append(a)
    return {**task, "annotators": out}, unpriced


def record_drops(ds: Dataset, dropped: Mapping[str, int], examples: Mapping[str, list[str]]):
    """Add the answers dropped for being outside the label set to ``meta`` (and a note)."""
    if not dropped:
        return
    counts = dict(ds.meta.get("dropped") or {})
    for a, c in dropped.items():
        counts[a] = int(counts.get(a, 0)) + int(c)
    ds.meta["dropped"] = counts
    total = sum(dropped.values())
    per = ", ".join(f"{a} {c} (e.g. {examples.get(a, [])})" for a, c in dropped.items())
    _note(
        ds,
        f"dropped {total} answer(s) outside the label set {ds.task.labels}: {per}; "
        "they count as unparseable calls",
    )


def _check_panel(panel: list[str], machines: list[str]) -> None:
    """A given panel names machine annotators, each once (else ``panel: ...`` error)."""
    bad = [p for p in panel if p not in machines]
    dup = sorted({p for p in panel if panel.count(p) > 1})
    if bad or dup:
        what = f"names {bad} that are not machine annotators" if bad else f"repeats {dup}"
        raise DataValidationError(f"panel: {what}; machine annotators: {sorted(machines)}")


def _default_prices(
    ds: Dataset, unpriced: list[str], machines: list[str]
) -> tuple[dict[str, float], list[str]]:
    """The rule's prices of the ``unpriced`` annotators (noted in ``ds``) and its panel."""
    from quorum.data.loaders._common import annotator_scores, rank_prices

    task = ds.task
    scores, coverage = annotator_scores(task.type, ds.items, ds.annotations)
    auto_prices, auto_panel = rank_prices(machines, scores, coverage)
    prices = {a: auto_prices.get(a, task.human_price) for a in unpriced}
    ranked_by = "name (no gold or reference to score them)" if not scores else "score"
    _note(
        ds,
        "default prices (no price in task.toml): "
        + ", ".join(f"{a} {p:g}" for a, p in prices.items())
        + f"; machines ranked by {ranked_by}: panel ranks 0, n//3, 2n//3 cost "
        "0.05 / 0.03 / 0.01, others by tercile; humans cost human_price",
    )
    return prices, auto_panel


def fill_defaults(
    ds: Dataset,
    unpriced: list[str],
    panel: list[str] | None,
    declared: list[str],
) -> None:
    """Give ``ds`` its default prices and panel in place (see the module docstring).

    ``panel`` is the panel the folder gives (None: none given). Raises DataValidationError
    (message starting with ``panel:``) for a panel naming no machine annotator.
    """
    task = ds.task
    machines = [a.name for a in task.llms]
    if panel is not None:
        _check_panel(panel, machines)
    used: dict[str, Any] = {}
    if declared:
        used["annotators"] = declared
        _note(
            ds,
            f"no [[annotators]] in task.toml: declared {len(declared)} from the annotations "
            f"as {'LLMs' if task.human not in declared else 'LLMs (and the human)'}; "
            "declare them to set kind and price",
        )
    prices: dict[str, float] = {}
    auto_panel: list[str] = []
    if unpriced:
        prices, auto_panel = _default_prices(ds, unpriced, machines)
        used["prices"] = prices
    changes: dict[str, Any] = {}
    if panel is None and machines:
        if auto_panel and set(machines) <= set(unpriced):
            panel = auto_panel
            used["panel"] = "rule"
            if task.reference_llm is None:
                changes["reference_llm"] = panel[0]
            _note(ds, f"default panel (rule of the named loaders): {panel}")
        else:
            used["panel"] = "all machine annotators"
    if prices or changes:
        specs = [
            a.model_copy(update={"price": float(prices[a.name])}) if a.name in prices else a
            for a in task.annotators
        ]
        ds.task = task.with_annotators(specs, **changes)
    if panel is None and machines:
        panel = [a.name for a in ds.task.llms]
        _note(ds, f"no panel given: all {len(panel)} machine annotators, cheapest first")
    if panel is not None:
        ds.meta["panel"] = list(panel)
    if used:
        ds.meta["defaults"] = {**dict(ds.meta.get("defaults") or {}), **used}


def _note(ds: Dataset, text: str) -> None:
    ds.meta["notes"] = [*list(ds.meta.get("notes") or []), text]
