"""How far the people of a live project agree with each other, and the models with them.

Three figures, each from a kept library:

- **Krippendorff's alpha** (nominal; the ``krippendorff`` package): among the people, on the
  items that got two or more human labels, and among everyone (people and models).
  ``alpha = 1 - D_o / D_e``, the observed disagreement over the one expected by chance from
  the pooled labels; items with a single label are not pairable and do not count. It is
  undefined (``None``) with fewer than two pairable labels or a single label value.
- **Cohen's kappa** (scikit-learn) and the plain share of agreement, for each pair of
  people on the items both labelled, and for each model against the **human vote** (the
  label of an item's human task, the weighted vote of its k labels).
- **A confusion table** per model: rows are the human vote, columns the model's answer,
  cells the number of items; the per-class agreement is the diagonal over the row sum.
- **Per label** (outputs that are sets of labels, :func:`label_agreement`): each set read
  as 0/1 answers "holds the label", with the counts, the people's agreement and alpha and
  each model's agreement with the human vote, label by label.

For answers that are not labels but graded (span lists: a kind with ``graded_people``),
two people rarely give the same answer, so every **agreement** is instead the mean score
of the pairs compared (the kind's ``people_score``: for spans the overlap span F1), and
kappa, alpha and the confusion tables, defined for labels only, are left out (``None``,
empty); ``measure`` says which.

Every figure is read from the ledger (:func:`agreement_summary`), so ``quorum status`` and
the report show the same numbers. The answers compared are those paid for: a model's first
parsed ``annotate`` answer per item, every human label that counts (``answered`` or
``late``).

>>> import pandas as pd
>>> long = pd.DataFrame({"item_id": ["a", "a", "b", "b", "c", "c"],
...                      "annotator": ["ann", "bob"] * 3, "label": ["x", "x", "x", "y", "y", "y"]})
>>> round(alpha(long), 4)  # D_o = 2/6, D_e = 2 * 3 * 3 / (6 * 5) = 0.6
0.4444
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from quorum.live.humans.book import HumanBook
from quorum.live.ledger.store import Ledger

#: the long frame every function reads: one row per (item, annotator) label
COLUMNS = ("item_id", "annotator", "label")
#: a graded kind's score of an answer against another, in [0, 1]
Score = Callable[[str, str], float]


def alpha(long: pd.DataFrame) -> float | None:
    """Krippendorff's alpha (nominal) of a long ``item_id, annotator, label`` frame.

    Only items with two or more labels are pairable. ``None`` where alpha is undefined:
    fewer than two pairable labels, or a single label value among them.
    """
    import krippendorff

    long = long.dropna(subset=["label"]).drop_duplicates(["item_id", "annotator"], keep="first")
    per_item = long.groupby("item_id")["label"].transform("size")
    pairable = long[per_item >= 2]
    if len(pairable) < 2 or pairable["label"].nunique() < 2:
        return None
    codes = {v: i for i, v in enumerate(sorted(pairable["label"].astype(str).unique()))}
    raters = sorted(pairable["annotator"].astype(str).unique())
    units = sorted(pairable["item_id"].astype(str).unique())
    data = np.full((len(raters), len(units)), np.nan)
    r_ix = {r: i for i, r in enumerate(raters)}
    u_ix = {u: i for i, u in enumerate(units)}
    for it, an, lab in pairable[list(COLUMNS)].astype(str).itertuples(index=False):
        data[r_ix[an], u_ix[it]] = codes[lab]
    value = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    return None if value != value else float(value)


def pair_agreement(a: pd.Series, b: pd.Series, score: Score | None = None) -> dict[str, Any]:
    """Two raters' labels (Series indexed by item): items both labelled, the share of them
    with the same label, and Cohen's kappa (``None`` where undefined: no items, or both
    raters gave one and the same label throughout); with ``score``, the mean score of the
    pairs instead of the share, and no kappa."""
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
    n = len(both)
    if n == 0:
        return {"items": 0, "agreement": None, "kappa": None}
    if score is not None:
        mean = sum(score(str(x), str(y)) for x, y in zip(both["a"], both["b"], strict=True)) / n
        return {"items": n, "agreement": float(mean), "kappa": None}
    same = float((both["a"].astype(str) == both["b"].astype(str)).mean())
    return {"items": n, "agreement": same, "kappa": _kappa(both["a"], both["b"])}


def _kappa(a: pd.Series, b: pd.Series) -> float | None:
    from sklearn.metrics import cohen_kappa_score

    if len(set(a.astype(str)) | set(b.astype(str))) < 2:
        return None  # one label everywhere: chance agreement is 1, kappa is 0/0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        k = float(cohen_kappa_score(a.astype(str), b.astype(str)))
    return None if k != k else k


def confusion(truth: pd.Series, pred: pd.Series, labels: list[str]) -> dict[str, dict[str, int]]:
    """``{truth label: {predicted label: items}}`` on the items both have, every label of
    ``labels`` a row and a column (labels outside it are added at the end)."""
    both = pd.concat([truth.rename("t"), pred.rename("p")], axis=1, join="inner").dropna()
    both = both.astype(str)
    seen = [x for x in pd.unique(pd.concat([both["t"], both["p"]])) if x not in labels]
    order = [*labels, *sorted(seen)]
    table = pd.crosstab(both["t"], both["p"]).reindex(index=order, columns=order, fill_value=0)
    return {str(t): {str(p): int(v) for p, v in row.items()} for t, row in table.iterrows()}


def per_class(table: dict[str, dict[str, int]]) -> dict[str, dict[str, Any]]:
    """Per human label: items, and the share the model answered with that same label."""
    out = {}
    for t, row in table.items():
        n = sum(row.values())
        out[t] = {"items": n, "agreement": (row.get(t, 0) / n) if n else None}
    return out


# -- from the ledger ------------------------------------------------------------------
def ledger_labels(ledger: Ledger) -> tuple[pd.DataFrame, pd.Series, pd.DataFrame]:
    """What the ledger holds to compare: every human label that counts (long frame, the
    person as annotator), the human vote per item, every model's first answer per item."""
    people = HumanBook(ledger).counted()
    people = people.rename(columns={"person": "annotator"})
    people["annotator"] = people["annotator"].fillna("?")
    people = people.drop_duplicates(["item_id", "annotator"], keep="last")[list(COLUMNS)]
    votes = ledger.frame(
        "SELECT item_id, label FROM human_queue WHERE label IS NOT NULL "
        "ORDER BY submitted_at, item_id"
    )
    vote = votes.drop_duplicates("item_id", keep="last").set_index("item_id")["label"]
    models = ledger.frame(
        "SELECT item_id, annotator, output AS label FROM calls WHERE kind='annotate' "
        "AND annotator_kind != 'human' AND status='ok' AND output IS NOT NULL ORDER BY call_id"
    )
    models = models.drop_duplicates(["item_id", "annotator"], keep="first")
    return people.reset_index(drop=True), vote, models.reset_index(drop=True)


