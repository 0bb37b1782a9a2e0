"""Byte-level BPE training into a tiktoken-format artifact the engine loads.

Pipeline (the hot loops are in ``_trainer.pyx``):

1. **Count pieces, in parallel and streaming.** The corpus bytes are cut into ranges, one
   task each, counted by a process pool; a task reads its range in blocks, so memory is
   bounded by the number of distinct pieces, not by the corpus size. Inside a block the
   text is first split on the special-token literals (they are removed: no merge may
   span or contain them), then pre-tokenized with the pattern: by the engine's compiled
   scanner when the pattern is one of its families (the same code that encodes later),
   otherwise by the ``regex`` module with tiktoken's semantics (``adapt_pattern``).
   Invalid UTF-8 is replaced by U+FFFD.
2. **Merge.** ``_trainer.MergeTrainer`` keeps the weighted piece types, pair counts and
   pair positions exact after every merge, with a lazily cleaned max-heap.

Invariants:

* Block and range cuts are made only just after a ``\\n`` that is followed by a
  non-whitespace character (and never inside a special token). For every preset pattern
  (cl100k_base, o200k_base, llama3, qwen) no piece spans such a point, so counts equal
  those of pre-tokenizing each whole file (tested). For a custom pattern this is the
  documented rule: a line start after a newline is a piece boundary.
* Deterministic tie-break: highest count, then the lexicographically greatest pair
  ``(left bytes, right bytes)`` as Python compares ``bytes``. The result does not depend
  on the number of workers, the block size or the order of files' completion.
* ``ranks[i]`` is the token of rank/id ``i``; the first 256 are the single bytes in byte
  order; ``ranks`` holds each byte string once. A merge whose result already is a token
  reuses it (recorded in ``merges``, adds no rank), so ``len(merges) >= len(ranks) - 256``.
* ``vocab_size`` counts the special tokens, which get the ids after the ranks.
"""

from __future__ import annotations

import base64
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from ...errors import EngineError
from ...patterns import family_for_pattern, resolve_pattern
from ...pre_tokenizers.pattern_check import check_pattern
from ...versions import Manifest, check_name
from . import _trainer

_BLOCK = 4 << 20  # bytes read per block inside a task
_MIN_TASK = 1 << 20
_MAX_TASK = 64 << 20

TIE_BREAK = ("highest count, then the lexicographically greatest (left bytes, right bytes) "
             "pair compared as byte strings")


@dataclass
class TrainResult:
    """What training produced; ``ranks`` index = rank = token id."""

    ranks: list[bytes]
    merges: list[tuple[bytes, bytes]]
    merge_counts: list[int] = field(default_factory=list)  # pair count when merged
    pattern: str = ""
    special_tokens: list[str] = field(default_factory=list)
    pieces: int = 0         # pre-tokenized pieces counted (with multiplicity)
    piece_types: int = 0    # distinct pieces
    corpus_bytes: int = 0


# ------------------------------------------------------------------ progress


