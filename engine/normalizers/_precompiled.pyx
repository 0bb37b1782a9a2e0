# cython: language_level=3, embedsignature=True
"""The Precompiled normalizer's native core: SentencePiece's charsmap applied as
tokenizers applies it (precompiled_normalize.h states the rule and the alignment).

A text's UTF-8 is read where CPython keeps it (no copy for an ASCII str); a text the
charsmap leaves as it is comes back as the same object. Long texts are normalized
without the GIL (the object is read-only after construction, so threads share it).
"""

from cpython cimport array
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t
from libc.string cimport memcpy
from libcpp cimport bool as cbool
from libcpp.string cimport string
from libcpp.vector cimport vector

import array as _array_module

cdef array.array _INT32 = _array_module.array("i")
assert _INT32.itemsize == 4

cdef extern from "precompiled_normalize.h" nogil:
    int PC_OK, PC_TOO_SHORT, PC_BAD_TRIE_SIZE
    size_t pc_cluster_end(const unsigned char *s, size_t n, size_t i)
    cdef cppclass PcCharsmap:
        size_t replacements_size()
        const unsigned char *replacements()
    cdef cppclass PcNormalizer:
        PcCharsmap map
        int load(const unsigned char *blob, size_t size)
        cbool normalize(const unsigned char *s, size_t n, string *out,
                        vector[int32_t] *changes)
    void pc_sources(const vector[int32_t] &changes, size_t input_chars, vector[int32_t] *sources)


cdef extern from "Python.h":
    # NULL (an error set) for a str holding a lone surrogate, which UTF-8 cannot hold
    const char *_utf8_of "PyUnicode_AsUTF8AndSize"(object text, Py_ssize_t *size) except NULL


cdef enum:
    # Texts of fewer UTF-8 bytes are normalized holding the GIL: for them releasing and
    # retaking it costs a measurable share of the call.
    _KEEP_GIL_BELOW = 4096


def grapheme_ends(str text not None):
    """The end (a character index) of each extended grapheme cluster of ``text``, as
    the normalizer cuts them; for tests and diagnostics."""
    cdef Py_ssize_t n
    cdef const unsigned char *s = <const unsigned char *>_utf8_of(text, &n)
    cdef size_t i = 0, end, chars = 0
    ends = []
    while i < <size_t>n:
        end = pc_cluster_end(s, n, i)
        while i < end:
            chars += (s[i] & 0xC0) != 0x80
            i += 1
        ends.append(chars)
    return ends


cdef class CharsmapNormalizer:
    """One charsmap (the decoded ``precompiled_charsmap`` bytes) and its normalization."""

    cdef PcNormalizer core
    cdef readonly bytes charsmap

    def __init__(self, bytes charsmap not None):
        """Raises ValueError when the bytes cannot be a charsmap (too short, or a trie
        size that is zero, not a multiple of 4, or past the end)."""
        rc = self.core.load(<const unsigned char *>PyBytes_AS_STRING(charsmap),
                            PyBytes_GET_SIZE(charsmap))
        if rc == PC_TOO_SHORT:
            raise ValueError("the charsmap is shorter than its 4-byte header")
        if rc != PC_OK:
            raise ValueError("the charsmap's trie size is zero, not a multiple of 4, or past "
                             "its end")
        self.charsmap = charsmap

    @property
    def replacements(self):
        """The replacement strings' bytes (NUL-separated), as stored."""
        return (<const char *>self.core.map.replacements())[:self.core.map.replacements_size()]

    cdef bint _run(self, str text, string *out, vector[int32_t] *changes) except -1:
        cdef Py_ssize_t n
        cdef const unsigned char *s = <const unsigned char *>_utf8_of(text, &n)
        cdef bint modified
        out.reserve(n + n // 4 + 16)
        if n < _KEEP_GIL_BELOW:
            modified = self.core.normalize(s, n, out, changes)
        else:
            with nogil:
                modified = self.core.normalize(s, n, out, changes)
        return modified

    def normalize(self, str text not None):
        """``text`` normalized; ``text`` itself when nothing changes."""
        cdef string out
        if not self._run(text, &out, NULL):
            return text
        return PyUnicode_DecodeUTF8(out.data(), out.size(), NULL)

    cdef object _sources(self, str text, string *out, vector[int32_t] *sources):
        # (modified, normalized) and, in *sources, each output character's input character
        cdef vector[int32_t] changes
        modified = self._run(text, out, &changes)
        pc_sources(changes, len(text), sources)
        return PyUnicode_DecodeUTF8(out.data(), out.size(), NULL) if modified else None

    def normalize_sources(self, str text not None):
        """``(normalized, sources)``: ``sources`` (an ``array('i')``) gives, per character
        of ``normalized``, the index of the character of ``text`` that tokenizers aligns
        it with, -1 for a character inserted at the very start (tokenizers' (0, 0));
        None when nothing changed (the identity). Compact: no object per character."""
        cdef string out
        cdef vector[int32_t] sources
        cdef array.array result
        normalized = self._sources(text, &out, &sources)
        if normalized is None:
            return text, None
        result = array.clone(_INT32, sources.size(), False)
        if sources.size():
            memcpy(result.data.as_ints, sources.data(), sources.size() * sizeof(int32_t))
        return normalized, result

    def normalize_aligned(self, str text not None):
        """``(normalized, spans)``: per character of ``normalized``, the ``(start, end)``
        character span of ``text`` that tokenizers aligns it with: one character, or
        (0, 0) for a character inserted at the very start."""
        cdef string out
        cdef vector[int32_t] sources
        cdef size_t i, count
        cdef int32_t source
        cdef object item
        normalized = self._sources(text, &out, &sources)
        count = sources.size()
        result = PyList_New(count)
        for i in range(count):
            source = sources[i]
            if source >= 0:
                item = (source, source + 1)
            else:
                item = (0, 0)
            Py_INCREF(item)
            PyList_SET_ITEM(result, i, item)
        return (text if normalized is None else normalized), result
