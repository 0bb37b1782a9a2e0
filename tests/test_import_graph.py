"""No import circles in the installed package.

The graph is drawn from what is installed (every module under ``tokserve``, found through
the import system at its installed location, the service included), by reading each
module's source: a ``.py`` parsed with ``ast``, every import statement counted wherever
it stands (module level, or inside a function: a lazy import that closes a circle is
still a circle, only one that fails later); only ``if TYPE_CHECKING:`` blocks are
skipped, because they never run. A compiled module's imports are read from its
``.pyx`` when the source lies beside it (an editable install); its ``cimport`` of a
``.pxd`` alone (no module) is no edge.

An import names a module of the package when it is relative or starts with
``tokserve.``. ``from pkg import name`` is an edge to ``pkg.name`` when that is a module
(a submodule import), else to ``pkg`` (a name the package's ``__init__`` defines or
re-exports: the package's whole ``__init__`` runs first). Parents of a module are not
edges: Python imports them first, whatever imports the module.
"""

from __future__ import annotations

import ast
import importlib.util
import pkgutil
import re
from pathlib import Path

import tokserve

PACKAGE = "tokserve"
#: subpackages built from folders of their own (pyproject.toml's package-dir): inside
#: tokserve/ in a wheel, but elsewhere in an editable install, where walking tokserve's
#: own path does not reach them
SEPARATE = ("tokserve.service", "tokserve.client", "tokserve.artifacts")
# a Cython source's Python-level and C-level imports: `from X import` / `from X cimport`
_PYX_IMPORT = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+c?import\s+(.+)|c?import\s+([\w.]+))",
                         re.M)


def _installed_modules() -> dict[str, Path | None]:
    """Every module of the installed package -> its source (.py, or a compiled module's
    .pyx when it is installed beside it; None for a compiled module without one)."""
    found: dict[str, Path | None] = {}
    names = [PACKAGE, *SEPARATE]
    for root in (PACKAGE, *SEPARATE):
        spec = importlib.util.find_spec(root)
        assert spec is not None and spec.submodule_search_locations, root
        names += [info.name for info in pkgutil.walk_packages(
            spec.submodule_search_locations, root + ".", onerror=_raise)]
    for name in dict.fromkeys(names):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin, name
        origin = Path(spec.origin)
        if origin.suffix == ".py":
            found[name] = origin
        else:
            source = origin.with_name(origin.name.split(".")[0] + ".pyx")
            found[name] = source if source.exists() else None
    return found


def _raise(name: str) -> None:
    raise ImportError(f"{name} does not import: the graph would miss its modules")


def _absolute(module: str, is_package: bool, level: int, target: str | None) -> str:
    """``from <level dots><target> import`` in ``module`` as an absolute name."""
    if level == 0:
        return target or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports_of_py(source: str) -> list[tuple[int, str | None, list[str]]]:
    """``(level, module, names)`` for every import that can run."""
    found: list[tuple[int, str | None, list[str]]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.orelse:
                    visit(stmt)
                continue
            if isinstance(child, ast.Import):
                found.extend((0, alias.name, []) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                found.append((child.level, child.module, [a.name for a in child.names]))
            visit(child)

    visit(ast.parse(source))
    return found


def _imports_of_pyx(source: str) -> list[tuple[int, str | None, list[str]]]:
    found = []
    for frm, names, plain in _PYX_IMPORT.findall(source):
        if plain:
            found.append((0, plain, []))
            continue
        level = len(frm) - len(frm.lstrip("."))
        names = [n.strip().split(" as ")[0] for n in names.strip("()\\ ").split(",")]
        found.append((level, frm[level:] or None, [n for n in names if n.isidentifier()]))
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _installed_modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, source in modules.items():
        if source is None:
            continue
        is_package = source.stem == "__init__"
        text = source.read_text(encoding="utf-8")
        statements = (_imports_of_pyx if source.suffix == ".pyx" else _imports_of_py)(text)
        for level, target, names in statements:
            base = _absolute(name, is_package, level, target)
            if base != PACKAGE and not base.startswith(PACKAGE + "."):
                continue
            submodules = [f"{base}.{n}" for n in names if f"{base}.{n}" in modules]
            edges = submodules if submodules and len(submodules) == len(names) else (
                submodules + [base])
            graph[name].update(e for e in edges if e in modules and e != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of two or more modules (one circle or several
    sharing modules), each shown as one circle through it."""
    nodes = sorted(graph)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def strongconnect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in graph:
                continue
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in nodes:
        if v not in index:
            strongconnect(v)
    return [_one_cycle(graph, group) for group in sorted(groups)]


def _one_cycle(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """A shortest circle through the group's first module, for the failure message."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return group


def _report(found: list[list[str]]) -> str:
    lines = []
    for circle in found:
        line = "  " + " -> ".join(circle)
        if len(circle) > 1 and circle[0] != circle[-1]:  # a group with no simple circle shown
            line = "  among " + ", ".join(circle)
        lines.append(line)
    return "import cycles (each a strongly connected group, one circle shown):\n" + "\n".join(
        lines)


def test_graph_sees_the_package_and_its_lazy_imports():
    """The walk covers the installed engine and service, reads function-level imports
    and resolves ``from . import name`` to the submodule or to the package."""
    graph = import_graph()
    assert {"tokserve", "tokserve.loading", "tokserve.versions", "tokserve.models.bpe._bpe",
            "tokserve.service", "tokserve.service.http.app"} <= set(graph)
    assert "tokserve.loading" in graph["tokserve"]  # the public surface re-exports load
    assert "tokserve.authoring.export" in graph["tokserve.models.bpe.trainer"]  # lazy
    assert "tokserve.errors" in graph["tokserve.models.bpe._bpe"]  # read from the .pyx
    assert "tokserve.pre_tokenizers._scan" in graph["tokserve.unicode_compat"]
    found = cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert found == [["a", "b", "c", "a"]]


def test_engine_imports_no_cycle():
    """The engine (everything under tokserve but the service and the client)."""
    graph = import_graph()
    outside = ("tokserve.service", "tokserve.client")
    engine = {n: {e for e in edges if not e.startswith(outside)}
              for n, edges in graph.items() if not n.startswith(outside)}
    found = cycles(engine)
    assert not found, _report(found)


def test_installed_package_imports_no_cycle():
    """The whole installed package: engine, service and client."""
    found = cycles(import_graph())
    assert not found, _report(found)
