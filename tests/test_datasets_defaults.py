"""Dataset folders get the named loaders' default prices and panel, say which defaults were
used, and make the panel explicit (task.toml `panel` or meta.json `panel`)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from quorum.cli.main import app
from quorum.data.io import load_folder
from quorum.data.loaders import load_dataset
from quorum.data.writer import save_folder
from quorum.errors import DataValidationError
from quorum.simulate import select_task
from test_data_io import write_folder

ITEMS = "item_id,text,gold\n" + "".join(
    f"{i},text {i},{'pos' if i % 2 else 'neg'}\n" for i in range(10)
)


def answers(acc: dict[str, int]) -> str:
    """Annotator a is right on the first acc[a] of the 10 items, wrong after."""
    rows = ["item_id,annotator,output"]
    for a, k in acc.items():
        for i in range(10):
            right = "pos" if i % 2 else "neg"
            rows.append(f"{i},{a},{right if i < k else {'pos': 'neg', 'neg': 'pos'}[right]}")
    return "\n".join(rows) + "\n"


HEAD = 'name = "t"\ntype = "classification"\nlabels = ["pos", "neg"]\n'


def block(name: str, kind: str = "llm", price: float | None = None) -> str:
    p = "" if price is None else f"price = {price}\n"
    return f'\n[[annotators]]\nname = "{name}"\nkind = "{kind}"\n{p}'


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["llms-for-css/flute", "summ-summeval", "mmlu-redux"])
def test_a_folder_without_prices_or_panel_gets_the_named_loaders_rule(tmp_path, name):
    named = load_dataset(name)
    save_folder(named, tmp_path / "d", fmt="parquet")
    (tmp_path / "d" / "meta.json").unlink()
    task = (tmp_path / "d" / "task.toml").read_text()
    task = re.sub(r"\n(price|reference_llm) = .*", "", task)
    (tmp_path / "d" / "task.toml").write_text(task)
    assert "\nprice" not in task
    ds = load_folder(tmp_path / "d")
    assert ds.task == named.task  # same prices, kinds and reference_llm
    assert ds.meta["panel"] == named.meta["panel"]
    assert ds.meta["defaults"]["panel"] == "rule"
    assert ds.meta["defaults"]["prices"] == {a.name: a.price for a in named.task.annotators}
    assert any(n.startswith("default prices") for n in ds.meta["notes"])


def test_partial_prices_humans_and_an_all_machine_panel(tmp_path):
    task = HEAD + block("big", price=0.2) + block("mid") + block("small") + block("w1", "human")
    ds = load_folder(
        write_folder(
            tmp_path,
            items=ITEMS,
            annotations=answers({"big": 9, "mid": 7, "small": 4, "w1": 8}),
            task=task,
        )
    )
    prices = {a.name: a.price for a in ds.task.annotators}
    # rule over the 3 machines ranked big > mid > small: panel ranks 0, 1, 2 -> .05/.03/.01;
    # big keeps its own price, the human gets human_price
    assert prices == {"big": 0.2, "mid": 0.03, "small": 0.01, "w1": 0.10}
    assert ds.meta["defaults"]["prices"] == {"mid": 0.03, "small": 0.01, "w1": 0.10}
    # a price was given, so the panel is every machine annotator, cheapest first
    assert ds.meta["panel"] == ["small", "mid", "big"]
    assert ds.meta["defaults"]["panel"] == "all machine annotators"
    assert ds.task.reference_llm is None  # unchanged: MCA keeps its own default
    assert [a.name for a in select_task(ds).llms] == ["small", "mid", "big"]


def test_every_price_given_keeps_routing_as_before(tmp_path):
    task = HEAD + block("a", price=0.02) + block("b", price=0.01)
    ds = load_folder(
        write_folder(tmp_path, items=ITEMS, annotations=answers({"a": 9, "b": 5}), task=task)
    )
    assert "prices" not in ds.meta["defaults"]
    assert [a.price for a in ds.task.annotators] == [0.02, 0.01]
    # what `quorum simulate` used before the panel was made explicit: task.llms
    assert ds.meta["panel"] == [a.name for a in ds.task.llms] == ["b", "a"]


def test_no_annotators_declared_are_declared_from_the_answers(tmp_path):
    task = HEAD + 'human = "w1"\n'
    ds = load_folder(
        write_folder(
            tmp_path, items=ITEMS, annotations=answers({"x": 9, "y": 3, "w1": 8}), task=task
        )
    )
    kinds = {a.name: a.kind for a in ds.task.annotators}
    assert kinds == {"w1": "human", "x": "llm", "y": "llm"}
    assert ds.meta["defaults"]["annotators"] == ["w1", "x", "y"]
    assert ds.meta["panel"] == ["x", "y"] and ds.task.reference_llm == "x"
    assert any("no [[annotators]] in task.toml" in n for n in ds.meta["notes"])


def test_no_gold_ranks_by_name_and_says_so(tmp_path):
    items = "item_id,text\n1,a\n2,b\n"
    task = HEAD + block("m2") + block("m1")
    ds = load_folder(write_folder(tmp_path, items=items, annotations=None, task=task))
    assert any("ranked by name" in n for n in ds.meta["notes"])
    assert {a.name: a.price for a in ds.task.annotators} == {"m1": 0.05, "m2": 0.01}


def test_panel_in_task_toml_is_the_panel(tmp_path):
    task = (
        HEAD.replace("labels", 'panel = ["a", "c"]\nlabels') + block("a") + block("b") + block("c")
    )
    ds = load_folder(
        write_folder(
            tmp_path, items=ITEMS, annotations=answers({"a": 9, "b": 7, "c": 4}), task=task
        )
    )
    assert ds.meta["panel"] == ["a", "c"] and "panel" not in ds.meta["defaults"]
    assert sorted(a.name for a in select_task(ds).llms) == ["a", "c"]
    # saved and loaded again: the panel moves to meta.json, nothing else changes
    back = load_folder(save_folder(ds, tmp_path / "saved"))
    assert back.task == ds.task and back.meta == ds.meta


def test_bad_panels_are_errors_naming_the_file(tmp_path):
    task = (
        HEAD.replace("labels", 'panel = ["a", "nope"]\nlabels') + block("a") + block("w", "human")
    )
    write_folder(tmp_path, items=ITEMS, annotations=answers({"a": 9, "w": 8}), task=task)
    with pytest.raises(DataValidationError, match=r"task.toml: panel: names \['nope'\]"):
        load_folder(tmp_path)
    (tmp_path / "task.toml").write_text(task.replace('"nope"', '"w"'))
    with pytest.raises(
        DataValidationError, match=r"not machine annotators; machine annotators: \['a'\]"
    ):
        load_folder(tmp_path)
    (tmp_path / "task.toml").write_text(task.replace(', "nope"', ""))
    (tmp_path / "meta.json").write_text(json.dumps({"panel": ["a", "a"]}))
    with pytest.raises(DataValidationError, match=r"panel \['a'\] differs from the panel"):
        load_folder(tmp_path)
    (tmp_path / "task.toml").write_text(task.replace('panel = ["a", "nope"]\n', ""))
    with pytest.raises(DataValidationError, match=r"meta.json: panel: repeats \['a'\]"):
        load_folder(tmp_path)


def test_show_prints_the_panel_and_where_it_comes_from(tmp_path):
    write_folder(tmp_path, items=ITEMS, annotations=answers({"a": 9, "b": 7, "c": 4}), task=HEAD)
    res = CliRunner().invoke(app, ["datasets", "show", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "panel: ['a', 'b', 'c'] (default: rule)" in res.output
    assert "panel: -" not in res.output
    assert "note: default prices (no price in task.toml): a 0.05, b 0.03, c 0.01" in res.output


def test_a_loaded_folder_saves_and_reloads_unchanged(tmp_path):
    write_folder(tmp_path, items=ITEMS, annotations=answers({"a": 9, "b": 7}), task=HEAD)
    ds = load_folder(tmp_path)
    for fmt in ("csv", "jsonl", "parquet"):
        back = load_folder(save_folder(ds, tmp_path / fmt, fmt=fmt))
        assert back.task == ds.task and back.meta == ds.meta


def test_simulate_says_which_defaults_it_runs_with(tmp_path, monkeypatch):
    import quorum.simulate as sim

    def stop(*args, **kwargs):  # the note comes before features are computed
        raise ValueError("stopped before preparation")

    monkeypatch.setattr(sim, "prepare", stop)
    task = HEAD + block("a", price=0.04) + block("b") + block("c")
    write_folder(tmp_path, items=ITEMS, annotations=answers({"a": 9, "b": 7, "c": 4}), task=task)
    res = CliRunner().invoke(app, ["simulate", "-d", str(tmp_path)])
    assert "stopped before preparation" in res.output
    note = "note: t uses defaults: prices b=0.03, c=0.01; panel (all machine annotators)"
    assert note in res.output
