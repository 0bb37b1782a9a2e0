"""``tokserve artifact import|verify|list`` and ``tokserve train``: artifacts from the shell.

    tokserve artifact import SOURCE --name N --version V [--out ROOT]
                             [--preset P] [--pattern NAME|REGEX] [--special-tokens JSON]
                             [--bos-token LITERAL] [--eos-token LITERAL]
                             [--chat-template FILE [--template-name NAME]]
    tokserve artifact verify DIR [DIR ...]
    tokserve artifact list [--artifacts ROOT ...]
    tokserve artifact export --format hf NAME|DIR [--out DIR]
    tokserve train --corpus FILES --vocab-size N --name N --version V --out ROOT
                   [--format tiktoken|hf] ...

SOURCE is a tiktoken rank file (``*.tiktoken``, Llama 3's ``tokenizer.model``; needs a
preset or a pattern), a SentencePiece model (Llama 2's or Mistral's ``tokenizer.model``),
a Hugging Face tokenizer directory, or a Mistral ``tekken.json``; a file is told apart by
its content, and anything else is refused saying what it is.
An import writes ``ROOT/NAME/VERSION/`` with its manifest, loads it once, and prints the
directory and the tokenizer hash; a refused import leaves nothing behind. Names and
versions (and template names) follow one grammar (versions.py, ``NAME_GRAMMAR``), so
nothing is ever written outside ROOT. ``export --format hf`` writes a Hugging Face
``tokenizer.json`` that ``tokenizers`` loads and encodes to the same ids (tiktoken-format
artifacts with a pattern tokenizers splits the same way). Exit status: 0 on success, 2 on
any refusal (with one line on stderr saying what and why), so scripts and CI can gate on
it. The trainer's argument parsing lives here; the library call is
``tokserve.models.bpe.trainer.train(...) -> manifest``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ..patterns import PATTERN_NAMES
from ..presets import PRESETS
from ..versions import NAME_GRAMMAR

_NAME_HELP = f"artifact name: {NAME_GRAMMAR}"
_VERSION_HELP = f"artifact version: {NAME_GRAMMAR}; natural order (2 < 10)"
_PATTERN_HELP = (f"a pattern name ({', '.join(sorted(PATTERN_NAMES))}) or a pre-tokenizer "
                 f"regex; a regex without a compiled scanner must run in linear time and, "
                 f"as a rank file's whole pre-tokenizer, match every character")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    art = sub.add_parser("artifact", help="import, verify and list artifact versions")
    art_sub = art.add_subparsers(dest="artifact_command", required=True)

    imp = art_sub.add_parser("import", help="import a tokenizer into ROOT/NAME/VERSION/")
    imp.add_argument("source", type=Path,
                     help="tiktoken rank file, SentencePiece tokenizer.model, Hugging Face "
                          "directory, or tekken.json")
    imp.add_argument("--name", required=True, help=_NAME_HELP)
    imp.add_argument("--version", required=True, help=_VERSION_HELP)
    imp.add_argument("--out", type=Path, default=Path("artifacts"), metavar="ROOT",
                     help="artifact root (default: ./artifacts)")
    imp.add_argument("--preset", choices=sorted(PRESETS),
                     help="pattern and special tokens of a known rank file")
    imp.add_argument("--pattern", metavar="NAME|REGEX",
                     help=f"rank files: {_PATTERN_HELP} (replaces the preset's)")
    imp.add_argument("--special-tokens", metavar="JSON",
                     help='rank files: special tokens as JSON, e.g. \'{"<|endoftext|>": '
                          '100257}\'; with --preset they are added to its own (a literal or '
                          'id the preset gives otherwise is refused)')
    imp.add_argument("--bos-token", metavar="LITERAL",
                     help="the BOS special token (for chat templates; rank files, "
                          "SentencePiece models and Hugging Face directories; default: the "
                          "preset's, the model's or the config's)")
    imp.add_argument("--eos-token", metavar="LITERAL", help="the EOS special token (likewise)")
    imp.add_argument("--chat-template", type=Path, metavar="FILE",
                     help="a Jinja chat template to ship with the tokenizer (any source "
                          "format; hashed into the manifest like the other files)")
    imp.add_argument("--template-name", default="default", metavar="NAME",
                     help="name of --chat-template (default: 'default', which also makes "
                          f"it the default template): {NAME_GRAMMAR}")
    imp.add_argument("--models", nargs="+", metavar="MODEL",
                     help="model names or Hugging Face repo ids that use this tokenizer "
                          "(then accepted as `model` in requests)")
    imp.add_argument("--source-note", help="provenance recorded in the manifest")
    imp.add_argument("--license", help="licence recorded in the manifest")

    ver = art_sub.add_parser("verify", help="re-check every file hash and the tokenizer hash")
    ver.add_argument("dirs", nargs="+", type=Path, metavar="DIR")

    lst = art_sub.add_parser("list", help="list artifact versions under the roots")
    lst.add_argument("--artifacts", action="append", type=Path, default=None, metavar="ROOT",
                     help="root to scan (repeatable; default: the bundled artifacts and "
                          "TOKSERVE_ARTIFACTS)")

    exp = art_sub.add_parser("export", help="write an artifact in another library's format")
    exp.add_argument("source", help="artifact name, name@version or version directory")
    exp.add_argument("--format", choices=["hf"], required=True,
                     help="hf: a Hugging Face tokenizer.json with the same ids")
    exp.add_argument("--out", type=Path, default=Path("."), metavar="DIR",
                     help="directory (gets tokenizer.json) or file to write (default: .)")
    exp.add_argument("--artifacts", action="append", type=Path, default=None, metavar="ROOT")

    # Parsed by train() below (main dispatches `tokserve train ...` there before the
    # top-level parser); listed here so `tokserve --help` shows it.
    sub.add_parser("train", help="train a byte-level BPE artifact (see tokserve train -h)",
                   add_help=False)


def _train_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tokserve train", description=(
        "Train a byte-level BPE tokenizer and write an artifact version (tiktoken ranks; "
        "with --format hf also a Hugging Face tokenizer.json giving the same ids)."))
    ap.add_argument("--corpus", nargs="+", required=True, metavar="FILE")
    ap.add_argument("--vocab-size", type=int, required=True,
                    help="total ids: 256 bytes + merges + special tokens")
    ap.add_argument("--special-tokens", nargs="*", default=[], metavar="LITERAL")
    ap.add_argument("--pattern", default="o200k_base", metavar="NAME|REGEX",
                    help=_PATTERN_HELP)
    ap.add_argument("--name", required=True, help=_NAME_HELP)
    ap.add_argument("--version", required=True, help=_VERSION_HELP)
    ap.add_argument("--out", required=True, metavar="ROOT", help="artifact root directory")
    ap.add_argument("--format", choices=["tiktoken", "hf"], default="tiktoken",
                    help="hf: also write tokenizer.json beside the manifest")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--no-progress", action="store_true")
    return ap


def train(argv: Sequence[str]) -> int:
    """``tokserve train``: prints the version directory and its tokenizer hash."""
    from ..errors import EngineError
    from ..models.bpe.trainer import train as train_artifact

    args = _train_parser().parse_args(list(argv))
    formats = ("tiktoken", "hf") if args.format == "hf" else ("tiktoken",)
    try:
        manifest = train_artifact(args.corpus, args.vocab_size, out=args.out, name=args.name,
                                  version=args.version, pattern=args.pattern,
                                  special_tokens=args.special_tokens, formats=formats,
                                  progress=not args.no_progress, num_workers=args.workers)
    except EngineError as exc:
        print(f"tokserve train: {exc.message}", file=sys.stderr)
        return 2
    print(Path(args.out) / args.name / args.version)
    print(manifest.get("tokenizer_hash", ""))
    return 0


def run(args: argparse.Namespace) -> int:
    from ..errors import EngineError

    try:
        if args.artifact_command == "import":
            return _import(args)
        if args.artifact_command == "verify":
            return _verify(args.dirs)
        if args.artifact_command == "export":
            return _export(args)
        return _list(args.artifacts)
    except EngineError as exc:
        print(f"tokserve artifact: {exc.code}: {_one_line(exc.message)}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"tokserve artifact: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - a malformed input no check names yet
        if args.artifact_command != "import":
            raise
        print(f"tokserve artifact: cannot import {args.source}: {type(exc).__name__}: "
              f"{_one_line(str(exc))} (an input this version does not check; please report "
              f"it)", file=sys.stderr)
        return 2


def _one_line(message: str) -> str:
    """``message`` on one line (a file's text quoted in it may hold newlines)."""
    return " ".join(message.split("\n"))


def _import(args: argparse.Namespace) -> int:
    from ..authoring.importers import import_any

    if args.special_tokens is not None:
        try:
            args.special_tokens = json.loads(args.special_tokens)
        except ValueError as e:
            raise ValueError(f"--special-tokens is not JSON: {e}") from None
    fields = {k: v for k, v in (("preset", args.preset), ("pattern", args.pattern),
                                ("special_tokens", args.special_tokens),
                                ("bos_token", args.bos_token), ("eos_token", args.eos_token),
                                ("source", args.source_note), ("license", args.license),
                                ("models", args.models))
              if v is not None}
    if args.chat_template is not None:
        if not args.chat_template.is_file():
            raise ValueError(f"--chat-template {args.chat_template}: no such file")
        fields["extra_templates"] = {args.template_name: args.chat_template}
    if "source" not in fields:
        fields["source"] = f"imported from {args.source.name}"
    manifest = import_any(args.source, args.out, args.name, args.version, **fields)
    print(args.out / args.name / args.version)
    print(manifest["tokenizer_hash"])
    return 0


def _export(args: argparse.Namespace) -> int:
    from .. import load
    from ..authoring.export import write_hf_tokenizer_json
    from .runtime.roots import UnknownTokenizer, load_one, roots_from_env

    source = Path(args.source)
    try:  # a path, or a name resolved as the service resolves it (later roots win)
        tok = load(source) if source.exists() else load_one(
            args.artifacts or roots_from_env(), args.source)
    except UnknownTokenizer as exc:
        print(f"tokserve artifact: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    print(write_hf_tokenizer_json(tok.artifact, args.out))
    return 0


def _verify(dirs: Sequence[Path]) -> int:
    from ..loading import verify_directory

    status = 0
    for directory in dirs:
        try:
            manifest = verify_directory(directory)
        except Exception as exc:  # noqa: BLE001 - report each dir, keep checking the rest
            message = getattr(exc, "message", None) or str(exc)
            print(f"FAILED {directory}: {message}", file=sys.stderr)
            status = 2
            continue
        print(f"ok {directory} {manifest.get('name')}@{manifest.get('version')} "
              f"{manifest.get('tokenizer_hash')}")
    return status


def _list(roots: list[Path] | None) -> int:
    from .runtime.registry import discover
    from .runtime.settings import get_settings

    roots = roots or get_settings().artifact_roots()
    for vdir in discover(roots):
        try:
            manifest = json.loads((vdir / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"{vdir.parent.name}@{vdir.name}\tunreadable manifest: {exc}\t{vdir}")
            continue
        print(f"{vdir.parent.name}@{vdir.name}\t{manifest.get('tokenizer_hash')}\t"
              f"vocab {manifest.get('vocab_size')}\t{vdir}")
    return 0
