"""Live pairwise projects with judges asked in both orders (``swap = true``), without any
server: deterministic local judges (tests/live_servers/models.py: one prefers the longer
output wherever it is shown, one always the output shown first), the gold column as the
human, the QUORUM router. What is checked: two paid calls per pair, each in the ledger with
its own request key, the second order's verdict mapped back; the pair's consistency in
``swap_pairs``; the router's outcome (an inconsistent pair is paid and has no vote); both
calls' money held before the first leaves, and never past the budget; the export (CSV,
JSONL, Parquet, Hugging Face) with the pair's columns and each judge's verdict in each
order; the status and the report page; bad pairs; what people see."""

from __future__ import annotations

import csv
import hashlib
import json
import logging
from pathlib import Path

import pandas as pd
import pytest

from live_servers.fixtures import write_project
from quorum.errors import ConfigError, DataValidationError
from quorum.live.humans.queue import FileHumanQueue, HumanTask
from quorum.live.labelstudio.page import label_config, task_data
from quorum.live.ledger.store import Ledger
from quorum.live.machines.calls import Redactor
from quorum.live.machines.swap import SwapAnnotator
from quorum.live.outputs.export import export_frame
from quorum.live.outputs.files import export
from quorum.live.outputs.hf import hf_dataset
from quorum.live.outputs.sections import models_section
from quorum.live.outputs.status import status
from quorum.live.project.config import load_project
from quorum.live.project.items import item_views, load_items
from quorum.live.run.plan import plan
from quorum.live.run.problem import build_arms, make_parser
from quorum.live.run.runner import annotate
from quorum.live.run.source import LiveSource
from quorum.routing.core.budget import to_units
from quorum.tasks.base import ItemView
from quorum.tasks.registry import kind_of

#: a pair per row: the longer output is the gold one on even rows only
PAIRS = [
    (f"p{i}", f"Instruction {i}", "long answer " * (1 + i % 3), "short", "1" if i % 2 else "2")
    for i in range(8)
]


def _items(folder: Path, rows=PAIRS, cols=("item_id", "instruction", "output_1", "output_2",
                                           "gold")) -> Path:  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "pairs.csv"
    pd.DataFrame(rows, columns=list(cols)).to_csv(p, index=False)
    return p


def _project(folder: Path, budget: float = 0.6, rows=PAIRS, **extra) -> dict:
    return {
        "name": "pairs",
        "method": "quorum",
        "features": "light",
        "items": {"path": str(_items(folder, rows)), "gold_column": "gold"},
        "task": {"type": "pairwise", "labels": ["1", "2"]},
        "budget": {"limit": budget},
        "human_price": 0.1,
        "annotators": [
            {"name": "longer", "kind": "model", "model": "live_servers.models:longer_output",
             "price": 0.01, "swap": True},
            {"name": "biased", "kind": "model", "model": "live_servers.models:first_shown",
             "price": 0.005, "swap": True},
        ],
        **extra,
    }  # fmt: skip


def _sql(cfg, q: str) -> pd.DataFrame:
    led = Ledger(cfg.ledger_path, readonly=True)
    try:
        return led.frame(q)
    finally:
        led.close()


