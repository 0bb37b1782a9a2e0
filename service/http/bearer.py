"""Bearer tokens (RFC 6750): the one parser and comparison, for the API and admin tokens.

The scheme name is case-insensitive (RFC 9110 §11.1: ``bearer``, ``Bearer`` and
``BEARER`` are the same), whitespace around the token is not part of it, and the token
is compared in constant time so response timing does not reveal how much of a guess
matched.
"""

from __future__ import annotations

import hmac


def bearer_token(header: bytes | str | None) -> bytes | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    if not header:
        return None
    raw = header.encode("latin-1", "replace") if isinstance(header, str) else header
    scheme, _, token = raw.strip().partition(b" ")
    if scheme.lower() != b"bearer" or not token.strip():
        return None
    return token.strip()


def token_matches(header: bytes | str | None, expected: bytes) -> bool:
    """Whether ``header`` carries exactly ``expected`` (constant-time comparison)."""
    got = bearer_token(header)
    return got is not None and hmac.compare_digest(got, expected)
