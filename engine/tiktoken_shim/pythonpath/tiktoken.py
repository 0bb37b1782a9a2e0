"""Stand-in for tiktoken, found first when this folder leads PYTHONPATH.

Importing it installs tokserve's tiktoken shim (tokserve.tiktoken_shim), which puts its
own ``tiktoken`` module in ``sys.modules`` in place of this one: the import statement
that found this file gets the shim's.
"""

from tokserve.tiktoken_shim import install

install()
