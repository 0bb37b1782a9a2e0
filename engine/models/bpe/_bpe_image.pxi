# Included by _bpe.pyx (its imports and declarations are this file's): the tables of
# one vocabulary built as one image (bpe_image.h), from a token list, a merges list or
# the raw bytes of a .tiktoken rank file.

#: the layout of images this build reads and writes (bpe_image.h)
IMAGE_LAYOUT = BPE_IMAGE_LAYOUT


cdef class Image:
    """A built image's memory: read-only, in 2 MiB pages where the system gives them
    (large_pages.h says why). A buffer, taken like ``bytes`` by ``memoryview``,
    ``bytes()``, ``len()``, file writes and ``hashlib``; never written to."""

    cdef lp_block block
    cdef size_t size

    def __len__(self):
        return self.size

    def __getbuffer__(self, Py_buffer *buffer, int flags):
        PyBuffer_FillInfo(buffer, self, self.block.data, self.size, 1, flags)

    def __dealloc__(self):
        lp_free(self.block)


cdef Image _image_of(const unsigned char *data, size_t n):
    cdef Image image = Image.__new__(Image)
    with nogil:
        image.block = lp_copy(data, n)
    if image.block.data == NULL:
        raise MemoryError(f"no memory for an image of {n} bytes")
    image.size = n
    return image


def build_image(tokens=None, merges=None, added=None, *, bytes tiktoken_data=None):
    """The tables of one vocabulary as one image (bpe_image.h): an ``Image`` (a
    read-only buffer) that a ``BpeModel`` reads in place, and that can be written to a
    file and mapped by other processes (tables.py).

    Args:
        tokens: iterable of ``(token_bytes, id)`` for the BPE vocabulary, or None with
            ``tiktoken_data``: the raw bytes of a ``.tiktoken`` rank file, parsed here.
        merges: ``None`` for tiktoken semantics (the rank of a token is its id); else a
            list of ``(left, right)`` byte strings in rank order (``tokenizer.json``).
        added: iterable of ``(literal_bytes, id)`` decodable but never produced by
            merging (special and added tokens).
    Raises:
        ArtifactError: a bad id, a single byte without a token, or a merge operand
            missing from the vocabulary.
    """
    cdef BpeImageBuilder builder
    cdef vector[unsigned char] ranks
    cdef vector[uint64_t] image
    cdef bytes tok, a, b
    cdef long long tid
    cdef int rc
    if tiktoken_data is not None:
        _parse_tiktoken(tiktoken_data, &builder, &ranks)
    else:
        tokens = tokens if isinstance(tokens, list) else list(tokens)
        for tok, tid in tokens:
            builder.add_token(<const unsigned char *>PyBytes_AS_STRING(tok), len(tok), tid, True)
    added = list(added or ())
    for tok, tid in added:
        builder.add_token(<const unsigned char *>PyBytes_AS_STRING(tok), len(tok), tid, False)
    merges = None if merges is None else list(merges)
    for a, b in merges or ():
        builder.add_merge(<const unsigned char *>PyBytes_AS_STRING(a), len(a),
                          <const unsigned char *>PyBytes_AS_STRING(b), len(b))
    with nogil:
        rc = builder.build(merges is None, &image)
    if rc == IMG_NO_BYTE:
        raise ArtifactError(f"vocabulary has no token for the single byte 0x{builder.detail:02x}")
    if rc == IMG_BAD_MERGE:
        a, b = merges[builder.detail]
        raise ArtifactError(f"merge {a!r} + {b!r} (rank {builder.detail}) uses a token missing "
                            f"from the vocabulary")
    if rc == IMG_BAD_ID:
        raise ArtifactError(f"token id {builder.detail} is out of range (0 to 2147483646)",
                            id=builder.detail)
    return _image_of(<const unsigned char *>image.data(), image.size() * 8)


cdef _parse_tiktoken(bytes data, BpeImageBuilder *builder, vector[unsigned char] *store):
    """``base64 rank`` lines into ``builder`` (decoded bytes kept in ``store``), with the
    line number on error."""
    cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), i = 0, line_start, sp, end, k
    cdef long long rank
    cdef ptrdiff_t w
    cdef unsigned char buf[4096]
    cdef Py_ssize_t lineno = 0
    cdef vector[size_t] at
    cdef vector[long long] ranks
    store.reserve(n)
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
        if sp < end and sp - line_start <= 4096 and end - sp - 1 > 0 and end - sp - 1 <= 10:
            w = bt_b64_decode(s + line_start, sp - line_start, buf)
            for k in range(sp + 1, end):
                if s[k] < 48 or s[k] > 57:
                    w = -1
                    break
                rank = rank * 10 + (s[k] - 48)
        if w < 0:
            raise ArtifactError(f"line {lineno}: expected 'base64-token rank', got "
                                f"{data[line_start:min(end, line_start + 60)]!r}", line=lineno)
        at.push_back(store.size())
        store.insert(store.end(), buf, buf + w)
        ranks.push_back(rank)
    if ranks.size() == 0:
        raise ArtifactError("no ranks found in the rank file")
    at.push_back(store.size())
    for k in range(<Py_ssize_t>ranks.size()):
        builder.add_token(store.data() + at[k], at[k + 1] - at[k], ranks[k], True)
