"""The durable ledger: one SQLite file (WAL) per project.

Every call is written *before* it is made (status ``inflight``) and its response, parse
result, cost, token usage and latency are committed *before* the answer is handed to the
router. A completed call (``ok`` or ``unparseable``) is the response cache: the same request
key is never sent again, in this run or any later one. Calls left ``inflight`` by a killed
process become ``interrupted`` when the next run starts.

Tables: ``runs``, ``calls``, ``attempts`` (each HTTP try), ``decisions`` (the router's
call log and trace), ``labels`` (final labels per run) and ``human_queue``.

Human tasks are first-class: a ``human_queue`` row is created when a task is sent, with one
``human_labels`` slot (and one ``calls`` row holding the price of a label) per label wanted
(``humans.labels_per_item``); :class:`~quorum.live.human_book.HumanBook` attaches answers to
slots, whether or not a routing pass asks for that item again. A task no complete pass
needs any more is ``withdrawn`` and one unanswered past ``humans.timeout`` is ``expired``
(their held price is released); an answered task no pass asked for is ``given`` to the
router before the next pass starts. ``human_reliability`` holds each person's estimated
accuracy (:mod:`quorum.live.reliability`).

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
from quorum.routing.budget import from_units

SCHEMA_VERSION = "3"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY AUTOINCREMENT,
    project TEXT, config_hash TEXT, config_json TEXT, method TEXT, seed INTEGER,
    budget REAL, started_at REAL, finished_at REAL, status TEXT, pid INTEGER, host TEXT,
    passes INTEGER DEFAULT 0, summary TEXT
);
CREATE TABLE IF NOT EXISTS calls (
    call_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER, request_key TEXT NOT NULL, kind TEXT, item_id TEXT, annotator TEXT,
    annotator_kind TEXT, model TEXT, api_base TEXT, prompt TEXT, params TEXT,
    status TEXT NOT NULL, response_raw TEXT, output TEXT, confidence REAL, parse_note TEXT,
    error TEXT, cost REAL DEFAULT 0, reserved REAL DEFAULT 0, cost_source TEXT,
    token_cost REAL, prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL,
    attempts INTEGER DEFAULT 0, created_at REAL, finished_at REAL
);
CREATE INDEX IF NOT EXISTS calls_key ON calls(request_key, status);
CREATE INDEX IF NOT EXISTS calls_item ON calls(item_id, annotator);
CREATE TABLE IF NOT EXISTS attempts (
    call_id INTEGER, n INTEGER, started_at REAL, latency_s REAL, outcome TEXT, error TEXT
);
CREATE TABLE IF NOT EXISTS decisions (
    run_id INTEGER, pass INTEGER, source TEXT, step INTEGER, item_id TEXT, annotator TEXT,
    phase TEXT, kind TEXT, output TEXT, status TEXT, cost REAL, extra TEXT
);
CREATE TABLE IF NOT EXISTS labels (
    run_id INTEGER, pass INTEGER, item_id TEXT, output TEXT, n_annotations INTEGER,
    agreement REAL, human INTEGER, annotators TEXT, extra TEXT
);
CREATE TABLE IF NOT EXISTS human_queue (
    request_key TEXT PRIMARY KEY, item_id TEXT, annotator TEXT, call_id INTEGER,
    status TEXT, submitted_at REAL, answered_at REAL, label TEXT, answered_by TEXT,
    raw TEXT, line INTEGER, given INTEGER DEFAULT 0, price REAL
);
CREATE TABLE IF NOT EXISTS notes (note_key TEXT PRIMARY KEY, message TEXT, at REAL);
CREATE TABLE IF NOT EXISTS human_labels (
    request_key TEXT, slot INTEGER, item_id TEXT, call_id INTEGER, status TEXT,
    person TEXT, label TEXT, raw TEXT, line INTEGER, answered_at REAL,
    PRIMARY KEY (request_key, slot)
);
CREATE TABLE IF NOT EXISTS given_calls (call_id INTEGER PRIMARY KEY, at REAL);
CREATE TABLE IF NOT EXISTS human_reliability (
    person TEXT PRIMARY KEY, labels INTEGER, checked INTEGER, gold INTEGER,
    gold_correct INTEGER, agreement REAL, accuracy REAL, weight REAL, fitted_at REAL
);
"""

#: columns added after schema version 1 (older ledgers get them on open)
_ADDED = {"human_queue": {"raw": "TEXT", "line": "INTEGER", "given": "INTEGER DEFAULT 0",
                          "price": "REAL", "wanted": "INTEGER DEFAULT 1",
                          "confidence": "REAL", "note": "TEXT"}}  # fmt: skip

