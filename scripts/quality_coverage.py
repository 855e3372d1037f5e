"""Coverage, width and cost of the quality estimate on the bench's datasets (docs/quality.md).

For every dataset x setting x budget x seed, QUORUM's default runs twice on the same
budget: without checks, and with :class:`~quorum.quality.checks.QualityChecks` (the router
on the budget less the checks' money, then the random checks). One JSON row per run pair:
the true quality of both (gold), the estimate and its 95 % interval (t and betting rules,
from the same checks), the checks' number and cost.

    nice -n 10 python scripts/quality_coverage.py --out /tmp/quality_cov.jsonl
    python scripts/quality_coverage.py --report /tmp/quality_cov.jsonl

Rows already in ``--out`` are skipped, so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tomllib
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def family(name: str) -> str:
    if name.startswith("summ-"):
        return "summarization"
    return name.split("/")[0]


def default_plan() -> dict:
    cfg = tomllib.loads((ROOT / "src/quorum/bench/default.toml").read_text())["main"]
    return cfg


_PREP: dict = {}


def run_dataset(args: tuple) -> list[dict]:
    name, settings, budgets, seeds, checks_kw, done, plain_too = args
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from quorum.data.loaders import load_dataset
    from quorum.methods import make_router
    from quorum.quality.checks import QualityChecks
    from quorum.quality.estimators import estimate_from
    from quorum.simulate import make_problem, prepare, score

    if name not in _PREP:
        _PREP.clear()
        _PREP[name] = prepare(load_dataset(name))
    prep = _PREP[name]
    metric = "rouge1" if "reference" in prep.dataset.items.columns else "accuracy"
    out = []
    for setting in settings:
        for b in budgets:
            for seed in seeds:
                key = f"{name}|{setting}|{b}|{seed}"
                if key in done:
                    continue
                t0 = time.perf_counter()
                plain = None
                if plain_too:
                    r = make_router("quorum")
                    problem, budget = make_problem(prep, setting, b, r)
                    plain = r.route(problem, prep.source, budget, seed=seed)
                r = make_router("quorum")
                problem, budget = make_problem(prep, setting, b, r)
                checked, est = QualityChecks(**checks_kw).route(
                    r, problem, prep.source, budget, seed
                )
                assert checked.cost <= budget.limit + 1e-9
                inputs = checked.info["quality_inputs"]
                bet = estimate_from(inputs, 0.95, "betting")
                row = {
                    "key": key,
                    "dataset": name,
                    "family": family(name),
                    "setting": setting,
                    "budget": b,
                    "seed": seed,
                    "n_items": prep.dataset.n_items,
                    "metric": metric,
                    "quality_without": None if plain is None else score(prep, plain)[metric],
                    "quality_with": score(prep, checked)[metric],
                    "cost_without": None if plain is None else plain.cost,
                    "cost_with": checked.cost,
                    "budget_limit": budget.limit,
                    "n_checks": est.n_checks,
                    "n_known": est.n_known,
                    "check_cost": est.check_cost,
                    "quality_estimate": est.estimate,
                    "quality_low": est.low,
                    "quality_high": est.high,
                    "betting_low": bet.low,
                    "betting_high": bet.high,
                    "model_fitted": checked.info["quality_model"]["fitted"],
                    "seconds": round(time.perf_counter() - t0, 3),
                }
                out.append(row)
    return out


def bench_tables() -> dict[tuple[str, str, float], float]:
    """QUORUM's mean quality per (dataset, setting, budget) in the bench's main tables."""
    import re

    out: dict[tuple[str, str, float], float] = {}
    for setting in ("auditor", "dollars"):
        ds, cols = None, []
        path = ROOT / f"benchmarks/tables/main_{setting}.md"
        for line in path.read_text().splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| Dataset"):
                cols = cells
            if not line.startswith("| ") or line.startswith("| Dataset"):
                continue
            if cells[0]:
                ds = cells[0].split("<br>")[0]
            if cells[1] == "QUORUM" and ds is not None and len(cells) == len(cols):
                for b in (0.1, 0.3, 0.5, 0.7):
                    cell = cells[cols.index(f"{round(b * 100)}% Acc/R-1")]
                    v = re.sub(r"\*|<u>|</u>", "", cell).split("±")[0].strip()
                    out[(ds, setting, b)] = float(v)
    return out


def equal_spend_standing(loss: dict[tuple[str, str, float], float]) -> str:
    """Cells of benchmarks/tables/equal_spend.md where QUORUM is best or within 0.005 of the
    best compared baseline, as published and with each cell's measured loss of the checks
    taken off QUORUM's value (the checks spend the same money, so the spend level holds)."""
    import re

    num = re.compile(r"-?\d+\.\d+")
    text = (ROOT / "benchmarks/tables/equal_spend.md").read_text().splitlines()
    setting, cols, ds = None, [], ""
    counts = {"published": [0, 0], "with checks": [0, 0]}
    for line in text:
        if line.startswith("### Auditor"):
            setting = "auditor"
        elif line.startswith("### Dollars"):
            setting = "dollars"
        elif line.startswith("### "):
            setting = None
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if setting is None or not line.startswith("| "):
            continue
        if cells[0] == "Dataset":
            cols = cells
            continue
        if len(cells) != len(cols) or not cells[1].endswith("%"):
            continue
        ds = cells[0] or ds
        vals = {}
        for c, v in zip(cols[3:], cells[3:], strict=True):
            if v.startswith("needs") or c == "QUORUM (paper preset)":
                continue
            m = num.search(v)
            if m:
                vals[c] = float(m.group())
        if "QUORUM" not in vals:
            continue
        best = max((v for c, v in vals.items() if c != "QUORUM"), default=None)
        if best is None:
            continue
        key = (ds, setting, int(cells[1].rstrip("%")) / 100)
        q = vals["QUORUM"]
        for name, v in (("published", q), ("with checks", q - loss.get(key, 0.0))):
            counts[name][1] += 1
            counts[name][0] += round(v, 3) >= round(best, 3) - 0.005
    return "; ".join(f"{k}: {a} of {b} cells best or within 0.005" for k, (a, b) in counts.items())


