"""The human backend is checked before the first paid call (issue 27): a wrong Label Studio
URL, a refused token or a project the token's user may not use is one clear error at once,
and no LLM request reaches the server."""

from __future__ import annotations

import time

import pytest

from live_servers.fixtures import SST2_TASK, FakeServer, free_port, quorum_here, write_project
from test_labelstudio import TOKEN_ENV, server  # noqa: F401 - the module's Label Studio

pytestmark = [pytest.mark.slow]


def _project(tmp_path, api_base: str, url: str, **ls) -> str:
    tmp_path.mkdir(parents=True, exist_ok=True)
    data = tmp_path / "items.csv"
    data.write_text("item_id,text\na,good film\nb,bad film\nc,fine\n")
    return str(
        write_project(
            tmp_path,
            {
                "name": "lscheck",
                "method": "random",
                "features": "light",
                "items": {"path": str(data)},
                "task": SST2_TASK,
                "budget": {"limit": 1.0},
                "annotators": [
                    {"name": "llm", "model": "openai/x", "api_base": api_base, "price": 0.001},
                    {"name": "team", "kind": "human", "price": 0.1},
                ],
                "humans": {
                    "backend": "labelstudio",
                    "labelstudio": {"url": url, "token_env": TOKEN_ENV, **ls},
                },
            },
        )
    )


def _annotate(proj: str, token: str, monkeypatch: pytest.MonkeyPatch):
    """``quorum annotate proj`` in this process, the token in the environment."""
    monkeypatch.setenv(TOKEN_ENV, token)
    return quorum_here("annotate", proj)


def test_wrong_url_is_one_error_before_any_call(tmp_path, monkeypatch) -> None:
    with FakeServer(tmp_path, name="llm") as srv:
        proj = _project(tmp_path, srv.api_base, f"http://127.0.0.1:{free_port()}")
        t0 = time.monotonic()
        r = _annotate(proj, "0123456789abcdef" * 2, monkeypatch)
        took = time.monotonic() - t0
        assert srv.requests() == []  # nothing paid
    assert r.returncode == 2, r.stdout + r.stderr
    err = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert len(err) == 1 and "unreachable" in err[0] and "humans.labelstudio.url" in err[0]
    assert "Traceback" not in r.stderr and took < 60


def test_refused_token_and_foreign_project_are_one_error(
    tmp_path,
    server,  # noqa: F811
    monkeypatch,
) -> None:
    with FakeServer(tmp_path, name="llm") as srv:
        proj = _project(tmp_path / "a", srv.api_base, server.url)
        r = _annotate(proj, "f" * 40, monkeypatch)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "refused the token" in r.stderr and TOKEN_ENV in r.stderr
        assert "f" * 40 not in r.stdout + r.stderr
        # a project id that does not exist (or is not the user's)
        proj = _project(tmp_path / "b", srv.api_base, server.url, project_id=999)
        r = _annotate(proj, server.admin.token, monkeypatch)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "may not use project" in r.stderr
        assert srv.requests() == []
