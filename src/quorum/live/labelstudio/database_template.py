"""A migrated, empty Label Studio database, made once per Label Studio install and copied
into each new data folder.

A new Label Studio data folder spends its first start applying Django's migrations to a new
SQLite file: about 40 s on a quiet 2-core machine, over two minutes under load, against
about 9 s for a start on a migrated database (measured here). The migrations do not depend
on the folder, so :func:`migrated_database` applies them once into QUORUM's file cache
(:class:`quorum.cache.FileCache`, sub-folder ``labelstudio``, keyed by the Label Studio
install), with no user, no organization and no secret in it, and :func:`seed_database`
copies it into a data folder that has no database yet. Label Studio then creates the
folder's own admin at its first start, as on a new database. Ours (engineering);
``LabelStudioServer(reuse_migrations=False)`` starts from an empty folder as before.

Processes that need the template at once (test workers, two projects) wait on the cache's
file lock, so it is made once; when it cannot be made the folder is left as it was and Label
Studio migrates it itself.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from quorum.cache import FileCache, content_key

__all__ = ["DATABASE_FILE", "migrated_database", "seed_database", "template_cache"]

log = logging.getLogger(__name__)

#: the SQLite file of a Label Studio data folder
DATABASE_FILE = "label_studio.sqlite3"

# Runs inside Label Studio's own Python, with the server's environment: apply every
# migration to DATABASE_NAME and nothing else (no user, no organization).
_MIGRATE = r"""
import os, sys
import label_studio
sys.path.insert(0, os.path.dirname(label_studio.__file__))
import django
django.setup()
from django.core.management import call_command
call_command("migrate", interactive=False, verbosity=0)
print("QUORUM-MIGRATED")
"""


def template_cache() -> FileCache:
    """The cache of migrated databases (``<cache dir>/labelstudio/<key>.sqlite3``)."""
    return FileCache.under("labelstudio", ".sqlite3", what="Label Studio database template")


def _install_key(python: Path) -> str:
    """The Label Studio install a template belongs to: its Python and the installed
    ``label_studio`` distribution (a new release or a new venv gets its own template)."""
    root = python.parent.parent
    dists = sorted(p.name for p in root.glob("lib/python*/site-packages/label_studio-*"))
    return content_key(["labelstudio-migrated/1", str(python), *dists])


def _migrate(python: Path, env: Mapping[str, str], timeout: float) -> bytes:
    """A new database with every migration applied, as bytes (made in a temporary folder)."""
    with tempfile.TemporaryDirectory(prefix="quorum-ls-migrate-") as work:
        db = Path(work) / DATABASE_FILE
        menv = {k: v for k, v in env.items() if not k.startswith("LABEL_STUDIO_USER")}
        menv.pop("LABEL_STUDIO_PASSWORD", None)  # no admin: a template holds no user
        menv.update(LABEL_STUDIO_BASE_DATA_DIR=work, DATABASE_NAME=str(db))
        res = subprocess.run(
            [str(python), "-c", _MIGRATE],
            capture_output=True, text=True, env=menv, cwd=work, timeout=timeout, check=False,
        )  # fmt: skip
        if res.returncode != 0 or "QUORUM-MIGRATED" not in res.stdout:
            raise OSError(f"Label Studio's migrations failed: {res.stderr.strip()[-400:]}")
        return db.read_bytes()


def migrated_database(python: Path, env: Mapping[str, str], timeout: float = 600.0) -> Path:
    """The path of the template database of the Label Studio run by ``python``, made now
    (once across processes) if missing. ``env``: a server's environment (its settings
    module). Raises ``OSError`` or a ``subprocess`` error when it cannot be made."""
    cache = template_cache()
    key = _install_key(python)
    cache.read_or_make(
        key, lambda p: p.stat().st_size or None, lambda: _migrate(python, env, timeout),
        lambda f, data: f.write(data),
    )  # fmt: skip
    return cache.path(key)


def seed_database(data_dir: Path, python: Path, env: Mapping[str, str]) -> bool:
    """Copy the migrated template into ``data_dir`` when it has no database yet. True when
    copied; False when the folder has a database or the template could not be made (then
    with a log line, and Label Studio migrates the folder itself)."""
    target = data_dir / DATABASE_FILE
    if target.exists():
        return False
    try:
        template = migrated_database(python, env)
        data_dir.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".seeding")
        shutil.copyfile(template, tmp)
        os.replace(tmp, target)
        return True
    except (OSError, subprocess.SubprocessError) as exc:
        log.info("Label Studio will migrate its new database itself (%s)", exc)
        return False
