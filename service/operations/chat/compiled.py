"""Chat templates compiled once per template hash, in the chat environment.

Compiling a template costs far more than rendering it, and the same few templates
serve every request; the cache key is the template hash (plus the source length, and
the source is compared on a hit, so a hash collision can never render another
template). Bounded LRU: ``CACHE_SIZE`` templates.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import jinja2

from .environment import ChatEnvironment


@dataclass
class CompiledTemplate:
    template: jinja2.Template
    has_generation: bool
    source: str = field(repr=False)


_GENERATION_RE = re.compile(r"\{%-?\s*generation\s*-?%\}")
_ENV: ChatEnvironment | None = None
_CACHE: OrderedDict[str, CompiledTemplate] = OrderedDict()
_LOCK = threading.Lock()
CACHE_SIZE = 64


def environment() -> ChatEnvironment:
    global _ENV
    if _ENV is None:
        _ENV = ChatEnvironment()
    return _ENV


def compile_template(source: str, template_hash: str) -> CompiledTemplate:
    """The compiled template for ``template_hash`` (compiled at most once while cached).

    Raises jinja2.TemplateSyntaxError (or RecursionError for absurd nesting) when the
    source does not compile; failures are not cached.
    """
    key = f"{template_hash}:{len(source)}"
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None and hit.source == source:
            _CACHE.move_to_end(key)
            return hit
    compiled = CompiledTemplate(environment().from_string(source),
                                bool(_GENERATION_RE.search(source)), source)
    with _LOCK:
        _CACHE[key] = compiled
        _CACHE.move_to_end(key)
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return compiled
