# syntax=docker/dockerfile:1
# tokserve: multi-stage build.
#   build   — compiles the Cython extension by building the project's wheel (and its deps')
#   runtime — slim, non-root, installs only those wheels (the bundled tokenizers are
#             package data inside the tokserve wheel)
# Same install path as the README: pip installs the project from its pyproject.toml.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY engine ./engine
COPY service ./service
COPY artifacts ./artifacts
RUN python -m pip install --no-cache-dir --upgrade pip \
 && python -m pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${PYTHON_IMAGE} AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TOKSERVE_HOST=0.0.0.0 \
    TOKSERVE_PORT=8000
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin tokserve
COPY --from=build /wheels /wheels
RUN python -m pip install --no-cache-dir --no-index --find-links /wheels tokserve \
 && rm -rf /wheels
WORKDIR /app
USER tokserve
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status != 200)"]
CMD ["tokserve", "serve", "--host", "0.0.0.0", "--port", "8000"]