def test_swap_judges_end_to_end(tmp_path) -> None:
    cfg = load_project(write_project(tmp_path, _project(tmp_path)))
    s = annotate(cfg, quiet=True)
    assert s.status == "finished"
    calls = _sql(cfg, "SELECT * FROM calls WHERE annotator != 'gold' ORDER BY call_id")
    pairs = _sql(cfg, "SELECT * FROM swap_pairs")
    assert len(pairs) and (pairs["cost"].notna()).all()
    assert len(calls) == 2 * len(pairs)  # two paid calls a pair, each its own row
    by_key = calls.set_index("request_key")
    for p in pairs.to_dict("records"):
        a, b = by_key.loc[p["first_key"]], by_key.loc[p["second_key"]]
        assert a["item_id"] == b["item_id"] == p["item_id"] and a["status"] == b["status"] == "ok"
        assert a["prompt"] != b["prompt"]  # the second order shows the outputs exchanged
        # the second verdict is stored in the original numbering, the raw answer as given
        assert b["output"] == p["second"] and "read as" in b["parse_note"]
        assert p["cost"] == pytest.approx(a["cost"] + b["cost"])
        if p["annotator"] == "biased":  # always the output shown first: never consistent
            assert (a["output"], b["output"], p["consistent"]) == ("1", "2", 0)
            assert pd.isna(p["answer"])
        else:  # the longer output wherever it is shown: always consistent
            assert p["consistent"] == 1 and p["answer"] == a["output"] == b["output"]
    dec = _sql(cfg, "SELECT * FROM decisions WHERE source='call' AND annotator != 'gold'")
    price = {"biased": 0.01, "longer": 0.02}  # both calls
    for r in dec.to_dict("records"):
        assert r["cost"] == pytest.approx(price[r["annotator"]])
        assert r["status"] == ("unparseable" if r["annotator"] == "biased" else "ok")
    st = status(cfg)
    assert float(st["spent"]) <= cfg.budget.limit + 1e-12
    paid = _sql(cfg, "SELECT sum(cost) AS c FROM calls WHERE status='ok'")["c"].iloc[0]
    assert float(st["spent"]) == pytest.approx(paid)
    judges = {r["judge"]: r for r in st["pair_judges"]}
    n = pairs.groupby("annotator").size()
    if "biased" in judges:
        b = judges["biased"]
        assert (b["pairs"], b["consistent"], b["inconsistent"]) == (n["biased"], 0.0, n["biased"])
        assert (b["picks_first_shown"], b["wins_1"], b["answered"]) == (1.0, 1.0, 0)
    lj = judges["longer"]
    assert (lj["consistent"], lj["inconsistent"], lj["answered"]) == (1.0, 0, n["longer"])
    # the export: the pair's columns, each judge's verdict in each order
    frame = export_frame(cfg).set_index("item_id")
    for i, ins, o1, o2, _gold in PAIRS:
        assert tuple(frame.loc[i, ["instruction", "output_1", "output_2"]]) == (ins, o1, o2)
    for p in pairs.to_dict("records"):
        v = frame.loc[p["item_id"], "swap_verdicts"][p["annotator"]]
        answer = None if pd.isna(p["answer"]) else p["answer"]
        assert v == {"given_order": p["first"], "swapped_order": p["second"],
                     "consistent": bool(p["consistent"]), "answer": answer}  # fmt: skip
    for fmt in ("csv", "jsonl", "parquet"):
        out = export(cfg, fmt, tmp_path / f"labels.{fmt}")
        if fmt == "jsonl":
            back = pd.DataFrame([json.loads(x) for x in out.read_text().splitlines()])
        else:
            back = pd.read_csv(out, dtype=str) if fmt == "csv" else pd.read_parquet(out)
            back["swap_verdicts"] = back["swap_verdicts"].map(json.loads)
        back = back.set_index("item_id")
        assert list(back.index) == list(frame.index)
        assert back["output_2"].tolist() == frame["output_2"].tolist()
        assert back["swap_verdicts"].tolist() == frame["swap_verdicts"].tolist()
    ds = hf_dataset(cfg)
    assert {"instruction", "output_1", "output_2", "swap_verdicts"} <= set(ds.column_names)
    row = ds[[r["item_id"] for r in ds].index(pairs["item_id"].iloc[0])]
    assert json.loads(row["swap_verdicts"]) == frame.loc[row["item_id"], "swap_verdicts"]
    body = models_section(cfg, st)["body"]  # the report page's section of the models
    assert "Pairwise judges asked in both orders" in body and "first shown wins" in body
    assert f"<td>{lj['pairs']}</td>" in body
    # `quorum plan` prices a swap judge as its two calls
    assert plan(cfg).prices == {"longer": 0.02, "biased": 0.01, "gold": 0.1}
    # a second run finds every call in the ledger: nothing is made or paid again
    before = len(_sql(cfg, "SELECT * FROM calls"))
    again = annotate(cfg, quiet=True)
    assert len(_sql(cfg, "SELECT * FROM calls")) == before
    assert again.spent == pytest.approx(s.spent)


