"""The `regex` module's Unicode version is the references' (17.0).

The pre-tokenizer's regex fallback and the Digits stage take Unicode classes from the
`regex` module, while tiktoken and tokenizers carry their own tables (Unicode 17.0 in the
releases we compare against). A `regex` on another Unicode version changes ids for the
characters that version added or reclassified, so pyproject.toml pins the range whose
Unicode is 17.0, and this test fails loudly on an environment outside it.
"""

import regex


def test_regex_speaks_unicode_17():
    assert regex.match(r"\p{L}", "\U00016EA0"), "U+16EA0 (Beria Erfe, Unicode 17) is a letter"
    assert not regex.match(r"\p{N}", "\U0001246F"), "U+1246F is numeric only from Unicode 18"
    assert not regex.match(r"\p{L}", "\U00011B60"), "unassigned in Unicode 17"
