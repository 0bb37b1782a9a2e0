"""Every SentencePiece-family tokenizer, exact against its references on the piece corpus.

Written against the public API only (``tokserve.load``, ``encode``, ``encode_with_offsets``,
``count``, ``encode_batch``, ``decode``, ``DecodeStream``), so that it checks whatever
engine implements the family. For each of Llama 2, TinyLlama, Phi-3-mini, Mistral v0.1 and
v0.3, Gemma, Gemma 3, Yi and T5 (``../shared/artifacts/<dir>/tokenizer.json``), against
Hugging Face ``tokenizers`` loading the same file, on ``corpus.pieces`` plus texts around
the file's own added literals:

* ids without and with special tokens (ours under ``special_tokens="allow"``, which is
  what ``tokenizers`` does with literals in text);
* code-point offsets, paired with their ids, without and with special tokens;
* ``decode`` of the reference's ids with ``skip_special_tokens`` False and True, and of
  seeded random id sequences (byte-fallback pieces that do not form UTF-8 included);
* ours against ours: ``count == len(encode)``, ``encode_batch``/``count_batch`` equal to
  one text at a time;
* ``DecodeStream`` fed id by id gives exactly ``decode(all)`` and never takes back what it
  sent (so never a U+FFFD for half a character of a ``<0xNN>`` run).

And for the three SentencePiece ``tokenizer.model`` files: ``tokserve.load(model)`` against
``sentencepiece`` itself on the ordinary texts (no literals: sentencepiece never matches
control symbols in text), ours under ``special_tokens="text"``.

A mismatch is reported with the text, both sides around the first differing position with
the pieces there, and a minimal input (``conformance.diff.minimize``).

``TOKSERVE_FAMILIES=deepseek-v4`` (comma-separated names) runs a subset; ``deepseek-v4`` is
not in the default set: it is the byte-level control that loads today, to check this
harness itself. A missing shared file skips its tokenizer, naming the file. The loads are
the slow part: each tokenizer is loaded once per module.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
import tokserve
from conformance.diff import minimize
from corpus import Case
from corpus.pieces import build_piece_corpus, ordinary, own_literal_cases
from shared_files import shared_file

tokenizers = pytest.importorskip("tokenizers")

#: name -> tokenizer.json under ../shared/artifacts
FAMILIES: dict[str, str] = {
    "llama2": "llama2/tokenizer.json",
    "tinyllama": "tinyllama/tokenizer.json",
    "phi3-mini": "phi3-mini/tokenizer.json",
    "mistral-v0.1": "mistral-v0.1/tokenizer.json",
    "mistral-v0.3": "mistral-v0.3/tokenizer.json",
    "gemma": "gemma/tokenizer.json",
    "gemma3": "gemma3/tokenizer.json",
    "yi": "yi/tokenizer.json",
    "t5-small": "t5-small/tokenizer.json",
}
#: byte-level tokenizer.json files that load today: select them to check the harness
CONTROLS: dict[str, str] = {"deepseek-v4": "deepseek-v4/tokenizer.json"}
#: name -> SentencePiece model under ../shared/artifacts
SPM_MODELS: dict[str, str] = {
    "llama2": "llama2/tokenizer.model",
    "mistral-v0.1": "mistral-v0.1/tokenizer.model",
    "mistral-v0.3": "mistral-v0.3/tokenizer.model",
}
BYTE_PIECE = re.compile(r"<0x[0-9A-F]{2}>")
SHOW = 5    # mismatches described per test
SHRINK = 2  # of which shrunk to a minimal input


def _selected(names: Sequence[str]) -> list[str]:
    raw = os.environ.get("TOKSERVE_FAMILIES", "").strip()
    if not raw:
        return [n for n in names if n in FAMILIES]
    return [n for n in raw.split(",") if n in names]


# ============================================================================ the pair


@dataclass
class Pair:
    """Ours and ``tokenizers`` on one file, the corpus, and the reference's encodings
    (computed once: every test of the module reads them)."""

    name: str
    path: Path
    ref: Any
    ours_or_error: Any
    cases: list[Case] = field(default_factory=list)

    @property
    def ours(self) -> Any:
        if isinstance(self.ours_or_error, Exception):
            exc = self.ours_or_error
            pytest.fail(f"tokserve.load({str(self.path)!r}) failed: {type(exc).__name__}: {exc}",
                        pytrace=False)
        return self.ours_or_error

    @cached_property
    def ref_plain(self) -> list[Any]:
        return [self.ref.encode(c.text, add_special_tokens=False) for c in self.cases]

    @cached_property
    def ref_full(self) -> list[Any]:
        return [self.ref.encode(c.text, add_special_tokens=True) for c in self.cases]

    def encodings(self, add_special_tokens: bool) -> list[Any]:
        return self.ref_full if add_special_tokens else self.ref_plain

    @cached_property
    def vocab(self) -> dict[str, int]:
        return self.ref.get_vocab(with_added_tokens=True)

    def piece(self, token_id: Any) -> str | None:
        return self.ref.id_to_token(token_id) if isinstance(token_id, int) else None


@pytest.fixture(scope="module", params=_selected(list(FAMILIES) + list(CONTROLS)))
def pair(request) -> Pair:
    name = request.param
    path = shared_file(f"artifacts/{(FAMILIES | CONTROLS)[name]}")
    ref = tokenizers.Tokenizer.from_file(str(path))
    try:
        ours: Any = tokserve.load(str(path))
    except Exception as exc:  # noqa: BLE001 - every test reports it as its failure
        ours = exc
    literals = sorted(t.content for t in ref.get_added_tokens_decoder().values())
    # every other text of the corpus (~540: every family of it still there; the whole
    # corpus doubles the suite's longest file) plus the file's own literals
    cases = list(build_piece_corpus())[::2] + own_literal_cases(literals)
    return Pair(name, path, ref, ours, cases)


# ============================================================================ reporting


def first_difference(expected: Sequence[Any], got: Sequence[Any]) -> int:
    """The first position where the sequences differ (the shorter length if one is a
    prefix of the other)."""
    for k, (a, b) in enumerate(zip(expected, got)):
        if a != b:
            return k
    return min(len(expected), len(got))


def _ids_of(values: Sequence[Any]) -> list[Any]:
    return [v[0] if isinstance(v, tuple) and v and isinstance(v[0], int) else v for v in values]


def describe(pair: Pair, what: str, label: str, text: str, expected: Any, got: Any) -> str:
    """The text, both sides around the first difference, and the pieces there."""
    if isinstance(expected, str) and isinstance(got, str):  # decoded text
        k = first_difference(expected, got)
        return (f"{pair.name} {what} [{label}] text {_clip(text)}\n"
                f"    first difference at character {k} (lengths {len(expected)} expected, "
                f"{len(got)} got)\n"
                f"    expected[{max(0, k - 20)}:{k + 20}] {expected[max(0, k - 20):k + 20]!r}\n"
                f"    got     [{max(0, k - 20)}:{k + 20}] {got[max(0, k - 20):k + 20]!r}")
    if not (isinstance(expected, Sequence) and isinstance(got, Sequence)) or \
            isinstance(expected, str) or isinstance(got, str):  # a crash, a count
        return (f"{pair.name} {what} [{label}] text {_clip(text)}:\n"
                f"    expected {_clip(expected)}\n    got      {_clip(got)}")
    k = first_difference(expected, got)
    lo, hi = max(0, k - 4), k + 6
    lines = [f"{pair.name} {what} [{label}] text {_clip(text)} ({len(text)} chars)",
             (f"    first difference at position {k} (lengths {len(expected)} expected, "
              f"{len(got)} got)")]
    for side, values in (("expected", expected), ("got     ", got)):
        window = list(values[lo:hi])
        pieces = [pair.piece(i) for i in _ids_of(window)]
        lines.append(f"    {side}[{lo}:{hi}] {window}")
        lines.append(f"    {'pieces':8}[{lo}:{hi}] {pieces}")
    return "\n".join(lines)


def _clip(value: Any, limit: int = 240) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else f"{shown[:limit // 2]}…{shown[-limit // 2:]}"


def _outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, or the exception as a comparable value (a crash is a
    mismatch)."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - reported, never hidden
        return f"<{type(exc).__name__}: {exc}>"


class Mismatches:
    """Collects the disagreements of one test and fails it with the first few."""

    def __init__(self, pair: Pair, what: str) -> None:
        self.pair, self.what = pair, what
        self.lines: list[str] = []
        self.total = self.cases = 0

    def check(self, case: Case, expected: Any, got: Any,
              redo: Callable[[str], tuple[Any, Any]] | None = None,
              decoded: list[int] | None = None) -> None:
        """Compare; on a difference, describe it and (for the first few) shrink the text
        with ``redo(text) -> (expected, got)``. ``decoded``: the ids a decode test decoded
        (shown with their pieces)."""
        self.cases += 1
        if expected == got:
            return
        self.total += 1
        if len(self.lines) >= SHOW:
            return
        text = describe(self.pair, self.what, case.label, case.text, expected, got)
        if decoded is not None:
            text += (f"\n    decoded ids {_clip(decoded, 400)}"
                     f"\n    pieces {_clip([self.pair.piece(i) for i in decoded], 400)}")
        if redo is not None and len(self.lines) < SHRINK and len(case.text) > 1:
            small = minimize(case.text, lambda t: _differs(redo, t), budget=300)
            a, b = redo(small)
            text += f"\n    minimal input {small!r}: expected {_clip(a)} got {_clip(b)}"
        self.lines.append(text)

    def fail_if_any(self) -> None:
        if self.total:
            head = (f"{self.total} of {self.cases} cases differ for {self.pair.name} "
                    f"{self.what} ({self.pair.path}):")
            pytest.fail("\n".join([head, *self.lines]), pytrace=False)


def _differs(redo: Callable[[str], tuple[Any, Any]], text: str) -> bool:
    a, b = redo(text)
    return a != b


# ============================================================================ encode


@pytest.mark.parametrize("add_special_tokens", [False, True], ids=["plain", "with-specials"])
def test_ids_equal_tokenizers(pair: Pair, add_special_tokens: bool) -> None:
    ours, ref = pair.ours, pair.ref

    def redo(text: str) -> tuple[Any, Any]:
        return (ref.encode(text, add_special_tokens=add_special_tokens).ids,
                _outcome(ours.encode, text, special_tokens="allow",
                         add_special_tokens=add_special_tokens))

    report = Mismatches(pair, f"ids add_special_tokens={add_special_tokens}")
    for case, enc in zip(pair.cases, pair.encodings(add_special_tokens)):
        got = _outcome(ours.encode, case.text, special_tokens="allow",
                       add_special_tokens=add_special_tokens)
        report.check(case, enc.ids, got, redo)
    report.fail_if_any()


@pytest.mark.parametrize("add_special_tokens", [False, True], ids=["plain", "with-specials"])
def test_char_offsets_equal_tokenizers(pair: Pair, add_special_tokens: bool) -> None:
    """(id, code-point span) per token, both sides: tokenizers' Encoding.offsets are in
    code points for a Python ``str``."""
    ours, ref = pair.ours, pair.ref

    def ours_pairs(text: str) -> Any:
        ids, offsets = ours.encode_with_offsets(text, units="char", special_tokens="allow",
                                                add_special_tokens=add_special_tokens)
        return [(i, tuple(o)) for i, o in zip(ids, offsets, strict=True)]

    def redo(text: str) -> tuple[Any, Any]:
        enc = ref.encode(text, add_special_tokens=add_special_tokens)
        return list(zip(enc.ids, enc.offsets)), _outcome(ours_pairs, text)

    report = Mismatches(pair, f"char offsets add_special_tokens={add_special_tokens}")
    for case, enc in zip(pair.cases, pair.encodings(add_special_tokens)):
        report.check(case, list(zip(enc.ids, enc.offsets)),
                     _outcome(ours_pairs, case.text), redo)
    report.fail_if_any()


def test_count_and_batch_equal_encode(pair: Pair) -> None:
    """Ours against ours: the invariants tokenizer.py promises, on this family."""
    ours = pair.ours
    texts = [c.text for c in pair.cases]
    for add in (False, True):
        report = Mismatches(pair, f"count/batch vs encode add_special_tokens={add}")
        single = [_outcome(ours.encode, t, special_tokens="allow", add_special_tokens=add)
                  for t in texts]
        batches = {threads: _outcome(ours.encode_batch, texts, special_tokens="allow",
                                     add_special_tokens=add, num_threads=threads)
                   for threads in (None, 2)}
        counts = _outcome(ours.count_batch, texts, special_tokens="allow",
                          add_special_tokens=add, num_threads=2)
        for threads, batch in batches.items():
            if isinstance(batch, str):
                pytest.fail(f"encode_batch(num_threads={threads}) raised {batch}", pytrace=False)
        if isinstance(counts, str):
            pytest.fail(f"count_batch raised {counts}", pytrace=False)
        for k, (case, ids) in enumerate(zip(pair.cases, single)):
            n = len(ids) if isinstance(ids, list) else ids
            report.check(case, n, _outcome(ours.count, case.text, special_tokens="allow",
                                           add_special_tokens=add))
            report.check(case, n, counts[k])
            for batch in batches.values():
                report.check(case, ids, batch[k])
        report.fail_if_any()


# ============================================================================ decode


@pytest.mark.parametrize("skip", [False, True], ids=["keep-specials", "skip-specials"])
def test_decode_equals_tokenizers(pair: Pair, skip: bool) -> None:
    """Decode of the reference's ids (with the post-processor's, so BOS/EOS are in)."""
    ours, ref = pair.ours, pair.ref
    report = Mismatches(pair, f"decode skip_special_tokens={skip}")
    for case, enc in zip(pair.cases, pair.ref_full):
        report.check(case, ref.decode(enc.ids, skip_special_tokens=skip),
                     _outcome(ours.decode, enc.ids, skip_special_tokens=skip),
                     decoded=enc.ids)
    report.fail_if_any()


def _random_id_lists(pair: Pair, count: int = 200) -> list[list[int]]:
    """Seeded id sequences that encode cannot give: byte pieces that are not UTF-8 (lone
    continuation bytes, cut characters), specials anywhere, any piece next to any other."""
    vocab = pair.vocab
    byte_ids = sorted(i for piece, i in vocab.items() if BYTE_PIECE.fullmatch(piece))
    specials = sorted(pair.ref.get_added_tokens_decoder())
    every = sorted(vocab.values())
    rng = random.Random(30)
    out = []
    for _ in range(count):
        ids = []
        for _ in range(rng.randint(1, 24)):
            r = rng.random()
            if r < 0.4 and byte_ids:
                ids.append(rng.choice(byte_ids))
            elif r < 0.5 and specials:
                ids.append(rng.choice(specials))
            else:
                ids.append(rng.choice(every))
        out.append(ids)
    return out


def test_decode_random_ids_equals_tokenizers(pair: Pair) -> None:
    ours, ref = pair.ours, pair.ref
    for skip in (False, True):
        report = Mismatches(pair, f"decode of random ids skip_special_tokens={skip}")
        for k, ids in enumerate(_random_id_lists(pair)):
            report.check(Case(f"random-ids/{k}", ""), ref.decode(ids, skip_special_tokens=skip),
                         _outcome(ours.decode, ids, skip_special_tokens=skip),
                         decoded=ids)
        report.fail_if_any()


def _stream_cases(pair: Pair) -> list[tuple[Case, Any]]:
    wanted = ("fallback/", "emoji/", "combining/", "script/sentence/", "fullwidth/",
              "literal/chat/", "meta/", "space/")
    return [(c, enc) for c, enc in zip(pair.cases, pair.ref_full)
            if c.label.startswith(wanted) and len(c.text) < 2000]


def test_decode_stream_id_by_id_equals_decode(pair: Pair) -> None:
    """Fed one id at a time, the deltas joined with ``flush()`` are ``decode(all)``, and no
    delta is ever taken back: a character split across ``<0xNN>`` pieces is held until
    it is complete, never sent as U+FFFD."""
    ours = pair.ours
    held_back = byte_runs = 0
    for skip in (False, True):
        report = Mismatches(pair, f"DecodeStream skip_special_tokens={skip}")
        for case, enc in _stream_cases(pair):
            ids = enc.ids
            whole = _outcome(ours.decode, ids, skip_special_tokens=skip)
            stream = tokserve.DecodeStream(ours, skip_special_tokens=skip)
            deltas = [_outcome(stream.step, i) for i in ids]
            deltas.append(_outcome(stream.flush))
            sent, broken = "", None
            for k, delta in enumerate(deltas):
                sent += delta or ""
                if broken is None and isinstance(whole, str) and not whole.startswith(sent):
                    broken = (k, delta)
            report.check(case, whole, sent)
            report.check(case, None, broken and f"step {broken[0]} sent {broken[1]!r}, "
                                               f"which decode(all) does not have there")
            pieces = [pair.piece(i) or "" for i in ids]
            if any(BYTE_PIECE.fullmatch(p) for p in pieces):
                byte_runs += 1
                held_back += None in deltas[:-1]
        report.fail_if_any()
    if any(BYTE_PIECE.fullmatch(p) for p in pair.vocab):  # a byte-fallback family
        assert byte_runs and held_back, (
            f"{pair.name}: the stream cases should hold <0xNN> runs whose characters the "
            f"stream holds back ({byte_runs} cases with byte pieces, {held_back} held back)")


# ============================================================================ sentencepiece


@dataclass
class SpmPair:
    name: str
    path: Path
    spm: Any
    ours_or_error: Any
    cases: list[Case]


@pytest.fixture(scope="module", params=_selected(list(SPM_MODELS)))
def spm_pair(request) -> SpmPair:
    sentencepiece = pytest.importorskip("sentencepiece")
    name = request.param
    path = shared_file(f"artifacts/{SPM_MODELS[name]}")
    sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
    try:
        ours: Any = tokserve.load(str(path))
    except Exception as exc:  # noqa: BLE001 - the test reports it as its failure
        ours = exc
    controls = [sp.id_to_piece(i) for i in range(sp.get_piece_size())
                if sp.is_control(i) or sp.is_unknown(i)]
    return SpmPair(name, path, sp, ours, ordinary(build_piece_corpus(), controls))


def test_model_file_ids_equal_sentencepiece(spm_pair: SpmPair) -> None:
    if isinstance(spm_pair.ours_or_error, Exception):
        exc = spm_pair.ours_or_error
        pytest.fail(f"tokserve.load({str(spm_pair.path)!r}) failed: {type(exc).__name__}: "
                    f"{exc}", pytrace=False)
    ours, sp = spm_pair.ours_or_error, spm_pair.spm
    shown = Pair(spm_pair.name + " (.model)", spm_pair.path, _SpmPieces(sp), ours)

    def redo(text: str) -> tuple[Any, Any]:
        return sp.encode(text), _outcome(ours.encode, text, special_tokens="text")

    report = Mismatches(shown, "ids vs sentencepiece")
    for case in spm_pair.cases:
        report.check(case, sp.encode(case.text),
                     _outcome(ours.encode, case.text, special_tokens="text"), redo)
    report.fail_if_any()


class _SpmPieces:
    """Just enough of a tokenizers.Tokenizer for ``describe`` to name pieces."""

    def __init__(self, sp: Any) -> None:
        self.sp = sp

    def id_to_token(self, token_id: int) -> str | None:
        return self.sp.id_to_piece(token_id) if 0 <= token_id < self.sp.get_piece_size() else None
