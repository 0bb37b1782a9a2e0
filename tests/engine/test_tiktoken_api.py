"""The tiktoken-compatible API (``import tokserve as tiktoken``) against real tiktoken.

Written fresh after the behaviours tiktoken's public test-suite checks (simple ids,
special-token rules, batch, round trips, single tokens, offsets, catastrophic
repetition, pickling, the model table), each compared with tiktoken itself on the same
files. The reference is tiktoken's own registry: its download cache is pointed at a
temporary directory holding the bundled rank files under tiktoken's cache keys, so
``tiktoken.get_encoding`` builds exactly what it builds after a download (its pinned
SHA-256 is checked), with no network.
"""

from __future__ import annotations

import hashlib
import pickle
import shutil

import hypothesis
import hypothesis.strategies as st
import pytest
import tiktoken
import tiktoken.model
import tiktoken.registry

import tokserve
from conformance.references import env_int
from shared_files import shared_file

MAX_EXAMPLES = env_int("TOKSERVE_HYPOTHESIS_MAX_EXAMPLES", 200)
NAMES = ["cl100k_base", "o200k_base"]
_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """tiktoken's registry, fed from a private download cache holding our rank files."""
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for name in NAMES:
        source = shared_file(f"artifacts/openai/{name}.tiktoken")
        key = hashlib.sha1(_BLOB.format(name).encode()).hexdigest()
        shutil.copyfile(source, cache / key)
    patch = pytest.MonkeyPatch()
    patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    tiktoken.registry.ENCODINGS.clear()
    yield tiktoken.get_encoding
    tiktoken.registry.ENCODINGS.clear()
    patch.undo()


@pytest.fixture(scope="module", params=NAMES)
def encs(request, reference):
    """(ours, tiktoken's) for one encoding."""
    return tokserve.get_encoding(request.param), reference(request.param)


# ============================================================================ registry


def test_simple_ids_match_tiktokens_published_examples():
    enc = tokserve.get_encoding("cl100k_base")
    assert enc.encode("hello world") == [15339, 1917]
    assert enc.decode([15339, 1917]) == "hello world"
    assert enc.encode("hello <|endoftext|>", allowed_special="all") == [15339, 220, 100257]
    assert enc.encode("rer") == [38149]
    assert enc.encode("'rer") == [2351, 81]
    assert enc.encode("today\n ") == [31213, 198, 220]
    assert enc.encode("today\n \n") == [31213, 27907]
    assert enc.encode("today\n  \n") == [31213, 14211]
    assert enc.encode(" \x850") == [220, 126, 227, 15]
    assert enc.encode("") == []


def test_get_encoding_is_cached_and_reads_nothing_the_second_time(monkeypatch):
    first = tokserve.get_encoding("o200k_base")

    def no_io(*args, **kwargs):
        raise AssertionError("get_encoding loaded files again")

    monkeypatch.setattr(tokserve.encodings, "_load", no_io)
    assert tokserve.get_encoding("o200k_base") is first


def test_get_encoding_takes_versions_and_paths():
    by_version = tokserve.get_encoding("cl100k_base@1")
    by_path = tokserve.get_encoding(str(tokserve.bundled_root() / "cl100k_base" / "1"))
    assert by_version.name == by_path.name == "cl100k_base"
    assert by_version.encode("hello world") == by_path.encode("hello world") == [15339, 1917]
    deepseek = tokserve.get_encoding("deepseek-v4")
    assert deepseek.decode(deepseek.encode("héllo 世界")) == "héllo 世界"
    ids, spans = deepseek.encode_with_offsets("héllo 世界", units="utf16")
    assert len(ids) == len(spans) and spans[-1][1] == len("héllo 世界")


def test_list_encoding_names_all_load():
    names = tokserve.list_encoding_names()
    assert {"cl100k_base", "o200k_base", "o200k_harmony", "deepseek-v4"} <= set(names)
    for name in names:
        assert tokserve.get_encoding(name).name == name


