"""How good are the labels? An honest estimate without gold, and a target-quality mode.

- :mod:`quorum.quality.estimators`: pure estimators (prediction-powered difference
  estimator, t and betting intervals) and :class:`QualityEstimate`;
- :mod:`quorum.quality.predicted`: the predicted score of a machine label from who
  labelled it (:class:`CorrectnessModel`);
- :mod:`quorum.quality.checks`: random human checks bought out of the run's budget,
  wrapped around any router (:class:`QualityChecks`);
- :mod:`quorum.quality.target`: spend in steps until the lower bound reaches a target
  (:class:`TargetQuality`).

See docs/quality.md.
"""
