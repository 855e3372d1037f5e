"""The audit by value: one LLM on every item left, chosen by the quality it is expected to
give at the money left, and humans on the others (kinds with
``TaskKind.audit_llm_by_value``, e.g. spans).

A probe (items with the human and every LLM) measures each LLM's mean similarity to the
human, acc_a. For every live LLM a whose answers on the items left fit the money, n_h(a)
humans fit beside it (:func:`~quorum.routing.quorum.audit.auditing.audit_human_count`) and
the expected quality is n_h(a) * q_H + (N - n_h(a)) * acc_a; the LLM with the highest one
labels the items no human gets (ties: the cheaper). The cheapest LLM is not always best:
on span tasks a dearer LLM that doubles the cheapest one's span F1 buys more quality than
the humans its price would have paid for. Which items get the humans
(``value_audit_order``): "random", or "fewest-marks", where the chosen LLM first answers
every item left and the humans take the items where it marked the fewest spans (at least
one): on the dev split an LLM's span F1 is lowest where it marked one span and highest
where it marked none (docs/router.md, "Span tasks"); with ``value_order_key="top-type"``
the fewest spans of the type the humans marked most on the probe come first (:func:`top_type`,
:func:`answer_keys`). Then n_h(a) counts the humans that
fit beside the LLM on every item, and the expected quality is read off the probe items in
the same order (:func:`ordered_quality`).
"""

from __future__ import annotations

import math

import numpy as np

from quorum.routing.core.budget import cap_humans
from quorum.routing.quorum.audit.auditing import audit_human_count
from quorum.routing.quorum.run import QuorumRun

__all__ = [
    "answer_keys",
    "choose_llm",
    "marks_key",
    "ordered_quality",
    "probe_accuracy",
    "probe_panel",
    "probe_worth_more",
    "top_type",
    "value_audit",
]

#: ``marks_key`` of an answer that could not be read (first in line for a human)
_UNREAD = -1.0


def marks_key(n_marks: np.ndarray, n_top: np.ndarray | None = None) -> np.ndarray:
    """The order in which "fewest-marks" gives items to humans, lowest key first: an
    unreadable answer (``n_marks`` < 0) first, then the fewest spans marked, an answer
    that marked nothing last (its span F1 is 1 wherever the item truly has no span).
    With ``n_top`` (``value_order_key="top-type"``): the fewest spans of the type the
    humans marked most on the probe first, then the fewest spans.

    >>> marks_key(np.array([0, 3, 1, -1])).tolist()
    [inf, 3.0, 1.0, -1.0]
    >>> marks_key(np.array([0, 3, 1, 2]), np.array([0, 0, 1, 1])).tolist()
    [inf, 0.75, 1.5, 1.6666666666666665]
    """
    n = np.asarray(n_marks, dtype=float)
    if n_top is not None:
        key = np.asarray(n_top, dtype=float) + n / (np.abs(n) + 1.0)
        return np.where(n == 0, np.inf, np.where(n < 0, _UNREAD, key))
    return np.where(n == 0, np.inf, n)


def ordered_quality(sims: np.ndarray, keys: np.ndarray | None, share: float, q_h: float) -> float:
    """Mean quality over the probe items when humans (quality ``q_h``) take the ``share``
    of them with the lowest ``keys`` (a tie group shares what is left evenly) and the LLM
    keeps its similarity ``sims`` on the others; ``keys`` None = random items.

    >>> ordered_quality(np.array([0.2, 0.6, 1.0, 0.2]), np.array([1, 2, np.inf, 1]), 0.5, 1.0)
    0.9
    >>> round(ordered_quality(np.array([0.2, 0.6]), None, 0.5, 1.0), 3)
    0.7
    """
    sims = np.asarray(sims, dtype=float)
    n = len(sims)
    if n == 0:
        return float("nan")
    share = min(max(share, 0.0), 1.0)
    if keys is None:
        return float(share * q_h + (1.0 - share) * sims.mean())
    gain, left = 0.0, share * n
    for k in np.unique(keys):  # sorted, inf last
        grp = sims[keys == k]
        take = min(left, float(len(grp)))
        gain += take * (q_h - grp.mean())
        left -= take
        if left <= 0:
            break
    return float((sims.sum() + gain) / n)


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


def _n_marks(run: QuorumRun, output: str | None) -> float:
    """Spans an LLM's answer marks (``TaskKind.text_spans``); -1 for no readable answer."""
    return _UNREAD if output is None else float(len(run.kind.text_spans(output)))


def top_type(run: QuorumRun, probe: list[int]) -> str | None:
    """The span type the humans marked most often on the probe items (ties: the first in
    sorted order); None when ``value_order_key`` is "marks" or the humans marked nothing."""
    if run.cfg.value_order_key != "top-type":
        return None
    counts: dict[str, int] = {}
    for t in probe:
        for _, _, label in run.kind.text_spans(run.answers.outputs(t).get(run.human)):
            counts[label] = counts.get(label, 0) + 1
    return min(counts, key=lambda x: (-counts[x], x)) if counts else None


