"""Smoke test of every baseline on real recorded data (skipped if the data is not there).

Subsets keep the test fast; features are cheap stand-ins (hashed bag-of-words embeddings,
text-length phi): the point is the mechanics on real answers, prices and confidences.
"""

from __future__ import annotations

import numpy as np
import pytest

from baselines_fakes import auditor_budget
from quorum.data.schema import Dataset
from quorum.errors import DatasetNotFoundError, UnsupportedTaskError
from quorum.methods import baseline_names, make_router
from quorum.routing.core.base import RoutingProblem
from quorum.routing.core.budget import Budget
from quorum.routing.core.replay import RecordedSource

pytestmark = pytest.mark.realdata

METHODS = baseline_names()
PAPER_FORMS = ("coannotating", "cdi", "hypac")
ENSEMBLES = ("coannotating-ensemble", "cdi-ensemble", "hypac-ensemble")
_CACHE: dict[str, tuple[Dataset, np.ndarray, np.ndarray]] = {}


def load(name: str, n: int | None) -> tuple[Dataset, np.ndarray, np.ndarray]:
    """The dataset restricted to its default panel (and the first ``n`` items)."""
    if name in _CACHE:
        return _CACHE[name]
    loaders = pytest.importorskip("quorum.data.loaders")
    try:
        ds = loaders.load_dataset(name)
    except DatasetNotFoundError as exc:
        pytest.skip(f"data not available: {exc}")
    if n is not None and ds.n_items > n:
        ds = ds.subset(ds.items["item_id"].iloc[:n])
    panel = ds.meta.get("panel") or [a.name for a in ds.task.llms]
    task = ds.task.with_annotators([ds.task.annotator(a) for a in panel])
    ann = ds.annotations.loc[ds.annotations["annotator"].isin(panel)]
    ds = Dataset(task, ds.items, ann.reset_index(drop=True), ds.source, dict(ds.meta))
    from sklearn.feature_extraction.text import HashingVectorizer

    texts = ds.items["text"].tolist()
    emb = HashingVectorizer(n_features=256, norm="l2").transform(texts).toarray()
    lengths = np.array([[len(t), len(t.split())] for t in texts], dtype=float)
    phi = (lengths - lengths.min(0)) / (np.ptp(lengths, axis=0) + 1e-9)
    _CACHE[name] = (ds, phi, emb)
    return _CACHE[name]


def run(name: str, method: str, setting: str, fraction: float, n: int | None = 600):
    ds, phi, emb = load(name, n)
    src = RecordedSource(ds)  # summaries: no embedder -> hashed bag-of-words similarity
    T = ds.n_items
    p = RoutingProblem(ds.task, ds.items["item_id"].to_numpy(), phi, emb, setting=setting)
    router = make_router(method)
    if setting == "auditor":
        b = round(fraction * T)
        p.human_budget = b
        budget = auditor_budget(p, router, src, b)
    else:
        budget = Budget(fraction * T * p.human.price)
    res = router.route(p, src, budget, seed=0)
    assert res.cost <= budget.limit + 1e-9
    assert res.human_labels <= (p.human_budget if setting == "auditor" else T)
    assert len(res.labels) == T
    assert isinstance(res.info["confidence_source"], str)
    assert isinstance(res.info["substitute"], bool)
    return res


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("setting", ["auditor", "dollars"])
def test_mmlu_redux(method, setting):
    res = run("mmlu-redux", method, setting, 0.3)
    if method in ENSEMBLES:
        assert res.info["confidence_source"].startswith("entropy-over-models:")
        assert res.info["substitute"] is True  # no recorded confidence in MMLU-Redux
    if method in PAPER_FORMS:  # one other model's answer stands in for the confidence
        assert res.info["confidence_source"].startswith("agreement-with:")
        assert res.info["substitute"] is True


@pytest.mark.parametrize("method", METHODS)
def test_imdb_recorded_confidence(method):
    res = run("imdb-mlapi", method, "auditor", 0.1, n=1000)
    if method in PAPER_FORMS + ENSEMBLES:
        assert res.info["confidence_source"] == "recorded"
        assert res.info["substitute"] is False
        assert res.confidence_calls == 1000


@pytest.mark.parametrize("method", ["coannotating", "cdi", "coannotating-ensemble"])
def test_stance_prompts(method):
    res = run("coannotating-stance/es", method, "dollars", 0.5, n=None)
    # per-prompt verbalised confidence is recorded: that is the first choice
    assert res.info["confidence_source"] == "recorded"
    ent = make_router(method, confidence="entropy")
    ds, phi, emb = load("coannotating-stance/es", None)
    p = RoutingProblem(ds.task, ds.items["item_id"].to_numpy(), phi, emb, "auditor", 20)
    src = RecordedSource(ds)
    r = ent.route(p, src, auditor_budget(p, ent, src, 20), seed=0)
    assert r.info["confidence_source"].startswith("entropy-over-prompts:")


@pytest.mark.parametrize("method", METHODS)
def test_llms_for_css(method):
    run("llms-for-css/ibc", method, "dollars", 0.5, n=None)


@pytest.mark.parametrize("method", METHODS)
def test_summarization(method):
    if method in ("araida", "sant"):
        with pytest.raises(UnsupportedTaskError):
            run("summ-selfrec-cnndm", method, "auditor", 0.3, n=80)
        return
    for setting in ("auditor", "dollars"):
        res = run("summ-selfrec-cnndm", method, setting, 0.3, n=80)
        assert res.labels["output"].notna().all()


def test_humans_only_panel_is_refused_clearly():
    """SentiMP-En's recorded annotators are three humans: without its machine arm, the
    baselines refuse with a clear message rather than crash."""
    from quorum.data.loaders import load_dataset

    ds, phi, emb = load("sentimp-en", None)
    humans = [a for a in load_dataset("sentimp-en").task.annotators if a.kind == "human"]
    assert len(humans) == 3
    task = ds.task.with_annotators(humans)
    p = RoutingProblem(task, ds.items["item_id"].to_numpy(), phi, emb, "auditor", 200)
    with pytest.raises(ValueError, match="machine annotator"):
        make_router("coannotating").route(p, RecordedSource(ds), Budget(100.0, human_limit=200))
