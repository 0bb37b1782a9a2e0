"""The Jinja environment chat templates run in: transformers' semantics, bounded cost.

What a template sees is what transformers' ``apply_chat_template`` gives it: an
``ImmutableSandboxedEnvironment`` with ``trim_blocks``, ``lstrip_blocks``, loop controls, a
``{% generation %}`` tag, a ``tojson`` filter that does not HTML-escape, the globals
``raise_exception``, ``strftime_now``, a ``dict`` callable and a ``namespace`` that refuses
underscore names. Everything else is stock Jinja, so rendered text is identical.

On top of that, and invisible to well-behaved templates:
- provenance: ``~``, ``join``, ``tojson`` and buffered output (macros, call and set blocks)
  keep the runs of ``Traced`` caller strings (see provenance.py);
- budgets: every attribute/item lookup, call, loop step over ``range`` and output chunk
  counts against an operation budget and a wall-clock deadline, and every operation that
  can grow a string or list (``+``, ``*``, ``%``, ``**``, padding methods, ``replace``,
  ``join``, ``format``) is checked against the output-size cap *before* it allocates.
  A template that exceeds either gets ``BudgetExceeded``; the process keeps serving.
The per-render state (budget, generation tracker) lives in context variables, so one
compiled template is safe to render from many threads at once.
"""

from __future__ import annotations

import contextvars
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
from jinja2.compiler import CodeGenerator
from jinja2.sandbox import MAX_RANGE, ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

from . import provenance
from .provenance import Traced


