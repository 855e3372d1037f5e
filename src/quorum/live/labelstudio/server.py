"""Start and stop a local Label Studio (Community edition) for tests, demos and small teams.

Label Studio pins its own Django stack, so it lives in its own virtual environment
(``make labelstudio`` creates ``.venv-labelstudio`` with ``label-studio==1.23.2``), never in
QUORUM's. :func:`find_label_studio` locates its ``label-studio`` script: the environment
variable ``QUORUM_LABEL_STUDIO``, else ``.venv-labelstudio`` in the checkout, else ``PATH``.

:class:`LabelStudioServer` runs it on ``127.0.0.1`` with its own data folder (SQLite), no
browser, no telemetry and no version check, so it works offline. The admin's password and API
token are random, passed through the environment (never on the command line) and kept in
memory only; :meth:`LabelStudioServer.create_users` adds annotators with their own
passwords and API tokens.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from quorum.errors import QuorumError
from quorum.live.labelstudio.database_template import seed_database

#: the Label Studio release the Makefile installs and the tests run against
LABEL_STUDIO_VERSION = "1.23.2"
ENV_EXECUTABLE = "QUORUM_LABEL_STUDIO"
_ROOT = Path(__file__).resolve().parents[4]

# Runs inside Label Studio's own Python: create (or update) users in the first organization
# and give each a legacy API token and a personal access token. Reads JSON on stdin.
_CREATE_USERS = r"""
import json, os, sys
import label_studio
sys.path.insert(0, os.path.dirname(label_studio.__file__))
import django
django.setup()
from organizations.models import Organization
from rest_framework.authtoken.models import Token
from users.models import User
from jwt_auth.models import LSAPIToken
org = Organization.objects.order_by("id").first()
out = []
for spec in json.load(sys.stdin):
    user = User.objects.filter(email=spec["email"]).first()
    if user is None:
        user = User.objects.create_user(email=spec["email"], password=spec["password"])
    else:
        user.set_password(spec["password"])
    user.username = spec.get("username") or spec["email"]
    user.first_name = spec.get("first_name", "")
    user.last_name = spec.get("last_name", "")
    user.save()
    org.add_user(user)
    user.active_organization = org
    user.save(update_fields=["active_organization"])
    token, _ = Token.objects.get_or_create(user=user)
    pat = LSAPIToken.for_user(user).get_full_jwt()
    out.append({"email": user.email, "id": user.id, "token": token.key, "pat": pat})
