"""Multi-label routing on MFRC at equal spend: QUORUM vs Random and the baselines that apply.

Runs every method on ``mfrc_multilabel`` (the shared data, read as a folder with no task
file) in both settings at budgets 0.1 / 0.3 / 0.5 / 0.7 and ``--seeds`` seeds, reads each
method's quality off its own cost-quality curve at the setting's money for each budget
(:func:`quorum.bench.equal_spend.equal_spend_frame`, the rule of ``quorum bench``'s
equal-spend table) and writes ``benchmarks/multilabel.md`` (and the raw rows as CSV).

Two sets:

* ``mfrc``: every item, the rule's panel (LLaMA-2 zero-shot 0.01, GPT-3.5 few-shot 0.03,
  fine-tuned GPT-3.5 0.05), human = gold;
* ``mfrc-heldout``: the items whose sha1(item_id) is odd, with another panel (LIWC logistic
  regression 0.01, fine-tuned BERT 0.03, fine-tuned GPT-3.5 0.05). No parameter of the
  router or of the kind was set by looking at it (every router runs with its defaults).

ARAIDA and SANT refuse the kind (their kNN / classifier runs over one label per item).

  PYTHONPATH=src python scripts/multilabel_bench.py --seeds 5 --out benchmarks/multilabel.md
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from quorum.bench.equal_spend import equal_spend_frame
from quorum.data.io import load_folder
from quorum.data.paths import data_dir
from quorum.routing.core.budget import budget_for_setting
from quorum.simulate import prepare, simulate_once

METHODS = ["quorum", "quorum-paper", "random", "cdi", "coannotating", "hypac"]
SETTINGS = ["dollars", "auditor"]
BUDGETS = [0.1, 0.3, 0.5, 0.7]
SHOWN = [0.3, 0.5]
PANELS = {
    "mfrc": {
        "llama2-luna-uncensored-gptq4bit:zeroshot": 0.01,
        "gpt-3.5-turbo-0301:fewshot-binary": 0.03,
        "gpt-3.5-turbo-0613-ft": 0.05,
    },
    "mfrc-heldout": {
        "liwc-logreg": 0.01,
        "bert-base-ft": 0.03,
        "gpt-3.5-turbo-0613-ft": 0.05,
    },
}
METRICS = ["jaccard", "micro_f1", "macro_f1", "exact_match"]


def heldout_mask(ids: pd.Series) -> np.ndarray:
    return np.array([int(hashlib.sha1(i.encode()).hexdigest(), 16) % 2 == 1 for i in ids])


def prepared_sets(folder: Path):
    full = load_folder(folder)
    base = prepare(full, PANELS["mfrc"])  # features once, on every text (no label used)
    yield "mfrc", base
    mask = heldout_mask(full.items["item_id"])
    sub = full.subset(full.items.loc[mask, "item_id"])
    f = SimpleNamespace(
        phi=base.phi[mask],
        embeddings=None if base.embeddings is None else base.embeddings[mask],
        names=base.feature_names,
        raw=None if base.raw_features is None else base.raw_features[mask],
    )
    yield "mfrc-heldout", prepare(sub, PANELS["mfrc-heldout"], features=f)


def run(seeds: int, folder: Path) -> pd.DataFrame:
    rows = []
    for name, prep in prepared_sets(folder):
        for method in METHODS:
            for setting in SETTINGS:
                for b in BUDGETS:
                    for seed in range(seeds):
                        row, _ = simulate_once(prep, method, setting, b, seed)
                        row["set"] = name
                        rows.append(row)
                print(f"{name} {method} {setting} done", file=sys.stderr, flush=True)
        T = prep.dataset.n_items
        c_h = prep.task.human_spec.price
        c_min = min(a.price for a in prep.task.llms)
        for setting in SETTINGS:
            for b in BUDGETS:
                lim, _ = budget_for_setting(setting, b, T, c_h, c_min, 0.0)
                rows.append({"set": name, "setting": setting, "budget": b, "level": lim.limit})
    return pd.DataFrame(rows)


def table(rows: pd.DataFrame, metric: str) -> tuple[str, dict]:
    runs = rows[rows["method"].notna()]
    lv = rows[rows["method"].isna()]
    levels = {(r.set, r.setting, float(r.budget)): float(r.level) for r in lv.itertuples()}
    stats = (
        runs.groupby(["set", "setting", "budget", "method"], sort=False)
        .agg(q=(metric, "mean"), q_sd=(metric, "std"), cost=("cost", "mean"))
        .reset_index()
        .rename(columns={"set": "dataset"})
    )
    eq = equal_spend_frame(stats, levels)
    eq = eq[eq["budget"].isin(SHOWN)]
    out = []
    verdicts = {}
    for (d, st, b), sub in eq.groupby(["dataset", "setting", "budget"], sort=False):
        sub = sub.set_index("method")
        q = float(sub.loc["quorum", "value"])
        others = sub.drop(index=["quorum"])
        ranked = others[others["status"].isin(["at", "less"])]
        best = ranked["value"].astype(float).idxmax()
        rand = float(sub.loc["random", "value"])
        cells = []
        for m in METHODS:
            r = sub.loc[m]
            v = f"{float(r['value']):.3f}"
            if r["status"] == "above":
                v = f"({v}, needs +{float(r['delta']):.1f})"
            elif r["status"] == "less":
                v = f"{v}*"
            cells.append(v)
        bv = float(ranked.loc[best, "value"])
        verdicts[(d, st, b)] = (q > rand, q >= bv - 0.005, q >= rand - 0.005)
        out.append(
            f"| {d} | {st} | {b:.1f} | {float(sub['level'].iloc[0]):.2f} | "
            + " | ".join(cells)
            + f" | {q - rand:+.3f} | {best} {q - bv:+.3f} |"
        )
    head = (
        "| set | setting | budget | money | " + " | ".join(METHODS) + " | QUORUM - random "
        "| best other, QUORUM - it |\n|" + "---|" * (len(METHODS) + 6)
    )
    return head + "\n" + "\n".join(out), verdicts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/multilabel.md"))
    ap.add_argument("--rows", type=Path, default=None, help="reuse a rows CSV of an earlier run")
    a = ap.parse_args()
    t0 = time.time()
    ran = a.rows is None
    folder = data_dir() / "mfrc_multilabel"
    if a.rows is not None:
        rows = pd.read_csv(a.rows)
    else:
        rows = run(a.seeds, folder)
        rows.drop(columns=["annotators"], errors="ignore").to_csv(
            a.out.with_suffix(".csv"), index=False
        )
    secs = time.time() - t0
    parts = [
        "# Multi-label routing on MFRC at equal spend",
        "",
        f"Generated by `PYTHONPATH=src python scripts/multilabel_bench.py --seeds {a.seeds}` "
        + (
            f"on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} ({secs / 60:.0f} min on 2 "
            "shared cores)"
            if ran
            else f"(tables re-read from `--rows {a.rows}`)"
        )
        + "; raw rows: `benchmarks/multilabel.csv`.",
        "",
        "Each method's quality is read off its own cost-quality curve (budgets "
        f"{BUDGETS}, mean of {a.seeds} seeds) at the money the setting offers at that budget "
        "(`quorum bench`'s equal-spend rule, `quorum.bench.equal_spend`): `*` a cheaper "
        "measured point; `(x, needs +m)` the method's cheapest point costs m more than the "
        "level (not ranked). QUORUM runs with its default random quality checks (their cost "
        "is in its spend). ARAIDA and SANT refuse multi-label tasks (their kNN/classifier "
        "over one label per item has no set form). `mfrc`: every item, panel LLaMA-2 "
        "zero-shot 0.01 / GPT-3.5 few-shot 0.03 / fine-tuned GPT-3.5 0.05, human = gold "
        "(0.10). `mfrc-heldout`: the items with an odd sha1(item_id), panel LIWC 0.01 / "
        "BERT 0.03 / fine-tuned GPT-3.5 0.05; nothing was tuned on it (every router at its "
        "defaults).",
        "",
    ]
    summary = []
    for metric in METRICS:
        md, verdicts = table(rows, metric)
        parts += [f"## {metric}", "", md, ""]
        n = len(verdicts)
        for which in ("mfrc", "mfrc-heldout"):
            mine = [v for k, v in verdicts.items() if k[0] == which]
            summary.append(
                f"- {metric}, {which}: QUORUM ahead of Random in {sum(v[0] for v in mine)}/"
                f"{len(mine)} cells (ahead or within 0.005: {sum(v[2] for v in mine)}); best or "
                f"within 0.005 of the best other method in {sum(v[1] for v in mine)}/{len(mine)}"
            )
        del n
    at = next(i for i, p in enumerate(parts) if p.startswith("## "))
    parts[at:at] = ["## Summary", "", *summary, ""]
    a.out.write_text("\n".join(parts) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
