"""A live project's report while a run waits for people, before any label, and without a
ledger; ``quorum status`` prints the agreement figures (a keyword model, no LLM server)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from live_servers.fixtures import SST2_TASK, sst2_items, write_project
from quorum.cli.main import app
from quorum.live.ledger.store import Ledger
from quorum.live.outputs.report import write_report
from quorum.live.outputs.status import status
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate

pytestmark = pytest.mark.realdata

#: a person's name as a team could write it in answers.csv
HOSTILE = "<b>$x^{$|</b>"


def _project(tmp_path, data_dir, n: int = 8) -> object:
    return write_project(
        tmp_path,
        {
            "name": "waiting",
            "method": "live_servers.routers:CascadeRouter",
            "method_params": {"human_every": 2, "confidence_every": 0},
            "features": "light",
            "items": sst2_items(data_dir, n),
            "task": SST2_TASK,
            "budget": {"limit": 2.0},
            "annotators": [
                {"name": "kw", "kind": "model", "model": "live_servers.models:keyword_sentiment"},
                {"name": "team", "kind": "human", "price": 0.05},
            ],
        },
    )


def _text(html: str, section: str) -> str:
    """The text of one section of the page (tags dropped, spaces collapsed)."""
    body = html.split(f'<section id="{section}">', 1)[1].split("</section>", 1)[0]
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body)).strip()


def test_report_while_the_run_waits_for_people(tmp_path, shared_data_dir) -> None:
    path = _project(tmp_path, shared_data_dir)
    cfg = load_project(path)
    s = annotate(cfg, quiet=True)  # nobody answers: the run stops, waiting
    assert s.status == "pending" and s.pending_humans >= 1
    st = status(cfg)
    res = CliRunner().invoke(app, ["report", str(path), "-o", str(tmp_path / "page.html")])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "page.html").read_text()
    assert "(provisional)" in _text(page, "overview")
    assert f"Held for pending humans ${st['held_for_humans']}" in _text(page, "overview")
    assert st["held_for_humans"] != "0"
    tasks = _text(page, "tasks")
    assert f"pending {len(st['pending_humans'])}" in tasks and "answered 0" in tasks
    for item in st["pending_humans"]:
        assert item in tasks
    assert "No human label yet." in _text(page, "people")
    assert "No item has both a human vote" in _text(page, "models")
    assert "No estimate" in _text(page, "quality")
    # the money held for the pending tasks is part of the team's spending
    team = next(r for r in st["per_annotator"].to_dict("records") if r["annotator"] == "team")
    assert f"team {team['calls']} 0 0 0 {team['pending']} ${team['cost']}" in _text(page, "money")
    # the default target is next to the project file
    assert write_report(cfg) == tmp_path / "waiting-report.html"


def test_report_before_any_label_and_without_a_ledger(tmp_path, shared_data_dir) -> None:
    path = _project(tmp_path, shared_data_dir)
    cfg = load_project(path)
    res = CliRunner().invoke(app, ["report", str(path)])
    assert res.exit_code == 2 and "no ledger at" in res.output and "Traceback" not in res.output
    Ledger(cfg.ledger_path).close()  # a ledger without any run
    out = write_report(cfg, tmp_path / "empty.html")
    page = out.read_text()
    assert "No labels yet" in _text(page, "sources") and "no run yet" in page
    assert "labelled 0/0" in _text(page, "overview")


def test_status_prints_agreement(tmp_path, shared_data_dir) -> None:
    path = _project(tmp_path, shared_data_dir)
    cfg = load_project(path)
    annotate(cfg, quiet=True)
    queue = cfg.queue_dir
    pending = (queue / "pending.csv").read_text().splitlines()[1:]
    items = [line.split(",")[0] for line in pending]
    with (queue / "answers.csv").open("w") as f:
        f.write("item_id,label,annotator\n")
        for i, item in enumerate(items):
            f.write(f"{item},{'positive' if i % 2 else 'negative'},{HOSTILE}\n")
    annotate(cfg, quiet=True)
    res = CliRunner().invoke(app, ["status", str(path), "--json"])
    assert res.exit_code == 0, res.output
    ag = json.loads(res.output)["agreement"]
    (kw,) = ag["models"]
    assert kw["annotator"] == "kw" and kw["items"] == ag["human_votes"] >= 1
    text = CliRunner().invoke(app, ["status", str(path)]).output
    assert f"agreement of kw with the human vote: {kw['agreement']:.3f} on {kw['items']}" in text
    # a person's name from answers.csv is text everywhere: escaped in the page, no mathtext
    # in the figures, a table cell of the card
    page = write_report(cfg, tmp_path / "page.html").read_text()
    assert "&lt;b&gt;$x^{$|&lt;/b&gt;" in page and "<b>$x" not in page
    res = CliRunner().invoke(app, ["export", str(path), "-f", "hf", "-o", str(tmp_path / "hf")])
    assert res.exit_code == 0, res.output
    card = (tmp_path / "hf" / "README.md").read_text()
    # the card escapes the project's own text (issue 37): no raw HTML, the cell kept whole
    assert "<b>$x" not in card and "&lt;b&gt;$x^{$" in card
