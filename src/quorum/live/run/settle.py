"""After a complete pass: human answers and paid calls it did not use.

Tasks sent ahead and answered are their items' labels (:func:`label_orphans`), or handed
to the router (:func:`settle_orphans`); pending ones no pass needs are withdrawn; paid
machine answers a pass could not reuse are given to the router (:func:`give_paid_calls`).
"""

from __future__ import annotations

import logging

import pandas as pd

from quorum.live.ledger.store import Ledger
from quorum.live.run.source import LiveSource
from quorum.live.run.waiting import ids_str
from quorum.routing.core.base import RoutingResult

log = logging.getLogger("quorum.live")


def give_paid_calls(source: LiveSource, ledger: Ledger) -> int:
    """After a complete pass that planned calls the ledger could not pay (its money went to
    answers this pass did not reuse: an earlier pass's, whose path the human answers since
    changed, or an earlier configuration's): every paid machine answer is handed to the
    router as a prior outcome, its cost charged to the router's budget before it plans, so
    the next pass plans only the money that is left and still uses every paid answer.
    Returns how many were handed over (0 when the pass planned nothing it could not pay)."""
    if not source.not_made:
        return 0
    machines = [n for n, a in source.annotators.items() if a.kind != "human"]
    calls = ledger.frame(
        "SELECT call_id, item_id, annotator FROM calls WHERE kind='annotate' AND status IN "
        "('ok','unparseable') AND call_id NOT IN (SELECT call_id FROM given_calls) "
        "ORDER BY call_id"
    )
    calls = calls[calls["annotator"].isin(machines) & calls["item_id"].isin(list(source.items))]
    new = calls.drop_duplicates(["item_id", "annotator"], keep="last")["call_id"].tolist()
    if new:
        ledger.give_calls([int(c) for c in new])
        log.info(
            "the router planned %d call(s) the ledger had no money left for (it went to "
            "answers this pass did not reuse); %d paid machine answer(s) are given to the "
            "router (their cost charged to its budget before it plans); routing again",
            source.not_made,
            len(new),
        )
    return len(new)


def _orphan_answers(source: LiveSource, ledger: Ledger) -> pd.DataFrame:
    """Answered human tasks the last pass did not ask for (and not given to the router)."""
    tasks = ledger.human_tasks()
    tasks = tasks[tasks["annotator"] == source.human.name] if source.human else tasks[:0]
    asked = tasks["request_key"].isin(list(source.asked_human))
    return tasks[(tasks["status"] == "answered") & (tasks["given"] != 1) & ~asked]


def label_orphans(result: RoutingResult | None, source: LiveSource, ledger: Ledger) -> int:
    """With tasks sent ahead (``queue_depth`` > 1): each answered task the complete pass
    did not ask for is its item's label (``labelled_by`` the human arm), instead of being
    given to the router to route again. Giving them back changes the router's plan (its
    budget and checks start from them: on llms-for-css/flute at 0.3, QUORUM's accuracy
    fell from 0.65 to 0.40, against 0.58 this way; scripts/delayed_feedback.py). Returns
    how many labels it set."""
    if result is None or source.human is None:
        return 0
    orphans = _orphan_answers(source, ledger)
    got = {str(i): y for i, y in zip(orphans["item_id"], orphans["label"], strict=True)
           if isinstance(y, str)}  # fmt: skip
    if not got:
        return 0
    lab = result.labels.copy()
    hit = lab["item_id"].astype(str).isin(list(got))
    lab.loc[hit, "output"] = lab.loc[hit, "item_id"].astype(str).map(got)
    lab.loc[hit, "human"] = True
    if "labelled_by" not in lab.columns:
        lab["labelled_by"] = None
    lab["labelled_by"] = lab["labelled_by"].astype(object)
    lab.loc[hit, "labelled_by"] = f"{source.human.name} (a task sent ahead)"
    if "why_unlabelled" in lab.columns:
        lab.loc[hit, "why_unlabelled"] = None
    result.labels = lab
    log.info(
        "%d human answer(s) to tasks sent ahead that the last pass did not ask for are their "
        "items' labels (items %s)",
        int(hit.sum()),
        ids_str(sorted(got)),
    )
    return int(hit.sum())


def settle_orphans(source: LiveSource, ledger: Ledger, give: bool = True) -> tuple[int, int]:
    """After a complete pass: answered tasks it did not ask for are given to the router
    (``give``), pending ones are withdrawn (their held money is freed). Returns the two
    counts."""
    if source.human is None:
        return 0, 0
    tasks = ledger.human_tasks()
    tasks = tasks[tasks["annotator"] == source.human.name]
    asked = tasks["request_key"].isin(list(source.asked_human))
    orphan_ans = _orphan_answers(source, ledger) if give else tasks[:0]
    orphan_pend = tasks[(tasks["status"] == "pending") & ~asked]
    if len(orphan_ans):
        ledger.mark_given(orphan_ans["request_key"].tolist())
        log.info(
            "%d human answer(s) to tasks this pass no longer asked for (items %s) are given "
            "to the router as labels; routing again",
            len(orphan_ans),
            ids_str(orphan_ans["item_id"].tolist()),
        )
    if len(orphan_pend):
        source.withdraw_tasks(
            dict(zip(orphan_pend["request_key"], orphan_pend["item_id"], strict=True))
        )
        log.info(
            "%d pending human task(s) are no longer needed (items %s): withdrawn, their held "
            "money freed",
            len(orphan_pend),
            ids_str(orphan_pend["item_id"].tolist()),
        )
    return len(orphan_ans), len(orphan_pend)
