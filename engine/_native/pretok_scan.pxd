# The compiled pre-tokenizer scanners (pretok_scan.h, unicode_tables.h): one declaration,
# cimported by _bpe (through bpe_model.h), _scan and _trainer.

cdef extern from "pretok_scan.h" nogil:
    int PT_CL100K, PT_O200K, PT_LLAMA3, PT_QWEN, PT_TEKKEN, PT_DEEPSEEK_V4
    # Exclusive end (> pos) of the piece of UTF-8 s[0:n] starting at pos (0 <= pos < n).
    ptrdiff_t pt_next_piece(int family, const unsigned char *s, ptrdiff_t pos, ptrdiff_t n)

cdef extern from "unicode_tables.h" nogil:
    unsigned pt_props_tiktoken(unsigned cp)
    unsigned pt_props_tokenizers(unsigned cp)
