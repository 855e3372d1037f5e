"""pyproject.toml says what the code uses: imports, locks and package data agree."""

from __future__ import annotations

import ast
import sys
import tomllib
from fnmatch import fnmatch
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "quorum"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
#: local helper modules of tests/ (imported as top-level names by the tests)
TEST_LOCAL = {
    *(p.stem for p in Path(__file__).parent.glob("*.py")),
    *(p.stem for p in (Path(__file__).parents[1] / "scripts").glob("*.py")),
    "live_servers",
}
#: optional extras of the package itself (imported lazily by the features they enable)
FEATURE_EXTRAS = ("fast", "ray", "onnx")


def _requirements(group: str | None = None) -> dict[str, Requirement]:
    project = PYPROJECT["project"]
    specs = project["dependencies"] if group is None else project["optional-dependencies"][group]
    reqs = (Requirement(s) for s in specs)
    return {canonicalize_name(r.name): r for r in reqs}


def _third_party_imports(folder: Path) -> dict[str, set[str]]:
    """Top-level module name -> files of ``folder`` importing it (stdlib and quorum left out)."""
    found: dict[str, set[str]] = {}
    for path in folder.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "quorum":
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


@cache
def _installed_modules() -> dict[str, list[str]]:
    """Top-level module -> the distributions installing it, read once (each call of
    ``packages_distributions`` reads every installed distribution's file list, seconds
    in this environment)."""
    return packages_distributions()


@cache
def _distributions(module: str) -> frozenset[str]:
    """Distributions installing ``module`` (its own name when it is not installed here)."""
    dists = _installed_modules().get(module) or [module]
    return frozenset(canonicalize_name(d) for d in dists)


def _undeclared(folder: Path, declared: set[str], skip: set[str] = frozenset()) -> list[str]:
    out = []
    for module, files in sorted(_third_party_imports(folder).items()):
        if module in skip:
            continue
        dists = _distributions(module)
        if not dists & declared:
            out.append(f"{module} ({sorted(dists)}) in {sorted(files)[:3]}")
    return out


def _extras() -> set[str]:
    return set().union(*(_requirements(g) for g in FEATURE_EXTRAS))


def test_src_imports_are_declared_dependencies():
    assert _undeclared(PKG, set(_requirements()) | _extras()) == []


def test_test_imports_are_declared_in_the_test_extra():
    declared = set(_requirements()) | set(_requirements("test")) | _extras()
    # scripts may also use the benchmark-only comparisons of the `perf` extra
    declared |= set(_requirements("perf"))
    for folder in ("tests", "scripts"):
        assert _undeclared(ROOT / folder, declared, skip=TEST_LOCAL) == [], folder


def test_test_only_packages_stay_out_of_the_runtime_dependencies():
    src_dists = set().union(*(_distributions(m) for m in _third_party_imports(PKG)))
    runtime = set(_requirements())
    for name in _requirements("test"):
        assert name not in runtime, f"{name} is in both the dependencies and the test extra"
        assert name not in src_dists, f"src/ imports {name}: declare it as a dependency"
    # not imported by src/ nor tests/: litellm brings it with the versions it supports
    assert "openai" not in runtime


def _pins(*files: str) -> dict[str, str]:
    pins: dict[str, str] = {}
    for name in files:
        for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                req = Requirement(line)
                (spec,) = req.specifier
                assert spec.operator == "==", f"{name}: {line} is not an exact pin"
                pins[canonicalize_name(req.name)] = spec.version
    return pins


@pytest.mark.parametrize("group", [None, "test", "dev", "perf", "onnx"])
def test_every_declared_requirement_is_pinned_in_a_lock_that_satisfies_it(group):
    pins = _pins("requirements.lock", "requirements-test.lock")
    for name, req in _requirements(group).items():
        if name == canonicalize_name(PYPROJECT["project"]["name"]):
            continue  # dev = quorum-router[test] + ruff
        assert name in pins, f"{req} is not pinned in requirements*.lock"
        assert req.specifier.contains(pins[name], prereleases=True), f"{req} vs =={pins[name]}"


def test_runtime_dependencies_are_in_the_main_lock():
    # `make install` installs requirements.lock only; requirements-test.lock is for `make test`
    pins = _pins("requirements.lock")
    assert [r for n, r in _requirements().items() if n not in pins] == []


def test_package_data_covers_every_non_python_file():
    globs = PYPROJECT["tool"]["setuptools"]["package-data"]["quorum"]
    files = [
        p.relative_to(PKG).as_posix()
        for p in PKG.rglob("*")
        if p.is_file() and p.suffix not in {".py", ".pyc"} and "__pycache__" not in p.parts
    ]
    assert files, "no data files found"
    assert [f for f in files if not any(fnmatch(f, g) for g in globs)] == []
    # and no stale pattern that matches nothing
    assert [g for g in globs if not any(fnmatch(f, g) for f in files)] == []
