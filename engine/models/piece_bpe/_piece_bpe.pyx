# cython: language_level=3, embedsignature=True
"""The piece BPE model stage: tokenizers' BPE over string pieces, in C++ without the GIL.

The SentencePiece BPE family (Llama 2, Mistral, Gemma, Phi-3, Yi) tokenizes strings of a
vocabulary of *pieces* ("▁Hello", "<0xE4>"), with pair-ranked merges, byte_fallback,
fuse_unk, unk_token and ignore_merges: tokenizers 0.23's ``BPE`` model minus dropout,
continuing_subword_prefix and end_of_word_suffix (refused: UnsupportedArtifact). Its
ids, and its token offsets as spans, are exactly those of ``model.tokenize`` in the
``tokenizers`` library on the same normalized, pre-tokenized sequence.

This file is the Cython glue: it reads the tokenizer.json ``model`` fields into the C++
tables (piece_bpe_vocab.h, piece_bpe_merges.h), refuses what tokenizers would refuse at
load (a merge whose parts or result are not pieces: ArtifactError), and hands sequences
to the C++ model (piece_bpe_model.h: chunks no merge can cross, a chunk cache, the
merge loop of piece_bpe_word.h) with the GIL released for all but short inputs.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.stdint cimport int32_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memcpy
from libcpp cimport bool as cbool
from libcpp.vector cimport vector

from ..._native.native cimport pf_run

from ...errors import ArtifactError, UnsupportedArtifact


cdef extern from "piece_bpe_model.h" namespace "piece_bpe" nogil:
    cbool append_utf8(int kind, const void *data, size_t n, vector[unsigned char] *out)

    cdef cppclass Vocab:
        void reserve(size_t pieces, size_t bytes) except +
        void add(const unsigned char *p, size_t n, uint32_t id) except +
        void finish() except +
        int32_t find(const unsigned char *p, size_t n)
        size_t size()
        size_t count()
        cbool plain()
        cbool piece(uint32_t id, const unsigned char **p, size_t *n)

    cdef cppclass Merges:
        void reserve(size_t n)
        size_t count()

    cdef cppclass ChunkCache:
        void set_capacity(size_t capacity)
        void clear()
        void add_stats(uint64_t hits, uint64_t misses)
        uint64_t hits()
        uint64_t misses()

    cdef cppclass Stats:
        uint64_t hits
        uint64_t misses

    cdef cppclass Scratch:
        pass

    cdef cppclass Out:
        int32_t *ids
        uint32_t *lens
        size_t count

    cdef cppclass Model:
        Vocab vocab
        Merges merges
        ChunkCache cache
        size_t short_max
        cbool chunking
        void begin_merges(size_t count) except +
        size_t add_merges(const unsigned char *buf, const uint32_t *lens, size_t count,
                          int *code) except +
        void finish(int32_t unk_id, cbool byte_fallback, cbool fuse_unk, cbool ignore_merges,
                    cbool allow_chunking) except +
        int encode(const unsigned char *p, size_t n, Out *out, Scratch *w, Stats *st)

    int PB_OK, PB_UNK_MISSING
    int PB_MERGE_OK, PB_MERGE_LEFT, PB_MERGE_RIGHT, PB_MERGE_RESULT


cdef enum:
    # Inputs of fewer UTF-8 bytes are encoded holding the GIL: releasing and taking it
    # back would cost a noticeable share of such a call, and holding it for the few
    # microseconds they take delays no other thread noticeably.
    _KEEP_GIL_BELOW = 2048
    # Ids are 32-bit in the C++ tables; a vocabulary's id table is as long as its
    # largest id, so ids are bounded well below that (real vocabularies stay < 2^20).
    _MAX_ID = 1 << 24
    # A chunk's symbols are numbered with 31 bits in the heap merge (piece_bpe_word.h).
    _MAX_BYTES = 0x7FFFFFFF
    # Inputs up to this many bytes write their ids to the stack, not a vector.
    _SMALL = 512


# Handing out the same int object for an id costs an INCREF; building a fresh int for
# every id above 256 was a large share of a call's time in the byte-level model. Each
# id's int is made when first returned and kept for the process, in one table for all
# models (zero pages until an id is met).
cdef PyObject **_INTS = NULL
cdef size_t _INTS_SIZE = 0


cdef int _reserve_ints(size_t size) except -1:
    global _INTS, _INTS_SIZE
    if size <= _INTS_SIZE:
        return 0
    cdef PyObject **grown = <PyObject **>calloc(size, sizeof(PyObject *))
    if grown == NULL:
        raise MemoryError()
    if _INTS != NULL:
        memcpy(grown, _INTS, _INTS_SIZE * sizeof(PyObject *))
        free(_INTS)
    _INTS = grown
    _INTS_SIZE = size
    return 0


cdef list _to_list(const int32_t *ids, size_t count):
    cdef Py_ssize_t i, n = <Py_ssize_t>count
    cdef list out = PyList_New(n)
    cdef PyObject *known
    cdef object item
    cdef int32_t tid
    for i in range(n):
        tid = ids[i]
        known = _INTS[tid] if <size_t>tid < _INTS_SIZE else NULL
        if known == NULL:
            item = tid
            if <size_t>tid < _INTS_SIZE:
                Py_INCREF(item)  # kept for the life of the process
                _INTS[tid] = <PyObject *>item
        else:
            item = <object>known
        Py_INCREF(item)
        PyList_SET_ITEM(out, i, item)
    return out


cdef Py_ssize_t _room(bytes data) except -1:
    """len(data), checked: the model takes fewer than _MAX_BYTES bytes at once."""
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
    if n >= _MAX_BYTES:
        raise ValueError(f"a sequence of {n} bytes: the model takes fewer than {_MAX_BYTES}")
    return n


cdef int32_t *_grown(vector[int32_t] *ids, size_t n):
    ids.resize(n)
    return ids.data()


cdef struct _Batch:
    Model *model
    const unsigned char **data
    size_t *size
    vector[int32_t] *out
    int *rc


cdef void _run_job(void *ctx, size_t i) noexcept nogil:
    # Into a local vector, swapped into place once: the output vectors sit side by side,
    # and writing into them from two threads would bounce their shared cache lines.
    cdef _Batch *jobs = <_Batch *>ctx
    cdef Scratch w
    cdef Stats st
    cdef vector[int32_t] ids
    cdef Out out
    ids.resize(jobs.size[i])
    out.ids = ids.data()
    out.lens = NULL
    out.count = 0
    jobs.rc[i] = jobs.model.encode(jobs.data[i], jobs.size[i], &out, &w, &st)
    ids.resize(out.count)
    jobs.out[i].swap(ids)
    jobs.model.cache.add_stats(st.hits, st.misses)


# Reading the tokenizer.json "model" fields into the C++ tables: a file of its own,
# read here as part of this module.
include "_piece_bpe_read.pxi"


include "piece_bpe_gaps.pxi"


cdef class PieceBpeModel:
    """One vocabulary's piece BPE tables and merging (read-only, shared by threads).

    Args:
        vocab: the tokenizer.json ``model.vocab``, piece -> id.
        merges: ``model.merges``: "a b" strings (as in merges.txt; "#version" lines are
            skipped) or [a, b] pairs (Gemma 3), in rank order.
        unk_token, byte_fallback, fuse_unk, ignore_merges: as in tokenizers.
        dropout, continuing_subword_prefix, end_of_word_suffix: refused unless
            null (dropout 0 and an empty prefix or suffix change nothing, so pass).
        cache_capacity: chunks remembered (0: no cache).
        chunking, short_merge_limit: cut the sequence where no merge can cross, and
            merge chunks of at most this many symbols with the scan; off / 0 only to
            compare against (tests, benchmarks).
        path: the file, for error messages.
    Raises:
        UnsupportedArtifact: dropout, a continuing_subword_prefix or end_of_word_suffix.
        ArtifactError: a malformed vocab or merges list, or a merge whose pieces or
            result are not in the vocabulary (tokenizers refuses these at load).
    """

    cdef Model *core
    cdef readonly object unk_token
    cdef int32_t unk_id

    def __cinit__(self):
        self.core = new Model()

    def __dealloc__(self):
        del self.core

    def __init__(self, dict vocab not None, list merges not None, *, unk_token=None,
                 byte_fallback=False, fuse_unk=False, ignore_merges=False, dropout=None,
                 continuing_subword_prefix=None, end_of_word_suffix=None,
                 size_t cache_capacity=65536, bint chunking=True, size_t short_merge_limit=64,
                 path=None):
        where = str(path) if path is not None else None
        if dropout is not None and dropout != 0:
            raise UnsupportedArtifact(f"BPE model.dropout={dropout!r} (random merges)", where)
        if continuing_subword_prefix:
            raise UnsupportedArtifact(
                f"BPE model.continuing_subword_prefix={continuing_subword_prefix!r}", where)
        if end_of_word_suffix:
            raise UnsupportedArtifact(f"BPE model.end_of_word_suffix={end_of_word_suffix!r}",
                                      where)
        if unk_token is not None and type(unk_token) is not str:
            raise ArtifactError(f"BPE model.unk_token must be a string, not {unk_token!r}")
        cdef bint fallback = _flag(byte_fallback, "byte_fallback")
        cdef bint fuse = _flag(fuse_unk, "fuse_unk")
        cdef bint ignore = _flag(ignore_merges, "ignore_merges")
        _read_vocab(self.core, vocab)
        _read_merges(self.core, merges)
        self.unk_token = unk_token
        self.unk_id = -1
        if unk_token is not None:
            self.unk_id = self._find(unk_token)
            if self.unk_id < 0:
                self.unk_id = -2  # tokenizers loads it, and fails when a character needs it
        self.core.short_max = short_merge_limit
        self.core.finish(self.unk_id, fallback, fuse, ignore, chunking)
        self.core.cache.set_capacity(cache_capacity)
        _reserve_ints(self.core.vocab.size())

    cdef int32_t _find(self, str piece) except -2:
        cdef vector[unsigned char] buf
        if not _append(piece, &buf):
            return -1
        return self.core.vocab.find(buf.data(), buf.size())

    cdef size_t _run(self, bytes data, int32_t *ids, uint32_t *lens) except? 0:
        """Encodes data into ids (and lens, when not NULL): room for len(data) each, the
        most tokens there can be. Returns how many."""
        cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(data)
        cdef size_t n = <size_t>PyBytes_GET_SIZE(data)
        cdef Scratch w
        cdef Stats st
        cdef Out out
        cdef int rc
        out.ids = ids
        out.lens = lens
        out.count = 0
        if n >= _KEEP_GIL_BELOW:
            with nogil:
                rc = self.core.encode(p, n, &out, &w, &st)
        else:
            rc = self.core.encode(p, n, &out, &w, &st)
        self.core.cache.add_stats(st.hits, st.misses)
        if rc != PB_OK:
            self._raise(rc)
        return out.count

    cdef int _raise(self, int rc) except -1:
        raise ArtifactError(f"BPE model.unk_token {self.unk_token!r} is not in the vocabulary, "
                            f"and the text has a character that needs it")

    def encode(self, bytes data not None) -> list:
        """The ids of ``data``: the UTF-8 of one normalized, pre-tokenized sequence."""
        cdef int32_t small[_SMALL]
        cdef vector[int32_t] ids
        cdef int32_t *room = &small[0]
        if _room(data) > _SMALL:
            room = _grown(&ids, len(data))
        return _to_list(room, self._run(data, room, NULL))

    def count(self, bytes data not None) -> int:
        """How many ids ``encode(data)`` gives."""
        cdef int32_t small[_SMALL]
        cdef vector[int32_t] ids
        cdef int32_t *room = &small[0]
        if _room(data) > _SMALL:
            room = _grown(&ids, len(data))
        return self._run(data, room, NULL)

    def encode_with_spans(self, bytes data not None) -> tuple:
        """(ids, spans): spans is flat [start0, end0, start1, end1, ...], byte offsets in
        ``data``, exactly tokenizers' ``model.tokenize`` offsets (a byte-fallback token
        covers its one byte; offsets are running sums of the tokens' lengths, as there)."""
        cdef vector[int32_t] ids
        cdef vector[uint32_t] lens
        _room(data)
        ids.resize(len(data))
        lens.resize(len(data))
        cdef size_t k = self._run(data, ids.data(), lens.data())
        cdef list spans = PyList_New(2 * k)
        cdef size_t i, at = 0
        cdef object start, end
        for i in range(k):
            start = at
            at += lens[i]
            end = at
            Py_INCREF(start)
            Py_INCREF(end)
            PyList_SET_ITEM(spans, 2 * i, start)
            PyList_SET_ITEM(spans, 2 * i + 1, end)
        return _to_list(ids.data(), k), spans

    def encode_many(self, list segments not None, int threads=1) -> list:
        """``[encode(s) for s in segments]``, on up to ``threads`` threads without the GIL."""
        cdef size_t i, count = len(segments)
        cdef vector[const unsigned char *] data
        cdef vector[size_t] size
        cdef vector[vector[int32_t]] out
        cdef vector[int] rc
        cdef _Batch jobs
        for seg in segments:
            if type(seg) is not bytes:
                raise TypeError(f"encode_many takes bytes segments, not {type(seg).__name__}")
            if PyBytes_GET_SIZE(seg) >= _MAX_BYTES:
                raise ValueError(f"a sequence of {len(seg)} bytes: the model takes fewer than "
                                 f"{_MAX_BYTES}")
            data.push_back(<const unsigned char *>PyBytes_AS_STRING(seg))
            size.push_back(<size_t>PyBytes_GET_SIZE(seg))
        out.resize(count)
        rc.resize(count)
        jobs.model = self.core
        jobs.data = data.data()
        jobs.size = size.data()
        jobs.out = out.data()
        jobs.rc = rc.data()
        with nogil:
            pf_run(count, threads, _run_job, &jobs)
        result = []
        for i in range(count):
            if rc[i] != PB_OK:
                self._raise(rc[i])
            result.append(_to_list(out[i].data(), out[i].size()))
        return result

    def encode_gaps(self, bytes data not None, const int64_t[::1] cuts not None,
                    bytes pattern not None, bytes content not None, bytes prefix not None):
        """A whole text's ids, given its literals' (byte start, byte end, id) triples:
        each gap normalized and encoded, each literal its id (piece_bpe_gaps.pxi)."""
        cdef vector[int32_t] ids
        if _encode_gaps(self.core, data, cuts, pattern, content, prefix, &ids) != PB_OK:
            self._raise(PB_UNK_MISSING)
        return _to_list(ids.data(), ids.size())

    def clear_cache(self) -> None:
        """Forget every cached chunk (a cold start, for benchmarks and tests)."""
        self.core.cache.clear()

    def id_to_piece(self, id) -> str | None:
        """The piece of ``id``, or None when no piece has it."""
        cdef const unsigned char *p
        cdef size_t n
        if type(id) is not int or id < 0 or id >= self.core.vocab.size():
            return None
        if not self.core.vocab.piece(<uint32_t>id, &p, &n):
            return None
        return (<const char *>p)[:n].decode("utf-8")

    def piece_to_id(self, str piece not None) -> int | None:
        """The id of ``piece``, or None when it is not in the vocabulary."""
        cdef int32_t tid = self._find(piece)
        return None if tid < 0 else tid

    @property
    def size(self) -> int:
        """One past the largest id."""
        return self.core.vocab.size()

    @property
    def vocab_size(self) -> int:
        """Pieces in the vocabulary (tokenizers' ``get_vocab_size``)."""
        return self.core.vocab.count()

    @property
    def merge_count(self) -> int:
        """Distinct merge pairs."""
        return self.core.merges.count()

    @property
    def chunking(self) -> bool:
        """Whether sequences are cut into chunks (the merges allow it: piece_bpe_model.h)."""
        return self.core.chunking

    @property
    def cache_hits(self) -> int:
        return self.core.cache.hits()

    @property
    def cache_misses(self) -> int:
        return self.core.cache.misses()


def from_model(model, path=None, **options) -> PieceBpeModel:
    """A PieceBpeModel from a tokenizer.json ``model`` object (type "BPE"); ``options``
    are the constructor's tuning arguments (cache_capacity, chunking, ...)."""
    if not isinstance(model, dict):
        raise ArtifactError(f"the BPE model must be a JSON object, not {type(model).__name__}")
    kind = model.get("type", "BPE")
    if kind != "BPE":
        raise ArtifactError(f"expected a BPE model, got type {kind!r}")
    vocab, merges = model.get("vocab"), model.get("merges")
    if not isinstance(vocab, dict) or not isinstance(merges, list):
        raise ArtifactError("a BPE model needs a 'vocab' object and a 'merges' list")
    return PieceBpeModel(
        vocab, merges, unk_token=model.get("unk_token"),
        byte_fallback=model.get("byte_fallback"), fuse_unk=model.get("fuse_unk"),
        ignore_merges=model.get("ignore_merges"), dropout=model.get("dropout"),
        continuing_subword_prefix=model.get("continuing_subword_prefix"),
        end_of_word_suffix=model.get("end_of_word_suffix"), path=path, **options)
