"""What a ledger's answers mean: the task's labels and the prices they were bought at.

A ledger caches every answer by its request key (model, prompt, parameters). Some of the
project file does not enter that key and yet gives the cached answers their meaning:

* the task type, ``labels`` and ``label_names``: an LLM's cached answer was read into a
  label value with the names of its run ("This text is positive" became ``"1"``), and a
  person's label is stored as a label value too. Swapping two names between runs would
  silently turn every cached ``"1"`` into the other class;
* the prices: a call already made keeps the cost it was recorded at (what it cost), while
  the router plans new calls at the new price.

:func:`check_definition` compares the project with what its ledger recorded at its last run
(``meta.definition``) and refuses a run whose labels changed, with the reason and the way
out (restore them, or a new ledger). A price change is refused too, unless the project says
``budget.price_change = "accept"``: the change is then logged and used for new calls.
A change of prompt, model, endpoint or call parameters needs no check: it changes the
request keys, so those calls are made again.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from quorum.errors import ConfigError
from quorum.live.ledger.store import Ledger
from quorum.live.project.config import ProjectConfig

log = logging.getLogger("quorum.live")

META_KEY = "definition"
_PRICE_FIELDS = ("price", "input_cost_per_token", "output_cost_per_token", "confidence_price")


def definition(cfg: ProjectConfig) -> dict[str, Any]:
    """The parts of ``cfg`` that give a ledger's answers their meaning and cost."""
    t = cfg.task
    prices = {
        a.name: {f: getattr(a, f) for f in _PRICE_FIELDS if getattr(a, f) is not None}
        for a in cfg.annotators
    }
    if cfg.human == "gold":
        prices["gold"] = {"price": cfg.human_price}
    return {
        "task_type": t.type.value,
        "labels": list(t.labels or []),
        "label_names": dict(t.label_names or {}),
        "prices": prices,
    }


def recorded(ledger: Ledger) -> dict[str, Any] | None:
    """The definition the ledger's last run recorded (None: a new or an older ledger)."""
    rows = ledger.query("SELECT value FROM meta WHERE key=?", (META_KEY,))
    if not rows or not rows[0][0]:
        return None
    try:
        return dict(json.loads(rows[0][0]))
    except (ValueError, TypeError):
        return None


def _label_change(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    for key, what in (("task_type", "task.type"), ("labels", "task.labels"),
                      ("label_names", "task.label_names")):  # fmt: skip
        if old.get(key) != new.get(key):
            return f"{what} was {old.get(key)!r} and is now {new.get(key)!r}"
    return None


def _price_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    before, now = old.get("prices") or {}, new.get("prices") or {}
    for name in sorted(set(before) & set(now)):
        for f in _PRICE_FIELDS:
            a, b = before[name].get(f), now[name].get(f)
            if a != b:
                out.append(f"annotator {name!r}: {f} {a} -> {b}")
    return out


def has_calls(ledger: Ledger) -> bool:
    return bool(ledger.query("SELECT 1 FROM calls LIMIT 1"))


def check_definition(cfg: ProjectConfig, ledger: Ledger) -> None:
    """Refuse a run whose labels (or, unless accepted, prices) differ from those the ledger's
    answers were recorded with; record the project's definition for the next run."""
    new = definition(cfg)
    old = recorded(ledger)
    if old is not None and has_calls(ledger):
        why = _label_change(old, new)
        if why is not None:
            raise ConfigError(
                f"{why} since the answers in {ledger.path} were recorded: its cached LLM "
                "answers and human labels keep the label meaning of then (a cached '1' "
                "would be read with the new names). Restore the old value, or set `ledger` "
                "to a new path to label with the new one (every call is then made again)"
            )
        changed = _price_changes(old, new)
        if changed and cfg.budget.price_change != "accept":
            raise ConfigError(
                "price changed since the last run ("
                + "; ".join(changed)
                + "): calls already made keep the cost they were recorded at and new calls "
                "would cost the new price. Restore the old price, or set "
                'budget.price_change = "accept" to go on with the new one'
            )
        for c in changed:
            log.warning(
                "price changed since the last run: %s; calls already made keep their recorded "
                "cost, new calls cost the new price (budget.price_change = accept)",
                c,
            )
    with ledger.tx() as c:
        c.execute(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)", (META_KEY, json.dumps(new, sort_keys=True))
        )
