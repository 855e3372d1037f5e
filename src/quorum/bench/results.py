"""The paper's tables, built from a :class:`BenchRun` (one builder per experiment, in
:mod:`~quorum.bench.main_tables`, :mod:`~quorum.bench.standing`,
:mod:`~quorum.bench.study_tables` and :mod:`~quorum.bench.overhead_tables`), and the
``runs.csv`` frame."""

from __future__ import annotations

import pandas as pd

from quorum.bench.main_tables import equal_spend_tables, main_tables
from quorum.bench.overhead_tables import overhead_tables
from quorum.bench.runner import BenchRun
from quorum.bench.standing import standing_tables
from quorum.bench.study_tables import (
    annotations_tables,
    features_tables,
    noisy_tables,
    sensitivity_tables,
)
from quorum.bench.tables import TableFile


def all_tables(run: BenchRun) -> list[TableFile]:
    """Every table file of the bench, in the README's order."""
    out: list[TableFile] = []
    for fn in (
        equal_spend_tables,
        standing_tables,
        main_tables,
        features_tables,
        annotations_tables,
        sensitivity_tables,
        noisy_tables,
        overhead_tables,
    ):
        out += fn(run)
    return out


def rows_frame(run: BenchRun) -> pd.DataFrame:
    """Every run of the plan (one row each) with the experiments that use it."""
    uses: dict[str, list[str]] = {}
    for exp, specs in run.plan.runs.items():
        for s in specs:
            uses.setdefault(s.key, [])
            if exp not in uses[s.key]:
                uses[s.key].append(exp)
    recs = []
    for key, exps in uses.items():
        r = run.runs.get(key)
        if r is None:
            continue
        r = dict(r)
        r.pop("traceback", None)
        r["experiments"] = ";".join(exps)
        if isinstance(r.get("annotators"), list):
            r["annotators"] = ";".join(r["annotators"])
        recs.append(r)
    df = pd.DataFrame(recs)
    first = [
        "experiments",
        "dataset",
        "method",
        "setting",
        "budget",
        "seed",
        "variant",
        "params",
        "human",
        "status",
        "accuracy",
        "rouge1",
        "mca",
        "cost",
    ]
    cols = [c for c in first if c in df] + [c for c in df if c not in first]
    return df[cols] if len(df) else df
