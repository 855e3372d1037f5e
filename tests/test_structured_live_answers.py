"""Structured task kinds live (spans, multi-label, pairwise): machine answers are read
against the task's own labels and names, whatever the annotator (local model or LLM)."""

from __future__ import annotations

import ast
import sqlite3

import numpy as np
import pandas as pd

from live_servers.fixtures import write_project
from quorum.live.project.config import load_project


def _calls(cfg) -> pd.DataFrame:
    con = sqlite3.connect(cfg.ledger_path)
    try:
        return pd.read_sql_query("SELECT * FROM calls WHERE kind = 'annotate'", con)
    finally:
        con.close()


def _span_project(tmp_path, models: list[str], label_names: dict | None = None):
    texts = ["Arsenal beat Spurs on Sunday.", "Leeds lost to Chelsea on Monday.",
             "Chelsea drew.", "Spurs won on Sunday."]  # fmt: skip
    ids = [f"i{k}" for k in range(len(texts))]
    items = pd.DataFrame({"item_id": ids, "text": texts, "gold": ["[]"] * len(texts)})
    items.to_csv(tmp_path / "items.csv", index=False)
    task = {"type": "spans", "labels": ["Team", "Day"]}
    if label_names:
        task["label_names"] = label_names
    data = {
        "name": "spans-answers",
        "method": "live_servers.routers:CascadeRouter",
        "method_params": {"batch": 4, "human_every": 100, "confidence_every": 0,
                          "second": 1.0},
        "features": "light",
        "items": {"path": str(tmp_path / "items.csv"), "gold_column": "gold"},
        "task": task,
        "budget": {"limit": 1.0, "quality_checks": 0},
        "annotators": [{"name": m.split(":")[-1], "kind": "model", "model": m,
                        "price": 0.001} for m in models],
        "human": "gold",
        "human_price": 0.1,
    }  # fmt: skip
    return load_project(write_project(tmp_path, data))


def test_a_span_type_outside_the_task_is_unparseable_not_a_label(tmp_path):
    """docs/live.md: an unknown span type makes the answer unparseable (paid, recorded);
    the machine path read answers without the task's labels and took any type."""
    from quorum.live.run.runner import annotate

    cfg = _span_project(tmp_path, ["live_servers.models:span_unknown_type",
                                   "live_servers.models:span_spotter"])  # fmt: skip
    annotate(cfg, quiet=True)
    calls = _calls(cfg)
    bad = calls[calls["annotator"] == "span_unknown_type"]
    assert len(bad) > 0
    assert set(bad["status"]) == {"unparseable"}
    assert bad["parse_note"].str.contains("unknown span type 'Bogus'").all()
    assert (bad["cost"] > 0).all()  # paid and recorded
    for out in calls.loc[calls["status"] == "ok", "output"]:
        assert "Bogus" not in out


def test_span_types_given_by_their_shown_names_are_read_as_the_labels(tmp_path):
    """The prompt and the grammar show a span type by its ``label_names`` entry; an answer
    naming it so is a span of the label (not of the name), and the Hugging Face export,
    whose types are ``task.labels``, loads."""
    import datasets

    from quorum.live.outputs.hf import write_hf
    from quorum.live.run.runner import annotate
    from quorum.tasks.spans import decode_spans

    names = {"Team": "Team name", "Day": "Day of week"}
    cfg = _span_project(tmp_path, ["live_servers.models:span_named_types"], names)
    annotate(cfg, quiet=True)
    calls = _calls(cfg)
    calls = calls[calls["annotator"] == "span_named_types"]
    assert len(calls) == 4 and set(calls["status"]) == {"ok"}
    for text_id, out in zip(calls["item_id"], calls["output"], strict=True):
        types = {lab for _, _, lab in decode_spans(out)}
        assert types and types <= {"Team", "Day"}, (text_id, out)
    ds = datasets.load_from_disk(str(write_hf(cfg, tmp_path / "hf")))
    feat = ds.features["label"].feature["label"]
    assert feat.names == ["Team", "Day"]
    by_model = dict(zip(calls["item_id"], calls["output"], strict=True))
    mine = [row for row in ds if row["labelled_by"] == ["span_named_types"]]
    assert len(mine) >= 2
    for row in mine:  # the items the model labelled hold its spans, typed by label index
        got = [(s["start"], s["end"], feat.int2str(s["label"])) for s in row["label"]]
        assert sorted(got) == sorted(decode_spans(by_model[row["item_id"]]))


