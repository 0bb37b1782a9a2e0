"""The bundled tokenizer artifacts, shipped as package data of ``tokserve.artifacts``.

A package (rather than loose data) so that the wheel carries them and
``tokserve.bundled_root()`` finds them beside the installed code, editable or not.
Layout and provenance: README.md in this folder.
"""