@pytest.fixture(scope="module")
def gpt2_era_reference(tmp_path_factory):
    """tiktoken's own r50k_base, p50k_base and p50k_edit, read from a private download
    cache holding our bundled rank files: tiktoken accepts a cached file only if its
    sha256 is the one tiktoken pins (else it downloads, which fails here)."""
    cache = tmp_path_factory.mktemp("tiktoken-gpt2-era")
    for stem in ("r50k_base", "p50k_base"):
        key = hashlib.sha1(_BLOB.format(stem).encode()).hexdigest()
        shutil.copyfile(tokserve.bundled_root() / stem / "1" / f"{stem}.tiktoken", cache / key)
    patch = pytest.MonkeyPatch()
    patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    try:
        encodings = {}
        for name in ("r50k_base", "p50k_base", "p50k_edit"):
            tiktoken.registry.ENCODINGS.pop(name, None)
            encodings[name] = tiktoken.get_encoding(name)
    finally:
        patch.undo()
    yield encodings
    for name in encodings:
        tiktoken.registry.ENCODINGS.pop(name, None)


GPT2_ERA_TEXTS = ["hello world", "hello <|endoftext|>", "    indented\n\t\tcode()  ",
                  "<|fim_prefix|>def f(<|fim_suffix|>):<|fim_middle|>", "naïve café 東京 😀",
                  " " * 30 + "x", "12345 67.89 -1e10", "I'm we'll they've"]


@pytest.mark.parametrize("name", ["gpt2", "r50k_base", "p50k_base", "p50k_edit"])
def test_gpt2_era_encodings_are_bundled_and_equal_tiktokens(name, gpt2_era_reference):
    ours = tokserve.get_encoding(name)
    # gpt2 is r50k_base's ranks, pattern and special token under another name
    ref = gpt2_era_reference["r50k_base" if name == "gpt2" else name]
    assert name in tokserve.list_encoding_names() and ours.name == name
    assert (ours.n_vocab, ours.max_token_value, ours.special_tokens_set) == \
        (ref.n_vocab, ref.max_token_value, ref.special_tokens_set)
    assert ours.encode("hello world") == [31373, 995]  # tiktoken's published example
    for text in GPT2_ERA_TEXTS:
        assert ours.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
        assert ours.encode_ordinary(text) == ref.encode_ordinary(text)


def test_unknown_and_wrong_type_names_raise_value_error():
    with pytest.raises(ValueError, match="Unknown encoding"):
        tokserve.get_encoding("no-such-encoding")
    with pytest.raises(ValueError, match="Expected a string"):
        tokserve.get_encoding(123)


# ============================================================================ properties


def test_vocabulary_properties_match(encs):
    ours, ref = encs
    assert ours.n_vocab == ref.n_vocab
    assert ours.max_token_value == ref.max_token_value
    assert ours.eot_token == ref.eot_token
    assert ours.special_tokens_set == ref.special_tokens_set
    assert ours._special_tokens == ref._special_tokens
    assert ours._pat_str == ref._pat_str
    assert ours.token_byte_values() == ref.token_byte_values()
    assert ours._mergeable_ranks == ref._mergeable_ranks
    for token in (0, 1000, ref.eot_token, ref.max_token_value):
        assert ours.is_special_token(token) == ref.is_special_token(token)
    assert repr(ours) == f"<Encoding {ours.name!r}>"


def test_single_token_round_trip_over_the_whole_vocabulary(encs):
    ours, ref = encs
    for token in range(ours.n_vocab):
        try:
            expected = ref.decode_single_token_bytes(token)
        except KeyError:
            with pytest.raises(KeyError):
                ours.decode_single_token_bytes(token)
            continue
        got = ours.decode_single_token_bytes(token)
        assert got == expected, token
        assert ours.encode_single_token(got) == token
    assert ours.encode_single_token("<|endoftext|>") == ref.eot_token
    with pytest.raises(KeyError):
        ours.encode_single_token(b"definitely not one token")


def test_decode_errors_are_key_errors_like_tiktoken(encs):
    ours, ref = encs
    for bad in (ours.n_vocab, 10**7):
        with pytest.raises(KeyError):
            ref.decode([bad])
        with pytest.raises(KeyError, match="Invalid token for decoding"):
            ours.decode([bad])
    with pytest.raises(KeyError):
        ours.decode_single_token_bytes(ours.n_vocab)
    # lossy by default, strict when asked, like bytes.decode
    partial = [ours.encode_single_token(b"\xe4")]  # the first byte of a 3-byte character
    assert ours.decode(partial) == ref.decode(partial)
    with pytest.raises(UnicodeDecodeError):
        ours.decode(partial, errors="strict")


