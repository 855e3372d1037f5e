"""Span tasks live, end to end with what users run: SmolLM2 behind llama-cpp-python's server
(the grammar whose quotes are runs of the text, the prompt carrying the report's data) and
two scripted people in a real Label Studio (k = 2 labels per item, ``bob`` noisy) answering
while ``quorum annotate --wait`` waits, on a small slice of d2t-eval (real LLM-written
reports with their data). The first span ``alice`` gives is given through the labelling page
in headless Chromium (a label clicked, the words selected with the mouse, Submit); it is in
the export at its offsets, every item is labelled within budget, and the Hugging Face export
loads with ``datasets``.

Needs Label Studio (``make labelstudio``), Chromium and SmolLM2 (``make test``): slow.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from live_servers.fixtures import write_project
from quorum.live.labelstudio.client import LabelStudioClient
from quorum.live.labelstudio.page import ITEM_KEY
from quorum.tasks.spans import decode_spans
from test_labelstudio import TOKEN_ENV, _login, browser, server  # noqa: F401 - fixtures

pytestmark = [pytest.mark.labelstudio, pytest.mark.slow, pytest.mark.realdata]

TYPES = ["Contradictory", "Not checkable", "Misleading", "Incoherent", "Repetitive", "Other"]
INSTRUCTIONS = (
    "Mark the errors of the report against its data: Contradictory (contradicts the data), "
    "Not checkable (cannot be verified from the data), Misleading, Incoherent, Repetitive, "
    "Other."
)
N_ITEMS = 4
#: the money: a human task (2 x 0.05) for some items, not all, SmolLM2 (0.002) for the rest
LIMIT = 0.22

# the viewport rectangle of a text's first and last character inside the labelled text,
# scrolled into view
RECT = """
const [needle] = arguments;
const roots = [...document.querySelectorAll('.lsf-richtext__container')];
for (const root of roots.slice(-1)) {
  const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT); let n;
  while (n = w.nextNode()) {
    const i = n.textContent.indexOf(needle);
    if (i < 0) continue;
    n.parentElement.scrollIntoView({block: 'center'});
    const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
    const a = r.getBoundingClientRect();
    r.setStart(n, i + needle.length - 1); r.setEnd(n, i + needle.length);
    const b = r.getBoundingClientRect();
    return [a.left, a.top + a.height / 2, b.right, b.top + b.height / 2];
  }
}
return null;"""
LABEL = (
    "return [...document.querySelectorAll('.lsf-label')].find(l => "
    "l.querySelector('.lsf-label__text').innerText.trim() === arguments[0]) || null"
)


@pytest.fixture(scope="module")
def smollm2_4k(smollm2_served):
    """The process's SmolLM2 (live_servers.sessions): a 4096-token context, as a d2t prompt
    carries the report's data."""
    return smollm2_served


def d2t_slice(data_dir: Path, folder: Path, n: int) -> tuple[Path, pd.DataFrame]:
    """The ``n`` d2t-eval items with a gold span and the shortest report and data (the
    prompt's length)."""
    df = pd.read_parquet(data_dir / "span_d2t_eval" / "items.parquet")
    df = df[df["gold_spans"].map(lambda g: len(json.loads(g)) > 0)]
    df = df.assign(size=df["text"].str.len() + df["context"].str.len())
    df = df.sort_values(["size", "item_id"]).head(n)
    out = folder / "d2t.parquet"
    df[["item_id", "text", "context", "gold_spans"]].to_parquet(out)
    return out, df.set_index("item_id")