@dataclass(frozen=True)
class RenderLimits:
    """Cost caps for one render. Defaults are far above what any real template needs."""

    max_output_chars: int = 8_000_000
    max_operations: int = 2_000_000
    max_seconds: float = 5.0
    #: ``time.monotonic()`` by which the whole chat request must be done: ``render`` sets
    #: it once, so the renders it runs (up to three under ``escape``) and the work between
    #: them share ``max_seconds`` instead of getting it each.
    deadline: float | None = None

    def check_deadline(self, what: str) -> None:
        """Raise ``BudgetExceeded`` when the request's deadline has passed."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise BudgetExceeded(f"chat rendering exceeded {self.max_seconds:g} s ({what})")


class BudgetExceeded(Exception):
    """A render went over its RenderLimits (too long, too many operations, too big)."""


@dataclass
class _RenderState:
    limits: RenderLimits
    deadline: float
    ops: int = 0
    emitted: int = 0  # characters yielded by the top-level render so far
    generation: list[tuple[int, int]] | None = None
    clock: str | None = None  # what strftime_now read: None, "date" or "time" (of day)

    def tick(self, n: int = 1) -> None:
        self.ops += n
        if self.ops > self.limits.max_operations:
            raise BudgetExceeded(
                f"template exceeded {self.limits.max_operations} operations (runaway loop?)")
        if not self.ops & 0xFF and time.monotonic() > self.deadline:
            raise BudgetExceeded(
                f"template rendering exceeded {self.limits.max_seconds:g} s")

    def check_size(self, n: int, what: str = "a value") -> None:
        if n > self.limits.max_output_chars:
            raise BudgetExceeded(
                f"template built {what} of {n} items; the cap is "
                f"{self.limits.max_output_chars}")


_STATE: contextvars.ContextVar[_RenderState | None] = contextvars.ContextVar(
    "chat_render_state", default=None)


def begin_render(limits: RenderLimits, track_generation: bool) -> tuple[_RenderState, Any]:
    """Install a fresh per-render state; returns it and the token to reset it with."""
    deadline = time.monotonic() + limits.max_seconds
    if limits.deadline is not None:
        deadline = min(deadline, limits.deadline)
    state = _RenderState(limits, deadline, generation=[] if track_generation else None)
    return state, _STATE.set(state)


def end_render(token: Any) -> None:
    _STATE.reset(token)


def _state() -> _RenderState:
    state = _STATE.get()
    if state is None:  # rendering outside render_chat (e.g. a bare Template.render)
        state = _RenderState(RenderLimits(), time.monotonic() + RenderLimits().max_seconds)
        _STATE.set(state)
    return state


def _size(value: Any) -> int:
    try:
        return len(value) if isinstance(value, (str, list, tuple, dict)) else 0
    except TypeError:
        return 0


# ==== provenance-keeping string building ==============================================


def _checked_concat(parts: Any) -> str:
    """``environment.concat``: join buffered output (macros, blocks) keeping provenance."""
    parts = list(parts)
    state = _state()
    state.check_size(sum(len(p) for p in parts), "a block")
    return provenance.concat(parts)


def _concat_operator(parts: Any) -> str:
    """The ``~`` operator: ``str()`` of each operand, joined, provenance kept."""
    parts = [str(p) for p in parts]
    _state().check_size(sum(len(p) for p in parts), "a string")
    return provenance.concat(parts)


class _ChatCodeGenerator(CodeGenerator):
    """Compile ``a ~ b`` to a provenance-keeping join instead of Jinja's ``str_join``."""

    def visit_Concat(self, node: jinja2.nodes.Concat, frame: Any) -> None:
        if frame.eval_ctx.volatile or frame.eval_ctx.autoescape:
            super().visit_Concat(node, frame)
            return
        self.write("environment.chat_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


# ==== the {% generation %} tag ========================================================


class GenerationTag(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: renders its body unchanged and, when the
    render tracks it, records the body's ``[start, end)`` in the output. ``start`` is the
    length of everything the top-level render has yielded so far, which is how
    transformers' AssistantTracker defines it (also inside buffered blocks)."""

    tags = {"generation"}

    def parse(self, parser: Any) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_generation_block")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _generation_block(self, caller: Callable[[], str]) -> str:
        rv = caller()
        state = _STATE.get()
        if state is not None and state.generation is not None:
            start = state.emitted
            state.generation.append((start, start + len(rv)))
        return rv


# ==== globals and filters =============================================================


def _raise_exception(message: Any) -> None:
    raise jinja2.exceptions.TemplateError(message)


#: strftime directives whose value stays the same all day; any other reads the clock.
_DATE_DIRECTIVES = frozenset("aAbBCdDeFgGhjmnuUVwWxyYt%")


def _strftime_now(fmt: str) -> str:
    """transformers' ``strftime_now`` (local time). The render state records whether the
    template read the date or the time of day: a result cache must key on the one and
    cannot keep the other."""
    state = _STATE.get()
    if state is not None and state.clock != "time":
        directives = set(re.findall(r"%[-_0^#]?(.)", str(fmt)))
        state.clock = "time" if directives - _DATE_DIRECTIVES else "date"
    return datetime.now().strftime(fmt)


class _TemplateDict:
    """``dict(...)`` for templates without exposing the ``dict`` type itself."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
        return dict.fromkeys(*args, **kwargs)


class _TemplateNamespace(Namespace):
    """``namespace()`` that refuses underscore-prefixed names (no reaching internals)."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 (Jinja's signature trick)
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _TemplateNamespace._check(name)
        Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _TemplateNamespace._check(name)
        Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"chat templates cannot store underscore-prefixed attributes on a "
                f"namespace (got {name!r})")


class _BoundedRange:
    """``range()`` as the sandbox allows it (at most MAX_RANGE items) whose iteration
    counts against the render's operation budget, so nested loops cannot run away."""

    __slots__ = ("_r",)

    def __init__(self, r: range) -> None:
        self._r = r

    def __iter__(self) -> Iterator[int]:
        state = _state()
        for i in self._r:
            state.tick()
            yield i

    def __reversed__(self) -> Iterator[int]:
        state = _state()
        for i in reversed(self._r):
            state.tick()
            yield i

    def __len__(self) -> int:
        return len(self._r)

    def __getitem__(self, key: Any) -> Any:
        v = self._r[key]
        return _BoundedRange(v) if isinstance(v, range) else v

    def __contains__(self, x: Any) -> bool:
        return x in self._r

    def __eq__(self, other: Any) -> bool:
        return self._r == (other._r if isinstance(other, _BoundedRange) else other)

    def __hash__(self) -> int:
        return hash(self._r)

    def __repr__(self) -> str:
        return repr(self._r)


def _range(*args: int) -> _BoundedRange:
    r = range(*args)
    if len(r) > MAX_RANGE:
        raise OverflowError(
            f"Range too big. The sandbox blocks ranges larger than MAX_RANGE ({MAX_RANGE}).")
    return _BoundedRange(r)


def _tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    """json.dumps without HTML escaping, like transformers'. Output built from caller data
    is attributed (as a whole) to the first caller string inside it."""
    state = _state()
    if isinstance(indent, int) and indent > 256:
        raise BudgetExceeded(f"tojson indent {indent} is over the cap of 256")
    if isinstance(indent, str):
        state.check_size(len(indent) * 1000, "a tojson indent")
    out = json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                     sort_keys=sort_keys)
    state.check_size(len(out), "a tojson string")
    oid = provenance.first_origin(x)
    return out if oid is None or not out else Traced(out, ((0, len(out), oid),))


