"""Bench plan and run keys: shared runs, defaults dropped, summaries skip label-only methods."""

from __future__ import annotations

import pytest

from quorum.bench.cache import JsonlStore, code_version, hash_files
from quorum.bench.config import load_config, parse_config
from quorum.bench.plan import RunSpec, build_plan, normalise_params

pytestmark = pytest.mark.realdata


@pytest.fixture(autouse=True)
def _data(shared_data_dir):  # plans hash the dataset files
    return shared_data_dir


def test_normalise_params_drops_defaults() -> None:
    assert normalise_params("quorum", {"tau_h": 0.5, "w_human": 10}) == ()
    assert normalise_params("quorum", {"tau_h": 0.3, "max_annotations": 3}) == (("tau_h", 0.3),)
    assert normalise_params("quorum", {"max_annotations": 1}) == (("max_annotations", 1),)


def test_keys_depend_on_what_matters() -> None:
    a = RunSpec("mmlu-redux", "quorum", "dollars", 0.5, 0)
    assert a.key == RunSpec("mmlu-redux", "quorum", "dollars", 0.5, 0).key
    others = [
        RunSpec("mmlu-redux", "quorum", "dollars", 0.5, 1),
        RunSpec("mmlu-redux", "quorum", "auditor", 0.5, 0),
        RunSpec("mmlu-redux", "quorum", "dollars", 0.3, 0),
        RunSpec("mmlu-redux", "random", "dollars", 0.5, 0),
        RunSpec("mmlu-redux", "quorum", "dollars", 0.5, 0, (("tau_h", 0.3),)),
        RunSpec("mmlu-redux", "quorum", "dollars", 0.5, 0, variant="random"),
        RunSpec("imdb-mlapi", "quorum", "dollars", 0.5, 0),
    ]
    assert len({a.key, *(o.key for o in others)}) == len(others) + 1
    assert code_version("quorum") != code_version("random") != code_version("cdi")
    assert code_version("quorum", "random") != code_version("quorum")


def test_default_plan_shares_runs_across_experiments() -> None:
    plan = build_plan(load_config())
    main = {s.key for s in plan.runs["main"]}
    sens = plan.runs["sensitivity"]
    # each grid holds the default value once: those runs are main-table runs
    assert sum(s.key in main for s in sens) == 5 * 10
    feats = plan.runs["features"]
    assert all(s.key in main for s in feats if s.variant == "ours")
    ann = plan.runs["annotations"]
    assert all(s.key in main for s in ann if not s.params)
    assert len(plan.all_runs()) < sum(len(v) for v in plan.runs.values())


def test_summaries_skip_label_only_methods_and_use_fewer_seeds() -> None:
    plan = build_plan(load_config())
    summ = [s for s in plan.runs["main"] if s.dataset == "summ-summeval"]
    both = {"quorum", "quorum-paper"}  # the two QUORUM rows
    assert {s.method for s in summ} == {"random", "cdi", "coannotating", "hypac", *both}
    assert {s.seed for s in summ} == {0, 1, 2}
    assert len(summ) == 6 * 2 * 4 * 3


def test_noisy_runs_use_each_labeller() -> None:
    plan = build_plan(load_config())
    noisy = plan.runs["noisy"]
    assert {s.human for s in noisy} == {"labeller_1", "labeller_2", "labeller_3"}
    assert {s.human_labels for s in noisy} == {200}
    assert len({s.group for s in noisy}) == 3


def test_global_params_change_keys() -> None:
    base = {
        "main": {
            "datasets": ["mmlu-redux"],
            "methods": ["quorum"],
            "seeds": 1,
            "budgets": [0.5],
            "settings": ["dollars"],
        }
    }
    k0 = build_plan(parse_config(base)).runs["main"][0].key
    k1 = build_plan(parse_config({**base, "params": {"quorum": {"tau_h": 0.3}}})).runs["main"][0]
    assert k1.params == (("tau_h", 0.3),) and k1.key != k0


def test_hash_files_and_store(tmp_path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    h1 = hash_files([tmp_path / "a.py"], tmp_path)
    (tmp_path / "a.py").write_text("x = 2\n")
    assert hash_files([tmp_path / "a.py"], tmp_path) != h1
    store = JsonlStore(tmp_path / "c" / "runs.jsonl")
    store.add([{"key": "k1", "v": float("nan")}, {"key": "k2", "v": 1}])
    with open(store.path, "a") as f:
        f.write('{"key": "k3", "v"')  # a line cut short by an interrupted run
    again = JsonlStore(store.path)
    assert len(again) == 2 and again.get("k1")["v"] is None


def test_group_and_timing_keys_name_the_dataset() -> None:
    from quorum.bench.schedule import timing_key
    from quorum.bench.worker import group_key

    # the llms-for-css tasks share one file: keys must still differ per task
    assert group_key("llms-for-css/flute", "gold") != group_key("llms-for-css/ibc", "gold")
    assert group_key("sentimp-en", "labeller_1") != group_key("sentimp-en", "labeller_2")
    assert timing_key("llms-for-css/flute", 200) != timing_key("llms-for-css/ibc", 200)
    assert timing_key("llms-for-css/flute", 200) != timing_key("llms-for-css/flute", 100)


def test_code_version_follows_each_router_imports() -> None:
    from quorum.bench.cache import import_closure
    from quorum.methods import METHODS

    def rel(module: str) -> set[str]:
        return {p.as_posix().split("src/quorum/")[1] for p in import_closure(module)}

    quorum_files = rel("quorum.routing.quorum.router")
    # the rules moved out of quorum.py are part of QUORUM's code version
    for f in (
        "routing/quorum/calibration.py",
        "routing/quorum/audit/auditing.py",
        "routing/quorum/policy.py",
        "routing/quorum/params.py",
        "features/context.py",
        "routing/core/budget.py",
    ):
        assert f in quorum_files, f
    assert "baselines/cdi.py" not in quorum_files
    for name, target in METHODS.items():
        files = rel(target.split(":")[0])
        module_file = target.split(":")[0].removeprefix("quorum.").replace(".", "/") + ".py"
        assert module_file in files, name
        assert not any(f.startswith(("bench/", "live/", "cli")) for f in files), name
    # one version per router module (two names of one module share it)
    modules = {t.split(":")[0] for t in METHODS.values()}
    assert len({code_version(m) for m in METHODS}) == len(modules)
