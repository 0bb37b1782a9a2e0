"""tokserve: the HTTP service over the ``engine`` tokenizers (see docs/SERVICE.md)."""

__version__ = "0.1.0"
