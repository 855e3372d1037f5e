"""Where QUORUM looks for the shared real datasets."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "QUORUM_DATA_DIR"


def candidate_data_dirs() -> list[Path]:
    """Places searched, in order: $QUORUM_DATA_DIR, then ../shared/data next to the checkout."""
    out: list[Path] = []
    env = os.environ.get(ENV_VAR)
    if env:
        out.append(Path(env).expanduser())
    here = Path(__file__).resolve()
    # src/quorum/data/paths.py -> checkout root is parents[3]
    root = here.parents[3]
    out.append(root.parent / "shared" / "data")
    out.append(Path.cwd().parent / "shared" / "data")
    seen, uniq = set(), []
    for p in out:
        key = str(p.resolve()) if p.exists() else str(p)
        if key not in seen:
            seen.add(key)
            uniq.append(p)
    return uniq


def data_dir(required: bool = True) -> Path | None:
    """The first existing data directory, or raise a clear error naming every place looked."""
    from quorum.errors import DatasetNotFoundError

    cands = candidate_data_dirs()
    for p in cands:
        if p.is_dir():
            return p
    if required:
        looked = ", ".join(str(p) for p in cands)
        raise DatasetNotFoundError(
            f"no data directory found; looked in: {looked}. "
            f"Set ${ENV_VAR} to the folder that holds the shared datasets."
        )
    return None
