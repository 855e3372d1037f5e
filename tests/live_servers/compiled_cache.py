"""The compiled (numba) routing loops' disk cache under pytest-xdist: compiled once per run,
not once per worker, and ahead of the tests that need it.

A fresh checkout has no cache (``cache=True`` writes it next to the modules of
:mod:`quorum.routing.quorum.compiled`), and compiling the loops takes about 66 s of CPU on
these machines. Under ``make test`` two or more workers each reached a compiled loop before
the cache held it and each compiled it. So:

- :func:`one_compile_at_a_time`, installed by ``tests/conftest.py`` in every pytest
  process, makes each compilation of a ``quorum`` function hold a lock file shared by every
  process of the run. A process that needs a function another is compiling waits for it,
  then numba loads it from the cache (numba looks in the cache before it compiles), so no
  function is compiled twice.
- :func:`main` (``python tests/live_servers/compiled_cache.py``) is started at a lower
  priority by the xdist controller when the run starts: it routes small synthetic replays
  through the compiled loops (single labels and label sets, each phase), so the cache
  fills while the workers start and run the Label Studio, browser and llama.cpp files
  first (tests/conftest.py's order), in the CPU time those leave idle.

Neither changes what any test computes: a function loaded from numba's cache is the one
that would have been compiled.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sys
import tempfile
import threading
from pathlib import Path

#: the repository root
ROOT = Path(__file__).resolve().parents[2]

_depth = threading.local()


def lock_path() -> Path:
    """The lock file of this checkout's compiled cache (in the temporary folder)."""
    import quorum.routing.quorum.compiled as compiled

    where = str(Path(compiled.__file__).resolve().parent).encode()
    return Path(tempfile.gettempdir()) / f"quorum-numba-{hashlib.sha1(where).hexdigest()[:12]}.lock"


def one_compile_at_a_time() -> None:
    """Every numba compilation of a ``quorum`` function (with what it compiles inside it)
    holds :func:`lock_path` in this process; idempotent."""
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.dispatcher import Dispatcher

    if getattr(Dispatcher.compile, "_quorum_locked", False):
        return
    real = Dispatcher.compile
    path = lock_path()

    def compile(self, sig):  # numba's Dispatcher.compile
        module = getattr(getattr(self, "py_func", None), "__module__", "") or ""
        outer = not getattr(_depth, "n", 0)
        if not (outer and module.startswith("quorum.")):
            return real(self, sig)
        # numba's own lock first (its compile takes it too), then the file: one order
        with global_compiler_lock, open(path, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            _depth.n = 1
            try:
                return real(self, sig)
            finally:
                _depth.n = 0
                fcntl.flock(f, fcntl.LOCK_UN)

    compile._quorum_locked = True  # type: ignore[attr-defined]
    Dispatcher.compile = compile


def main() -> None:
    """Fill the cache: small replays through each compiled loop (phase 2 and phase 3, the
    calibration's rewards, single labels and label sets)."""
    sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]
    one_compile_at_a_time()
    from bench_routing_scale import synthetic
    from multilabel_scale import varied

    from quorum.routing.quorum.router import QuorumRouter

    for make in (synthetic, varied):
        for params in ({}, {"dollars_strategy": "bandit"}):
            problem, source, budget = make(400, "dollars", 0.5, seed=1)
            QuorumRouter(loop_backend="numba", **params).route(problem, source, budget, seed=0)


if __name__ == "__main__":
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    main()
