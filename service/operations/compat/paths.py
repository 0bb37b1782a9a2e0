"""Per-model base URLs: ``/compat/<stack>/models/{name}/<route>`` finds ``<route>``'s
operation with ``name`` bound, for clients that cannot send a model (llama.cpp's and
TGI's, TEI's) or that want one base URL per model.

``{name}`` is any name ``GET /models`` knows, a served tokenizer or ``name@version``,
URL-encoded (``openai%2Fgpt-oss-20b``). The server hands the path over decoded, so a
name may hold ``/``: a path is split at the longest route suffix its stack has, which is
why these paths are matched here rather than by the framework's router (whose ``{name}``
stops at a ``/``). The same matching gives the HTTP layers the template of a concrete
path (``ByPath``), so a refusal there (401, 413, 415, 503) is in the stack's shape too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

NAME = "{name}"
_MISSING = object()


class ModelPaths:
    """Concrete per-model paths -> (their template, the name in them)."""

    def __init__(self, templates: Iterable[str]) -> None:
        # "/compat/vllm/models/" -> [("/tokenize", template), ...], longest suffix first
        self._by_prefix: dict[str, list[tuple[str, str]]] = {}
        for template in templates:
            prefix, _, suffix = template.partition(NAME)
            self._by_prefix.setdefault(prefix, []).append((suffix, template))
        for suffixes in self._by_prefix.values():
            suffixes.sort(key=lambda pair: -len(pair[0]))

    def match(self, path: str) -> tuple[str, str] | None:
        """``(template, name)`` for a path under a per-model base URL, else None."""
        if not path.startswith("/compat/"):
            return None
        stack_end = path.find("/", 8)
        if stack_end < 0:
            return None
        prefix_end = stack_end + len("/models/")
        suffixes = self._by_prefix.get(path[:prefix_end])
        if suffixes is None:
            return None
        rest = path[prefix_end:]
        for suffix, template in suffixes:
            if rest.endswith(suffix):
                return template, rest[:len(rest) - len(suffix)]
        return None


class ByPath(dict):  # type: ignore[type-arg]
    """``path -> value`` (the HTTP layers' renderers and media types) where a concrete
    per-model path gets its template's value."""

    def __init__(self, items: dict[str, Any], paths: ModelPaths) -> None:
        super().__init__(items)
        self._paths = paths

    def get(self, path: str, default: Any = None) -> Any:  # type: ignore[override]
        value = dict.get(self, path, _MISSING)
        if value is not _MISSING:
            return value
        found = self._paths.match(path)
        return default if found is None else dict.get(self, found[0], default)


Handler = Callable[..., Any]


class CompatRoutes:
    """The compat operations the fast lane serves beyond its exact POST paths: every GET
    (and HEAD), and every per-model path, each with its name bound."""

    def __init__(self, ops: Iterable[tuple[str, str, Handler]]) -> None:
        self._exact: dict[tuple[str, str], Handler] = {}
        self._templated: dict[tuple[str, str], Handler] = {}
        for method, path, handler in ops:
            table = self._templated if NAME in path else self._exact
            table[method, path] = handler
        self.paths = ModelPaths({path for _, path in self._templated})

    def find(self, method: str, path: str) -> tuple[Handler, str] | None:
        """``(handler, route template)`` for a request, or None (not a compat route,
        or a method it does not take: the framework answers 404/405)."""
        if not path.startswith("/compat/"):
            return None
        method = "GET" if method == "HEAD" else method
        handler = self._exact.get((method, path))
        if handler is not None:
            return handler, path
        found = self.paths.match(path)
        if found is None:
            return None
        template, name = found
        handler = self._templated.get((method, template))
        return None if handler is None else (partial(handler, name=name), template)
