"""tokserve: exact, fast byte-level BPE tokenization (this package is the engine; no HTTP).

tiktoken's API, so that ``import tokserve as tiktoken`` keeps existing code working:

    >>> import tokserve
    >>> enc = tokserve.get_encoding("o200k_base")      # cached: loaded once per process
    >>> enc.encode("hello world")
    [24912, 2375]
    >>> tokserve.encoding_for_model("gpt-4o").name
    'o200k_base'

The engine's own API (policies, offsets in any unit, BOS/EOS post-processing):

    >>> tok = tokserve.load("o200k_base")
    >>> ids = tok.encode("hello world")
    >>> tok.decode(ids)
    'hello world'

Code written for tiktoken that you cannot edit: ``tokserve.install_as_tiktoken()`` (or
``python -m tokserve.tiktoken_shim program.py``) makes ``import tiktoken`` and its
submodules this package's (tokserve.tiktoken_shim).

``load`` accepts a bundled tokenizer name, an artifact version directory (manifest.json
plus files, hashes verified), a ``tokenizer.json`` (or a directory holding one), or a
tiktoken rank file with ``preset=`` (cl100k_base, o200k_base, llama3, qwen).

This module is the public surface and nothing else: every name is re-exported from the
module that owns it (loading.py, versions.py, tokenizer.py, encodings.py, ...), so no
module of the package needs to import the package itself.
"""

from __future__ import annotations

from .about import __version__ as __version__
from .about import build_info as build_info
from .added_vocabulary.added_tokens import Policy as Policy
from .artifact import Artifact as Artifact
from .decode_stream import DecodeStream as DecodeStream
from .encoding import Encoding as Encoding
from .encodings import encoding_for_model as encoding_for_model
from .encodings import encoding_name_for_model as encoding_name_for_model
from .encodings import get_encoding as get_encoding
from .encodings import list_encoding_names as list_encoding_names
from .errors import ArtifactError as ArtifactError
from .errors import DisallowedSpecialToken as DisallowedSpecialToken
from .errors import EngineError as EngineError
from .errors import InputTooLarge as InputTooLarge
from .errors import InvalidUtf8 as InvalidUtf8
from .errors import SpecialTokenInText as SpecialTokenInText
from .errors import TiktokenAlreadyImported as TiktokenAlreadyImported
from .errors import UnknownTokenId as UnknownTokenId
from .errors import UnsupportedArtifact as UnsupportedArtifact
from .loading import load as load
from .presets import PRESETS as PRESETS
from .tiktoken_shim import install as install_as_tiktoken
from .tokenizer import Tokenizer as Tokenizer
from .versions import bundled_names as bundled_names
from .versions import bundled_root as bundled_root
from .versions import latest_version as latest_version
from .versions import version_key as version_key

__all__ = [
    "get_encoding", "encoding_for_model", "encoding_name_for_model", "list_encoding_names",
    "Encoding", "DisallowedSpecialToken", "install_as_tiktoken",
    "load", "DecodeStream", "build_info", "bundled_root", "bundled_names", "latest_version",
    "version_key", "Tokenizer", "Artifact", "Policy", "PRESETS",
    "EngineError", "ArtifactError", "UnsupportedArtifact", "SpecialTokenInText",
    "UnknownTokenId", "InvalidUtf8", "InputTooLarge", "TiktokenAlreadyImported",
]
