"""The Ray engine, end to end on a local Ray instance: same features, same live calls."""

from __future__ import annotations

import os
import sqlite3

import numpy as np
import pytest

pytest.importorskip("ray")

from live_servers.fixtures import SST2_TASK, FakeServer, sst2_items, write_project
from quorum.engine import LocalEngine, RayEngine, ensure_ray, get_engine, resolve_engine

pytestmark = [pytest.mark.slow, pytest.mark.realdata]


@pytest.fixture(scope="module")
def ray_local():
    ray = ensure_ray(num_cpus=2)
    yield ray
    ray.shutdown()


def _texts(shared_data_dir) -> tuple[list[str], list[str]]:
    from quorum.data.loaders import load_dataset

    en = load_dataset("ag-news").items["text"].tolist()[:64]
    es = load_dataset("coannotating-stance/es").items["text"].tolist()[:16]
    texts = [*en[:32], *es[:8], "", "!!!", *en[32:], *es[8:]]
    langs = ["en"] * 32 + ["es"] * 8 + ["en", "en"] + ["en"] * 32 + ["es"] * 8
    return texts, langs


def test_engine_names(monkeypatch):
    monkeypatch.delenv("QUORUM_ENGINE", raising=False)
    assert resolve_engine() == "local" and isinstance(get_engine(), LocalEngine)
    monkeypatch.setenv("QUORUM_ENGINE", "RAY")
    assert resolve_engine() == "ray" and resolve_engine("local") == "local"
    with pytest.raises(ValueError, match="unknown engine"):
        resolve_engine("spark")


def test_local_workers_run_at_this_process_priority(ray_local):
    """Not Ray's default niceness of 15, at which a busy machine starves the run's tasks."""

    @ray_local.remote
    def niceness() -> int:
        return os.nice(0)

    assert ray_local.get(niceness.remote()) == os.nice(0)


def test_features_on_ray_match_local(ray_local, shared_data_dir):
    from quorum.features.pipeline import FeatureExtractor

    texts, langs = _texts(shared_data_dir)
    # batch 4 on 82 texts: as many length-sorted chunks and Ray tasks as batch 16 on the
    # 322 texts this test once took (e5: 21 chunks over 4 tasks; spaCy: 4 spans, 3 of 24)
    kw = {"cache": False, "show_progress": False, "batch_size": 4}
    here = FeatureExtractor(engine="local", **kw).fit_transform(texts, langs)
    there = FeatureExtractor(engine="ray", **kw).fit_transform(texts, langs)
    assert isinstance(get_engine("ray"), RayEngine)
    np.testing.assert_array_equal(there.raw, here.raw)
    np.testing.assert_array_equal(there.embeddings, here.embeddings)
    np.testing.assert_array_equal(there.neighbours, here.neighbours)
    np.testing.assert_array_equal(there.phi, here.phi)


def test_light_linguistic_on_ray_matches_local(ray_local, shared_data_dir):
    """The fast profile's tagger: same sample, same tagger, same features on Ray."""
    from quorum.features.distributed import engine_linguistic
    from quorum.features.fast_linguistic import LightLinguistic

    texts, langs = _texts(shared_data_dir)
    # 400 tokens of the en texts' ~3,400 and of the es texts' ~580: each language gets a tagger
    here = LightLinguistic(sample_tokens=400)
    local = here(texts, langs, 16)
    assert set(here.taggers_) == {"en", "es"}
    remote = engine_linguistic(RayEngine(), texts, langs, LightLinguistic(400), 16, parts=4)
    np.testing.assert_array_equal(remote, local)


