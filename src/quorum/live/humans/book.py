"""The ledger's book of human labels: the slots of each human task and what filled them.

A task that wants k labels has k slots (``human_labels`` rows), each with its own ``calls``
row that holds the price of one label while the slot is ``open``. A slot is filled by the
first answer of a person not yet on the task (``answered``: its call becomes ``ok``, paid
once); the same person answering again corrects their label (not paid again). A slot
nobody filled before the task stopped waiting is ``withdrawn`` (its call too, at cost 0).
An answer that comes after that, while the task has fewer than k labels, is ``late``: paid at
the label price when the budget has room (it refills a withdrawn slot, else gets a slot and
a call of its own), otherwise ``late-unpaid`` (recorded, cost 0, not used). A task never
pays more than its k labels: an answer beyond them (from a person beyond the k wanted) is
``extra``: recorded with its author, cost 0, not used.

Every method is one committed transaction of the :class:`~quorum.live.ledger.store.Ledger`.
"""

from __future__ import annotations

import sqlite3
import time

import pandas as pd

from quorum.live.humans.reliability import LabelSetReliability, Reliability
from quorum.live.ledger.store import Ledger

SLOT_COLUMNS = ["request_key", "slot", "item_id", "call_id", "status", "person", "label",
                "raw", "line", "answered_at"]  # fmt: skip
#: slot statuses whose label counts (is paid and used)
COUNTED = ("answered", "late")
#: a label beyond the k a task wants (``humans.labels_per_item``): recorded, never paid
EXTRA = "extra"