def answer_keys(run: QuorumRun, outputs: list[str | None], top: str | None) -> np.ndarray:
    """:func:`marks_key` of LLM answers: by the spans marked, and with ``top`` (a span
    type, :func:`top_type`) by the spans of that type first."""
    if top is None:
        return marks_key(np.array([_n_marks(run, o) for o in outputs]))
    n, n_top = np.full(len(outputs), _UNREAD), np.zeros(len(outputs))
    for i, o in enumerate(outputs):
        if o is not None:
            spans = run.kind.text_spans(o)
            n[i], n_top[i] = len(spans), sum(lab == top for _, _, lab in spans)
    return marks_key(n, n_top)


def probe_accuracy(
    run: QuorumRun, probe: list[int], base: int, z: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(each LLM's mean similarity to the human on the probe items with a human label,
    the same less ``z`` standard errors of its paired difference from LLM ``base``, which
    keeps its mean; per judged item and LLM, the similarity and the :func:`marks_key` of
    its answer). NaN for an LLM without a judged answer."""
    ans = run.answers
    sims = np.full((len(probe), run.K), np.nan)
    keys = np.full((len(probe), run.K), np.nan)
    top = top_type(run, probe)
    for i, t in enumerate(probe):
        outs = ans.outputs(t)
        y = outs.get(run.human)
        if y is None:
            continue
        sims[i] = [ans.similarity(outs.get(a), y) for a in run.llm_names]
        keys[i] = answer_keys(run, [outs.get(a) for a in run.llm_names], top)
    judged = ~np.isnan(sims).all(axis=1)
    sims, keys = sims[judged], keys[judged]
    if len(sims) == 0:
        nan = np.full(run.K, np.nan)
        return nan, nan, sims, keys
    acc = sims.mean(axis=0)
    diff = sims - sims[:, [base]]
    se = diff.std(axis=0, ddof=1) / np.sqrt(len(sims)) if len(sims) > 1 else np.ones(run.K)
    return acc, acc - z * np.nan_to_num(se, nan=1.0), sims, keys


def choose_llm(
    acc: np.ndarray,
    prices: np.ndarray,
    alive: np.ndarray,
    money: float,
    n_items: int,
    c_h: float,
    humans_left: int | None,
    human_quality: float = 1.0,
    ordered: tuple[np.ndarray, np.ndarray] | None = None,
    order: str = "random",
    margin: float = 0.0,
) -> tuple[int | None, int, np.ndarray, bool]:
    """(index of the LLM, humans beside it, each LLM's expected mean quality (NaN where it
    does not fit or was not measured), whether its humans go in "fewest-marks" order).
    None when no LLM fits the money.

    ``order`` (``value_audit_order``): "random", humans on random items and the LLM on the
    others, (M - N c_a) / (c_H - c_a) humans; "fewest-marks", the LLM answers every item
    and the humans that fit beside it, (M - N c_a) / c_H, take its items in
    :func:`marks_key` order, its quality :func:`ordered_quality` of ``ordered`` (per probe
    item and LLM: similarity, key) less what ``acc`` takes off the probe mean
    (``audit_value_z``) on the LLM's items; "by-value", each LLM with the order of the two
    its probe values higher; "if-free", "fewest-marks" where it keeps as many humans as
    random order (a human limit that binds leaves the money for the LLM's answers under
    the humans) and the probe values it higher, else random. Ties: the cheaper LLM, then
    random order. A dearer LLM is taken only when its value passes the cheapest measured
    LLM's by more than ``margin`` (``value_margin``).

    >>> choose_llm(np.array([0.2, 0.4]), np.array([0.01, 0.02]), np.array([True, True]),
    ...            24.0, 800, 0.1, None)[:2]
    (1, 100)
    """
    value = np.full(len(acc), np.nan)
    humans = np.zeros(len(acc), dtype=int)
    marks = np.zeros(len(acc), dtype=bool)
    for k in range(len(acc)):
        if not alive[k] or np.isnan(acc[k]) or prices[k] * n_items > money + 1e-9:
            continue
        if order != "fewest-marks" or ordered is None:
            n_h = audit_human_count(money, n_items, float(prices[k]), c_h, humans_left)
            humans[k] = n_h
            value[k] = (n_h * human_quality + (n_items - n_h) * acc[k]) / max(n_items, 1)
        if order == "random" or ordered is None:
            continue
        n_h = cap_humans(
            max(0, min(math.floor((money - n_items * prices[k]) / c_h + 1e-9), n_items)),
            humans_left,
        )
        sims, keys = ordered
        share = n_h / max(n_items, 1)
        penalty = (float(np.nanmean(sims[:, k])) - acc[k]) * (1.0 - share)
        v = ordered_quality(sims[:, k], keys[:, k], share, human_quality) - penalty
        if order == "if-free" and n_h < humans[k]:
            continue  # the order would cost human labels: random
        if np.isnan(value[k]) or v > value[k] + 1e-12:
            value[k], humans[k], marks[k] = v, n_h, True
    if np.all(np.isnan(value)):
        return None, 0, value, False
    best = np.nanmax(value)
    pick = min((k for k in range(len(acc)) if value[k] >= best - 1e-12), key=lambda k: prices[k])
    base = min((k for k in range(len(acc)) if not np.isnan(value[k])), key=lambda k: prices[k])
    if value[pick] <= value[base] + margin:
        pick = base
    return int(pick), int(humans[pick]), value, bool(marks[pick])


def probe_worth_more(run: QuorumRun, probe: list[int], step: int, fallback: str) -> bool:
    """Whether ``step`` more probe items are worth their price (``probe_step``; ours).

    The expected loss of choosing now, E[max_a V_a - V_pick], is estimated by
    ``probe_bootstrap`` resamples of the probe items (each LLM's expected quality V_a as
    :func:`choose_llm` computes it, at the money left); the price of ``step`` more items is
    every LLM's answers on them, those :func:`probe_panel` leaves out of the probe included
    (an LLM not asked scores 0 on the probe, not NaN), in the quality that money would buy
    as humans beside the LLM picked now, step * sum(c_a) / (c_H - c_pick) * (q_H -
    acc_pick) / N: a price above what a step costs, which stops the probe early (pricing
    only the LLMs asked was tried in issue 35d, docs/router.md). The probe goes on while
    the loss is larger: it stops early both when the choice is clear and when
    the LLMs are worth about the same (docs/router.md, "Span tasks")."""
    sp, cfg = run.spend, run.cfg
    base = run.llm_names.index(fallback)
    acc, _, sims, keys = probe_accuracy(run, probe, base, 0.0)
    if len(sims) < 2:
        return True
    alive = np.array([sp.alive(k) for k in range(run.K)], dtype=bool)
    n_rest = run.T - len(probe)
    money, left = run.budget.remaining, run.budget.humans_left

    def values(a, s, k):
        return choose_llm(
            a, sp.c, alive, money, n_rest, sp.c_h, left, cfg.human_quality, (s, k),
            cfg.value_audit_order, cfg.value_margin,
        )  # fmt: skip

    pick, _, _, _ = values(acc, sims, keys)
    if pick is None:
        return False
    probed = ~np.isnan(sims).any(axis=0)
    rng = np.random.default_rng(run.rng.integers(2**32))
    loss = 0.0
    for _ in range(cfg.probe_bootstrap):
        idx = rng.integers(0, len(sims), len(sims))
        _, _, v, _ = values(np.nanmean(sims[idx], axis=0), sims[idx], keys[idx])
        if not np.isnan(v[pick]):
            loss += float(np.nanmax(v) - v[pick])
    loss /= cfg.probe_bootstrap
    price = step * float(sp.c[probed].sum())
    per_human = max(sp.c_h - float(sp.c[pick]), 1e-9)
    worth = price / per_human * (cfg.human_quality - float(acc[pick])) / max(n_rest, 1)
    return loss > worth


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
    acc, lcb, sims, keys = probe_accuracy(run, probe, run.llm_names.index(fallback), z)
    alive = np.array([sp.alive(k) for k in range(run.K)], dtype=bool)
    k, n_h, value, marks_first = choose_llm(
        lcb,
        sp.c,
        alive,
        run.budget.remaining,
        len(rest),
        sp.c_h,
        run.budget.humans_left,
        run.cfg.human_quality,
        (sims, keys),
        run.cfg.value_audit_order,
        run.cfg.value_margin,
    )
    llm = fallback if k is None else run.llm_names[k]
    if k is None:
        n_h = audit_human_count(
            run.budget.remaining, len(rest), run.rec.price(llm), sp.c_h, run.budget.humans_left
        )
    run.report.calibration_accuracy = dict(zip(run.llm_names, acc.tolist(), strict=True))
    run.report.n_calibration = len(probe)
    run.report.auditor_order = (
        "fewest spans marked first (audit by value)" if marks_first else "random (audit by value)"
    )
    run.report.audit_by_value = {
        "llm": llm,
        "humans": int(n_h),
        "expected": dict(zip(run.llm_names, value.tolist(), strict=True)),
    }
    if not marks_first:
        run.send_split(rest, n_h, llm, "random")
        return llm
    run.buy(rest, llm, "llm")
    outs = [run.answers.outputs(int(t)).get(llm) for t in rest]
    key = answer_keys(run, outs, top_type(run, probe))
    ranked = rest[np.argsort(key, kind="stable")]  # ties keep the random order
    n_h = min(n_h, cap_humans(len(rest), run.budget.humans_left))
    run.buy(ranked[:n_h], run.human, "audit")
    return llm