def report(path: Path) -> str:
    import pandas as pd

    df = pd.read_json(path, lines=True)
    t = df["quality_with"]
    df["cover_t"] = (df["quality_low"] <= t + 1e-9) & (t <= df["quality_high"] + 1e-9)
    df["cover_bet"] = (df["betting_low"] <= t + 1e-9) & (t <= df["betting_high"] + 1e-9)
    df["width_t"] = df["quality_high"] - df["quality_low"]
    df["width_bet"] = df["betting_high"] - df["betting_low"]
    df["loss"] = df["quality_without"] - df["quality_with"]
    lines = [f"{len(df)} run pairs, {df['dataset'].nunique()} datasets\n"]
    g = df.groupby(["setting", "family"])[["cover_t", "cover_bet"]].mean()
    g["runs"] = df.groupby(["setting", "family"]).size()
    lines.append("coverage of the 95 % interval, per setting and dataset family\n")
    lines.append(g.round(3).to_string() + "\n")
    per = df.groupby(["setting", "dataset"])[["cover_t", "cover_bet"]].mean()
    worst = per.sort_values("cover_t").head(5)
    lines.append("worst datasets (t interval)\n")
    lines.append(worst.round(3).to_string() + "\n")
    w = df.groupby(["setting", "budget"])[["width_t", "width_bet", "n_checks"]].mean()
    lines.append("mean width and number of checks per budget\n")
    lines.append(w.round(3).to_string() + "\n")
    df["budget"] = df["budget"].round(6)
    cells = df.groupby(["dataset", "setting", "budget"])[["quality_without", "quality_with"]]
    cm = cells.mean()
    tables = bench_tables()
    missing = cm["quality_without"].isna()
    cm.loc[missing, "quality_without"] = [tables.get(k, float("nan")) for k in cm.index[missing]]
    lines.append(
        f"quality without checks: {int((~missing).sum())} cells run here, "
        f"{int(missing.sum())} from benchmarks/tables/main_*.md\n"
    )
    loss = (cm["quality_without"] - cm["quality_with"]) * 100
    lines.append(
        f"cost of the checks at equal spend: mean loss over {len(cm)} cells "
        f"{loss.mean():.2f} points (median {loss.median():.2f}, worst {loss.max():.2f}); "
        f"per setting: {loss.groupby(level=1).mean().round(2).to_dict()}; "
        f"per budget: {loss.groupby(level=2).mean().round(2).to_dict()}\n"
    )
    cell_loss = (cm["quality_without"] - cm["quality_with"]).dropna().to_dict()
    standing = equal_spend_standing(cell_loss)
    lines.append(
        "equal-spend standing (benchmarks/tables/equal_spend.md, QUORUM less each cell's "
        f"measured loss; cells not measured here keep their value): {standing}\n"
    )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", type=Path, default=Path("/tmp/quality_coverage.jsonl"))
    p.add_argument("--report", type=Path, default=None)
    p.add_argument("--datasets", nargs="*", default=None)
    p.add_argument("--settings", nargs="*", default=None)
    p.add_argument("--budgets", nargs="*", type=float, default=None)
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument(
        "--no-plain",
        dest="plain",
        action="store_false",
        help="skip the runs without checks; the report takes QUORUM's quality without them "
        "from benchmarks/tables/main_*.md (the bench's QUORUM row, 3 decimals)",
    )
    p.add_argument("--check", action="append", default=[], help="QualityChecks KEY=VALUE")
    a = p.parse_args()
    if a.report is not None:
        print(report(a.report))
        return
    plan = default_plan()
    datasets = a.datasets or plan["datasets"]
    settings = a.settings or plan["settings"]
    budgets = a.budgets or plan["budgets"]
    kw = {}
    for kv in a.check:
        k, _, v = kv.partition("=")
        kw[k] = json.loads(v) if v[:1].isdigit() or v in ("true", "false") else v
    done: set[str] = set()
    if a.out.exists():
        done = {json.loads(line)["key"] for line in a.out.read_text().splitlines() if line}
    tasks = []
    last = ("mmlu-redux", "imdb-mlapi")  # the largest: last, so the rest report early
    for name in sorted(datasets, key=lambda d: (d in last, last.index(d) if d in last else 0)):
        n = a.seeds or (plan["summarization_seeds"] if name.startswith("summ-") else plan["seeds"])
        for st in settings:
            for b in budgets:
                tasks.append((name, [st], [b], list(range(n)), kw, done, a.plain))
    with get_context("spawn").Pool(a.workers) as pool, a.out.open("a") as fh:
        for rows in pool.imap(run_dataset, tasks):
            for r in rows:
                fh.write(json.dumps(r) + "\n")
            fh.flush()
            if rows:
                r0 = rows[0]
                print(f"{r0['dataset']} {r0['setting']} {r0['budget']}: {len(rows)}", flush=True)
    print(report(a.out))


if __name__ == "__main__":
    main()
