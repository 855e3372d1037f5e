"""The audit by value: one LLM on every item left, chosen by the quality it is expected to
give at the money left, and humans at random on the others (kinds with
``TaskKind.audit_llm_by_value``, e.g. spans).

A probe (items with the human and every LLM) measures each LLM's mean similarity to the
human, acc_a. For every live LLM a whose answers on the items left fit the money, n_h(a)
humans fit beside it (:func:`~quorum.routing.quorum.audit.auditing.audit_human_count`) and
the expected quality is n_h(a) * q_H + (N - n_h(a)) * acc_a; the LLM with the highest one
labels the items no human gets (ties: the cheaper). The cheapest LLM is not always best:
on span tasks a dearer LLM that doubles the cheapest one's span F1 buys more quality than
the humans its price would have paid for. Which items get the humans is random: we found no
signal that says where an LLM's span F1 is low better than chance (docs/router.md, "Span
tasks").
"""

from __future__ import annotations

import numpy as np

from quorum.routing.quorum.audit.auditing import audit_human_count
from quorum.routing.quorum.run import QuorumRun

__all__ = ["choose_llm", "probe_accuracy", "probe_panel", "value_audit"]


def probe_panel(
    prices: np.ndarray,
    alive: np.ndarray,
    money: float,
    n_items: int,
    n_probe: int,
    c_h: float,
) -> np.ndarray:
    """Which LLMs the probe asks: those that could still label every item left after it.

    An LLM a whose answers on the N - n_p items left cost more than the money the probe
    leaves, c_a (N - n_p) > M - n_p (c_H + sum of the probed c), can never be chosen by
    :func:`choose_llm`, so paying it on the probe only takes money from the humans. The
    LLMs that fit are a prefix of the live ones by price (a dearer LLM is harder to fit and
    makes the probe dearer): the longest prefix whose dearest LLM fits beside a probe of
    the prefix. The cheapest live LLM is always kept (it is the fallback). Ours, not the
    paper's (docs/router.md, "Span tasks").

    >>> probe_panel(np.array([0.05, 0.03, 0.02, 0.01]), np.ones(4, bool), 12.0, 400, 20, 0.1)
    array([False, False,  True,  True])
    """
    live = np.flatnonzero(np.asarray(alive, dtype=bool))
    keep = np.zeros(len(prices), dtype=bool)
    if not len(live):
        return keep
    by_price = sorted(live, key=lambda k: prices[k])
    keep[by_price[0]] = True
    left = n_items - n_probe
    for j in range(1, len(by_price)):
        prefix = by_price[: j + 1]
        after = money - n_probe * (c_h + float(prices[prefix].sum()))
        if prices[by_price[j]] * left > after + 1e-9:
            break
        keep[by_price[j]] = True
    return keep


def probe_accuracy(
    run: QuorumRun, probe: list[int], base: int, z: float
) -> tuple[np.ndarray, np.ndarray]:
    """(each LLM's mean similarity to the human on the probe items with a human label,
    the same less ``z`` standard errors of its paired difference from LLM ``base``, which
    keeps its mean). NaN for an LLM without a judged answer."""
    ans = run.answers
    sims = np.full((len(probe), run.K), np.nan)
    for i, t in enumerate(probe):
        outs = ans.outputs(t)
        y = outs.get(run.human)
        if y is None:
            continue
        sims[i] = [ans.similarity(outs.get(a), y) for a in run.llm_names]
    sims = sims[~np.isnan(sims).all(axis=1)]
    if len(sims) == 0:
        nan = np.full(run.K, np.nan)
        return nan, nan
    acc = sims.mean(axis=0)
    diff = sims - sims[:, [base]]
    se = diff.std(axis=0, ddof=1) / np.sqrt(len(sims)) if len(sims) > 1 else np.ones(run.K)
    return acc, acc - z * np.nan_to_num(se, nan=1.0)


def choose_llm(
    acc: np.ndarray,
    prices: np.ndarray,
    alive: np.ndarray,
    money: float,
    n_items: int,
    c_h: float,
    humans_left: int | None,
    human_quality: float = 1.0,
) -> tuple[int | None, int, np.ndarray]:
    """(index of the LLM, humans beside it, each LLM's expected mean quality; NaN where it
    does not fit or was not measured). None when no LLM fits the money.

    >>> choose_llm(np.array([0.2, 0.4]), np.array([0.01, 0.02]), np.array([True, True]),
    ...            24.0, 800, 0.1, None)[:2]
    (1, 100)
    """
    value = np.full(len(acc), np.nan)
    humans = np.zeros(len(acc), dtype=int)
    for k in range(len(acc)):
        if not alive[k] or np.isnan(acc[k]) or prices[k] * n_items > money + 1e-9:
            continue
        n_h = audit_human_count(money, n_items, float(prices[k]), c_h, humans_left)
        humans[k] = n_h
        value[k] = (n_h * human_quality + (n_items - n_h) * acc[k]) / max(n_items, 1)
    if np.all(np.isnan(value)):
        return None, 0, value
    best = np.nanmax(value)
    pick = min((k for k in range(len(acc)) if value[k] >= best - 1e-12), key=lambda k: prices[k])
    return int(pick), int(humans[pick]), value


def value_audit(run: QuorumRun, probe: list[int], fallback: str, z: float = 0.0) -> str:
    """Every item outside ``probe`` to the LLM of :func:`choose_llm` or, as many as fit, to
    a human (random items); ``fallback`` (the cheapest LLM) when no LLM was measured.
    An LLM's quality is its probe mean less ``z`` standard errors of its paired
    difference from ``fallback`` (``TaskKind.audit_value_z``): a small probe over-rates
    some LLM by chance, and the choice would follow it. Returns the LLM used."""
    sp = run.spend
    in_probe = np.zeros(run.T, dtype=bool)
    in_probe[probe] = True
    perm = run.rng.permutation(run.T)
    rest = perm[~in_probe[perm]].astype(int)
    acc, lcb = probe_accuracy(run, probe, run.llm_names.index(fallback), z)
    alive = np.array([sp.alive(k) for k in range(run.K)], dtype=bool)
    k, n_h, value = choose_llm(
        lcb,
        sp.c,
        alive,
        run.budget.remaining,
        len(rest),
        sp.c_h,
        run.budget.humans_left,
        run.cfg.human_quality,
    )
    llm = fallback if k is None else run.llm_names[k]
    if k is None:
        n_h = audit_human_count(
            run.budget.remaining, len(rest), run.rec.price(llm), sp.c_h, run.budget.humans_left
        )
    run.report.calibration_accuracy = dict(zip(run.llm_names, acc.tolist(), strict=True))
    run.report.n_calibration = len(probe)
    run.report.auditor_order = "random (audit by value)"
    run.report.audit_by_value = {
        "llm": llm,
        "humans": int(n_h),
        "expected": dict(zip(run.llm_names, value.tolist(), strict=True)),
    }
    run.send_split(rest, n_h, llm, "random")
    return llm
