"""The compiled label-set vote (quorum.routing.quorum.compiled.coded_sets) against
LabelSetVote, the Python reference: the same set and the same float, answer set by answer
set, ties, weights and min/max bounds included."""

from __future__ import annotations

import numpy as np
import pytest

from quorum.routing.quorum.compiled import coded_sets
from quorum.routing.quorum.compiled.coded_answers import similarity, value
from quorum.routing.quorum.compiled.coded_sets import OutputCoding
from quorum.tasks.multilabel import MultiLabel, encode

LABELS = ["care", "fairness", "loyalty", "authority", "purity"]


def _coding(kind: MultiLabel, outputs: list[str], agg) -> OutputCoding:
    bits = kind.output_bitmasks(outputs)
    rank = np.empty(len(outputs), dtype=np.int64)
    rank[sorted(range(len(outputs)), key=outputs.__getitem__)] = np.arange(len(outputs))
    top = -1 if agg.max_labels is None else agg.max_labels
    return OutputCoding(
        1, bits, rank, len(kind.labels), agg.support, agg.tolerance, agg.min_labels, top
    )


@pytest.mark.parametrize(
    ("weights", "bounds"),
    [((10.0, 1.0), (0, None)), ((1.0, 1.0), (0, None)), ((0.7, 0.3), (1, 2)), ((1.0, 1.0), (2, 3))],
)
def test_the_compiled_vote_is_label_set_votes(weights, bounds):
    kind = MultiLabel(LABELS, min_labels=bounds[0], max_labels=bounds[1])
    agg = kind.aggregator(*weights, 0.66)
    rng = np.random.default_rng(7)
    outputs = [encode([x for j, x in enumerate(LABELS) if m >> j & 1], LABELS) for m in range(32)]
    coding = _coding(kind, outputs, agg)
    K = 6
    sw = coded_sets.scratch(K + 1, len(LABELS))
    names = [f"llm{k}" for k in range(K)] + ["human"]
    seen_ties = 0
    for _ in range(3000):
        n = int(rng.integers(1, K + 2))
        arms = rng.choice(K + 1, size=n, replace=False).astype(np.int64)
        # few distinct sets, so that answers agree and labels tie
        pool = rng.choice(32, size=int(rng.integers(1, 4)))
        codes_t = np.full(K + 1, -1, dtype=np.int64)
        codes_t[arms] = rng.choice(pool, size=n)
        rank = rng.permutation(K + 1).astype(np.int64)
        outs = {names[a]: outputs[codes_t[a]] for a in arms}
        trust = [names[a] for a in np.argsort(rank)]

        def is_h(a: str) -> bool:
            return a == "human"

        want = agg.vote(outs, is_h, trust)
        got = coded_sets.vote(codes_t, arms, n, K, *weights, rank, coding, sw)
        assert (outputs[int(np.flatnonzero(coding.bits == got[0])[0])], got[1]) == want
        agr = coded_sets.agreement(codes_t, arms, n, K, *weights, coding, sw)
        assert agr == agg.agreement_item(outs, is_h)
        ref = agg.majority(outs, is_h, lambda trust=trust: trust)
        maj = coded_sets.majority(codes_t, arms, n, rank, coding, sw)
        assert outputs[int(np.flatnonzero(coding.bits == maj)[0])] == ref
        want_delta = agg.delta(list(outs.values())) if n >= 2 else 0.0
        assert coded_sets.delta(codes_t, arms, n, coding, sw) == want_delta
        seen_ties += agg._tied(tuple(sorted((1.0, o) for o in outs.values())))
    assert seen_ties > 100  # the tie-break was exercised


def test_values_and_similarity_follow_the_coding():
    kind = MultiLabel(LABELS)
    outputs = ['["care","purity"]', '["care"]', "[]"]
    coding = _coding(kind, outputs, kind.aggregator(10.0, 1.0, 0.66))
    assert [value(coding, c) for c in (0, 1, 2, -1)] == [17, 1, 0, -1]
    assert similarity(coding, 17, 1) == 0.5 == agg_similarity(kind, outputs[0], outputs[1])
    assert similarity(coding, 0, 0) == 1.0 and similarity(coding, -1, 0) == 0.0
    assert kind.output_bitmasks(['["unknown"]']) is None
    assert MultiLabel([f"l{j}" for j in range(64)]).output_bitmasks(["[]"]) is None


def agg_similarity(kind: MultiLabel, a: str, b: str) -> float:
    return kind.aggregator(10.0, 1.0, 0.66).similarity(a, b)