def _source(cfg, ledger) -> LiveSource:
    items = load_items(cfg)
    views = item_views(items, cfg.task.kind.item_fields)
    arms, human = build_arms(cfg, items, views, Redactor())
    run_id = ledger.start_run("t", "x", "{}", "m", 0, cfg.budget.limit)
    return LiveSource(
        task_type=cfg.task.type, items=views, annotators=arms, ledger=ledger, run_id=run_id,
        budget_limit=cfg.budget.limit, parser=make_parser(cfg), human=human,
    )  # fmt: skip


def test_both_calls_are_held_before_the_first_leaves(tmp_path) -> None:
    """A pair is started only where the budget has both calls' money: with room for one
    call and not two, no call is made; a half-made pair needs only its second call; a
    first order that fails stops the pair (nothing is held afterwards)."""
    proj = _project(tmp_path, budget=0.015)  # one call of 'longer' (0.01), not two
    proj["annotators"].append({"name": "crash", "kind": "model", "swap": True,
                               "model": "live_servers.models:broken", "price": 0.001})  # fmt: skip
    cfg = load_project(write_project(tmp_path, proj))
    led = Ledger(cfg.ledger_path)
    src = _source(cfg, led)
    try:
        ann = src.annotators["longer"]
        assert isinstance(ann, SwapAnnotator) and src.price("longer") == pytest.approx(0.02)
        out = src.annotate("p0", "longer")
        assert out.status == "failed" and "budget" in (out.raw or "") and out.cost == 0
        made = _sql(cfg, "SELECT status, cost, error FROM calls WHERE annotator='longer'")
        assert (made["status"] == "failed").all() and made["cost"].sum() == 0
        assert made["error"].str.startswith("project budget reached").all()
        assert src.guard.held_u == 0
        # a first order paid earlier (a pair cut off before its second call): the second
        # alone is left, and the 0.005 the budget has left is not its price
        first, _second = ann.orders(src.items["p1"])
        got = src._loop.run(src.calls.execute(ann, first, frozen=False, skip_unpaid=False))
        assert got.status == "ok" and src.guard.committed_u == to_units(0.01)
        out = src.annotate("p1", "longer")
        assert out.status == "failed" and src.guard.held_u == 0
        # with the money for the second call, the pair is finished from the ledger's first
        src.guard.limit_u = to_units(0.02)
        src.guard.bound()  # the pass's cap follows the new limit
        out = src.annotate("p1", "longer")
        assert out.status == "ok" and out.cost == pytest.approx(0.02)
        assert float(src.ledger.money()["paid"]) == pytest.approx(0.02)
        # paid answers handed to the router before it plans (``given_calls``): one outcome
        # a pair, at both calls' cost; a pair with one order paid is an answer without a vote
        src.guard.limit_u = to_units(0.03)
        src.guard.bound()  # the pass's cap follows the new limit
        first3, _ = ann.orders(src.items["p3"])
        src._loop.run(src.calls.execute(ann, first3, frozen=False, skip_unpaid=False))
        ids = _sql(cfg, "SELECT call_id FROM calls WHERE annotator='longer' AND status='ok'")
        src.ledger.give_calls(ids["call_id"].tolist())
        prior = {o.item_id: o for o in src.prior_outcomes()}
        assert set(prior) == {"p1", "p3"}
        assert prior["p1"].status == "ok" and prior["p1"].cost == pytest.approx(0.02)
        assert prior["p1"].output == out.output
        assert (prior["p3"].status, prior["p3"].output) == ("unparseable", None)
        assert prior["p3"].cost == pytest.approx(0.01)
        # the first order fails: the second is not made, nothing stays held
        src.guard.limit_u = to_units(1.0)
        src.guard.bound()  # the pass's cap follows the new limit
        out = src.annotate("p2", "crash")
        assert out.status == "failed" and out.cost == 0 and src.guard.held_u == 0
        crash = _sql(cfg, "SELECT * FROM calls WHERE annotator='crash'")
        assert len(crash) == 1 and crash["status"].iloc[0] == "failed"
    finally:
        src.close()
        led.close()


def _load(tmp_path: Path, rows, cols=None, **task) -> pd.DataFrame:
    folder = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
    proj = _project(folder)
    items = {"path": str(_items(folder, rows, cols) if cols else _items(folder, rows))}
    items.update(task.pop("items", {}))
    proj["items"] = items
    proj["task"].update(task)
    proj["annotators"].append({"name": "team", "kind": "human", "price": 0.1})
    return load_items(load_project(write_project(folder, proj)))


