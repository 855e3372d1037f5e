"""scripts/compare_bench_runs.py: runs matched by what they are, a restored default ignored."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "compare_bench_runs", Path(__file__).parents[1] / "scripts" / "compare_bench_runs.py"
)
cbr = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cbr)


def _row(params: str, accuracy: float, key: str) -> dict:
    return {"dataset": "d", "method": "quorum", "setting": "dollars", "budget": 0.3, "seed": 0,
            "variant": "ours", "params": params, "human": "gold", "human_labels_budget": None,
            "accuracy": accuracy, "key": key, "wall_seconds": 1.0}  # fmt: skip


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_restored_default_matches_the_run_made_before_it(tmp_path) -> None:
    before = _write(tmp_path / "a.jsonl", [_row("{}", 0.9, "k1")])
    after = _write(tmp_path / "b.jsonl", [_row('{"quality": false}', 0.9, "k2")])
    assert cbr.compare(cbr.load_runs(before), cbr.load_runs(after))["matched"] == 0
    assert cbr.main([str(before), str(after), "--ignore-param", "quality=false"]) == 0
    # a different value of the parameter is another run; a different result is reported
    other = _write(tmp_path / "c.jsonl", [_row('{"quality": true}', 0.9, "k3")])
    ign = {"quality": False}
    assert cbr.compare(cbr.load_runs(before, ign), cbr.load_runs(other, ign))["matched"] == 0
    worse = _write(tmp_path / "d.jsonl", [_row('{"quality": false}', 0.8, "k4")])
    assert cbr.main([str(before), str(worse), "--ignore-param", "quality=false"]) == 1
