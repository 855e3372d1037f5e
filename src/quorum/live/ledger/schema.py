"""The ledger's tables: the schema, its migrations, and a read-only connection.

Tables: ``runs``, ``calls``, ``attempts`` (each HTTP try), ``decisions`` (the router's
call log and trace), ``labels`` (final labels per run), ``human_queue`` (one row per human
task), ``human_labels`` (its label slots), ``given_calls``, ``notes``,
``human_reliability`` and ``swap_pairs`` (a pairwise judge asked in both orders: its two
calls, each order's verdict in the original numbering, their consistency). A ledger of an
older schema gets the new columns and tables when it is opened for writing
(:func:`migrate`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from quorum.errors import QuorumError

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
CREATE TABLE IF NOT EXISTS swap_pairs (
    item_id TEXT, annotator TEXT, first_key TEXT, second_key TEXT, rule TEXT,
    first TEXT, second TEXT, consistent INTEGER, answer TEXT, cost REAL, at REAL,
    PRIMARY KEY (item_id, annotator, first_key, second_key)
);
"""

#: columns added after schema version 1 (older ledgers get them on open)
ADDED = {"human_queue": {"raw": "TEXT", "line": "INTEGER", "given": "INTEGER DEFAULT 0",
                          "price": "REAL", "wanted": "INTEGER DEFAULT 1",
                          "confidence": "REAL", "note": "TEXT",
                          # 'check': a random quality check (one more person is asked
                          # where its labels disagree, issue 38); NULL: the router's task
                          "purpose": "TEXT"},
         # when a call's request first left for the endpoint (NULL: not yet sent); a call
         # a kill cuts off before that was never billed (issue 37)
         "calls": {"sent_at": "REAL"}}  # fmt: skip

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

TASK_COLUMNS = ["request_key", "item_id", "annotator", "call_id", "status", "submitted_at",
                 "answered_at", "label", "answered_by", "raw", "line", "given", "price",
                 "wanted", "confidence", "note", "purpose"]  # fmt: skip


def migrate(conn: sqlite3.Connection) -> None:
    """Bring a ledger of an older schema up to :data:`SCHEMA_VERSION`."""
    for table, cols in ADDED.items():
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        for col, decl in cols.items():
            if col not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {col} {decl}")
                if (table, col) == ("calls", "sent_at"):  # older calls: assume sent
                    conn.execute("UPDATE calls SET sent_at = coalesce(created_at, 0)")
    conn.execute(_SLOTS_OF_OLD_TASKS)
    conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (SCHEMA_VERSION,))


def damaged(path: Path, why: object) -> QuorumError:
    """The one-line error of a ledger file SQLite cannot read as a database (corrupt,
    truncated, or another kind of file): what to do is not about permissions."""
    return QuorumError(
        f"the ledger {path} is damaged ({why}): it is not a readable SQLite database; "
        "restore a copy of it, or move it aside to start the project's ledger afresh "
        "(the calls it recorded would then be made, and paid, again)"
    )


def check_intact(conn: sqlite3.Connection, path: Path) -> None:
    """SQLite's ``quick_check`` of the whole file; a damaged ledger is :func:`damaged`."""
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and "malformed" not in str(exc):
            raise
        raise damaged(path, exc) from None
    if [tuple(r) for r in rows] != [("ok",)]:
        raise damaged(path, "; ".join(str(r[0]) for r in rows[:3]))


def open_readonly(path: Path) -> sqlite3.Connection:
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
            check_intact(conn, path)
        except sqlite3.DatabaseError as exc:
            if not isinstance(exc, sqlite3.OperationalError):
                raise damaged(path, exc) from None  # not a database: no other mode helps
            last = exc
            continue
        except sqlite3.Error as exc:
            last = exc
            continue
        return conn
    raise QuorumError(
        f"cannot read the ledger {path}: {last} (check that the file and its folder can be "
        "read; a copy of the folder can be read anywhere)"
    )


def text_or_none(x: Any) -> str | None:
    """``x`` as text; None for None or NaN."""
    if x is None or (isinstance(x, float) and x != x):
        return None
    return str(x)


def float_or_none(x: Any) -> float | None:
    """``x`` as a float; None for what is not a number, or NaN."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if v != v else v


def int_or_none(x: Any) -> int | None:
    """``x`` as an integer (truncated); None for what is not a number, or NaN."""
    v = float_or_none(x)
    return None if v is None else int(v)