# ============================================================================ special tokens

_TEXT = "<|endoftext|> hello <|fim_prefix|> there <|fim_middle|> and <|endofprompt|>"
_OPTIONS = [
    {},
    {"disallowed_special": ()},
    {"disallowed_special": "all"},
    {"disallowed_special": {"<|endoftext|>"}},
    {"disallowed_special": {"<|fim_prefix|>"}},
    {"allowed_special": "all"},
    {"allowed_special": "all", "disallowed_special": ()},
    {"allowed_special": "all", "disallowed_special": "all"},
    {"allowed_special": "all", "disallowed_special": {"<|endoftext|>"}},
    {"allowed_special": {"<|fim_prefix|>"}, "disallowed_special": ()},
    {"allowed_special": {"<|endoftext|>"}, "disallowed_special": ()},
    {"allowed_special": {"<|endoftext|>"}},
    {"allowed_special": {"<|endofprompt|>", "<|endoftext|>"}, "disallowed_special": ()},
    {"allowed_special": {"<|fim_middle|>"}, "disallowed_special": {"<|fim_suffix|>"}},
]


def _outcome(encode, text, options):
    try:
        return encode(text, **options)
    except ValueError as e:
        return ("ValueError", str(e))


def _options_id(options: dict) -> str:
    """A test id that is the same in every process (a set's repr follows the hash seed,
    and pytest-xdist's workers must collect the same ids)."""
    return repr({k: sorted(v) if isinstance(v, (set, frozenset)) else v
                 for k, v in options.items()})


@pytest.mark.parametrize("options", _OPTIONS, ids=_options_id)
@pytest.mark.parametrize("text", [_TEXT, "plain text only", "x<|endoftext|>y<|endoftext|>"])
def test_special_token_rules_match_tiktoken(encs, text, options):
    ours, ref = encs
    assert _outcome(ours.encode, text, options) == _outcome(ref.encode, text, options)
    assert (_outcome(lambda t, **o: ours.encode_batch([t, "ok"], **o), text, options)
            == _outcome(lambda t, **o: ref.encode_batch([t, "ok"], **o), text, options))


def test_disallowed_special_is_a_value_error_naming_the_literal():
    enc = tokserve.get_encoding("cl100k_base")
    with pytest.raises(ValueError, match="<|fim_prefix|>") as caught:
        enc.encode("a <|fim_prefix|> b")
    assert isinstance(caught.value, tokserve.DisallowedSpecialToken)
    assert caught.value.token == "<|fim_prefix|>"


@pytest.mark.parametrize("name", NAMES)
@hypothesis.given(text=st.text())
@hypothesis.settings(deadline=None, max_examples=MAX_EXAMPLES)
def test_hyp_ordinary_is_encode_with_nothing_disallowed(name, text):
    enc = tokserve.get_encoding(name)
    assert enc.encode_ordinary(text) == enc.encode(text, disallowed_special=())


# ============================================================================ round trips


@pytest.mark.parametrize("value", ["hello", "hello ", "hello  ", " hello", " hello ",
                                   " hello  ", "hello world", "请考试我的软件！12345"])
def test_basic_round_trip(encs, value):
    ours, ref = encs
    assert ours.encode(value) == ref.encode(value)
    assert ours.decode(ours.encode(value)) == value
    assert ours.decode(ours.encode_ordinary(value)) == value