def agreement_summary(
    ledger: Ledger,
    labels: list[str] | None = None,
    score: Score | None = None,
    measure: str = "the same label",
) -> dict[str, Any]:
    """The agreement figures of a project's ledger, as plain JSON values.

    ``people``: alpha among the people, the items with two or more human labels, each pair
    (items, share, kappa) and each person (labels, share of agreement with the other people's
    labels of the same items, and with the human vote). ``models``: per model against the
    human vote (items, share, kappa, the confusion table and its per-class agreement).
    ``everyone``: alpha among people and models together. With ``score`` (graded answers,
    ``measure`` naming it) every agreement is a mean score, and no kappa, alpha or confusion.
    """
    people, vote, models = ledger_labels(ledger)
    labels = [str(x) for x in (labels or [])]
    n_lab = people.groupby("item_id")["annotator"].transform("size")
    by_person = {p: g.set_index("item_id")["label"] for p, g in people.groupby("annotator")}
    pairs = [
        {"a": a, "b": b, **pair_agreement(by_person[a], by_person[b], score)}
        for a, b in combinations(sorted(by_person), 2)
    ]
    persons = []
    for p, mine in sorted(by_person.items()):
        others = people[(people["annotator"] != p) & people["item_id"].isin(mine.index)]
        if score is not None:
            mine_of = others["item_id"].map(mine).astype(str)
            same = sum(score(str(o), m) for o, m in zip(others["label"], mine_of, strict=True))
        else:
            same = (others["label"].astype(str) == others["item_id"].map(mine).astype(str)).sum()
        persons.append(
            {
                "person": p,
                "labels": len(mine),
                "pairs_with_others": len(others),
                "agree_with_others": float(same / len(others)) if len(others) else None,
                **{
                    f"{k}_vote": v
                    for k, v in pair_agreement(mine, vote, score).items()
                    if k in ("items", "agreement")
                },
            }
        )
    out_models = []
    for m, g in models.groupby("annotator", sort=True):
        answers = g.set_index("item_id")["label"]
        table = confusion(vote, answers, labels) if score is None else {}
        out_models.append(
            {
                "annotator": m,
                "answers": len(answers),
                **pair_agreement(vote, answers, score),
                "confusion": table,
                "per_class": per_class(table),
            }
        )
    everyone = pd.concat([people, models[list(COLUMNS)]], ignore_index=True)
    nominal = score is None  # alpha (nominal) compares labels, not graded answers
    return {
        "measure": measure,
        "people": {
            "alpha": alpha(people) if nominal else None,
            "labels": len(people),
            "items_with_2plus": int(people.loc[n_lab >= 2, "item_id"].nunique()),
            "pairs": pairs,
            "persons": persons,
        },
        "human_votes": len(vote),
        "models": out_models,
        "everyone": {"alpha": alpha(everyone) if nominal else None, "labels": len(everyone)},
    }


