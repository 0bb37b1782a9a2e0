"""Decoders: ids back to bytes and text (and GPT-2's byte-level character map)."""