class _Progress:
    """Progress on stderr: a bar redrawn in place (at most five times a second) when
    stderr is a terminal, else a plain line every 10 seconds and one at the end, so
    logs and CI output never receive carriage-return frames."""

    def __init__(self, label: str, total: int, enabled: bool, unit: str = "") -> None:
        self.label, self.total, self.enabled, self.unit = label, max(total, 1), enabled, unit
        self.tty = enabled and sys.stderr.isatty()
        self.interval = 0.2 if self.tty else 10.0
        self.done = 0
        self._start = self._last = time.monotonic()

    def update(self, n: int) -> None:
        self.done += n
        if self.enabled and time.monotonic() - self._last >= self.interval:
            self._draw()

    def _draw(self) -> None:
        self._last = time.monotonic()
        frac = min(self.done / self.total, 1.0)
        status = (f"{frac * 100:5.1f}% {self.done}/{self.total}{self.unit} "
                  f"{self._last - self._start:6.1f}s")
        if self.tty:
            sys.stderr.write(f"\r{self.label:<9} [{'#' * int(frac * 30):<30}] {status}")
        else:
            sys.stderr.write(f"tokserve train: {self.label} {status.strip()}\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw()
            if self.tty:
                sys.stderr.write("\n")
                sys.stderr.flush()


# ------------------------------------------------------------------ counting


class _Splitter:
    """Pre-tokenizes one block of corpus bytes into a ``PieceCounter``."""

    def __init__(self, pattern: str, special_tokens: Sequence[str]) -> None:
        from ...unicode_compat import adapt_pattern

        self.family = family_for_pattern(pattern, "tiktoken")
        self.regex = None
        if self.family < 0:
            import regex

            self.regex = regex.compile(adapt_pattern(pattern, "tiktoken"))
        literals = sorted({s.encode("utf-8") for s in special_tokens}, key=lambda b: (-len(b), b))
        self.specials = re.compile(b"|".join(re.escape(b) for b in literals)) if literals else None
        # only a literal holding a newline can straddle a cut point
        self.newline_literals = [b for b in literals if b"\n" in b]

    def count(self, block: bytes, counter: Any) -> None:
        try:
            block.decode("utf-8")
        except UnicodeDecodeError:
            block = block.decode("utf-8", "replace").encode("utf-8")
        segments = self.specials.split(block) if self.specials is not None else [block]
        for seg in segments:
            if not seg:
                continue
            if self.family >= 0:
                counter.add_family(self.family, seg)
            else:
                counter.add_counts(Counter(self.regex.findall(seg.decode("utf-8"))))

    def is_cut(self, data: bytes, p: int) -> bool:
        """Whether ``p`` (0 < p < len(data)) is a valid cut point of ``data``."""
        if data[p - 1] != 0x0A:
            return False
        b = data[p]
        if b < 0x80:
            if not 0x21 <= b <= 0x7E:
                return False
        else:
            ch = data[p:p + 4].decode("utf-8", "ignore")[:1]
            if not ch or ch.isspace():
                return False
        for lit in self.newline_literals:
            lo = max(0, p - len(lit) + 1)
            i = data.find(lit, lo, p + len(lit) - 1)
            if i != -1 and i < p:  # an occurrence starting before p ends after it
                return False
        return True

    def last_cut(self, data: bytes) -> int:
        """The last valid cut point of ``data`` (with room to check it), or -1."""
        limit = len(data) - 4 - max((len(b) for b in self.newline_literals), default=0)
        p = data.rfind(b"\n", 0, max(limit, 0))
        while p != -1:
            if self.is_cut(data, p + 1):
                return p + 1
            p = data.rfind(b"\n", 0, p)
        return -1


def _first_cut(f: Any, offset: int, size: int, splitter: _Splitter) -> int:
    """The first valid cut point at or after ``offset`` in file ``f`` (``size`` if none).

    Both neighbouring tasks call this for their shared boundary, so ranges tile the file.
    """
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    reach = 4 + max((len(b) for b in splitter.newline_literals), default=0)
    start = max(0, offset - reach)
    f.seek(start)
    data = f.read(1 << 16)
    eof = start + len(data) >= size
    c = offset - start  # candidate cut, as an index into data
    while True:
        p = data.find(b"\n", c - 1)
        while p != -1 and (eof or p + 1 + reach <= len(data)):
            if splitter.is_cut(data, p + 1) if p + 1 < len(data) else False:
                return start + p + 1
            p = data.find(b"\n", p + 1)
        if eof:
            return size
        c = len(data) if p == -1 else p + 1
        more = f.read(max(1 << 16, len(data)))
        eof = not more or start + len(data) + len(more) >= size
        data += more


def _count_task(args: tuple) -> tuple[bytes, int]:
    """Worker: count the pieces of one byte range of a file; returns (blob, bytes read)."""
    path, start, end, pattern, special_tokens, block_size = args
    splitter = _Splitter(pattern, special_tokens)
    counter = _trainer.PieceCounter()
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        begin = _first_cut(f, start, size, splitter)
        stop = _first_cut(f, end, size, splitter) if end < size else size
        f.seek(begin)
        pos = begin
        carry = b""
        while pos < stop:
            data = f.read(min(block_size, stop - pos))
            if not data:  # the file shrank under us: count what was read
                break
            pos += len(data)
            buf = carry + data if carry else data
            if pos < stop:
                cut = splitter.last_cut(buf)
                if cut <= 0:
                    carry = buf  # no cut point yet (one very long line): read on
                    continue
                splitter.count(buf[:cut], counter)
                carry = buf[cut:]
            else:
                splitter.count(buf, counter)
                carry = b""
        if carry:
            splitter.count(carry, counter)
    return counter.to_blob(), stop - begin


def _plan(files: Sequence[str], workers: int,
          task_bytes: int | None = None) -> list[tuple[str, int, int]]:
    """Byte ranges, about four per worker (1-64 MB each), so the pool stays balanced."""
    sizes = [os.path.getsize(p) for p in files]
    total = sum(sizes)
    task = task_bytes or min(max(total // max(workers * 4, 1), _MIN_TASK), _MAX_TASK)
    ranges: list[tuple[str, int, int]] = []
    for path, size in zip(files, sizes):
        start = 0
        while start < size:
            end = min(size, start + task)
            if size - end < task // 4:
                end = size
            ranges.append((path, start, end))
            start = end
    return ranges


def count_pieces(corpus_files: Sequence[str], pattern: str, special_tokens: Sequence[str], *,
                 num_workers: int | None = None, progress: bool = False,
                 block_size: int = _BLOCK, task_bytes: int | None = None) -> Any:
    """Count the pre-tokenized pieces of the corpus into a ``_trainer.PieceCounter``.

    ``block_size`` (bytes read at a time) and ``task_bytes`` (bytes per pool task) only
    change memory use and balance, never the counts.
    """
    pattern = resolve_pattern(pattern)
    files = [os.fspath(p) for p in corpus_files]
    for p in files:
        if not os.path.isfile(p):
            raise EngineError(f"corpus file {p} does not exist or is not a file", path=p)
    workers = num_workers or len(os.sched_getaffinity(0))
    ranges = _plan(files, workers, task_bytes)
    total = sum(os.path.getsize(p) for p in files)
    tasks = [(p, s, e, pattern, list(special_tokens), block_size) for p, s, e in ranges]
    counter = _trainer.PieceCounter()
    bar = _Progress("counting", total, progress, " B")
    if workers <= 1 or len(tasks) <= 1:
        for t in tasks:
            blob, n = _count_task(t)
            counter.add_blob(blob)
            bar.update(n)
    else:
        import multiprocessing as mp

        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        with ctx.Pool(min(workers, len(tasks))) as pool:
            for blob, n in pool.imap_unordered(_count_task, tasks):
                counter.add_blob(blob)
                bar.update(n)
    bar.close()
    return counter


# ------------------------------------------------------------------ training


def learn(corpus_files: Sequence[str], vocab_size: int, pattern: str,
          special_tokens: Sequence[str], *, progress: bool = False,
          num_workers: int | None = None) -> TrainResult:
    """Learn byte-level BPE ranks from ``corpus_files`` (see the module docstring).

    ``vocab_size`` includes the 256 byte tokens and the special tokens; learning stops
    earlier when no adjacent pair is left. ``pattern`` is a pattern name
    (``patterns.resolve_pattern``) or a regex; a regex without a compiled scanner must
    pass the load-time checks (``pattern_check``) before any counting starts.

    Raises:
        EngineError: bad arguments or an unreadable corpus file; ArtifactError for an
            unknown pattern name or a refused pattern.
    """
    special_tokens = list(special_tokens)
    if len(set(special_tokens)) != len(special_tokens) or any(not s for s in special_tokens):
        raise EngineError("special tokens must be distinct non-empty strings",
                          special_tokens=special_tokens)
    target = vocab_size - len(special_tokens)
    if target < 256:
        raise EngineError(f"vocab_size {vocab_size} leaves {target} ranks for ordinary tokens; "
                          f"at least the 256 byte tokens are needed", vocab_size=vocab_size)
    regex_text = resolve_pattern(pattern)
    if family_for_pattern(regex_text, "tiktoken") < 0:
        check_pattern(regex_text, "tiktoken", whole=True)
    counter = count_pieces(corpus_files, regex_text, special_tokens,
                           num_workers=num_workers, progress=progress)
    trainer = _trainer.MergeTrainer(counter)
    merged: list[tuple[int, int, int, int]] = []
    bar = _Progress("merging", target - 256, progress, " tokens")
    while trainer.num_tokens() < target:
        before = trainer.num_tokens()
        batch = trainer.merge(min(target - before, 256))
        if not batch:
            break
        merged.extend(batch)
        bar.update(trainer.num_tokens() - before)
    bar.close()
    ranks = trainer.tokens()
    return TrainResult(
        ranks=ranks,
        merges=[(ranks[a], ranks[b]) for a, b, _, _ in merged],
        merge_counts=[c for _, _, _, c in merged],
        pattern=regex_text,
        special_tokens=special_tokens,
        pieces=counter.total(),
        piece_types=len(counter),
        corpus_bytes=sum(os.path.getsize(p) for p in corpus_files),
    )


def tiktoken_bytes(ranks: Iterable[bytes]) -> bytes:
    """The tiktoken rank file: ``base64(token) rank`` per line."""
    return b"".join(base64.b64encode(tok) + b" %d\n" % i for i, tok in enumerate(ranks))


def write_artifact(result: TrainResult, root: str | os.PathLike, name: str, version: str,
                   pattern: str, special_tokens: Sequence[str], *,
                   formats: Sequence[str] = ("tiktoken",)) -> Manifest:
    """Write ``<root>/<name>/<version>/``: ``<name>.tiktoken`` and ``manifest.json``, and
    with ``"hf"`` in ``formats`` also ``tokenizer.json`` (export.py: the same ids in
    Hugging Face ``tokenizers``), hashed in the manifest like every file.

    Byte-identical for identical training results. Special tokens get the ids after the
    ranks, in the given order. Refuses to overwrite an existing version (``ArtifactError``)
    and a format it cannot write exactly (``UnsupportedArtifact``). Returns the manifest.
    """
    from ...authoring.export import hf_tokenizer_json
    from ...authoring.manifest import write_artifact as write_version
    from ...formats import tiktoken_artifact

    unknown = set(formats) - {"tiktoken", "hf"}
    if unknown or "tiktoken" not in formats:
        raise EngineError(f"formats must include 'tiktoken' and may add 'hf', not "
                          f"{list(formats)!r}", formats=list(formats))
    regex_text = resolve_pattern(pattern)
    specials = {tok: len(result.ranks) + i for i, tok in enumerate(special_tokens)}
    fname = f"{name}.tiktoken"
    ranks = tiktoken_bytes(result.ranks)
    with tempfile.TemporaryDirectory() as tmp:
        files = {fname: Path(tmp) / fname}
        files[fname].write_bytes(ranks)
        exports = {}
        if "hf" in formats:
            art = tiktoken_artifact(ranks, name=name, pattern=regex_text, special_tokens=specials)
            files["tokenizer.json"] = Path(tmp) / "tokenizer.json"
            files["tokenizer.json"].write_text(
                json.dumps(hf_tokenizer_json(art), ensure_ascii=False) + "\n", encoding="utf-8")
            exports["hf"] = "tokenizer.json"
        return write_version(
            root, name, version, files, format="tiktoken", tokenizer_file=fname,
            preset=None, pattern=regex_text, special_tokens=specials,
            bos_token=None, eos_token=None, pad_token=None,
            add_bos_token=False, add_eos_token=False, normalizer="none",
            model_max_length=None,
            **({"exports": exports} if exports else {}),
            source=(f"tokserve train: byte-level BPE, {len(result.ranks)} ranks, "
                    f"{len(result.merges)} merges; tie-break: {TIE_BREAK}"),
            license=None,
        )


def train(corpus_files: Sequence[str], vocab_size: int, *, out: str | os.PathLike,
          name: str, version: str, pattern: str = "o200k_base",
          special_tokens: Sequence[str] = (), formats: Sequence[str] = ("tiktoken",),
          progress: bool = False, num_workers: int | None = None) -> Manifest:
    """Train a byte-level BPE tokenizer and write it as an artifact version.

    ``learn`` then ``write_artifact``: ``<out>/<name>/<version>/`` holds the ranks, the
    manifest and, with ``formats=("tiktoken", "hf")``, a ``tokenizer.json`` giving the
    same ids. Returns the manifest (its ``tokenizer_hash`` comes from loading the result).

    Example:
        >>> manifest = train(["corpus.txt"], 8000, out="artifacts", name="mine",
        ...                  version="1", special_tokens=["<|endoftext|>"])
        >>> tokserve.load("artifacts/mine/1").encode("hello")

    Raises:
        EngineError: bad arguments or an unreadable corpus file; ArtifactError when the
            version exists, for a name or version outside the grammar (versions.py:
            checked before training) or a refused pattern; UnsupportedArtifact for an
            export its pattern cannot make exact.
    """
    check_name(name, "name")
    check_name(version, "version")
    result = learn(corpus_files, vocab_size, pattern, special_tokens, progress=progress,
                   num_workers=num_workers)
    return write_artifact(result, out, name, version, pattern, special_tokens, formats=formats)