def _multilabel_project(
    tmp_path, models: list[str], confidence_every: int = 0, label_names: dict | None = None
):
    texts = ["we must help and care", "god is pure", "the bus is late", "love and gross"]
    gold = ["care", "purity", "non-moral", "care;purity"]
    ids = [f"m{k}" for k in range(len(texts))]
    pd.DataFrame({"item_id": ids, "text": texts, "gold": gold}).to_csv(
        tmp_path / "items.csv", index=False
    )
    data = {
        "name": "ml-answers",
        "method": "live_servers.routers:CascadeRouter",
        "method_params": {"batch": 4, "human_every": 100, "second": 0.0,
                          "confidence_every": confidence_every},
        "features": "light",
        "items": {"path": str(tmp_path / "items.csv"), "gold_column": "gold"},
        "task": {"type": "multilabel", "labels": ["care", "purity", "non-moral"],
                 "label_names": label_names or {}},
        "budget": {"limit": 1.0, "quality_checks": 0},
        "annotators": [{"name": m.split(":")[-1], "kind": "model", "model": m,
                        "price": 0.001, "confidence_price": 0.0005} for m in models],
        "human": "gold",
        "human_price": 0.1,
    }  # fmt: skip
    return load_project(write_project(tmp_path, data))


def test_a_local_model_answering_a_python_list_gives_its_label_set(tmp_path):
    """A local multi-label model returning ``["care", "purity"]`` (a list, not a string)
    was read as Python's repr ``['care', 'purity']``: every answer paid and unparseable."""
    from live_servers.models import moral_keywords
    from quorum.live.run.runner import annotate
    from quorum.tasks.multilabel import decode

    cfg = _multilabel_project(tmp_path, ["live_servers.models:moral_keywords_list"])
    annotate(cfg, quiet=True)
    calls = _calls(cfg)
    mine = calls[calls["annotator"] == "moral_keywords_list"]
    assert len(mine) == 4 and set(mine["status"]) == {"ok"}
    texts = pd.read_csv(tmp_path / "items.csv").set_index("item_id")["text"]
    for iid, out in zip(mine["item_id"], mine["output"], strict=True):
        assert decode(out) == set(moral_keywords(texts[iid]).split(";"))


def test_a_local_confidence_outside_0_1_is_not_recorded_as_one(tmp_path):
    """A local model's "confidence" of 7: its answer counts without it (the parse note says
    so) and a confidence call is unparseable, as a verbalised 7 from an LLM is; before, 7.0
    was stored as the call's confidence and handed to the router."""
    from quorum.live.run.runner import annotate

    cfg = _multilabel_project(
        tmp_path, ["live_servers.models:moral_overconfident"], confidence_every=1
    )
    annotate(cfg, quiet=True)
    con = sqlite3.connect(cfg.ledger_path)
    calls = pd.read_sql_query("SELECT * FROM calls WHERE annotator = 'moral_overconfident'", con)
    con.close()
    ann = calls[calls["kind"] == "annotate"]
    conf = calls[calls["kind"] == "confidence"]
    assert len(ann) == 4 and len(conf) >= 1
    assert set(ann["status"]) == {"ok"} and ann["confidence"].isna().all()
    assert ann["parse_note"].str.contains("confidence 7 is not a probability").all()
    assert set(conf["status"]) == {"unparseable"} and conf["confidence"].isna().all()
    assert calls["confidence"].dropna().between(0, 1).all()


def _team_project(tmp_path, name: str, texts: list[str], task: dict, model: str, **extra):
    """A project of ``texts`` (items a, b, c, ...): the test router with ``model`` and a
    file-queue team asked on every item, 1.0 of budget, no quality checks."""
    ids = [chr(ord("a") + i) for i in range(len(texts))]
    pd.DataFrame({"item_id": ids, "text": texts}).to_csv(tmp_path / "items.csv", index=False)
    data = {
        "name": name,
        "method": "live_servers.routers:CascadeRouter",
        "method_params": {"batch": 4, "human_every": 1, "second": 0.0, "confidence_every": 0},
        "features": "light",
        "items": {"path": str(tmp_path / "items.csv")},
        "task": task,
        "budget": {"limit": 1.0, "quality_checks": 0},
        "annotators": [{"name": "m", "kind": "model", "price": 0.001, "model": model},
                       {"name": "team", "kind": "human", "price": 0.1}],
        **extra,
    }  # fmt: skip
    return load_project(write_project(tmp_path, data))