@hypothesis.given(text=st.text(), data=st.data())
@hypothesis.settings(deadline=None, max_examples=MAX_EXAMPLES,
                     suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
def test_hyp_round_trip_and_ids_match(encs, text, data):
    ours, ref = encs
    ids = ours.encode(text, allowed_special="all")
    assert ids == ref.encode(text, allowed_special="all")
    assert ours.decode(ids) == text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def test_surrogates_are_repaired_like_tiktoken():
    enc = tokserve.get_encoding("cl100k_base")
    assert enc.encode("👍") == [9468, 239, 235]
    assert enc.encode("\ud83d\udc4d") == [9468, 239, 235]
    assert enc.encode("\ud83d") == enc.encode("�")


@hypothesis.given(data=st.binary())
@hypothesis.settings(deadline=None, max_examples=MAX_EXAMPLES,
                     suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
def test_hyp_encode_bytes_round_trips_and_matches(encs, data):
    ours, ref = encs
    ids = ours._encode_bytes(data)
    assert ours.decode_bytes(ids) == data
    assert ids == ref._encode_bytes(data)


def test_encode_bytes_examples():
    enc = tokserve.get_encoding("cl100k_base")
    assert enc._encode_bytes(b" \xec\x8b\xa4\xed") == [62085]
    for i in range(10):
        assert enc.decode_bytes(enc._encode_bytes(b"\x80" * i)) == b"\x80" * i


@pytest.mark.parametrize("unit", ["^", "0", "a", "'s", " ", "\n", "\r\n", "ab", "好", "😀"])
def test_catastrophically_repetitive(encs, unit):
    ours, ref = encs
    for value in (unit * 10_000, " " + unit * 10_000, " " + unit * 10_000 + "\n"):
        ids = ours.encode(value)
        assert ids == ref.encode(value)
        assert ours.decode(ids) == value


def test_large_repeated_input_is_encoded():
    enc = tokserve.get_encoding("o200k_base")
    assert enc.encode("x" * 1_000_000)


# ============================================================================ batch


@hypothesis.given(batch=st.lists(st.text()))
@hypothesis.settings(deadline=None, max_examples=MAX_EXAMPLES,
                     suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
def test_hyp_batch_is_a_loop_of_encode(encs, batch):
    ours, ref = encs
    encoded = ours.encode_batch(batch, allowed_special="all")
    assert encoded == [ours.encode(t, allowed_special="all") for t in batch]
    assert encoded == ref.encode_batch(batch, allowed_special="all")
    assert ours.encode_ordinary_batch(batch, num_threads=2) == ref.encode_ordinary_batch(batch)
    assert ours.decode_batch(encoded) == ref.decode_batch(encoded)
    assert ours.decode_bytes_batch(encoded) == ref.decode_bytes_batch(encoded)


def test_batch_of_long_texts_uses_threads_and_matches(encs):
    ours, ref = encs
    texts = [f"document {i}: " + "lorem ipsum dolor sit amet, " * 400 for i in range(8)]
    assert ours.encode_batch(texts, num_threads=2) == ref.encode_batch(texts)


# ============================================================================ offsets


def test_basic_offsets():
    enc = tokserve.get_encoding("cl100k_base")
    cases = {
        "hello world": [0, 5],
        "hello world<|endoftext|> green cow": [0, 5, 11, 24, 30],
        "我非常渴望与人工智能一起工作": [0, 1, 2, 3, 3, 4, 4, 5, 6, 7, 8, 8, 9, 10, 11, 12, 13],
        "நடிகர் சூர்யா": [0, 0, 1, 1, 2, 3, 4, 4, 5, 6, 7, 8, 8, 9, 9, 10, 11, 12, 12],
        " Ġ除": [0, 1],
    }
    for prompt, offsets in cases.items():
        assert enc.decode_with_offsets(enc.encode(prompt, allowed_special="all")) == (
            prompt, offsets)


@hypothesis.given(data=st.data())
@hypothesis.settings(deadline=None, max_examples=MAX_EXAMPLES,
                     suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
def test_hyp_offsets_match_tiktoken(encs, data):
    ours, ref = encs
    tokens = data.draw(st.lists(st.integers(0, ref.max_token_value), min_size=1, max_size=20))
    tokens = [t for t in tokens if t in ref._special_token_values or t < 100_000]
    text = ref.decode(tokens, errors="ignore")
    tokens = ref.encode(text, allowed_special="all")
    assert ours.decode_with_offsets(tokens) == ref.decode_with_offsets(tokens)


def test_encode_with_offsets_units():
    enc = tokserve.get_encoding("o200k_base")
    text = "a😀b"
    ids, spans = enc.encode_with_offsets(text, units="utf16")
    assert enc.decode(ids) == text and spans[-1][1] == 4
    ids, spans = enc.encode_with_offsets(text, units="byte")
    assert spans[-1][1] == len(text.encode())


# ============================================================================ pickling


def test_pickle_registered_encoding_is_the_cached_instance():
    enc = tokserve.get_encoding("cl100k_base")
    assert pickle.loads(pickle.dumps(enc)) is enc


def test_pickle_custom_encoding(reference):
    base = tokserve.get_encoding("cl100k_base")
    custom = tokserve.Encoding(
        name="custom_enc",
        pat_str=base._pat_str,
        mergeable_ranks=base._mergeable_ranks,
        special_tokens={"<|pickle|>": 100_000},
    )
    again = pickle.loads(pickle.dumps(custom))
    assert custom.encode("hello world") == again.encode("hello world") == [15339, 1917]
    assert (custom.encode("<|pickle|>", allowed_special="all")
            == again.encode("<|pickle|>", allowed_special="all") == [100_000])


def test_constructor_with_another_pattern_matches_tiktoken(reference):
    """The regex pre-tokenizer path: cl100k's ranks under GPT-2's (r50k) pattern."""
    base = reference("cl100k_base")
    kwargs = dict(pat_str=tokserve.PRESETS["r50k_base"].pattern,
                  mergeable_ranks=base._mergeable_ranks,
                  special_tokens={"<|endoftext|>": 100257})
    ours = tokserve.Encoding("mixed", **kwargs)
    ref = tiktoken.Encoding("mixed", **kwargs)
    text = ("It's 12345 o'clock;  you've   been\n\n\twaiting 🙂 — don't!  \n" * 50
            + "naïve café 東京 <|endoftext|>  ")
    assert ours.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    assert ours.encode_ordinary(text) == ref.encode_ordinary(text)
    with pytest.raises(ValueError):
        tokserve.Encoding("bad", explicit_n_vocab=5, **kwargs)


# ============================================================================ models


def test_model_table_is_tiktokens():
    exact, prefixes = tokserve.model_table.tiktoken_table()
    assert exact == tiktoken.model.MODEL_TO_ENCODING
    assert prefixes == tiktoken.model.MODEL_PREFIX_TO_ENCODING
    for model in [*exact, *(p + "2099-01-01" for p in prefixes), "gpt-4o-mini", "o1-preview"]:
        assert tokserve.encoding_name_for_model(model) == tiktoken.encoding_name_for_model(model)


def test_encoding_for_model():
    assert tokserve.encoding_for_model("gpt-3.5-turbo-0301").name == "cl100k_base"
    assert tokserve.encoding_for_model("gpt-4").name == "cl100k_base"
    assert tokserve.encoding_for_model("gpt-4o").name == "o200k_base"
    assert tokserve.encoding_for_model("gpt-oss-120b").name == "o200k_harmony"
    # repo ids the bundled manifests declare
    assert tokserve.encoding_for_model("openai/gpt-oss-20b").name == "o200k_harmony"
    assert tokserve.encoding_for_model("deepseek-ai/DeepSeek-V4-Flash").name == "deepseek-v4"
    with pytest.raises(KeyError, match="Could not automatically map"):
        tokserve.encoding_name_for_model("no-such-model")
    assert tokserve.encoding_for_model("gpt2").name == "gpt2"
    assert tokserve.encoding_for_model("text-davinci-003").name == "p50k_base"
    assert tokserve.encoding_for_model("text-davinci-edit-001").name == "p50k_edit"


def test_manifest_models_are_aliases(tmp_path):
    version = tmp_path / "mine" / "1"
    version.mkdir(parents=True)
    (version / "manifest.json").write_text('{"name": "mine", "models": ["org/my-model"]}')
    aliases = tokserve.model_table.manifest_aliases([tmp_path])
    assert aliases == {"org/my-model": "mine"}
    assert tokserve.model_table.resolve_model("org/my-model", aliases) == "mine"
    # tiktoken's exact names win over an alias of the same name
    assert tokserve.model_table.resolve_model("gpt-4", {"gpt-4": "mine"}) == "cl100k_base"


def test_o200k_harmony_matches_tiktoken(reference):
    ours = tokserve.get_encoding("o200k_harmony")
    ref = reference("o200k_harmony")
    assert ours._special_tokens == ref._special_tokens
    text = "<|start|>user<|message|>hi<|end|><|start|>assistant<|channel|>final<|message|>"
    assert ours.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    assert ours.decode(ref.encode(text, allowed_special="all")) == text
    assert ours.eot_token == ref.eot_token
