"""``tiktoken.load`` under the shim: rank files read from local paths, never downloaded.

Same names, signatures, return values and errors as tiktoken's module for a local path
(``ValueError`` for a malformed line or a hash mismatch, and where tiktoken asserts that
encoder.json matches the merges), so a plugin or a model's own tokenizer code that calls
``load_tiktoken_bpe(path)`` gets the dict tiktoken gives. What differs, on purpose: a
URL (``https://``, ``blob://``, ``az://``...) raises ``ArtifactError`` instead of being
fetched (naming the bundled way for OpenAI's files), and nothing is cached (tiktoken
caches even local files under ``TIKTOKEN_CACHE_DIR``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os

from ..errors import ArtifactError
from ..formats import rank_file_bytes

_OPENAI_FILES = "https://openaipublic.blob.core.windows.net/"


def read_file(blobpath: str) -> bytes:
    """The bytes of a local file.

    Raises:
        ArtifactError: ``blobpath`` is a URL (the shim downloads nothing).
        OSError: the file cannot be read, as from ``open``.
    """
    path = os.fspath(blobpath)
    if "://" in path:
        hint = (" OpenAI's published encodings are bundled: tiktoken.get_encoding(name) or "
                "tiktoken_ext.openai_public.<name>() read them with no download."
                if path.startswith(_OPENAI_FILES) else "")
        raise ArtifactError(
            f"tokserve's tiktoken shim reads local files only and does not download "
            f"{path}; download it yourself and pass the local path.{hint}", path=path)
    with open(path, "rb", buffering=0) as f:
        return f.read()


def check_hash(data: bytes, expected_hash: str) -> bool:
    """Whether ``data``'s SHA-256 hex digest is ``expected_hash``."""
    return hashlib.sha256(data).hexdigest() == expected_hash


def read_file_cached(blobpath: str, expected_hash: str | None = None) -> bytes:
    """``read_file`` plus tiktoken's hash check (there is no cache to read from: a local
    file is read each time).

    Raises:
        ValueError: the SHA-256 is not ``expected_hash`` (tiktoken's message).
    """
    contents = read_file(blobpath)
    if expected_hash and not check_hash(contents, expected_hash):
        raise ValueError(
            f"Hash mismatch for data downloaded from {blobpath} (expected {expected_hash}). "
            f"This may indicate a corrupted download. Please try again.")
    return contents


def load_tiktoken_bpe(tiktoken_bpe_file: str, expected_hash: str | None = None
                      ) -> dict[bytes, int]:
    """A ``.tiktoken`` rank file (``base64(token) rank`` lines) as ``{token: rank}``.

    Raises:
        ValueError: a malformed line, or a hash mismatch (as tiktoken).
    """
    contents = read_file_cached(tiktoken_bpe_file, expected_hash)
    ranks: dict[bytes, int] = {}
    for line in contents.splitlines():
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
        except Exception as e:
            raise ValueError(f"Error parsing line {line!r} in {tiktoken_bpe_file}") from e
    return ranks


def dump_tiktoken_bpe(bpe_ranks: dict[bytes, int], tiktoken_bpe_file: str) -> None:
    """Write ``bpe_ranks`` as a rank file (to a local path; tiktoken also writes to
    blob storage through ``blobfile``)."""
    path = os.fspath(tiktoken_bpe_file)
    if "://" in path:
        raise ArtifactError(f"tokserve's tiktoken shim writes local files only, not {path}",
                            path=path)
    with open(path, "wb") as f:
        f.write(rank_file_bytes(bpe_ranks))


def data_gym_to_mergeable_bpe_ranks(
    vocab_bpe_file: str,
    encoder_json_file: str,
    vocab_bpe_hash: str | None = None,
    encoder_json_hash: str | None = None,
    clobber_one_byte_tokens: bool = False,
) -> dict[bytes, int]:
    """GPT-2's ``vocab.bpe`` (merges) and ``encoder.json`` as tiktoken ranks.

    tiktoken's algorithm, step for step: the 256 single bytes ranked in GPT-2's byte
    order (printable ones first), then one rank per merge; ``encoder.json`` must agree
    with the result (it is how tiktoken checks that ranks follow merge priority).

    Raises:
        ValueError: a hash mismatch, or ``encoder.json`` disagreeing with the merges.
    """
    rank_to_intbyte = [b for b in range(2**8) if chr(b).isprintable() and chr(b) != " "]
    data_gym_byte_to_byte = {chr(b): b for b in rank_to_intbyte}
    n = 0
    for b in range(2**8):
        if b not in rank_to_intbyte:
            rank_to_intbyte.append(b)
            data_gym_byte_to_byte[chr(2**8 + n)] = b
            n += 1

    def decode_data_gym(value: str) -> bytes:
        return bytes(data_gym_byte_to_byte[c] for c in value)

    contents = read_file_cached(vocab_bpe_file, vocab_bpe_hash).decode()
    merges = [tuple(line.split()) for line in contents.split("\n")[1:-1]]
    ranks = {bytes([b]): i for i, b in enumerate(rank_to_intbyte)}
    n = len(ranks)
    for first, second in merges:
        ranks[decode_data_gym(first) + decode_data_gym(second)] = n
        n += 1

    encoder = json.loads(read_file_cached(encoder_json_file, encoder_json_hash))
    loaded = {decode_data_gym(k): v for k, v in encoder.items()}
    loaded.pop(b"<|endoftext|>", None)
    loaded.pop(b"<|startoftext|>", None)
    if clobber_one_byte_tokens:
        for token, rank in loaded.items():
            if len(token) == 1:
                ranks[token] = rank
    if ranks != loaded:
        raise ValueError(f"{encoder_json_file} does not match the merges of {vocab_bpe_file}")
    return ranks
