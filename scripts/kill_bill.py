"""Issue 37: what five ``kill -9`` cost, against an uninterrupted run of the same project.

Runs the project of ``tests/test_hard_to_break_kill.py`` (SST-2 items, SmolLM2 on
llama-cpp-python's server behind a counting proxy, fixed price per call, the gold column as
the human) once without a kill and once killed ``--kills`` times and resumed, and prints
per run: requests the endpoint received, calls the ledger charged, the bill (requests x
price + humans) against the budget, calls written off (cut off after their request left)
and never sent, and the accuracy of the final labels against the gold labels.

    python scripts/kill_bill.py --kills 5 --out /tmp/kill-bill
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import pandas as pd  # noqa: E402

from live_servers.fixtures import smollm2_server  # noqa: E402
from quorum.data.paths import data_dir  # noqa: E402
from test_hard_to_break_kill import LIMIT, N_ITEMS, PRICE, kill_and_resume  # noqa: E402


def accuracy(folder: Path, data: Path) -> float:
    """Share of the items whose final label is the gold label (no label: wrong)."""
    con = sqlite3.connect(folder / ".quorum" / "ledger.sqlite")
    try:
        labels = dict(
            con.execute(
                "SELECT item_id, output FROM labels WHERE run_id = (SELECT max(run_id) FROM "
                "labels) AND pass = (SELECT max(pass) FROM labels WHERE run_id = "
                "(SELECT max(run_id) FROM labels))"
            ).fetchall()
        )
    finally:
        con.close()
    gold = pd.read_csv(data / "sst2_dev" / "sst2_dev.csv", dtype=str).head(N_ITEMS)
    right = sum(labels.get(i) == g for i, g in zip(gold["idx"], gold["label"], strict=True))
    return right / len(gold)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="kill-bill-"))
    out.mkdir(parents=True, exist_ok=True)
    data = data_dir(required=True)
    rows = []
    with smollm2_server(out) as (api_base, _log):
        for kills in (0, args.kills):
            got = kill_and_resume(out / f"kills-{kills}", data, api_base, kills)
            got.pop("proj")
            bill = got["received"] * PRICE + got["human"]
            rows.append({**got, "bill": round(bill, 6), "budget": LIMIT,
                         "accuracy": round(accuracy(out / f"kills-{kills}", data), 3)})  # fmt: skip
    for r in rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