def select_in_browser(driver, srv, user, url: str, quote: str, label: str) -> None:
    """As ``user``: open the task, click ``label``, select ``quote`` with the mouse (press
    on its first character, release on its last), submit."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    _login(driver, srv, user)
    driver.get(url)
    wait = WebDriverWait(driver, 90)
    for _ in range(40):  # the page re-renders while it loads: retry stale elements
        try:
            el = wait.until(lambda d: d.execute_script(LABEL, label))
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", el)
            el.click()
            time.sleep(0.3)
            el = driver.execute_script(LABEL, label)
            if el is not None and "selected" in (el.get_attribute("class") or ""):
                break
        except StaleElementReferenceException:
            pass
        time.sleep(0.5)
    else:
        raise AssertionError(f"could not pick the label {label!r} on {url}")
    x0, y0, x1, y1 = wait.until(lambda d: d.execute_script(RECT, quote))
    drag = ActionBuilder(driver)
    drag.pointer_action.move_to_location(int(x0) + 1, int(y0))
    drag.pointer_action.pointer_down()
    drag.pointer_action.move_to_location(int(x1) - 1, int(y1))
    drag.pointer_action.pointer_up()
    drag.perform()
    region = (
        "return [...document.querySelectorAll('.lsf-tree__node_type_richtextregion')]"
        ".map(e => e.innerText)"
    )
    wait.until(lambda d: any(quote in t for t in d.execute_script(region)))
    driver.find_element(By.XPATH, "//button[normalize-space(.)='Submit']").click()


class LabelStudioTeam:
    """alice (careful: the gold spans; her first one through the browser) and bob (noisy:
    the report's last word as Repetitive) answer every task of the project as it appears,
    through Label Studio's API with their own tokens, while the run waits."""

    def __init__(self, server, browser, title: str, gold: pd.DataFrame) -> None:  # noqa: F811
        self.server, self.browser, self.title, self.gold = server, browser, title, gold
        self.alice, self.bob = server.users
        self.by_browser: dict[str, Any] | None = None
        self.answered: dict[tuple[int, str], list[list[Any]]] = {}
        self.errors: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _tasks(self, admin: LabelStudioClient) -> list[dict]:
        projects = admin.request("GET", "/api/projects/", params={"title": self.title})
        found = [p for p in projects.get("results", []) if p["title"] == self.title]
        if not found:
            return []
        res = admin.request(
            "GET",
            "/api/tasks/",
            params={"project": found[0]["id"], "fields": "all", "page_size": 100},
        )
        self.project_id = found[0]["id"]
        return res.get("tasks", [])

    def _post(self, user, task_id: int, spans: list[list[Any]], text: str) -> None:
        result = [
            {"from_name": "spans", "to_name": "text", "type": "labels",
             "value": {"start": a, "end": b, "text": text[a:b], "labels": [lab]}}
            for a, b, lab in spans
        ]  # fmt: skip
        c = LabelStudioClient(self.server.url, user.pat)
        try:
            c.request("POST", f"/api/tasks/{task_id}/annotations/", json={"result": result})
        finally:
            c.close()

    def _answer(self, t: dict) -> None:
        iid = t["data"][ITEM_KEY]
        text = t["data"]["text"]
        done = {a.get("completed_by") for a in t.get("annotations") or []}
        gold = [list(s) for s in decode_spans(self.gold.loc[iid, "gold_spans"])]
        if self.alice.id not in done and (t["id"], "alice") not in self.answered:
            if self.by_browser is None and gold:
                a, b, lab = gold[0]
                url = f"{self.server.url}/projects/{self.project_id}/data?task={t['id']}"
                select_in_browser(self.browser, self.server, self.alice, url, text[a:b], lab)
                self.by_browser = {"item_id": iid, "span": [a, b, lab]}
                self.answered[(t["id"], "alice")] = [[a, b, lab]]
            else:
                self._post(self.alice, t["id"], gold, text)
                self.answered[(t["id"], "alice")] = gold
        if self.bob.id not in done and (t["id"], "bob") not in self.answered:
            last = text.rstrip(". ").split()[-1]
            a = text.rindex(last)
            wrong = [[a, a + len(last), "Repetitive"]]
            self._post(self.bob, t["id"], wrong, text)
            self.answered[(t["id"], "bob")] = wrong

    def _run(self) -> None:
        admin = LabelStudioClient(self.server.url, self.server.admin.token)
        try:
            while not self.stop.is_set():
                try:
                    for t in self._tasks(admin):
                        self._answer(t)
                except Exception as exc:  # reported by the test
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                    if len(self.errors) > 20:
                        return
                self.stop.wait(0.5)
        finally:
            admin.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=60)


