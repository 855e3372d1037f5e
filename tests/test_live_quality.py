"""Live: the random quality checks of ``[budget] quality_checks`` go to a scripted team (one
of them noisy) through the file queue, and the estimate comes out of ``quorum annotate``,
``status`` and a resumed run (docs/quality.md)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from typer.testing import CliRunner

from live_servers.fixtures import write_project
from quorum.cli.main import app
from quorum.live.outputs.export import export_frame
from quorum.live.outputs.status import status
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate
from test_live_team import Team, _gold, _project, _sql

pytestmark = pytest.mark.realdata


def test_quality_checks_through_the_team_and_resume(tmp_path, shared_data_dir) -> None:
    gold = _gold(shared_data_dir)
    data = _project(shared_data_dir, 16, budget=1.2, labels_per_item=2, min_evidence=4)
    data["budget"].update({"quality_checks": 0.3, "confidence": 0.9})
    path = write_project(tmp_path, data)
    cfg = load_project(path)
    team = Team(cfg.queue_dir, gold)  # ann and bea right, bad wrong: noisy checks
    try:
        s = annotate(cfg, quiet=True, wait=120)
    finally:
        team.close()
    assert s.status == "finished" and s.pending_humans == 0
    q = s.quality
    assert q is not None and q["pending_checks"] == 0
    assert 1 <= q["quality_n_checks"] < q["quality_n_sampled_from"]  # a sample, not a census
    assert q["quality_confidence"] == 0.9
    assert 0.0 <= q["quality_low"] <= q["quality_estimate"] <= q["quality_high"] <= 1.0
    # every check is a human task answered by one of the team, paid once, within budget
    tasks = _sql(cfg, "SELECT * FROM human_queue")
    assert (tasks["status"] == "answered").all()
    checked = s.quality and set(tasks["item_id"])
    print("quality", q, "human tasks", len(tasks))
    assert checked and len(tasks) >= q["quality_n_checks"]
    st = status(cfg)
    assert st["quality"] == q and Decimal(st["spent"]) <= Decimal("1.2")
    out = CliRunner().invoke(app, ["status", str(path)]).output
    assert f"from {q['quality_n_checks']} random checks" in out and "90% interval" in out
    # the export says which items were checked and how their machine label fared
    ex = export_frame(cfg).set_index("item_id")
    done = ex["quality_check"].dropna()
    assert len(done) == q["quality_n_checks"] and set(done.unique()) <= {0.0, 1.0}
    assert ex.loc[done.index, "human"].all()  # a checked item's label is the human's
    # a resumed run replays the ledger: the same checks, the same estimate, nothing new paid
    calls = len(_sql(cfg, "SELECT * FROM calls"))
    s2 = annotate(cfg, quiet=True)
    assert s2.quality == q and len(_sql(cfg, "SELECT * FROM calls")) == calls
