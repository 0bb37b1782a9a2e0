"""Service configuration: one pydantic-settings model read from ``TOKSERVE_*`` env vars.

Every limit has a sensible default so the service runs with zero configuration. The CLI
turns its flags into the same env vars (so ``--workers N`` processes see them too), and
tests build a ``Settings(...)`` directly and hand it to ``create_app`` — nothing here is
read at import time.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from ... import bundled_root
from .roots import DEFAULT_TOKENIZER, default_tables_dir, split_roots



class Settings(BaseSettings):
    """All knobs of the service. Env var = ``TOKSERVE_`` + upper-case field name."""

    model_config = SettingsConfigDict(env_prefix="TOKSERVE_", extra="ignore")

    # --- artifacts -------------------------------------------------------------------
    bundled_artifacts: Path | None = Field(
        default_factory=bundled_root,
        description="Root of the bundled tokenizers (default: the ones installed with the "
        "package); set to an empty string to disable.",
    )
    artifacts: Annotated[list[Path], NoDecode] = Field(
        default_factory=list,
        description="Extra artifact roots (<root>/<name>/<version>/), os.pathsep- or "
        "comma-separated in the env var. Later roots win on a name@version clash.",
    )
    allow_empty: bool = Field(
        default=False,
        description="Start even when no tokenizer loads (serve 503 until a reload adds one); "
        "by default `tokserve serve` refuses to start with nothing to serve.",
    )
    default_tokenizer: str = Field(
        default=DEFAULT_TOKENIZER, description="Used when a request names no tokenizer."
    )
    tables_dir: Path | None = Field(
        default_factory=lambda: default_tables_dir(os.environ),
        description="Where compiled tokenizer tables are kept, one hash-verified file per "
        "artifact version, mapped read-only by every worker so they share one copy "
        "(default: $XDG_CACHE_HOME/tokserve/tables or ~/.cache/tokserve/tables); empty "
        "disables them (each worker then builds its own).",
    )

    # --- limits ----------------------------------------------------------------------
    max_body_bytes: int = Field(
        default=16 * 1024 * 1024, gt=0, description="Request body limit (413 above it)."
    )
    max_text_chars: int = Field(
        default=4_000_000, gt=0, description="Per-text limit in code points (413 above it)."
    )
    max_batch: int = Field(default=4096, gt=0, description="Max items in texts/batch_ids.")
    max_decode_ids: int = Field(
        default=4_000_000, gt=0, description="Max ids in one decode request (all rows)."
    )
    thread_offload_chars: int = Field(
        default=16_384,
        ge=0,
        description="Inputs with at least this many chars in total are encoded in a worker "
        "thread (the engine releases the GIL) so the event loop keeps serving.",
    )

    # --- cache -----------------------------------------------------------------------
    cache_max_entries: int = Field(default=100_000, ge=0, description="0 disables the cache.")
    cache_max_bytes: int = Field(default=256 * 1024 * 1024, ge=0)
    cache_max_text_chars: int = Field(
        default=65_536, ge=0, description="Texts longer than this bypass the cache."
    )

    # --- auth ------------------------------------------------------------------------
    auth_token: SecretStr | None = Field(
        default=None,
        description="When set, every route but /healthz, the playground page and /admin/* "
        "needs 'Authorization: Bearer <token>'.",
    )
    admin_token: SecretStr | None = Field(
        default=None,
        description="Enables /admin/* (hot reload), which then needs "
        "'Authorization: Bearer <admin token>'; unset, /admin/* answers 404.",
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        description="When set, GET /metrics needs 'Authorization: Bearer <metrics token>' "
        "(and not the API token): a scraper's credential that cannot call the API.",
    )
    metrics_open: bool = Field(
        default=False,
        description="GET /metrics without any token even when auth_token is set: what "
        "Prometheus' annotation-based pod discovery (prometheus.io/scrape), which sends "
        "no credentials, needs. The series hold counts, never request content.",
    )

    # --- browsers --------------------------------------------------------------------
    cors_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Origins (scheme://host[:port]) whose web pages may call the API; "
        "comma-separated in the env var. Empty (the default): no CORS headers at all, so "
        "browsers keep other sites' pages out. '*' allows any origin.",
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["localhost", "127.0.0.1", "[::1]"],
        description="Host names of this service's own pages, comma-separated in the env "
        "var: a WebSocket handshake from a page of one of them (any scheme and port) is "
        "same-site; any other origin must be listed in cors_origins. The request's Host "
        "header is never trusted for this (a DNS-rebinding page sends its own).",
    )

    # --- operations (docs/SERVICE.md, "Running a fleet") -----------------------------
    log_level: str = Field(default="info")
    log_format: Literal["json", "text"] | None = Field(
        default=None,
        description="Format of every log line: json, or text; unset: text on a terminal, "
        "json otherwise.",
    )
    access_log: bool = Field(default=True, description="One log line per request (INFO).")
    drain_seconds: float = Field(
        default=5.0, ge=0,
        description="On SIGTERM, keep serving this long with /readyz 503 and "
        "'Connection: close' before the server stops accepting (0: stop at once).",
    )
    graceful_timeout: float = Field(
        default=20.0, gt=0,
        description="After the drain, how long in-flight requests get to finish.",
    )
    header_timeout: float = Field(
        default=10.0, ge=0,
        description="Seconds a request's line and headers may take to arrive, from its "
        "first byte (or the connection's start); later: 408 and the connection closed. "
        "0: no limit.",
    )
    body_timeout: float = Field(
        default=30.0, ge=0,
        description="Seconds a request's body may take to arrive after its headers; "
        "later: 408 and the connection closed. 0: no limit.",
    )
    otel: bool = Field(
        default=False,
        description="OpenTelemetry spans per request and stage (needs the [otel] extra).",
    )

    @field_validator("cors_origins", "allowed_hosts", mode="before")
    @classmethod
    def _split_origins(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [o.strip() for o in value.split(",") if o.strip()]
        return value

    @field_validator("artifacts", mode="before")
    @classmethod
    def _split_roots(cls, value: Any) -> Any:
        return split_roots(value) if isinstance(value, str) else value

    @field_validator("bundled_artifacts", "tables_dir", "auth_token", "admin_token",
                     "metrics_token", "log_format",
                     mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _one_metrics_rule(self) -> Settings:
        if self.metrics_open and self.metrics_token is not None:
            raise ValueError("metrics_open and metrics_token contradict each other: "
                             "/metrics is either open or needs the metrics token")
        return self

    def metrics_bearer(self) -> bytes | None:
        """The bearer token GET /metrics needs: ``metrics_token``, else ``auth_token``
        (the API's), neither with ``metrics_open``; None: no token."""
        if self.metrics_open:
            return None
        token = self.metrics_token or self.auth_token
        return token.get_secret_value().encode() if token is not None else None

    def describe_roots(self) -> str:
        """The roots as one human-readable phrase, for messages about where we looked."""
        roots = self.artifact_roots()
        if not roots:
            return "no root (the bundled root is disabled and no --artifacts DIR is given)"
        return ", ".join(str(r) for r in roots)

    def artifact_roots(self) -> list[Path]:
        """Roots in scan order: the bundled root first, then ``artifacts`` in given order."""
        roots = [self.bundled_artifacts] if self.bundled_artifacts is not None else []
        return roots + list(self.artifacts)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Process-wide settings from the environment (cached; tests build their own)."""
    return Settings()
