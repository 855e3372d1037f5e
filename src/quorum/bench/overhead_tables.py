"""The overhead table: time before routing decisions, and the cold feature extraction."""

from __future__ import annotations

from typing import Any

from quorum.bench.runner import BenchRun
from quorum.bench.tables import Table, TableFile, frame, method_name
from quorum.methods import method_trait


def _routing_cell(r: Any, m: str, et: float | None) -> str:
    """One method's routing time on one dataset, with ET / CT where the method needs them."""
    rt = float(r["routing_seconds"].mean())
    txt = f"{rt:.3f}"
    if method_trait(m, "uses_item_features"):
        txt += f" + {et:.1f} ET" if et is not None else " + ET"
    if method_trait(m, "pays_for_confidence"):
        calls = float(r["confidence_calls"].max()) if "confidence_calls" in r else 0
        txt += f" + CT ({calls:,.0f} calls)" if calls else ""
    return txt


def _routing_table(run: BenchRun, datasets: list[str], methods: list[str]) -> Table:
    df = frame(run.rows("main"))
    rows = []
    for d in datasets:
        et = _et(run, d)
        cells = [d]
        sub = df[df["dataset"] == d] if len(df) else df
        for m in methods:
            r = sub[sub["method"] == m] if len(sub) else sub
            cells.append(_routing_cell(r, m, et) if len(r) else "-")
        rows.append(cells)
    return Table(
        "Time before routing decisions (seconds)",
        ["Dataset", *[method_name(m) for m in methods]],
        rows,
        "Routing time = mean `routing_seconds` of the method's main-table runs on this machine "
        "(both settings, every budget; it includes ARAIDA's and SANT's model training, which the "
        "paper lists as TT). ET = cold feature extraction (linguistic features, sentence "
        "embeddings, kNN) for the whole dataset, needed by QUORUM and by ARAIDA/SANT (which use "
        "the item embeddings). CT = confidence estimation by extra LLM calls (the most such calls "
        "in any run; replay reads them from the recorded data, so their time cannot be measured "
        "here: live, each is one more LLM request).",
    )


def _cold_row(run: BenchRun, d: str) -> list[str]:
    """One dataset's cold extraction: the bench's own full measurement, else the sample's."""
    full = _full_cold(run, d)
    if full is not None:
        tm, n = full
        return [
            d,
            f"{n:,}",
            f"{n:,} (first bench run)",
            f"{tm.get('linguistic', 0):.1f}",
            f"{tm.get('embedding', 0):.1f}",
            f"{tm.get('knn', 0):.2f}",
            f"{_cold_total(tm):.1f}",
            "-",
        ]
    ft = run.feature_timing(d) or {}
    if ft.get("status") != "ok":
        return [d, "-", "-", "-", "-", "-", "-", ft.get("error", "not measured")]
    tm = ft["timings"]
    return [
        d,
        f"{ft['n_items']:,}",
        f"{ft['sample']:,}",
        f"{tm.get('linguistic', 0):.1f}",
        f"{tm.get('embedding', 0):.1f}",
        f"{tm.get('knn', 0):.2f}",
        f"{ft['estimated_full_seconds']:.1f}" + (" (scaled)" if ft.get("scaled") else ""),
        f"{ft.get('model_load_seconds', 0):.1f}",
    ]


def _cold_table(run: BenchRun, datasets: list[str], feature_sample: int) -> Table:
    return Table(
        "Cold feature extraction",
        [
            "Dataset",
            "Items",
            "Timed on",
            "Linguistic s",
            "Embedding s",
            "kNN s",
            "ET (all items) s",
            "Model load s",
        ],
        [_cold_row(run, d) for d in datasets],
        f"Measured without the feature cache on a random sample of at most {feature_sample} "
        "items, one thread, while the other worker was busy; 'scaled' = extrapolated to all "
        "items (linguistic features and embeddings linearly, the exact kNN search "
        "quadratically); 'first bench run' = the bench itself computed the features of every "
        "item (empty feature cache), and that full measurement is used. Model load (spaCy and "
        "the sentence-embedding model, once per process) is listed apart and not included in "
        "ET. With the disk cache, a second extraction only "
        "reads the file (well under a second).",
    )


def overhead_tables(run: BenchRun) -> list[TableFile]:
    """``overhead``: per dataset, each method's routing time and the cold extraction."""
    sec = run.config.section("overhead")
    if sec is None:
        return []
    main = run.config.section("main")
    datasets = run.plan.overhead_datasets
    methods = list(main.methods) if main else []
    t1 = _routing_table(run, datasets, methods)
    t2 = _cold_table(run, datasets, sec.feature_sample)
    return [TableFile("overhead", "Overhead: time needed before routing", tables=[t1, t2])]


def _cold_total(tm: dict[str, Any]) -> float:
    return sum(float(tm.get(k, 0.0)) for k in ("linguistic", "embedding", "knn", "scaling"))


def _full_cold(run: BenchRun, d: str) -> tuple[dict[str, Any], int] | None:
    """The feature timings of the bench's own preparation, when it found no cache."""
    info = run.info(d) or {}
    tm = info.get("feature_timings") or {}
    if tm and tm.get("cached") is False:
        return tm, int(info["n_items"])
    return None


def _et(run: BenchRun, d: str) -> float | None:
    """Cold feature time of the whole dataset: measured in full if the bench had to, else
    the sampled, scaled measurement."""
    full = _full_cold(run, d)
    if full is not None:
        return _cold_total(full[0])
    ft = run.feature_timing(d) or {}
    return ft.get("estimated_full_seconds") if ft.get("status") == "ok" else None
