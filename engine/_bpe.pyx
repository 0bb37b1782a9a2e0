# cython: language_level=3, embedsignature=True
"""The BPE model stage: rank-based merging on UTF-8 bytes, in C++ without the GIL.

This file is the Cython glue: it builds one vocabulary's tables (``BpeCore``,
bpe_model.h) from Python objects, and hands segments to the C++ loops and ids back.
Why the loops are shaped as they are (each figure is in benchmarks/README.md, "Why the
engine is shaped like this"):

* Most of a tokenizer's time goes to pre-tokenization, not merging. So a segment is
  scanned and merged in ONE nogil loop: the hand-written scanner (``pretok_scan.h``)
  hands out piece boundaries and each piece is merged immediately while its bytes are
  hot in cache. Python sees one call per segment, never one per piece.
* Most pieces are a single token. tiktoken-format vocabularies look the whole piece up
  first (tiktoken's own rule; for ``tokenizer.json`` only with ``ignore_merges``), so
  the common case is one hash lookup.
* Two merge rules, one loop. A ``.tiktoken`` file ranks byte strings: the adjacent pair
  to merge is the one whose concatenated bytes have the lowest rank, looked up directly
  in the token table (an id-pair table derived at load would cost more load time than
  tiktoken's whole load). A ``tokenizer.json`` merges list is an id-pair table:
  ``(left_id << 32 | right_id) -> (rank << 32 | merged_id)``. Ties go to the leftmost
  pair in both references.
* Both tables are flat open-addressing arrays (``bpe_tables.h``), read-only after load.
* Short pieces (the vast majority) use a flat array and a linear minimum scan: fewer
  than ~48 symbols fit in cache lines and beat any heap (bpe_merge.h). Longer pieces
  (a megabyte of one letter, of spaces, of random letters) are encoded a token at a
  time by a backtracking search (backtrack.h), linear in their length.
* Long pieces of CJK and similar text (a whole clause is one piece, and nearly every
  clause is new) are cut where no token of the vocabulary can cross (``piece_split.h``,
  which states why that is exact); the parts are short words that recur, so they come
  from the piece cache even in text never seen before.
* A bounded piece -> ids cache (``piece_cache.h``: sharded seqlocks, so readers on
  several threads write nothing shared) saves the merge loop for repeated multi-token
  pieces; single-token pieces never reach it, and a piece enters it on its second
  sighting (on new text a lookup plus an insert per piece cost more than they saved).
  A small per-thread cache of id pair -> merge result (``pair_cache.h``) answers most
  of the merge loop's questions about pairs without touching the vocabulary table, and
  for ``.tiktoken`` vocabularies the first question of every loop, "do these two bytes
  merge?", is one load from a dense 65,536-entry table.

Invariants: every id produced is a key of the decoder table; the concatenated bytes of
a piece's ids equal the piece; offsets are derived from token byte lengths, so they
are exact by construction.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromLong
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libcpp.string cimport string
from libcpp.vector cimport vector

from .native cimport (BpeCore, bpe_pair_key, bt_b64_decode, bt_bytes_get, bt_bytes_init,
                      bt_bytes_put, bt_u64_init, bt_u64_put_new, pf_run)

from .errors import ArtifactError


cdef struct BatchJobs:
    # One entry per segment; the bytes objects are kept alive by the caller's list.
    void *model
    const unsigned char **data
    Py_ssize_t *size
    const vector[int64_t] **ends  # NULL: the compiled scanner splits the segment
    vector[int32_t] *out


cdef void _run_job(void *ctx, size_t i) noexcept nogil:
    # Into a local vector, moved into place once: the output vectors sit side by side,
    # and pushing into them directly from two threads bounced their shared cache lines
    # (a 2-thread batch was slower than 1 thread).
    cdef BatchJobs *jobs = <BatchJobs *>ctx
    cdef vector[int32_t] ids
    ids.reserve(<size_t>jobs.size[i] // 3 + 4)
    (<BpeModel>jobs.model).encode_span(jobs.data[i], jobs.size[i], jobs.ends[i], &ids)
    jobs.out[i].swap(ids)


cdef class BpeModel:
    """Ranks, merges and the id -> bytes table of one vocabulary.

    ``family`` selects the compiled pre-tokenizer scanner (>= 0) or none (-1, the
    caller passes piece boundaries computed by the ``regex`` fallback).
    """

    def __init__(self, tokens=None, merges=None, added=None, *, bytes tiktoken_data=None,
                 bint whole_piece_lookup=True, int family=-1, size_t cache_capacity=65536,
                 bint split_pieces=True, bint backtracking=True):
        """Build the tables.

        Args:
            tokens: iterable of ``(token_bytes, id)`` for the BPE vocabulary, or None
                with ``tiktoken_data``: the raw bytes of a ``.tiktoken`` rank file,
                parsed here in C (it is most of the load time otherwise).
            merges: ``None`` for tiktoken semantics (derive pair merges from ranks, the
                rank of a token being its id); else a list of ``(left, right)`` byte
                strings in rank order (``tokenizer.json``).
            added: iterable of ``(literal_bytes, id)`` decodable but never produced by
                merging (special and added tokens).
            whole_piece_lookup: emit a piece that is itself a token directly.
            split_pieces, backtracking: cut pieces where no token can cross
                (piece_split.h), encode long pieces token by token (backtrack.h); off
                only to compare against (tests, benchmarks).
        Raises:
            ArtifactError: a single byte or a merge operand is missing from the vocabulary.
        """
        cdef BpeCore *c = &self.core
        cdef bytes tok
        cdef long tid
        cdef size_t max_id = 0, total = 0, pos = 0, n, first
        c.whole_piece_lookup = whole_piece_lookup
        c.backtracking = backtracking
        c.family = family
        c.cache.set_capacity(cache_capacity)
        if tiktoken_data is not None:
            tokens = _parse_tiktoken(tiktoken_data)
        pairs = tokens if isinstance(tokens, list) else list(tokens)
        added_list = list(added or ())
        for source in (pairs, added_list):
            for tok, tid in source:
                if tid < 0 or tid >= 0x7FFFFFFF:
                    raise ArtifactError(f"token id {tid} out of range")
                total += len(tok)
                max_id = max(max_id, <size_t>tid + 1)
        c.arena.resize(total + 1)
        c.tok_start.resize(max_id, 0)
        c.tok_len.resize(max_id, 0)
        c.known.resize(max_id, 0)
        if bt_bytes_init(&c.encoder, len(pairs)) != 0:
            raise MemoryError()
        for source in (pairs, added_list):
            for tok, tid in source:
                n = len(tok)
                memcpy(&c.arena[pos], PyBytes_AS_STRING(tok), n)
                c.tok_start[tid] = pos
                c.tok_len[tid] = n
                c.known[tid] = 1
                pos += n
        cdef vector[char] mergeable
        mergeable.resize(max_id, 0)
        c.longest_from.assign(65536, 0)
        for tok, tid in pairs:
            n = c.tok_len[tid]
            bt_bytes_put(&c.encoder, c.token(tid), n, tid)
            mergeable[tid] = 1
            c.max_len = max(c.max_len, n)
            if n >= 2:
                first = (<size_t>c.token(tid)[0] << 8) | c.token(tid)[1]
                if n > c.longest_from[first]:
                    c.longest_from[first] = min(n, 0xFFFF)
        if split_pieces and c.splitter.build(c.arena.data(), c.tok_start.data(),
                                             c.tok_len.data(), mergeable.data(), max_id) != 0:
            raise MemoryError()
        # Handing out the same int object for an id costs an INCREF; building a fresh one
        # for every id above 256 was most of a large batch's time.
        self.id_objects = list(range(max_id))
        cdef int b
        cdef unsigned char byte
        for b in range(256):
            byte = <unsigned char>b
            c.byte_ids[b] = bt_bytes_get(&c.encoder, &byte, 1)
            if c.byte_ids[b] < 0:
                raise ArtifactError(f"vocabulary has no token for the single byte 0x{b:02x}")
        c.concat_ranks = merges is None
        cdef size_t k
        cdef const unsigned char *ptr
        if merges is None:
            if bt_u64_init(&c.merges, 0) != 0:
                raise MemoryError()
            # Every merge loop starts by ranking each adjacent pair of bytes; 65,536
            # answers fit in 256 KiB, so those come from one load, not a hash probe.
            c.byte_pairs.assign(65536, 0xFFFFFFFFu)
            for k in range(max_id):
                if c.tok_len[k] == 2:
                    ptr = c.token(k)
                    c.byte_pairs[(<uint32_t>ptr[0] << 8) | ptr[1]] = <uint32_t>bt_bytes_get(
                        &c.encoder, ptr, 2)
        else:
            if bt_u64_init(&c.merges, len(merges)) != 0:
                raise MemoryError()
            self._load_merges(merges)
        c.finish(mergeable.data())

    def _load_merges(self, merges):
        cdef bytes a, b
        cdef uint64_t rank = 0
        cdef int32_t ia, ib, im
        for a, b in merges:
            ia = bt_bytes_get(&self.core.encoder, <const unsigned char *>PyBytes_AS_STRING(a), len(a))
            ib = bt_bytes_get(&self.core.encoder, <const unsigned char *>PyBytes_AS_STRING(b), len(b))
            ab = a + b
            im = bt_bytes_get(&self.core.encoder, <const unsigned char *>PyBytes_AS_STRING(ab), len(ab))
            if ia < 0 or ib < 0 or im < 0:
                raise ArtifactError(f"merge {a!r} + {b!r} (rank {rank}) uses a token missing "
                                    f"from the vocabulary")
            bt_u64_put_new(&self.core.merges, bpe_pair_key(ia, ib), (rank << 32) | <uint32_t>im)
            rank += 1

    # ------------------------------------------------------------------ C level

    cdef void encode_span(self, const unsigned char *data, size_t n,
                          const vector[int64_t] *ends, vector[int32_t] *out) noexcept nogil:
        self.core.encode_span(data, n, ends, out)

    cdef vector[int32_t] _encode(self, bytes data, ends) except *:
        cdef vector[int32_t] out
        cdef vector[int64_t] cuts
        cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
        if ends is None and self.core.family < 0:
            raise ValueError("no compiled scanner for this pattern: pass piece ends")
        out.reserve(n // 3 + 4)
        if ends is None:
            with nogil:
                self.core.encode_span(s, n, NULL, &out)
        else:
            for e in ends:
                cuts.push_back(e)
            with nogil:
                self.core.encode_span(s, n, &cuts, &out)
        return out

    cdef list _to_list(self, const vector[int32_t] &ids):
        cdef size_t i, size = len(self.id_objects)
        cdef list out = PyList_New(ids.size())
        for i in range(ids.size()):
            if <size_t>ids[i] < size:
                item = <object>PyList_GET_ITEM(self.id_objects, ids[i])
            else:
                item = ids[i]
            Py_INCREF(item)
            PyList_SET_ITEM(out, i, item)
        return out

    cdef vector[vector[int32_t]] _encode_many(self, list segments, int num_threads) except *:
        """Merge every ``(data, ends)`` segment on up to ``num_threads`` threads."""
        cdef size_t n = len(segments), i
        cdef vector[const unsigned char *] data
        cdef vector[Py_ssize_t] size
        cdef vector[vector[int64_t]] cuts
        cdef vector[const vector[int64_t] *] ends
        cdef vector[vector[int32_t]] out
        cdef BatchJobs jobs
        data.resize(n)
        size.resize(n)
        cuts.resize(n)
        ends.resize(n)
        out.resize(n)
        for i in range(n):
            segment, piece_ends = segments[i]
            if type(segment) is not bytes:
                raise TypeError("segments must be (bytes, ends) pairs")
            data[i] = <const unsigned char *>PyBytes_AS_STRING(segment)
            size[i] = PyBytes_GET_SIZE(segment)
            if piece_ends is None:
                if self.core.family < 0:
                    raise ValueError("no compiled scanner for this pattern: pass piece ends")
                ends[i] = NULL
            else:
                for e in piece_ends:
                    cuts[i].push_back(e)
                ends[i] = &cuts[i]
        jobs.model = <void *>self
        jobs.data = data.data()
        jobs.size = size.data()
        jobs.ends = ends.data()
        jobs.out = out.data()
        with nogil:
            pf_run(n, num_threads, _run_job, &jobs)
        return out

    # ------------------------------------------------------------------ Python API

    def encode(self, bytes data, ends=None):
        """UTF-8 ``data`` (one ordinary segment) -> ids.

        ``ends``: exclusive byte ends of the pre-tokenizer pieces, or None to use the
        compiled scanner. Releases the GIL while merging.
        """
        return self._to_list(self._encode(data, ends))

    def count(self, bytes data, ends=None):
        """Like ``encode`` but returns only the number of ids (no list is built)."""
        return self._encode(data, ends).size()

    def encode_many(self, list segments, int num_threads=1):
        """``[encode(data, ends) for data, ends in segments]``, merged in parallel.

        One call releases the GIL once for the whole batch; with one call per text the
        threads would queue for the GIL between texts and two threads ran slower than
        one. ``segments`` must stay alive (it holds the bytes) until this returns.
        """
        cdef vector[vector[int32_t]] out = self._encode_many(segments, num_threads)
        cdef size_t i
        cdef list result = PyList_New(out.size())
        for i in range(out.size()):
            item = self._to_list(out[i])
            Py_INCREF(item)
            PyList_SET_ITEM(result, i, item)
        return result

    def count_many(self, list segments, int num_threads=1):
        """Like ``encode_many`` but only the number of ids of each segment."""
        cdef vector[vector[int32_t]] out = self._encode_many(segments, num_threads)
        return [out[i].size() for i in range(out.size())]

    def encode_with_spans(self, bytes data, ends=None, Py_ssize_t base=0):
        """Ids and a flat list ``[start0, end0, start1, ...]`` of byte spans + ``base``."""
        cdef vector[int32_t] out = self._encode(data, ends)
        cdef Py_ssize_t pos = base
        cdef size_t i
        spans = PyList_New(2 * out.size())
        for i in range(out.size()):
            item = PyLong_FromLong(pos)
            Py_INCREF(item)
            PyList_SET_ITEM(spans, 2 * i, item)
            pos += self.core.tok_len[out[i]]
            item = PyLong_FromLong(pos)
            Py_INCREF(item)
            PyList_SET_ITEM(spans, 2 * i + 1, item)
        return self._to_list(out), spans

    def encode_piece(self, bytes piece):
        """Merge one piece as given (no pre-tokenization); for tests and the trainer."""
        cdef vector[int32_t] out
        cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(piece)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(piece)
        with nogil:
            self.core.encode_one(s, n, &out)
        return self._to_list(out)

    def decode_bytes(self, ids):
        """ids -> ``(bytes, unknown)``: the bytes of the known ids and, in one pass over
        ``ids``, every item that is not an id of this vocabulary (not an integer, beyond
        64 bits, negative, too large, or a gap), so the caller raises once."""
        cdef string buf
        cdef long long tid
        cdef size_t size = self.core.known.size()
        unknown = []
        for obj in ids:
            try:
                tid = obj
            except (TypeError, OverflowError):
                unknown.append(obj)
                continue
            if tid < 0 or <size_t>tid >= size or not self.core.known[tid]:
                unknown.append(obj)
                continue
            buf.append(<const char *>self.core.token(tid), self.core.tok_len[tid])
        return buf, unknown

    def splits(self):
        """Per id, ``(left, right)``: the two ids the last merge of its own bytes joins
        when merging them gives the id itself, else None (bytes, special and added
        tokens, unreachable tokens). The merges list that reproduces this model."""
        cdef int32_t t, a = 0, b = 0
        out = []
        for t in range(<int32_t>self.core.size()):
            out.append((a, b) if self.core.split_of(t, &a, &b) else None)
        return out

    @property
    def family(self):
        """The compiled scanner family, or -1 (callers pass piece ends)."""
        return self.core.family

    @property
    def size(self):
        """One past the largest id (the vocabulary size as clients index it)."""
        return self.core.size()

    @property
    def cache_hits(self):
        return self.core.cache.hits()

    @property
    def cache_misses(self):
        return self.core.cache.misses()

    def clear_cache(self):
        self.core.cache.clear()


def _parse_tiktoken(bytes data):
    """``base64 rank`` lines -> list of (token bytes, rank), with the line number on error."""
    cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), i = 0, line_start, sp, end
    cdef long rank
    cdef ptrdiff_t w
    cdef unsigned char buf[4096]
    cdef Py_ssize_t lineno = 0
    out = []
    while i < n:
        line_start = i
        lineno += 1
        while i < n and s[i] != 10:
            i += 1
        end = i
        i += 1
        if end > line_start and s[end - 1] == 13:
            end -= 1
        if end == line_start:
            continue
        sp = line_start
        while sp < end and s[sp] != 32:
            sp += 1
        rank = 0
        w = -1
        if sp < end and sp - line_start <= 4096 and end - sp - 1 > 0:
            w = bt_b64_decode(s + line_start, sp - line_start, buf)
            for k in range(sp + 1, end):
                if s[k] < 48 or s[k] > 57:
                    w = -1
                    break
                rank = rank * 10 + (s[k] - 48)
        if w < 0:
            raise ArtifactError(f"line {lineno}: expected 'base64-token rank', got "
                                f"{data[line_start:min(end, line_start + 60)]!r}", line=lineno)
        out.append((<bytes>buf[:w], rank))
    if not out:
        raise ArtifactError("no ranks found in the rank file")
    return out


