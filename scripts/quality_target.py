"""Target mode on the bench's datasets (docs/quality.md).

For every dataset x setting x seed, QUORUM's default climbs the budget ladder of
:class:`~quorum.quality.target.TargetQuality` up to a ceiling (default: the bench's 70 %)
with a target taken from QUORUM's own mean quality at a lower budget (default 30 %, read
from the bench's tables, benchmarks/tables/main_*.md), at 90 % confidence. One JSON row
per run: stopped early or not, the true quality (gold) of the labels at the stop, the
money spent and saved against the ceiling.

    nice -n 10 python scripts/quality_target.py --out /tmp/quality_target.jsonl
    python scripts/quality_target.py --report /tmp/quality_target.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

_PREP: dict = {}
BIG = ("mmlu-redux", "imdb-mlapi")


def run_cell(args: tuple) -> list[dict]:
    name, setting, ceiling, target, confidence, seeds, done = args
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from quorum.data.loaders import load_dataset
    from quorum.quality.target import TargetQuality
    from quorum.simulate import prepare, simulate_once

    if name not in _PREP:
        _PREP.clear()
        _PREP[name] = prepare(load_dataset(name))
    prep = _PREP[name]
    rows = []
    for seed in seeds:
        key = f"{name}|{setting}|{ceiling}|{target}|{seed}"
        if key in done:
            continue
        row, res = simulate_once(
            prep, "quorum", setting, ceiling, seed, target=TargetQuality(target, confidence)
        )
        metric = "rouge1" if "rouge1" in row else "accuracy"
        row = {k: v for k, v in row.items() if not isinstance(v, list)}
        row.update({"key": key, "metric": metric, "true_quality": row[metric]})
        row["steps"] = res.info["target_steps"]
        rows.append(row)
    return rows


def report(path: Path) -> str:
    import pandas as pd

    df = pd.read_json(path, lines=True)
    early = df.loc[df["target_stopped_early"]]
    ok = early["true_quality"] >= early["target_quality"] - 1e-9
    reached = df.loc[df["target_reached"]]
    ok_all = reached["true_quality"] >= reached["target_quality"] - 1e-9
    saved = (df["target_saved"] / df["target_ceiling"]).mean()
    lines = [
        f"{len(df)} target runs, {df['dataset'].nunique()} datasets, confidence "
        f"{df['target_confidence'].iloc[0]}",
        f"stopped early: {len(early)} runs; true quality >= target in {ok.mean():.3f} of them",
        f"reached (any look): {len(reached)}; true quality >= target in {ok_all.mean():.3f}",
        f"money saved against the ceiling: {saved:.3f} of it on average over all runs, "
        f"{(early['target_saved'] / early['target_ceiling']).mean():.3f} in early stops",
        "",
        "per setting (runs, early stops, right at stop, saved share):",
    ]
    for st, g in df.groupby("setting"):
        e = g.loc[g["target_stopped_early"]]
        right = (e["true_quality"] >= e["target_quality"] - 1e-9).mean() if len(e) else float("nan")
        lines.append(
            f"  {st}: {len(g)}, {len(e)}, {right:.3f}, "
            f"{(g['target_saved'] / g['target_ceiling']).mean():.3f}"
        )
    miss = early.loc[~ok, ["dataset", "setting", "seed", "target_quality", "true_quality"]]
    if len(miss):
        lines += ["", "early stops below the target:", miss.to_string(index=False)]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", type=Path, default=Path("/tmp/quality_target.jsonl"))
    p.add_argument("--report", type=Path, default=None)
    p.add_argument("--datasets", nargs="*", default=None)
    p.add_argument("--settings", nargs="*", default=["auditor", "dollars"])
    p.add_argument("--ceiling", type=float, default=0.7)
    p.add_argument("--target-budget", type=float, default=0.3)
    p.add_argument("--confidence", type=float, default=0.9)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args()
    if a.report is not None:
        print(report(a.report))
        return
    sys.path.insert(0, str(ROOT / "scripts"))
    from quality_coverage import bench_tables

    targets = {
        (d, st): q for (d, st, b), q in bench_tables().items() if b == round(a.target_budget, 6)
    }
    done: set[str] = set()
    if a.out.exists():
        done = {json.loads(line)["key"] for line in a.out.read_text().splitlines() if line}
    tasks = []
    for (name, st), tq in sorted(targets.items(), key=lambda kv: kv[0][0] in BIG):
        if (a.datasets and name not in a.datasets) or st not in a.settings:
            continue
        seeds = list(range(a.seeds if not name.startswith("summ-") else min(a.seeds, 3)))
        tasks.append((name, st, a.ceiling, float(tq), a.confidence, seeds, done))
    with get_context("spawn").Pool(a.workers) as pool, a.out.open("a") as fh:
        for rows in pool.imap(run_cell, tasks):
            for r in rows:
                fh.write(json.dumps(r) + "\n")
            fh.flush()
            if rows:
                print(f"{rows[0]['dataset']} {rows[0]['setting']}: {len(rows)}", flush=True)
    print(report(a.out))


if __name__ == "__main__":
    main()
