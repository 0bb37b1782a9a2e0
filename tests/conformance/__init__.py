"""Differential tests: our engine against the reference tokenizers, id for id."""
