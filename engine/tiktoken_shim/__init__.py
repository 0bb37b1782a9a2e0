"""tokserve under code written for tiktoken, without editing that code.

``install()`` (also ``tokserve.install_as_tiktoken()``) makes ``import tiktoken`` and its
submodules resolve to tokserve for the rest of the process:

=============================  ==========================================================
``tiktoken``                   tiktoken's public names (``get_encoding``, ``Encoding``...)
``tiktoken.core``              ``Encoding`` (tokserve's class; core.py)
``tiktoken.load``              ``load_tiktoken_bpe`` and friends, local files only (load.py)
``tiktoken.registry``          ``get_encoding``, ``ENCODINGS``, plugins (registry.py)
``tiktoken.model``             ``encoding_for_model``, tiktoken's model table (model.py)
``tiktoken_ext``               the plugin namespace, over the real one's folders
``tiktoken_ext.openai_public`` OpenAI's constructors from bundled files (openai_public.py)
=============================  ==========================================================

Other ``tiktoken.*`` names (``tiktoken._tiktoken``, the Rust core) are not importable.

Three ways in, for three situations:

* code you own: call ``tokserve.install_as_tiktoken()`` before anything imports tiktoken;
* a program you only start: ``python -m tokserve.tiktoken_shim script.py args`` (or
  ``-m module args``, ``-c code``), which installs the shim and runs it (__main__.py);
* a launcher you do not control (gunicorn, celery, a notebook kernel, subprocesses):
  put ``python -m tokserve.tiktoken_shim --pythonpath`` on ``PYTHONPATH``. That folder
  holds stand-in ``tiktoken.py`` and ``tiktoken_ext.py`` that install the shim when
  first imported; no ``.pth`` file and no ``sitecustomize``, so nothing runs in a process
  that never imports tiktoken, and it ends where the variable is unset.

When the real tiktoken is imported already, ``install()`` refuses
(``TiktokenAlreadyImported``) and changes nothing: the modules that imported it keep
working with it, and the process never holds two implementations behind one name.
"""

from __future__ import annotations

import os
import sys
import threading
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

from ..about import __version__ as _tokserve_version
from ..errors import TiktokenAlreadyImported

#: the folder to put on PYTHONPATH (stand-in tiktoken.py and tiktoken_ext.py)
PYTHONPATH_DIR = Path(__file__).with_name("pythonpath")
#: the tiktoken release whose API and model table the shim follows
TIKTOKEN_API = "0.14.0"

_LOCK = threading.RLock()
_TOP_DOC = ("tiktoken's API on tokserve's engine (tokserve.tiktoken_shim): installed in "
            "place of the tiktoken package.")


def installed() -> bool:
    """Whether ``import tiktoken`` gives this shim in this process."""
    return getattr(sys.modules.get("tiktoken"), "__tokserve_shim__", False)


def install() -> ModuleType:
    """Make ``tiktoken`` and its submodules this shim's (idempotent); returns ``tiktoken``.

    Raises:
        TiktokenAlreadyImported: the real tiktoken (or one of its modules, or a plugin)
            is imported already; nothing is changed.
    """
    with _LOCK:
        if installed():
            return sys.modules["tiktoken"]
        foreign = _foreign_modules()
        if foreign:
            origin = getattr(sys.modules.get("tiktoken"), "__file__", None)
            raise TiktokenAlreadyImported(foreign, origin)
        from . import core, load, model, openai_public, registry

        top = _package("tiktoken", _TOP_DOC, [])
        top.__dict__.update(
            Encoding=core.Encoding,
            encoding_for_model=model.encoding_for_model,
            encoding_name_for_model=model.encoding_name_for_model,
            get_encoding=registry.get_encoding,
            list_encoding_names=registry.list_encoding_names,
            __version__=f"{TIKTOKEN_API}+tokserve.{_tokserve_version}",
            core=core, load=load, registry=registry, model=model,
        )
        ext = _package("tiktoken_ext", "tiktoken's plugin namespace (tokserve.tiktoken_shim).",
                       _plugin_folders())
        ext.openai_public = openai_public
        sys.modules.update({
            "tiktoken": top, "tiktoken.core": core, "tiktoken.load": load,
            "tiktoken.registry": registry, "tiktoken.model": model,
            "tiktoken_ext": ext, "tiktoken_ext.openai_public": openai_public,
        })
        return top


def _foreign_modules() -> list[str]:
    """Imported modules of the real tiktoken or its plugins (the stand-ins excepted)."""
    found = []
    for name, module in list(sys.modules.items()):
        if not (name == "tiktoken" or name.startswith(("tiktoken.", "tiktoken_ext."))):
            continue
        if not isinstance(module, ModuleType):
            continue  # None: an import someone blocked
        where = getattr(module, "__file__", None)
        if where and Path(where).parent == PYTHONPATH_DIR:
            continue  # our stand-in, installing us
        found.append(name)
    return sorted(found)


def _package(name: str, doc: str, path: list[str]) -> ModuleType:
    """An empty package module ``name`` whose submodules are searched for in ``path``."""
    module = ModuleType(name, doc)
    spec = ModuleSpec(name, None, origin=__name__, is_package=True)
    spec.submodule_search_locations = path
    module.__spec__, module.__path__, module.__package__ = spec, path, name
    module.__tokserve_shim__ = True
    return module


def _plugin_folders() -> list[str]:
    """The real ``tiktoken_ext`` namespace's folders on ``sys.path`` (tiktoken's own
    holds its openai_public, which the shim's replaces; other packages' plugins load)."""
    folders = []
    for entry in sys.path:
        if not isinstance(entry, str):
            continue
        folder = os.path.join(os.path.abspath(entry or os.curdir), "tiktoken_ext")
        if os.path.isdir(folder) and folder not in folders:
            folders.append(folder)
    return folders


def pythonpath() -> str:
    """``PYTHONPATH`` with the stand-in folder first (what ``__main__`` gives children)."""
    rest = os.environ.get("PYTHONPATH", "")
    parts = [str(PYTHONPATH_DIR)] + [p for p in rest.split(os.pathsep)
                                     if p and p != str(PYTHONPATH_DIR)]
    return os.pathsep.join(parts)
