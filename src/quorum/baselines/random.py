"""Random: humans for items drawn uniformly at random, an LLM elsewhere.

Auditor setting: ``B`` random items get a human label, the cheapest LLM labels the rest.
Dollars setting: as many random items get a human as the money allows once every other
item is covered by an LLM at the mean LLM price; each other item gets an LLM drawn
uniformly among those still affordable. (The uniform LLM draw is from the baselines notes;
the human share rule is ours: it spends the budget the way a random router would.)
"""

from __future__ import annotations

import numpy as np

from quorum.baselines._common import BaselineRouter, Routed, human_cap, item_trace
from quorum.routing.core.outputs import single_output_labels
from quorum.routing.core.run_core import RunCore


class RandomRouter(BaselineRouter):
    """Uniformly random items to humans; ``llm_choice``: "cheapest" (default) or "uniform"."""

    name = "random"

    def __init__(self, llm_choice: str = "cheapest") -> None:
        if llm_choice not in ("uniform", "cheapest"):
            raise ValueError("llm_choice must be 'uniform' or 'cheapest'")
        self.llm_choice = llm_choice

    def _route(self, run: RunCore) -> Routed:
        problem, budget, rng, rec = run.problem, run.budget, run.rng, run.rec
        ids, T, human = run.ids, run.T, run.human
        llms = problem.llms
        c_h = rec.price(human)
        cheapest = llms[0]
        order = rng.permutation(T)

        if problem.setting == "auditor":
            n_h = human_cap(problem, budget)
            human_set = set(order[:n_h].tolist())
            pick = {t: cheapest.name for t in range(T) if t not in human_set}
        else:
            prices = np.array([rec.price(a.name) for a in llms])
            mean_llm = prices.mean() if self.llm_choice == "uniform" else prices.min()
            extra = c_h - mean_llm
            n_h = 0 if extra <= 0 else int(max(0.0, (budget.remaining - T * mean_llm) // extra))
            n_h = min(n_h, human_cap(problem, budget))
            human_set = set(order[:n_h].tolist())
            pick = {}

        requests = [(ids[t], human) for t in order if t in human_set]
        rec.annotate_many(requests, phase="route")
        arm = np.full(T, human, dtype=object)
        mode = np.full(T, "random", dtype=object)
        c_min = rec.price(cheapest.name)
        rest = [t for t in order if t not in human_set]
        for j, t in enumerate(rest):
            keep = (len(rest) - j - 1) * c_min  # keep enough to cover the rest cheaply
            if problem.setting == "auditor":
                name = pick[t]
            elif self.llm_choice == "cheapest":
                name = cheapest.name
            else:
                ok = [a.name for a in llms if rec.can_afford(a.name, keep=keep)]
                name = ok[rng.integers(len(ok))] if ok else cheapest.name
            if rec.can_afford(name):
                rec.annotate(ids[t], name, phase="route")
                arm[t], mode[t] = name, "cover"
            else:
                arm[t], mode[t] = "-", "unaffordable"

        labels = single_output_labels(ids, rec, prefer=[human])
        info = {
            "confidence_source": "none",
            "substitute": False,
            "rule": "uniformly random items to humans",
            "llm_choice": self.llm_choice,
            "n_human_target": int(n_h),
        }
        return Routed(labels, info, item_trace(run, order, arm, mode))


class RandomUniformRouter(RandomRouter):
    """Random with each LLM-labelled item's LLM drawn uniformly (dollars setting)."""

    name = "random-uniform"

    def __init__(self, llm_choice: str = "uniform") -> None:
        super().__init__(llm_choice)
