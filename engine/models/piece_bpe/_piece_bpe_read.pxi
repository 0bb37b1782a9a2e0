# _piece_bpe_read.pxi: included by _piece_bpe.pyx (same module). The tokenizer.json
# "model" fields read into the C++ tables, refusing what tokenizers refuses at load.
# Strings are converted to UTF-8 from CPython's own representation (append_utf8): asking
# CPython for each one's UTF-8 would allocate and keep a copy inside every non-ASCII str.


cdef inline bint _append(str text, vector[unsigned char] *out):
    return append_utf8(PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text),
                       out)


def _flag(value, str field) -> bool:
    """A tokenizer.json boolean (null is its default, false)."""
    if value is None:
        return False
    if value is True or value is False:
        return value
    raise ArtifactError(f"BPE model field {field!r} must be a boolean, not {value!r}")


cdef int _read_vocab(Model *core, dict vocab) except -1:
    """vocab: piece -> id (tokenizers' u32 ids; ours below _MAX_ID), into core.vocab."""
    cdef vector[unsigned char] buf
    cdef long long tid
    core.vocab.reserve(len(vocab), 8 * len(vocab))
    for piece, value in vocab.items():
        if type(piece) is not str:
            raise ArtifactError(f"BPE model.vocab: key {piece!r} is not a string")
        if type(value) is not int or value < 0:
            raise ArtifactError(f"BPE model.vocab[{piece!r}] = {value!r} is not an id")
        if value >= _MAX_ID:
            raise UnsupportedArtifact(f"BPE model.vocab[{piece!r}] = {value!r} (ids must "
                                      f"be below {_MAX_ID})")
        tid = value
        buf.clear()
        if not _append(piece, &buf):
            raise ArtifactError(f"BPE model.vocab: key {piece!r} is not valid Unicode")
        core.vocab.add(buf.data(), buf.size(), <uint32_t>tid)
    core.vocab.finish()
    return 0

cdef int _read_merges(Model *core, list merges) except -1:
    """merges: "a b" strings or [a, b] pairs (not mixed: tokenizers reads one or the
    other), into core.merges; a merge whose pieces or result are not pieces raises."""
    # Every pair's pieces go into one buffer, a then b, for one batched C++ call.
    cdef vector[unsigned char] buf
    cdef vector[uint32_t] lens
    cdef size_t before, n, space, i, done
    cdef int code = PB_MERGE_OK
    cdef bint strings = len(merges) > 0 and type(merges[0]) is str
    buf.reserve(16 * len(merges))
    lens.reserve(2 * len(merges))
    for item in merges:
        before = buf.size()
        if strings:
            if type(item) is not str:
                raise ArtifactError(f"BPE model.merges: {item!r} in a list of \"a b\" "
                                    f"strings")
            if (<str>item).startswith("#version"):
                continue  # tokenizers skips these lines (and does not count them)
            if (<str>item).count(" ") != 1:
                raise ArtifactError(f"BPE model.merges: line {lens.size() // 2 + 1} "
                                    f"({item!r}) is not two pieces separated by one space")
            if not _append(item, &buf):
                raise ArtifactError(f"BPE model.merges: {item!r} is not valid Unicode")
            n = buf.size()
            space = before
            while buf[space] != 32:
                space += 1
            for i in range(space, n - 1):
                buf[i] = buf[i + 1]
            buf.pop_back()
            lens.push_back(<uint32_t>(space - before))
            lens.push_back(<uint32_t>(n - 1 - space))
        else:
            if type(item) not in (list, tuple) or len(item) != 2 or \
                    type(item[0]) is not str or type(item[1]) is not str:
                raise ArtifactError(f"BPE model.merges: {item!r} is not a pair of pieces")
            if not _append(item[0], &buf):
                raise ArtifactError(f"BPE model.merges: {item!r} is not valid Unicode")
            lens.push_back(<uint32_t>(buf.size() - before))
            before = buf.size()
            if not _append(item[1], &buf):
                raise ArtifactError(f"BPE model.merges: {item!r} is not valid Unicode")
            lens.push_back(<uint32_t>(buf.size() - before))
    n = lens.size() // 2
    core.begin_merges(n)
    done = core.add_merges(buf.data(), lens.data(), n, &code)
    if done < n:
        kept = [m for m in merges if not (strings and m.startswith("#version"))]
        left, right = kept[done].split(" ") if strings else kept[done]
        missing = left if code == PB_MERGE_LEFT else right if code == PB_MERGE_RIGHT \
            else left + right
        raise ArtifactError(f"BPE model.merges[{done}] ({left!r}, {right!r}): "
                            f"{missing!r} is not in the vocabulary")
    return 0
