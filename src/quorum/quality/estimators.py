"""Pure estimators of the quality of final labels from a random human check sample.

The run's items fall in two strata, both with known inclusion probabilities:

- K, *known*: items whose score is known without sampling (a human label bought by the
  router, scored against that label; an item left without a label scores 0). Inclusion
  probability 1 (a census).
- M, *machine-labelled*: the other N items. A simple random sample S of n of them (drawn
  after the router has finished, inclusion probability n / N) gets a human label: the
  *checks*.

Every item i of M has a predicted score f_i in [0, 1] (see :mod:`quorum.quality.predicted`),
fixed before S is drawn. The checks give the true score c_i on S, and the
prediction-powered estimate (Angelopoulos et al. 2023, "Prediction-powered inference",
the difference estimator of survey sampling) of the total of M is

    sum_M f_i + N * mean_S (c_i - f_i),

unbiased whatever f is; a good f only narrows the interval. Because a checked item's final
label becomes its human label, the quality of the final labels over all T items is

    theta = (sum_K c_i + sum_S 1 + sum_{M minus S} c_i) / T,

and ``sum_{M minus S} c_i`` is estimated by the total above minus ``sum_S c_i`` (the
same error as the total's). The interval for the mean of d = c - f over M comes from one
of two rules (``interval``):

- ``"clt"``: Student t with the finite-population correction; the sample variance is
  pooled with one pseudo-observation of variance ``prior_var`` (0.25, the largest variance
  of a score in [0, 1]) so that a small sample with no disagreement does not give a
  zero-width interval (ours);
- ``"betting"``: the hedged betting confidence sequence for sampling without replacement
  (Waudby-Smith and Ramdas 2020), valid at every n and under optional stopping; wider.

Scores are relative to the human label (accuracy for labels, ROUGE-1 F for summaries):
where the human is noisy the estimate is the agreement with that human, not with the truth.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats

Interval = Literal["clt", "betting"]


@dataclass(frozen=True)
class QualityEstimate:
    """An estimate of the quality of a run's final labels and its interval.

    ``estimate`` is theta-hat (accuracy, or mean ROUGE-1 for summaries, relative to the
    human label); ``low``/``high`` the interval at ``confidence``; ``n_checks`` the random
    checks that fed it, ``n_known`` the items scored without sampling, ``n_sampled_from``
    the size N of the machine-labelled stratum the checks were drawn from.
    """

    estimate: float
    low: float
    high: float
    confidence: float
    n_items: int
    n_known: int
    n_checks: int
    n_sampled_from: int
    interval: str
    check_cost: float = 0.0
    predicted_mean: float = float("nan")

    def row(self) -> dict[str, Any]:
        """The fields a result row carries (``quality_*``)."""
        return {
            f"quality_{k}" if k != "estimate" else "quality_estimate": v
            for k, v in _rounded(asdict(self)).items()
        }

    def line(self) -> str:
        """One line for a person: estimate, interval, from how many checks."""
        return (
            f"estimated quality {self.estimate:.3f} ({self.confidence:.0%} interval "
            f"{self.low:.3f}-{self.high:.3f}) from {self.n_checks} random checks and "
            f"{self.n_known} items scored without sampling, of {self.n_items}"
        )


def _rounded(d: dict[str, Any]) -> dict[str, Any]:
    return {
        k: round(v, 6) if isinstance(v, float) and math.isfinite(v) else v for k, v in d.items()
    }


def clt_mean_interval(
    d: np.ndarray,
    population: int,
    confidence: float,
    prior_var: float = 0.25,
    var_floor: float | None = None,
) -> tuple[float, float]:
    """Interval for the mean of ``d`` over a population of ``population`` from a simple
    random sample without replacement (Student t, finite-population correction).

    The variance is pooled with one pseudo-observation of variance ``prior_var`` (ours),
    so that n = 1 or a sample of equal values still gives a positive width; with
    ``var_floor`` it is at least that (see :func:`ppi_estimate`).

    >>> lo, hi = clt_mean_interval(np.array([0.1, -0.9, 0.1, 0.1]), 100, 0.95)
    >>> lo < -0.15 < hi
    True
    >>> clt_mean_interval(np.array([0.5, 0.5]), 2, 0.95)  # the whole population: exact
    (0.5, 0.5)
    """
    d = np.asarray(d, dtype=np.float64)
    n = len(d)
    if n == 0:
        return -math.inf, math.inf
    mean = float(d.mean())
    if n >= population:
        return mean, mean
    ss = float(((d - mean) ** 2).sum()) if n > 1 else 0.0
    var = (ss + prior_var) / n  # (n - 1) df of the sample plus one pseudo-observation
    if var_floor is not None:
        var = max(var, var_floor)
    fpc = 1.0 - n / population
    se = math.sqrt(max(var, 0.0) * fpc / n)
    q = float(stats.t.ppf(0.5 + confidence / 2.0, df=max(n - 1, 1)))
    return mean - q * se, mean + q * se


#: the variance of a check's difference c - f assumed before any check (ours): that of a
#: label right 70 % of the time about which the predicted score says nothing (0.21),
#: rounded; used only to size the checks and to say what width to expect
ASSUMED_VAR = 0.2


def expected_width(
    n: int,
    n_items: int,
    confidence: float = 0.95,
    n_machine: int | None = None,
    var: float = ASSUMED_VAR,
    prior_var: float = 0.25,
) -> float:
    """The width the ``"clt"`` interval of :func:`ppi_estimate` is expected to have with
    ``n`` checks of ``n_machine`` machine-labelled items among ``n_items`` (default: all
    of them machine-labelled, the widest case), if the differences c - f have variance
    ``var``. 1.0 without a check.

    >>> round(expected_width(17, 200), 3), round(expected_width(17, 200, n_machine=160), 3)
    (0.443, 0.35)
    >>> expected_width(0, 200)
    1.0
    """
    N = n_items if n_machine is None else n_machine
    if n <= 0 or N <= 0 or n_items <= 0:
        return 1.0 if n <= 0 else 0.0
    if n >= N:
        return 0.0
    pooled = ((n - 1) * var + prior_var) / n
    se = math.sqrt(pooled * (1.0 - n / N) / n)
    q = float(stats.t.ppf(0.5 + confidence / 2.0, df=max(n - 1, 1)))
    return min(1.0, N / n_items * 2.0 * q * se)


def checks_for_width(
    width: float, n_items: int, confidence: float = 0.95, var: float = ASSUMED_VAR
) -> int:
    """The fewest checks whose :func:`expected_width` (every item machine-labelled) is at
    most ``width`` (``n_items`` where none is).

    >>> checks_for_width(0.45, 200), checks_for_width(0.45, 10)
    (17, 8)
    """
    for n in range(1, n_items + 1):
        if expected_width(n, n_items, confidence, var=var) <= width:
            return n
    return n_items


def betting_mean_interval(
    x: np.ndarray, population: int, confidence: float, grid: int = 2001, c: float = 0.5
) -> tuple[float, float]:
    """Interval for the mean of ``x`` in [0, 1] over a finite population, sampled without
    replacement in the order given: the hedged capital confidence sequence of
    Waudby-Smith and Ramdas (2020, "Confidence sequences for sampling without
    replacement"), evaluated on a grid of candidate means; valid at any n and at any
    stopping time.

    >>> x = np.random.default_rng(0).permutation(np.r_[np.ones(30), np.zeros(10)])
    >>> lo, hi = betting_mean_interval(x, 1000, 0.95)
    >>> lo < 0.75 < hi and hi - lo < 0.5
    True
    """
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    if n == 0:
        return 0.0, 1.0
    alpha = 1.0 - confidence
    N = population
    m = np.linspace(0.0, 1.0, grid)
    # predictable variance estimate and bet size (WSR's predictable plug-in)
    idx = np.arange(1, n + 1)
    mu_hat = (0.5 + np.cumsum(x)) / (idx + 1)
    sig2 = (0.25 + np.cumsum((x - mu_hat) ** 2)) / (idx + 1)
    sig2_prev = np.r_[0.25, sig2[:-1]]
    lam = np.sqrt(2.0 * math.log(2.0 / alpha) / (n * sig2_prev))
    # remaining population mean under the candidate m, before each draw
    before = np.r_[0.0, np.cumsum(x)[:-1]]
    left = N - np.arange(n)  # population left before draw i (N, N-1, ...)
    mu_t = (N * m[:, None] - before[None, :]) / left[None, :]
    possible = np.all((mu_t >= -1e-12) & (mu_t <= 1 + 1e-12), axis=1)
    if n < N:  # what is left after the sample must still have a mean in [0, 1]
        rest = (N * m - x.sum()) / (N - n)
        possible &= (rest >= -1e-12) & (rest <= 1 + 1e-12)
    else:
        return float(x.mean()), float(x.mean())
    mu_c = np.clip(mu_t, 1e-12, 1 - 1e-12)
    lam_p = np.minimum(lam[None, :], c / mu_c)
    lam_m = np.minimum(lam[None, :], c / (1 - mu_c))
    diff = x[None, :] - mu_c
    with np.errstate(divide="ignore", invalid="ignore"):
        log_kp = np.cumsum(np.log1p(lam_p * diff), axis=1)
        log_km = np.cumsum(np.log1p(-lam_m * diff), axis=1)
    # hedged: half the capital on each side; a candidate is out once the capital has
    # reached 1 / alpha at any draw (Ville's inequality)
    cap = np.logaddexp(log_kp + math.log(0.5), log_km + math.log(0.5)).max(axis=1)
    keep = possible & (cap < math.log(1.0 / alpha))
    if not keep.any():
        mean = float(x.mean())
        return mean, mean
    return float(m[keep].min()), float(m[keep].max())


def ppi_estimate(
    known_total: float,
    n_items: int,
    predicted: np.ndarray,
    sample: np.ndarray,
    checked: np.ndarray,
    *,
    confidence: float = 0.95,
    interval: Interval = "clt",
    replaced: bool = True,
    n_known: int | None = None,
    check_cost: float = 0.0,
    prior_var: float = 0.25,
    var_floor: float | None = None,
) -> QualityEstimate:
    """theta-hat and its interval from the known total, the predictions and the checks.

    ``var_floor`` (``"clt"``; ours, live, issue 38): the variance of c - f is taken as at
    least this, the mean of f_i (1 - f_i) over the checks where scores are 0/1 (what a
    check would vary by if f were its chance of being right): 16 right of 17 checks no
    longer make an interval 0.16 wide around a sample that happened to agree.

    ``known_total``: sum of the scores of the known stratum K; ``predicted``: f_i for the N
    items of M; ``sample``: the positions in ``predicted`` of the checked items, in the
    order they were drawn; ``checked``: their true scores c_i (of the label the router
    gave them). ``replaced``: the checked items' final label became the human's, scoring 1.

    >>> f = np.full(100, 0.8); s = np.arange(10); c = np.r_[np.ones(8), np.zeros(2)]
    >>> e = ppi_estimate(50.0, 150, f, s, c)
    >>> round(e.estimate, 4), e.low < e.estimate < e.high  # (50 + 10 + 90 * 0.8) / 150
    (0.88, True)
    """
    f = np.asarray(predicted, dtype=np.float64)
    N = len(f)
    s = np.asarray(sample, dtype=int)
    cs = np.asarray(checked, dtype=np.float64)
    n = len(s)
    T = n_items
    known = int(T - N) if n_known is None else n_known
    if N == 0:
        th = known_total / T if T else float("nan")
        return QualityEstimate(th, th, th, confidence, T, known, 0, 0, interval, check_cost)
    fixed = (confidence, T, known, n, N, interval, check_cost, float(f.mean()))
    checked_part = float(n if replaced else cs.sum())
    if n == 0:  # no check: the honest interval is every score M could have
        base = (known_total + checked_part) / T
        return QualityEstimate((known_total + f.sum()) / T, base, base + N / T, *fixed)
    d = cs - f[s]
    lo_d, hi_d = difference_interval(d, N, confidence, interval, prior_var, var_floor)
    # sum over the unchecked rest of M: sum f + (N mu_d - sum_S d)
    sum_f_rest = float(f.sum() - f[s].sum())

    def theta(mu_d: float) -> float:
        rest = sum_f_rest + N * mu_d - float(d.sum())
        rest = min(max(rest, 0.0), float(N - n))  # scores are in [0, 1]
        return (known_total + checked_part + rest) / T

    return QualityEstimate(theta(float(d.mean())), theta(lo_d), theta(hi_d), *fixed)


def difference_interval(
    d: np.ndarray,
    population: int,
    confidence: float,
    interval: Interval,
    prior_var: float,
    var_floor: float | None = None,
) -> tuple[float, float]:
    """Interval for the mean of the differences d = c - f in [-1, 1] over M (``interval``:
    "clt" or "betting", the latter on d mapped to [0, 1])."""
    if interval == "betting":
        lo, hi = betting_mean_interval((d[:] + 1.0) / 2.0, population, confidence)
        return 2.0 * lo - 1.0, 2.0 * hi - 1.0
    if interval == "clt":
        return clt_mean_interval(d, population, confidence, prior_var=prior_var,
                                 var_floor=var_floor)  # fmt: skip
    raise ValueError(f"interval must be 'clt' or 'betting', got {interval!r}")


def estimate_from(
    inputs: dict[str, Any], confidence: float = 0.95, interval: Interval = "clt"
) -> QualityEstimate:
    """:func:`ppi_estimate` from a run's ``info["quality_inputs"]`` (another confidence or
    interval rule, from the same checks)."""
    return ppi_estimate(
        inputs["known_total"],
        inputs["n_items"],
        inputs["predicted"],
        inputs["sample"],
        inputs["scores"],
        confidence=confidence,
        interval=interval,
        replaced=inputs["replaced"],
        n_known=inputs["n_known"],
        check_cost=inputs["check_cost"],
        var_floor=inputs.get("var_floor"),
    )
