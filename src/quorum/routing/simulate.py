"""Moved to :mod:`quorum.simulate`: replay runs resolve methods by name, so they sit above
the method registry (:mod:`quorum.methods`), which sits above the routers. This alias keeps
``from quorum.routing.simulate import prepare, simulate_once`` working for outside scripts;
nothing in ``quorum`` imports it (tests/test_layering.py checks).
"""

from quorum.simulate import *  # noqa: F403
from quorum.simulate import Prepared, make_problem, prepare, score, simulate_once  # noqa: F401