def test_smollm2_and_two_people_in_label_studio_label_a_d2t_slice(
    server,  # noqa: F811 - the fixture
    browser,  # noqa: F811 - the fixture
    smollm2_4k,
    tmp_path,
    shared_data_dir,
    monkeypatch,
) -> None:
    import datasets

    from quorum.live.outputs.files import export
    from quorum.live.outputs.hf import write_hf
    from quorum.live.outputs.status import status
    from quorum.live.project.config import load_project
    from quorum.live.run.runner import annotate

    api_base, _log = smollm2_4k
    monkeypatch.setenv(TOKEN_ENV, server.admin.token)
    items, gold = d2t_slice(shared_data_dir, tmp_path, N_ITEMS)
    title = "d2t-spans"
    limit = LIMIT
    cfg = load_project(write_project(tmp_path, {
        "name": title,
        "method": "quorum",
        "features": "light",
        "items": {"path": str(items), "gold_column": "gold_spans", "context_column": "context"},
        "task": {"type": "spans", "labels": TYPES, "instructions": INSTRUCTIONS},
        "budget": {"limit": limit},
        "annotators": [
            {"name": "smollm2", "model": "openai/smollm2", "api_base": api_base,
             "price": 0.002, "max_tokens": 128, "temperature": 0, "seed": 0, "timeout": 300},
            {"name": "team", "kind": "human", "price": 0.05},
        ],
        "humans": {"backend": "labelstudio", "labels_per_item": 2, "min_evidence": 2,
                   "labelstudio": {"url": server.url, "token_env": TOKEN_ENV,
                                   "project": title}},
    }))  # fmt: skip
    team = LabelStudioTeam(server, browser, title, gold)
    t0 = time.monotonic()
    try:
        s = annotate(cfg, quiet=True, wait=900)
    finally:
        team.close()
    took = time.monotonic() - t0
    assert not team.errors, team.errors[:3]
    con = sqlite3.connect(cfg.ledger_path)
    calls = pd.read_sql_query("SELECT * FROM calls", con)
    slots = pd.read_sql_query("SELECT * FROM human_labels", con)
    con.close()
    st = status(cfg)
    llm = calls[(calls["annotator"] == "smollm2") & (calls["kind"] == "annotate")]
    print(
        f"{N_ITEMS} d2t items in {took:.0f} s: {len(llm)} SmolLM2 call(s) "
        f"({(llm['status'] == 'ok').sum()} ok, parse notes {llm['parse_note'].dropna().tolist()}), "
        f"{len(slots)} human label(s), spent {st['spent']} of {limit}; "
        f"browser span {team.by_browser}"
    )
    assert s.status == "finished" and s.pending_humans == 0
    assert float(st["spent"]) <= limit + 1e-9 and float(st["held_for_humans"]) == 0
    for r in llm.to_dict("records"):  # constrained: every quote was found in the text
        assert "grammar" in json.loads(r["params"])
        if r["status"] == "ok":
            assert not r["parse_note"] or "not in the text" not in r["parse_note"]
            assert r["prompt"].index("This is the data:") < r["prompt"].index("This is the text:")
    # the span given in the browser is alice's label of that item, at its offsets
    assert team.by_browser is not None
    iid, span = team.by_browser["item_id"], team.by_browser["span"]
    out = export(cfg, "jsonl", tmp_path / "labels.jsonl")
    rows = {r["item_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == set(gold.index) and all(r["label"] is not None for r in rows.values())
    given = {g["by"]: g["label"] for g in rows[iid]["human_labels"]}
    assert json.loads(given[team.alice.email]) == [span]
    text = gold.loc[iid, "text"]
    assert text[span[0] : span[1]] == gold.loc[iid, "text"][span[0] : span[1]]
    # two people per human item, each label paid once; bob (noisy) rates below alice
    assert (slots.groupby("request_key")["person"].nunique() == 2).all()
    people = {p["person"]: p for p in st["human_team"]}
    assert people[team.bob.email]["accuracy"] < people[team.alice.email]["accuracy"]
    # the Hugging Face export: a list of span structs per item, loaded with `datasets`
    ds = datasets.load_from_disk(str(write_hf(cfg, tmp_path / "hf")))
    assert len(ds) == N_ITEMS and isinstance(ds.features["label"], datasets.List)
    names = ds.features["label"].feature["label"]
    by_id = {r["item_id"]: r for r in ds}
    got = [(x["start"], x["end"], names.int2str(x["label"])) for x in by_id[iid]["label"]]
    assert got == [tuple(x) for x in decode_spans(rows[iid]["label"])]
