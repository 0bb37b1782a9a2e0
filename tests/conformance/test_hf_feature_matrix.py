"""Every tokenizer.json feature the engine claims, one at a time, against ``tokenizers``.

The real artifacts exercise only the features their authors picked (DeepSeek-V4: a Split
Sequence, no normalizer, no post-processor). Here a small byte-level BPE is trained with
``tokenizers`` itself (seeded corpus, no files, no network), and each case rewrites one
part of its JSON: normalizers (NFC, NFKC, NFD, NFKD, Sequence), pre-tokenizers (Split
with Regex or String patterns in every behaviour, inverted or not; ByteLevel with
add_prefix_space and use_regex; Digits; Sequence), ``ignore_merges``, added tokens (special
or not, lstrip, rstrip, single_word, normalized) and post-processors (TemplateProcessing,
ByteLevel, Sequence). Both sides load the same JSON text; ids must be equal on a slice of
the differential corpus plus texts aimed at the feature, with and without
add_special_tokens. A disagreement is reported minimized (``diff.minimize``).
"""

from __future__ import annotations

import copy
import functools
import json

import pytest
import regex

import tokserve
from corpus import build_corpus, is_valid_text

from .diff import minimize

tokenizers = pytest.importorskip("tokenizers")

_GPT2_SPLIT = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

#: texts aimed at the features (added-token flags, digits, spaces, compatibility forms)
AIMED = [
    "", " ", "  ", "a", " a", "hello world", "  leading and trailing  ", "\tTab\tsep\n",
    "x<sp>y", " <sp> ", "a  <sp>  b", "<sp><sp>", "word<lst>", "word   <lst>", "<rst>   next",
    "in<sw>side", "a <sw> b", "_<sw>_", "é<sw>", "<sw>", "<sw>x", "x <sw>", "<nrm>",
    "ＡＢＣ＜ｎｒｍ＞", "ﬁle <nrm> ﬂow", "Ⅻ ², ½ ①", "e\u0301t\u00e9", "Å vs A\u030a",
    "1234567 ٣٤٥ ۱۲ १२३ ²³ 12.5e-3", "abc123def456", "999999999999",
    "x٣y a²b n१२k v1٣ ⅫX 7½", "ab12٣٤cd",
    "don't DON'T it'll we'VE", "😀👍🏽👨‍👩‍👧 ok", "中文字符测试 日本語 한국어",
    "\u3000全角\u3000space", "line1\r\nline2\n\n\nline3", "trailing spaces   ",
    "<|bos|>mid<|eos|>", "<sp>hello<sp>", "<sp>x", "a<sp>xb", "<sp<sp>x>x", "the the the", "isolated,split;here",
]

ADDED = [  # content, special, lstrip, rstrip, single_word, normalized
    ("<sp>", True, False, False, False, False),
    ("<lst>", True, True, False, False, False),
    ("<rst>", False, False, True, False, False),
    ("<sw>", False, False, False, True, False),
    ("<nrm>", False, False, False, False, True),
    ("<|bos|>", True, False, False, False, False),
    ("<|eos|>", True, False, False, False, False),
    ("<sp>x", False, False, False, False, True),  # found only after <sp>'s pass
]


@functools.lru_cache(maxsize=1)
def _texts() -> tuple[str, ...]:
    """~120 KB: every aimed family of the corpus, a few mixed documents, the aimed texts."""
    cases = build_corpus(0.6)
    picked: list[str] = []
    seen: dict[str, int] = {}
    for case in cases:
        family = case.label.split("/")[0].split("#")[0]
        if not is_valid_text(case.text) or seen.get(family, 0) >= 25:
            continue
        seen[family] = seen.get(family, 0) + 1
        picked.append(case.text[:3000])
    return tuple(picked + AIMED)


