"""Bench configuration: built-in files load, bad files fail with clear messages."""

from __future__ import annotations

import pytest

from quorum.bench.config import (
    BenchConfigError,
    load_config,
    parse_config,
    router_defaults,
    seed_list,
)


def test_builtin_configs_load() -> None:
    cfg = load_config()
    assert cfg.name == "default"
    main = cfg.section("main")
    assert main is not None and "quorum" in main.methods
    assert main.budgets == [0.1, 0.3, 0.5, 0.7]
    assert seed_list(main.seeds) == list(range(10))
    assert seed_list(main.summarization_seeds) == [0, 1, 2]
    assert set(cfg.sensitivity.grids) == {
        "tau_h",
        "w_human",
        "epsilon0",
        "gamma",
        "calibration_share",
    }
    smoke = load_config("smoke")
    assert smoke.name == "smoke"
    assert smoke.digest() != cfg.digest()


def test_errors_name_the_field() -> None:
    bad = {
        "main": {"datasets": ["x"], "methods": ["nope"], "budgets": [0.0, 1.5]},
        "sensitivity": {"grids": {"not_a_param": [1]}},
        "typo_section": {},
    }
    with pytest.raises(BenchConfigError) as exc:
        parse_config(bad)
    msg = str(exc.value)
    assert "main.methods" in msg and "nope" in msg
    assert "main.budgets" in msg and "(0, 1]" in msg
    assert "sensitivity.grids" in msg and "not_a_param" in msg
    assert "typo_section" in msg


def test_unknown_router_param_and_empty_lists() -> None:
    with pytest.raises(BenchConfigError, match="unknown parameter"):
        parse_config({"params": {"quorum": {"tau_hh": 0.5}}})
    with pytest.raises(BenchConfigError, match="must not be empty"):
        parse_config({"main": {"datasets": []}})
    with pytest.raises(BenchConfigError, match="seeds"):
        parse_config({"main": {"datasets": ["a"], "seeds": 0}})


def test_file_errors(tmp_path) -> None:
    with pytest.raises(BenchConfigError, match="not found"):
        load_config(tmp_path / "missing.toml")
    p = tmp_path / "broken.toml"
    p.write_text("[main\ndatasets = 1", encoding="utf-8")
    with pytest.raises(BenchConfigError, match="not valid TOML"):
        load_config(p)
    p.write_text('[main]\ndatasets = ["mmlu-redux"]\nbudgets = [0.5]\n', encoding="utf-8")
    cfg = load_config(p)
    assert cfg.section("features") is None and cfg.main.budgets == [0.5]


def test_disabled_section_is_skipped() -> None:
    cfg = parse_config({"main": {"datasets": ["a"], "enabled": False}})
    assert cfg.section("main") is None


def test_router_defaults_has_paper_values() -> None:
    d = router_defaults("quorum")
    assert {"tau_h", "w_human", "epsilon0", "gamma", "calibration_share"} <= set(d)


def test_main_skip_leaves_out_a_method_on_a_dataset_and_setting():
    from quorum.bench.config import MainSection
    from quorum.bench.plan import build_plan

    cfg = parse_config(
        {
            "name": "t",
            "main": {
                "datasets": ["llms-for-css/flute"],
                "methods": ["random", "quorum-paper"],
                "budgets": [0.1],
                "seeds": 1,
                "skip": ["quorum-paper@llms-for-css/flute@dollars"],
            },
        }
    )
    runs = {(r.method, r.setting) for r in build_plan(cfg).runs["main"]}
    assert runs == {("random", "auditor"), ("random", "dollars"), ("quorum-paper", "auditor")}
    with pytest.raises(ValueError, match="skip entry"):
        MainSection(datasets=["x"], skip=["quorum-paper"])
    with pytest.raises(ValueError, match=r"unknown|method"):
        MainSection(datasets=["x"], skip=["nope@x"])