def test_bad_pairs_are_one_line_errors_or_notes(tmp_path, caplog) -> None:
    good = [("a", "Say hi", "hi", "bye", "1"), ("b", "Count", "1 2 3", "one", "1")]
    with pytest.raises(ConfigError, match=r"no pair of output columns .*only \['output_1'\]"):
        _load(tmp_path, [r[:3] for r in good], ("item_id", "instruction", "output_1"))
    with pytest.raises(ConfigError, match=r"items.pair_columns names \['answer_b'\]"):
        _load(tmp_path, good, items={"pair_columns": ["instruction", "output_1", "answer_b"]})
    same = [*good, ("c", "Echo", "same", " same ", "1")]
    with pytest.raises(DataValidationError, match=r"1 item\(s\) have identical outputs.*'c'"):
        _load(tmp_path, same)
    ok = _load(tmp_path, same, labels=["1", "2", "tie"])  # a tie is an answer: kept
    assert len(ok) == 3
    with caplog.at_level(logging.WARNING, logger="quorum.live"):
        empty = _load(tmp_path, [*good, ("d", "Say", "", "something", "2")])
    assert empty.set_index("item_id").loc["d", "output_1"] == ""  # an empty output is one
    assert "1 pair(s) with an empty output (e.g. ['d'])" in caplog.text
    # a JSON null is no output at all: an error naming the item
    folder = tmp_path / "jsonl"
    proj = _project(folder)
    (folder / "pairs.jsonl").write_text(
        "\n".join(json.dumps({"item_id": i, "instruction": s, "output_1": a,
                              "output_2": None if i == "b" else b}) for i, s, a, b, _ in good)
    )  # fmt: skip
    proj["items"] = {"path": str(folder / "pairs.jsonl")}
    proj["annotators"].append({"name": "team", "kind": "human", "price": 0.1})
    with pytest.raises(DataValidationError, match=r"1 item\(s\) have no 'output_2' .*'b'"):
        load_items(load_project(write_project(folder, proj)))
    # other column names, and a text template of them: the swapped text exchanges them
    cols = ("id", "prompt", "response_a", "response_b", "gold")
    custom = _load(tmp_path, good, cols, items={
        "id_column": "id", "pair_columns": ["prompt", "response_a", "response_b"],
        "text_template": "Q: {prompt} | A: {response_a} | B: {response_b}"})  # fmt: skip
    row = custom.set_index("item_id").loc["a"]
    assert row["text"] == "Q: Say hi | A: hi | B: bye"
    assert row["text_swapped"] == "Q: Say hi | A: bye | B: hi"
    assert (row["instruction"], row["output_1"], row["output_2"]) == ("Say hi", "hi", "bye")


def test_swap_keys_are_checked(tmp_path) -> None:
    base = _project(tmp_path)

    def check(change, pattern: str) -> None:
        proj = json.loads(json.dumps(base))
        change(proj)
        with pytest.raises(ConfigError, match=pattern):
            load_project(write_project(tmp_path, proj))

    def classify(p):
        p["task"] = {"type": "classification", "labels": ["1", "2"]}

    check(classify, r"swap needs a pairwise task \(task.type is 'classification'\)")
    check(lambda p: p["annotators"][0].update(swap_rule="tie"), r"swap_rule 'tie' needs the")
    check(lambda p: p["items"].update(text_column="instruction"), r"items.text_column: a pair")
    human = {"name": "h", "kind": "human", "price": 0.1, "swap": True}
    check(lambda p: p["annotators"].append(human), "swap is for machine annotators")

    def cols(p):
        classify(p)
        p["annotators"][0]["swap"] = p["annotators"][1]["swap"] = False
        p["items"]["pair_columns"] = ["a", "b", "c"]

    check(cols, "items.pair_columns is for a pairwise task")
    # unset, the new keys leave a project's fingerprint as it was before them (the hash
    # of its dump without them); set, they change it
    plain = json.loads(json.dumps(base))
    for a in plain["annotators"]:
        a.pop("swap")
    cfg = load_project(write_project(tmp_path / "plain", plain))
    data = cfg.model_dump(mode="json", exclude={"engine", "ray_address"})
    for a in data["annotators"]:
        for key in ("client", "swap", "swap_rule"):
            a.pop(key)
    data["items"].pop("pair_columns")
    data["items"].pop("context_column")  # the span tasks' key (issue 35), unset
    for key in ("min_labels", "max_labels"):
        data["task"].pop(key)
    before = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]
    assert cfg.fingerprint() == before
    assert load_project(write_project(tmp_path, base)).fingerprint() != before


