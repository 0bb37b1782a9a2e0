"""Stand-in for tiktoken's plugin namespace, found first when this folder leads PYTHONPATH.

Importing it installs tokserve's tiktoken shim (tokserve.tiktoken_shim), which puts its
own ``tiktoken_ext`` (and ``tiktoken_ext.openai_public``) in ``sys.modules`` in place of
this module.
"""

from tokserve.tiktoken_shim import install

install()
