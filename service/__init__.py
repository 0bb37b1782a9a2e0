"""tokserve.service: the HTTP service over the tokserve engine (see docs/SERVICE.md).

Three rooms:

* ``http/``: what every request passes (``layers/``, composed in ``app.py``), the
  framework app and its routes, the OpenAPI document, the one-write protocol;
* ``operations/``: what the service does with a request: the operation table, the
  handlers, encode/count/decode with their limits, chat, streaming, the compat routes,
  the request schemas and the body parser;
* ``runtime/``: what a running service holds: its state (``state.py``), settings and
  artifact roots, the registry and its hot reload, the cache, readiness and the worker
  processes, metrics, logs, telemetry and tracing.

Beside them: ``errors.py`` (the one error table), ``cli.py``, ``one_shot.py`` and
``artifact_cli.py`` (the ``tokserve`` command), and ``static/`` (the playground page).

``http/`` imports the other two and ``operations/`` imports ``runtime/``, with three
edges the other way: the operation table names the endpoints of its GET routes
(``http/routes/``), the state parses bodies with ``operations/parsing.py``, and a worker
process runs the HTTP app (``runtime/worker.py``). None closes a circle: no module
imports itself back through others, function-level imports included.
"""

from .. import __version__ as __version__
