"""A live project's report page and its Hugging Face export, end to end.

Two LLM annotators served by llama-cpp-python (SmolLM2-135M) on 127.0.0.1 and a scripted team
of three on the file queue (``bad`` always gives the other label) label SST-2 items with the
QUORUM router; then ``quorum status --json``, ``quorum report`` opened in headless Chromium
(every section checked against the status), and ``quorum export -f hf`` read back with
``datasets.load_from_disk`` against the CSV export.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from live_servers.fixtures import (
    SST2_TASK,
    quorum_here,
    sst2_items,
    write_project,
)
from quorum.live.outputs.provenance import SOURCES
from quorum.live.outputs.report import render_page, report_data
from quorum.live.project.config import load_project
from quorum.live.run.runner import annotate
from test_live_team import Team, _gold
from test_report_browser import WIDTH, browser, js  # noqa: F401  (headless Chromium)

pytestmark = [pytest.mark.slow, pytest.mark.realdata]

N_ITEMS = 12
PRICE = 0.05
#: where the screenshot is kept when QUORUM_KEEP_SHOT is set (docs/live.md shows it)
DOCS_SHOT = Path(__file__).resolve().parents[1] / "docs" / "img" / "live-report.png"


@pytest.fixture(scope="module")
def smollm2(smollm2_served):
    """The process's llama.cpp server with SmolLM2 (live_servers.sessions): its API base and
    its log."""
    return smollm2_served


@pytest.fixture(scope="module")
def project(tmp_path_factory, shared_data_dir, smollm2):
    """The project, run once to the end with the team answering while the run waits."""
    api_base, _log = smollm2
    root = tmp_path_factory.mktemp("report-project")
    (root / "prompts").mkdir()
    (root / "prompts" / "a.txt").write_text(
        "Is this movie review negative or positive? Review: {text}\n"
        "Answer with one word: negative or positive."
    )
    (root / "prompts" / "b.txt").write_text(
        "Review: {text}\nIs the sentiment of this review negative or positive? "
        "Answer with one word."
    )
    llm = {"model": "openai/smollm2", "api_base": api_base, "max_tokens": 8,
           "temperature": 0, "seed": 0, "concurrency": 2, "timeout": 60}  # fmt: skip
    path = write_project(
        root,
        {
            "name": "sst2-team",
            "method": "quorum",
            "features": "light",
            "items": sst2_items(shared_data_dir, N_ITEMS),
            "task": {**SST2_TASK, "instructions": "Is the review positive?"},
            "budget": {"limit": 0.6},
            "annotators": [
                {"name": "smol-a", "prompt": "prompts/a.txt", "price": 0.001, **llm},
                {"name": "smol-b", "prompt": "prompts/b.txt", "price": 0.002, **llm},
                {"name": "team", "kind": "human", "price": PRICE},
            ],
            "humans": {"labels_per_item": 2, "min_evidence": 4},
        },
    )
    cfg = load_project(path)
    team = Team(cfg.queue_dir, _gold(shared_data_dir))
    try:
        s = annotate(cfg, quiet=True, wait=240)
    finally:
        team.close()
    assert s.status == "finished", s
    res = quorum_here("status", str(path), "--json")
    assert res.returncode == 0, res.stderr[-3000:]
    return path, json.loads(res.stdout)


@pytest.fixture(scope="module")
def page(project, browser, tmp_path_factory):  # noqa: F811
    path, _st = project
    out = tmp_path_factory.mktemp("page") / "report.html"
    res = quorum_here("report", str(path), "-o", str(out))
    assert res.returncode == 0 and f"wrote {out}" in res.stdout, res.stderr[-3000:]
    browser.get(out.as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    browser.logs = list(browser.get_log("browser"))
    return browser


def _rows(page, section: str, title: str) -> list[list[str]]:
    """The body cells of the table titled ``title`` in ``section`` (as shown)."""
    return js(
        page,
        """const h = [...document.querySelectorAll('#' + arguments[0] + ' h3')]
             .find(e => e.innerText.trim() === arguments[1]);
           if (!h) return null;
           let t = h.nextElementSibling;
           while (t && !t.querySelector('table')) t = t.nextElementSibling;
           return [...t.querySelectorAll('tbody tr')].map(r =>
             [...r.querySelectorAll('td')].map(c => c.innerText.trim()));""",
        section,
        title,
    )


def _f3(x) -> str:
    return "" if x is None else f"{x:.3f}"


def test_every_section_renders(page) -> None:
    from quorum.live.outputs.sections import SECTIONS

    h2 = js(page, "return [...document.querySelectorAll('section h2')].map(e => e.innerText)")
    assert h2 == [t for _k, t in SECTIONS]
    for key, _t in SECTIONS:
        h = js(page, f"return document.querySelector('#{key}').getBoundingClientRect().height")
        assert h > 60, key
    imgs = js(
        page,
        """return [...document.images].map(i => ({alt: i.alt, ok: i.complete,
             w: i.naturalWidth, shown: i.getBoundingClientRect().width}));""",
    )
    assert {i["alt"] for i in imgs} == {"money", "sources", "people", "confusion"}
    for i in imgs:
        assert i["ok"] and i["w"] > 100 and 100 < i["shown"] <= WIDTH, i
    text = js(page, "return document.body.innerText")
    assert "**" not in text and "`" not in text  # captions' Markdown rendered
    # every nav link leads to a section on the page
    hrefs = js(page, "return [...document.querySelectorAll('nav a')].map(a => a.hash)")
    assert hrefs == [f"#{k}" for k, _t in SECTIONS]


def test_overview_and_money_match_status(page, project) -> None:
    _path, st = project
    dd = js(
        page,
        """return Object.fromEntries([...document.querySelectorAll('#overview dd')]
             .map(d => [d.dataset.key, d.innerText.trim()]));""",
    )
    assert dd["Spent"] == f"${st['spent']}" and dd["Budget"] == f"${st['budget']}"
    assert dd["Left"] == f"${st['left']}" and dd["Paid"] == f"${st['paid']}"
    assert dd["Items"] == str(st["items"]) == str(N_ITEMS)
    assert dd["Labelled"] == str(st["labelled"])
    assert dd["Progress"] == st["line"]
    rows = {r[0]: r for r in _rows(page, "money", "Spending by annotator")}
    for a in st["per_annotator"]:
        r = rows[a["annotator"]]
        assert r[1] == str(a["calls"]) and r[2] == str(a["ok"]) and r[6] == f"${a['cost']}", r
    assert rows["all"][6] == f"${st['spent']}"
    assert {"smol-a", "team"} <= set(rows)  # QUORUM may never ask the dearer LLM


def test_sources_match_the_export(page, project, tmp_path) -> None:
    path, st = project
    csv = tmp_path / "labels.csv"
    assert quorum_here("export", str(path), "-f", "csv", "-o", str(csv)).returncode == 0
    df = pd.read_csv(csv, dtype=str)
    by = df["labelled_by"].map(json.loads)
    # counted here from labelled_by, independently of quorum.live.outputs.provenance
    want = {s: 0 for s in SOURCES}
    for b in by:
        if any(x.startswith("team") for x in b):
            want["human vote"] += 1
        elif b == ["label model"]:
            want["label model"] += 1
        elif b:
            want["agreeing LLMs" if len(b) > 1 else "one LLM"] += 1
        else:
            want["no label"] += 1
    got = {r[0]: int(r[1]) for r in _rows(page, "sources", "Items by the source of their label")}
    assert got == want and sum(got.values()) == st["items"]
    assert got["human vote"] == int(df["human"].map({"True": 1, "False": 0}).sum())
    assert got["human vote"] >= 1 and got["agreeing LLMs"] + got["one LLM"] >= 1


def test_people_and_models_match_status(page, project) -> None:
    _path, st = project
    ag = st["agreement"]
    people = {r[0]: r for r in _rows(page, "people", "Each person")}
    team = {p["person"]: p for p in st["human_team"]}
    assert set(people) == set(team) == {"ann", "bea", "bad"}
    for p in ag["people"]["persons"]:
        r = people[p["person"]]
        assert r[1] == str(p["labels"]) and r[2] == _f3(team[p["person"]]["accuracy"])
        assert r[5] == _f3(p["agree_with_others"]) and r[6] == _f3(p["agreement_vote"])
    # the noisy person: never with the vote, below the careful ones on reliability
    assert people["bad"][6] == "0.000" and float(people["bad"][2]) < float(people["ann"][2])
    text = js(page, "return document.querySelector('#people').innerText")
    assert f"Krippendorff's alpha among the people: {_f3(ag['people']['alpha'])}" in text
    pairs = _rows(page, "people", "Pairs of people")
    assert [[r[0], r[1], r[2], r[3], r[4]] for r in pairs] == [
        [p["a"], p["b"], str(p["items"]), _f3(p["agreement"]), _f3(p["kappa"])]
        for p in ag["people"]["pairs"]
    ]
    models = [m for m in ag["models"] if m["items"]]
    assert models, ag["models"]
    shown = {r[0]: r for r in _rows(page, "models", "Each model against the human vote")}
    for m in models:
        r = shown[m["annotator"]]
        assert r[1:] == [str(m["answers"]), str(m["items"]), _f3(m["agreement"]),
                         _f3(m["kappa"])]  # fmt: skip
        conf = _rows(page, "models", f"{m['annotator']}: confusion with the human vote")
        labels = list(m["confusion"])
        for row, t in zip(conf, labels, strict=True):
            assert row[0].startswith(t)
            assert row[1 : 1 + len(labels)] == [str(m["confusion"][t][p]) for p in labels]
            assert row[-2] == str(m["per_class"][t]["items"])
            assert row[-1] == _f3(m["per_class"][t]["agreement"])


def test_tasks_decisions_and_quality(page, project) -> None:
    _path, st = project
    tasks = {r[0]: int(r[1]) for r in _rows(page, "tasks", "Human tasks by status")}
    for k in ("pending", "answered", "expired"):
        assert tasks[k] == st["human_tasks"].get(k, 0)
    assert tasks["answered"] >= 1 and tasks["pending"] == 0
    items = js(page, "return [...document.querySelectorAll('#decisions li')].map(e => e.innerText)")
    dec = st["router_decisions"]
    assert dec and len(items) >= 2, (dec, items)
    if "dollars_strategy" in dec:
        assert any(x.startswith("Strategy: ") and dec["dollars_strategy"] in x.lower()
                   for x in items), items  # fmt: skip
    # the machine annotators the ledger has no call of are named
    called = {a["annotator"] for a in st["per_annotator"] if a["calls"]}
    unasked = [a for a in ("smol-a", "smol-b") if a not in called]
    never = [x for x in items if x.startswith("Never asked")]
    assert never == ([f"Never asked (no call in the ledger): {', '.join(unasked)}."]
                     if unasked else []), items  # fmt: skip
    quality = js(page, "return document.querySelector('#quality').innerText")
    q = st.get("quality") or {}
    if q.get("quality_estimate") is None:
        assert "No estimate" in quality
    else:  # checks are on by default: the estimate of the status's quality object
        assert f"{q['quality_estimate']:.3f}" in quality
        assert f"from {q['quality_n_checks']} random human checks" in quality


def test_screenshot(page, tmp_path_factory) -> None:
    from PIL import Image, ImageStat

    height = js(page, "return document.documentElement.scrollHeight")
    page.set_window_size(WIDTH, min(height + 100, 12000))
    shot = tmp_path_factory.mktemp("shot") / "live-report.png"
    try:
        assert page.save_screenshot(str(shot))
    finally:
        page.set_window_size(WIDTH, 1000)
    with Image.open(shot) as im:
        rgb = im.convert("RGB")
    assert rgb.height > 2000 and ImageStat.Stat(rgb.convert("L")).stddev[0] > 15
    assert len(rgb.getcolors(maxcolors=1 << 20) or []) > 500
    print(f"screenshot: {shot}")
    import os

    if os.environ.get("QUORUM_KEEP_SHOT"):
        shutil.copyfile(shot, DOCS_SHOT)


def test_no_console_errors(page) -> None:
    logs = page.logs + page.get_log("browser")
    assert [e for e in logs if e["level"] == "SEVERE"] == []


def test_hf_export_reads_back_like_the_csv(project, tmp_path) -> None:
    import datasets

    path, st = project
    out, csv = tmp_path / "hf", tmp_path / "labels.csv"
    res = quorum_here("export", str(path), "-f", "hf", "-o", str(out))
    assert res.returncode == 0 and f"wrote {out}" in res.stdout, res.stderr[-2000:]
    assert quorum_here("export", str(path), "-f", "csv", "-o", str(csv)).returncode == 0
    df = pd.read_csv(csv, dtype=str, keep_default_na=False)
    ds = datasets.load_from_disk(str(out))
    assert len(ds) == len(df) == N_ITEMS
    feat = ds.features["label"]
    assert isinstance(feat, datasets.ClassLabel) and feat.names == ["0", "1"]
    got = [feat.int2str(x) if x >= 0 else "" for x in ds["label"]]
    assert ds["item_id"] == df["item_id"].tolist() and got == df["label"].tolist()
    assert ds["label_name"] == df["label_name"].tolist()
    assert [json.loads(x) for x in ds["answers"]] == df["answers"].map(json.loads).tolist()
    card = (out / "README.md").read_text()
    assert f"Spent ${st['spent']} of a budget of ${st['budget']}" in card
    sources = ds.features["source"]
    counts = pd.Series([sources.int2str(x) for x in ds["source"]]).value_counts()
    for s in SOURCES:
        assert f"| {s} | {int(counts.get(s, 0))} |" in card
    for name in ("smol-a", "smol-b", "team", "ann", "bea", "bad"):
        assert name in card
    assert "## The router and its decisions" in card and "Method `quorum`" in card
    # the library face gives the same rows
    import quorum as q

    frame = q.labels(path)
    assert frame["label"].fillna("").tolist() == got
    assert frame["source"].tolist() == [sources.int2str(x) for x in ds["source"]]
    assert q.labels(path, format="hf")["label"] == ds["label"]


def test_estimate_shown_when_the_status_has_one(project) -> None:
    """Issue #24's keys in the status: the section shows the estimate and its interval."""
    path, _st = project
    cfg = load_project(path)
    data = report_data(cfg)
    q = data["status"]["quality"]  # checks are on by default: this run has an estimate
    assert q is not None and f"Estimated accuracy {q['quality_estimate']:.3f}" in render_page(
        cfg, data
    )
    data["status"]["quality"] = None
    assert "No estimate" in render_page(cfg, data)
    data["status"]["quality"] = {"quality_estimate": 0.8125, "quality_low": 0.71,
                                 "quality_high": 0.9, "quality_n_checks": 7}  # fmt: skip
    page = render_page(cfg, data)
    assert "Estimated accuracy 0.812 (interval 0.710 to 0.900), from 7 random human checks." in page
    data["status"]["target"] = {"message": "target 0.800 reached at 90% confidence"}
    assert "Quality target: target 0.800 reached at 90% confidence." in render_page(cfg, data)
