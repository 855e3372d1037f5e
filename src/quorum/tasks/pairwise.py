"""Pairwise judgements (which of two outputs is better): a discrete kind with the labels
"1" and "2" (and "tie" where a task allows it), the judge asked in both answer orders
(``swap``), an inconsistent pair recorded and used as a routing signal.

An item is an instruction (or prompt) and two outputs. Its ``text``, which the features and
the prompt read, is the three together (:func:`pair_text`). An answer names the better
output in the ORIGINAL numbering: "1" = ``output_1``, "2" = ``output_2``.

Swap (ours; docs/router.md, "Pairwise judgements"): a judge with ``swap`` is asked twice,
once with the outputs as given and once with them exchanged; the second verdict is mapped
back to the original numbering. Both calls are paid (a swap annotator's price is that of
the two calls together). What counts as the judge's answer then is :func:`combine_swap`'s
rule (``swap_rule``):

* ``"consistent"`` (default): the verdict when both orders agree; an inconsistent pair is
  *no answer* (the router records a paid call without a vote, status "unparseable" in
  replay, and looks further: the item gets no vote from that judge, so it stays open for
  another judge or a person, and the judge's bandit reward there is 0);
* ``"tie"``: an inconsistent pair is the answer "tie" (only where the task has that label);
* ``"first"``: the first order's verdict (position bias kept; for comparison).

Live (docs/live.md, "Pairwise judgements"): a project reads each pair's parts from their
columns (:meth:`Pairwise.live_items`), a machine annotator with ``swap = true`` makes the
second call on :meth:`Pairwise.swapped_view` (:mod:`quorum.live.machines.swap`), and people
see the two outputs side by side (:meth:`Pairwise.labelstudio_objects`).

On the 419 LLMBar pairs an inconsistent pair is right half of the time by construction
(one of its two verdicts is right), so it carries no vote; GPT-4's consistent verdicts are
87% right against 83% for its first-order verdicts.

Aggregation is the weighted majority vote of classification (paper, sec. 3.3). crowd-kit's
pairwise models (Bradley-Terry, noisy BT) rank *many* items from comparisons between them;
here every item is one fixed pair with one question (which of its two outputs follows the
instruction), so the answer is a label and a label vote or label model is the fitting
aggregate; BT would need a pool of outputs compared across items, which these data lack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from quorum.errors import ConfigError, DataValidationError
from quorum.tasks.base import ItemView, TaskType
from quorum.tasks.classification import Classification
from quorum.tasks.parsing import LabelParser, Parsed

#: the answers of a pairwise task (the original numbering), and the optional tie
FIRST, SECOND, TIE = "1", "2", "tie"
#: the items' columns of a pair, by role; the first name found in a folder is used
INSTRUCTION_COLUMNS: tuple[str, ...] = ("instruction", "prompt", "question", "input")
OUTPUT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("output_1", "output_2"),
    ("response_1", "response_2"),
    ("output_a", "output_b"),
    ("response_a", "response_b"),
)
#: how a swap annotator's two verdicts make its answer (:func:`combine_swap`)
SWAP_RULES: tuple[str, ...] = ("consistent", "tie", "first")
DEFAULT_SWAP_RULE = "consistent"
#: the suffix of a swap annotator's name, made from one judge's two orders
SWAP_SUFFIX = ""
#: spellings of the two answers (and the tie) read from a file or a person
_ANSWER_ALIASES: dict[str, str] = {
    "1": FIRST,
    "a": FIRST,
    "output_1": FIRST,
    "output (a)": FIRST,
    "output (1)": FIRST,
    "2": SECOND,
    "b": SECOND,
    "output_2": SECOND,
    "output (b)": SECOND,
    "output (2)": SECOND,
    "tie": TIE,
    "0": TIE,
    "equal": TIE,
}


def pair_text(instruction: str, output_1: str, output_2: str) -> str:
    """The text of one pair, as the features and the prompt read it.

    >>> pair_text("Say hi.", "hi", "bye")
    'Instruction:\\nSay hi.\\n\\nOutput (1):\\nhi\\n\\nOutput (2):\\nbye'
    """
    return f"Instruction:\n{instruction}\n\nOutput (1):\n{output_1}\n\nOutput (2):\n{output_2}"


def normalise_answer(value: Any) -> str | None:
    """A recorded or human answer as "1", "2" or "tie" (None: not one of them).

    >>> normalise_answer(" B "), normalise_answer(2), normalise_answer("maybe")
    ('2', '2', None)
    """
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, (int, np.integer)) or (isinstance(value, float) and value.is_integer()):
        value = str(int(value))
    return _ANSWER_ALIASES.get(" ".join(str(value).split()).casefold())


def swap_back(answer: str | None) -> str | None:
    """A verdict given with the outputs exchanged, in the original numbering.

    >>> swap_back("1"), swap_back("2"), swap_back("tie"), swap_back(None)
    ('2', '1', 'tie', None)
    """
    return {FIRST: SECOND, SECOND: FIRST}.get(answer, answer) if answer else None


def combine_swap(
    first: str | None, second: str | None, rule: str = DEFAULT_SWAP_RULE
) -> tuple[str | None, bool | None]:
    """(the judge's answer, whether its two orders agree) from its two verdicts, both in the
    original numbering. A missing verdict in either order gives (None, None) except under
    ``"first"``, which keeps the first order's verdict.

    >>> combine_swap("1", "1"), combine_swap("1", "2"), combine_swap("1", "2", "tie")
    (('1', True), (None, False), ('tie', False))
    >>> combine_swap("2", "1", "first"), combine_swap("2", None)
    (('2', False), (None, None))
    """
    if rule not in SWAP_RULES:
        raise ValueError(f"swap_rule must be one of {SWAP_RULES}, got {rule!r}")
    if first is None or second is None:
        return (first if rule == "first" else None), None
    same = first == second
    if same:
        return first, True
    if rule == "first":
        return first, False
    if rule == "tie":
        return TIE, False
    return None, False


#: the canonical names of a pair's parts (a live item's fields, the export's columns)
PAIR_FIELDS: tuple[str, str, str] = ("instruction", "output_1", "output_2")


def find_columns(columns: Sequence[str]) -> tuple[str, str, str] | None:
    """(instruction, output 1, output 2) column names of an items frame, or None."""
    cols = set(columns)
    ins = next((c for c in INSTRUCTION_COLUMNS if c in cols), None)
    outs = next((p for p in OUTPUT_COLUMNS if p[0] in cols and p[1] in cols), None)
    if ins is None or outs is None:
        return None
    return ins, outs[0], outs[1]


def missing_columns(columns: Sequence[str]) -> str:
    """What a frame with ``columns`` lacks to be pairs, in words (for an error)."""
    cols = set(columns)
    ins = next((c for c in INSTRUCTION_COLUMNS if c in cols), None)
    found = [c for pair in OUTPUT_COLUMNS for c in pair if c in cols]
    parts = []
    if ins is None:
        parts.append(f"no instruction column (one of {list(INSTRUCTION_COLUMNS)})")
    if not any(a in cols and b in cols for a, b in OUTPUT_COLUMNS):
        parts.append(
            f"no pair of output columns (one of {[list(p) for p in OUTPUT_COLUMNS]})"
            + (f"; it has only {found}" if found else "")
        )
    return "; ".join(parts)


def check_pairs(items: pd.DataFrame, cols: tuple[str, str, str], ties: bool) -> list[str]:
    """Validate the pairs; raise :class:`DataValidationError` naming the bad items; return
    notes (what was accepted but is worth knowing).

    A missing instruction or output is an error (a pair needs both outputs; an empty string
    is an output, e.g. a model that said nothing, and is kept with a note); two identical
    outputs are an error unless the task has the label "tie" (no judge can prefer one).
    """
    _, o1, o2 = cols
    notes: list[str] = []
    for col in cols:
        miss = items[col].isna()
        if miss.any():
            ids = items.loc[miss, "item_id"].astype(str).tolist()
            raise DataValidationError(
                f"pairwise: {int(miss.sum())} item(s) have no {col!r} (e.g. {ids[:5]}); "
                "every pair needs an instruction and two outputs"
            )
    a, b = items[o1].astype(str), items[o2].astype(str)
    same = a.str.strip() == b.str.strip()
    if same.any():
        ids = items.loc[same, "item_id"].astype(str).tolist()
        if not ties:
            raise DataValidationError(
                f"pairwise: {int(same.sum())} item(s) have identical outputs (e.g. {ids[:5]}); "
                "no judge can prefer one: drop them, or allow ties (labels = ['1', '2', 'tie'])"
            )
        notes.append(f"{int(same.sum())} pair(s) with identical outputs (e.g. {ids[:5]})")
    empty = (a.str.strip() == "") | (b.str.strip() == "")
    if empty.any():
        ids = items.loc[empty, "item_id"].astype(str).tolist()
        notes.append(f"{int(empty.sum())} pair(s) with an empty output (e.g. {ids[:5]})")
    return notes


def swap_annotators(
    answers: pd.DataFrame, rule: str = DEFAULT_SWAP_RULE
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One annotator per judge asked in both orders (answers with ``judge`` and ``order``
    columns, verdicts stored in the original numbering): (its answers ``item_id, annotator,
    output``, the consistency table ``item_id, judge, first, second, consistent``).

    The annotator is named after the judge (the ``judge`` value); a judge with other than
    two orders on an item gets no swap answer there. The first order is the one whose name
    sorts first among ("orig", "original", "ab", "forward") else the first seen.
    """
    need = {"item_id", "judge", "order", "output"}
    if not need <= set(answers.columns) or answers.empty:
        empty = pd.DataFrame(columns=["item_id", "annotator", "output"])
        return empty, pd.DataFrame(columns=["item_id", "judge", "first", "second", "consistent"])
    a = answers.loc[:, ["item_id", "judge", "order", "output"]].copy()
    a["item_id"] = a["item_id"].astype(str)
    a["judge"] = a["judge"].astype(str)
    a["order"] = a["order"].astype(str)
    a["output"] = a["output"].map(normalise_answer)
    orders = list(dict.fromkeys(a["order"]))
    firsts = [o for o in orders if o.casefold() in ("orig", "original", "ab", "forward")]
    first_order = firsts[0] if firsts else orders[0]
    counts = a.groupby(["item_id", "judge"], sort=False)["order"].transform("nunique")
    rows = a.loc[counts == 2]
    is_first = rows["order"] == first_order
    key = ["item_id", "judge"]
    f = rows.loc[is_first, [*key, "output"]].drop_duplicates(key)
    s = rows.loc[~is_first, [*key, "output"]].drop_duplicates(key)
    both = f.merge(s, on=key, how="inner", suffixes=("_f", "_s"))
    out, cons = [], []
    for item, judge, y1, y2 in both.itertuples(index=False, name=None):
        y, same = combine_swap(y1, y2, rule)
        out.append((item, judge + SWAP_SUFFIX, y))
        cons.append((item, judge, y1, y2, same))
    return (
        pd.DataFrame(out, columns=["item_id", "annotator", "output"]),
        pd.DataFrame(cons, columns=["item_id", "judge", "first", "second", "consistent"]),
    )


class PairwiseParser(LabelParser):
    """An LLM judge's raw answer as "1", "2" or "tie".

    Unlike a classification answer, a number here is the output's own number (1 or 2), never
    an index into the options (a "Label: 1" meaning index 1 would turn the verdict round):
    ``a``/``b`` and "Output (2)" are read too. Any other number is unparseable.

    >>> p = PairwiseParser(["1", "2"], {"1": "Output (1)", "2": "Output (2)"})
    >>> [p.parse(x).output for x in ("Label: 1", "2", "Output (b) is better", "Label: 3")]
    ['1', '2', '2', None]
    """

    def _resolve(self, token: str, n: int, table: dict[str, str]) -> Parsed | None:
        tok = " ".join(token.replace("*", "").split()).strip(" .!?:;,'\"`")
        y = normalise_answer(tok)
        if y is None and tok[:1].isdigit():
            y = normalise_answer(tok.split()[0].rstrip(").:"))
            if y is None:
                return Parsed("unparseable", None, f"{tok.split()[0]} is not 1 or 2")
        if y is not None:
            if y in self.labels:
                return Parsed("ok", y)
            return Parsed("unparseable", None, f"{y!r} is not an answer of this task")
        return super()._resolve(token, n, table)


class Pairwise(Classification):
    """Which of two outputs is better: the answer "1" or "2" (and "tie" where allowed).

    Outputs are labels compared by equality, so the weighted vote, the label model and the
    compiled routing loops of classification apply unchanged; the score of an answer is its
    agreement with the reference (accuracy). ``swap`` (a judge asked in both orders) is
    built from recorded answers by :func:`swap_annotators`.
    """

    type = TaskType.pairwise
    metric_name = "accuracy"
    metric_label = "agreement with the reference (accuracy)"
    metric_short = "acc"
    template_name = "pairwise"
    task_verb = "judged"
    max_tokens = 16
    labelstudio_name = "preference"
    item_fields = PAIR_FIELDS
    swaps = True

    def __init__(
        self, labels: Sequence[str] | None = None, label_names: Mapping[str, str] | None = None
    ) -> None:
        labels = [str(x) for x in labels] if labels else [FIRST, SECOND]
        names = {FIRST: "Output (1)", SECOND: "Output (2)", TIE: "Tie"}
        names.update(label_names or {})
        super().__init__(labels, names)

    @property
    def ties(self) -> bool:
        """Whether "tie" is an answer of this task."""
        return TIE in self.labels

    # -- a dataset folder as it is ---------------------------------------------------
    @classmethod
    def recognise(cls, items: pd.DataFrame, answers: pd.DataFrame) -> bool:
        """Items with an instruction and two output columns (:data:`INSTRUCTION_COLUMNS`,
        :data:`OUTPUT_COLUMNS`); one output column alone is taken too, so that
        :meth:`folder_task` can say which one is missing."""
        cols = set(items.columns)
        outs = {c for pair in OUTPUT_COLUMNS for c in pair}
        return (
            "item_id" in cols and any(c in cols for c in INSTRUCTION_COLUMNS) and bool(outs & cols)
        )

    @classmethod
    def folder_task(
        cls, name: str, items: pd.DataFrame, answers: pd.DataFrame
    ) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
        """The pairs' text from the instruction and both outputs, the answers in the
        original numbering, and one swap annotator per judge asked in both orders (its
        answer: :func:`combine_swap` with :data:`DEFAULT_SWAP_RULE`) beside each order's
        own annotator."""
        cols = find_columns(list(items.columns))
        if cols is None:
            raise DataValidationError(
                f"{name}: a pairwise folder needs an instruction column (one of "
                f"{list(INSTRUCTION_COLUMNS)}) and two output columns (one of "
                f"{[list(p) for p in OUTPUT_COLUMNS]}); items have {list(items.columns)}"
            )
        items = items.copy()
        items["item_id"] = items["item_id"].astype(str)
        ans = answers.copy() if len(answers.columns) else pd.DataFrame()
        golds = items["gold"].map(normalise_answer) if "gold" in items.columns else None
        if golds is not None:
            bad = items.loc[golds.isna() & items["gold"].notna(), ["item_id", "gold"]]
            if len(bad):
                raise DataValidationError(
                    f"items: {len(bad)} gold value(s) name neither output nor a tie (1/2, a/b, "
                    f"Output (1), tie), e.g. {bad.head(3).to_dict('records')}"
                )
        given = pd.Series(dtype=object)
        if "output" in ans.columns:
            given = ans["output"].map(normalise_answer)
        ties = bool((golds is not None and (golds == TIE).any()) or (given == TIE).any())
        notes = check_pairs(items, cols, ties)
        ins, o1, o2 = cols
        items["text"] = [
            pair_text(str(i), str(a), str(b))
            for i, a, b in zip(items[ins], items[o1], items[o2], strict=True)
        ]
        if golds is not None:
            items["gold"] = golds
        labels = [FIRST, SECOND] + ([TIE] if ties else [])
        task: dict[str, Any] = {"name": name, "type": TaskType.pairwise.value, "labels": labels}
        if notes:
            task["description"] = "pairwise: " + "; ".join(notes)
        if not len(ans.columns) or not {"item_id", "annotator", "output"} <= set(ans.columns):
            return task, items, pd.DataFrame(columns=["item_id", "annotator", "output"])
        ans["item_id"] = ans["item_id"].astype(str)
        # an answer that names neither output is kept as given: the loader drops and
        # counts it as outside the label set (a missing one stays no answer)
        ans["output"] = given.where(given.notna(), ans["output"])
        keep = ["item_id", "annotator", "output"]
        if "raw_completion" in ans.columns and "raw" not in ans.columns:
            ans["raw"] = ans["raw_completion"]
        if "raw" in ans.columns:
            keep.append("raw")
        swapped, _ = swap_annotators(answers)
        taken = set(ans["annotator"].astype(str))
        swapped = swapped.loc[~swapped["annotator"].isin(taken)]
        out = pd.concat([ans[keep], swapped], ignore_index=True)
        return task, items, out

    # -- a live project's items and the swapped order -------------------------------------
    def live_items(
        self,
        rows: pd.DataFrame,
        ids: Sequence[str],
        where: str,
        columns: Sequence[str] | None = None,
        text_template: str | None = None,
    ) -> tuple[pd.DataFrame, list[str]]:
        """The pairs of a live project: the instruction and both outputs from ``columns``
        (``items.pair_columns``; None: found by name as in a dataset folder,
        :func:`find_columns`), checked by :func:`check_pairs` (a missing value is an
        error, identical outputs too unless the task has ties, an empty output a note);
        the text from ``text_template`` (None: :func:`pair_text`), and ``text_swapped``,
        the same with the two outputs exchanged (a ``swap`` annotator's second order)."""
        if columns:
            cols = tuple(str(c) for c in columns)
            gone = [c for c in cols if c not in rows.columns]
            if gone:
                raise ConfigError(
                    f"{where}: items.pair_columns names {gone}, which the file does not have; "
                    f"its columns are {list(rows.columns)}"
                )
        else:
            found = find_columns(list(rows.columns))
            if found is None:
                raise ConfigError(
                    f"{where}: a pairwise task needs an instruction and two outputs: "
                    f"{missing_columns(list(rows.columns))}; its columns are "
                    f"{list(rows.columns)} (set items.pair_columns = [instruction, output 1, "
                    "output 2])"
                )
            cols = found
        ins, o1, o2 = cols[0], cols[1], cols[2]
        pairs = rows.loc[:, [ins, o1, o2]].copy()
        pairs.insert(0, "item_id", list(ids))
        try:
            notes = check_pairs(pairs, (ins, o1, o2), self.ties)
        except DataValidationError as exc:
            raise DataValidationError(f"{where}: {exc}") from None
        recs = rows.to_dict("records")

        def render(exchange: bool) -> list[str]:
            out = []
            for r in recs:
                a, b = (r[o2], r[o1]) if exchange else (r[o1], r[o2])
                if text_template is None:
                    out.append(pair_text(str(r[ins]), str(a), str(b)))
                    continue
                try:
                    out.append(text_template.format(**{**r, o1: a, o2: b}))
                except KeyError as exc:
                    raise ConfigError(
                        f"{where}: text_template uses column {exc} which is not in "
                        f"{list(rows.columns)}"
                    ) from None
            return out

        frame = pd.DataFrame(
            {
                "text": render(False),
                PAIR_FIELDS[0]: [str(x) for x in rows[ins]],
                PAIR_FIELDS[1]: [str(x) for x in rows[o1]],
                PAIR_FIELDS[2]: [str(x) for x in rows[o2]],
                "text_swapped": render(True),
            }
        )
        return frame, notes

    def swapped_view(self, item: ItemView, text: str) -> ItemView:
        """The pair with its outputs exchanged (fields too): a swap judge's second order."""
        trade = {PAIR_FIELDS[1]: PAIR_FIELDS[2], PAIR_FIELDS[2]: PAIR_FIELDS[1]}
        fields = tuple((trade.get(k, k), v) for k, v in item.fields)
        order = {k: i for i, k in enumerate(PAIR_FIELDS)}
        fields = tuple(sorted(fields, key=lambda kv: order.get(kv[0], len(order))))
        return ItemView(item.item_id, text, item.choices, fields, item.context)

    def swap_back(self, output: str | None) -> str | None:
        """A verdict on the swapped order in the original numbering (:func:`swap_back`)."""
        return swap_back(output)

    # -- LLM answers -----------------------------------------------------------------------
    def parser(self) -> PairwiseParser:
        return PairwiseParser(self.labels, self.label_names)

    def parse(self, parser: LabelParser | None, text: str | None, item: ItemView) -> Parsed:
        """A judge's verdict (the item's options are the two outputs' names, never choices)."""
        return (parser or self.parser()).parse(text, None)

    def answer_forms(self, item: ItemView) -> list[str]:
        """A constrained answer is the label itself: "1", "2" (and "tie")."""
        return list(self.labels)

    # -- people and Label Studio ---------------------------------------------------------
    def human_answer_help(self, item: ItemView) -> str | None:
        """What a person may answer: the output's number or name (no index: "1" is output
        1, and "0" would be a tie where ties are allowed).

        >>> Pairwise(["1", "2"]).human_answer_help(ItemView("p", ""))
        "use one of ['1', '2', 'Output (1)', 'Output (2)'] (or a / b for output 1 / 2)"
        """
        shown = [str(x) for x in (*self.labels, *self.display_labels())]
        names = list(dict.fromkeys(shown))
        return f"use one of {names} (or a / b for output 1 / 2)"

    def match_human(self, raw: str, item: ItemView) -> str | None:
        """A person's answer: "1"/"2"/"tie" in any of their spellings (``a``, ``Output
        (b)``, ...) or an option shown."""
        y = normalise_answer(raw)
        if y is not None and y in self.labels:
            return y
        return super().match_human(raw, item)

    def labelstudio_control(self) -> str:
        return (
            f'<Choices name="{self.labelstudio_name}" toName="text" choice="single-radio" '
            'required="true" value="$options" showInline="true"/>'
        )

    def labelstudio_objects(self) -> str:
        """The two outputs side by side under the instruction (``$text``), each headed by
        its answer's name; the choice buttons below them."""
        pane = (
            '    <View style="flex: 1; min-width: 0;">'
            '<Header value="$name_{n}" size="5"/><Text name="output_{n}" value="$output_{n}"/>'
            "</View>\n"
        )
        return (
            '  <View style="display: flex; gap: 1.5em; align-items: flex-start;">\n'
            + pane.format(n=1)
            + pane.format(n=2)
            + "  </View>\n"
        )

    def labelstudio_data(self, item: ItemView, options: Sequence[str]) -> dict[str, Any]:
        """The instruction as the page's text, the two outputs, each headed by the option
        that chooses it."""
        ins, a, b = (item.field(f) for f in PAIR_FIELDS)
        names = [*options, "", ""] if len(options) >= 2 else self.display_labels()
        return {
            "text": ins if ins is not None else item.text,
            "output_1": a or "",
            "output_2": b or "",
            "name_1": names[0],
            "name_2": names[1],
        }

    def labelstudio_raw(
        self, result: Mapping[str, Any], unshown: Callable[[str], str]
    ) -> tuple[bool, str | None]:
        """The choice made; a ``<Pairwise>`` tag's result (a project whose page was edited to
        use it) reads ``left`` as "1" and ``right`` as "2"."""
        v = result.get("value") or {}
        if result.get("type") == "pairwise" or "selected" in v:
            side = str(v.get("selected") or "").casefold()
            return True, {"left": FIRST, "right": SECOND}.get(side)
        return super().labelstudio_raw(result, unshown)


def consistency_table(consistency: pd.DataFrame, gold: pd.Series | None = None) -> pd.DataFrame:
    """Per judge: pairs asked in both orders, share consistent (of the ``read_both`` pairs
    whose two verdicts could be read), share of the given-order verdicts for output 1 (of
    the ``read_given`` ones read: an unreadable verdict is no vote for either output), and
    where gold is given the accuracy of the first order and of the consistent verdicts
    (the report's figures)."""
    rows = []
    for judge, g in consistency.groupby("judge", sort=True):
        known = g["consistent"].notna()
        given = g["first"].notna()
        row: dict[str, Any] = {
            "judge": judge,
            "pairs": len(g),
            "consistent": float(g.loc[known, "consistent"].astype(bool).mean())
            if known.any()
            else float("nan"),
            "read_both": int(known.sum()),
            "wins_1": float((g.loc[given, "first"] == FIRST).mean())
            if given.any()
            else float("nan"),
            "read_given": int(given.sum()),
        }
        if gold is not None:
            truth = gold.reindex(g["item_id"]).to_numpy()
            row["acc_first"] = float(np.mean(g["first"].to_numpy() == truth))
            c = g.loc[g["consistent"].fillna(False).astype(bool)]
            t = gold.reindex(c["item_id"]).to_numpy()
            row["acc_consistent"] = float(np.mean(c["first"].to_numpy() == t)) if len(c) else 0.0
        rows.append(row)
    return pd.DataFrame(rows)
