"""``tokserve.client``: a typed HTTP client for the tokserve service.

    >>> from tokserve.client import Client
    >>> with Client("http://127.0.0.1:8000") as tok:
    ...     tok.count("hello world", tokenizer="o200k_base")
    ...     enc = tok.get_encoding("o200k_base")   # tiktoken-style, remote
    ...     enc.encode("hello world")
    2
    [24912, 2375]

Needs only httpx (no web framework): the service's dependencies are not imported.
"""

from .errors import (BY_CODE, DisallowedSpecialToken, Forbidden, InvalidJson,
                     InvalidRequest, InvalidUtf8, MethodNotAllowed, NotFound, PayloadTooLarge,
                     ReservedLiteralInContent, ServerError, SpecialTokenInText, TemplateError,
                     TemplateNotFound, TokserveConnectionError, TokserveError, Unauthorized,
                     Unavailable, UnknownTokenId, UnknownTokenizer, UnsupportedMediaType,
                     UnknownModel, ContextOverflow, UpgradeRequired)
from .http import AsyncClient, Client
from .remote import AsyncRemoteEncoding, RemoteEncoding
from .results import (EncodeBatchResult, Encoded, EncodeResult, RenderChatResult,
                      TokenizerInfo, TokenizerList)

__all__ = [
    "Client", "AsyncClient", "RemoteEncoding", "AsyncRemoteEncoding",
    "EncodeResult", "EncodeBatchResult", "Encoded", "RenderChatResult", "TokenizerInfo",
    "TokenizerList",
    "TokserveError", "TokserveConnectionError", "InvalidRequest", "InvalidJson",
    "SpecialTokenInText", "DisallowedSpecialToken", "UnknownTokenId", "InvalidUtf8",
    "ReservedLiteralInContent", "TemplateError", "UnknownTokenizer", "UnknownModel",
    "ContextOverflow", "TemplateNotFound",
    "PayloadTooLarge", "UnsupportedMediaType", "Unauthorized", "Forbidden", "NotFound", "MethodNotAllowed",
    "Unavailable", "UpgradeRequired", "ServerError", "BY_CODE",
]
