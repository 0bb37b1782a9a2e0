"""DecodeStream: streaming detokenization never emits part of a character, and its
deltas joined with ``flush()`` are exactly ``decode(all ids)``.

Property tests over random id sequences (ids that split multi-byte characters included,
and sequences that end inside a character), every bundled tokenizer; compared step by
step with Hugging Face ``tokenizers``' own DecodeStream on the DeepSeek-V4 vocabulary.
"""

from __future__ import annotations

import hypothesis
import hypothesis.strategies as st
import pytest
from conformance.references import env_int

import tokserve
from tokserve import DecodeStream, InvalidUtf8, UnknownTokenId

MAX_EXAMPLES = env_int("TOKSERVE_HYPOTHESIS_MAX_EXAMPLES", 200)
NAMES = ["o200k_base", "cl100k_base", "deepseek-v4"]
TEXTS = ["héllo wörld", "東京タワー 🗼 日本語", "👩‍👩‍👧‍👦 family 🇯🇵 flag", "naïve café",
         "Ελληνικά русский عربى हिन्दी", "\U0001F9D1\u200d\U0001F4BB code", "plain ascii"]


@pytest.fixture(scope="module", params=NAMES)
def tok(request):
    return tokserve.load(request.param)


def _split_ids(tok) -> list[int]:
    """Ids whose bytes are not whole characters (they split a multi-byte character)."""
    out = []
    for text in TEXTS:
        for i in tok.encode(text):
            try:
                tok.decode_bytes([i]).decode("utf-8")
            except UnicodeDecodeError:
                out.append(i)
    return out


def _is_token(tok, i: int) -> bool:
    """Some vocabularies have gaps (cl100k_base: ids 100261-100275 are no token)."""
    try:
        tok.decode_bytes([i])
    except UnknownTokenId:
        return False
    return True


def _run(tok, ids, **kw) -> tuple[list[str | None], str]:
    stream = DecodeStream(tok, **kw)
    deltas = [stream.step(i) for i in ids]
    return deltas, stream.flush()


def test_a_split_character_is_held_back_until_complete(tok):
    ids = tok.encode("東京🗼")
    deltas, tail = _run(tok, ids)
    assert "".join(d or "" for d in deltas) + tail == "東京🗼"
    assert all(d is None or "\ufffd" not in d for d in deltas)
    assert tail == ""
    # id by id decoding is what breaks: at least one id here splits a character
    if any(tok.decode([i]) == "\ufffd" for i in ids):
        assert None in deltas


@hypothesis.settings(max_examples=MAX_EXAMPLES, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(data=st.data())
def test_stream_equals_decode_for_any_ids(tok, data):
    pool = _split_ids(tok)
    real = [i for t in TEXTS for i in tok.encode(t)]
    specials = list(tok.special_tokens.values())[:5]
    ids = data.draw(st.lists(st.one_of(
        st.sampled_from(pool or real), st.sampled_from(real),
        st.integers(0, tok.vocab_size - 1).filter(lambda i: _is_token(tok, i)),
        st.sampled_from(specials)), max_size=40))
    skip = data.draw(st.booleans())
    deltas, tail = _run(tok, ids, skip_special_tokens=skip)
    whole = tok.decode(ids, skip_special_tokens=skip)
    assert "".join(d or "" for d in deltas) + tail == whole
    so_far = ""
    for d in deltas:  # never part of a character: what was sent is never taken back
        assert d != ""  # an empty step answers None
        so_far += d or ""
        assert whole.startswith(so_far)
    # chunked steps give the same text
    stream = DecodeStream(tok, skip_special_tokens=skip)
    cut = data.draw(st.integers(0, len(ids)))
    assert stream.step_many(ids[:cut]) + stream.step_many(ids[cut:]) + stream.flush() == \
        tok.decode(ids, skip_special_tokens=skip)


def test_strict_raises_where_decode_raises(tok):
    ids = tok.encode("日本")
    broken = [i for i in _split_ids(tok)][:1] + tok.encode("ok")
    with pytest.raises(InvalidUtf8) as whole:
        tok.decode(ids[:0] + broken, errors="strict")
    stream = DecodeStream(tok, errors="strict")
    with pytest.raises(InvalidUtf8) as streamed:
        for i in broken:
            stream.step(i)
        stream.flush()
    assert streamed.value.details["position"] == whole.value.details["position"]


def test_unknown_id_consumes_nothing(tok):
    stream = DecodeStream(tok)
    assert stream.step(tok.encode("a")[0]) == "a"
    with pytest.raises(UnknownTokenId):
        stream.step_many([tok.encode("b")[0], tok.vocab_size + 5])
    assert stream.step(tok.encode("c")[0]) == "c" and stream.ids == 2


def test_like_tokenizers_decode_stream_and_never_later():
    """Hugging Face's DecodeStream holds a whole token back while it ends inside a
    character; ours holds back only the unfinished character's bytes. So after every
    step its text so far is a prefix of ours, and at the end the two are equal."""
    tokenizers = pytest.importorskip("tokenizers")
    from shared_files import shared_file
    from tokenizers.decoders import DecodeStream as HFDecodeStream

    ref = tokenizers.Tokenizer.from_file(str(shared_file("artifacts/deepseek-v4/tokenizer.json")))
    ours = tokserve.load("deepseek-v4")
    compared = earlier = 0
    for text in TEXTS + ["".join(TEXTS)]:
        ids = ours.encode(text)
        assert ids == ref.encode(text, add_special_tokens=False).ids
        mine, theirs = DecodeStream(ours), HFDecodeStream(skip_special_tokens=False)
        so_far_mine = so_far_theirs = ""
        for i in ids:
            so_far_mine += mine.step(i) or ""
            so_far_theirs += theirs.step(ref, i) or ""
            assert so_far_mine.startswith(so_far_theirs), (text, i)
            earlier += so_far_mine != so_far_theirs
            compared += 1
        assert so_far_mine + mine.flush() == so_far_theirs == text
    assert compared > 50 and earlier > 0
