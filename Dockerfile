# syntax=docker/dockerfile:1
# tokserve: multi-stage build.
#   build   — compilers, the sources, and a virtualenv at /opt/tokserve holding tokserve
#             (its Cython extensions compiled here) and its dependencies
#   runtime — slim, non-root; receives only that virtualenv: no compiler, no sources, no
#             wheel files, no pip cache (an earlier image kept a 13.6 MB layer of wheels
#             that a later `rm` could not take back)
# Same install path as the README: pip installs the project from its pyproject.toml.
# The bundled tokenizers are package data inside tokserve.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY engine ./engine
COPY service ./service
COPY client ./client
COPY artifacts ./artifacts
RUN python -m venv /opt/tokserve \
 && /opt/tokserve/bin/pip install --no-cache-dir --no-compile . \
 && /opt/tokserve/bin/pip uninstall -y pip setuptools \
 && find /opt/tokserve -name "__pycache__" -prune -exec rm -rf {} +

FROM ${PYTHON_IMAGE} AS runtime
ENV PATH=/opt/tokserve/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TOKSERVE_HOST=0.0.0.0 \
    TOKSERVE_PORT=8000
RUN useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin tokserve
COPY --from=build /opt/tokserve /opt/tokserve
USER 10001:10001
EXPOSE 8000
# The container engine's own probe; Kubernetes and compose use /readyz and /healthz.
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=2).status != 200)"]
ENTRYPOINT ["tokserve"]
CMD ["serve"]
