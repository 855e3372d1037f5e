"""The bench's feature pre-pass: cold features computed once in the parent, then cached."""

from __future__ import annotations

import pytest

from quorum.bench.runner import warm_features

pytestmark = pytest.mark.realdata


def test_warm_features_fills_the_cache_and_skips_bad_names(
    shared_data_dir, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("QUORUM_CACHE_DIR", str(tmp_path))
    lines: list[str] = []
    name = "coannotating-stance/es"
    first = warm_features([name, "no-such-dataset"], 2, False, lines.append)
    assert set(first) == {name}
    assert any("computed in" in x for x in lines)
    assert any("no-such-dataset" in x and "left to the workers" in x for x in lines)
    assert list((tmp_path / "features").rglob("*")), "nothing was cached"
    # a second pass reads the cache: no "computed" line, much faster
    lines.clear()
    second = warm_features([name], 2, False, lines.append)
    assert not any("computed in" in x for x in lines)
    assert second[name] < first[name]
