"""Logs: one format for every line a server process writes, and one access line per
request.

``--log-format json`` (the default when stderr is not a terminal: containers, systemd,
CI) writes one JSON object per line; ``text`` (the default on a terminal) writes
``time LEVEL logger[pid] message``. Both formats cover our own loggers (``tokserve.*``)
and uvicorn's (``uvicorn.error``), through the ``logging.config`` dict that
``logging_config`` returns; JSON lines are formatted by python-json-logger with these
keys: ``time`` (RFC 3339, UTC), ``level``, ``logger``, ``message``, ``pid``, plus
``exc_info`` when there is a traceback.

The access line (logger ``tokserve.access``, level INFO) adds ``request_id``,
``method``, ``route`` (the template, never the path sent), ``status``,
``duration_ms``, ``tokenizer``, ``tokens`` (counted, as billed), ``bytes_in`` and
``bytes_out``. Never request content. It is not built by ``logging``: a LogRecord plus
a JSON formatter cost 12–18 µs a line (measured), a fifth of a whole 1 KB /count. The
request's ``RequestRecord`` already holds every field, so ``AccessLog`` serializes
it with orjson into the same keys and writes the lines of one event-loop turn with one
``write`` (telemetry.py): about a microsecond a request.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Any

import orjson

from .telemetry import RequestRecord

ACCESS_LOGGER = "tokserve.access"
FORMATS = ("json", "text")

_TEXT = "%(asctime)s %(levelname)s %(name)s[%(process)d] %(message)s"
#: Lines written with one write() stay whole next to other processes' writes to the
#: same pipe only up to PIPE_BUF bytes (POSIX: at least 512; 4096 on Linux).
_PIPE_BUF = 4096


def default_format() -> str:
    """``text`` on a terminal, else ``json``."""
    try:
        return "text" if sys.stderr.isatty() else "json"
    except (AttributeError, ValueError):
        return "json"


def logging_config(fmt: str, level: str) -> dict[str, Any]:
    """The ``logging.config.dictConfig`` of a server process: every line to stderr in
    ``fmt``; our loggers and uvicorn's at ``level`` (uvicorn's own access logger stays
    off: ``tokserve.access`` replaces it)."""
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {FORMATS}, not {fmt!r}")
    level = level.upper()
    formatter: dict[str, Any]
    if fmt == "json":
        formatter = {
            "()": "pythonjsonlogger.orjson.OrjsonFormatter",
            "fmt": "%(levelname)s %(name)s %(message)s %(process)d",
            "rename_fields": {"levelname": "level", "name": "logger", "process": "pid"},
            "timestamp": "time",
            # uvicorn adds `color_message` (the message with ANSI colours) to its records
            "reserved_attrs": [*_reserved_attrs(), "color_message"],
        }
    else:
        formatter = {"format": _TEXT}
    handler = {"class": "logging.StreamHandler", "formatter": "main",
               "stream": "ext://sys.stderr"}
    logger = {"handlers": ["stderr"], "level": level, "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"main": formatter},
        "handlers": {"stderr": handler},
        "loggers": {
            "tokserve": logger,
            "uvicorn": logger,
            "uvicorn.error": {"level": level},  # propagates to "uvicorn"
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        },
        "root": {"handlers": ["stderr"], "level": "WARNING"},
    }


def _reserved_attrs() -> list[str]:
    from pythonjsonlogger.core import RESERVED_ATTRS

    return list(RESERVED_ATTRS)


class AccessLog:
    """Telemetry sink: one line per request, in the format of the process's logs.

    Enabled when ``enabled`` and the ``tokserve.access`` logger is enabled for INFO
    (``tokserve serve`` sets that; in-process apps log nothing unless configured). The
    format follows the handler's formatter: JSON unless it is a plain text formatter.
    """

    def __init__(self, enabled: bool = True, fd: int = 2) -> None:
        self.enabled = enabled
        self.fd = fd
        self.logger = logging.getLogger(ACCESS_LOGGER)
        self.pid = os.getpid()
        self._second = -1
        self._stamp = ""
        self._json: bool | None = None

    def __call__(self, batch: list[RequestRecord]) -> None:
        if not self.enabled or not self.logger.isEnabledFor(logging.INFO):
            return
        if self._json is None:
            self._json = _uses_json(self.logger)
        now = time.time()
        line = self._json_line if self._json else self._text_line
        self._write([line(rec, now) for rec in batch])

    def _json_line(self, rec: RequestRecord, now: float) -> bytes:
        return orjson.dumps({
            "time": self._rfc3339(now), "level": "INFO", "logger": ACCESS_LOGGER,
            "message": f"{rec.method} {rec.route} {rec.status}", "pid": self.pid,
            "request_id": rec.request_id, "method": rec.method, "route": rec.route,
            "status": rec.status, "duration_ms": round(rec.duration * 1000, 3),
            "tokenizer": rec.tokenizer, "tokens": rec.tokens,
            "bytes_in": rec.bytes_in, "bytes_out": rec.bytes_out,
        }) + b"\n"

    def _text_line(self, rec: RequestRecord, now: float) -> bytes:
        local = time.localtime(now)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", local) + ",%03d" % (now % 1 * 1000)
        extra = f" tokenizer={rec.tokenizer} tokens={rec.tokens}" if rec.tokenizer else ""
        return (f"{stamp} INFO {ACCESS_LOGGER}[{self.pid}] {rec.method} {rec.route} "
                f"{rec.status} {rec.duration * 1000:.3f}ms request_id={rec.request_id}"
                f"{extra} in={rec.bytes_in} out={rec.bytes_out}\n").encode()

    def _rfc3339(self, now: float) -> str:
        """``now`` as python-json-logger writes ``time`` (``datetime.isoformat`` in UTC),
        with the part up to the second formatted once per second."""
        second = int(now)
        if second != self._second:
            self._second = second
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._stamp}.{int((now - second) * 1e6):06d}+00:00"

    def _write(self, lines: list[bytes]) -> None:
        chunk: list[bytes] = []
        size = 0
        for line in lines:
            if chunk and size + len(line) > _PIPE_BUF:
                _write_all(self.fd, b"".join(chunk))
                chunk, size = [], 0
            chunk.append(line)
            size += len(line)
        if chunk:
            _write_all(self.fd, b"".join(chunk))


def _uses_json(logger: logging.Logger) -> bool:
    """Whether the handler that would write ``logger``'s records formats JSON."""
    current: logging.Logger | None = logger
    while current is not None:
        for handler in current.handlers:
            formatter = handler.formatter
            return formatter is not None and \
                type(formatter).__module__.startswith("pythonjsonlogger")
        if not current.propagate:
            break
        current = current.parent
    return True


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except BlockingIOError:  # a non-blocking stderr that is full: drop, never block the loop
        pass
    except OSError:
        pass
