"""Equal-spend comparison: hand-made cost-quality curves -> levels, values, standing, tables."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from quorum.bench.equal_spend import (
    default_levels,
    equal_spend_frame,
    equal_spend_standing,
    quality_at,
)
from quorum.bench.equal_spend_tables import equal_spend_file, standing_lines
from quorum.bench.main_tables import _cell_stats, spend_levels
from quorum.bench.standing import standing_block, standing_from_stats


# ----------------------------------------------------------------- one curve
def test_point_at_the_level_is_taken_as_measured() -> None:
    a = quality_at([(10.0, 0.6, 0.1), (20.0, 0.7, 0.3)], 10.0)
    assert (a.status, a.value, a.spend, a.budgets) == ("at", 0.6, 10.0, (0.1,))


def test_between_two_points_the_straight_line() -> None:
    # unordered input: the curve is taken in spend order
    a = quality_at([(30.0, 0.8, 0.5), (10.0, 0.6, 0.1), (20.0, 0.7, 0.3)], 25.0)
    assert a.status == "at" and a.spend == 25.0 and a.budgets == (0.3, 0.5)
    assert math.isclose(a.value, 0.75)
    a = quality_at([(10.0, 0.6, 0.1), (40.0, 0.9, 0.7)], 20.0)
    assert math.isclose(a.value, 0.7)


def test_cheapest_point_above_the_level_is_not_reached() -> None:
    a = quality_at([(50.0, 0.9, 0.1), (60.0, 0.95, 0.3)], 20.0)
    assert a.status == "above" and not a.ranked
    assert (a.value, a.spend) == (0.9, 50.0)


def test_beyond_the_last_point_it_spent_less() -> None:
    a = quality_at([(10.0, 0.6, 0.1), (36.5, 0.84, 0.7)], 40.0)
    assert a.status == "less" and a.ranked and (a.value, a.spend) == (0.84, 36.5)


def test_a_cheaper_better_point_beats_a_falling_curve() -> None:
    # quality falls from 10 to 20: at 25 the line gives 0.65, the point at 10 gives 0.8
    a = quality_at([(10.0, 0.8, 0.1), (20.0, 0.6, 0.3), (30.0, 0.7, 0.5)], 25.0)
    assert a.status == "less" and (a.value, a.spend) == (0.8, 10.0)


def test_no_curve_is_extended_and_nan_points_are_dropped() -> None:
    pts = [(10.0, 0.6, 0.1), (20.0, math.nan, 0.3), (math.nan, 0.9, 0.5), (30.0, 0.7, 0.7)]
    a = quality_at(pts, 20.0)
    assert math.isclose(a.value, 0.65) and a.budgets == (0.1, 0.7)
    assert quality_at([(math.nan, 0.5, 0.1)], 5.0).status == "missing"


def test_random_curves_never_rank_a_dearer_point_and_stay_within_the_measured_range() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        k = int(rng.integers(1, 5))
        pts = [
            (float(c), float(q), float(b))
            for c, q, b in zip(rng.uniform(0, 100, k), rng.uniform(0, 1, k), range(k), strict=True)
        ]
        level = float(rng.uniform(0, 110))
        a = quality_at(pts, level)
        qs = [p[1] for p in pts]
        assert min(qs) - 1e-12 <= a.value <= max(qs) + 1e-12
        if a.ranked:
            assert a.spend <= level * (1 + 1e-6)
            # never worse than any measured point that cost no more than the level
            assert a.value >= max(q for c, q, _ in pts if c <= level) - 1e-12
        else:
            assert a.status == "above" and min(p[0] for p in pts) > level


# ----------------------------------------------------------------- hand-made frames
def _stats(curves: dict[tuple[str, str, str], list[tuple[float, float, float]]]) -> pd.DataFrame:
    """(dataset, setting, method) -> [(budget, spend, quality)]."""
    recs = [
        {"dataset": d, "setting": s, "budget": b, "method": m, "q": q, "cost": c, "spend": c}
        for (d, s, m), pts in curves.items()
        for b, c, q in pts
    ]
    return pd.DataFrame(recs)


AUD = {
    # QUORUM pays the level exactly; a cheap baseline pays a little more (the LLM on every
    # item) and one pays for confidence calls (+40 at every budget)
    ("a", "auditor", "quorum"): [(0.1, 10.0, 0.60), (0.3, 20.0, 0.70), (0.5, 30.0, 0.80)],
    ("a", "auditor", "quorum-paper"): [(0.1, 10.0, 0.70), (0.3, 20.0, 0.80), (0.5, 30.0, 0.90)],
    ("a", "auditor", "random"): [(0.1, 10.0, 0.58), (0.3, 20.0, 0.72), (0.5, 30.0, 0.75)],
    ("a", "auditor", "sant"): [(0.1, 12.0, 0.62), (0.3, 22.0, 0.70), (0.5, 32.0, 0.85)],
    ("a", "auditor", "coannotating"): [(0.1, 50.0, 0.95), (0.3, 60.0, 0.96), (0.5, 70.0, 0.97)],
}
LEVELS = {("a", "auditor", 0.1): 10.0, ("a", "auditor", 0.3): 20.0, ("a", "auditor", 0.5): 30.0}


def _row(es: pd.DataFrame, m: str, b: float) -> pd.Series:
    return es[(es["method"] == m) & np.isclose(es["budget"], b)].iloc[0]


def test_frame_reads_every_method_at_the_common_levels() -> None:
    es = equal_spend_frame(_stats(AUD), LEVELS)
    assert len(es) == 5 * 3
    assert set(es["level"]) == {10.0, 20.0, 30.0}
    # SANT: its 10% run costs 12 > 10 -> not reached at 10%; at 20 between its 12 and 22
    s10, s30 = _row(es, "sant", 0.1), _row(es, "sant", 0.3)
    assert s10["status"] == "above" and math.isclose(s10["delta"], 2.0)
    assert s30["status"] == "at" and math.isclose(s30["value"], 0.62 + 0.08 * 0.8)
    # at 30: SANT between 22 (0.70) and 32 (0.85) -> 0.82, not its 0.85 bought for 32
    assert math.isclose(_row(es, "sant", 0.5)["value"], 0.82)
    # CoAnnotating needs 40, 30, 20 more at the three levels: never ranked
    co = es[es["method"] == "coannotating"]
    assert (co["status"] == "above").all() and list(co["delta"]) == [40.0, 30.0, 20.0]
    # a ranked row never spent more than its level
    ranked = es[es["status"].isin(["at", "less"])]
    assert (ranked["spend"] <= ranked["level"] * (1 + 1e-9)).all()
    assert (es.loc[es["status"] == "above", "delta"] > 0).all()


def test_spend_not_cost_decides_equal_spend() -> None:
    """The authors' accounting counts less than it uses: its ``spend`` (cost + unpaid) is
    what is compared, so it is not reached at the level its ``cost`` would suggest."""
    st = _stats({("a", "dollars", "quorum-paper-authors-accounting"): [(0.1, 5.0, 0.9)]})
    st["cost"] = 3.0
    es = equal_spend_frame(st, {("a", "dollars", 0.1): 4.0})
    assert es.iloc[0]["status"] == "above" and es.iloc[0]["spend"] == 5.0
    sub = pd.DataFrame({"accuracy": [0.5, 0.7], "cost": [3.0, 3.0], "unpaid_cost": [2.0, None]})
    got = _cell_stats(sub.assign(q=sub["accuracy"]))
    assert (got["cost"], got["spend"]) == (3.0, 4.0)


def test_default_levels_are_the_median_spend() -> None:
    assert default_levels(_stats(AUD))[("a", "auditor", 0.1)] == 10.0  # 10, 10, 10, 12, 50
    three = {k: v for k, v in AUD.items() if k[2] in ("quorum", "sant", "coannotating")}
    assert default_levels(_stats(three))[("a", "auditor", 0.1)] == 12.0  # 10, 12, 50
    es = equal_spend_frame(_stats(three))
    assert math.isclose(_row(es, "quorum", 0.1)["value"], 0.6 + 0.1 * 0.2)
    assert _row(es, "sant", 0.1)["status"] == "at"


def test_standing_against_baselines_only() -> None:
    es = equal_spend_frame(_stats(AUD), LEVELS)
    st = equal_spend_standing(es, "quorum")
    by_b = {c["budget"]: c for c in st["cells"]}
    # 10%: random 0.58 (SANT and CoAnnotating not reached) -> best by +0.02
    assert by_b[0.1]["standing"] == "best" and math.isclose(by_b[0.1]["gap"], 0.02)
    assert set(by_b[0.1]["unreached"]) == {"sant", "coannotating"}
    # 30%: random 0.72 > 0.70 > SANT 0.684 -> second, gap -0.02
    assert by_b[0.3]["standing"] == "second" and by_b[0.3]["best_other"] == "random"
    assert math.isclose(by_b[0.3]["gap"], -0.02) and by_b[0.3]["rank"] == 2
    # 50%: SANT 0.82 > 0.80 -> second; quorum-paper (0.90) is not a competitor
    assert by_b[0.5]["best_other"] == "sant" and by_b[0.5]["standing"] == "second"
    c = st["counts"]["auditor"]
    assert (c["cells"], c["best"], c["second"], c["behind"]) == (3, 1, 2, 0)
    assert c["unreached"] == 2 + 1 + 1  # SANT at 10%, CoAnnotating at every level
    assert c["worst"]["budget"] in (0.3, 0.5) and math.isclose(c["worst"]["gap"], -0.02)
    paper = equal_spend_standing(es, "quorum-paper")
    assert paper["counts"]["all"]["best"] == 3
    text = "\n".join(standing_lines(st))
    assert "**QUORUM, auditor style**, at equal spend: best in 1 of 3 cells" in text
    assert "Largest loss" in text and "-0.020" in text


def test_standing_alone_and_behind() -> None:
    curves = {
        ("b", "dollars", "quorum"): [(0.1, 5.0, 0.5), (0.3, 15.0, 0.6)],
        ("b", "dollars", "random"): [(0.1, 5.0, 0.55), (0.3, 15.0, 0.7)],
        ("b", "dollars", "araida"): [(0.1, 5.0, 0.7), (0.3, 15.0, 0.8)],
        ("c", "dollars", "quorum"): [(0.1, 5.0, 0.5)],
        ("c", "dollars", "cdi"): [(0.1, 9.0, 0.9)],
    }
    levels = {("b", "dollars", 0.1): 5.0, ("b", "dollars", 0.3): 15.0, ("c", "dollars", 0.1): 5.0}
    st = equal_spend_standing(equal_spend_frame(_stats(curves), levels), "quorum")
    got = {(c["dataset"], c["budget"]): c["standing"] for c in st["cells"]}
    assert got == {("b", 0.1): "behind", ("b", 0.3): "behind", ("c", 0.1): "alone"}
    c = st["counts"]["dollars"]
    assert math.isclose(c["behind_mean_gap"], -0.2) and c["alone"] == 1
    assert "no baseline can run at its spend in 1" in "\n".join(standing_lines(st))


def test_paper_style_standing_ignores_the_other_quorum_row() -> None:
    st = pd.DataFrame(
        [
            {"dataset": "a", "setting": "dollars", "budget": 0.1, "method": m, "q": q, "cost": 1}
            for m, q in [("quorum", 0.8), ("quorum-paper", 0.9), ("random", 0.7)]
        ]
    )
    cell = standing_from_stats(st)["cells"][0]
    assert cell["standing"] == "best" and cell["best_other"] == "random"
    assert cell["n_methods"] == 2


# ----------------------------------------------------------------- tables
def test_equal_spend_file_marks_only_compared_methods() -> None:
    methods = ["random", "sant", "coannotating", "quorum", "quorum-paper"]
    f = equal_spend_file(_stats(AUD), LEVELS, methods, ["auditor", "dollars"])
    assert f is not None and f.name == "equal_spend"
    titles = [t.title for t in f.tables]
    assert titles == [
        "QUORUM at equal spend",
        "Auditor style at equal spend",
        "Where QUORUM loses at equal spend",
    ]
    t = f.tables[1]
    assert t.header == [
        "Dataset",
        "Budget",
        "Spend level",
        "Random",
        "SANT",
        "CoAnnotating",
        "QUORUM",
        "QUORUM (paper preset)",
    ]
    assert all(len(r) == len(t.header) for r in t.rows) and len(t.rows) == 3
    r10 = t.rows[0]
    assert r10[:3] == ["a", "10%", "10.0"]
    assert r10[4].text == "needs +2.00 (0.620 at 12.0)" and r10[4].mark == ""
    assert r10[5].text == "needs +40.0 (0.950 at 50.0)" and r10[5].mark == ""
    assert (r10[6].text, r10[6].mark) == ("0.600", "second")
    assert (r10[7].text, r10[7].mark) == ("0.700", "best")
    # CoAnnotating is better than everyone but never marked: it needs more money
    assert all(r[5].mark == "" for r in t.rows)
    md = f.to_markdown()
    assert "**0.700**" in md and "<u>0.600</u>" in md and "**needs" not in md
    assert "- **QUORUM (paper preset), auditor style**, at equal spend: best in 3 of 3" in md
    losses = f.tables[2].rows
    assert [r[0] for r in losses] == ["QUORUM", "QUORUM"]
    assert losses[0][7] == "-0.020" and losses[0][8] == "2 of 3"


def test_spend_levels_from_the_dataset_prices() -> None:
    info = {"n_items": 200, "human_price": 0.1, "prices": {"x": 0.01, "y": 0.05}}
    run = SimpleNamespace(info=lambda d: info if d == "a" else None)
    st = pd.DataFrame(
        {
            "dataset": ["a", "a", "nope"],
            "setting": ["auditor", "dollars", "dollars"],
            "budget": [0.3, 0.3, 0.3],
        }
    )
    lv = spend_levels(run, st)
    # auditor: 60 human labels + the cheapest LLM on every item; dollars: 30% of 200 x 0.1
    assert lv == {("a", "auditor", 0.3): pytest.approx(8.0), ("a", "dollars", 0.3): 6.0}


def test_standing_block_has_both_views() -> None:
    txt = standing_block("- **QUORUM, dollars**, at equal spend: best in 1 of 1 cells", "- P")
    assert txt.index("At equal spend") < txt.index("at equal spend: best") < txt.index("- P")
    assert "paper-style" in standing_block("", "- P") and "At equal spend" not in standing_block(
        "", "- P"
    )


def test_standing_without_a_quorum_result() -> None:
    curves = {
        ("d", "dollars", "quorum"): [(0.1, 5.0, math.nan)],
        ("d", "dollars", "random"): [(0.1, 5.0, 0.5)],
    }
    st = equal_spend_standing(equal_spend_frame(_stats(curves), {("d", "dollars", 0.1): 5.0}))
    assert [c["standing"] for c in st["cells"]] == ["no result"]
    c = st["counts"]["all"]
    assert (c["cells"], c["best"], c["no result"]) == (1, 0, 1)
    assert "no successful run in 1" in "\n".join(standing_lines(st))
