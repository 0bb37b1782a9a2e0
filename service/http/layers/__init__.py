"""The layers every HTTP request passes before it is served: pure ASGI, one job each,
composed in one place (``http/app.py``, ``_layers``), outermost first:

=====================  ======================================================  ==========
layer                  job                                                     in stack
=====================  ======================================================  ==========
``Cors``               CORS preflights and headers (Starlette's middleware)    origins set
``RequestId``          the caller's ``X-Request-ID`` when it is a short        always
                       token, else a fresh one
``Recording``          a ``RequestRecord`` per request, handed to telemetry    always
                       when it ends (499 when the client left)
``Spans``              an OpenTelemetry span around the rest                   tracing on
``Draining``           ``Connection: close`` on every answer while draining    always
``BearerAuth``         401 without the API token (operations not marked open)  token set
``BodyLimit``          413 for a declared ``Content-Length`` over the limit;   always
                       a body without one counted as it streams
``MediaType``          415 for a POST body of a type its operation does not    always
                       take
``Readiness``          503 ``not_ready`` while artifacts load (operations      always
                       that need them)
``FastLane``           the hot POST operations, served here past the           always
                       framework
``FrameworkAnswers``   the framework's answers stamped and recorded as the     always
                       fast lane does its own (request id, status, sizes,
                       route)
``LastResort``         a 500 with the request id for an exception nothing      always
                       answered
=====================  ======================================================  ==========

then the FastAPI app. WebSocket handshakes get the same checks at once
(``websocket_checks.py``); the service routes each scope type to its own path
(``http/app.py``, ``Service``), so these layers see HTTP scopes only. Every answer
carries the request id (``X-Request-ID``, and ``"request_id"`` in every error body); the
refusals and the fast lane's errors are written in the route's error shape (the compat
routes speak their projects' shapes, ``operations.table.error_renderers``).

What the layers share travels in the scope (``answers.REQUEST_ID``, ``answers.RECORD``),
as ASGI middleware shares anything. A layer that only decides (``RequestId``,
``Draining``, ``BearerAuth``, ``BodyLimit``, ``MediaType``, ``Readiness``) is a plain
function returning the next app's awaitable instead of awaiting it: it costs the hot
path one call, no coroutine of its own, and the headers it reads it finds in one loop of
its own. The fast lane is measured against a bare ASGI app that answers a constant
(benchmarks/service_bench.py): nothing here allocates per request on its path but the
record, and the send and receive wrappers (``Draining``, ``BodyLimit``,
``FrameworkAnswers``, ``LastResort``) are made only for the requests that need them.
"""
