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

``--ignore-param NAME=VALUE`` drops that parameter from a run's identity where it has that
value, so that a run made with a switch that restores an old default (e.g. ``quality=false``
once QUORUM's quality checks became its default) matches the run made before the switch
existed. The value is read as JSON (``false``, ``0.3``, ``"audit"``).
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


def _without(params: Any, ignore: dict[str, Any]) -> Any:
    """``params`` (a dict, or a dict as a JSON string) less the ``ignore`` pairs it holds."""
    as_text = isinstance(params, str)
    d = json.loads(params) if as_text else params
    if not isinstance(d, dict):
        return params
    d = {k: v for k, v in d.items() if not (k in ignore and ignore[k] == v)}
    return json.dumps(d, sort_keys=True) if as_text else d


def load_runs(path: Path, ignore: dict[str, Any] | None = None) -> dict[tuple, dict[str, Any]]:
    """The last record of each run identity in a runs.jsonl (the cache appends); parameters
    in ``ignore`` with the given value are left out of the identity."""
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
            ident = {k: rec.get(k) for k in IDENTITY}
            if ignore and ident["params"]:
                ident["params"] = _without(ident["params"], ignore)
            runs[tuple(json.dumps(ident[k], sort_keys=True) for k in IDENTITY)] = rec
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
        shared = (a.keys() & b.keys()) - NOT_RESULTS - set(IDENTITY)  # identity: matched
        keys = {k for k in shared if not k.endswith("_seconds")}
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
    ap.add_argument(
        "--ignore-param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="leave this parameter out of a run's identity where it has this value",
    )
    args = ap.parse_args(argv)
    ignore = {}
    for item in args.ignore_param:
        name, sep, value = item.partition("=")
        if not sep:
            ap.error(f"--ignore-param wants NAME=VALUE, got {item!r}")
        ignore[name] = json.loads(value)
    out = compare(load_runs(args.before, ignore), load_runs(args.after, ignore))
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
