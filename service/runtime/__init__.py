"""The runtime room: what a running service holds and how it lives: the state a request
needs (``state.py``), settings and artifact roots, the registry of loaded versions and
its hot reload, the result cache, readiness and the worker processes, metrics, logs,
telemetry and tracing. It knows nothing of HTTP routing."""