def test_a_persons_unusable_label_set_is_reported_with_the_set_rules(tmp_path, caplog):
    """A person's multi-label answer that is no set of the task (too many labels, an index)
    was reported with the single-label help, "use one of [...] or an index 0..2", though
    no index is read and the set's rule was what it broke; the help now says how a set is
    written and its size bounds, and the forms it names are read."""
    import logging

    from quorum.live.run.runner import annotate
    from quorum.tasks.base import ItemView

    task = {"type": "multilabel", "labels": ["care", "purity", "non-moral"], "max_labels": 2}
    cfg = _team_project(
        tmp_path, "ml-people", ["x one", "y two", "z three"], task,
        "live_servers.models:moral_keywords", humans={"queue_depth": 3},
    )  # fmt: skip
    annotate(cfg, quiet=True)
    (cfg.queue_dir / "answers.csv").write_text(
        "item_id,label,annotator\na,care;purity;non-moral,ann\nb,0,ann\nc,purity;care,ann\n"
    )
    caplog.set_level(logging.WARNING, logger="quorum.live")
    annotate(cfg, quiet=True)
    bad = [r.getMessage() for r in caplog.records if "is not a label" in r.getMessage()]
    assert len(bad) == 2, bad
    for msg in bad:
        assert "at most 2" in msg and "index" not in msg, msg
    kind = cfg.task.kind
    help_text = kind.human_answer_help(ItemView("a", "x one"))
    example = help_text.split("(", 1)[1].split(")", 1)[0]  # the example the help gives
    assert kind.match_human(example, ItemView("a", "x one")) is not None
    assert kind.match_human('["care"]', ItemView("a", "x one")) is not None  # a JSON list
    assert kind.match_human("[]", ItemView("a", "x one")) is not None  # [] for no label


def test_quorum_plan_on_a_multi_label_project(tmp_path):
    """`quorum plan` simulated a wrong LLM answer on a multi-label task as a bare label
    ("care", no label set), and QUORUM's vote stopped the plan with "error: Expecting
    value: line 1 column 1 (char 0)"; a wrong answer is now another set of the task."""
    from live_servers.fixtures import quorum_here
    from quorum.live.run.plan import plan
    from quorum.tasks.multilabel import decode

    labels = ["care", "purity", "non-moral"]
    n = 30
    pd.DataFrame({"item_id": [f"m{k}" for k in range(n)],
                  "text": [f"comment number {k}" for k in range(n)],
                  "gold": [labels[k % 3] for k in range(n)]}).to_csv(
        tmp_path / "items.csv", index=False)  # fmt: skip
    data = {
        "name": "ml-plan", "method": "quorum", "features": "light",
        "items": {"path": str(tmp_path / "items.csv"), "gold_column": "gold"},
        "task": {"type": "multilabel", "labels": labels, "min_labels": 1, "max_labels": 1},
        "budget": {"limit": 1.0, "quality_checks": 0},
        "annotators": [
            {"name": "a", "kind": "model", "model": "live_servers.models:moral_keywords",
             "price": 0.001},
            {"name": "b", "kind": "model", "model": "live_servers.models:moral_keywords",
             "price": 0.002},
        ],
        "human": "gold", "human_price": 0.1,
    }  # fmt: skip
    path = write_project(tmp_path, data)
    got = plan(load_project(path))
    assert got.max_spend <= 1.0 + 1e-9 and sum(got.llm_calls.values()) > 0
    kind = load_project(path).task.kind
    rng = np.random.default_rng(0)
    for truth in ('["care"]', '["purity"]', '["non-moral"]'):
        wrong = kind.wrong_placeholder(truth, rng)
        assert wrong != truth and kind.check_set(sorted(decode(wrong))) is None
    res = quorum_here("plan", str(path))
    assert res.returncode == 0, res.stderr
    assert "error" not in res.stderr