#: schema 3: a task's labels are rows of ``human_labels`` (one per slot); a task of an older
#: ledger is one slot, its own call
_SLOTS_OF_OLD_TASKS = """
INSERT OR IGNORE INTO human_labels (request_key, slot, item_id, call_id, status, person,
    label, raw, line, answered_at)
SELECT request_key, 0, item_id, call_id,
    CASE status WHEN 'pending' THEN 'open' WHEN 'answered' THEN 'answered' ELSE status END,
    answered_by, label, raw, line, answered_at
FROM human_queue q WHERE NOT EXISTS (SELECT 1 FROM human_labels l
                                     WHERE l.request_key = q.request_key)
"""

_TASK_COLUMNS = ["request_key", "item_id", "annotator", "call_id", "status", "submitted_at",
                 "answered_at", "label", "answered_by", "raw", "line", "given", "price",
                 "wanted", "confidence", "note"]  # fmt: skip

#: integer nano-units of a money column, summed without float drift
_U = "CAST(round({} * 1000000000) AS INTEGER)"


def money_str(units: int) -> str:
    """An amount in nano-units as an exact decimal string: 600000000 -> '0.6'."""
    d = (Decimal(int(units)) / Decimal(1_000_000_000)).normalize()
    return f"{d:f}"


#: statuses of a call whose response was received (and paid): the response cache
DONE = ("ok", "unparseable")


