"""``tiktoken.registry`` under the shim: ``get_encoding``, plugins, the encoding cache.

tiktoken's names and rules: ``ENCODINGS`` caches one ``Encoding`` per name (tests clear
it), ``ENCODING_CONSTRUCTORS`` is None until the plugins are read, then maps each name
to its constructor (code that registers an encoding adds to it), and a plugin is a module
of the ``tiktoken_ext`` namespace defining ``ENCODING_CONSTRUCTORS``. Plugins other
packages install are found once the shim is installed (its ``tiktoken_ext`` searches the
real namespace's folders); ``tiktoken_ext.openai_public`` is always the shim's.

Where a name resolves to this shim's own constructor (OpenAI's encodings) or to none,
``get_encoding`` returns ``tokserve.get_encoding(name)``: the same ids as
``Encoding(**constructor())`` (tests/engine/test_tiktoken_shim.py), loaded once per
process from the engine's compiled tables instead of a rank dict. So the bundled
tokenizers tiktoken does not have (``deepseek-v4``) are found too, as are
``name@version`` and artifact paths. A constructor anyone else registered is called.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from ..about import __version__
from ..encoding import Encoding
from ..encodings import get_encoding as _bundled_encoding
from ..versions import bundled_names
from . import openai_public

_lock = threading.RLock()
ENCODINGS: dict[str, Encoding] = {}
ENCODING_CONSTRUCTORS: dict[str, Callable[[], dict[str, Any]]] | None = None
_OURS = "tiktoken_ext.openai_public"


def _available_plugin_modules() -> Sequence[str]:
    """The shim's openai_public, then (shim installed) every other ``tiktoken_ext``
    module on the path."""
    mods = [_OURS]
    ext = sys.modules.get("tiktoken_ext")
    if ext is not None and getattr(ext, "__tokserve_shim__", False):
        for _, name, _ in pkgutil.iter_modules(ext.__path__, "tiktoken_ext."):
            if name not in mods:
                mods.append(name)
    return mods


def _plugin(name: str) -> ModuleType:
    return openai_public if name == _OURS else importlib.import_module(name)


def _find_constructors() -> None:
    """Read every plugin's ``ENCODING_CONSTRUCTORS`` (tiktoken's errors for a plugin
    without one and for a name two plugins define)."""
    global ENCODING_CONSTRUCTORS
    with _lock:
        if ENCODING_CONSTRUCTORS is not None:
            return
        found: dict[str, Callable[[], dict[str, Any]]] = {}
        for mod_name in _available_plugin_modules():
            try:
                constructors = _plugin(mod_name).ENCODING_CONSTRUCTORS
            except AttributeError as e:
                raise ValueError(
                    f"tiktoken plugin {mod_name} does not define ENCODING_CONSTRUCTORS") from e
            for enc_name, constructor in constructors.items():
                if enc_name in found:
                    raise ValueError(
                        f"Duplicate encoding name {enc_name} in tiktoken plugin {mod_name}")
                found[enc_name] = constructor
        ENCODING_CONSTRUCTORS = found


def get_encoding(encoding_name: str) -> Encoding:
    """The ``Encoding`` for a name, built once per process (see the module docstring).

    Raises:
        ValueError: not a string, or an unknown name (tiktoken's message).
    """
    if not isinstance(encoding_name, str):
        raise ValueError(f"Expected a string in get_encoding, got {type(encoding_name)}")
    enc = ENCODINGS.get(encoding_name)
    if enc is not None:
        return enc
    with _lock:
        if encoding_name in ENCODINGS:
            return ENCODINGS[encoding_name]
        if ENCODING_CONSTRUCTORS is None:
            _find_constructors()
            assert ENCODING_CONSTRUCTORS is not None
        constructor = ENCODING_CONSTRUCTORS.get(encoding_name)
        if constructor is None or constructor is openai_public.ENCODING_CONSTRUCTORS.get(
                encoding_name):
            try:
                enc = _bundled_encoding(encoding_name)
            except ValueError as e:
                raise ValueError(
                    f"Unknown encoding {encoding_name}.\n"
                    f"Plugins found: {list(_available_plugin_modules())}\n"
                    f"tiktoken version: tokserve {__version__}'s tiktoken shim ({e})") from None
        else:
            enc = Encoding(**constructor())
        ENCODINGS[encoding_name] = enc
        return enc


def list_encoding_names() -> list[str]:
    """Every plugin's encoding names, then the other bundled tokenizers."""
    with _lock:
        if ENCODING_CONSTRUCTORS is None:
            _find_constructors()
            assert ENCODING_CONSTRUCTORS is not None
        return list(dict.fromkeys([*ENCODING_CONSTRUCTORS, *bundled_names()]))