def label_agreement(ledger: Ledger, kind: Any) -> list[dict[str, Any]]:
    """Per label, for outputs that are sets of labels (``kind.label_set_outputs``): each
    answer read as "holds the label or not" (0/1), as binary relevance does.

    For each label of ``kind``: ``human_votes`` holding it (of ``votes``), the people's
    figures on the items with two or more human labels (``people_pairs`` pairs of labels,
    ``people_agreement`` the share of them that agree about the label, ``people_alpha``
    Krippendorff's alpha of the 0/1 answers) and, per model, its answers holding the label
    and its agreement with the human vote about it (on the items with both).
    """
    people, vote, models = ledger_labels(ledger)

    def holds(values: pd.Series, label: str) -> pd.Series:
        return values.map(lambda v: _holds(kind, v, label))

    out = []
    for lab in kind.labels:
        ones = people.assign(label=holds(people["label"], lab))
        ones = ones.dropna(subset=["label"])
        pairs = same = 0
        for _, g in ones.groupby("item_id"):
            v = g["label"].tolist()
            for a, b in combinations(v, 2):
                pairs += 1
                same += a == b
        v_ones = holds(vote, lab).dropna()
        per_model = {}
        for m, g in models.groupby("annotator", sort=True):
            mine = holds(g.set_index("item_id")["label"], lab).dropna()
            pa = pair_agreement(v_ones, mine)
            per_model[str(m)] = {
                "answers": len(mine),
                "holding": int((mine == "1").sum()),
                "items": pa["items"],
                "agreement": pa["agreement"],
            }
        out.append(
            {
                "label": lab,
                "human_votes": int((v_ones == "1").sum()),
                "votes": len(v_ones),
                "people_labels": int((ones["label"] == "1").sum()),
                "people_pairs": pairs,
                "people_agreement": same / pairs if pairs else None,
                "people_alpha": alpha(ones),
                "models": per_model,
            }
        )
    return out


def _holds(kind: Any, value: Any, label: str) -> str | None:
    """ "1" if the set ``value`` holds ``label``, "0" if not, None for no set."""
    got = kind.label_set(value) if isinstance(value, str) else None
    return None if got is None else ("1" if label in got else "0")


def agreement_lines(ag: dict[str, Any]) -> list[str]:
    """The summary in a few plain lines (``quorum status``)."""
    p = ag["people"]
    lines = []
    if p["labels"]:
        lines.append(
            f"agreement among people: alpha {_num(p['alpha'])} over "
            f"{p['items_with_2plus']} item(s) with 2+ human labels ({p['labels']} labels)"
        )
    measure = ag.get("measure") or "the same label"
    how = "" if measure == "the same label" else f" ({measure})"
    for m in ag["models"]:
        if m["items"]:
            lines.append(
                f"agreement of {m['annotator']} with the human vote{how}: "
                f"{_num(m['agreement'])} on {m['items']} item(s), kappa {_num(m['kappa'])}"
            )
    if ag["everyone"]["alpha"] is not None:
        lines.append(
            f"agreement among everyone (people and models): alpha {_num(ag['everyone']['alpha'])}"
        )
    return lines


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"
