"""Loud warnings about answers a run paid for and could not use.

An LLM whose answers cannot be read as a label (``unparseable`` calls) is paid for every
one of them and helps nothing; a small model with a prompt it does not follow can waste most
of a budget that way while the run still "finishes". :func:`unparseable_warnings` names each
machine annotator whose share of unreadable answers is high, with what to do about it;
``quorum annotate`` logs them at the end of a run and ``quorum status`` prints them.
"""

from __future__ import annotations

from quorum.live.ledger.store import Ledger

#: an annotator is warned about from this share of unreadable answers...
UNPARSEABLE_SHARE = 0.2
#: ...over at least this many answered calls
MIN_CALLS = 10


def unparseable_warnings(
    ledger: Ledger, share: float = UNPARSEABLE_SHARE, min_calls: int = MIN_CALLS
) -> list[str]:
    """One line per machine annotator with at least ``min_calls`` answered calls of which a
    share of at least ``share`` could not be read as a label."""
    rows = ledger.query(
        "SELECT annotator, sum(status='unparseable') AS bad, count(*) AS n FROM calls "
        "WHERE kind='annotate' AND annotator_kind != 'human' AND status IN ('ok','unparseable') "
        "GROUP BY annotator ORDER BY annotator"
    )
    out = []
    for r in rows:
        n, bad = int(r["n"]), int(r["bad"] or 0)
        if n >= min_calls and bad / n >= share:
            out.append(
                f"annotator {r['annotator']!r}: {bad} of its {n} answers ({bad / n:.0%}) could "
                "not be read as a label; they were paid for and are not used. Look at what it "
                "was sent and answered (the ledger's calls.prompt and calls.response_raw, or "
                "`quorum plan`, which shows the prompt as sent), then ask for one of the label "
                "names in the prompt, raise max_tokens, or drop task.instructions from it "
                "(task.instructions_in_prompt)"
            )
    return out
