"""tokserve.service: the HTTP service over the tokserve engine (see docs/SERVICE.md)."""

from .. import __version__ as __version__
