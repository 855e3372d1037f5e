"""MMLU-Redux on a dev / held-out split of its subjects (issue 39): QUORUM and the baselines.

Usage:
  python scripts/mmlu_subject_split.py run OUT.jsonl [--split dev|held|all] \
      [--methods quorum,araida,random] [--label quorum] [--params '{"k": 1}'] \
      [--settings dollars] [--budgets 0.3,0.5] [--seeds 3]
  python scripts/mmlu_subject_split.py report OUT.jsonl

The split: the dataset's ``subject`` column, sorted; even positions are ``dev`` (tune
there), odd positions ``held`` (read only to confirm). Each half is routed as its own
dataset (a new user with those questions): the items, annotations and the rows of the
features of the whole set (features are per item; their scaling is the whole set's).
Rows already in OUT.jsonl (label, split, setting, budget, seed) are skipped.
The report prints per (split, setting, budget) each label's mean accuracy, mean spend
and human labels over the seeds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pandas as pd


def subject_halves(items: pd.DataFrame) -> dict[str, list[str]]:
    """Subjects by parity in sorted order: ``dev`` (even) and ``held`` (odd)."""
    subjects = sorted(items["subject"].astype(str).unique())
    return {"dev": subjects[0::2], "held": subjects[1::2], "all": subjects}


def prepare_split(prep, split: str):
    """The Prepared of one half: its items, annotations and feature rows."""
    from quorum.routing.core.replay import RecordedSource

    items = prep.dataset.items
    keep = items["subject"].astype(str).isin(subject_halves(items)[split]).to_numpy()
    ds = prep.dataset.subset(items.loc[keep, "item_id"])
    emb = prep.embeddings[keep] if prep.embeddings is not None else None
    raw = prep.raw_features[keep] if prep.raw_features is not None else None
    src = RecordedSource(ds, embed_fn=prep.source.embed_fn)
    return dataclasses.replace(
        prep, dataset=ds, phi=prep.phi[keep], embeddings=emb, source=src, raw_features=raw
    )


def run(args: argparse.Namespace) -> None:
    from quorum.simulate import prepare, simulate_once

    out = Path(args.out)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["label"], r["split"], r["setting"], r["budget"], r["seed"]))
    full = prepare("mmlu-redux")
    params = json.loads(args.params) if args.params else {}
    for split in args.split.split(","):
        prep = prepare_split(full, split) if split != "all" else full
        for method in args.methods.split(","):
            label = args.label if method == "quorum" else method
            for setting in args.settings.split(","):
                for frac in [float(b) for b in args.budgets.split(",")]:
                    for seed in range(args.seeds):
                        key = (label, split, setting, frac, seed)
                        if key in done:
                            continue
                        row, res = simulate_once(
                            prep, method, setting, frac, seed, params if method == "quorum" else {}
                        )
                        rec = {
                            "label": label,
                            "split": split,
                            "setting": setting,
                            "budget": frac,
                            "seed": seed,
                            "n_items": prep.dataset.n_items,
                            "q": row["accuracy"],
                            "cost": row["cost"] + float(row.get("unpaid_cost") or 0.0),
                            "human_labels": row["human_labels"],
                            "strategy": res.info.get("dollars_strategy"),
                        }
                        with out.open("a") as f:
                            f.write(json.dumps(rec) + "\n")
                        done.add(key)
                        print(json.dumps(rec), flush=True)


def report(args: argparse.Namespace) -> None:
    rows = [json.loads(x) for x in Path(args.out).read_text().splitlines()]
    df = pd.DataFrame(rows)
    g = df.groupby(["split", "setting", "budget", "label"])
    t = g.agg(
        q=("q", "mean"),
        sd=("q", "std"),
        cost=("cost", "mean"),
        humans=("human_labels", "mean"),
        seeds=("seed", "count"),
    ).reset_index()
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(t.round(4).to_string(index=False))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--split", default="dev")
    r.add_argument("--methods", default="quorum,araida,random")
    r.add_argument("--label", default="quorum")
    r.add_argument("--params", default="")
    r.add_argument("--settings", default="dollars")
    r.add_argument("--budgets", default="0.3,0.5")
    r.add_argument("--seeds", type=int, default=3)
    p = sub.add_parser("report")
    p.add_argument("out")
    args = ap.parse_args()
    run(args) if args.cmd == "run" else report(args)


if __name__ == "__main__":
    main()
