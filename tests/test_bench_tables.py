"""Table marks, statistics, QUORUM's standing and the Pareto frontier."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from quorum.bench.figures import pareto_front, pretty_context_names
from quorum.bench.standing import dominates, standing_from_stats, standing_text
from quorum.bench.tables import Cell, Table, TableFile, ci95, fmt_pm, mean_sd, rank_marks


def test_rank_marks_best_second_and_ties() -> None:
    assert rank_marks([0.1, 0.3, 0.2]) == ["", "best", "second"]
    assert rank_marks([0.3001, 0.3004, 0.2]) == ["best", "best", "second"]
    assert rank_marks([5.0, 3.0, 4.0], higher=False) == ["", "best", "second"]
    assert rank_marks([math.nan, 0.5]) == ["", ""]
    assert rank_marks([0.5]) == [""]


def test_markdown_and_html_marks() -> None:
    t = Table("T", ["a", "b"], [["x|y", Cell("1", "best")], ["z", Cell("2", "second")]], "cap")
    md = t.to_markdown()
    assert "**1**" in md and "<u>2</u>" in md and "x\\|y" in md and "cap" in md
    h = t.to_html()
    assert "<b>1</b>" in h and "<u>2</u>" in h
    f = TableFile("n", "Title", "intro", [t])
    assert TableFile.from_json(f.to_json()).to_markdown() == f.to_markdown()


def test_statistics() -> None:
    m, sd, n = mean_sd([1.0, 2.0, 3.0, None])
    assert (m, n) == (2.0, 3) and math.isclose(sd, 1.0)
    m, h, n = ci95([1.0, 2.0, 3.0])
    assert m == 2.0 and math.isclose(h, 4.303 / math.sqrt(3), rel_tol=1e-3)
    assert ci95([1.0]) == (1.0, 0.0, 1)
    assert fmt_pm(0.12345, 0.001) == "0.123 ± 0.001"
    assert fmt_pm(math.nan, 0) == "-"


def _stats(values: dict[tuple[str, str, float], dict[str, float]]) -> pd.DataFrame:
    recs = []
    for (d, s, b), by_m in values.items():
        for m, q in by_m.items():
            cost = b * 100 * (2.0 if m == "cdi" else 1.0)  # cdi pays for confidence too
            recs.append(
                {"dataset": d, "setting": s, "budget": b, "method": m, "q": q, "cost": cost}
            )
    return pd.DataFrame(recs)


def test_standing_counts_and_gaps() -> None:
    st = _stats(
        {
            ("a", "auditor", 0.1): {"quorum": 0.9, "random": 0.8, "cdi": 0.85},
            ("a", "auditor", 0.3): {"quorum": 0.8, "random": 0.9, "cdi": 0.7},
            ("a", "dollars", 0.1): {"quorum": 0.6, "random": 0.9, "cdi": 0.7},
            ("b", "dollars", 0.1): {"quorum": 0.5, "random": 0.5, "cdi": 0.4},
        }
    )
    res = standing_from_stats(st)
    c = res["counts"]["all"]
    assert (c["cells"], c["best"], c["second"], c["behind"]) == (4, 2, 1, 1)
    assert math.isclose(c["best_mean_gap"], (0.05 + 0.0) / 2)
    assert math.isclose(c["behind_mean_gap"], -0.3)
    assert res["counts"]["dollars"]["cells"] == 2
    # a/auditor/10%: best; a/auditor/30%: random (same cost) is better -> dominated;
    # a/dollars/10%: random better at the same cost; b/dollars: tied with random at same cost
    assert [c["pareto"] for c in res["cells"]] == [True, False, False, True]
    assert c["pareto"] == 2
    text = standing_text(res)
    assert "best in 2 of 4" in text and "Largest shortfall: a, dollars, 10%" in text


def test_pareto_front() -> None:
    x = np.array([1.0, 2.0, 3.0, 2.5, 1.0])
    y = np.array([0.5, 0.7, 0.6, 0.9, 0.4])
    assert list(pareto_front(x, y)) == [0, 1, 3]


def test_pretty_context_names() -> None:
    # traces cached by older versions carry placeholders
    names = ["phi0", "phi1", "b_t", "m:llm-a", "bias", "phi9"]
    assert pretty_context_names(names, ["len", "ttr"]) == [
        "len",
        "ttr",
        "b_t",
        "m[llm-a]",
        "bias",
        "phi9",
    ]
    # runs now carry ContextBuilder's real names, kept as they are
    real = ["len", "ttr", "b", "p", "m[llm-a]", "bias"]
    assert pretty_context_names(real, ["len", "ttr"]) == real


def test_dominates() -> None:
    assert dominates(10.0, 0.9, 10.0, 0.8)
    assert not dominates(10.0, 0.8004, 10.0, 0.8)  # within rounding
    assert dominates(9.0, 0.8, 10.0, 0.8)  # cheaper, as good
    assert not dominates(9.95, 0.8, 10.0, 0.8)  # < 1% cheaper
    assert not dominates(11.0, 0.95, 10.0, 0.8)  # dearer


def test_replace_marked() -> None:
    from quorum.bench.report import STANDING_MARKERS, replace_marked

    a, b = STANDING_MARKERS
    text = f"head\n{a}\nold\n{b}\ntail\n"
    assert replace_marked(text, STANDING_MARKERS, "new") == f"head\n{a}\n\nnew\n\n{b}\ntail\n"
    assert replace_marked("no markers", STANDING_MARKERS, "x") is None
