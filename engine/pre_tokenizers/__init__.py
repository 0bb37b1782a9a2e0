"""Pre-tokenizers: cut ordinary text into the pieces a model encodes one at a time."""
