"""Span tasks live: the prompt (with the item's context), constrained output (a grammar whose
quotes are runs of the text, a JSON schema), `quorum plan`, and a run end to end with two
local span models and a scripted team of three on the file queue (k = 2, one noisy person,
answering while the run waits): every item labelled within budget, the span vote and the
people's reliabilities, the quality estimate and the target mode on the span score, the
exports (CSV, JSONL, Parquet, a Hugging Face list of span structs) and the report page's
spans by source in headless Chromium. Bad input: spans outside the text, start >= end,
unknown types, overlapping spans, a 1 MB text. Synthetic texts: mechanics only."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from live_servers.fixtures import write_project
from live_servers.models import SPAN_WORDS
from live_servers.scripted_team import FileQueueTeam
from quorum.errors import DataValidationError
from quorum.live.humans.reliability import GradedVote, Reliability, estimate_graded
from quorum.live.machines.output import OutputConstraint
from quorum.live.project.config import load_project
from quorum.live.project.items import item_views, load_items
from quorum.live.run.plan import plan
from quorum.live.run.problem import make_builder
from quorum.tasks.base import ItemView
from quorum.tasks.registry import kind_of
from quorum.tasks.spans import decode_spans, encode_spans, span_grammar

TEXT = "Arsenal beat Spurs 2-0 at home on Sunday; the away side scored twice."
TYPES = ["Team", "Day"]
HOSTILE = '<script>window.__pwned=1</script><b id="hostile">Leeds</b> &amp; {text}'


def _plan_project(tmp_path):
    gold = [json.dumps([{"start": 13, "end": 18, "label": "Misleading"}]) if i % 2 else "[]"
            for i in range(12)]  # fmt: skip
    pd.DataFrame({"item_id": [f"r{i}" for i in range(12)], "text": [TEXT] * 12,
                  "gold_spans": gold}).to_csv(tmp_path / "items.csv", index=False)  # fmt: skip
    dead = {"api_base": "http://127.0.0.1:9/v1", "api_key_env": "QUORUM_SPANS_TEST_KEY"}
    data = {
        "name": "spans",
        "method": "quorum",
        "features": "light",
        "items": {"path": str(tmp_path / "items.csv"), "gold_column": "gold_spans"},
        "task": {"type": "spans", "labels": ["Contradictory", "Misleading"]},
        "budget": {"limit": 0.5},
        "annotators": [
            {"name": "a", "model": "openai/a", "price": 0.002, **dead},
            {"name": "b", "model": "openai/b", "price": 0.004, **dead},
            {"name": "team", "kind": "human", "price": 0.05},
        ],
        "humans": {"backend": "file"},
    }
    p = tmp_path / "project.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def test_a_span_project_plans_within_budget_with_the_span_prompt(tmp_path, monkeypatch):
    monkeypatch.delenv("QUORUM_SPANS_TEST_KEY", raising=False)
    cfg = load_project(_plan_project(tmp_path))
    p = plan(cfg, llm_accuracy=0.6)
    assert p.expected_spend <= 0.5 + 1e-12
    assert sum(p.llm_calls.values()) > 0 and p.human_labels > 0
    shown = json.dumps(p.row() if hasattr(p, "row") else p.__dict__, default=str)
    assert "Quote each span exactly" in shown and "Misleading" in shown


# -- the prompt and the constraint --------------------------------------------------------
def test_the_prompt_carries_the_context_and_the_answer_is_constrained(tmp_path):
    items = pd.DataFrame({"item_id": ["1"], "text": [TEXT], "data": ['{"home": "Arsenal"}']})
    items.to_csv(tmp_path / "items.csv", index=False)
    llm = {"name": "m", "model": "openai/m", "api_base": "http://127.0.0.1:9/v1", "price": 0.01}
    data = {"name": "ctx", "items": {"path": "items.csv", "context_column": "data"},
            "task": {"type": "spans", "labels": TYPES}, "budget": {"limit": 1.0},
            "annotators": [llm, {"name": "team", "kind": "human", "price": 0.1}]}  # fmt: skip
    cfg = load_project(write_project(tmp_path, data))
    (item,) = item_views(load_items(cfg))
    assert item.context == '{"home": "Arsenal"}'
    b = make_builder(cfg, cfg.annotators[0])
    msg = b.annotation_messages(item)[0]["content"]
    at_data = msg.index('This is the data: {"home": "Arsenal"}')
    assert at_data < msg.index(f"This is the text: {TEXT}")
    assert "context" not in b.added()  # the bundled context prompt places it
    # a prompt written without {context} is sent as written, and `quorum plan` says so
    data["annotators"][0]["prompt"] = "Mark the teams and days in: {text} ({labels})"
    cfg2 = load_project(write_project(tmp_path, data))
    b2 = make_builder(cfg2, cfg2.annotators[0])
    assert '"home"' not in b2.annotation_messages(item)[0]["content"]
    assert "context is not sent" in b2.added()
    g = OutputConstraint("grammar", False, b).params(item)["grammar"]
    assert 't0 ::= "Arsenal" (" " t1)?' in g and 'type ::= "\\"Team\\"" | "\\"Day\\""' in g
    js = OutputConstraint("json_schema", False, b).params(item)["response_format"]
    spans = js["json_schema"]["schema"]["properties"]["spans"]
    assert spans["items"]["properties"]["type"]["enum"] == TYPES


def test_the_grammar_parses_in_llama_cpp_and_falls_back_for_huge_texts():
    llama_cpp = pytest.importorskip("llama_cpp")
    for text in (TEXT, 'He said "no" \\ 😀 café\n\tbye', HOSTILE):
        llama_cpp.LlamaGrammar.from_string(span_grammar(text, TYPES, 5), verbose=False)
    huge = span_grammar("word " * 200_000, TYPES)  # a 1 MB text: any string as quote
    assert len(huge) < 1000 and "t0 ::=" not in huge
    llama_cpp.LlamaGrammar.from_string(huge, verbose=False)


def test_answers_with_offsets_quotes_and_bad_spans():
    kind = kind_of("spans", TYPES)
    item = ItemView("1", TEXT)
    ok = kind.parse(None, '[{"start": 0, "end": 7, "label": "Team"}]', item)
    assert ok.ok and ok.output == '[[0,7,"Team"]]'
    for bad, why in [
        ('[[0, 999, "Team"]]', "outside the text"),
        ('[[7, 7, "Team"]]', "start >= end"),
        ('[[0, 7, "Player"]]', "unknown type"),
    ]:
        got = kind.parse(None, bad, item)
        assert not got.ok and why in got.reason
        assert kind.match_human(bad, item) is None
    # overlapping spans are allowed (an error inside an error, nested entities)
    both = '[[0,18,"Team"],[13,18,"Team"]]'
    assert kind.match_human(both, item) == both
    q = kind.parse(None, '[{"quote": "Spurs", "type": "Team"}, {"quote": "Leeds", "type": "Team"}]',
                   item)  # fmt: skip
    assert q.ok and q.output == '[[13,18,"Team"]]' and "not in the text" in q.reason
    # an answer cut by max_tokens keeps its complete spans, and says so
    cut = kind.parse(None, '[{"quote": "Spurs", "type": "Team"}, {"quote": "Sun', item)
    assert cut.ok and cut.output == '[[13,18,"Team"]]' and "stops mid-list" in cut.reason
    assert not kind.parse(None, '[{"quote": "Sun', item).ok
    assert "0 <= start < end <= 69" in kind.human_answer_help(item)


def test_label_studio_regions_are_joined_into_one_span_list():
    DAY = "Day of the week"
    kind = kind_of("spans", ["Team", "Day"], {"Day": DAY})
    text = "😀 Arsenal on Sunday"
    region = {"from_name": "spans", "to_name": "text", "type": "labels"}
    results = [
        {**region, "value": {"start": 2, "end": 9, "text": "Arsenal", "labels": ["Team"]}},
        # offsets counted in UTF-16 code units (the emoji twice) are read back as characters
        {**region, "value": {"start": 14, "end": 20, "text": "Sunday", "labels": [DAY]}},
        {"from_name": "other", "value": {"choices": ["x"]}},
    ]
    raw = kind.labelstudio_result(results, lambda s: s, text)
    assert kind.match_human(raw, ItemView("1", text)) == '[[2,9,"Team"],[13,19,"Day"]]'
    assert kind.labelstudio_result([], lambda s: s, text) == "[]"  # no region: no span
    broken = kind.labelstudio_result([{**region, "value": {"labels": ["Team"]}}], str, text)
    assert kind.match_human(broken, ItemView("1", text)) is None  # reported, not guessed
    from quorum.live.labelstudio.predictions import Prediction, prediction_result

    pred = prediction_result(Prediction("m", '[[2,9,"Team"],[13,19,"Day"]]'), kind, [])
    assert [r["value"]["labels"] for r in pred["result"]] == [["Team"], ["Day of the week"]]


def test_people_reliability_and_vote_over_span_lists():
    kind = kind_of("spans", TYPES)
    g = GradedVote.of(kind)
    gold = encode_spans([(0, 7, "Team"), (13, 18, "Team")])
    wrong = encode_spans([(0, 7, "Day")])
    rows = []
    for t in range(6):
        rows += [(f"t{t}", "ann", gold), (f"t{t}", "bad", wrong)]
    frame = pd.DataFrame(rows, columns=["task", "worker", "label"])
    rel = estimate_graded(frame, {"t0": gold, "t1": gold, "t2": gold}, g, 0.8, 4.0)
    assert rel.accuracy("ann") > 0.8 > 0.5 > rel.accuracy("bad")
    assert rel.people["ann"].gold_correct == 3 and rel.people["bad"].gold_correct == 0
    v = rel.vote([("bad", wrong), ("ann", gold)])
    assert v.label == gold and v.confidence == pytest.approx(rel.accuracy("ann"))
    # equal weights: a span is kept where more than half the weight marked it
    even = Reliability(graded=g).vote([("x", gold), ("y", encode_spans([(0, 7, "Team")]))])
    assert even.label == '[[0,7,"Team"]]'


def test_bad_gold_spans_are_one_clear_error(tmp_path):
    for gold, why in [
        ('[{"start": 0, "end": 999, "label": "Team"}]', "outside the text"),
        ('[{"start": 5, "end": 5, "label": "Team"}]', "start >= end"),
        ('[{"start": 0, "end": 7, "label": "Coach"}]', "unknown type"),
        ('[{"start": 0, "end": 7}]', "start, end and label"),
    ]:
        pd.DataFrame({"item_id": ["a", "b"], "text": [TEXT, TEXT], "gold": ["[]", gold]}).to_csv(
            tmp_path / "items.csv", index=False
        )
        data = {"name": "bad", "items": {"path": "items.csv", "gold_column": "gold"},
                "task": {"type": "spans", "labels": TYPES}, "budget": {"limit": 1.0},
                "annotators": [{"name": "team", "kind": "human", "price": 0.1},
                               {"name": "m", "kind": "model", "price": 0.01,
                                "model": "live_servers.models:span_spotter"}]}  # fmt: skip
        cfg = load_project(write_project(tmp_path, data))
        with pytest.raises(DataValidationError, match=why) as exc:
            load_items(cfg)
        assert "item b" in str(exc.value) and "\n" not in str(exc.value)


# -- a run end to end: local span models and a scripted team ----------------------------------
def _texts(n: int) -> list[str]:
    teams = [w for w in SPAN_WORDS["Team"]]
    days = list(SPAN_WORDS["Day"])
    out = []
    for i in range(n):
        a, b = teams[i % 4], teams[(i + 1) % 4]
        out.append(f"{a} beat {b} {i % 3}-{i % 2} on {days[i % 2]}; {a} scored late.")
    out[1] = HOSTILE + " " + out[1]
    out[2] = out[2] + " " + "filler " * 150_000  # about 1 MB: shown in part, never lost
    return out


def _gold(text: str) -> str:
    spans = []
    for typ, words in SPAN_WORDS.items():
        for w in words:
            at = text.find(w)
            while at >= 0:
                spans.append((at, at + len(w), typ))
                at = text.find(w, at + 1)
    return encode_spans(spans)


class SpanTeam(FileQueueTeam):
    """ann and bea answer the gold spans (bea also an overlapping span inside her first
    one), bad marks the first word as a Day; two different people per item, in turn.
    Records the pending.csv columns it saw."""

    PEOPLE = ("ann", "bea", "bad")

    def __init__(self, queue: Path, texts: dict[str, str]) -> None:
        self.texts = texts
        super().__init__(queue, self.answer, self.PEOPLE)

    def answer(self, who: str, item: str) -> str:
        text = self.texts[item]
        if who == "bad":  # the first word, with the wrong type
            return json.dumps([{"start": 0, "end": len(text.split()[0]), "label": "Day"}])
        spans = [{"start": a, "end": b, "label": t} for a, b, t in decode_spans(_gold(text))]
        if who == "bea" and spans:
            s = spans[0]
            spans.append({"start": s["start"] + 1, "end": s["end"], "label": s["label"]})
        return json.dumps(spans)


def _run_project(tmp_path: Path, n: int = 12, **budget) -> tuple:
    texts = _texts(n)
    ids = [f"s{i:02d}" for i in range(n)]
    pd.DataFrame({
        "item_id": ids, "text": texts, "gold": [_gold(t) for t in texts],
        "data": [json.dumps({"match": i}) for i in range(n)],
    }).to_parquet(tmp_path / "items.parquet")  # fmt: skip
    data = {
        "name": "spans-team",
        "method": "quorum",
        "features": "light",
        "items": {"path": "items.parquet", "gold_column": "gold", "context_column": "data"},
        "task": {"type": "spans", "labels": TYPES, "instructions": "Mark teams and days."},
        "budget": {"limit": 0.6, "quality_checks": 0.3, "confidence": 0.9, **budget},
        "annotators": [
            {"name": "spotter", "kind": "model", "price": 0.004,
             "model": "live_servers.models:span_spotter"},
            {"name": "days", "kind": "model", "price": 0.002,
             "model": "live_servers.models:span_days_only"},
            {"name": "team", "kind": "human", "price": 0.02},
        ],
        "humans": {"labels_per_item": 2, "min_evidence": 4},
    }  # fmt: skip
    cfg = load_project(write_project(tmp_path, data))
    from quorum.live.run.runner import annotate

    team = SpanTeam(cfg.queue_dir, dict(zip(ids, texts, strict=True)))
    try:
        s = annotate(cfg, quiet=True, wait=120)
    finally:
        team.close()
    return cfg, s, team, dict(zip(ids, texts, strict=True))


def _sql(cfg, q: str) -> pd.DataFrame:
    con = sqlite3.connect(cfg.ledger_path)
    try:
        return pd.read_sql_query(q, con)
    finally:
        con.close()


@pytest.fixture(scope="module")
def team_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("spans-team")
    t0 = time.monotonic()
    out = _run_project(root)
    print(f"span team run: {time.monotonic() - t0:.1f} s")
    return out


def test_every_item_labelled_within_budget_by_models_and_people(team_run):
    from quorum.live.outputs.export import export_frame
    from quorum.live.outputs.status import status

    cfg, s, team, texts = team_run
    assert s.status == "finished" and s.pending_humans == 0
    st = status(cfg)
    assert float(st["spent"]) <= 0.6 + 1e-9 and float(st["held_for_humans"]) == 0
    ex = export_frame(cfg).set_index("item_id")
    assert ex["label"].notna().all() and len(ex) == len(texts)
    for iid, lab in ex["label"].items():  # every label a span list inside its own text
        assert all(0 <= a < b <= len(texts[iid]) for a, b, _ in decode_spans(lab))
    assert "context" in team.columns  # people see the item's context
    # the team: two different people per item, each label paid once
    slots = _sql(cfg, "SELECT * FROM human_labels")
    hq = _sql(cfg, "SELECT * FROM human_queue")
    assert len(hq) >= 2 and (hq["status"] == "answered").all()
    # two people per task, three on a check whose two disagreed (a third person, issue 38)
    people = slots.groupby("request_key")["person"].nunique()
    wanted = hq.set_index("request_key")["wanted"].fillna(1).astype(int)
    assert (people == wanted.reindex(people.index)).all() and people.isin([2, 3]).all()
    calls = _sql(cfg, "SELECT * FROM calls WHERE annotator='team'")
    assert calls["cost"].sum() == pytest.approx(0.02 * len(slots))
    # reliability: gold items check each person; bad is out-voted wherever she answered
    team_rel = {p["person"]: p for p in st["human_team"]}
    assert team_rel["bad"]["accuracy"] < 0.5 < min(team_rel["ann"]["accuracy"],
                                                     team_rel["bea"]["accuracy"])  # fmt: skip
    for r in hq.to_dict("records"):
        assert r["label"] == _gold(texts[r["item_id"]]), r  # the careful people's spans
        assert ex.loc[r["item_id"], "human"] and ex.loc[r["item_id"], "label"] == r["label"]
    # the quality estimate is on the span score (span F1 of the machine labels checked)
    q = s.quality
    assert q is not None and q["quality_n_checks"] >= 1
    assert 0.0 <= q["quality_low"] <= q["quality_estimate"] <= q["quality_high"] <= 1.0
    assert st["quality"] == q
    # agreement between people and with models is the mean span F1 (no kappa, no confusion)
    ag = st["agreement"]
    assert ag["measure"] == "mean Span F1" and all(not m["confusion"] for m in ag["models"])
    pair = {(p["a"], p["b"]): p for p in ag["people"]["pairs"]}
    assert pair[("ann", "bea")]["agreement"] > pair[("ann", "bad")]["agreement"]


def test_exports_keep_the_spans_and_load_with_datasets(team_run, tmp_path):
    import datasets

    from quorum.live.outputs.files import export
    from quorum.live.outputs.hf import write_hf

    cfg, _s, _team, texts = team_run
    csv_df = pd.read_csv(export(cfg, "csv", tmp_path / "l.csv"), dtype=str).set_index("item_id")
    pq = pd.read_parquet(export(cfg, "parquet", tmp_path / "l.parquet")).set_index("item_id")
    with export(cfg, "jsonl", tmp_path / "l.jsonl").open() as f:
        jl = {r["item_id"]: r for r in map(json.loads, f)}
    for iid in texts:
        assert csv_df.loc[iid, "label"] == pq.loc[iid, "label"] == jl[iid]["label"]
        assert csv_df.loc[iid, "text"] == texts[iid]  # the 1 MB item whole
    ds = datasets.load_from_disk(str(write_hf(cfg, tmp_path / "hf")))
    feat = ds.features["label"]
    assert isinstance(feat, datasets.List) and feat.feature["label"].names == TYPES
    for row in ds:
        want = decode_spans(csv_df.loc[row["item_id"], "label"])
        got = tuple((s["start"], s["end"], feat.feature["label"].int2str(s["label"]))
                    for s in row["label"])  # fmt: skip
        assert got == want
    assert "token-classification" in (tmp_path / "hf" / "README.md").read_text()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium (Debian's chromedriver), as tests/test_report_browser.py's."""
    import tempfile

    from test_report_browser import CHROMEDRIVER, CHROMIUM, FLAGS

    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.is_file()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: run `make browser` (apt chromium)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="profile-", dir=tmp_path_factory.mktemp("chromium"))
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def test_the_report_shows_spans_by_source_escaped(team_run, browser, tmp_path):
    from selenium.webdriver.common.by import By

    from quorum.live.outputs.report import write_report

    cfg, _s, _team, texts = team_run
    page = write_report(cfg, tmp_path / "report.html")
    assert len(page.read_bytes()) < 2_000_000  # the 1 MB item is shown in part
    browser.get(page.as_uri())
    assert browser.execute_script("return window.__pwned === undefined")
    assert not browser.find_elements(By.ID, "hostile")  # the item's markup is text
    sec = browser.find_element(By.ID, "spans")
    items = sec.find_elements(By.CSS_SELECTOR, "div.span-item")
    assert 1 <= len(items) <= 4
    sources = {r.get_attribute("data-source") for r in sec.find_elements(By.CSS_SELECTOR, "tr")}
    assert {"label", "llm", "person"} <= sources
    for it in items:
        iid = it.get_attribute("data-item")
        label_row = it.find_element(By.CSS_SELECTOR, "tr[data-source=label]")
        marks = label_row.find_elements(By.CSS_SELECTOR, "mark.span-label")
        want = [texts[iid][a:b] for a, b, _ in decode_spans(_gold(texts[iid]))]
        assert marks and {m.text for m in marks} <= set(want)
    shown = browser.execute_script("return document.getElementById('spans').innerText")
    assert "<script>window.__pwned=1</script>" in shown or "__pwned" not in shown


