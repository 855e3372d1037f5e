"""Summary audits at equal spend (issue 39): what an order of the human summaries gains over
Random once its cost is counted.

Two readings:

``replay SET [SET ...]``
    Exact, without seed noise, on the recorded summaries of the cheapest LLM: the per-item
    ROUGE-1 y_t against the human summary, and a human summary scored 1. Three orders, each
    against Random's expectation over all its draws at the same spend (R_bar + n/T (1 -
    R_bar) for n human summaries; where the money cannot pay the LLM on every item, the
    LLM on M / c_min random items):

    - ``bought-first``: the cheapest LLM on every item, then the humans on the lowest mean
      rank of the summary's ROUGE-1 against its source's Lead-3 and the Lead-3's against
      the rest (``summary_audit="lead"`` in the auditor setting);
    - ``half``: half of the humans on the least central sources without the LLM, the LLM on
      the others, the other half of the humans on the lowest mean rank among them;
    - ``central``: the humans on the least central sources, the LLM on the others
      (``summary_audit="central"``; dollars: the LLM's items most central first);
    - ``focused``: the same on the least focused sources (``summary_audit="focused"``,
      :func:`quorum.routing.quorum.audit.source_focus.source_focus`);
    - ``checked``: the first ``summary_check_share`` of the humans (at least
      ``summary_check_min``) on a random slice, then the others as ``focused`` where the
      focus's Spearman rho with the Lead-3's ROUGE-1 against the human summary on the slice
      passes the check, else at random (``summary_audit="checked"``,
      :mod:`quorum.routing.quorum.audit.signal_check`); ``checked-llm``: the same with the
      cheapest LLM's ROUGE-1 as the target, its summary bought on the slice (c_l each).
      Both are the mean over ``--draws`` random slices (seeded), not exact; the share of
      draws that followed the focus is printed.

    In the auditor setting the human count is B = round(b T) and the spend what each order
    buys; in dollars the money b T c_H, as many humans as it leaves.

``bench RANDOM_RUNS RUNS [RUNS ...]``
    From ``quorum bench`` runs: QUORUM - Random per cell at the same budget and at equal
    spend, Random read on its own cost-quality curve (the same seed, straight lines between
    its budgets, as ``quorum.bench.equal_spend`` reads a method) at QUORUM's spend.
    RANDOM_RUNS: a ``runs.csv`` with Random at budgets wide enough to reach QUORUM's spend.

  PYTHONPATH=src python scripts/summary_audit_costs.py replay summ-goyal22/cnn summ-summeval
  PYTHONPATH=src python scripts/summary_audit_costs.py bench RANDOM/runs.csv QUORUM/runs.csv
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd
from scipy.stats import rankdata, spearmanr

BUDGETS = (0.3, 0.5, 0.7)
SETTINGS = ("auditor", "dollars")


def item_signals(name: str) -> dict:
    """The cheapest LLM's per-item ROUGE-1, the two lead signals and the focus of
    ``name``."""
    from quorum.data.loaders import load_dataset
    from quorum.routing.quorum.audit.source_focus import lead_sentences, source_focus
    from quorum.simulate import select_task
    from quorum.tasks.summarization import rouge1_scorer

    ds = load_dataset(name)
    task = select_task(ds, None)
    cheap = min(task.llms, key=lambda a: a.price)
    score = rouge1_scorer(task.language)
    items = ds.items.set_index("item_id")
    ann = ds.annotations
    out = ann[ann["annotator"] == cheap.name].set_index("item_id")["output"]
    df = pd.DataFrame(
        {"text": items["text"].fillna("").astype(str), "ref": items[task.kind.reference_column]}
    ).join(out.rename("summ"))
    df = df[df["ref"].notna()]
    summ = df["summ"].where(df["summ"].map(lambda s: isinstance(s, str)), "")
    leads = [lead_sentences(t, 3) for t in df["text"]]
    y = np.array([score(o, r) if o else 0.0 for o, r in zip(summ, df["ref"], strict=True)])
    overlap = np.array(
        [score(o, ld) if o and ld else 0.0 for o, (ld, _) in zip(summ, leads, strict=True)]
    )
    central = np.array([score(ld, rest) if ld and rest else 0.0 for ld, rest in leads])
    refs = zip(leads, df["ref"], strict=True)
    lead_ref = np.array([score(ld, r) if ld else 0.0 for (ld, _), r in refs])
    return {
        "lead_ref": lead_ref,
        "y": y,
        "overlap": overlap,
        "central": central,
        "focused": source_focus(df["text"].tolist(), 3, score),
        "c_l": cheap.price,
        "c_h": task.human_spec.price,
    }


def _random_expected(y: np.ndarray, n: int, m: int) -> float:
    """Random's expected mean ROUGE-1 with ``n`` human summaries and ``m`` LLM ones."""
    return (n + m * y.mean()) / len(y)