def test_a_swap_judges_figures_count_only_the_verdicts_read(tmp_path):
    """A swap judge whose verdict cannot be read in one order of a pair: "output 1 chosen"
    counted that unread verdict as a vote against output 1 (2 of 3, where both verdicts
    read chose it), and "100% consistent" did not say it was of 2 pairs out of 3."""
    from live_servers.fixtures import quorum_here
    from quorum.live.outputs.status import status
    from quorum.live.run.runner import annotate

    rows = [("p0", "Say hi", "x no", "a much longer answer", "2"),
            ("p1", "Say hi", "a much longer answer", "tiny", "1"),
            ("p2", "Say yo", "another long answer", "yo", "1")]  # fmt: skip
    pd.DataFrame(rows, columns=["item_id", "instruction", "output_1", "output_2", "gold"]).to_csv(
        tmp_path / "pairs.csv", index=False
    )
    data = {
        "name": "pairs-unread",
        "method": "live_servers.routers:CascadeRouter",
        "method_params": {"batch": 4, "human_every": 100, "second": 0.0, "confidence_every": 0},
        "features": "light",
        "items": {"path": str(tmp_path / "pairs.csv"), "gold_column": "gold"},
        "task": {"type": "pairwise", "labels": ["1", "2"]},
        "budget": {"limit": 1.0, "quality_checks": 0},
        "annotators": [{"name": "judge", "kind": "model", "price": 0.01, "swap": True,
                        "model": "live_servers.models:longer_unless_x_first"}],
        "human": "gold",
        "human_price": 0.1,
    }  # fmt: skip
    path = write_project(tmp_path, data)
    cfg = load_project(path)
    annotate(cfg, quiet=True)
    (row,) = status(cfg)["pair_judges"]
    assert (row["pairs"], row["read_both"], row["read_given"]) == (3, 2, 2)
    assert row["consistent"] == 1.0 and row["wins_1"] == 1.0  # both verdicts read chose 1
    out = quorum_here("status", str(path)).stdout
    line = next(x for x in out.splitlines() if x.startswith("judge judge"))
    assert "100% consistent (of the 2 read in both orders)" in line
    assert "output 1 chosen 100% (given order, of 2 read)" in line


def test_labels_a_set_or_a_span_cannot_tell_apart_are_a_project_file_error(tmp_path):
    """Multi-label and span answers are read by label and by shown name, case and spaces
    ignored; two labels (or names) equal that way made one unreachable: a span typed 'T'
    was recorded as 't', a set's 'care' as 'Care'. Refused when the project loads, as for
    classification; one span type alone is still a task."""
    from quorum.errors import ConfigError

    pd.DataFrame({"item_id": ["a"], "text": ["x"]}).to_csv(tmp_path / "items.csv", index=False)
    base = {"name": "same", "items": {"path": "items.csv"}, "budget": {"limit": 1.0},
            "annotators": [{"name": "team", "kind": "human", "price": 0.1},
                           {"name": "m", "model": "openai/m", "price": 0.01}]}  # fmt: skip
    for task, why in [
        ({"type": "multilabel", "labels": ["care", "Care", "purity"]}, "'care' and 'Care'"),
        (
            {"type": "multilabel", "labels": ["care", "purity"], "label_names": {"care": "Purity"}},
            "names 'Purity' and 'purity'",
        ),
        ({"type": "spans", "labels": ["T", "t"]}, "'T' and 't'"),
        (
            {"type": "spans", "labels": ["Team", "Day"], "label_names": {"Team": "day"}},
            "names 'day' and 'Day'",
        ),
    ]:
        try:
            load_project(write_project(tmp_path, {**base, "task": task}))
        except ConfigError as exc:
            assert why in str(exc) and "same answer" in str(exc), exc
        else:
            raise AssertionError(f"{task} loaded")
    one = load_project(
        write_project(tmp_path, {**base, "task": {"type": "spans", "labels": ["Error"]}})
    )
    assert one.task.labels == ["Error"]


def test_a_label_sets_exported_name_holds_its_labels_names(tmp_path):
    """`label_name` of a multi-label export was the label set itself (`["care"]`) whatever
    `label_names` said; it is the set of the names (`["Care/harm"]`), in every format."""
    import datasets

    from quorum.live.outputs.export import export_frame
    from quorum.live.outputs.hf import write_hf
    from quorum.live.run.runner import annotate
    from quorum.tasks.multilabel import decode

    names = {"care": "Care/harm", "purity": "Sanctity"}
    cfg = _multilabel_project(tmp_path, ["live_servers.models:moral_keywords"], label_names=names)
    annotate(cfg, quiet=True)
    frame = export_frame(cfg)
    assert frame["label"].notna().all()
    for label, name in zip(frame["label"], frame["label_name"], strict=True):
        assert sorted(decode(name)) == sorted(names.get(x, x) for x in decode(label))
    assert "Care/harm" in set().union(*map(decode, frame["label_name"]))
    ds = datasets.load_from_disk(str(write_hf(cfg, tmp_path / "hf")))
    assert list(ds["label_name"]) == list(frame["label_name"])


