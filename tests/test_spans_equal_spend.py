"""The span bench's auditor reading at both limits (scripts/spans_equal_spend.py, issue 35)."""

import importlib.util
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "spans_equal_spend", Path(__file__).resolve().parents[1] / "scripts" / "spans_equal_spend.py"
)
ses = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(ses)

# (spend, quality, human labels, budget): a Random-like method that leaves B c_min unspent
RANDOM = [(14.8, 0.386, 120.0, 0.3), (22.0, 0.561, 200.0, 0.5)]


def test_unspent_money_buys_no_humans_beyond_b():
    """Money alone would read the line towards 50 % (more than B humans); both limits keep
    the run at B, spending less than the money."""
    q, c, _, status = ses.at_both_limits(RANDOM, 16.0, 120)
    assert status == "less" and abs(q - 0.386) < 1e-9 and abs(c - 14.8) < 1e-9


def test_a_mixture_within_both_limits_is_read():
    """With fewer humans than B at the cheaper run, the line is followed until either
    limit binds (here the money: w = 0.5, 130 humans in expectation <= 150)."""
    pts = [(10.0, 0.3, 110.0, 0.3), (20.0, 0.5, 150.0, 0.5)]
    q, c, h, status = ses.at_both_limits(pts, 15.0, 150)
    assert status == "at" and abs(q - 0.4) < 1e-9 and abs(h - 130.0) < 1e-9
    q, c, h, status = ses.at_both_limits(pts, 15.0, 120)  # the human limit binds at w = 0.25
    assert status == "less" and abs(q - 0.35) < 1e-9 and abs(c - 12.5) < 1e-9


def test_never_within_the_limits_is_not_ranked():
    q, c, _, status = ses.at_both_limits([(20.0, 0.6, 100.0, 0.3)], 16.0, 120)
    assert status == "above" and (q, c) == (0.6, 20.0)
