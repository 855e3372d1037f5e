"""An annotator whose prices are known when it is made (LLMs and local models)."""

from __future__ import annotations

from quorum.live.calls import Annotator


class PricedAnnotator(Annotator):
    """An :class:`~quorum.live.calls.Annotator` with fixed prices: ``_price`` bounds one
    annotation call (reserved before it), ``_conf_price`` one confidence call."""

    _price: float = 0.0
    _conf_price: float = 0.0

    def price(self) -> float:
        return self._price

    def confidence_price(self) -> float:
        return self._conf_price
