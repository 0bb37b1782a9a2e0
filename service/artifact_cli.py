"""``tokserve artifact import|verify|list`` and ``tokserve train``: artifacts from the shell.

    tokserve artifact import SOURCE --name N --version V [--out ROOT]
                             [--preset P | --pattern REGEX --special-tokens JSON]
                             [--chat-template FILE [--template-name NAME]]
    tokserve artifact verify DIR [DIR ...]
    tokserve artifact list [--artifacts ROOT ...]
    tokserve train --corpus FILES --vocab-size N --name N --version V --out ROOT ...

SOURCE is a tiktoken rank file (``*.tiktoken``, Llama 3's ``tokenizer.model``; needs a
preset or a pattern), a Hugging Face tokenizer directory, or a Mistral ``tekken.json``.
An import writes ``ROOT/NAME/VERSION/`` with its manifest, loads it once, and prints the
directory and the tokenizer hash. Exit status: 0 on success, 2 on any refusal (with one
line on stderr saying what and why), so scripts and CI can gate on it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from ..presets import PRESETS


def add_parsers(sub: argparse._SubParsersAction) -> None:
    art = sub.add_parser("artifact", help="import, verify and list artifact versions")
    art_sub = art.add_subparsers(dest="artifact_command", required=True)

    imp = art_sub.add_parser("import", help="import a tokenizer into ROOT/NAME/VERSION/")
    imp.add_argument("source", type=Path,
                     help="tiktoken rank file, Hugging Face directory, or tekken.json")
    imp.add_argument("--name", required=True)
    imp.add_argument("--version", required=True)
    imp.add_argument("--out", type=Path, default=Path("artifacts"), metavar="ROOT",
                     help="artifact root (default: ./artifacts)")
    imp.add_argument("--preset", choices=sorted(PRESETS),
                     help="pattern and special tokens of a known rank file")
    imp.add_argument("--pattern", help="pre-tokenizer regex (rank files without a preset)")
    imp.add_argument("--special-tokens", type=json.loads, metavar="JSON",
                     help='special tokens as JSON, e.g. \'{"<|endoftext|>": 100257}\'')
    imp.add_argument("--chat-template", type=Path, metavar="FILE",
                     help="a Jinja chat template to ship with the tokenizer (any source "
                          "format; hashed into the manifest like the other files)")
    imp.add_argument("--template-name", default="default", metavar="NAME",
                     help="name of --chat-template (default: 'default', which also makes "
                          "it the default template)")
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

    # Parsed by tokserve.trainer.main itself; listed here so `tokserve --help` shows it.
    sub.add_parser("train", help="train a byte-level BPE artifact (see tokserve train -h)",
                   add_help=False)


def train(argv: Sequence[str]) -> int:
    from ..trainer import main as train_main

    return train_main(list(argv))


def run(args: argparse.Namespace) -> int:
    from ..errors import EngineError

    try:
        if args.artifact_command == "import":
            return _import(args)
        if args.artifact_command == "verify":
            return _verify(args.dirs)
        return _list(args.artifacts)
    except EngineError as exc:
        print(f"tokserve artifact: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(f"tokserve artifact: {exc}", file=sys.stderr)
        return 2


def _import(args: argparse.Namespace) -> int:
    from ..importers import import_any

    fields = {k: v for k, v in (("preset", args.preset), ("pattern", args.pattern),
                                ("special_tokens", args.special_tokens),
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


def _verify(dirs: Sequence[Path]) -> int:
    from ..manifest import verify_directory

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
    from .registry import discover
    from .settings import get_settings

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
