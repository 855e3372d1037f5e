"""Predicted score f_i of a machine label, from who labelled the item (ours).

Prediction-powered inference needs a prediction f_i of each machine label's score that is
fixed before the random checks are drawn; how good f is decides only the width of the
interval, never its validity. Here f is a small model of *who labelled it*:

- ``agree``: the share of the item's LLM answers equal to the final label (summaries: the
  mean ROUGE-1 F of the final output against the other LLM outputs);
- ``n``: how many LLM answers the item has; ``alone``: at most one;
- ``vote_only``: the final label is no LLM's answer (a label-model or kNN vote);
- one column per LLM: its answer is the final label (the "one LLM" and "agreeing LLMs"
  cases, each LLM with its own weight).

It is fitted on the items the router sent to humans (free: their human label is known),
with the machine label such an item would have had taken as the plurality of its LLM
answers (ties: the dearest LLM). Those items were chosen on purpose (the likeliest errors),
so f is biased for the rest; the checks correct that bias. With too few such items, or a
single outcome among them, f falls back to a constant: the mean score of those items, or
0.5 without any (PPI then reduces to the plain mean of the checks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from quorum.tasks.classification import exact_match

Scorer = Callable[[str, str], float]


def plurality(answers: Mapping[str, str], order: Sequence[str]) -> str | None:
    """The commonest answer; ties go to the answer of the first LLM in ``order``.

    >>> plurality({"a": "x", "b": "y", "c": "y"}, ["a", "b", "c"])
    'y'
    >>> plurality({"a": "x", "b": "y"}, ["b", "a"])
    'y'
    """
    if not answers:
        return None
    counts: dict[str, int] = {}
    for v in answers.values():
        counts[v] = counts.get(v, 0) + 1
    top = max(counts.values())
    for a in order:
        if a in answers and counts[answers[a]] == top:
            return answers[a]
    return next(v for v, k in counts.items() if k == top)


class CorrectnessModel:
    """f(who labelled it) -> predicted score in [0, 1] (see the module docstring).

    Parameters
    ----------
    llms: the LLM annotators, dearest first (the tie order of :func:`plurality`).
    graded: scores are graded (summaries by ROUGE-1: a regression) instead of 0/1 labels.
    scorer: the score of an output against a reference output.
    min_train: fewest training items to fit a model; fewer: the fallback.
    C: inverse regularisation of the logistic regression (labels); ridge alpha = 1 / C.
    """

    def __init__(
        self,
        llms: Sequence[str],
        *,
        graded: bool = False,
        scorer: Scorer = exact_match,
        min_train: int = 20,
        C: float = 1.0,
    ) -> None:
        self.llms = list(llms)
        self.graded = graded
        self.scorer = scorer
        self.min_train = min_train
        self.C = C

    def features(self, output: str | None, answers: Mapping[str, str]) -> np.ndarray:
        """The row of who labelled it for one final output and the item's LLM answers."""
        n = len(answers)
        same = [a for a in self.llms if answers.get(a) == output]
        if self.graded:
            others = [v for v in answers.values() if v != output]
            agree = (
                float(np.mean([self.scorer(output, v) for v in others]))
                if others and output is not None
                else (1.0 if same else 0.0)
            )
        else:
            agree = len(same) / n if n else 0.0
        row = [agree, min(n, 5) / 5.0, float(n <= 1), float(not same)]
        row += [float(a in same) for a in self.llms]
        return np.asarray(row, dtype=np.float64)

    def fit(self, answers: Sequence[Mapping[str, str]], human: Sequence[str]) -> CorrectnessModel:
        """Fit on items with a human label: their LLM answers and the human output."""
        X, y = [], []
        for ans, h in zip(answers, human, strict=True):
            proxy = (
                next((ans[a] for a in self.llms if a in ans), None)
                if self.graded
                else plurality(ans, self.llms)
            )
            if proxy is None:
                continue
            X.append(self.features(proxy, ans))
            y.append(self.scorer(proxy, h))
        self.n_train_ = len(y)
        self.model_ = None
        self.fallback_ = float(np.mean(y)) if y else 0.5
        if len(y) >= self.min_train:
            Xa, ya = np.vstack(X), np.asarray(y)
            if self.graded:
                from sklearn.linear_model import Ridge

                self.model_ = Ridge(alpha=1.0 / self.C).fit(Xa, ya)
            elif 0 < ya.sum() < len(ya):
                from sklearn.linear_model import LogisticRegression

                self.model_ = LogisticRegression(C=self.C, max_iter=500).fit(Xa, ya > 0.5)
        return self

    def predict(self, outputs: Sequence[str | None], answers: Sequence[Mapping[str, str]]):
        """f_i in [0, 1] for final outputs and their items' LLM answers."""
        if len(outputs) == 0:
            return np.zeros(0)
        X = np.vstack([self.features(o, a) for o, a in zip(outputs, answers, strict=True)])
        if self.model_ is None:
            f = np.full(len(X), self.fallback_)
        elif self.graded:
            f = self.model_.predict(X)
        else:
            f = self.model_.predict_proba(X)[:, 1]
        f = np.where([o is None for o in outputs], 0.0, f)
        return np.clip(f, 0.0, 1.0)
