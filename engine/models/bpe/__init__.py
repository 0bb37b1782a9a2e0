"""Byte-level BPE: merge a piece's bytes into ids (native core, caches, image, trainer)."""