def _live(tmp_path, data_dir, api_base: str, engine: str, client: str) -> tuple[list, list]:
    from quorum.live.ledger.store import Ledger
    from quorum.live.machines.calls import Redactor
    from quorum.live.project.config import load_project
    from quorum.live.project.items import item_views, load_items
    from quorum.live.run.problem import build_arms, make_parser
    from quorum.live.run.source import LiveSource

    folder = tmp_path / f"{engine}-{client}"
    folder.mkdir()
    llm = {"api_base": api_base, "client": client, "max_retries": 5, "backoff_base": 0.01,
           "timeout": 1.0, "dead_after": 100}  # fmt: skip
    proj = {
        "name": "ray", "method": "random", "features": "light", "engine": engine,
        "items": sst2_items(data_dir, 10), "task": SST2_TASK, "budget": {"limit": 10.0},
        "human_price": 0.01,
        "annotators": [
            {"name": "fake-a", "model": "openai/fake-a", "price": 0.002, **llm},
            {"name": "fake-b", "model": "openai/fake-b", "input_cost_per_token": 1e-6,
             "output_cost_per_token": 2e-6, **llm},
        ],
    }  # fmt: skip
    cfg = load_project(write_project(folder, proj))
    items = load_items(cfg)
    arms, human = build_arms(cfg, items, item_views(items), Redactor())
    ledger = Ledger(cfg.ledger_path)
    run_id = ledger.start_run("ray", cfg.fingerprint(), "{}", "random", 0, cfg.budget.limit)
    src = LiveSource(
        task_type=cfg.task.type, items=item_views(items), annotators=arms, ledger=ledger,
        run_id=run_id, budget_limit=cfg.budget.limit, parser=make_parser(cfg), human=human,
        concurrency=8,
    )  # fmt: skip
    try:
        ids = list(src.items)
        outs = src.annotate_many([(i, a) for i in ids for a in ("fake-a", "fake-b")])
        outs += [src.confidence(i, "fake-b") for i in ids[:3]]
    finally:
        src.close()
        ledger.close()
    con = sqlite3.connect(cfg.ledger_path)
    rows = con.execute(
        "SELECT c.item_id, c.annotator, c.kind, c.status, c.output, c.confidence, c.cost, "
        "c.prompt_tokens, c.completion_tokens, c.response_raw FROM calls c "
        "ORDER BY c.item_id, c.annotator, c.kind"
    ).fetchall()
    tries = con.execute(
        "SELECT c.item_id, c.annotator, c.kind, a.n, a.outcome FROM attempts a "
        "JOIN calls c USING (call_id) ORDER BY 1, 2, 3, 4"
    ).fetchall()
    con.close()
    key = [(o.item_id, o.annotator, o.status, o.output, o.cost, o.confidence) for o in outs]
    return key, [rows, tries]


def test_live_calls_on_ray_match_local(ray_local, tmp_path, shared_data_dir, monkeypatch):
    """Same answers, costs, tokens and statuses; 429s and 500s on the way are retried from
    the routing process and recorded there, as locally."""
    from quorum.live.machines import ray_calls

    # two call actors, not the pool's default four: the tries still go to actors in turn,
    # and each actor's start (and its litellm import) is paid half as often; the pool is
    # dropped with this test (the module's Ray instance shuts down after it)
    monkeypatch.setitem(ray_calls._POOLS, None, ray_calls.RayCallPool(n_actors=2))
    faults = ["--rate-429", "0.1", "--rate-500", "0.1", "--seed", "11"]
    results = {}
    for engine, client in (("local", "http"), ("ray", "http"), ("ray", "litellm")):
        # a fresh server per run: the same seed gives every run the same fault sequence
        with FakeServer(tmp_path, *faults, name=f"srv-{engine}-{client}") as srv:
            results[engine, client] = _live(tmp_path, shared_data_dir, srv.api_base, engine,
                                            client)  # fmt: skip
    base_key, (base_rows, _) = results["local", "http"]
    assert all(k[2] == "ok" for k in base_key)
    for name in (("ray", "http"), ("ray", "litellm")):
        key, (rows, tries) = results[name]
        assert key == base_key, name
        assert rows == base_rows, name
        assert tries and {t[4] for t in tries} <= {"429", "500", "timeout"}, name
