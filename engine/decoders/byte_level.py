"""GPT-2's reversible map between bytes and printable characters (byte-level BPE).

Byte-level vocabularies (``tokenizer.json`` with a ByteLevel pre-tokenizer) store every
token as the characters this map gives its bytes; formats.py reads them back to bytes,
authoring/export.py writes them, and the service's compat routes spell tokens in them
(``convert_ids_to_tokens``). This is the one copy of the map.
"""

from __future__ import annotations

from ..errors import ArtifactError


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map used by byte-level vocabularies.

    Printable Latin-1 bytes stand for themselves; the other 68 are shifted, in byte
    order, to U+0100 upwards, so that every vocabulary string is printable.
    """
    keep = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    table: dict[int, str] = {}
    shifted = 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


#: byte -> its character, indexed by the byte (``BYTE_TO_CHAR[0x20] == "Ġ"``)
BYTE_TO_CHAR: tuple[str, ...] = tuple(bytes_to_unicode()[b] for b in range(256))
_UNICODE_TO_BYTE = {ch: b for b, ch in enumerate(BYTE_TO_CHAR)}


def byte_level_decode(token: str, path: str = "") -> bytes:
    try:
        return bytes(_UNICODE_TO_BYTE[ch] for ch in token)
    except KeyError as e:
        raise ArtifactError(
            f"vocabulary entry {token!r} is not byte-level encoded (in {path})", path=path
        ) from e