def test_people_see_the_pair_side_by_side(tmp_path) -> None:
    kind = kind_of("pairwise", ["1", "2"])
    parts = (("instruction", "Say hi"), ("output_1", "hi"), ("output_2", "$bye"))
    item = ItemView("a", "Instruction:\nSay hi\n\n...", None, parts)
    # the file queue: one column per part, beside the full text
    q = FileHumanQueue(tmp_path / "queue")
    q.submit([HumanTask(item, "Which is better?", kind.human_options(item))])
    with q.pending_path.open(newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert (row["instruction"], row["output_1"], row["output_2"]) == ("Say hi", "hi", "$bye")
    assert json.loads(row["choices"]) == ["Output (1)", "Output (2)"]
    # Label Studio: the instruction as the text, the two outputs side by side, the choice
    page = label_config(kind)
    assert '<Text name="output_1" value="$output_1"/>' in page
    assert '<Text name="output_2" value="$output_2"/>' in page
    assert "display: flex" in page and page.index("output_2") < page.index("<Choices")
    assert "Say hi" not in page and "bye" not in page  # no project text in the config
    data = task_data(HumanTask(item, "Which?", kind.human_options(item)), 1, True, kind)
    assert (data["text"], data["output_1"], data["output_2"]) == ("Say hi", "hi", "$bye")
    assert (data["name_1"], data["name_2"]) == ("Output (1)", "Output (2)")
    named = kind_of("pairwise", ["1", "2"], {"1": "Response A", "2": "Response B"})
    data = task_data(HumanTask(item, "", named.human_options(item)), 2, False, named)
    assert (data["name_1"], data["name_2"]) == ("Response A", "Response B")  # the options
    # a Choices answer, and a <Pairwise> tag's (a page edited to use it), read back
    unshown = str
    assert kind.labelstudio_raw({"from_name": "preference", "value": {"choices": ["Output (2)"]}},
                                unshown) == (True, "Output (2)")  # fmt: skip
    assert kind.labelstudio_raw({"type": "pairwise", "value": {"selected": "left"}},
                                unshown) == (True, "1")  # fmt: skip
    value = kind.labelstudio_value("Output (2)", kind.human_options(item))
    assert kind.match_human(value, item) == "2"


def test_quality_estimate_and_target_on_pairwise(tmp_path) -> None:
    """The random checks estimate the pairwise labels' accuracy (the kind's score: the
    label against the human's), and the target mode stops on it."""
    rows = [(f"q{i}", f"Task {i}", "a longer answer " * (1 + i % 2), "short", "1")
            for i in range(40)]  # fmt: skip
    folder = tmp_path / "q"
    proj = _project(folder, budget=1.0, rows=rows)
    proj["budget"].update(quality_checks=0.3)
    cfg = load_project(write_project(folder, proj))
    annotate(cfg, quiet=True)
    q = status(cfg)["quality"]
    print(q)
    assert q and q["quality_n_checks"] >= 1
    assert set(q["checked"].values()) <= {0.0, 1.0}  # a label is right or wrong
    assert q["quality_low"] <= q["quality_estimate"] <= q["quality_high"]
    folder = tmp_path / "t"
    proj = _project(folder, budget=2.0, rows=rows)
    proj["budget"].update(target_quality=0.6, confidence=0.8)
    cfg = load_project(write_project(folder, proj))
    annotate(cfg, quiet=True)
    t = status(cfg)["target"]
    print(t)
    assert t is not None and t["target_quality"] == 0.6 and t["looks"] >= 1
    assert float(status(cfg)["spent"]) <= 2.0
