"""The smoke bench end to end on real data: outputs, cache, report, both-worker determinism."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from quorum.bench.config import parse_config
from quorum.bench.runner import run_bench
from quorum.cli.main import app

pytestmark = pytest.mark.realdata


# `smoke_dir` (one `quorum bench smoke` folder) is in conftest.py, shared with
# test_report_browser.py.


def test_outputs(smoke_dir) -> None:
    for name in (
        "equal_spend",
        "summary",
        "main_auditor",
        "main_dollars",
        "features",
        "annotations",
        "sensitivity",
        "noisy",
        "overhead",
    ):
        assert (smoke_dir / "tables" / f"{name}.md").is_file(), name
    for name in (
        "pareto_auditor",
        "pareto_dollars",
        "budget_auditor",
        "budget_dollars",
        "dashboard",
    ):
        p = smoke_dir / "figures" / f"{name}.png"
        assert p.is_file() and p.read_bytes()[:4] == b"\x89PNG", name
    runs = pd.read_csv(smoke_dir / "runs.csv")
    assert (runs["status"] == "ok").all()
    assert {"main", "features", "noisy"} <= {e for x in runs["experiments"] for e in x.split(";")}
    main = (smoke_dir / "tables" / "main_auditor.md").read_text()
    assert "| QUORUM |" in main and "| QUORUM (paper preset) |" in main and "**" in main
    readme = (smoke_dir / "README.md").read_text()
    assert "quorum bench smoke" in readme and "QUORUM is best in" in readme
    assert readme.index("At equal spend") < readme.index("In the paper-style tables")
    assert "- **QUORUM (paper preset), dollars**, at equal spend: best in" in readme
    html = (smoke_dir / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 5
    assert 'src="http' not in html and "<table>" in html
    stats = json.loads((smoke_dir / "bench.json").read_text())
    assert stats["runs_failed"] == 0 and stats["machine"]["cores"]


def test_second_run_is_cached(smoke_dir) -> None:
    # what a second run costs is measured by scripts, not asserted here (a loaded machine)
    res = CliRunner().invoke(app, ["bench", "smoke", "--out", str(smoke_dir), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "0 runs computed" in res.output
    stats = json.loads((smoke_dir / "bench.json").read_text())
    assert stats["first_run"]["runs_computed"] == stats["runs_total"]


def test_report_command(smoke_dir, tmp_path) -> None:
    target = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", str(smoke_dir), "--output", str(target), "--rebuild"])
    assert res.exit_code == 0, res.output
    assert target.is_file() and "QUORUM benchmark report" in target.read_text()
    res = CliRunner().invoke(app, ["report", str(tmp_path / "nothing")])
    assert res.exit_code == 1


def test_bad_config_exits_cleanly(tmp_path) -> None:
    p = tmp_path / "c.toml"
    p.write_text('[main]\ndatasets = ["no-such-set"]\n')
    res = CliRunner().invoke(app, ["bench", str(p), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "unknown dataset" in res.output


def test_a_bench_of_quorum_alone_writes_its_tables(tmp_path, shared_data_dir) -> None:
    """A config that runs QUORUM and nothing to rank it against (every section is
    optional): the tables and the report are written, the standing says nothing. It used
    to stop with a KeyError ('setting') after every run was done."""
    p = tmp_path / "c.toml"
    p.write_text(
        '[main]\ndatasets = ["coannotating-stance/es"]\nmethods = ["quorum"]\n'
        'settings = ["dollars"]\nbudgets = [0.3]\nseeds = 1\n'
    )
    out = tmp_path / "o"
    res = CliRunner().invoke(app, ["bench", str(p), "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    runs = pd.read_csv(out / "runs.csv")
    assert runs["method"].tolist() == ["quorum"] and (runs["status"] == "ok").all()
    assert (out / "tables" / "main_dollars.md").is_file() and (out / "report.html").is_file()


def test_two_workers_match_one(tmp_path, shared_data_dir) -> None:
    cfg = parse_config(
        {
            "main": {
                "datasets": ["coannotating-stance/cat"],
                "methods": ["random", "quorum"],
                "settings": ["dollars"],
                "budgets": [0.3],
                "seeds": 2,
            },
            "run": {"chunk_size": 1},
        }
    )
    a = run_bench(cfg, tmp_path / "one", workers=1, progress=False)
    b = run_bench(cfg, tmp_path / "two", workers=2, progress=False)
    ra = {r["key"]: r for r in a.rows("main")}
    rb = {r["key"]: r for r in b.rows("main")}
    assert ra.keys() == rb.keys() and len(ra) == 4
    for k in ra:
        for col in ("accuracy", "mca", "cost", "human_labels", "llm_calls"):
            assert ra[k][col] == rb[k][col], col
    assert len({r["worker"] for r in rb.values()}) >= 1


def test_equal_spend_table(smoke_dir) -> None:
    """Every cell of the equal-spend tables against the runs behind it: the spend level is the
    budget's money, a method that spent no more than the level shows its mean quality (and
    what it did not spend), one that spent more is not compared, marks rank the others."""
    from quorum.bench.cache import JsonlStore
    from quorum.bench.tables import TableFile, fmt_num, method_name, rank_marks
    from quorum.bench.worker import group_key
    from quorum.routing.core.budget import budget_for_setting

    files = json.loads((smoke_dir / "tables" / "tables.json").read_text())
    assert files[0]["name"] == "equal_spend"  # the table a reader reads first
    f = TableFile.from_json(files[0])
    assert [t.title for t in f.tables][:3] == [
        "QUORUM at equal spend",
        "Auditor style at equal spend",
        "Dollars at equal spend",
    ]
    summary = f.tables[0]
    assert {r[0].text for r in summary.rows} == {"QUORUM", "QUORUM (paper preset)"}
    assert all(len(r) == len(summary.header) for r in summary.rows)
    runs = pd.read_csv(smoke_dir / "runs.csv")
    main = runs[runs["experiments"].str.contains("main")].copy()
    main["spend"] = main["cost"] + main.get("unpaid_cost", 0.0).fillna(0.0)
    info = JsonlStore(smoke_dir / "cache" / "datasets.jsonl").get(
        group_key("coannotating-stance/es", "gold")
    )
    methods = ["random", "quorum", "quorum-paper"]
    for t, setting in zip(f.tables[1:3], ["auditor", "dollars"], strict=True):
        assert t.header == ["Dataset", "Budget", "Spend level", *map(method_name, methods)]
        assert len(t.rows) == 1
        row = t.rows[0]
        level = budget_for_setting(
            setting, 0.3, info["n_items"], info["human_price"], min(info["prices"].values())
        )[0].limit
        assert [c.text for c in row[:3]] == [
            "coannotating-stance/es",
            "30%",
            fmt_num(level),
        ]
        vals = []
        for m, cell in zip(methods, row[3:], strict=True):
            sub = main[(main["method"] == m) & (main["setting"] == setting)]
            assert len(sub) == 2  # two seeds
            spend, q = sub["spend"].mean(), sub["accuracy"].mean()
            if spend > level * (1 + 1e-6):
                assert cell.text.startswith("needs +") and cell.mark == ""
                vals.append(float("nan"))
                continue
            assert cell.text.startswith(f"{q:.3f}")
            left = level - spend
            assert ("spent" in cell.text) == (left > 1e-6 * level)
            if left > 1e-6 * level:
                assert f"(spent {fmt_num(left)} less)" in cell.text
            vals.append(q)
        assert [c.mark for c in row[3:]] == rank_marks(vals)