def test_target_mode_on_the_span_score(tmp_path):
    from quorum.live.outputs.status import status

    cfg, s, _team, _texts = _run_project(tmp_path, n=10, target_quality=0.5)
    st = status(cfg)
    t, q = st["target"], st["quality"]
    print("target", t, "quality", q)
    assert t is not None and t["target_quality"] == 0.5 and t["looks"] >= 1
    assert s.status == "finished" and float(st["spent"]) <= 0.6 + 1e-9
    assert q is not None and 0.0 <= q["quality_low"] <= q["quality_high"] <= 1.0
    if t["reached"]:  # the lower bound of the span F1 estimate reached the target
        assert q["quality_low"] >= 0.5 - 1e-9


def test_decisions_name_an_llm_never_asked_on_the_calibration_items():
    """A project whose money buys a human for every item asks no LLM on calibration items:
    its accuracy there is none, and the report and the dataset card say n/a (they raised)."""
    from quorum.live.outputs.decisions import decision_lines

    lines = decision_lines({"dollars_strategy": "audit", "calibration_accuracy": {"m": None}})
    assert any("m n/a" in line for line in lines)


def test_a_1mb_item_refused_for_its_length_keeps_the_grammar_for_the_rest(tmp_path):
    """An endpoint that refuses a prompt longer than its context with HTTP 400 (llama.cpp's
    server does, grammar or not): the huge item's call fails at no cost and is recorded;
    the constraint was not why, so the other items keep their grammar (before, the first
    400 switched the annotator to free text for the rest of the run)."""
    from live_servers.fixtures import FakeServer
    from quorum.live.run.runner import annotate

    srv = FakeServer(tmp_path, "--max-prompt-chars", "20000")
    try:
        texts = [TEXT, "x " * 500_000, TEXT.replace("Arsenal", "Leeds"), TEXT + " Again."]
        ids = ["a", "huge", "b", "c"]
        pd.DataFrame({"item_id": ids, "text": texts}).to_csv(tmp_path / "items.csv", index=False)
        data = {
            "name": "huge", "features": "light", "items": {"path": "items.csv"},
            "method": "live_servers.routers:CascadeRouter",
            "method_params": {"batch": 1, "human_every": 1000, "confidence_every": 0},
            "task": {"type": "spans", "labels": TYPES}, "budget": {"limit": 1.0},
            "annotators": [{"name": "m", "model": "openai/m", "api_base": srv.api_base,
                            "price": 0.01, "output": "grammar", "max_retries": 1},
                           {"name": "team", "kind": "human", "price": 0.1}],
            "humans": {"backend": "file"},
        }  # fmt: skip
        cfg = load_project(write_project(tmp_path, data))
        annotate(cfg, quiet=True)
    finally:
        srv.stop()
    calls = _sql(cfg, "SELECT item_id, status, cost, error, params FROM calls WHERE "
                      "annotator='m' ORDER BY call_id").set_index("item_id")  # fmt: skip
    assert calls.loc["huge", "status"] == "failed" and calls.loc["huge", "cost"] == 0
    assert "context" in calls.loc["huge", "error"]
    ok = calls.drop(index="huge")
    assert (ok["status"] == "ok").all() and len(ok) == 3
    # every request after the huge one still carried its grammar (the ledger keeps the
    # params of the request, the server's log what was sent)
    log = srv.requests()
    big = [k for k, r in enumerate(log) if r["chars"] > 20000]
    assert len(big) == 2 and log[big[0]]["constrained"] and not log[big[1]]["constrained"]
    later = [r for r in log[big[-1] + 1 :] if r["chars"] <= 20000]
    assert later and all(r["constrained"] for r in later)
