"""Pairwise judgements live, with the real servers (issue 36's "done when"): the process's Label
Studio (a careful and a noisy person; live_servers.sessions), SmolLM2 behind llama.cpp.

- the page Label Studio 1.23.2 renders for a pair: the instruction, the two outputs side by
  side, the choice below them; a person's click read back as the output's number;
- LLMBar's 6 shortest pairs judged by two SmolLM2 judges asked in both orders and two
  scripted people answering in Label Studio while ``quorum annotate --wait`` runs (k = 2),
  QUORUM routing within the budget: every pair labelled, each judge's verdict in each order
  and their consistency exported (``scripts/pairwise_live_run.py`` prints the figures).
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path

import pandas as pd
import pytest

from live_servers.sessions import LabelStudioView, label_studio_users
from quorum.live.humans.queue import HumanTask
from quorum.live.labelstudio.client import LabelStudioClient
from quorum.live.labelstudio.queue import LabelStudioHumanQueue
from quorum.tasks.base import ItemView, TaskType
from quorum.tasks.registry import kind_of
from test_labelstudio import _label_in_browser, browser  # noqa: F401 - headless Chromium

pytestmark = [pytest.mark.labelstudio, pytest.mark.slow]

_spec = importlib.util.spec_from_file_location(
    "pairwise_live_run", Path(__file__).parents[1] / "scripts" / "pairwise_live_run.py"
)
assert _spec is not None and _spec.loader is not None
scenario = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scenario)


@pytest.fixture(scope="module")
def server(label_studio):
    """The process's shared Label Studio (live_servers.sessions) with the scenario's two
    people (careful, noisy)."""
    return LabelStudioView(label_studio, label_studio_users(label_studio, list(scenario.WRONG)))


def test_page_shows_the_pair_side_by_side(server, browser) -> None:  # noqa: F811
    careful = server.users[0]
    kind = kind_of("pairwise", ["1", "2"])
    q = LabelStudioHumanQueue(
        LabelStudioClient(server.url, server.admin.token), "pair-page", TaskType.pairwise,
        ["1", "2"],
    )  # fmt: skip
    parts = (("instruction", "Name a colour of the sky."), ("output_1", "Green, like grass."),
             ("output_2", "Blue, on a clear day."))  # fmt: skip
    item = ItemView("s1", "the pair's full text", None, parts)
    q.submit([HumanTask(item, "Which output follows the instruction?", kind.human_options(item))])
    seen: dict = {}

    def look(driver) -> None:
        shot = os.environ.get("QUORUM_PAIR_SHOT")  # a picture of the page, where asked
        if shot:
            driver.save_screenshot(shot)
        seen.update(
            driver.execute_script(
                "const at = t => { const e = [...document.querySelectorAll('*')].filter("
                "  x => x.innerText && x.innerText.trim() === t).pop();"
                "  if (!e) return null; const r = e.getBoundingClientRect();"
                "  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };"
                "const box = e => { if (!e) return null; const r = e.getBoundingClientRect();"
                "  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };"
                "const choice = [...document.querySelectorAll('label')].find("
                "  l => l.innerText.includes('Output (2)'));"
                "return {ins: at(arguments[0]), one: at(arguments[1]), two: at(arguments[2]),"
                " choice: box(choice || null)};",
                *(v for _, v in parts),
            )
        )

    _label_in_browser(browser, server, careful, q.links()["s1"], "Output (2)", look)
    ins, one, two, choice = seen["ins"], seen["one"], seen["two"], seen["choice"]
    assert ins and one and two and choice, seen
    assert one["right"] <= two["left"]  # side by side: output 1 on the left, 2 on the right
    assert abs(one["top"] - two["top"]) < 5  # on one line
    assert ins["bottom"] <= one["top"] and two["bottom"] <= choice["top"]  # above, below
    for _ in range(60):
        got = [a for a in q.poll() if a.item_id == "s1"]
        if got:
            break
        q.wait(1.0)
    assert got and got[-1].by == careful.email
    # the chosen option reads back as its label's value: output 2
    assert kind.match_human(got[-1].raw, item) == "2"
    q.close()


@pytest.fixture(scope="module")
def llama(smollm2_served):
    """The process's llama.cpp server with SmolLM2: its API base and its log (the scenario
    counts the requests it answered during the run)."""
    return smollm2_served


@pytest.mark.realdata
def test_llmbar_pairs_with_swap_judges_and_people(server, llama, shared_data_dir, tmp_path):
    api_base, log = llama
    budget = 0.8
    t0 = time.monotonic()
    fig = scenario.run(server, server.users, api_base, log, shared_data_dir, tmp_path / "run",
                       n_pairs=6, budget=budget, wait=420)  # fmt: skip
    print(json.dumps(fig, indent=1, default=str), f"{time.monotonic() - t0:.0f} s")
    assert fig["run_status"] == "finished"
    assert fig["labelled"] == 6  # every pair judged
    assert float(fig["spent"]) <= budget
    # two paid calls a pair, each made once (the server answered each request once)
    judges = {j["judge"]: j for j in fig["judges"]}
    assert judges and set(judges) <= {"smol-a", "smol-b"}
    assert fig["llm_calls_in_ledger"] == 2 * fig["judge_pairs_in_ledger"]
    assert fig["requests_llama_served"] >= fig["llm_calls_in_ledger"]
    for j in judges.values():
        assert j["pairs"] >= 1 and j["consistent"] is not None
        assert 0.0 <= j["picks_first_shown"] <= 1.0
    # the export: the pair's columns and each judge's verdict in each order
    assert fig["export_columns"] == ["instruction", "output_1", "output_2", "swap_verdicts"]
    rows = [json.loads(x) for x in Path(fig["exports"]["jsonl"]).read_text().splitlines()]
    asked = 0
    for r in rows:
        assert r["final"] and r["label"] in ("1", "2") and r["output_2"]
        for judge, v in r["swap_verdicts"].items():
            asked += 1
            assert judge in judges and v["given_order"] in ("1", "2", None)
            assert v["swapped_order"] in ("1", "2", None)
            if v["given_order"] and v["swapped_order"]:
                assert v["consistent"] == (v["given_order"] == v["swapped_order"])
    assert asked == fig["judge_pairs_in_ledger"]
    csv = pd.read_csv(fig["exports"]["csv"], dtype=str)
    assert {"instruction", "output_1", "output_2", "swap_verdicts"} <= set(csv.columns)
    # the people: two labels an item, the careful one trusted more and never out-voted
    people = {p["person"]: p for p in fig["people"]}
    careful, noisy = (people.get(e) for e in scenario.WRONG)
    if careful and noisy:
        assert careful["accuracy"] > noisy["accuracy"]
    human = [r for r in rows if r["human"]]
    gold = dict(pd.read_parquet(Path(fig["project"]).parent / "llmbar_slice.parquet")[
        ["item_id", "gold"]].itertuples(index=False))  # fmt: skip
    for r in human:
        assert len(r["human_labels"]) == 2 and r["label"] == gold[r["item_id"]]