@jinja2.pass_environment
def _join(env: jinja2.Environment, value: Any, d: str = "", attribute: Any = None) -> str:
    """Jinja's ``join`` (no autoescape) with provenance and a size check."""
    if attribute is not None:
        from jinja2.filters import make_attrgetter
        value = map(make_attrgetter(env, attribute), value)
    items = [v if isinstance(v, str) else str(v) for v in value]
    sep = d if isinstance(d, str) else str(d)
    state = _state()
    state.tick(len(items) // 16 + 1)
    state.check_size(sum(map(len, items)) + len(sep) * max(0, len(items) - 1), "a joined string")
    parts: list[str] = []
    for i, item in enumerate(items):
        if i:
            parts.append(sep)
        parts.append(item)
    return provenance.concat(parts)


def _capped_filter(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """Wrap a stock filter that can build big strings: its size-setting arguments are
    checked before it runs (widths, replace growth, %-format widths), its result after."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        state = _state()
        state.tick()
        if name in ("center", "indent"):
            for a in (*args[1:], *kwargs.values()):
                if isinstance(a, int) and not isinstance(a, bool):
                    state.check_size(a, "a padded string")
        elif name == "replace" and len(args) >= 4:  # (eval_ctx, s, old, new[, count])
            s, old, new = (str(a) for a in args[1:4])
            hits = s.count(old) if old else len(s) + 1
            state.check_size(len(s) + hits * max(0, len(new) - len(old)), "a replaced string")
        elif name == "format" and args and isinstance(args[0], str):
            for m in _PERCENT_WIDTH.finditer(args[0]):
                if any(g and len(g) > 6 for g in m.groups()):
                    raise BudgetExceeded("%-format width is over the output cap")
        rv = fn(*args, **kwargs)
        state.check_size(_size(rv), "a filtered value")
        return rv

    for attr in ("jinja_pass_arg",):
        if hasattr(fn, attr):
            setattr(wrapper, attr, getattr(fn, attr))
    wrapper.__name__ = getattr(fn, "__name__", "filter")
    return wrapper


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    from jinja2.utils import generate_lorem_ipsum
    if n > 100 or max > 1000:
        raise BudgetExceeded("lipsum() is capped at 100 paragraphs of 1000 words")
    return generate_lorem_ipsum(n=n, html=html, min=min, max=max)


# ==== the environment =================================================================

_WIDTH_METHODS = {"ljust", "rjust", "center", "zfill"}
_FORMAT_WIDTH = re.compile(r"\{[^{}]*\d{7,}[^{}]*\}")
_PERCENT_WIDTH = re.compile(r"%[-#0 +*]*(\d+)?(?:\.(\d+))?")
_MAX_INT_BITS = 1 << 16


class ChatEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox plus budget checks; see the module docstring."""

    code_generator_class = _ChatCodeGenerator
    intercepted_binops = frozenset({"+", "*", "**", "%", "//"})

    def __init__(self) -> None:
        super().__init__(trim_blocks=True, lstrip_blocks=True,
                         extensions=[GenerationTag, jinja2.ext.loopcontrols])
        self.concat = _checked_concat  # type: ignore[assignment]
        self.chat_concat = _concat_operator
        self.filters["tojson"] = _tojson
        self.filters["join"] = _join
        for name in ("center", "indent", "wordwrap", "truncate", "format", "filesizeformat",
                     "replace", "striptags", "urlize"):
            if name in self.filters:
                self.filters[name] = _capped_filter(self.filters[name], name)
        self.globals["raise_exception"] = _raise_exception
        self.globals["strftime_now"] = _strftime_now
        self.globals["dict"] = _TemplateDict()
        self.globals["namespace"] = _TemplateNamespace
        self.globals["range"] = _range
        self.globals["lipsum"] = _lipsum

    # -- lookups and calls count as operations
    def getattr(self, obj: Any, attribute: str) -> Any:
        _state().tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _state().tick()
        return super().getitem(obj, argument)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        state = _state()
        state.tick()
        owner = getattr(__obj, "__self__", None)
        name = getattr(__obj, "__name__", "")
        if isinstance(owner, str):
            __self._precheck_str_method(state, owner, name, args, kwargs)
        rv = super().call(__context, __obj, *args, **kwargs)
        state.check_size(_size(rv), f"the result of {name or 'a call'}()")
        return rv

    @staticmethod
    def _precheck_str_method(state: _RenderState, owner: str, name: str, args: tuple,
                             kwargs: dict) -> None:
        if name in _WIDTH_METHODS:
            for a in (*args, *kwargs.values()):
                if isinstance(a, int):
                    state.check_size(a, f"a {name}() string")
        elif name == "expandtabs":
            size = (args[0] if args else kwargs.get("tabsize", 8))
            if isinstance(size, int):
                state.check_size(len(owner) + owner.count("\t") * size, "an expandtabs() string")
        elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) \
                and isinstance(args[1], str):
            hits = owner.count(args[0]) if args[0] else len(owner) + 1
            state.check_size(len(owner) + hits * max(0, len(args[1]) - len(args[0])),
                             "a replace() string")
        elif name == "join" and args:
            items = args[0]
            if isinstance(items, (list, tuple)):
                state.check_size(sum(_size(i) for i in items) + len(owner) * len(items),
                                 "a join() string")

    def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
        """Stock Jinja returns an Undefined that only fails when used (and prints as "");
        reaching for an internal attribute is an attack, so it fails right here."""
        raise jinja2.exceptions.SecurityError(
            f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe")

    def wrap_str_format(self, value: Any) -> Any:
        owner = getattr(value, "__self__", None)
        if isinstance(owner, str) and getattr(value, "__name__", "") in ("format", "format_map") \
                and _FORMAT_WIDTH.search(owner):
            raise BudgetExceeded("format() width is over the output cap")
        return super().wrap_str_format(value)

    # -- operators that can allocate without bound are checked first
    def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
        state = _state()
        state.tick()
        if op == "+":
            state.check_size(_size(left) + _size(right), "a concatenation")
        elif op == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int):
                    state.check_size(len(seq) * n, "a repeated value")
            if isinstance(left, int) and isinstance(right, int) \
                    and left.bit_length() + right.bit_length() > _MAX_INT_BITS:
                raise BudgetExceeded("integer product is too large")
        elif op == "**":
            if isinstance(left, int) and isinstance(right, int) and right > 0 \
                    and max(1, left.bit_length()) * right > _MAX_INT_BITS and abs(left) > 1:
                raise BudgetExceeded("integer power is too large")
        elif op == "%" and isinstance(left, str):
            for m in _PERCENT_WIDTH.finditer(left):
                for g in m.groups():
                    if g and len(g) > 6:
                        raise BudgetExceeded("%-format width is over the output cap")
        rv = self.binop_table[op](left, right)
        state.check_size(_size(rv), f"the result of {op!r}")
        return rv
