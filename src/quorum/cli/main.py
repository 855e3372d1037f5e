"""The `quorum` command. Each area registers its own commands from its own module."""

from __future__ import annotations

import importlib
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# torch threads spin-wait by default; on a busy 2-core machine that costs ~35% speed
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import typer

app = typer.Typer(
    name="quorum",
    help="QUORUM: route annotation work between LLMs and humans under a fixed budget.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

#: modules that define ``register(app)``; a missing one is skipped so areas land independently
_AREAS = (
    "quorum.cli.datasets",
    "quorum.cli.features",
    "quorum.cli.simulate",
    "quorum.cli.live",
    "quorum.cli.bench",
    "quorum.demo",
)

for _mod in _AREAS:
    try:
        _m = importlib.import_module(_mod)
    except ModuleNotFoundError as exc:  # area not built yet
        if exc.name != _mod:
            raise
        continue
    _m.register(app)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
