"""The migrated database template of Label Studio (``live/labelstudio/database_template``):
what happens without Label Studio. With it, every Label Studio test starts on a copy."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from quorum.live.labelstudio.database_template import (
    DATABASE_FILE,
    _install_key,
    seed_database,
    template_cache,
)


def test_a_folder_with_a_database_is_left_alone(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("QUORUM_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "ls").mkdir()
    (tmp_path / "ls" / DATABASE_FILE).write_text("theirs")
    assert not seed_database(tmp_path / "ls", Path(sys.executable), {})
    assert (tmp_path / "ls" / DATABASE_FILE).read_text() == "theirs"


def test_a_template_that_cannot_be_made_leaves_the_migrations_to_label_studio(
    tmp_path, monkeypatch, caplog
) -> None:
    monkeypatch.setenv("QUORUM_CACHE_DIR", str(tmp_path / "cache"))
    # this Python has no label_studio: the migrations fail, nothing is copied or kept
    with caplog.at_level(logging.INFO):
        assert not seed_database(tmp_path / "ls", Path(sys.executable), {})
    assert not (tmp_path / "ls" / DATABASE_FILE).exists()
    assert "migrate its new database itself" in caplog.text
    cache = template_cache()
    assert cache.folder.is_relative_to(tmp_path / "cache")
    assert not cache.path(_install_key(Path(sys.executable))).exists()


def test_a_made_template_is_copied(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("QUORUM_CACHE_DIR", str(tmp_path / "cache"))
    template_cache().write(_install_key(Path(sys.executable)), lambda f: f.write(b"migrated"))
    assert seed_database(tmp_path / "ls", Path(sys.executable), {})
    assert (tmp_path / "ls" / DATABASE_FILE).read_bytes() == b"migrated"
