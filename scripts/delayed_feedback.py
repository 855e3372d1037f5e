"""What sending human tasks ahead costs in label quality, on recorded data (issue 27).

Replays a recorded dataset the way ``quorum annotate`` runs a live project with
``humans.queue_depth = d``: each pass routes from the start with a fresh budget; a human
task that is sent waits for its answer, the pass goes on with the answers it has until d
tasks wait (then it makes no new paid call: it is frozen); answers come back one at a time
in the order sent (the oldest first), and the router routes again at each one. LLM answers
paid in an earlier pass are served again at no charge (the ledger); a call beyond the
budget left over everything paid is refused (the project guard); after a complete pass,
answered tasks it did not ask for are given to the router and pending ones withdrawn, as the
live runner does. ``d = 1`` is the path of a router with an instant human, which
:func:`quorum.simulate.simulate_once` also takes (printed beside it as a check).

Prints per (dataset, depth): accuracy of the last pass's labels, human labels, LLM calls
paid and the share of them the last pass used, money paid in all, passes.

  python scripts/delayed_feedback.py --datasets llms-for-css/flute --budget 0.3 --depths 1 6 12
"""

from __future__ import annotations

import argparse
import json
from collections import OrderedDict

from quorum.data.schema import GOLD_HUMAN
from quorum.methods import make_router
from quorum.routing.core.base import Outcome
from quorum.routing.core.budget import Budget, from_units, to_units
from quorum.simulate import make_problem, prepare, score, simulate_once

DEFERRED = "deferred"


class DelayedHumanSource:
    """The recorded source with a human whose answers come back later (see the module
    docstring). Money is kept in exact units across passes, as the ledger keeps it."""

    def __init__(self, base, limit: float, depth: int) -> None:
        self.base, self.depth = base, depth
        self.limit_u = to_units(limit)
        self.paid: dict[tuple[str, str], int] = {}  # (item, annotator) -> units, all passes
        self.cache: dict[tuple[str, str], Outcome] = {}
        self.sent: OrderedDict[str, bool] = OrderedDict()  # human item -> answered
        self.given: set[str] = set()
        self.pending_pass: set[str] = set()
        self.asked_h: set[str] = set()
        self.asked: set[tuple[str, str]] = set()
        self.frozen = False

    # the AnnotationSource interface --------------------------------------------
    def price(self, a: str) -> float:
        return self.base.price(a)

    def confidence_price(self, a: str) -> float:
        return self.base.confidence_price(a)

    def recorded_output(self, i: str, a: str):
        return self.base.recorded_output(i, a)

    def has_recorded_confidence(self, a: str) -> bool:
        return self.base.has_recorded_confidence(a)

    def confidence(self, i: str, a: str) -> Outcome:
        return self.base.confidence(i, a)

    def embed_outputs(self, texts):
        return self.base.embed_outputs(texts)

    def annotate(self, i: str, a: str) -> Outcome:
        return self.annotate_many([(i, a)])[0]

    def prior_outcomes(self) -> list[Outcome]:
        return [self.base.annotate(i, GOLD_HUMAN) for i in self.given]

    def annotate_many(self, reqs: list[tuple[str, str]]) -> list[Outcome]:
        outs = [self._one(i, a) for i, a in reqs]
        if len(self.pending_pass) >= self.depth:
            self.frozen = True
        return outs

    # ---------------------------------------------------------------------------
    def _spent_u(self) -> int:
        return sum(self.paid.values())

    def _one(self, i: str, a: str) -> Outcome:
        self.asked.add((i, a))
        price_u = to_units(self.base.price(a))
        if a == GOLD_HUMAN:
            self.asked_h.add(i)
            if self.sent.get(i):
                return self.base.annotate(i, a)
            if i in self.sent:
                self.pending_pass.add(i)
                return Outcome(i, a, None, from_units(price_u), status="pending")
            if self.frozen:
                return Outcome(i, a, None, 0.0, status="pending", raw=DEFERRED)
            if self._spent_u() + price_u > self.limit_u:
                return Outcome(i, a, None, 0.0, status="failed", raw="project budget")
            self.paid[(i, a)] = price_u
            self.sent[i] = False
            self.pending_pass.add(i)
            return Outcome(i, a, None, from_units(price_u), status="pending")
        if (i, a) in self.cache:
            return self.cache[(i, a)]
        if self.frozen:
            return Outcome(i, a, None, 0.0, status="failed", raw=DEFERRED)
        if self._spent_u() + price_u > self.limit_u:
            return Outcome(i, a, None, 0.0, status="failed", raw="project budget")
        out = self.base.annotate(i, a)
        self.paid[(i, a)] = to_units(out.cost)
        self.cache[(i, a)] = out
        return out

    def begin_pass(self) -> None:
        self.frozen = False
        self.pending_pass = set()
        self.asked_h = set()
        self.asked = set()

    def answer_oldest(self) -> bool:
        for i, done in self.sent.items():
            if not done and i in self.pending_pass:
                self.sent[i] = True
                return True
        return False

    def settle_orphans(self) -> int:
        """After a complete pass: answered tasks it did not ask for are given; pending ones
        withdrawn (their money freed). Returns how many changed."""
        n = 0
        for i, done in list(self.sent.items()):
            if i in self.asked_h or i in self.given:
                continue
            if done:
                self.given.add(i)
            else:
                del self.sent[i]
                self.paid.pop((i, GOLD_HUMAN), None)
            n += 1
        return n


