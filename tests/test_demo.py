"""`quorum demo` (the README's first command) on a small real dataset."""

from __future__ import annotations

from typer.testing import CliRunner

from quorum.cli.main import app


def test_demo_prints_both_methods_and_says_who_spent_more(shared_data_dir):
    res = CliRunner().invoke(
        app, ["demo", "--dataset", "llms-for-css/flute", "--seeds", "1", "--budget", "0.3"]
    )
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    for word in ("auditor", "dollars", "random", "quorum", "accuracy", "cost"):
        assert word in out
    # the demo compares at the same budget; where spend differs it says so, with the amount
    # (auditor: QUORUM also buys the cheapest LLM on the items humans label, 150 x 0.01)
    assert "auditor: quorum spent 1.50 more than random at the same budget" in out
    assert "equal spend" in out
