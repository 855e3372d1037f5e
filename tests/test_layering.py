"""The package's layers: a module imports only from its own layer or the ones below.

Read from the source (AST), not by importing: every ``import``/``from`` (at module level or
inside a function) and every string naming a quorum module (the lazy tables of
``quorum/__init__.py``, ``quorum.methods.METHODS``, ``quorum.cli.main``) is an edge.
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
    ("ground", {"errors", "languages", "cache", "progress", "metrics", "engine", "pages"}),
    ("models", {"models"}),
    ("tasks", {"tasks"}),
    ("data", {"data"}),
    ("features", {"features"}),
    ("routing", {"routing"}),
    ("baselines", {"baselines", "quality"}),
    ("methods", {"methods"}),
    ("replay runs", {"simulate"}),
    ("runs", {"live", "bench", "demo"}),
    # the faces: the library (quorum, quorum.api) and every command line (*.cli)
    ("face", {"api", "cli", "__face__"}),
]

#: inside a package, its sub-packages bottom to top (as each package's map lists them); a
#: module of the package itself (not in a sub-package) may import any of them
SUBLAYERS: dict[str, list[str]] = {
    "quorum.routing": ["core", "quorum", "paper"],
    "quorum.routing.quorum": ["audit", "compiled"],
    "quorum.live": ["project", "ledger", "machines", "humans", "labelstudio", "run", "outputs"],
}


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
    if len(parts) == 1:
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
    assert "quorum.routing.core.base" in _imports("quorum.baselines._common")
    assert "quorum.models.classifiers" in _imports("quorum.data.loaders.zeroshot")
    assert "quorum.baselines.sant" in _imports("quorum.methods")
    assert "quorum.api" in _imports("quorum")


def test_no_module_imports_from_a_higher_layer():
    bad = []
    for a, b in _edges():
        if _layer(b) > _layer(a):
            bad.append(f"{a} ({LAYERS[_layer(a)][0]}) -> {b} ({LAYERS[_layer(b)][0]})")
    assert bad == []


def test_units_of_one_layer_do_not_import_each_other():
    bad = [
        (a, b)
        for a, b in _edges()
        if _unit(a) != _unit(b) and _layer(a) == _layer(b) and LAYERS[_layer(a)][0] != "face"
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


def _cycles(modules: set[str]) -> list[list[str]]:
    """Import cycles (strongly connected components of two or more modules) among
    ``modules`` (Tarjan's algorithm, iterative)."""
    graph = {a: [b for b in sorted(_imports(a)) if b in modules] for a in sorted(modules)}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on_stack.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                on_stack.add(w)
                work.append((w, iter(graph[w])))
            elif w in on_stack:
                low[v] = min(low[v], index[w])
    return found


def test_the_cycle_finder_finds_a_cycle(monkeypatch):
    fake = {"quorum.a": {"quorum.b"}, "quorum.b": {"quorum.c"}, "quorum.c": {"quorum.a"}}
    monkeypatch.setattr("test_layering._imports", lambda m: frozenset(fake.get(m, set()) | set()))
    assert _cycles({"quorum.a", "quorum.b", "quorum.c", "quorum.d"}) == [
        ["quorum.a", "quorum.b", "quorum.c"]
    ]


@pytest.mark.parametrize("layer", [name for name, _units in LAYERS])
def test_no_import_cycle_in_any_layer(layer):
    """Every layer, the runs (live, bench, demo) and the faces included, read bottom to
    top: no module of a layer imports, directly or through others, a module importing it."""
    units = dict(LAYERS)[layer]
    modules = {m for m in _modules() if _unit(m) in units}
    assert modules and _cycles(modules) == []


def test_no_import_cycle_in_the_package():
    assert _cycles(set(_modules())) == []


def _sub(module: str, package: str) -> str | None:
    """The sub-package of ``package`` that ``module`` lies in (None: not below one)."""
    if not module.startswith(package + "."):
        return None
    rest = module[len(package) + 1 :].split(".")
    return rest[0] if len(rest) > 1 or rest[0] in SUBLAYERS_NAMES.get(package, ()) else None


SUBLAYERS_NAMES = {k: set(v) for k, v in SUBLAYERS.items()}


@pytest.mark.parametrize("package", sorted(SUBLAYERS))
def test_sub_packages_import_only_downwards(package):
    order = SUBLAYERS[package]
    folder = PKG.joinpath(*package.split(".")[1:])
    on_disk = {p.parent.name for p in folder.glob("*/__init__.py")}
    assert on_disk == set(order), f"{package}: sub-packages {on_disk} vs SUBLAYERS {order}"
    bad = []
    for a, b in _edges():
        sa, sb = _sub(a, package), _sub(b, package)
        if sa is None or sb is None or sa == sb:
            continue
        if order.index(sb) > order.index(sa):
            bad.append(f"{a} ({sa}) -> {b} ({sb})")
    assert bad == []


@pytest.mark.parametrize("package", sorted(SUBLAYERS))
def test_sub_packages_have_no_import_cycle(package):
    for sub in SUBLAYERS[package]:
        mods = {
            m for m in _modules() if m == f"{package}.{sub}" or m.startswith(f"{package}.{sub}.")
        }
        assert _cycles(mods) == [], f"{package}.{sub}"


def test_no_flat_folder_is_crowded_and_no_module_is_a_stub():
    """About 20 modules a folder at most; no module under about 40 lines but a package map."""
    for folder in [PKG, *(p.parent for p in PKG.rglob("__init__.py"))]:
        n = len([p for p in folder.glob("*.py") if p.name != "__init__.py"])
        assert n <= 21, f"{folder}: {n} modules"
    short = {
        str(p.relative_to(PKG))
        for p in PKG.rglob("*.py")
        if p.name != "__init__.py" and len(p.read_text(encoding="utf-8").splitlines()) < 38
    }
    # the ground's error classes and language names: each a concept of its own, on its own
    assert short <= {"errors.py", "languages.py"}