def test_a_bad_gold_label_set_names_its_item(tmp_path):
    """A gold set outside the task (an unknown label, too many labels) stopped the run
    with "gold: multilabel answer ..." and no item; with 3,000 items, which one? The line
    names the item, as a bad gold span's does."""
    from quorum.errors import DataValidationError
    from quorum.live.project.items import load_items

    cases = [
        (["care", "care", "bogus"], "label(s) outside the label set"),
        (["care", "purity", "care;purity;non-moral"], "more than max_labels"),
    ]
    for gold, why in cases:
        pd.DataFrame({"item_id": ["a", "b", "c"], "text": ["x", "y", "z"], "gold": gold}).to_csv(
            tmp_path / "items.csv", index=False
        )
        data = {
            "name": "ml-gold", "items": {"path": "items.csv", "gold_column": "gold"},
            "task": {"type": "multilabel", "labels": ["care", "purity", "non-moral"],
                     "max_labels": 2},
            "budget": {"limit": 1.0}, "human": "gold",
            "annotators": [{"name": "m", "model": "openai/m", "price": 0.01}],
        }  # fmt: skip
        cfg = load_project(write_project(tmp_path, data))
        try:
            load_items(cfg)
        except DataValidationError as exc:
            msg = str(exc)
        else:
            raise AssertionError(f"{gold} loaded")
        assert "gold of item c:" in msg and why in msg and "\n" not in msg, msg


def test_an_unquoted_span_list_in_answers_csv_is_reported_as_such(tmp_path, caplog):
    """A person's span list written into answers.csv without CSV quotes is cut at its first
    comma; the report said '[{"start":0' "is not a label (give a JSON list ...)" to a
    person who gave one. It now also says that the row has more fields than the header
    and how to quote; the same list quoted is read."""
    import csv
    import logging

    from quorum.live.run.runner import annotate

    cfg = _team_project(
        tmp_path, "spans-csv", ["Arsenal beat Spurs on Sunday."],
        {"type": "spans", "labels": ["Team", "Day"]}, "live_servers.models:span_spotter",
    )  # fmt: skip
    assert annotate(cfg, quiet=True).status == "pending"
    answers = cfg.queue_dir / "answers.csv"
    spans = '[{"start":0,"end":7,"label":"Team"}]'
    answers.write_text(f"item_id,label,annotator\na,{spans},ann\n")  # unquoted
    caplog.set_level(logging.WARNING, logger="quorum.live")
    assert annotate(cfg, quiet=True).status == "pending"
    (msg,) = [r.getMessage() for r in caplog.records if "is not a label" in r.getMessage()]
    assert "more than the header" in msg and "double quotes" in msg, msg
    with answers.open("w", newline="") as f:
        csv.writer(f).writerows([["item_id", "label", "annotator"], ["a", spans, "ann"]])
    assert annotate(cfg, quiet=True).status == "finished"
    team = _calls(cfg).query("annotator == 'team'")
    assert list(team["output"]) == ['[[0,7,"Team"]]']


def test_a_persons_unusable_pairwise_answer_is_reported_without_an_index(tmp_path, caplog):
    """The help for a person's unusable pairwise verdict said "or an index 0..1", but "1"
    is output 1 (not index 1, output 2), and with ties "0" is a tie: what it names now is
    what is read."""
    import logging

    from quorum.live.run.runner import annotate
    from quorum.tasks.base import ItemView

    rows = [("p0", "Say hi", "hello there", "hi", "1")]
    pd.DataFrame(rows, columns=["item_id", "instruction", "output_1", "output_2", "gold"]).to_csv(
        tmp_path / "pairs.csv", index=False
    )
    data = {
        "name": "pairs-help",
        "method": "live_servers.routers:CascadeRouter",
        "method_params": {"batch": 4, "human_every": 1, "second": 0.0, "confidence_every": 0},
        "features": "light",
        "items": {"path": str(tmp_path / "pairs.csv")},
        "task": {"type": "pairwise", "labels": ["1", "2", "tie"]},
        "budget": {"limit": 1.0, "quality_checks": 0},
        "annotators": [{"name": "judge", "kind": "model", "price": 0.01,
                        "model": "live_servers.models:longer_output"},
                       {"name": "team", "kind": "human", "price": 0.1}],
    }  # fmt: skip
    cfg = load_project(write_project(tmp_path, data))
    annotate(cfg, quiet=True)
    (cfg.queue_dir / "answers.csv").write_text("item_id,label,annotator\np0,3,ann\n")
    caplog.set_level(logging.WARNING, logger="quorum.live")
    annotate(cfg, quiet=True)
    (msg,) = [r.getMessage() for r in caplog.records if "is not a label" in r.getMessage()]
    assert "index" not in msg and "a / b" in msg, msg
    kind, item = cfg.task.kind, ItemView("p0", "")
    named = msg.split("use one of ", 1)[1].split("]", 1)[0] + "]"
    wanted = {"1": "1", "2": "2", "tie": "tie", "Output (1)": "1", "Output (2)": "2", "Tie": "tie"}
    assert ast.literal_eval(named) == list(wanted)  # the list the message shows
    for answer, output in [*wanted.items(), ("a", "1"), ("b", "2")]:
        assert kind.match_human(answer, item) == output, answer