def _order_value(sig: dict, order: str, setting: str, b: float) -> float:
    """QUORUM's order minus Random at the same spend, in ROUGE-1 points."""
    y, c_l, c_h = sig["y"], sig["c_l"], sig["c_h"]
    T = len(y)
    # least central (focused) first
    src = np.argsort(sig["focused" if order == "focused" else "central"], kind="stable")
    both = rankdata(sig["overlap"]) + rankdata(sig["central"])
    skip = {"bought-first": 0.0, "half": 0.5, "central": 1.0, "focused": 1.0}[order]
    if setting == "auditor":
        n = round(b * T)
        k = round(skip * n)
    else:
        money = b * T * c_h
        if money < T * c_l:  # no human; the LLM on what the money pays, best first
            m = int(money // c_l + 1e-9)
            q = np.zeros(T)
            q[src[::-1][:m]] = y[src[::-1][:m]]
            return 100 * (q.mean() - _random_expected(y, 0, m))
        n = int((money - T * c_l) / (c_h - skip * c_l) + 1e-9)
        k = round(skip * n)
        while n * c_h + (T - k) * c_l > money + 1e-9:
            n -= 1
            k = round(skip * n)
    humans = list(src[:k])
    rest = src[k:]
    humans += list(rest[np.argsort(both[rest], kind="stable")[: n - k]])
    q = y.copy()
    q[humans] = 1.0
    spend = n * c_h + (T - k) * c_l
    n_random = (spend - T * c_l) / (c_h - c_l)  # Random's humans at that spend
    return 100 * (q.mean() - y.mean() - n_random / T * (1 - y.mean()))


def _checked_value(
    sig: dict, setting: str, b: float, target: str, draws: int, seed: int = 0
) -> tuple[float, float]:
    """``summary_audit="checked"`` minus Random at the same spend, in ROUGE-1 points: the
    mean over ``draws`` random slices, and the share of them that followed the focus
    (defaults of :class:`~quorum.routing.quorum.params.QuorumParams`)."""
    from quorum.routing.quorum.audit.signal_check import check_passes, check_size
    from quorum.routing.quorum.params import QuorumParams

    cfg = QuorumParams()
    y, c_l, c_h, focus = sig["y"], sig["c_l"], sig["c_h"], sig["focused"]
    evidence = y if target == "llm" else sig["lead_ref"]
    T, ybar = len(y), sig["y"].mean()
    per_slice = c_l if target == "llm" else 0.0
    rng = np.random.default_rng(seed)
    vals, followed = [], 0
    for _ in range(draws):
        perm = rng.permutation(T)
        if setting == "auditor":
            n = round(b * T)
            s = check_size(n, cfg.summary_check_share, cfg.summary_check_min)
        else:
            money = b * T * c_h
            if money < T * c_l:  # no human to check: the LLM on random items, Random's plan
                return 0.0, 0.0
            n0 = int((money - T * c_l) / (c_h - c_l) + 1e-9)
            s = check_size(n0, cfg.summary_check_share, cfg.summary_check_min)
            n = s + int((money - s * (c_h + per_slice) - (T - s) * c_l) / (c_h - c_l) + 1e-9)
        sl, rest = perm[:s], perm[s:]
        _, passes = check_passes(focus[sl], evidence[sl], cfg.summary_check_z)
        if passes:
            followed += 1
            rest = rest[np.argsort(focus[rest], kind="stable")]
        q = y.copy()
        q[np.concatenate([sl, rest[: n - s]])] = 1.0
        spend = n * c_h + (T - n) * c_l + s * per_slice
        n_random = (spend - T * c_l) / (c_h - c_l)
        vals.append(100 * (q.mean() - ybar - n_random / T * (1 - ybar)))
    return float(np.mean(vals)), followed / draws


def replay(names: list[str], draws: int = 1000) -> None:
    for name in names:
        sig = item_signals(name)
        rho = spearmanr(sig["central"], sig["y"]).correlation
        rho_f = spearmanr(sig["focused"], sig["y"]).correlation
        print(
            f"== {name}: T={len(sig['y'])}, cheapest LLM's ROUGE-1 {sig['y'].mean():.3f}, "
            f"rho(centrality, ROUGE-1) = {rho:+.2f}, rho(focus, ROUGE-1) = {rho_f:+.2f}"
        )
        for order in ("bought-first", "half", "central", "focused"):
            cells = [_order_value(sig, order, st, b) for st in SETTINGS for b in BUDGETS]
            aud = " / ".join(f"{v:+.2f}" for v in cells[:3])
            dol = " / ".join(f"{v:+.2f}" for v in cells[3:])
            print(f"  {order:13s} auditor {aud} | dollars {dol}")
        for order, target in (("checked", "lead"), ("checked-llm", "llm")):
            got = [_checked_value(sig, st, b, target, draws) for st in SETTINGS for b in BUDGETS]
            aud = " / ".join(f"{v:+.2f}" for v, _ in got[:3])
            dol = " / ".join(f"{v:+.2f}" for v, _ in got[3:])
            share = " ".join(f"{f:.2f}" for _, f in got)
            print(f"  {order:13s} auditor {aud} | dollars {dol}  (followed the focus: {share})")


def bench(random_csv: str, runs: list[str]) -> None:
    rnd = pd.read_csv(random_csv)
    rnd = rnd[rnd["method"] == "random"]
    q = pd.concat([pd.read_csv(p) for p in runs])
    quorum, paired = q[q["method"] == "quorum"], q[q["method"] == "random"]
    rows = []
    for (ds, st, b), g in quorum.groupby(["dataset", "setting", "budget"]):
        same, equal = [], []
        for _, r in g.iterrows():
            curve = rnd[
                (rnd["dataset"] == ds) & (rnd["setting"] == st) & (rnd["seed"] == r["seed"])
            ]
            curve = curve.sort_values("cost")
            twin = paired[
                (paired["dataset"] == ds)
                & (paired["setting"] == st)
                & (paired["seed"] == r["seed"])
                & (paired["budget"] == b)
            ]
            if len(twin):
                same.append(100 * (r["rouge1"] - twin["rouge1"].iloc[0]))
            reached = r["cost"] <= curve["cost"].max() + 1e-9
            at = np.interp(r["cost"], curve["cost"], curve["rouge1"]) if reached else np.nan
            equal.append(100 * (r["rouge1"] - at))
        rows.append(
            {
                "dataset": ds,
                "setting": st,
                "budget": b,
                "same_budget": np.mean(same) if same else np.nan,
                "equal_spend": np.mean(equal),
                "equal_spend_sd": np.std(equal, ddof=1),
            }
        )
    t = pd.DataFrame(rows)
    print(t.round(3).to_string(index=False))
    e = t["equal_spend"]
    print(
        f"at equal spend: >= 1 point in {int((e >= 1).sum())} of {len(t)} cells, "
        f"behind in {int((e < 0).sum())}, not reached {int(e.isna().sum())}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("replay")
    r.add_argument("sets", nargs="+")
    r.add_argument("--draws", type=int, default=1000, help="random slices for checked")
    bch = sub.add_parser("bench")
    bch.add_argument("random_runs")
    bch.add_argument("runs", nargs="+")
    a = ap.parse_args(argv)
    if a.cmd == "replay":
        replay(a.sets, a.draws)
    else:
        bench(a.random_runs, a.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
