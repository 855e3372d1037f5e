"""Pairwise judges asked in both orders (``swap``): what each said in each order, read from
the ledger's ``swap_pairs`` for the status, the report page and the export.

Per judge (:func:`judge_table`): the pairs it answered in both orders, the share whose two
verdicts agree (``consistent``, over the ``read_both`` pairs where both could be read), the
share of its given-order verdicts that chose output 1 (``wins_1``, the win rate of output 1,
over the ``read_given`` pairs whose given-order verdict could be read), the share
of all its verdicts that chose the output shown first (``picks_first_shown``: 0.5 is no
position bias, 1.0 always the first shown) and the pairs its rule gave an answer
(``answered``). Per item (:func:`item_verdicts`): each judge's verdict in the given order and
in the swapped order (both in the original numbering), their consistency and the judge's
answer.

>>> pairs = pd.DataFrame({"item_id": ["a", "b"], "annotator": ["j", "j"],
...     "first": ["1", "1"], "second": ["1", "2"], "consistent": [1, 0],
...     "answer": ["1", None], "rule": ["consistent"] * 2, "cost": [0.2, 0.2]})
>>> row = judge_table(pairs)[0]
>>> row["pairs"], row["consistent"], row["wins_1"], row["picks_first_shown"], row["answered"]
(2, 0.5, 1.0, 0.75, 1)
>>> "2 pair(s), 50% consistent, output 1 chosen 100% (given order)," in judge_lines([row])[0]
True
>>> unread = pairs.assign(first=[None, "2"], second=[None, "1"], consistent=[None, 1])
>>> row = judge_table(unread)[0]
>>> row["read_both"], row["consistent"], row["read_given"], row["wins_1"]
(1, 1.0, 1, 0.0)
>>> print(judge_lines([row])[0].split("): ")[1].split(", output")[0])
2 pair(s), 100% consistent (of the 1 read in both orders)
>>> "output 1 chosen 0% (given order, of 1 read)" in judge_lines([row])[0]
True
>>> item_verdicts(pairs)["b"]["j"]
{'given_order': '1', 'swapped_order': '2', 'consistent': False, 'answer': None}
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from quorum.live.ledger.store import Ledger
from quorum.tasks.pairwise import FIRST, SECOND, consistency_table


def answered_pairs(ledger: Ledger) -> pd.DataFrame:
    """The pairs whose two calls were both answered, the latest per item and judge (a
    changed prompt makes new pairs)."""
    pairs = ledger.swap_pairs()
    pairs = pairs[pairs["cost"].notna()]
    return pairs.drop_duplicates(["item_id", "annotator"], keep="last").reset_index(drop=True)


def _text(x: Any) -> str | None:
    return None if x is None or (isinstance(x, float) and x != x) else str(x)


def _flag(x: Any) -> bool | None:
    return None if x is None or (isinstance(x, float) and x != x) else bool(int(x))


def judge_table(pairs: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per judge (see the module docstring); none without pairs."""
    if pairs.empty:
        return []
    cons = pd.DataFrame(
        {
            "item_id": pairs["item_id"],
            "judge": pairs["annotator"],
            "first": pairs["first"].map(_text),
            "second": pairs["second"].map(_text),
            "consistent": pairs["consistent"].map(_flag).astype(object),
        }
    )
    rows = []
    for r, (judge, g) in zip(
        consistency_table(cons).to_dict("records"), cons.groupby("judge", sort=True), strict=True
    ):
        shown_first = pd.concat([g["first"] == FIRST, g["second"] == SECOND])
        known = pd.concat([g["first"].notna(), g["second"].notna()])
        mine = pairs[pairs["annotator"] == judge]
        rows.append(
            {
                "judge": judge,
                "rule": str(mine["rule"].iloc[-1]),
                "pairs": int(r["pairs"]),
                "consistent": None if r["consistent"] != r["consistent"] else r["consistent"],
                "inconsistent": int((g["consistent"] == False).sum()),  # noqa: E712
                "read_both": int(r["read_both"]),
                "read_given": int(r["read_given"]),
                "wins_1": None if r["wins_1"] != r["wins_1"] else r["wins_1"],
                "picks_first_shown": float(shown_first[known].mean()) if known.any() else None,
                "answered": int(mine["answer"].notna().sum()),
            }
        )
    return rows


def item_verdicts(pairs: pd.DataFrame) -> dict[str, dict[str, dict[str, Any]]]:
    """Per item, per judge: its verdict in each order, their consistency, its answer."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for r in pairs.to_dict("records"):
        out.setdefault(str(r["item_id"]), {})[str(r["annotator"])] = {
            "given_order": _text(r["first"]),
            "swapped_order": _text(r["second"]),
            "consistent": _flag(r["consistent"]),
            "answer": _text(r["answer"]),
        }
    return out


def judge_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The judges in a few plain lines (``quorum status``)."""
    out = []
    for r in rows:
        n = r["pairs"]
        c = "n/a" if r["consistent"] is None else f"{r['consistent']:.0%}"
        c += " consistent"
        if r.get("read_both", n) != n:  # the share is of the pairs read in both orders
            c += f" (of the {r['read_both']} read in both orders)"
        w = "n/a" if r["wins_1"] is None else f"{r['wins_1']:.0%}"
        given = (
            "given order"
            if r.get("read_given", n) == n
            else f"given order, of {r['read_given']} read"
        )
        first = "n/a" if r["picks_first_shown"] is None else f"{r['picks_first_shown']:.0%}"
        out.append(
            f"judge {r['judge']} (both orders, rule {r['rule']}): {n} pair(s), "
            f"{c}, output 1 chosen {w} ({given}), the output "
            f"shown first chosen {first}, {r['answered']} with an answer"
        )
    return out
