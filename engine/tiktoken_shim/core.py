"""``tiktoken.core`` under the shim: ``Encoding`` is tokserve's (engine/encoding.py).

The same class as ``tokserve.Encoding``, so ``isinstance`` checks hold across both names
and an encoding pickles as tokserve's (it unpickles in a process without the shim).
Its constructor is tiktoken's: ``Encoding(name, pat_str=..., mergeable_ranks=...,
special_tokens=..., explicit_n_vocab=None)``.
"""

from __future__ import annotations

from ..encoding import Encoding as Encoding

__all__ = ["Encoding"]