def _open_readonly(path: Path) -> sqlite3.Connection:
    """A query-only connection that also works where the ledger's folder (or file) cannot be
    written: SQLite then cannot create the WAL index (``-shm``) a normal reader needs, so
    the file is opened as immutable (nothing can be writing it: no ``annotate`` can run
    there). Any other failure is one :class:`QuorumError` line."""
    uri = path.resolve().as_uri()
    last: Exception | None = None
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(
                uri + query, uri=True, check_same_thread=False, timeout=30, isolation_level=None
            )
            conn.execute("PRAGMA query_only=ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.Error as exc:
            last = exc
    raise QuorumError(
        f"cannot read the ledger {path}: {last} (check that the file and its folder can be "
        "read; a copy of the folder can be read anywhere)"
    )


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
            self.conn = _open_readonly(self.path)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(
                str(self.path), check_same_thread=False, timeout=30, isolation_level=None
            )
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute(f"PRAGMA synchronous={sync.upper()}")
            self.conn.executescript(SCHEMA)
            self._migrate()
            self.conn.execute(
                "INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,)
            )
        self.conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._lockfile: Any = None

    def _migrate(self) -> None:
        for table, cols in _ADDED.items():
            have = {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}
            for col, decl in cols.items():
                if col not in have:
                    self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {col} {decl}")
        self.conn.execute(_SLOTS_OF_OLD_TASKS)
        self.conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (SCHEMA_VERSION,))

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
        """Calls left in flight by a killed process: mark them, return (count, reserved)."""
        with self.tx() as c:
            row = c.execute(
                "SELECT count(*), coalesce(sum(reserved),0) FROM calls WHERE status='inflight'"
            ).fetchone()
            c.execute(
                "UPDATE calls SET status='interrupted', cost=reserved, cost_source='reserved', "
                "error='process stopped before the response was recorded' "
                "WHERE status='inflight'"
            )
            return int(row[0]), float(row[1])

    def last_run(self, finished: bool = False) -> sqlite3.Row | None:
        where = "WHERE status IN ('finished','pending')" if finished else ""
        rows = self.query(f"SELECT * FROM runs {where} ORDER BY run_id DESC LIMIT 1")
        return rows[0] if rows else None

    # -- calls -------------------------------------------------------------
    def completed(self, key: str) -> sqlite3.Row | None:
        rows = self.query(
            "SELECT * FROM calls WHERE request_key=? AND status IN ('ok','unparseable') "
            "ORDER BY call_id LIMIT 1",
            (key,),
        )
        return rows[0] if rows else None

    def by_key(self, key: str) -> sqlite3.Row | None:
        rows = self.query(
            "SELECT * FROM calls WHERE request_key=? AND status IN ('ok','unparseable','pending')"
            " ORDER BY call_id LIMIT 1",
            (key,),
        )
        return rows[0] if rows else None

    def start_call(self, run_id: int, key: str, kind: str, item_id: str, annotator: str,
                   annotator_kind: str, model: str | None, api_base: str | None, prompt: str,
                   params: dict, reserved: float, status: str = "inflight", cost: float = 0.0,
                   cost_source: str | None = None) -> int:  # fmt: skip
        with self.tx() as c:
            cur = c.execute(
                "INSERT INTO calls (run_id, request_key, kind, item_id, annotator, "
                "annotator_kind, model, api_base, prompt, params, status, reserved, cost, "
                "cost_source, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, key, kind, item_id, annotator, annotator_kind, model, api_base, prompt,
                 json.dumps(params, sort_keys=True, default=str), status, reserved, cost,
                 cost_source, time.time()),
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

    # -- humans ------------------------------------------------------------
    def queue_human(self, key: str, item_id: str, annotator: str, call_ids: list[int],
                    price: float) -> None:  # fmt: skip
        """Record a task sent to the human queue: one label slot per call row, each call
        holding ``price`` (the price of one label) until its label comes."""
        now = time.time()
        with self.tx() as c:
            c.execute(
                "INSERT OR IGNORE INTO human_queue (request_key, item_id, annotator, call_id, "
                "status, submitted_at, price, wanted) VALUES (?,?,?,?,?,?,?,?)",
                (key, item_id, annotator, call_ids[0], "pending", now, price, len(call_ids)),
            )
            c.executemany(
                "INSERT OR IGNORE INTO human_labels (request_key, slot, item_id, call_id, "
                "status) VALUES (?,?,?,?,'open')",
                [(key, j, item_id, cid) for j, cid in enumerate(call_ids)],
            )

    def human_task(self, key: str) -> sqlite3.Row | None:
        rows = self.query("SELECT * FROM human_queue WHERE request_key=?", (key,))
        return rows[0] if rows else None

    def human_tasks(self, status: str | None = None) -> pd.DataFrame:
        """Every task sent to humans (optionally only those with ``status``), oldest first."""
        where, args = ("WHERE status=?", (status,)) if status else ("", ())
        have = {r[1] for r in self.query("PRAGMA table_info(human_queue)")}
        # a read-only look at a ledger of an older schema: its missing columns are NULL
        cols = ", ".join(c if c in have else f"NULL AS {c}" for c in _TASK_COLUMNS)
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
        with self.tx() as c:
            c.execute("DELETE FROM decisions WHERE run_id=? AND pass=?", (run_id, pass_no))
            c.execute("DELETE FROM labels WHERE run_id=? AND pass=?", (run_id, pass_no))
            known = {"item_id", "annotator", "output", "status", "cost", "phase", "step", "kind"}
            for r in annotations.to_dict("records"):
                extra = {k: v for k, v in r.items() if k not in known}
                c.execute(
                    "INSERT INTO decisions VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    (run_id, pass_no, "call", _int(r.get("step")), _s(r.get("item_id")),
                     _s(r.get("annotator")), _s(r.get("phase")), _s(r.get("kind")),
                     _s(r.get("output")), _s(r.get("status")), _f(r.get("cost")),
                     json.dumps(extra, default=str) if extra else None),
                )  # fmt: skip
            if trace is not None and len(trace):
                for i, r in enumerate(trace.to_dict("records")):
                    c.execute(
                        "INSERT INTO decisions VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                        (run_id, pass_no, "trace", i, _s(r.get("item_id")),
                         _s(r.get("annotator", r.get("arm"))), _s(r.get("phase")),
                         _s(r.get("kind")), _s(r.get("output")), _s(r.get("status")),
                         _f(r.get("cost")), json.dumps(r, default=str)),
                    )  # fmt: skip
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
        cost, reserved = _U.format("cost"), _U.format("reserved")
        row = self.query(
            "SELECT "
            f"coalesce(sum(CASE WHEN status IN ('ok','unparseable','failed') THEN {cost} END),0),"
            f"coalesce(sum(CASE WHEN status='pending' THEN {cost} END),0), "
            f"coalesce(sum(CASE WHEN status='interrupted' THEN {reserved} END),0), "
            "count(CASE WHEN status='interrupted' THEN 1 END) FROM calls"
        )[0]
        paid, pending = int(row[0]), int(row[1])
        return {
            "paid": paid,
            "pending": pending,
            "committed": paid + pending,
            "interrupted": int(row[2]),
            "interrupted_calls": int(row[3]),
        }

    def money(self) -> dict[str, float]:
        """:meth:`money_units` as floats (each the nearest float to the exact sum)."""
        u = self.money_units()
        out: dict[str, float] = {k: from_units(v) for k, v in u.items()}
        out["interrupted_calls"] = u["interrupted_calls"]
        return out


def _s(x: Any) -> str | None:
    if x is None or (isinstance(x, float) and x != x):
        return None
    return str(x)


def _f(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if v != v else v


def _int(x: Any) -> int | None:
    v = _f(x)
    return None if v is None else int(v)
