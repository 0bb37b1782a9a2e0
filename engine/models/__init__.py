"""Models: turn each piece into ids, one subfolder per model (its native code, caches, trainer)."""
