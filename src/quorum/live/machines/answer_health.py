"""Loud warnings about answers a run paid for and could not use.

An LLM whose answers cannot be read as a label (``unparseable`` calls) is paid for every
one of them and helps nothing; a small model with a prompt it does not follow can waste most
of a budget that way while the run still "finishes". :func:`unparseable_warnings` names each
machine annotator whose share of unreadable answers is high, with what to do about it;
``quorum annotate`` logs them at the end of a run and ``quorum status`` prints them.

An LLM that answers one label on nearly every item (issue 38: "negative" on 298 of 300,
every answer readable under a grammar) is as useless and was silent:
:func:`constant_answers` finds it (:data:`CONSTANT_SHARE` of at least
:data:`CONSTANT_MIN` answers one label), :func:`constant_warnings` words it, and where
the people's labels show that label far less often (at most :data:`PEOPLE_SHARE` of at
least :data:`PEOPLE_MIN` human-labelled items) it is *uninformative*: the live source
takes it out of the run (:meth:`LiveSource.is_available`), so the router plans without it.
"""

from __future__ import annotations

from dataclasses import dataclass

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


#: an annotator "answers one label" when at least this share of its answers is that label...
CONSTANT_SHARE = 0.95
#: ...over at least this many answers
CONSTANT_MIN = 20
#: it is uninformative when people gave that label on at most this share of their items...
PEOPLE_SHARE = 0.8
#: ...of at least this many
PEOPLE_MIN = 10


@dataclass(frozen=True)
class ConstantAnswer:
    """A machine annotator that answers ``label`` on ``same`` of its ``n`` answers; the
    people gave that label on ``people_same`` of their ``people_n`` labelled items."""

    annotator: str
    label: str
    same: int
    n: int
    people_same: int
    people_n: int

    @property
    def uninformative(self) -> bool:
        """People disagree with the label often enough that one label on nearly every item
        cannot be the LLM reading the items."""
        return self.people_n >= PEOPLE_MIN and self.people_same <= PEOPLE_SHARE * self.people_n

    def line(self) -> str:
        people = (
            f"; the people gave it on {self.people_same} of their {self.people_n} items"
            if self.people_n
            else ""
        )
        out = (
            f"annotator {self.annotator!r} answered {self.label!r} on {self.same} of its "
            f"{self.n} answers ({self.same / self.n:.0%}){people}: it may not be reading the "
            "items (look at calls.prompt and calls.response_raw; a tiny model under a grammar "
            "may pick one option whatever the text)"
        )
        if self.uninformative:
            out += "; it is taken out of the run and the router plans without it"
        return out


def constant_answers(
    ledger: Ledger, share: float = CONSTANT_SHARE, min_calls: int = CONSTANT_MIN
) -> list[ConstantAnswer]:
    """Machine annotators with at least ``min_calls`` readable answers of which a share of
    at least ``share`` is one label, with how often the people gave that label."""
    rows = ledger.query(
        "SELECT annotator, output, count(*) AS n FROM calls WHERE kind='annotate' AND "
        "annotator_kind != 'human' AND status='ok' AND output IS NOT NULL "
        "GROUP BY annotator, output ORDER BY annotator, n DESC, output"
    )
    by: dict[str, list[tuple[str, int]]] = {}
    for r in rows:
        by.setdefault(str(r["annotator"]), []).append((str(r["output"]), int(r["n"])))
    people = {
        str(r["label"]): int(r["n"])
        for r in ledger.query(
            "SELECT label, count(*) AS n FROM human_queue WHERE status='answered' AND "
            "label IS NOT NULL GROUP BY label"
        )
    }
    n_people = sum(people.values())
    out = []
    for name, counts in by.items():
        n = sum(c for _, c in counts)
        label, same = counts[0]
        if n >= min_calls and same >= share * n:
            out.append(ConstantAnswer(name, label, same, n, people.get(label, 0), n_people))
    return out


def constant_warnings(ledger: Ledger) -> list[str]:
    """One line per machine annotator that answers one label on nearly every item."""
    return [c.line() for c in constant_answers(ledger)]
