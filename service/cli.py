"""``tokserve``: serve the HTTP API, or encode/count/decode once from the command line.

    tokserve serve [--host H] [--port P] [--workers N] [--artifacts DIR ...]
    tokserve encode [TEXT ...] [--file PATH] [--tokenizer NAME[@V]] [--offsets char]
    tokserve count  [TEXT ...] [--file PATH] [--tokenizer ...]
    tokserve decode [ID ...]   [--file PATH] [--tokenizer ...]   # or a JSON list
    tokserve artifact import|verify|list ...      # see service/artifact_cli.py
    tokserve train --corpus FILES --vocab-size N --name N --version V --out ROOT
    tokserve --version

One-shot input: the arguments (joined by single spaces), else ``--file PATH``, else
stdin (also with ``-``). One-shot commands load only the tokenizer they use. Serve
flags are exported as ``TOKSERVE_*`` env vars before uvicorn starts, so every worker
process builds the same settings from its environment.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from . import artifact_cli

_LIMIT_FLAGS = {
    "max_body_bytes": "request body limit in bytes",
    "max_text_chars": "per-text limit in characters",
    "max_batch": "max items per batch",
    "max_decode_ids": "max ids per decode request",
}


class _Version(argparse.Action):
    """``--version``: the package version and the engine build (imported only when asked)."""

    def __init__(self, option_strings, dest, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from .. import build_info

        info = build_info()
        print(f"tokserve {info['version']} (engine: {info['engine']})")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tokserve", description=__doc__.split("\n")[0])
    p.add_argument("--version", action=_Version)
    sub = p.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host", default=os.environ.get("TOKSERVE_HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("TOKSERVE_PORT", "8000")))
    serve.add_argument("--workers", type=int, default=int(os.environ.get("TOKSERVE_WORKERS", "1")))
    serve.add_argument("--artifacts", action="append", type=Path, default=None, metavar="DIR",
                       help="extra artifact root <DIR>/<name>/<version>/ (repeatable)")
    serve.add_argument("--default-tokenizer", default=None)
    serve.add_argument("--allow-empty", action="store_true", default=None,
                       help="start even when no tokenizer artifact loads (503 until reload)")
    serve.add_argument("--log-level", default=None)
    serve.add_argument("--log-format", choices=["json", "text"], default=None,
                       help="log line format (default: text on a terminal, else json)")
    serve.add_argument("--no-access-log", action="store_true", default=None,
                       help="no access line per request")
    serve.add_argument("--drain-seconds", type=float, default=None, metavar="S",
                       help="on SIGTERM, keep serving S seconds with /readyz 503 before "
                            "stopping (default 5)")
    serve.add_argument("--graceful-timeout", type=float, default=None, metavar="S",
                       help="then give in-flight requests S seconds to finish (default 20)")
    serve.add_argument("--header-timeout", type=float, default=None, metavar="S",
                       help="a request's line and headers must arrive within S seconds, "
                            "else 408 and the connection is closed (default 10; 0: none)")
    serve.add_argument("--body-timeout", type=float, default=None, metavar="S",
                       help="its body within S seconds after the headers (default 30; "
                            "0: none)")
    serve.add_argument("--otel", action="store_true", default=None,
                       help="OpenTelemetry spans per request (pip install 'tokserve[otel]')")
    serve.add_argument("--cors-origins", default=None, metavar="ORIGINS",
                       help="comma-separated origins whose pages may call the API "
                            "(default: none, no CORS headers)")
    for name, help_text in _LIMIT_FLAGS.items():
        serve.add_argument("--" + name.replace("_", "-"), type=int, default=None, help=help_text)

    for name, help_text in (("encode", "print ids (JSON)"), ("count", "print the token count"),
                            ("decode", "print the text of ids")):
        cmd = sub.add_parser(name, help=help_text)
        what = "token ids" if name == "decode" else "text"
        cmd.add_argument("input", nargs="*", metavar="ID" if name == "decode" else "TEXT",
                         help=f"the {what} (several arguments are joined by spaces); "
                              f"'-' or none reads stdin")
        cmd.add_argument("--file", type=Path, default=None, metavar="PATH",
                         help=f"read the {what} from this file")
        cmd.add_argument("--tokenizer", default=None, help="name or name@version")
        cmd.add_argument("--artifacts", action="append", type=Path, default=None, metavar="DIR")
        if name != "decode":
            cmd.add_argument("--special-tokens", choices=["reject", "allow", "text"],
                             default="reject")
            cmd.add_argument("--add-special-tokens", action="store_true")
        if name == "encode":
            cmd.add_argument("--offsets", choices=["char", "utf16", "byte"], default=None,
                             help="also print offsets in these units")
        if name == "decode":
            cmd.add_argument("--skip-special-tokens", action="store_true")
            cmd.add_argument("--errors", choices=["replace", "strict"], default="replace")
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
    from .registry import discover
    from .settings import get_settings
    from .supervisor import serve as run

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


def _read_input(args: argparse.Namespace) -> str:
    """The arguments, else ``--file``, else stdin (see the module docstring)."""
    given = [] if args.input == ["-"] else args.input
    if given and args.file is not None:
        raise ValueError("give the input as arguments or with --file, not both")
    if args.file is not None:
        return args.file.read_text(encoding="utf-8")
    if given:
        return " ".join(given)
    return sys.stdin.read()


class _UnknownTokenizer(Exception):
    code = "tokenizer_not_found"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _load_one(roots: Sequence[Path], spec: str | None):
    """Load only the tokenizer ``spec`` names, as the server would resolve it (a later
    root's ``name@version`` wins; a bare name is its newest version).

    Not the service's Registry: that one loads every root and imports the web stack,
    which made counting one string cost 0.54 s against 0.20 s for this.
    """
    from .. import bundled_names, load
    from ..versions import check_name

    if spec is None:
        raise _UnknownTokenizer("no tokenizer given and no default is configured")
    name, _, version = spec.partition("@")
    check_name(name, "name")  # before it becomes a path under any root
    if version:
        check_name(version, "version")
    for root in reversed(list(roots)):
        folder = Path(root) / name
        if folder.is_dir() and (not version or (folder / version / "manifest.json").is_file()):
            return load(spec, root=root)
    available = sorted({n for root in roots for n in bundled_names(root)})
    raise _UnknownTokenizer(f"unknown tokenizer {spec!r}; available: "
                            f"{', '.join(available) or 'none'}")


def one_shot(args: argparse.Namespace) -> int:
    import logging

    from .. import errors as engine_errors
    from .roots import default_from_env, roots_from_env

    logging.basicConfig(level=logging.WARNING, format="tokserve: %(message)s")
    _export_env(args)
    try:
        tok = _load_one(roots_from_env(), args.tokenizer or default_from_env())
        data = _read_input(args)
        if args.command == "encode":
            if args.offsets:
                ids, offsets = tok.encode_with_offsets(
                    data, units=args.offsets, special_tokens=args.special_tokens,
                    add_special_tokens=args.add_special_tokens)
                print(json.dumps({"ids": ids, "offsets": offsets}))
            else:
                print(json.dumps(tok.encode(data, special_tokens=args.special_tokens,
                                            add_special_tokens=args.add_special_tokens)))
        elif args.command == "count":
            print(tok.count(data, special_tokens=args.special_tokens,
                            add_special_tokens=args.add_special_tokens))
        else:
            stripped = data.strip()
            ids = json.loads(stripped) if stripped.startswith("[") else \
                [int(x) for x in stripped.split()]
            sys.stdout.write(tok.decode(ids, errors=args.errors,
                                        skip_special_tokens=args.skip_special_tokens))
    except (_UnknownTokenizer, engine_errors.EngineError) as exc:
        print(f"tokserve: error: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    except (ValueError, OSError) as exc:
        print(f"tokserve: error: {exc}", file=sys.stderr)
        return 2
    return 0


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
    return one_shot(args)


if __name__ == "__main__":
    sys.exit(main())