def _with_orphan_labels(prep, result, src: DelayedHumanSource):
    """The labels of ``result`` with each answered task it did not ask for as its item's
    label (the ``--orphans label`` variant: no routing again)."""
    lab = result.labels.copy()
    extra = {i for i, done in src.sent.items() if done and i not in src.asked_h}
    for i in extra:
        lab.loc[lab["item_id"] == i, "output"] = src.base.annotate(i, GOLD_HUMAN).output
    result.labels = lab
    return result, len(extra)


def run(prep, method: str, fraction: float, seed: int, depth: int, orphans: str = "give") -> dict:
    router = make_router(method)
    problem, budget0 = make_problem(prep, "dollars", fraction, router)
    src = DelayedHumanSource(prep.source, budget0.limit, depth)
    passes = settle = 0
    while True:
        passes += 1
        src.begin_pass()
        result = make_router(method).route(problem, src, Budget(budget0.limit), seed=seed)
        if src.pending_pass:
            if not src.answer_oldest():
                break
            continue
        if orphans == "label":
            result, _n = _with_orphan_labels(prep, result, src)
            break
        if not src.settle_orphans() or settle >= 8:
            break
        settle += 1
    used = {(r["item_id"], r["annotator"]) for r in result.annotations.to_dict("records")}
    llm_paid = [k for k in src.paid if k[1] != GOLD_HUMAN]
    return {
        "depth": depth,
        "orphans": orphans,
        **{k: v for k, v in score(prep, result).items() if k == "accuracy"},
        "human_labels": sum(1 for k in src.paid if k[1] == GOLD_HUMAN),
        "llm_calls_paid": len(llm_paid),
        "llm_paid_used_share": round(sum(k in used for k in llm_paid) / max(1, len(llm_paid)), 3),
        "paid": round(from_units(src._spent_u()), 6),
        "budget": round(budget0.limit, 6),
        "passes": passes,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="+", default=["llms-for-css/flute"])
    ap.add_argument("--method", default="quorum")
    ap.add_argument("--budget", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--depths", nargs="+", type=int, default=[1, 6, 12])
    ap.add_argument(
        "--orphans",
        default="give",
        choices=["give", "label"],
        help="answered tasks the last pass did not ask for: given to the router and routed "
        "again (the live runner), or only used as their items' labels",
    )
    args = ap.parse_args()
    for name in args.datasets:
        prep = prepare(name)
        inst, _ = simulate_once(
            prep, args.method, "dollars", args.budget, args.seed, {"quality": False}
        )
        head = {"dataset": name, "instant_human_accuracy": inst.get("accuracy")}
        head["instant_human_labels"] = inst.get("human_labels")
        print(json.dumps(head), flush=True)
        for d in args.depths:
            row = run(prep, args.method, args.budget, args.seed, d, args.orphans)
            print(json.dumps({"dataset": name, **row}), flush=True)


if __name__ == "__main__":
    main()