class HumanBook:
    """Slot-level bookkeeping of human tasks in a ledger."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def _has(self, table: str) -> bool:
        """Whether the ledger has ``table`` (a read-only look at an older ledger may not)."""
        return bool(self.ledger.query(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)))  # fmt: skip

    def labels(self, key: str | None = None) -> pd.DataFrame:
        """Slots (of the task ``key``, or all), in task and slot order."""
        where, args = ("WHERE request_key=?", (key,)) if key else ("", ())
        if not self._has("human_labels"):
            return pd.DataFrame(columns=SLOT_COLUMNS)
        return self.ledger.frame(
            "SELECT request_key, slot, item_id, call_id, status, person, label, raw, line, "
            f"answered_at FROM human_labels {where} ORDER BY request_key, slot",
            args,
        )

    def people(self) -> set[str]:
        """Everyone known to have given a label that counts (authors the queue reported)."""
        if not self._has("human_labels"):
            return set()
        marks = ",".join("?" * len(COUNTED))
        rows = self.ledger.query(
            f"SELECT DISTINCT person FROM human_labels WHERE person IS NOT NULL AND person != '' "
            f"AND status IN ({marks})",
            COUNTED,
        )
        return {str(r[0]) for r in rows}

    def counted(self) -> pd.DataFrame:
        """Every label that counts, oldest first."""
        marks = ",".join("?" * len(COUNTED))
        return self.ledger.frame(
            "SELECT request_key, slot, item_id, person, label, raw, line, answered_at "
            f"FROM human_labels WHERE status IN ({marks}) ORDER BY answered_at, slot",
            COUNTED,
        )

    def cost_units(self, key: str) -> int:
        """What the task's slots cost now (paid and held), in nano-units."""
        row = self.ledger.query(
            "SELECT coalesce(sum(CASE WHEN c.status IN ('ok','pending') THEN "
            "CAST(round(c.cost * 1000000000) AS INTEGER) END), 0) FROM human_labels l "
            "JOIN calls c ON c.call_id = l.call_id WHERE l.request_key=?",
            (key,),
        )
        return int(row[0][0])

    # -- answers -----------------------------------------------------------------
    def fill(self, key: str, slot: int, person: str | None, label: str, raw: str,
             line: int | None, status: str = "answered") -> None:  # fmt: skip
        """An answer fills an open (or, late, a withdrawn) slot: its call is paid once."""
        now = time.time()
        with self.ledger.tx() as c:
            row = _answer_slot(c, key, slot, (person, label, raw, line, now), status)
            price = c.execute(
                "SELECT price FROM human_queue WHERE request_key=?", (key,)
            ).fetchone()
            c.execute(
                "UPDATE calls SET status='ok', output=?, response_raw=?, finished_at=?, "
                "latency_s=? - created_at, cost=coalesce(?, cost), cost_source=?, error=NULL "
                "WHERE call_id=? AND status IN ('pending','withdrawn')",
                (label, raw, now, now, price[0] if price else None,
                 "human price (late answer)" if status == "late" else "human price (answered)",
                 row[0] if row else -1),
            )  # fmt: skip

    def add(self, key: str, item_id: str, call_id: int | None, person: str | None,
            label: str, raw: str, line: int | None, status: str) -> int:  # fmt: skip
        """A slot beyond those of the task (a late answer); returns its number."""
        with self.ledger.tx() as c:
            slot = _next_slot(c, key)
            c.execute(
                "INSERT INTO human_labels (request_key, slot, item_id, call_id, status, person, "
                "label, raw, line, answered_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (key, slot, item_id, call_id, status, person, label, raw, line, time.time()),
            )
            return int(slot)

    def widen(self, key: str, item_id: str, call_id: int) -> int:
        """One more open slot for the task (its call ``call_id`` holds the label's price)
        and one more label wanted; returns the slot's number."""
        with self.ledger.tx() as c:
            slot = _next_slot(c, key)
            c.execute(
                "INSERT INTO human_labels (request_key, slot, item_id, call_id, status) "
                "VALUES (?,?,?,?,'open')",
                (key, slot, item_id, call_id),
            )
            c.execute(
                "UPDATE human_queue SET wanted = coalesce(wanted, 1) + 1 WHERE request_key=?",
                (key,),
            )
            return int(slot)

    def correct(self, key: str, slot: int, person: str | None, label: str, raw: str,
                line: int | None) -> None:  # fmt: skip
        """A later answer of the slot's person replaces their label (no second payment)."""
        with self.ledger.tx() as c:
            row = _answer_slot(c, key, slot, (person, label, raw, line, time.time()), None)
            if row is not None and row[0] is not None:
                c.execute(
                    "UPDATE calls SET output=?, response_raw=? WHERE call_id=?",
                    (label, raw, row[0]),
                )

    # -- the task ------------------------------------------------------------------
    def set_label(self, key: str, label: str, by: str | None, raw: str, line: int | None,
                  confidence: float | None, status: str | None = None) -> None:  # fmt: skip
        """The task's label (the vote of its labels), who gave them, and optionally its
        status; a task that stops waiting releases its open slots."""
        now = time.time()
        with self.ledger.tx() as c:
            c.execute(
                "UPDATE human_queue SET label=?, answered_by=?, raw=?, line=?, confidence=?, "
                "answered_at=coalesce(answered_at, ?), status=coalesce(?, status) "
                "WHERE request_key=?",
                (label, by, raw, line, confidence, now, status, key),
            )
            if status is not None:
                self._release_open(c, key, "withdrawn: the task has the labels it gets", now)

    def note(self, key: str, note: str) -> None:
        """Why the task stopped waiting as it did (``human_queue.note``)."""
        with self.ledger.tx() as c:
            c.execute("UPDATE human_queue SET note=? WHERE request_key=?", (note, key))

    def stop(self, key: str, status: str, note: str) -> None:
        """A task without labels stops waiting (``withdrawn`` or ``expired``): its open
        slots are withdrawn and their held price released."""
        now = time.time()
        with self.ledger.tx() as c:
            c.execute(
                "UPDATE human_queue SET status=?, note=? WHERE request_key=? AND status='pending'",
                (status, note, key),
            )
            self._release_open(c, key, f"{status}: {note}", now)

    @staticmethod
    def _release_open(c, key: str, why: str, now: float) -> None:
        ids = _move_slots(c, key, "open", "withdrawn")
        c.executemany(
            "UPDATE calls SET status='withdrawn', cost=0, finished_at=?, cost_source=? "
            "WHERE call_id=? AND status='pending'",
            [(now, why, i) for i in ids],
        )

    def reopen(self, key: str, price: float) -> None:
        """A withdrawn task (no label yet) is needed again: its slots wait once more."""
        now = time.time()
        with self.ledger.tx() as c:
            c.execute(
                "UPDATE human_queue SET status='pending', submitted_at=?, price=?, note=NULL "
                "WHERE request_key=? AND status='withdrawn'",
                (now, price, key),
            )
            ids = _move_slots(c, key, "withdrawn", "open")
            c.executemany(
                "UPDATE calls SET status='pending', cost=?, finished_at=NULL, "
                "cost_source='human price (held until answered)' "
                "WHERE call_id=? AND status='withdrawn'",
                [(price, i) for i in ids],
            )

    def wait_again(self, key: str) -> None:
        """An answered task given one more slot (:meth:`widen`) waits again, its timeout
        counted from now; its label stays the vote so far until the new one comes."""
        with self.ledger.tx() as c:
            c.execute(
                "UPDATE human_queue SET status='pending', submitted_at=? "
                "WHERE request_key=? AND status='answered'",
                (time.time(), key),
            )

    # -- reliability ---------------------------------------------------------------
    def save_reliability(
        self, rel: Reliability | LabelSetReliability, quality: float | None
    ) -> None:
        now = time.time()
        with self.ledger.tx() as c:
            c.execute("DELETE FROM human_reliability")
            c.executemany(
                "INSERT INTO human_reliability VALUES (?,?,?,?,?,?,?,?,?)",
                [(p.name, p.labels, p.checked, p.gold, p.gold_correct, p.agreement, p.accuracy,
                  rel.weight(p.name), now) for p in rel.people.values()],
            )  # fmt: skip
            c.execute(
                "INSERT OR REPLACE INTO meta VALUES ('human_quality', ?)",
                ("" if quality is None else f"{quality:.6g}",),
            )
            c.execute(
                "INSERT OR REPLACE INTO meta VALUES ('human_evidence', ?)", (str(rel.evidence),)
            )

    def reliability_frame(self) -> pd.DataFrame:
        if not self._has("human_reliability"):
            return pd.DataFrame(columns=["person", "labels", "checked", "gold", "gold_correct",
                                         "agreement", "accuracy", "weight"])  # fmt: skip
        return self.ledger.frame(
            "SELECT person, labels, checked, gold, gold_correct, agreement, accuracy, weight "
            "FROM human_reliability ORDER BY person"
        )


