"""The contract routes' size limits, applied to every compat request.

The compat routes took what the contract routes refuse (issue 33): a 4,000,001-character
prompt answered 200 on three stacks where ``/encode`` says 413, SGLang took 5,000 prompts
and 10^5 detokenize rows. Their request models differ per stack, so the check reads the
parsed request by value, whatever its field names: every string at most
``max_text_chars`` (``TOKSERVE_MAX_TEXT_CHARS``); every list of prompts or of id rows at
most ``max_batch`` items (``TOKSERVE_MAX_BATCH``); the ids of a request at most
``max_decode_ids`` in all (``TOKSERVE_MAX_DECODE_IDS``). Chat messages, tools and
template arguments get the contract's per-string limit (``conversation``). A refusal is
``PayloadTooLarge``, which each dialect answers with 413 in its own error shape.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..conversation import check_chat_strings
from ...errors import PayloadTooLarge
from ...runtime.settings import Settings

_CHAT_FIELDS = ("messages", "tools", "template_kwargs", "chat_template_kwargs")


def check_limits(settings: Settings, req: BaseModel) -> None:
    """Raise ``PayloadTooLarge`` when ``req`` is over a contract limit."""
    ids = 0
    for name in type(req).model_fields:
        value = getattr(req, name)
        if name in _CHAT_FIELDS or value is None:
            continue
        ids += _check(settings, name, value)
    if ids > settings.max_decode_ids:
        raise PayloadTooLarge(
            f"request has {ids} ids; the limit is {settings.max_decode_ids} "
            f"(TOKSERVE_MAX_DECODE_IDS)",
            field="ids", limit=settings.max_decode_ids, size=ids)
    messages = getattr(req, "messages", None)
    if messages:
        check_chat_strings(settings, messages, getattr(req, "tools", None),
                           getattr(req, "chat_template_kwargs", None)
                           or getattr(req, "template_kwargs", None))


def _check(settings: Settings, name: str, value: Any) -> int:
    """Check one field's value; return how many ids it holds."""
    if isinstance(value, str):
        if len(value) > settings.max_text_chars:
            raise PayloadTooLarge(
                f"`{name}` has {len(value)} characters; the limit is "
                f"{settings.max_text_chars} (TOKSERVE_MAX_TEXT_CHARS)",
                field=name, limit=settings.max_text_chars, size=len(value))
        return 0
    if not isinstance(value, list):
        return 0
    ints = sum(1 for v in value if type(v) is int)
    if ints == len(value):
        return ints  # one row of ids
    if len(value) > settings.max_batch:
        raise PayloadTooLarge(
            f"`{name}` has {len(value)} items; the limit is {settings.max_batch} "
            f"(TOKSERVE_MAX_BATCH); split the batch",
            field=name, limit=settings.max_batch, size=len(value))
    return ints + sum(_check(settings, f"{name}[{i}]", v) for i, v in enumerate(value)
                      if type(v) is not int)
