"""Issue 38's scripted team (finding 7), repeatable: does the live estimate hold, and are the
labels at least as good as the cheapest LLM's answers alone?

A file-queue team of three people answering while ``quorum annotate --wait`` waits, right
95 %, 85 % and 60 % of the time (a coin per person and item, the other label otherwise),
``labels_per_item = 2``; two stub LLMs (local models, ``kind = "model"``) right 70 %
(price 0.0005) and 80 % (price 0.001) of the time, a human label at 0.02; default
settings otherwise (the QUORUM router, the default checks), ``features = "light"``, budget
2.00, 200 SST-2 items (the gold labels kept from QUORUM unless ``--gold-column``: a team
with no control items), one run per seed (the project's seed, the stubs' and the people's
coins).

    PYTHONPATH=src python scripts/team_checks_scenario.py --repo . --out /tmp/after
    PYTHONPATH=src python scripts/team_checks_scenario.py --repo /tmp/base --out /tmp/before

``--repo`` is the checkout whose ``src`` runs ``quorum annotate`` (the code under test);
this script itself only needs pandas, PyYAML and the scripted team of
``tests/live_servers/scripted_team.py``. Per run it prints: the checks bought,
the live 95 % interval and its width, whether it covers the labels' true accuracy (against
gold), that accuracy, the cheapest LLM's accuracy alone on all items, the spend, the human
tasks and whether the run printed the "not made" warning; then the means.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from live_servers.scripted_team import FileQueueTeam

NAMES = {"0": "negative", "1": "positive"}
#: the people and how often each is right
PEOPLE = {"ann": 0.95, "bea": 0.85, "cat": 0.60}
#: the stub LLMs: (how often right, price)
STUBS = {"cheap": (0.70, 0.0005), "dear": (0.80, 0.001)}
HUMAN_PRICE = 0.02


def coin(*parts: object) -> float:
    """A uniform number in [0, 1) from the parts (the same parts, the same number)."""
    h = hashlib.blake2b("\x00".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2**64


def flip(y: str) -> str:
    return "1" if y == "0" else "0"


def stub_answer(name: str, seed: int, text: str, gold: str) -> str:
    p, _ = STUBS[name]
    return gold if coin("stub", name, seed, text) < p else flip(gold)


STUB_MODULE = '''"""Stub LLMs of the scenario: right with a fixed probability (generated)."""
import hashlib
import json
from pathlib import Path

_GOLD = json.loads((Path(__file__).parent / "stub_gold.json").read_text())
SEED = {seed}


def _coin(*parts):
    h = hashlib.blake2b("\\x00".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2**64


def _answer(name, p, text):
    y = _GOLD[text]
    return y if _coin("stub", name, SEED, text) < p else ("1" if y == "0" else "0")


def cheap(text):
    return _answer("cheap", {p_cheap}, text)


def dear(text):
    return _answer("dear", {p_dear}, text)
'''


class Team(FileQueueTeam):
    """Three people reading pending.csv and appending to answers.csv: each pending item
    that still wants labels goes to the next person in turn who has not labelled it; the
    person is right with their probability (a coin per seed, person and item)."""

    def __init__(self, queue: Path, gold: dict[str, str], seed: int) -> None:
        self.gold, self.seed = gold, seed
        super().__init__(queue, self.label, list(PEOPLE))

    def label(self, who: str, item: str) -> str:
        y = self.gold[item]
        return NAMES[y if coin("person", who, self.seed, item) < PEOPLE[who] else flip(y)]


def project(
    out: Path, data: Path, n: int, budget: float, seed: int, extra: dict, gold_column: bool
) -> Path:
    cfg = {
        "name": "team38",
        "seed": seed,
        "features": "light",
        "items": {"path": str(data), "id_column": "idx", "text_column": "sentence",
                  "limit": n, **({"gold_column": "label"} if gold_column else {})},
        "task": {"type": "classification", "labels": ["0", "1"], "label_names": NAMES,
                 "instructions": "Is the movie review positive?"},
        "budget": {"limit": budget, **extra.get("budget", {})},
        "annotators": [
            {"name": "cheap", "kind": "model", "model": "stub_llms:cheap",
             "price": STUBS["cheap"][1]},
            {"name": "dear", "kind": "model", "model": "stub_llms:dear",
             "price": STUBS["dear"][1]},
            {"name": "team", "kind": "human", "price": HUMAN_PRICE},
        ],
        "humans": {"labels_per_item": 2, "team_size": 3, **extra.get("humans", {})},
    }  # fmt: skip
    p = out / "project.yaml"
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return p


def one_run(args: argparse.Namespace, seed: int, df: pd.DataFrame) -> dict:
    out = (args.out / f"seed{seed}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    gold = dict(zip(df["idx"], df["label"], strict=True))
    text_gold = dict(zip(df["sentence"], df["label"], strict=True))
    (out / "stub_gold.json").write_text(json.dumps(text_gold))
    (out / "stub_llms.py").write_text(STUB_MODULE.format(
        seed=seed, p_cheap=STUBS["cheap"][0], p_dear=STUBS["dear"][0]))  # fmt: skip
    extra = json.loads(args.extra) if args.extra else {}
    proj = project(out, args.data, args.n, args.budget, seed, extra, args.gold_column)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(args.repo).resolve() / "src"), str(out)])
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    team = Team(out / "human_queue", gold, seed)
    t0 = time.monotonic()
    try:
        with (out / "run.log").open("w") as fh:
            rc = subprocess.run(
                [sys.executable, "-m", "quorum.cli.main", "annotate", str(proj), "--wait",
                 str(args.wait)], stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=str(out),
            ).returncode  # fmt: skip
    finally:
        team.close()
    secs = time.monotonic() - t0
    log = (out / "run.log").read_text()
    st = subprocess.run([sys.executable, "-m", "quorum.cli.main", "status", str(proj), "--json"],
                        env=env, capture_output=True, text=True, cwd=str(out))  # fmt: skip
    status = json.loads(st.stdout) if st.returncode == 0 else {}
    exp = out / "labels.jsonl"
    subprocess.run([sys.executable, "-m", "quorum.cli.main", "export", str(proj), "-f", "jsonl",
                    "-o", str(exp)], env=env, capture_output=True, cwd=str(out))  # fmt: skip
    lab = pd.read_json(exp, lines=True, dtype={"item_id": str, "label": str})
    y = lab["item_id"].map(gold)
    right = lab["label"].astype(str).values == y.values
    acc = float(right.mean())
    cheap = [stub_answer("cheap", seed, t, g) == g for t, g in zip(df["sentence"], df["label"],
                                                                   strict=True)]  # fmt: skip
    by = lab["labelled_by"].map(lambda b: "label model" in (b or []))
    q = status.get("quality") or {}
    lo, hi = q.get("quality_low"), q.get("quality_high")
    row = {
        "seed": seed, "rc": rc, "seconds": round(secs, 1),
        "checks": q.get("quality_n_checks", 0), "pending_checks": q.get("pending_checks"),
        "estimate": q.get("quality_estimate"), "low": lo, "high": hi,
        "width": None if lo is None else round(hi - lo, 3),
        "accuracy": round(acc, 3),
        "covers": None if lo is None else bool(lo - 1e-9 <= acc <= hi + 1e-9),
        "cheapest_alone": round(float(sum(cheap)) / len(cheap), 3),
        "label_model_items": int(by.sum()),
        "label_model_acc": round(float(right[by.values].mean()), 3) if by.any() else None,
        "spent": status.get("spent"),
        "human_tasks": status.get("human_tasks"),
        "not_made_warning": "were not made" in log,
        "charge_interrupted_hint": "charge_interrupted" in log,
        "llm_sample": (status.get("router_decisions") or {}).get("llm_sample"),
        "start_lines": [ln for ln in log.splitlines() if "check" in ln.lower()][:6],
    }  # fmt: skip
    (out / "row.json").write_text(json.dumps(row, indent=2, default=str))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", required=True, help="checkout whose src/ runs quorum annotate")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4, 5])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--budget", type=float, default=2.0)
    ap.add_argument("--wait", type=float, default=900.0)
    ap.add_argument("--extra", default="", help='project keys as JSON, e.g. {"humans": {...}}')
    ap.add_argument(
        "--gold-column",
        action="store_true",
        help="give QUORUM the gold column (control items on every item)",
    )
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data/sst2_dev/sst2_dev.csv"))
    args = ap.parse_args()
    df = pd.read_csv(args.data, dtype=str).head(args.n)
    rows = []
    for seed in args.seeds:
        r = one_run(args, seed, df)
        rows.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "start_lines"}, default=str),
              flush=True)  # fmt: skip
    t = pd.DataFrame(rows)
    cols = ["seed", "checks", "low", "high", "width", "accuracy", "covers", "cheapest_alone",
            "label_model_items", "label_model_acc", "spent", "not_made_warning"]  # fmt: skip
    print(t[cols].to_string(index=False))
    summary = {
        "runs": len(t),
        "covers": int(t["covers"].fillna(False).sum()),
        "mean_width": round(float(t["width"].mean()), 3) if t["width"].notna().any() else None,
        "mean_checks": round(float(t["checks"].fillna(0).mean()), 2),
        "below_cheapest": int((t["accuracy"] < t["cheapest_alone"]).sum()),
        "mean_accuracy": round(float(t["accuracy"].mean()), 3),
    }
    print(json.dumps(summary))
    (args.out / "summary.json").write_text(json.dumps({"rows": rows, "summary": summary},
                                                      indent=2, default=str))  # fmt: skip


if __name__ == "__main__":
    main()