def reliability_evidence(team: pd.DataFrame, labels_per_item: int, min_gold: int) -> dict:
    """How much the human team's reliabilities rest on, and whether they can be trusted.

    An accuracy checked against gold (control items: the items file's gold column) is
    evidence about that person alone. Agreement is not, with two labels per item: when
    two people disagree, nothing says which one is wrong, and the estimate then depends on
    the prior and on who happened to share items. So the estimate is called dependable
    when every person has at least ``min_gold`` labels on control items, or, without
    control items, with at least three labels per item and ``min_gold`` checked labels each.
    """
    people = [] if team is None or team.empty else team.to_dict("records")
    gold = {str(p["person"] or "?"): int(p["gold"] or 0) for p in people}
    checked = {str(p["person"] or "?"): int(p["checked"] or 0) for p in people}
    if not people:
        ok, why = False, "no human label can be checked yet"
    elif min(gold.values()) >= min_gold:
        ok, why = True, f"every person has at least {min_gold} labels on control (gold) items"
    elif labels_per_item >= 3 and min(checked.values()) >= min_gold:
        ok, why = (
            True,
            (f"{labels_per_item} labels per item and at least {min_gold} checked labels each"),
        )
    else:
        few = sorted(p for p, g in gold.items() if g < min_gold)
        ok, why = (
            False,
            (
                f"{', '.join(few)} {'has' if len(few) == 1 else 'have'} fewer than {min_gold} "
                f"labels on control (gold) items and with {labels_per_item} label(s) per item "
                "agreement alone cannot tell who is wrong when two people disagree; add control "
                "items (known labels in items.gold_column) to check each person"
            ),
        )
    return {"dependable": ok, "why": why, "gold_labels": gold, "checked_labels": checked}


def _move_slots(c: sqlite3.Connection, key: str, old: str, new: str) -> list[int]:
    """Set the task's slots in status ``old`` to ``new``; returns their call ids."""
    q = "SELECT call_id FROM human_labels WHERE request_key=? AND status=?"
    ids = [r[0] for r in c.execute(q, (key, old))]
    c.execute("UPDATE human_labels SET status=? WHERE request_key=? AND status=?", (new, key, old))
    return ids


def _answer_slot(c: sqlite3.Connection, key: str, slot: int, answer: tuple,
                 status: str | None) -> tuple | None:  # fmt: skip
    """Write ``answer`` (person, label, raw, line, answered_at) into a slot, and ``status``
    unless None; returns the slot's row before (its call id), None if there is no slot."""
    row = c.execute(
        "SELECT call_id FROM human_labels WHERE request_key=? AND slot=?", (key, slot)
    ).fetchone()
    c.execute(
        "UPDATE human_labels SET status=coalesce(?, status), person=?, label=?, raw=?, line=?, "
        "answered_at=? WHERE request_key=? AND slot=?",
        (status, *answer, key, slot),
    )
    return row


def _next_slot(c: sqlite3.Connection, key: str) -> int:
    """The number of the task ``key``'s next slot (its slots count from 0)."""
    return int(
        c.execute(
            "SELECT coalesce(max(slot), -1) + 1 FROM human_labels WHERE request_key=?", (key,)
        ).fetchone()[0]
    )
