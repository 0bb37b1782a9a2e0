# cython: language_level=3, embedsignature=True
"""The Unigram model stage: Viterbi over a word's pieces, in C++ without the GIL.

This file is the Cython glue: it builds the C++ model (``UnigramCore``,
unigram_model.h, which states the rules that decide ids) from a vocabulary of
``(piece, score)`` pairs, hands words to it and gives ids (and byte spans) back.

* The model's unit is a word (T5's pre-tokenizer hands out "▁word" units), but a call
  per word costs more than the word's Viterbi pass. So a call takes a whole text's
  normalized UTF-8 and its words' ``ends`` and returns one flat list; ``encode_many``
  takes many texts, releases the GIL once and spreads them over threads. A call of
  fewer than ``_KEEP_GIL_BELOW`` bytes runs holding the GIL: releasing and retaking
  it costs more than the work.
* Words are cached (unigram_cache.h: bounded, sharded seqlocks, so reader threads
  write nothing shared).
* Each id's int object is made on its first return and kept per model, so building a
  list of ids is a reference count per id.
* ``encode_metaspace`` also does T5's pre-tokenizer (WhitespaceSplit, then Metaspace)
  natively (unigram_metaspace.h): no Python object per word at all.

Invariants: the spans of a word's tokens are byte ranges of the word, in order, and
cover it (the ``<0xNN>`` tokens of one unknown run share that run's span).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free
from libcpp.vector cimport vector

from ..._native.native cimport pf_run
from .unigram_core cimport (UG_BAD_ENDS, UG_MISSING_UNK, UG_PREPEND_ALWAYS, UG_PREPEND_FIRST,
                            UG_PREPEND_NEVER, UG_TOO_LONG, UgMetaspace, UnigramCore,
                            ug_encode_metaspace)

from ...errors import ArtifactError

cdef enum:
    _KEEP_GIL_BELOW = 2048


cdef extern from "Python.h":
    void _incref "Py_INCREF"(PyObject *o)
    void _list_set "PyList_SET_ITEM"(object list, Py_ssize_t i, PyObject *o)
    char *PyOS_double_to_string(double val, char format_code, int precision, int flags,
                                int *type) except NULL
    void PyMem_Free(void *p)
    int _DTSF_ADD_DOT_0 "Py_DTSF_ADD_DOT_0"
    const char *PyUnicode_AsUTF8AndSize(object text, Py_ssize_t *size) except NULL


cdef extern from "unigram_scores.h" nogil:
    int UG_NUM_OK
    int ug_json_f64(const char *s, size_t n, double *out)


cdef double _json_score(object value) except? -1.0:
    # A score as tokenizers holds it: value is the number's JSON text (str) or what
    # Python's json made of it. A float's shortest repr is its file text whenever the
    # file was written with shortest round-trip digits (serde_json's ryu, Python's json:
    # every tokenizer.json tokenizers or transformers saved); the text is what counts.
    cdef char *text
    cdef const char *raw
    cdef Py_ssize_t size
    cdef double result = 0.0
    cdef int rc
    if type(value) is float:
        # repr's text exactly ("1234.0", not "1234": a trailing digit changes serde's
        # significand, and so its rounding)
        text = PyOS_double_to_string(<double>value, b'r', 0, _DTSF_ADD_DOT_0, NULL)
        try:
            rc = ug_json_f64(text, len(text), &result)
        finally:
            PyMem_Free(text)
    elif type(value) is int:
        return float(value)  # serde: u64/i64 as f64, the same rounding
    elif type(value) is str:
        raw = PyUnicode_AsUTF8AndSize(value, &size)
        rc = ug_json_f64(raw, size, &result)
    else:
        raise ArtifactError(f"a Unigram score is not a number: {value!r}")
    if rc != UG_NUM_OK:
        raise ArtifactError(f"a Unigram score is not a JSON number in f64's range: {value!r}")
    return result


def json_score(value):
    """A vocab score as tokenizers reads it from tokenizer.json: ``value`` is the
    number's JSON text (``json.loads(..., parse_float=str)``) or what ``json`` made of it
    (int, float). serde_json's rounding (unigram_scores.h says why it matters).

    Raises:
        ArtifactError: not a number (bool, None, text that is not a JSON number, NaN).
    """
    return _json_score(value)


cdef struct BatchJobs:
    void *model
    const unsigned char **data
    Py_ssize_t *size
    const vector[int64_t] **ends  # NULL: the segment is one word
    vector[int32_t] *out
    int *status
    uint64_t *hits
    uint64_t *misses


cdef void _run_job(void *ctx, size_t i) noexcept nogil:
    cdef BatchJobs *jobs = <BatchJobs *>ctx
    cdef vector[int32_t] ids
    cdef uint64_t hits = 0, misses = 0
    jobs.status[i] = (<UnigramModel>jobs.model).encode_span(
        jobs.data[i], jobs.size[i], jobs.ends[i], &ids, NULL, &hits, &misses)
    jobs.out[i].swap(ids)
    jobs.hits[i] = hits
    jobs.misses[i] = misses


cdef int _raise_for(int status) except -1:
    if status == UG_MISSING_UNK:
        raise ArtifactError("the Unigram model met a character with no piece, and it has no "
                            "unk_id (tokenizers fails here as well)", reason="missing_unk_id")
    if status == UG_TOO_LONG:
        raise ValueError("a text of 2 GiB or more")
    if status == UG_BAD_ENDS:
        raise ValueError("ends must ascend within the data and end at its length")
    return 0


cdef class UnigramModel:
    """One Unigram vocabulary: ``(piece, score)`` per id, its trie and its word cache."""

    def __cinit__(self):
        self._ints = NULL

    def __init__(self, vocab, unk_id=None, bint byte_fallback=False, *, bint fuse_unk=True,
                 size_t cache_capacity=65536):
        """Build from ``vocab`` (``[(piece, score), ...]``, index = id) as tokenizers'
        ``Unigram::from`` does.

        Args:
            unk_id: the id of unknown characters, or None (then a word that needs it
                raises ArtifactError at encode time, as tokenizers errs).
            byte_fallback: an unknown run becomes its ``<0xNN>`` pieces when all exist.
            fuse_unk: consecutive unknown characters are one token (tokenizers always
                sets it; off only to compare).
            cache_capacity: words the cache holds (0: no cache).
        Raises:
            ArtifactError: a malformed vocabulary, an ``unk_id`` outside it, or a
                vocabulary too large for the trie.
        """
        pieces = []
        ids = {}
        cdef bytes raw
        cdef double score
        for i, entry in enumerate(vocab):
            try:
                piece, score_obj = entry
                score = float(score_obj)
            except (TypeError, ValueError) as exc:
                raise ArtifactError(f"Unigram vocab entry {i} is not [piece, score]: {entry!r}",
                                    index=i) from exc
            if type(piece) is not str or isinstance(score_obj, (bool, str)):
                raise ArtifactError(f"Unigram vocab entry {i} is not [piece, score]: {entry!r}",
                                    index=i)
            raw = (<str>piece).encode("utf-8")
            self.core.add_piece(<const unsigned char *>PyBytes_AS_STRING(raw),
                                PyBytes_GET_SIZE(raw), score)
            pieces.append(piece)
            ids[piece] = i
        if unk_id is not None:
            if type(unk_id) is not int:
                raise ArtifactError(f"Unigram unk_id is not an integer: {unk_id!r}")
            if not pieces:
                raise ArtifactError("the Unigram vocabulary is empty but at least <unk> is "
                                    "needed")
            if not 0 <= unk_id < len(pieces):
                raise ArtifactError(f"Unigram unk_id {unk_id} is outside the vocabulary of "
                                    f"{len(pieces)} pieces", unk_id=unk_id)
            self.core.unk_id = unk_id
        self.core.byte_fallback = byte_fallback
        self.core.fuse_unk = fuse_unk
        if not self.core.finish():
            raise ArtifactError("the Unigram vocabulary is too large for its trie")
        self.core.cache.set_capacity(cache_capacity)
        self._pieces = pieces
        self._ids = ids
        self._ints = <PyObject **>calloc(max(len(pieces), 1), sizeof(PyObject *))
        if self._ints == NULL:
            raise MemoryError()

    @classmethod
    def from_json_dict(cls, model, **options):
        """From a tokenizer.json ``"model"`` object: ``vocab``, ``unk_id``,
        ``byte_fallback``; ``type`` may be absent (T5's early format). Scores are read as
        tokenizers reads them (``json_score``: serde_json's rounding; a score may be the
        number's JSON text). ``options`` go to the constructor (``cache_capacity``)."""
        if not isinstance(model, dict):
            raise ArtifactError("the Unigram model is not a JSON object")
        kind = model.get("type", "Unigram")
        if kind != "Unigram":
            raise ArtifactError(f"not a Unigram model: type {kind!r}")
        vocab = model.get("vocab")
        if not isinstance(vocab, list):
            raise ArtifactError("the Unigram model has no vocab list")
        scored = []
        for i, entry in enumerate(vocab):
            if not isinstance(entry, (list, tuple)) or len(entry) != 2:
                raise ArtifactError(f"Unigram vocab entry {i} is not [piece, score]: "
                                    f"{entry!r}", index=i)
            scored.append((entry[0], _json_score(entry[1])))
        byte_fallback = model.get("byte_fallback", False)
        if byte_fallback is None:
            byte_fallback = False
        if type(byte_fallback) is not bool:
            raise ArtifactError(f"Unigram byte_fallback is not a boolean: {byte_fallback!r}")
        return cls(scored, model.get("unk_id"), byte_fallback, **options)

    def __dealloc__(self):
        cdef size_t i
        if self._ints != NULL:
            for i in range(self.core.size()):
                Py_XDECREF(self._ints[i])
            free(self._ints)

    # ------------------------------------------------------------------ C level

    cdef int encode_span(self, const unsigned char *data, size_t n,
                         const vector[int64_t] *ends, vector[int32_t] *ids,
                         vector[uint32_t] *spans, uint64_t *hits,
                         uint64_t *misses) noexcept nogil:
        if ends == NULL:
            return self.core.encode(data, n, ids, spans, hits, misses)
        return self.core.encode_words(data, n, ends.data(), ends.size(), ids, spans, hits,
                                      misses)

    cdef list _ids_list(self, const vector[int32_t] &ids):
        cdef size_t i, n = ids.size()
        cdef list out = PyList_New(n)
        cdef int32_t tid
        cdef PyObject *known
        cdef object item
        for i in range(n):
            tid = ids[i]
            known = self._ints[tid]
            if known == NULL:
                item = tid
                Py_INCREF(item)  # kept for the model's life
                self._ints[tid] = <PyObject *>item
                known = <PyObject *>item
            _incref(known)
            _list_set(out, i, known)
        return out

    cdef int _encode(self, bytes data, ends, vector[int32_t] *ids,
                     vector[uint32_t] *spans) except -1:
        cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
        cdef uint64_t hits = 0, misses = 0
        cdef vector[int64_t] cuts
        cdef const vector[int64_t] *cut_ptr = NULL
        cdef int rc
        if ends is not None:
            for e in ends:
                cuts.push_back(e)
            cut_ptr = &cuts
        if n < _KEEP_GIL_BELOW:
            rc = self.encode_span(s, n, cut_ptr, ids, spans, &hits, &misses)
        else:
            with nogil:
                rc = self.encode_span(s, n, cut_ptr, ids, spans, &hits, &misses)
        self.core.cache.add_stats(hits, misses)
        return _raise_for(rc)

    cdef vector[vector[int32_t]] _encode_many(self, list segments, int num_threads) except *:
        # a private copy holds every segment (and its bytes) while the GIL is released,
        # whatever the caller does to its list meanwhile
        segments = list(segments)
        cdef size_t n = len(segments), i
        cdef vector[const unsigned char *] data
        cdef vector[Py_ssize_t] size
        cdef vector[vector[int64_t]] cuts
        cdef vector[const vector[int64_t] *] ends
        cdef vector[vector[int32_t]] out
        cdef vector[int] status
        cdef vector[uint64_t] hits, misses
        cdef BatchJobs jobs
        cdef uint64_t total_hits = 0, total_misses = 0
        data.resize(n)
        size.resize(n)
        cuts.resize(n)
        ends.resize(n)
        out.resize(n)
        status.resize(n)
        hits.resize(n)
        misses.resize(n)
        for i in range(n):
            segment = segments[i]
            word_ends = None
            if type(segment) is tuple:
                segment, word_ends = segment
            if type(segment) is not bytes:
                raise TypeError("segments must be bytes or (bytes, ends) pairs")
            data[i] = <const unsigned char *>PyBytes_AS_STRING(segment)
            size[i] = PyBytes_GET_SIZE(segment)
            ends[i] = NULL
            if word_ends is not None:
                for e in word_ends:
                    cuts[i].push_back(e)
                ends[i] = &cuts[i]
        jobs.model = <void *>self
        jobs.data = data.data()
        jobs.size = size.data()
        jobs.ends = ends.data()
        jobs.out = out.data()
        jobs.status = status.data()
        jobs.hits = hits.data()
        jobs.misses = misses.data()
        with nogil:
            pf_run(n, num_threads, _run_job, &jobs)
        for i in range(n):
            total_hits += hits[i]
            total_misses += misses[i]
        self.core.cache.add_stats(total_hits, total_misses)
        for i in range(n):
            _raise_for(status[i])
        return out

    cdef int _metaspace(self, bytes data, str replacement, bint first, str scheme,
                        bint split, vector[int32_t] *ids) except -1:
        cdef UgMetaspace m
        cdef bytes rep
        cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
        cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
        cdef uint64_t hits = 0, misses = 0
        cdef int rc
        if len(replacement) != 1:
            raise ValueError(f"the replacement must be one character, not {replacement!r}")
        if scheme == "always":
            m.scheme = UG_PREPEND_ALWAYS
        elif scheme == "first":
            m.scheme = UG_PREPEND_FIRST
        elif scheme == "never":
            m.scheme = UG_PREPEND_NEVER
        else:
            raise ValueError(f"scheme must be always, first or never, not {scheme!r}")
        rep = replacement.encode("utf-8")
        m.rep = <const unsigned char *>PyBytes_AS_STRING(rep)
        m.rep_n = PyBytes_GET_SIZE(rep)
        m.split = split
        if n < _KEEP_GIL_BELOW:
            rc = ug_encode_metaspace(self.core, m, s, n, first, ids, &hits, &misses)
        else:
            with nogil:
                rc = ug_encode_metaspace(self.core, m, s, n, first, ids, &hits, &misses)
        self.core.cache.add_stats(hits, misses)
        return _raise_for(rc)

    # ------------------------------------------------------------------ Python API

    def encode(self, bytes data not None, ends=None):
        """The ids of one pre-tokenized, normalized word (its UTF-8), or with ``ends``
        (its words' exclusive byte ends, ascending, the last ``len(data)``) of each word
        of ``data`` in turn, as one list."""
        cdef vector[int32_t] ids
        self._encode(data, ends, &ids, NULL)
        return self._ids_list(ids)

    def count(self, bytes data not None, ends=None):
        """``len(encode(data, ends))`` without building the list."""
        cdef vector[int32_t] ids
        self._encode(data, ends, &ids, NULL)
        return ids.size()

    def encode_with_spans(self, bytes data not None, ends=None):
        """Ids and a flat ``[start0, end0, start1, end1, ...]`` of byte spans in ``data``:
        tokenizers' ``model.tokenize`` offsets of each word, moved by the word's start
        (a ``<0xNN>`` token spans its whole unknown run, as there)."""
        cdef vector[int32_t] ids
        cdef vector[uint32_t] spans
        self._encode(data, ends, &ids, &spans)
        return self._ids_list(ids), [spans[i] for i in range(spans.size())]

    def encode_metaspace(self, bytes data not None, str replacement not None="\u2581",
                         bint first=True, str scheme not None="always", bint split=True):
        """The ids of normalized text ``data`` (UTF-8; ``first``: it begins the input)
        cut as tokenizers' ``Sequence[WhitespaceSplit, Metaspace(replacement, scheme,
        split)]`` cuts it, each piece encoded as ``encode`` does: T5's pre-tokenizer and
        model in one native pass (unigram_metaspace.h states the rules). Equal to
        ``encode(b"".join(pieces), ends)`` over the pre-tokenizer's pieces.

        Raises:
            ValueError: ``replacement`` is not one character, ``scheme`` is not always,
                first or never, or ``data`` is 2 GiB or more.
            ArtifactError: a piece needs the unk id and the model has none.
        """
        cdef vector[int32_t] ids
        self._metaspace(data, replacement, first, scheme, split, &ids)
        return self._ids_list(ids)

    def count_metaspace(self, bytes data not None, str replacement not None="\u2581",
                        bint first=True, str scheme not None="always", bint split=True):
        """``len(encode_metaspace(...))`` without building the list."""
        cdef vector[int32_t] ids
        self._metaspace(data, replacement, first, scheme, split, &ids)
        return ids.size()

    def encode_many(self, list segments, int num_threads=1):
        """``[encode(s) for s in segments]`` (a segment: bytes, or ``(bytes, ends)``)
        with the GIL released once, on up to ``num_threads`` threads."""
        cdef vector[vector[int32_t]] out = self._encode_many(segments, num_threads)
        cdef size_t i
        cdef list result = PyList_New(out.size())
        for i in range(out.size()):
            item = self._ids_list(out[i])
            Py_INCREF(item)
            PyList_SET_ITEM(result, i, item)
        return result

    def count_many(self, list segments, int num_threads=1):
        """Like ``encode_many`` but only the number of ids of each segment."""
        cdef vector[vector[int32_t]] out = self._encode_many(segments, num_threads)
        return [out[i].size() for i in range(out.size())]

    def clear_cache(self):
        self.core.cache.clear()

    def id_to_piece(self, id):
        """The piece of ``id``, or None."""
        if type(id) is int and 0 <= id < len(self._pieces):
            return self._pieces[id]
        return None

    def piece_to_id(self, piece):
        """The id of ``piece`` (a duplicate piece: its last id), or None."""
        return self._ids.get(piece)

    @property
    def size(self):
        """One past the largest id (the vocabulary's length)."""
        return self.core.size()

    @property
    def unk_id(self):
        return self.core.unk_id if self.core.unk_id >= 0 else None

    @property
    def byte_fallback(self):
        return self.core.byte_fallback

    @property
    def cache_hits(self):
        return self.core.cache.hits()

    @property
    def cache_misses(self):
        return self.core.cache.misses()