def test_a_span_lists_exported_name_types_each_span_by_its_name(tmp_path):
    """`label_name` of a span export was the span list with the types' labels; with
    `label_names` it types each span by its name, the offsets unchanged."""
    from quorum.live.outputs.export import export_frame
    from quorum.live.run.runner import annotate
    from quorum.tasks.spans import decode_spans

    names = {"Team": "Team name", "Day": "Day of week"}
    cfg = _span_project(tmp_path, ["live_servers.models:span_spotter"], names)
    annotate(cfg, quiet=True)
    frame = export_frame(cfg)
    assert any(decode_spans(x) for x in frame["label"])
    for label, name in zip(frame["label"], frame["label_name"], strict=True):
        want = sorted((a, b, names[t]) for a, b, t in decode_spans(label))
        assert sorted(decode_spans(name)) == want


def test_method_params_a_router_does_not_take_are_one_line_errors(tmp_path):
    """`method_params` a router does not take (here a multi-label project's) stopped
    `quorum annotate` and `quorum plan` with a traceback (TypeError: QuorumRouter() got
    unexpected keyword arguments); now a one-line error, before the ledger is written."""
    from live_servers.fixtures import quorum_here

    cases = [
        ("quorum", {"batch": 4}),
        ("random", {"nope": 1}),
        ("live_servers.routers:CascadeRouter", {"tau_h": 0.5}),
    ]
    for k, (method, params) in enumerate(cases):
        folder = tmp_path / f"p{k}"
        folder.mkdir()
        cfg = _multilabel_project(folder, ["live_servers.models:moral_keywords"])
        data = cfg.model_dump(mode="json", exclude_none=True)
        path = write_project(folder, {**data, "method": method, "method_params": params})
        for cmd in ("annotate", "plan"):
            res = quorum_here(cmd, str(path))
            assert res.returncode == 2, (method, cmd, res.stderr[-500:])
            assert "Traceback" not in res.stderr
            (line,) = [x for x in res.stderr.splitlines() if x.startswith("error:")]
            assert "method_params" in line and next(iter(params)) in line, line
        assert not (folder / ".quorum" / "ledger.sqlite").exists()


def test_a_span_gold_under_a_text_template_is_said_to_be_offsets_into_its_text(tmp_path, caplog):
    """A span task whose text is `items.text_template` ("Report: {body}") reads the gold
    spans as offsets into that text: a gold [0, 7] written for `body` ("Arsenal") marked
    "Report:" with no word said. The load now warns, naming the gold column and the text."""
    import logging

    from quorum.live.project.items import load_items

    pd.DataFrame({"item_id": ["a"], "body": ["Arsenal won."], "gold": ['[[0,7,"Team"]]']}).to_csv(
        tmp_path / "items.csv", index=False
    )
    data = {
        "name": "spans-template",
        "items": {"path": "items.csv", "text_template": "Report: {body}", "gold_column": "gold"},
        "task": {"type": "spans", "labels": ["Team"]},
        "budget": {"limit": 1.0}, "human": "gold",
        "annotators": [{"name": "m", "model": "openai/m", "price": 0.01}],
    }  # fmt: skip
    caplog.set_level(logging.WARNING, logger="quorum.live")
    items = load_items(load_project(write_project(tmp_path, data)))
    assert items["text"].iloc[0] == "Report: Arsenal won."
    (msg,) = [r.getMessage() for r in caplog.records if "text_template" in r.getMessage()]
    assert "gold spans ('gold')" in msg and "Report: Arsenal won." in msg, msg
    caplog.clear()
    data["items"] = {"path": "items.csv", "text_column": "body", "gold_column": "gold"}
    load_items(load_project(write_project(tmp_path, data)))
    assert not [r for r in caplog.records if "text_template" in r.getMessage()]