sys.stdout.write("QUORUM-USERS " + json.dumps(out) + "\n")
"""


class LabelStudioNotFound(QuorumError):
    """No Label Studio installation was found."""


@dataclass(frozen=True)
class LabelStudioUser:
    """An account on the server; ``token`` is the legacy API token, ``pat`` the personal
    access token (JWT refresh token). Both are secrets: never print or store them."""

    email: str
    password: str = field(repr=False)
    id: int = 0
    token: str = field(default="", repr=False)
    pat: str = field(default="", repr=False)


def find_label_studio() -> Path | None:
    """The ``label-studio`` script: ``$QUORUM_LABEL_STUDIO``, ``.venv-labelstudio``, PATH."""
    env = os.environ.get(ENV_EXECUTABLE)
    if env:
        p = Path(env).expanduser()
        return p if p.is_file() else None
    local = _ROOT / ".venv-labelstudio" / "bin" / "label-studio"
    if local.is_file():
        return local
    found = shutil.which("label-studio")
    return Path(found) if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LabelStudioServer:
    """A Label Studio process on ``127.0.0.1:port`` with its data in ``data_dir``.

    Parameters
    ----------
    data_dir : folder for its SQLite database, uploads and log (created if missing).
    port : TCP port; default: a free one.
    executable : the ``label-studio`` script; default: :func:`find_label_studio`.
    admin_email : the first user (organization owner).
    startup_timeout : seconds to wait for ``/health`` (the first start on a new database
        migrates it, about 40 s; later starts and starts on a copied template a few seconds).
    reuse_migrations : a new data folder gets a copy of a migrated empty database, made once
        per Label Studio install (:mod:`~quorum.live.labelstudio.database_template`), so
        its first start does not apply the migrations again.
    lock_ttl : seconds a task someone opened stays locked to them (Label Studio's
        ``TASK_LOCK_TTL``, 24 h by default there): a person who opens a task and walks
        away holds it this long, while the others cannot take it (issue 38); 600.

    Examples
    --------
    >>> with LabelStudioServer(tmp / "ls") as srv:  # doctest: +SKIP
    ...     alice, bob = srv.create_users(["alice@example.org", "bob@example.org"])
    """

    def __init__(
        self,
        data_dir: str | Path,
        *,
        port: int | None = None,
        executable: str | Path | None = None,
        admin_email: str = "admin@quorum.local",
        startup_timeout: float = 240.0,
        reuse_migrations: bool = True,
        lock_ttl: int = 600,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.port = port or free_port()
        exe = Path(executable) if executable else find_label_studio()
        if exe is None or not exe.is_file():
            raise LabelStudioNotFound(
                "label-studio not found: run `make labelstudio` (creates .venv-labelstudio) "
                f"or set ${ENV_EXECUTABLE} to its `label-studio` script"
            )
        self.executable = exe
        self.python = exe.parent / "python"
        self.startup_timeout = startup_timeout
        self.reuse_migrations = reuse_migrations
        self.lock_ttl = int(lock_ttl)
        self.admin = LabelStudioUser(
            admin_email, secrets.token_urlsafe(16), token=secrets.token_hex(20)
        )
        self.proc: subprocess.Popen | None = None
        self._secret_key = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "label-studio.log"

    def __repr__(self) -> str:
        return f"LabelStudioServer(url={self.url!r}, data_dir={str(self.data_dir)!r})"

    def _django_secret(self) -> str:
        """The server's Django ``SECRET_KEY``, which also signs personal access tokens.

        Label Studio generates one per process when none is set and shares it through
        ``data_dir/.env`` only if writing that file works; the server and the process that
        mints the tokens (:meth:`create_users`) then disagree and every token is refused
        ("Token is invalid"). So we fix it ourselves: the key in ``.env`` if an earlier
        server left one (its tokens stay valid), else a new random one written there
        (mode 0600), and always passed to both processes through the environment."""
        if self._secret_key:
            return self._secret_key
        path = self.data_dir / ".env"
        key = ""
        if path.is_file():
            for line in path.read_text(errors="replace").splitlines():
                name, _, value = line.strip().partition("=")
                if name.strip() == "SECRET_KEY" and value.strip():
                    key = value.strip()
        if not key:
            key = secrets.token_urlsafe(48)
            try:
                self.data_dir.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                with os.fdopen(fd, "a") as f:
                    f.write(f"\nSECRET_KEY={key}\n")
            except OSError:
                pass  # the environment still carries it to both processes
        self._secret_key = key
        return key

    def _env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("LABEL_STUDIO_", "HEARTEX_", "DJANGO")) and k != "SECRET_KEY"
        }
        env.update(
            {
                "SECRET_KEY": self._django_secret(),
                "LABEL_STUDIO_BASE_DATA_DIR": str(self.data_dir),
                "DATABASE_NAME": str(self.data_dir / "label_studio.sqlite3"),
                "DJANGO_SETTINGS_MODULE": "label_studio.core.settings.label_studio",
                "LABEL_STUDIO_USERNAME": self.admin.email,
                "LABEL_STUDIO_PASSWORD": self.admin.password,
                "LABEL_STUDIO_USER_TOKEN": self.admin.token,
                "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
                "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
                # no look-up of the latest version on PyPI at start (offline machines)
                "LATEST_VERSION_CHECK": "false",
                "TASK_LOCK_TTL": str(self.lock_ttl),
                "COLLECT_ANALYTICS": "false",
                "SENTRY_DSN": "",
                "FRONTEND_SENTRY_DSN": "",
                "PYTHONUNBUFFERED": "1",
            }
        )
        env.pop("PYTHONPATH", None)  # its own venv, not QUORUM's packages
        return env

    # -- lifecycle --------------------------------------------------------------
    def start(self) -> LabelStudioServer:
        if self.proc is not None and self.proc.poll() is None:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.reuse_migrations:
            seed_database(self.data_dir, self.python, self._env())
        cmd = [
            str(self.executable), "start", "--no-browser", "--data-dir", str(self.data_dir),
            "--internal-host", "127.0.0.1", "--port", str(self.port), "--log-level", "WARNING",
        ]  # fmt: skip
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._env(),
                cwd=self.data_dir,
                start_new_session=True,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        headers = {"Authorization": f"Token {self.admin.token}"}
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise QuorumError(
                    f"Label Studio exited with code {self.proc.returncode} while starting; "
                    f"see {self.log_path}"
                )
            try:
                # our random admin token proves this is our server (it picks another
                # port by itself when the one asked for is taken)
                r = httpx.get(f"{self.url}/api/current-user/whoami", headers=headers, timeout=5)
                if r.status_code == 200 and r.json().get("email") == self.admin.email:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise QuorumError(
            f"Label Studio did not answer on {self.url} within {self.startup_timeout:.0f} s; "
            f"see {self.log_path}"
        )

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the server (SIGTERM to its process group, SIGKILL after ``timeout``)."""
        p, self.proc = self.proc, None
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout)

    def __enter__(self) -> LabelStudioServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- users ------------------------------------------------------------------
    def create_users(
        self, emails: list[str], passwords: list[str] | None = None, url: str | None = None
    ) -> list[LabelStudioUser]:
        """Add annotators to the organization, each with a password and API tokens.

        Works on the data folder, with the server running or not (this object's own server,
        or one started by ``label-studio start --data-dir DIR``, given by ``url``); with a
        running server, each personal access token is checked against it."""
        pw = passwords or [secrets.token_urlsafe(12) for _ in emails]
        specs = [{"email": e, "password": p} for e, p in zip(emails, pw, strict=True)]
        res = subprocess.run(
            [str(self.python), "-c", _CREATE_USERS],
            input=json.dumps(specs),
            capture_output=True,
            text=True,
            env=self._env(),
            cwd=self.data_dir,
            timeout=300,
            check=False,
        )
        line = next((s for s in res.stdout.splitlines() if s.startswith("QUORUM-USERS ")), None)
        if res.returncode != 0 or line is None:
            raise QuorumError(f"could not create Label Studio users: {res.stderr[-2000:]}")
        made = json.loads(line.removeprefix("QUORUM-USERS "))
        users = [
            LabelStudioUser(m["email"], p, m["id"], m["token"], m["pat"])
            for m, p in zip(made, pw, strict=True)
        ]
        if url is None and self.proc is not None and self.proc.poll() is None:
            url = self.url
        if url is not None:
            for u in users:  # a token the server refuses is caught here, not in a test
                try:
                    r = httpx.post(
                        f"{url.rstrip('/')}/api/token/refresh/", json={"refresh": u.pat},
                        timeout=30,
                    )  # fmt: skip
                except httpx.HTTPError as exc:
                    raise QuorumError(
                        f"the users were created, but Label Studio at {url} cannot be reached "
                        f"to check their tokens ({type(exc).__name__})"
                    ) from None
                if r.status_code != 200:
                    raise QuorumError(
                        f"Label Studio refused the new personal access token of {u.email} "
                        f"(HTTP {r.status_code}): is {url} the server of {self.data_dir}? "
                        f"(its SECRET_KEY is read from {self.data_dir / '.env'}); see "
                        f"{self.log_path}"
                    )
        return users


def create_users(
    data_dir: str | Path,
    emails: list[str],
    *,
    url: str | None = None,
    executable: str | Path | None = None,
) -> list[LabelStudioUser]:
    """Annotator accounts (random passwords, a legacy token and a personal access token
    each) on the Label Studio whose data folder is ``data_dir``, e.g. one started with
    ``label-studio start --data-dir DIR``; ``url``: that server, to check the tokens."""
    folder = Path(data_dir).expanduser()
    if not (folder / "label_studio.sqlite3").is_file():
        raise QuorumError(
            f"no Label Studio database in {folder} (label_studio.sqlite3): give the folder "
            "the server was started with (label-studio start --data-dir DIR)"
        )
    return LabelStudioServer(folder, executable=executable).create_users(emails, url=url)
