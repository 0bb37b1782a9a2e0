"""The Precompiled normalizer against tokenizers' on T5's charsmap: text and alignment.

``normalize`` must equal tokenizers' ``normalize_str`` on every text; the alignment
(``normalize_aligned``, ``normalize_sources``) must equal what tokenizers'
NormalizedString keeps, read through the Python bindings: a PreTokenizedString
normalized by the reference, split into single characters, then each character's span
in the original (``get_splits("original", "char")``).
"""

from __future__ import annotations

import base64
import threading

import pytest

from tokserve.errors import ArtifactError
from tokserve.normalizers.precompiled import Precompiled

from precompiled_inputs import (charsmap_keys, corpus_texts, crafted_texts, reference,
                                t5_charsmap_base64)


@pytest.fixture(scope="module")
def t5():
    return Precompiled.from_base64(t5_charsmap_base64())


def _reference_aligned(text: str) -> tuple[str, list[tuple[int, int]]]:
    from tokenizers import PreTokenizedString, Regex

    pretok = PreTokenizedString(text)
    pretok.normalize(lambda normalized: reference().normalize(normalized))
    pretok.split(lambda _, normalized: normalized.split(Regex("(?m)."), "isolated"))
    splits = pretok.get_splits("original", "char")
    return "".join(s for s, _, _ in splits), [span for _, span, _ in splits]


def test_keys_are_read_out():
    keys = charsmap_keys()
    assert len(keys) > 40_000 and "ﬁ" in keys and "\x1e" in keys and "A\u0300" in keys


def test_normalize_equals_tokenizers(t5):
    texts = corpus_texts() + crafted_texts(4000, seed=1)
    assert len(texts) >= 4500
    changed = 0
    for text in texts:
        want = reference().normalize_str(text)
        assert t5.normalize(text) == want, ascii(text)
        changed += want != text
    assert changed > 2000


def test_every_key_alone_and_glued(t5):
    # each key as a whole text, and followed by a combining mark (one cluster with it)
    keys = charsmap_keys()[::7]
    for key in keys:
        for text in (key, key + "\u0301", "x" + key):
            assert t5.normalize(text) == reference().normalize_str(text), ascii(text)


def test_alignment_equals_tokenizers(t5):
    texts = crafted_texts(2500, seed=2) + corpus_texts()[::10]
    for text in texts:
        want_text, want_spans = _reference_aligned(text)
        normalized, spans = t5.normalize_aligned(text)
        assert (normalized, spans) == (want_text, want_spans), ascii(text)
        same, sources = t5.normalize_sources(text)
        assert same == normalized
        if sources is None:
            assert normalized is text or normalized == text
            assert spans == [(i, i + 1) for i in range(len(text))]
        else:
            assert [(s, s + 1) if s >= 0 else (0, 0) for s in sources] == spans


def test_alignment_quirks(t5):
    # "™" -> "TM" then "\x1e" removed: the removal is charged to "M", which then
    # consumes "\x1e" (tokenizers' own test, precompiled.rs); a removal before any
    # output is recorded nowhere, so later characters align one place early
    assert t5.normalize_aligned("™\x1eg") == ("TMg", [(0, 1), (1, 2), (2, 3)])
    assert t5.normalize_aligned("\x1eab") == ("ab", [(0, 1), (1, 2)])
    assert t5.normalize_aligned("a\r\nb") == ("a b", [(0, 1), (1, 2), (3, 4)])
    assert t5.normalize_aligned("ﷺ")[1] == [(0, 1)] * 18


def test_unchanged_text_is_returned_as_is(t5):
    text = "plain ASCII words, digits 123 and punctuation!?" * 10
    assert t5.normalize(text) is text
    assert t5.normalize_sources(text) == (text, None)
    assert t5.normalize("") == "" and t5.normalize_aligned("") == ("", [])


def test_threads_share_one_normalizer(t5):
    texts = crafted_texts(300, seed=3)
    want = [reference().normalize_str(t) for t in texts]
    long_text = "".join(texts) * 20  # past the size that releases the GIL
    long_want = reference().normalize_str(long_text)
    errors = []

    def work():
        for _ in range(3):
            if [t5.normalize(t) for t in texts] != want or t5.normalize(long_text) != long_want:
                errors.append("mismatch")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors


@pytest.mark.parametrize("blob", [b"", b"\x00\x00\x00", b"\x00\x00\x00\x00",
                                  b"\x05\x00\x00\x00" + bytes(8), b"\x08\x00\x00\x00" + bytes(4),
                                  b"\x04\x00\x00\x00" + bytes(4) + b"\xff\x00"])
def test_malformed_charsmaps_are_refused(blob):
    with pytest.raises(ArtifactError):
        Precompiled(blob)


def test_from_base64_refuses_non_base64():
    for text in ("not base64!", 42):
        with pytest.raises(ArtifactError):
            Precompiled.from_base64(text)


def test_damaged_trie_never_reads_outside_the_blob():
    # units overwritten with large offsets: every walk must stay in bounds (tokenizers
    # panics on such a blob; ours answers "no key" there)
    blob = bytearray(base64.b64decode(t5_charsmap_base64()))
    size = int.from_bytes(blob[:4], "little")
    for i in range(4, 4 + size, 4 * 97):
        blob[i:i + 4] = (0xFFFFFC00 | (i & 0x3FF)).to_bytes(4, "little")
    damaged = Precompiled(bytes(blob))
    for text in crafted_texts(500, seed=4):
        damaged.normalize(text)
        damaged.normalize_aligned(text)


def test_arguments_are_checked(t5):
    from tokserve.normalizers._precompiled import CharsmapNormalizer, grapheme_ends

    for call in (lambda: t5.normalize(None), lambda: t5.normalize_aligned(b"x"),
                 lambda: t5.normalize_sources(None), lambda: grapheme_ends(None),
                 lambda: CharsmapNormalizer(None)):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(UnicodeEncodeError):
        t5.normalize("\ud800")  # a lone surrogate has no UTF-8 (the engine repairs first)
