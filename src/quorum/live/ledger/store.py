"""The durable ledger: one SQLite file (WAL) per project.

Every call is written *before* it is made (status ``inflight``) and its response, parse
result, cost, token usage and latency are committed *before* the answer is handed to the
router. A completed call (``ok`` or ``unparseable``) is the response cache: the same request
key is never sent again, in this run or any later one. Calls left ``inflight`` by a killed
process become ``interrupted`` when the next run starts.

The tables and their migrations: :mod:`~quorum.live.ledger.schema`.

Human tasks are first-class: a ``human_queue`` row is created when a task is sent, with one
``human_labels`` slot (and one ``calls`` row holding the price of a label) per label wanted
(``humans.labels_per_item``); :class:`~quorum.live.humans.book.HumanBook` attaches answers to
slots, whether or not a routing pass asks for that item again. A task no complete pass
needs any more is ``withdrawn`` and one unanswered past ``humans.timeout`` is ``expired``
(their held price is released); an answered task no pass asked for is ``given`` to the
router before the next pass starts. ``human_reliability`` holds each person's estimated
accuracy (:mod:`quorum.live.humans.reliability`).

Money is summed in integer nano-units (:func:`money_str` prints it as an exact decimal).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd

from quorum.errors import QuorumError
from quorum.live.ledger.schema import (
    SCHEMA,
    SCHEMA_VERSION,
    TASK_COLUMNS,
    check_intact,
    migrate,
    open_readonly,
)
from quorum.live.ledger.schema import float_or_none as _f
from quorum.live.ledger.schema import int_or_none as _int
from quorum.live.ledger.schema import text_or_none as _s
from quorum.routing.core.budget import from_units

#: integer nano-units of a money column, summed without float drift
_U = "CAST(round({} * 1000000000) AS INTEGER)"


def money_str(units: int) -> str:
    """An amount in nano-units as an exact decimal string: 600000000 -> '0.6'."""
    d = (Decimal(int(units)) / Decimal(1_000_000_000)).normalize()
    return f"{d:f}"


#: statuses of a call whose response was received (and paid): the response cache
DONE = ("ok", "unparseable")


class LedgerLockedError(QuorumError):
    """Another process is running this project."""


class Ledger:
    """Thread-safe access to the ledger file; every write is its own committed transaction."""

    def __init__(self, path: str | Path, sync: str = "normal", readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        if readonly:
            if not self.path.is_file():
                raise QuorumError(f"no ledger at {self.path}: run `quorum annotate` first")
            self.conn = open_readonly(self.path)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            existed = self.path.is_file() and self.path.stat().st_size > 0
            self.conn = sqlite3.connect(
                str(self.path), check_same_thread=False, timeout=30, isolation_level=None
            )
            if existed:  # a damaged file is said so, not blamed on permissions (issue 37)
                try:
                    check_intact(self.conn, self.path)
                except QuorumError:
                    self.conn.close()
                    raise
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute(f"PRAGMA synchronous={sync.upper()}")
            self.conn.executescript(SCHEMA)
            migrate(self.conn)
            self.conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
            )
        self.conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._lockfile: Any = None

    # -- process lock ------------------------------------------------------
    def acquire(self) -> None:
        """Take the project lock: one ``quorum annotate`` per ledger at a time."""
        f = open(str(self.path) + ".lock", "a+")  # noqa: SIM115
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            who = f.read().strip() or "another process"
            f.close()
            raise LedgerLockedError(
                f"the project ledger {self.path} is in use by {who}; wait for it to finish"
            ) from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()} on {socket.gethostname()}")
        f.flush()
        self._lockfile = f

    def holder_alive(self, pid: Any, host: Any) -> bool:
        """Whether a run marked ``running`` by process ``pid`` on ``host`` still runs:
        False when its process is gone (a ``kill -9`` leaves the row ``running`` until the
        next ``annotate``): nobody holds the project lock, or, on this machine, no process
        has that pid. A run on another machine with the lock free is taken as gone too."""
        path = str(self.path) + ".lock"
        try:
            f = open(path)  # noqa: SIM115
        except OSError:
            return False
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            held = True
        except OSError:
            held = True  # the lock cannot be tried here: trust the row
        else:
            held = False
            fcntl.flock(f, fcntl.LOCK_UN)
        finally:
            f.close()
        if not held:
            return False
        if host == socket.gethostname() and pid:
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                return False
            except (OSError, ValueError):
                pass
        return True

    def close(self) -> None:
        with self._lock:
            self.conn.close()
        if self._lockfile is not None:
            fcntl.flock(self._lockfile, fcntl.LOCK_UN)
            self._lockfile.close()
            self._lockfile = None

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def query(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self.conn.execute(sql, args).fetchall()

    def frame(self, sql: str, args: tuple = ()) -> pd.DataFrame:
        with self._lock:
            return pd.read_sql_query(sql, self.conn, params=args)

    # -- runs --------------------------------------------------------------
    def start_run(self, project: str, config_hash: str, config_json: str, method: str,
                  seed: int, budget: float) -> int:  # fmt: skip
        with self.tx() as c:
            cur = c.execute(
                "INSERT INTO runs (project, config_hash, config_json, method, seed, budget, "
                "started_at, status, pid, host) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (project, config_hash, config_json, method, seed, budget, time.time(),
                 "running", os.getpid(), socket.gethostname()),
            )  # fmt: skip
            return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str, passes: int, summary: dict) -> None:
        with self.tx() as c:
            c.execute(
                "UPDATE runs SET finished_at=?, status=?, passes=?, summary=? WHERE run_id=?",
                (time.time(), status, passes, json.dumps(summary, default=str), run_id),
            )

    def close_stale_runs(self) -> int:
        """Runs still marked running belong to a killed process (we hold the lock)."""
        with self.tx() as c:
            return c.execute("UPDATE runs SET status='killed' WHERE status='running'").rowcount

    def mark_interrupted(self) -> tuple[int, float]:
        """Calls left in flight by a killed process become ``interrupted``: one whose request
        was sent is possibly billed and costs its reservation (counted as spent, so the bill
        never passes the budget); one that never left (it waited for its endpoint's slot,
        its rate limit or a retry's backoff) costs nothing. Returns (count, money) of the
        possibly billed ones."""
        with self.tx() as c:
            row = c.execute(
                "SELECT count(*), coalesce(sum(reserved),0) FROM calls "
                "WHERE status='inflight' AND sent_at IS NOT NULL"
            ).fetchone()
            c.execute(
                "UPDATE calls SET status='interrupted', cost=reserved, "
                "cost_source='reserved (possibly billed)', "
                "error='process stopped before the response was recorded' "
                "WHERE status='inflight' AND sent_at IS NOT NULL"
            )
            c.execute(
                "UPDATE calls SET status='interrupted', cost=0, cost_source='never sent', "
                "error='process stopped before the request was sent' "
                "WHERE status='inflight'"
            )
            return int(row[0]), float(row[1])

    def mark_sent(self, call_id: int, sent: bool = True) -> None:
        """The call's request is about to leave for the endpoint (committed before it does),
        or (``sent=False``) its last try was answered with an error, which is not billed."""
        with self.tx() as c:
            if sent:
                c.execute(
                    "UPDATE calls SET sent_at=? WHERE call_id=? AND sent_at IS NULL",
                    (time.time(), call_id),
                )
            else:
                c.execute("UPDATE calls SET sent_at=NULL WHERE call_id=?", (call_id,))

    def last_run(self, finished: bool = False) -> sqlite3.Row | None:
        where = "WHERE status IN ('finished','pending')" if finished else ""
        rows = self.query(f"SELECT * FROM runs {where} ORDER BY run_id DESC LIMIT 1")
        return rows[0] if rows else None

    # -- calls -------------------------------------------------------------
    def completed(self, key: str) -> sqlite3.Row | None:
        """The first answered call of ``key`` (the response cache), if any."""
        return self._first_call(key, "'ok','unparseable'")

    def by_key(self, key: str) -> sqlite3.Row | None:
        """The first answered or pending call of ``key``, if any."""
        return self._first_call(key, "'ok','unparseable','pending'")

    def _first_call(self, key: str, statuses: str) -> sqlite3.Row | None:
        rows = self.query(
            f"SELECT * FROM calls WHERE request_key=? AND status IN ({statuses}) "
            "ORDER BY call_id LIMIT 1",
            (key,),
        )
        return rows[0] if rows else None

    def start_call(self, run_id: int, key: str, kind: str, item_id: str, annotator: str,
                   annotator_kind: str, model: str | None, api_base: str | None, prompt: str,
                   params: dict, reserved: float, status: str = "inflight", cost: float = 0.0,
                   cost_source: str | None = None, sent: bool = True) -> int:  # fmt: skip
        """A new ``calls`` row; ``sent=False``: its request has not left yet (the annotator
        says when it does, :meth:`mark_sent`), else it counts as sent from now."""
        now = time.time()
        with self.tx() as c:
            cur = c.execute(
                "INSERT INTO calls (run_id, request_key, kind, item_id, annotator, "
                "annotator_kind, model, api_base, prompt, params, status, reserved, cost, "
                "cost_source, created_at, sent_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, key, kind, item_id, annotator, annotator_kind, model, api_base, prompt,
                 json.dumps(params, sort_keys=True, default=str), status, reserved, cost,
                 cost_source, now, now if sent else None),
            )  # fmt: skip
            return int(cur.lastrowid)

    def add_attempt(self, call_id: int, n: int, started_at: float, latency: float,
                    outcome: str, error: str | None) -> None:  # fmt: skip
        with self.tx() as c:
            c.execute(
                "INSERT INTO attempts VALUES (?,?,?,?,?,?)",
                (call_id, n, started_at, latency, outcome, error),
            )

    def finish_call(self, call_id: int, **fields: Any) -> None:
        fields.setdefault("finished_at", time.time())
        cols = ", ".join(f"{k}=?" for k in fields)
        with self.tx() as c:
            c.execute(f"UPDATE calls SET {cols} WHERE call_id=?", (*fields.values(), call_id))

    # -- pairwise judges asked in both orders (swap) -------------------------
    def start_pair(self, item_id: str, annotator: str, first_key: str, second_key: str,
                   rule: str) -> None:  # fmt: skip
        """A swap judge's two calls on an item, recorded before either is made (so the
        second order's call is known as such whatever happens next)."""
        with self.tx() as c:
            c.execute(
                "INSERT OR IGNORE INTO swap_pairs (item_id, annotator, first_key, second_key, "
                "rule, at) VALUES (?,?,?,?,?,?)",
                (item_id, annotator, first_key, second_key, rule, time.time()),
            )

    def finish_pair(self, item_id: str, annotator: str, first_key: str, second_key: str,
                    **fields: Any) -> None:  # fmt: skip
        """Both orders answered: each verdict (original numbering), their consistency, the
        judge's answer under its rule and what the two calls cost."""
        fields.setdefault("at", time.time())
        cols = ", ".join(f"{k}=?" for k in fields)
        with self.tx() as c:
            c.execute(
                f"UPDATE swap_pairs SET {cols} WHERE item_id=? AND annotator=? AND "
                "first_key=? AND second_key=?",
                (*fields.values(), item_id, annotator, first_key, second_key),
            )

    def swap_pairs(self) -> pd.DataFrame:
        """Every swap judge's pairs, oldest first (none in a ledger without the table)."""
        cols = ["item_id", "annotator", "first_key", "second_key", "rule", "first", "second",
                "consistent", "answer", "cost", "at"]  # fmt: skip
        if not self.query("SELECT 1 FROM sqlite_master WHERE name='swap_pairs'"):
            return pd.DataFrame(columns=cols)
        return self.frame(f"SELECT {', '.join(cols)} FROM swap_pairs ORDER BY at, item_id")

    # -- humans ------------------------------------------------------------
    def queue_human(self, key: str, item_id: str, annotator: str, call_ids: list[int],
                    price: float, purpose: str | None = None) -> None:  # fmt: skip
        """Record a task sent to the human queue: one label slot per call row, each call
        holding ``price`` (the price of one label) until its label comes; ``purpose``
        'check' marks a random quality check."""
        now = time.time()
        with self.tx() as c:
            c.execute(
                "INSERT OR IGNORE INTO human_queue (request_key, item_id, annotator, call_id, "
                "status, submitted_at, price, wanted, purpose) VALUES (?,?,?,?,?,?,?,?,?)",
                (key, item_id, annotator, call_ids[0], "pending", now, price, len(call_ids),
                 purpose),
            )  # fmt: skip
            c.executemany(
                "INSERT OR IGNORE INTO human_labels (request_key, slot, item_id, call_id, "
                "status) VALUES (?,?,?,?,'open')",
                [(key, j, item_id, cid) for j, cid in enumerate(call_ids)],
            )

    def set_purpose(self, key: str, purpose: str | None) -> None:
        """Whose task it is: 'check' (the random quality checks) or the router's (None)."""
        with self.tx() as c:
            c.execute("UPDATE human_queue SET purpose=? WHERE request_key=?", (purpose, key))

    def human_task(self, key: str) -> sqlite3.Row | None:
        rows = self.query("SELECT * FROM human_queue WHERE request_key=?", (key,))
        return rows[0] if rows else None

    def human_tasks(self, status: str | None = None) -> pd.DataFrame:
        """Every task sent to humans (optionally only those with ``status``), oldest first."""
        where, args = ("WHERE status=?", (status,)) if status else ("", ())
        have = {r[1] for r in self.query("PRAGMA table_info(human_queue)")}
        # a read-only look at a ledger of an older schema: its missing columns are NULL
        cols = ", ".join(c if c in have else f"NULL AS {c}" for c in TASK_COLUMNS)
        return self.frame(
            f"SELECT {cols} FROM human_queue {where} ORDER BY submitted_at, item_id", args
        )

    def mark_given(self, keys: list[str]) -> None:
        """Answered tasks the router did not ask for: hand them to the next passes."""
        with self.tx() as c:
            c.executemany(
                "UPDATE human_queue SET given=1 WHERE request_key=?", [(k,) for k in keys]
            )

    def give_calls(self, call_ids: list[int]) -> None:
        """Paid machine answers no complete pass asked for: hand them to the next passes
        (their cost is charged to the router's budget before it plans)."""
        now = time.time()
        with self.tx() as c:
            c.executemany(
                "INSERT OR IGNORE INTO given_calls VALUES (?, ?)", [(int(i), now) for i in call_ids]
            )

    def given_calls(self) -> pd.DataFrame:
        """The machine calls handed to the router (see :meth:`give_calls`), oldest first."""
        if not self.query("SELECT 1 FROM sqlite_master WHERE name='given_calls'"):
            return pd.DataFrame(columns=["call_id", "item_id", "annotator", "status", "output",
                                         "cost", "response_raw"])  # fmt: skip
        return self.frame(
            "SELECT c.call_id, c.item_id, c.annotator, c.status, c.output, c.cost, "
            "c.response_raw FROM given_calls g JOIN calls c ON c.call_id = g.call_id "
            "ORDER BY c.call_id"
        )

    def note_once(self, key: str, message: str) -> bool:
        """Record a message about the project's input; False if it was recorded before."""
        with self.tx() as c:
            cur = c.execute(
                "INSERT OR IGNORE INTO notes VALUES (?,?,?)", (key, message, time.time())
            )
            return cur.rowcount == 1

    def pending_humans(self) -> pd.DataFrame:
        return self.frame(
            "SELECT item_id, annotator, request_key, submitted_at FROM human_queue "
            "WHERE status='pending' ORDER BY submitted_at, item_id"
        )

    # -- results -----------------------------------------------------------
    def write_result(self, run_id: int, pass_no: int, annotations: pd.DataFrame,
                     labels: pd.DataFrame, trace: pd.DataFrame | None) -> None:  # fmt: skip
        """A pass's result: its calls and trace (``decisions``) and its labels (``labels``),
        replacing what the pass wrote before."""
        with self.tx() as c:
            c.execute("DELETE FROM decisions WHERE run_id=? AND pass=?", (run_id, pass_no))
            c.execute("DELETE FROM labels WHERE run_id=? AND pass=?", (run_id, pass_no))
            known = {"item_id", "annotator", "output", "status", "cost", "phase", "step", "kind"}
            for r in annotations.to_dict("records"):
                extra = {k: v for k, v in r.items() if k not in known}
                ext = json.dumps(extra, default=str) if extra else None
                row = (run_id, pass_no, "call", _int(r.get("step")))
                c.execute(_DECISION, (*row, *_decided(r, r.get("annotator")), ext))
            if trace is not None and len(trace):
                for i, r in enumerate(trace.to_dict("records")):
                    who = r.get("annotator", r.get("arm"))
                    row = (run_id, pass_no, "trace", i)
                    c.execute(_DECISION, (*row, *_decided(r, who), json.dumps(r, default=str)))
            base = {"item_id", "output", "n_annotations", "agreement", "human", "annotators"}
            for r in labels.to_dict("records"):
                extra = {k: v for k, v in r.items() if k not in base}
                c.execute(
                    "INSERT INTO labels VALUES (?,?,?,?,?,?,?,?,?)",
                    (run_id, pass_no, _s(r.get("item_id")), _s(r.get("output")),
                     _int(r.get("n_annotations")), _f(r.get("agreement")),
                     int(bool(r.get("human"))), _s(r.get("annotators")),
                     json.dumps(extra, default=str) if extra else None),
                )  # fmt: skip

    # -- accounting --------------------------------------------------------
    def money_units(self) -> dict[str, int]:
        """Money in integer nano-units: paid, held for pending humans, committed (both),
        possibly billed by interrupted calls, and the number of interrupted calls."""
        cost = _U.format("cost")
        row = self.query(
            "SELECT "
            f"coalesce(sum(CASE WHEN status IN ('ok','unparseable','failed') THEN {cost} END),0),"
            f"coalesce(sum(CASE WHEN status='pending' THEN {cost} END),0), "
            f"coalesce(sum(CASE WHEN status='interrupted' THEN {cost} END),0), "
            "count(CASE WHEN status='interrupted' THEN 1 END) FROM calls"
        )[0]
        paid, pending, cut = int(row[0]), int(row[1]), int(row[2])
        return {
            "paid": paid,
            "pending": pending,
            # possibly billed money of calls a kill cut off is spent too (issue 37)
            "committed": paid + pending + cut,
            "interrupted": cut,
            "interrupted_calls": int(row[3]),
        }

    def check_money_units(self) -> int:
        """Money paid and held by the random quality checks' tasks (``purpose`` 'check'),
        in nano-units."""
        cost = _U.format("c.cost")
        row = self.query(
            f"SELECT coalesce(sum(CASE WHEN c.status IN ('ok','pending') THEN {cost} END), 0) "
            "FROM human_labels l JOIN calls c ON c.call_id = l.call_id "
            "JOIN human_queue q ON q.request_key = l.request_key WHERE q.purpose='check'"
        )
        return int(row[0][0])

    def money(self) -> dict[str, float]:
        """:meth:`money_units` as floats (each the nearest float to the exact sum)."""
        u = self.money_units()
        out: dict[str, float] = {k: from_units(v) for k, v in u.items()}
        out["interrupted_calls"] = u["interrupted_calls"]
        return out


_DECISION = "INSERT INTO decisions VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"


def _decided(r: dict[str, Any], annotator: Any) -> tuple:
    """The middle cells of a ``decisions`` row: item, annotator, phase, kind, output,
    status, cost."""
    return (_s(r.get("item_id")), _s(annotator), _s(r.get("phase")), _s(r.get("kind")),
            _s(r.get("output")), _s(r.get("status")), _f(r.get("cost")))  # fmt: skip
