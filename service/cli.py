"""``tokserve``: serve the HTTP API, or encode/count/decode once from the command line.

The synopsis, in plain text, is ``SYNOPSIS`` (the top-level help shows it). One-shot
commands are ``one_shot.py``'s. Serve flags are exported as ``TOKSERVE_*`` env vars before
uvicorn starts, so every worker process builds the same settings from its environment;
each flag's help names its variable and its default (``Settings``' default: a test
checks they agree).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from . import artifact_cli

SYNOPSIS = """\
commands:
  tokserve serve [--host H] [--port P] [--workers N] [--artifacts DIR ...]
  tokserve encode [TEXT ...] [--file PATH] [--tokenizer NAME[@V] | --model MODEL]
  tokserve count  [TEXT ...] [--file PATH] [--tokenizer ... | --model ...]
  tokserve decode [ID ...]   [--file PATH] [--tokenizer ... | --model ...]
  tokserve artifact import|verify|list|export ...
  tokserve train --corpus FILES --vocab-size N --name N --version V --out ROOT

One-shot input: the arguments (joined by single spaces), else --file PATH, else stdin
(also with -). One-shot commands load only the tokenizer they use; --tokenizer also
takes a model name (gpt-4o), as the service's "tokenizer" field does, and --model takes
one as its "model" field does. `tokserve COMMAND --help` for each command's options.
"""

#: serve's limit flags: (help, default as Settings has it)
_LIMIT_FLAGS = {
    "max_body_bytes": ("request body limit in bytes", "16777216, 16 MiB"),
    "max_text_chars": ("per-text limit in characters (code points)", "4000000"),
    "max_batch": ("max items per batch (texts, batch_ids)", "4096"),
    "max_decode_ids": ("max ids per decode request", "4000000"),
}

_SERVE_EPILOG = """\
Every flag sets the TOKSERVE_* variable it names (a flag wins over the variable). Some
settings are variables only: TOKSERVE_AUTH_TOKEN, TOKSERVE_ADMIN_TOKEN,
TOKSERVE_METRICS_TOKEN, TOKSERVE_METRICS_OPEN, TOKSERVE_ALLOWED_HOSTS, the cache's
TOKSERVE_CACHE_*, TOKSERVE_TABLES_DIR, TOKSERVE_BUNDLED_ARTIFACTS (docs/SERVICE.md,
"Configuration").
"""


def _env(name: str) -> str:
    return "TOKSERVE_" + name.upper()


class _Version(argparse.Action):
    """``--version``: the package version and the engine build (imported only when asked)."""

    def __init__(self, option_strings, dest, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from .. import build_info

        info = build_info()
        print(f"tokserve {info['version']} (engine: {info['engine']})")
        parser.exit()


def _add_serve(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser(
        "serve", help="run the HTTP service", epilog=_SERVE_EPILOG,
        description="Run the HTTP service (docs/SERVICE.md). Each flag's help names its\n"
                    "default and the TOKSERVE_* variable it sets.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    serve.add_argument("--host", default=os.environ.get("TOKSERVE_HOST", "127.0.0.1"),
                       help="address to listen on; 0.0.0.0 for every interface "
                            "(default: 127.0.0.1; env TOKSERVE_HOST)")
    serve.add_argument("--port", type=int, default=int(os.environ.get("TOKSERVE_PORT", "8000")),
                       help="port to listen on (default: 8000; env TOKSERVE_PORT)")
    serve.add_argument("--workers", type=int,
                       default=int(os.environ.get("TOKSERVE_WORKERS", "1")), metavar="N",
                       help="worker processes sharing the socket (default: 1; env "
                            "TOKSERVE_WORKERS)")
    serve.add_argument("--artifacts", action="append", type=Path, default=None, metavar="DIR",
                       help="extra artifact root <DIR>/<name>/<version>/, repeatable, after "
                            "the bundled one (default: none; env TOKSERVE_ARTIFACTS, "
                            "':'- or ','-separated)")
    serve.add_argument("--default-tokenizer", default=None, metavar="NAME",
                       help="the tokenizer of requests that name none (default: o200k_base; "
                            "env TOKSERVE_DEFAULT_TOKENIZER)")
    serve.add_argument("--allow-empty", action="store_true", default=None,
                       help="start even when no tokenizer artifact loads, 503 until a reload "
                            "(default: off, refuse to start; env TOKSERVE_ALLOW_EMPTY=1)")
    serve.add_argument("--log-level", default=None, metavar="LEVEL",
                       help="debug, info, warning or error; warning also silences the "
                            "access log (default: info; env TOKSERVE_LOG_LEVEL)")
    serve.add_argument("--log-format", choices=["json", "text"], default=None,
                       help="log line format (default: text on a terminal, else json; env "
                            "TOKSERVE_LOG_FORMAT)")
    serve.add_argument("--no-access-log", action="store_true", default=None,
                       help="no access line per request (default: one line per request; "
                            "env TOKSERVE_ACCESS_LOG=0)")
    serve.add_argument("--drain-seconds", type=float, default=None, metavar="S",
                       help="on SIGTERM, keep serving S seconds with /readyz 503 before "
                            "stopping (default: 5; env TOKSERVE_DRAIN_SECONDS)")
    serve.add_argument("--graceful-timeout", type=float, default=None, metavar="S",
                       help="then give in-flight requests S seconds to finish (default: 20; "
                            "env TOKSERVE_GRACEFUL_TIMEOUT)")
    serve.add_argument("--header-timeout", type=float, default=None, metavar="S",
                       help="a request's line and headers must arrive within S seconds, "
                            "else 408 and the connection is closed; 0: no limit (default: "
                            "10; env TOKSERVE_HEADER_TIMEOUT)")
    serve.add_argument("--body-timeout", type=float, default=None, metavar="S",
                       help="its body within S seconds after the headers; 0: no limit "
                            "(default: 30; env TOKSERVE_BODY_TIMEOUT)")
    serve.add_argument("--otel", action="store_true", default=None,
                       help="OpenTelemetry spans per request, pip install 'tokserve[otel]' "
                            "(default: off; env TOKSERVE_OTEL=1)")
    serve.add_argument("--cors-origins", default=None, metavar="ORIGINS",
                       help="comma-separated origins whose pages may call the API "
                            "(default: none, no CORS headers; env TOKSERVE_CORS_ORIGINS)")
    for name, (help_text, default) in _LIMIT_FLAGS.items():
        serve.add_argument("--" + name.replace("_", "-"), type=int, default=None, metavar="N",
                           help=f"{help_text} (default: {default}; env {_env(name)})")


def _add_one_shot(sub: argparse._SubParsersAction) -> None:
    for name, help_text in (("encode", "print ids (JSON)"), ("count", "print the token count"),
                            ("decode", "print the text of ids, and a newline")):
        cmd = sub.add_parser(name, help=help_text, description=help_text[0].upper() +
                             help_text[1:] + ", with one tokenizer, no server.")
        cmd.set_defaults(command_parser=cmd)
        what = "token ids" if name == "decode" else "text"
        cmd.add_argument("input", nargs="*", metavar="ID" if name == "decode" else "TEXT",
                         help=f"the {what} (several arguments are joined by spaces); "
                              f"'-' or none reads stdin")
        cmd.add_argument("--file", type=Path, default=None, metavar="PATH",
                         help=f"read the {what} from this file")
        which = cmd.add_mutually_exclusive_group()
        which.add_argument("--tokenizer", default=None, metavar="NAME",
                           help="tokenizer name or name@version; a model name (gpt-4o) is "
                                "accepted too when no tokenizer has that name, as the "
                                "service's \"tokenizer\" field (default: o200k_base; env "
                                "TOKSERVE_DEFAULT_TOKENIZER)")
        which.add_argument("--model", default=None, metavar="MODEL",
                           help="model name (gpt-4o, openai/gpt-oss-20b, or one a manifest "
                                "declares), resolved as the service's \"model\" field: "
                                "the model table first, then a tokenizer name")
        cmd.add_argument("--artifacts", action="append", type=Path, default=None, metavar="DIR",
                         help="extra artifact root (repeatable; env TOKSERVE_ARTIFACTS)")
        if name != "decode":
            cmd.add_argument("--special-tokens", choices=["reject", "allow", "text"],
                             default="reject",
                             help="a special-token literal in the text: an error (reject), "
                                  "its special id (allow), or plain characters (text) "
                                  "(default: reject)")
            cmd.add_argument("--add-special-tokens", action="store_true",
                             help="add the tokenizer's BOS/EOS, if it has them")
        if name == "encode":
            cmd.add_argument("--offsets", choices=["char", "utf16", "byte"], default=None,
                             help="also print offsets in these units")
        if name == "decode":
            cmd.add_argument("--skip-special-tokens", action="store_true",
                             help="leave special tokens out of the text")
            cmd.add_argument("--errors", choices=["replace", "strict"], default="replace",
                             help="bytes that are not UTF-8: U+FFFD (replace) or an error "
                                  "(strict) (default: replace)")
            cmd.add_argument("-n", "--no-newline", action="store_true",
                             help="print the text exactly as decoded, without the newline "
                                  "added after it")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tokserve", epilog=SYNOPSIS, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="tokserve: serve the HTTP API, or encode/count/decode once from the "
                    "command line.")
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_serve(sub)
    _add_one_shot(sub)
    artifact_cli.add_parsers(sub)
    return p


def _export_env(args: argparse.Namespace) -> None:
    if args.artifacts:
        os.environ["TOKSERVE_ARTIFACTS"] = os.pathsep.join(str(a.resolve()) for a in args.artifacts)
    if getattr(args, "default_tokenizer", None):
        os.environ["TOKSERVE_DEFAULT_TOKENIZER"] = args.default_tokenizer
    if getattr(args, "log_level", None):
        os.environ["TOKSERVE_LOG_LEVEL"] = args.log_level
    if getattr(args, "cors_origins", None):
        os.environ["TOKSERVE_CORS_ORIGINS"] = args.cors_origins
    if getattr(args, "allow_empty", None):
        os.environ["TOKSERVE_ALLOW_EMPTY"] = "1"
    if getattr(args, "log_format", None):
        os.environ["TOKSERVE_LOG_FORMAT"] = args.log_format
    if getattr(args, "no_access_log", None):
        os.environ["TOKSERVE_ACCESS_LOG"] = "0"
    if getattr(args, "otel", None):
        os.environ["TOKSERVE_OTEL"] = "1"
    for name in ("drain_seconds", "graceful_timeout", "header_timeout", "body_timeout"):
        if getattr(args, name, None) is not None:
            os.environ["TOKSERVE_" + name.upper()] = str(getattr(args, name))
    for name in _LIMIT_FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            os.environ["TOKSERVE_" + name.upper()] = str(value)


def serve(args: argparse.Namespace) -> int:
    from .runtime.registry import discover
    from .runtime.settings import get_settings
    from .runtime.supervisor import serve as run

    _export_env(args)
    get_settings.cache_clear()
    settings = get_settings()
    if not settings.allow_empty and not discover(settings.artifact_roots()):
        # Checked here too (the lifespan refuses as well, once artifacts fail to load) so
        # that N workers do not each start, fail and be restarted.
        print(f"tokserve: error: no tokenizer artifacts found; looked in "
              f"{settings.describe_roots()} "
              f"(expected <root>/<name>/<version>/manifest.json); add some with "
              f"--artifacts DIR, or pass --allow-empty to start anyway", file=sys.stderr)
        return 2
    return run(settings, host=args.host, port=args.port, workers=args.workers)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["train"]:
        return artifact_cli.train(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "serve":
        code = serve(args)
        # Stopped, socket closed, metrics directory removed: skip the interpreter's
        # teardown, which frees every loaded tokenizer object by object (0.9 s measured
        # for the bundled four), so the process is gone as soon as it is done.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if args.command == "artifact":
        return artifact_cli.run(args)
    from .one_shot import run

    _export_env(args)
    return run(args, args.command_parser)


if __name__ == "__main__":
    sys.exit(main())
