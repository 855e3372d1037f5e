"""The package's layers: a module imports only from its own layer or the ones below.

Read from the source (AST), not by importing: every ``import``/``from`` (at module level or
inside a function) and every string naming a quorum module (the lazy tables of
``quorum/__init__.py``, ``quorum.methods.METHODS``, ``quorum.cli``) is an edge.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "quorum"

#: bottom to top; a unit is ``quorum.<name>`` (a module or a sub-package)
LAYERS: list[tuple[str, set[str]]] = [
    ("ground", {"errors", "languages", "cache", "progress", "metrics", "engine"}),
    ("models", {"models"}),
    ("data", {"data"}),
    ("features", {"features"}),
    ("routing", {"routing"}),
    ("baselines", {"baselines", "quality"}),
    ("methods", {"methods"}),
    ("replay runs", {"simulate"}),
    ("runs", {"live", "bench", "demo"}),
    # the faces: the library (quorum, quorum.api) and every command line (*.cli)
    ("face", {"api", "__face__"}),
]
#: old paths kept for outside scripts: they may import their new home, nothing imports them
ALIASES = {"quorum.routing.simulate": "quorum.simulate"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _unit(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[-1] == "cli":
        return "__face__"
    return parts[1]


def _layer(module: str) -> int:
    unit = _unit(module)
    for i, (_name, units) in enumerate(LAYERS):
        if unit in units:
            return i
    raise AssertionError(f"{module}: unit {unit!r} is in no layer; add it to LAYERS")


def _known(name: str) -> str | None:
    """The quorum module ``name`` refers to (a module, or the module holding an attribute)."""
    mods = _modules()
    while name:
        if name in mods:
            return name
        name = name.rpartition(".")[0]
    return None


@cache
def _imports(module: str) -> frozenset[str]:
    path = _modules()[module]
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [mod] + [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.split(":")[0]  # "module" or "module:Class"
            if text.startswith("quorum.") and text in _modules():
                names = [text]
        for name in names:
            if name.startswith("quorum"):
                hit = _known(name)
                if hit and hit != module:
                    out.add(hit)
    return frozenset(out)


def _edges() -> list[tuple[str, str]]:
    return [(a, b) for a in _modules() for b in sorted(_imports(a))]


def test_every_module_has_a_layer():
    for module in _modules():
        _layer(module)
    used = {_unit(m) for m in _modules()}
    stale = {u for _n, units in LAYERS for u in units} - used
    assert not stale, f"LAYERS names units that do not exist: {stale}"


def test_the_checker_sees_imports_of_every_kind():
    # a plain import, a function-level import and a lazy table entry are all edges
    assert "quorum.routing.base" in _imports("quorum.baselines._common")
    assert "quorum.models.classifiers" in _imports("quorum.data.loaders.zeroshot")
    assert "quorum.baselines.sant" in _imports("quorum.methods")
    assert "quorum.api" in _imports("quorum")


def test_no_module_imports_from_a_higher_layer():
    bad = []
    for a, b in _edges():
        if ALIASES.get(a) == b:
            continue
        if _layer(b) > _layer(a):
            bad.append(f"{a} ({LAYERS[_layer(a)][0]}) -> {b} ({LAYERS[_layer(b)][0]})")
    assert bad == []


def test_nothing_in_the_package_imports_an_alias():
    assert [(a, b) for a, b in _edges() if b in ALIASES] == []


def test_units_of_one_layer_do_not_import_each_other():
    bad = [
        (a, b)
        for a, b in _edges()
        if _unit(a) != _unit(b)
        and _layer(a) == _layer(b)
        and LAYERS[_layer(a)][0] != "face"
        and ALIASES.get(a) != b
    ]
    assert bad == []


@pytest.mark.parametrize("lower", ["data", "features", "models", "routing", "baselines"])
def test_lower_layers_never_import_live_or_bench(lower):
    bad = [
        (a, b)
        for a, b in _edges()
        if _unit(a) == lower and _unit(b) in {"live", "bench", "api", "__face__"}
    ]
    assert bad == []
