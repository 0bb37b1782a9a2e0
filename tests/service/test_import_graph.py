"""No service module imports itself back through others.

Every import statement of every module under ``tokserve.service`` counts, the ones inside
functions too (a deferred import is still a dependency, only a later one). ``from pkg
import module`` depends on that module, not on ``pkg/__init__.py``'s contents.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tokserve.service

PACKAGE = "tokserve.service"


def _modules() -> dict[str, tuple[Path, bool]]:
    root = Path(tokserve.service.__path__[0])
    found = {}
    for path in root.rglob("*.py"):
        parts = [*PACKAGE.split("."), *path.relative_to(root).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                submodules = [f"{source}.{a.name}" for a in node.names
                              if f"{source}.{a.name}" in modules]
                targets = submodules if len(submodules) == len(node.names) else \
                    [source, *submodules]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                target = known(target) if target.startswith(PACKAGE) else None
                if target is not None and target != name:
                    graph[name].add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (as a path that ends where it starts), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_walk_sees_the_service():
    graph = _graph()
    assert "tokserve.service.http.app" in graph["tokserve.service.runtime.worker"]
    assert "tokserve.service.runtime.state" in graph["tokserve.service.operations.handlers"]


def test_no_service_module_imports_itself_back():
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or ())
