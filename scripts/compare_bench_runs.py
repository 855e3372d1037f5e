"""Compare two bench run caches run by run: are the results of a refactor unchanged?

Usage::

    python scripts/compare_bench_runs.py BEFORE_OUT AFTER_OUT [--json]

``BEFORE_OUT`` and ``AFTER_OUT`` are ``quorum bench --out`` folders (their
``cache/runs.jsonl`` is read) or ``runs.jsonl`` files. Runs are matched by what they are
(dataset, method, setting, budget, seed, variant, parameters, human, human-label budget),
not by their cache key, because the key hashes the code and so differs between commits.
Every result field both rows have (accuracy, ROUGE-1, MCA, cost, human labels, calls, ...)
is compared exactly; timings (``*_seconds``), worker ids and keys are not results and are
skipped. Runs
only one side has (a method added since, say) are counted and listed by method, not
compared. Exit status 1 if any matched run differs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

IDENTITY = (
    "dataset",
    "method",
    "setting",
    "budget",
    "seed",
    "variant",
    "params",
    "human",
    "human_labels_budget",
)
NOT_RESULTS = {"key", "worker", "wall_seconds", "cpu_seconds", "traceback", "experiments"}


def load_runs(path: Path) -> dict[tuple, dict[str, Any]]:
    """The last record of each run identity in a runs.jsonl (the cache appends)."""
    if path.is_dir():
        path = path / "cache" / "runs.jsonl"
    runs: dict[tuple, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            rec = json.loads(line)
            if "method" not in rec or "dataset" not in rec:
                continue  # not a run record (datasets, overhead)
            runs[tuple(json.dumps(rec.get(k), sort_keys=True) for k in IDENTITY)] = rec
    return runs


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def compare(before: dict[tuple, dict], after: dict[tuple, dict]) -> dict[str, Any]:
    common = before.keys() & after.keys()
    differ: list[dict[str, Any]] = []
    fields: Counter[str] = Counter()
    for ident in sorted(common):
        a, b = before[ident], after[ident]
        keys = {k for k in (a.keys() & b.keys()) - NOT_RESULTS if not k.endswith("_seconds")}
        bad = {k: (a[k], b[k]) for k in sorted(keys) if not same(a[k], b[k])}
        fields.update(keys)
        if bad:
            differ.append({"run": dict(zip(IDENTITY, ident, strict=True)), "fields": bad})
    only = {
        "before": Counter(before[i]["method"] for i in before.keys() - after.keys()),
        "after": Counter(after[i]["method"] for i in after.keys() - before.keys()),
    }
    return {
        "matched": len(common),
        "identical": len(common) - len(differ),
        "different": differ,
        "fields_compared": sorted(fields),
        "only_before_by_method": dict(only["before"]),
        "only_after_by_method": dict(only["after"]),
        "errors": {
            side: sum(r.get("status") == "error" for r in runs.values())
            for side, runs in (("before", before), ("after", after))
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--json", action="store_true", help="print the whole comparison as JSON")
    args = ap.parse_args(argv)
    out = compare(load_runs(args.before), load_runs(args.after))
    if args.json:
        print(json.dumps(out, indent=1, default=str))
    else:
        print(
            f"matched runs: {out['matched']}, identical: {out['identical']}, "
            f"different: {len(out['different'])}"
        )
        print(f"fields compared: {', '.join(out['fields_compared'])}")
        print(f"error rows: {out['errors']}")
        print(f"only before (by method): {out['only_before_by_method']}")
        print(f"only after (by method): {out['only_after_by_method']}")
        for d in out["different"][:20]:
            print("DIFFERENT", d["run"], d["fields"])
    return 1 if out["different"] else 0


if __name__ == "__main__":
    sys.exit(main())
