"""``tokserve encode|count|decode``: one tokenizer, one input, no server.

Only the tokenizer the command uses is loaded (``runtime.roots.load_one``), and it is
named the way the service's request fields name one, so what works in a request works
on the command line:

* ``--tokenizer X`` is the HTTP ``tokenizer`` field: a tokenizer (``name`` or
  ``name@version``) first and, when no tokenizer has that name, a model name
  (``--tokenizer gpt-4o`` counts with o200k_base);
* ``--model X`` is the HTTP ``model`` field: the model table first (tiktoken's names
  and prefixes, then the ``models`` the manifests under the roots declare: GET /models'
  table), then a tokenizer name.

Errors are one line on stderr and exit status 2. The engine's messages speak the HTTP
API (``special_tokens="allow"``); here they are put in the command line's words
(``--special-tokens allow``), so the advice can be typed as it is printed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tokenizer import Tokenizer


class CommandError(Exception):
    """A one-shot command cannot run: ``code`` (the service's code for the same
    problem, where it has one) and a message in the command line's words."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# ==== which tokenizer ==================================================================

def _known_names(roots: Sequence[Path]) -> list[str]:
    from .. import bundled_names

    return sorted({n for root in roots for n in bundled_names(root)})


def _suggestions(wanted: str, roots: Sequence[Path], aliases: dict[str, str]) -> list[str]:
    """Close matches among the tokenizers, the model table and the manifests' models
    (the service's ``Registry._close_matches``)."""
    from ..model_table import tiktoken_table

    exact, _ = tiktoken_table()
    known = sorted({*exact, *aliases, *_known_names(roots)})
    return difflib.get_close_matches(wanted, known, n=5, cutoff=0.6)


def _did_you_mean(suggestions: list[str]) -> str:
    return f"; did you mean {', '.join(suggestions)}?" if suggestions else ""


def _load_models_tokenizer(roots: Sequence[Path], name: str, model: str) -> Tokenizer:
    from .runtime.roots import UnknownTokenizer, load_one

    try:
        return load_one(roots, name)
    except UnknownTokenizer:
        raise CommandError(
            "tokenizer_not_found",
            f"model {model!r} uses tokenizer {name!r}, which is not under the artifact "
            f"roots (available: {', '.join(_known_names(roots)) or 'none'}); import it "
            f"with `tokserve artifact import` and pass its root with --artifacts DIR"
        ) from None


def load_tokenizer(roots: Sequence[Path], tokenizer: str | None, model: str | None,
                   default: str) -> Tokenizer:
    """The tokenizer ``--tokenizer`` or ``--model`` names (see the module docstring);
    ``default`` when neither is given.

    Raises:
        CommandError: no such tokenizer or model, or the model's tokenizer is not
            under the roots.
    """
    from ..model_table import manifest_aliases, resolve_model
    from .runtime.roots import UnknownTokenizer, load_one

    if model is not None:
        aliases = manifest_aliases(roots)
        name = resolve_model(model, aliases)
        if name is not None:
            return _load_models_tokenizer(roots, name, model)
        if model.partition("@")[0] in _known_names(roots):
            return load_one(roots, model)
        raise CommandError(
            "unknown_model",
            f"unknown model {model!r}{_did_you_mean(_suggestions(model, roots, aliases))} "
            f"(model names are tiktoken's, such as gpt-4o, and those the manifests "
            f"declare; or pass --tokenizer NAME)")
    spec = tokenizer or default
    try:
        return load_one(roots, spec)
    except UnknownTokenizer as exc:
        aliases = manifest_aliases(roots)
        name = resolve_model(spec, aliases) if "@" not in spec else None
        if name is not None:
            return _load_models_tokenizer(roots, name, spec)
        raise CommandError(
            "tokenizer_not_found",
            f"{exc.message}{_did_you_mean(_suggestions(spec, roots, aliases))} "
            f"(--tokenizer takes a tokenizer name, name@version or a model name)"
        ) from None


# ==== the input ========================================================================

def read_input(args: argparse.Namespace) -> str:
    """The arguments (joined by single spaces), else ``--file``, else stdin (also with
    a lone ``-``)."""
    given = [] if args.input == ["-"] else args.input
    if given and args.file is not None:
        raise CommandError("invalid_request",
                           "give the input as arguments or with --file, not both")
    if args.file is not None:
        return args.file.read_text(encoding="utf-8")
    if given:
        return " ".join(given)
    return sys.stdin.read()


def parse_ids(data: str) -> list[int]:
    """Token ids as a JSON list or separated by whitespace."""
    stripped = data.strip()
    try:
        ids = json.loads(stripped) if stripped.startswith("[") else \
            [int(x) for x in stripped.split()]
    except ValueError:
        ids = None
    if not isinstance(ids, list) or not all(type(i) is int for i in ids):
        shown = stripped if len(stripped) <= 60 else stripped[:57] + "..."
        raise CommandError("invalid_request",
                           f"decode takes token ids, integers separated by spaces or a "
                           f"JSON list; got {shown!r}")
    return ids


# ==== errors in the command line's words ===============================================

#: ``field="value"`` as the engine's messages write a request field
_FIELD = re.compile(r'\b([a-z_]+)="([^"]*)"')


def in_flag_words(message: str, parser: argparse.ArgumentParser) -> str:
    """``message`` with every ``field="value"`` that is one of ``parser``'s options
    written as that flag (``special_tokens="allow"`` -> ``--special-tokens allow``)."""
    flags = {action.dest: action.option_strings[-1] for action in parser._actions
             if action.option_strings}

    def flag(match: re.Match[str]) -> str:
        name = flags.get(match.group(1))
        return f"{name} {match.group(2)}" if name else match.group(0)

    return _FIELD.sub(flag, message)


# ==== the commands =====================================================================

def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run ``args.command`` (encode, count or decode); returns the exit status."""
    import logging

    from .. import errors as engine_errors
    from .runtime.roots import UnknownTokenizer, default_from_env, roots_from_env

    logging.basicConfig(level=logging.WARNING, format="tokserve: %(message)s")
    try:
        tok = load_tokenizer(roots_from_env(), args.tokenizer, args.model, default_from_env())
        data = read_input(args)
        if args.command == "encode":
            options = dict(special_tokens=args.special_tokens,
                           add_special_tokens=args.add_special_tokens)
            if args.offsets:
                ids, offsets = tok.encode_with_offsets(data, units=args.offsets, **options)
                print(json.dumps({"ids": ids, "offsets": offsets}))
            else:
                print(json.dumps(tok.encode(data, **options)))
        elif args.command == "count":
            print(tok.count(data, special_tokens=args.special_tokens,
                            add_special_tokens=args.add_special_tokens))
        else:
            text = tok.decode(parse_ids(data), errors=args.errors,
                              skip_special_tokens=args.skip_special_tokens)
            sys.stdout.write(text if args.no_newline else text + "\n")
    except CommandError as exc:
        return _fail(exc.code, exc.message)
    except (UnknownTokenizer, engine_errors.EngineError) as exc:
        return _fail(exc.code, in_flag_words(exc.message, parser))
    except (ValueError, OSError) as exc:
        return _fail(None, str(exc))
    return 0


def _fail(code: str | None, message: str) -> int:
    print(f"tokserve: error: {code + ': ' if code else ''}{message}", file=sys.stderr)
    return 2