@functools.lru_cache(maxsize=1)
def _base_spec() -> str:
    """A 2,000-token byte-level BPE trained by ``tokenizers`` on the corpus slice."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=2000, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(list(_texts()) * 2, trainer=trainer)
    spec = json.loads(tok.to_str())
    size = tok.get_vocab_size()
    spec["added_tokens"] = [
        {"id": size + i, "content": content, "special": special, "lstrip": lstrip,
         "rstrip": rstrip, "single_word": single_word, "normalized": normalized}
        for i, (content, special, lstrip, rstrip, single_word, normalized) in enumerate(ADDED)
    ]
    return json.dumps(spec)


def _byte_level(prefix: bool = False, regex: bool = True) -> dict:
    return {"type": "ByteLevel", "add_prefix_space": prefix, "trim_offsets": True,
            "use_regex": regex}


def _split(pattern: dict, behavior: str, invert: bool = False) -> dict:
    return {"type": "Split", "pattern": pattern, "behavior": behavior, "invert": invert}


def _seq(*children: dict) -> dict:
    return {"type": "Sequence", "pretokenizers": list(children)}


def _template(single: list) -> dict:
    return {
        "type": "TemplateProcessing", "single": single,
        "pair": single + [{"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {
            "<|bos|>": {"id": "<|bos|>", "ids": [2005], "tokens": ["<|bos|>"]},
            "<|eos|>": {"id": "<|eos|>", "ids": [2006], "tokens": ["<|eos|>"]},
        },
    }


_BOS = {"SpecialToken": {"id": "<|bos|>", "type_id": 0}}
_EOS = {"SpecialToken": {"id": "<|eos|>", "type_id": 0}}
_A = {"Sequence": {"id": "A", "type_id": 0}}

_BEHAVIORS = ("Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous")

CASES: dict[str, dict] = {
    "plain": {},
    # normalizers
    **{f"normalizer-{form}": {"normalizer": {"type": form}}
       for form in ("NFC", "NFKC", "NFD", "NFKD")},
    "normalizer-sequence": {"normalizer": {"type": "Sequence", "normalizers": [
        {"type": "NFD"}, {"type": "NFKC"}]}},
    "normalizer-empty-sequence": {"normalizer": {"type": "Sequence", "normalizers": []}},
    # ByteLevel flags
    "bytelevel-prefix": {"pre_tokenizer": _byte_level(prefix=True)},
    "bytelevel-no-regex": {"pre_tokenizer": _byte_level(regex=False)},
    "bytelevel-prefix-no-regex": {"pre_tokenizer": _byte_level(prefix=True, regex=False)},
    # Split: every behaviour, Regex and String patterns, inverted or not
    **{f"split-regex-{b}-{inv}": {"pre_tokenizer": _seq(
        _split({"Regex": r"\s+|\p{P}"}, b, inv), _byte_level(regex=False))}
       for b in _BEHAVIORS for inv in (False, True)},
    **{f"split-string-{b}-{inv}": {"pre_tokenizer": _seq(
        _split({"String": " "}, b, inv), _byte_level(regex=False))}
       for b in _BEHAVIORS for inv in (False, True)},
    "split-gpt2-then-bytelevel-prefix": {"pre_tokenizer": _seq(
        _split({"Regex": _GPT2_SPLIT}, "Isolated"), _byte_level(prefix=True, regex=False))},
    # Digits
    "digits-individual": {"pre_tokenizer": _seq(
        {"type": "Digits", "individual_digits": True}, _byte_level())},
    "digits-individual-no-regex": {"pre_tokenizer": _seq(
        {"type": "Digits", "individual_digits": True}, _byte_level(regex=False))},
    "digits-runs": {"pre_tokenizer": _seq(
        {"type": "Digits", "individual_digits": False}, _byte_level(regex=False))},
    "digits-nfkc": {"normalizer": {"type": "NFKC"}, "pre_tokenizer": _seq(
        {"type": "Digits", "individual_digits": True}, _byte_level(prefix=True))},
    # model flag
    "ignore-merges": {"model.ignore_merges": True},
    "ignore-merges-nfkc": {"model.ignore_merges": True, "normalizer": {"type": "NFKC"}},
    # post-processors
    "post-template-bos-eos": {"post_processor": _template([_BOS, _A, _EOS])},
    "post-template-bos": {"post_processor": _template([_BOS, _A])},
    "post-bytelevel": {"post_processor": {"type": "ByteLevel", "add_prefix_space": False,
                                          "trim_offsets": True, "use_regex": True}},
    "post-sequence": {"post_processor": {"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
         "use_regex": True},
        _template([_BOS, _A, _EOS])]}},
    # added tokens under a normalizer that changes them (the normalized flag matters)
    "added-nfkc": {"normalizer": {"type": "NFKC"}},
    "added-nfkc-prefix": {"normalizer": {"type": "NFKC"}, "pre_tokenizer": _byte_level(True)},
}


def _spec_for(case: str) -> str:
    spec = json.loads(_base_spec())
    for key, value in CASES[case].items():
        if key.startswith("model."):
            spec["model"][key.split(".", 1)[1]] = value
        else:
            spec[key] = copy.deepcopy(value)
    return json.dumps(spec)


@pytest.mark.parametrize("case", list(CASES))
def test_feature_ids_equal_tokenizers(case, tmp_path):
    text_spec = _spec_for(case)
    ref = tokenizers.Tokenizer.from_str(text_spec)
    path = tmp_path / "tokenizer.json"
    path.write_text(text_spec, encoding="utf-8")
    ours = tokserve.load(path)

    def theirs(text: str, add: bool) -> list[int]:
        return ref.encode(text, add_special_tokens=add).ids

    def mine(text: str, add: bool) -> list[int]:
        return ours.encode(text, special_tokens="allow", add_special_tokens=add)

    mismatches = []
    for text in _texts():
        for add in (False, True):
            if mine(text, add) != theirs(text, add):
                small = minimize(text, lambda t, a=add: mine(t, a) != theirs(t, a))
                mismatches.append((add, small, mine(small, add), theirs(small, add)))
                break
        if len(mismatches) >= 3:
            break
    assert not mismatches, f"{case}: (add_special_tokens, text, ours, tokenizers) {mismatches}"


@pytest.mark.parametrize("case", list(CASES))
def test_feature_offsets_stay_ordered_and_in_bounds(case, tmp_path):
    """Whatever a stage inserts (prefix space), removes (Split Removed) or rewrites
    (normalizers), offsets point into the original text, in order; with no such stage
    they cover the whole input."""
    path = tmp_path / "tokenizer.json"
    path.write_text(_spec_for(case), encoding="utf-8")
    ours = tokserve.load(path)
    for text in AIMED:
        ids, offsets = ours.encode_with_offsets(text, units="char", special_tokens="allow")
        assert len(ids) == len(offsets)
        starts = [s for s, _ in offsets]
        assert starts == sorted(starts), (text, offsets)
        assert all(0 <= s <= e <= len(text) for s, e in offsets), (text, offsets)
        if case == "plain":  # every character covered, in order (a token that holds
            covered = 0      # part of a character covers all of it, so spans may repeat)
            for start, end in offsets:
                assert start <= covered, (text, offsets)
                covered = max(covered, end)
            assert covered == len(text), (text, offsets)


def _load(case: str, tmp_path) -> tokserve.Tokenizer:
    path = tmp_path / "tokenizer.json"
    path.write_text(_spec_for(case), encoding="utf-8")
    return tokserve.load(path)


def test_normalized_token_policies_and_offsets(tmp_path):
    """A normalized=true token spelled in compatibility forms: found after NFKC, so
    ``reject`` names it at its original position, ``text`` leaves the characters
    alone, and under ``allow`` its offsets cover the original (full-width) characters."""
    ours = _load("added-nfkc", tmp_path)
    text = "ab ＜ｎｒｍ＞ cd"
    with pytest.raises(tokserve.SpecialTokenInText) as info:
        ours.encode(text)
    assert info.value.details["literals"] == ["<nrm>"]
    assert info.value.details["positions"] == [3]
    assert ours.find_literals(text) == [("<nrm>", 3)]
    nrm = ours.special_tokens["<nrm>"]
    assert nrm not in ours.encode(text, special_tokens="text")
    ids, offsets = ours.encode_with_offsets(text, special_tokens="allow")
    assert ids == ours.encode(text, special_tokens="allow")
    assert offsets[ids.index(nrm)] == (3, 8)
    assert ours.count(text, special_tokens="allow") == len(ids)
    assert ours.encode_batch([text, "x" * 3000, text], special_tokens="allow",
                             num_threads=2)[2] == ids


def test_normalized_token_respects_plain_ranges(tmp_path):
    """Chat rendering exempts message content from literal matching; the second pass
    honours that too (the range is in original characters)."""
    ours = _load("added-nfkc", tmp_path)
    text = "＜ｎｒｍ＞|＜ｎｒｍ＞"
    nrm = ours.special_tokens["<nrm>"]
    ids = ours.encode(text, special_tokens="allow", plain_ranges=[(0, 5)])
    assert ids.count(nrm) == 1 and ids[-1] == nrm


@pytest.mark.parametrize("individual", [True, False])
def test_digits_pieces_equal_tokenizers_on_every_code_point(individual):
    """Digits splits on Rust's is_numeric, whose Unicode version is not Oniguruma's:
    every numeric character of any Unicode version we know of, and a sample of all the
    others, is split the same way by both."""
    import unicodedata2

    from tokserve.pre_tokenizers.pre_tokenizer import PreTokenizer

    scalars = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    numeric = regex.compile(r"\p{N}")
    picked = [c for c in scalars if c % 61 == 0 or numeric.match(chr(c))
              or unicodedata2.category(chr(c)).startswith("N")]
    text = "".join("a" + chr(c) + "9" for c in picked)
    spec = {"type": "Digits", "individual_digits": individual}
    ref = tokenizers.pre_tokenizers.Digits(individual).pre_tokenize_str(text)
    ours = PreTokenizer(spec, "tokenizers").split(text)
    assert [piece for piece, _ in ours] == [piece for piece, _ in ref]
