"""The import graph between addon modules has no cycles, and a leaf solver module loads only what it needs.

Every module under addon/ is parsed with `ast`; each import statement, at module level or inside a
function (a deferred import), adds an edge from the importing module to the addon module it loads. A
deferred import that closes a cycle is still a cycle in the design: it only hides the knot from the
interpreter. Importing a.b.c also runs the package a.b's __init__, so an edge goes to every package on
the target's path that the importer is not itself inside (its own packages have already run).

Imports under `if TYPE_CHECKING:` never run; they name a type for an annotation. Neither graph may have a
cycle: the imports that run, and those with the type-only edges added (a type a module names is still
something it depends on).
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

ROOT = "addon"


@dataclass(frozen=True)
class Edge:
    """One import: `source` loads `target` at line `line` of source's file; `deferred` inside a function,
    `type_only` under `if TYPE_CHECKING:` (never run)."""

    source: str
    target: str
    line: int
    deferred: bool
    type_only: bool = False


def addon_modules(root: Path = REPO / ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file under addon/ (a package is its __init__.py)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _packages(name: str) -> list[str]:
    """The packages that run before `name`, outermost first: a.b.c -> [a, a.b]."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module name a `from ... import` names, relative dots resolved against the importer."""
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(importer: str, is_package: bool, node: ast.stmt, modules: dict[str, Path]) -> list[str]:
    """The addon modules one import statement loads by name (packages on the way are added by the caller)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in modules]
    assert isinstance(node, ast.ImportFrom)
    base = _resolve(importer, is_package, node)
    if base not in modules:
        return []
    submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]
    names_from_base = any(f"{base}.{alias.name}" not in modules for alias in node.names)
    return submodules + ([base] if names_from_base else [])


def import_edges(modules: dict[str, Path]) -> list[Edge]:
    """Every import between addon modules, module-level and deferred, with the packages each one runs."""
    edges = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        own = set(_packages(name)) | ({name} if is_package else set())
        tree = ast.parse(path.read_text(), filename=str(path))
        deferred_nodes = {id(inner) for outer in ast.walk(tree)
                          if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                          for inner in ast.walk(outer)}
        type_only_nodes = {id(inner) for outer in ast.walk(tree)
                           if isinstance(outer, ast.If) and ast.unparse(outer.test).endswith("TYPE_CHECKING")
                           for statement in outer.body for inner in ast.walk(statement)}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _targets(name, is_package, node, modules):
                for loaded in [*_packages(target), target]:
                    if loaded not in own and loaded != name:
                        edges.append(Edge(name, loaded, node.lineno, id(node) in deferred_nodes,
                                          id(node) in type_only_nodes))
    return edges


@functools.cache
def addon_edges() -> tuple[Edge, ...]:
    """import_edges of every addon module, parsed once per test run."""
    return tuple(import_edges(addon_modules()))


def strongly_connected(nodes: list[str], edges: list[Edge]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module (iterative, so no recursion limit)."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for e in edges:
        succ[e.source].append(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(succ[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(succ[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return components


def shortest_cycle(component: list[str], edges: list[Edge]) -> list[Edge]:
    """One shortest cycle through the component's first module, as the import edges that close it."""
    inside = set(component)
    succ: dict[str, list[Edge]] = {}
    for e in edges:
        if e.source in inside and e.target in inside:
            succ.setdefault(e.source, []).append(e)
    start = component[0]
    came: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for e in succ.get(node, []):
                if e.target == start:
                    path = [e]
                    while path[0].source != start:
                        path.insert(0, came[path[0].source])
                    return path
                if e.target not in came:
                    came[e.target] = e
                    following.append(e.target)
        frontier = following
    raise AssertionError(f"{component} is not strongly connected")


def describe(cycle: list[Edge]) -> str:
    """'a -> b (line 3) -> c (line 9, deferred) -> a (line 1)'."""
    steps = [f"{e.target} (line {e.line}{', deferred' if e.deferred else ''})" for e in cycle]
    return " -> ".join([cycle[0].source, *steps])


def module_level_closure(name: str, edges: list[Edge]) -> set[str]:
    """The addon modules that importing `name` runs: its packages, then module-level imports transitively."""
    succ: dict[str, set[str]] = {}
    for e in edges:
        if not e.deferred:
            succ.setdefault(e.source, set()).add(e.target)
    seen: set[str] = set()
    todo = [*_packages(name), name]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(succ.get(node, ()))
    return seen


def test_the_parser_finds_relative_deferred_and_package_imports():
    edges = {(e.source, e.target): e for e in addon_edges()}
    relative = edges["addon.solver.maximal.baraff", "addon.solver.maximal.graph"]
    assert not relative.deferred
    assert edges["addon", "addon.ui"].deferred  # register() imports the UI lazily
    assert ("addon.solver.collision", "addon.solver.collision.world") in edges  # its __init__ re-exports world
    assert ("addon.solver.collision.world", "addon.solver.collision") not in edges  # a package runs before its modules


def test_the_cycle_finder_names_a_cycle():
    edges = [Edge("a", "b", 1, False), Edge("b", "c", 2, True), Edge("c", "a", 3, False), Edge("c", "d", 4, False)]
    components = strongly_connected(["a", "b", "c", "d"], edges)
    assert components == [["a", "b", "c"]]
    assert describe(shortest_cycle(components[0], edges)) == "a -> b (line 1) -> c (line 2, deferred) -> a (line 3)"


def _cycles(edges: list[Edge]) -> list[str]:
    modules = addon_modules()
    return [describe(shortest_cycle(c, edges)) for c in strongly_connected(list(modules), edges)]


def test_no_import_cycles_between_addon_modules():
    """Among the imports that run (module level and deferred): none may close a cycle."""
    edges = [e for e in addon_edges() if not e.type_only]
    cycles = _cycles(edges)
    assert not cycles, "import cycles (one per strongly connected group):\n" + "\n".join(cycles)


def test_no_import_cycles_even_through_type_only_imports():
    """With the imports under `if TYPE_CHECKING:` added: a type named for an annotation is still a dependency."""
    cycles = _cycles(addon_edges())
    assert not cycles, "import cycles (one per strongly connected group):\n" + "\n".join(cycles)


def _loaded_by(module: str) -> set[str]:
    """The addon modules a fresh interpreter has loaded after `import module`."""
    check = f"import sys, {module}\nprint(*sorted(m for m in sys.modules if m.split('.')[0] == {ROOT!r}))"
    out = subprocess.run([sys.executable, "-c", check], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return set(out.split())


@pytest.mark.heavy
def test_baraff_loads_only_the_linear_algebra_it_needs():
    """Baraff's factorisation needs the body tree order (maximal.graph) and its C kernels, nothing else:
    no integrator, no registry, no vehicles, shots, tree method or mechanism description."""
    loaded = _loaded_by("addon.solver.maximal.baraff")
    assert loaded == module_level_closure("addon.solver.maximal.baraff", addon_edges())
    allowed = {"addon", "addon.solver", "addon.solver.maximal"}
    outside = sorted(m for m in loaded if m not in allowed and not m.startswith(("addon.solver.maximal.",
                                                                                  "addon.solver.native")))
    assert not outside, f"importing maximal.baraff loads {len(loaded)} modules, among them {outside}"
