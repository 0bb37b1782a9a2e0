"""Import tokenizers that teams bring into versioned artifact directories.

A checkpoint is only usable with exactly the tokenizer it was trained with, so an
import copies the files unchanged, hashes them, records where they came from, and
loads the result once (so a broken import fails here, not in production). Sources:
tiktoken rank files, SentencePiece ``.model`` files, Hugging Face directories and
tekken files; a file is told apart by its content (file_kinds.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ArtifactError
from ..file_checks import read_json, special_tokens_map
from ..file_kinds import (SENTENCEPIECE, TEKKEN, TIKTOKEN, TOKENIZER_JSON, UNKNOWN, refusal,
                          sniff)
from ..tokenizer_json import added_token_text
from ..patterns import resolve_pattern
from ..presets import PRESETS
from ..sentencepiece_files import CONTROL, UNKNOWN as UNKNOWN_PIECE, read_model_proto
from ..sentencepiece_json import sentencepiece_config, tokenizer_json_from_proto
from ..versions import check_name
from .manifest import write_artifact


def import_tiktoken(rank_file: str | Path, root: str | Path, name: str, version: str, *,
                    preset: str | None = None, pattern: str | None = None,
                    special_tokens: dict[str, int] | None = None,
                    bos_token: str | None = None, eos_token: str | None = None,
                    extra_templates: dict[str, str | Path] | None = None,
                    **fields: Any) -> dict:
    """A tiktoken rank file plus a preset and/or a pattern and special tokens.

    ``pattern``: a pattern name (patterns.py: ``o200k_base`` means its pattern, as in
    ``train``) or a regex; the manifest records the regex. ``special_tokens`` are merged
    into the preset's (``merge_special_tokens``: the preset's are never dropped).
    ``bos_token``/``eos_token`` name special tokens (e.g. for a chat template), default
    the preset's. ``extra_templates`` (name -> Jinja file or text) ship as its chat
    templates.

    Raises:
        ArtifactError: no preset and no pattern, an unknown preset or pattern name, a
            special token clashing with the preset's, or a BOS/EOS that is not a
            special token (and whatever the load of the result refuses).
    """
    rank_file = Path(rank_file)
    if pattern is not None and not pattern:
        raise ArtifactError(f"importing {rank_file}: the pattern is empty")
    if preset is None and pattern is None:
        raise ArtifactError(f"importing {rank_file}: give a preset ({', '.join(PRESETS)}) "
                            f"or a pattern")
    p = PRESETS.get(preset) if preset else None
    if preset and p is None:
        raise ArtifactError(f"unknown preset {preset!r}; known: {', '.join(sorted(PRESETS))}")
    specials = merge_special_tokens(p.special_tokens if p else {}, special_tokens, preset)
    bos = bos_token if bos_token is not None else (p.bos_token if p else None)
    eos = eos_token if eos_token is not None else (p.eos_token if p else None)
    for flag, literal in (("--bos-token", bos), ("--eos-token", eos)):
        if literal is not None and literal not in specials:
            raise ArtifactError(f"{flag} {literal!r} is not one of the special tokens "
                                f"({_listed(specials)})")
    fname = rank_file.name
    return write_artifact(
        root, name, version, {fname: rank_file}, format="tiktoken", tokenizer_file=fname,
        preset=preset, pattern=resolve_pattern(pattern) if pattern else p.pattern,
        special_tokens=specials, bos_token=bos, eos_token=eos,
        add_bos_token=fields.pop("add_bos_token", bool(p and p.add_bos_token)),
        chat_templates=extra_templates, **_default_template(extra_templates),
        **fields,
    )


def merge_special_tokens(base: dict[str, int], given: Any, preset: str | None) -> dict[str, int]:
    """``given`` special tokens added to a preset's ``base``: the preset's stay, so its
    ``eos_token`` (and a chat template's literals) keep naming tokens that exist.

    Raises:
        ArtifactError: a malformed ``given`` (file_checks.py), or one that gives a
            preset literal another id, or a preset id another literal (naming both).
    """
    if given is None:
        return dict(base)
    merged = dict(base)
    owner = {tid: lit for lit, tid in base.items()}
    for lit, tid in special_tokens_map(given, "--special-tokens").items():
        if lit in base and base[lit] != tid:
            raise ArtifactError(f"--special-tokens gives {lit!r} id {tid}, but preset "
                                f"{preset} has {lit!r} as {base[lit]}")
        if tid in owner and owner[tid] != lit:
            raise ArtifactError(f"--special-tokens gives id {tid} to {lit!r}, but preset "
                                f"{preset} has id {tid} as {owner[tid]!r}")
        merged[lit] = tid
    return merged


def _listed(specials: dict[str, int]) -> str:
    names = sorted(specials, key=specials.__getitem__)
    return ", ".join(map(repr, names[:8])) + (f", ... ({len(names)} in all)"
                                              if len(names) > 8 else "") or "none"


def import_hf(directory: str | Path, root: str | Path, name: str, version: str, *,
              extra_templates: dict[str, str | Path] | None = None, **fields: Any) -> dict:
    """A Hugging Face tokenizer directory (tokenizer.json, tokenizer_config.json,
    special_tokens_map.json); chat templates in the config become named templates, and
    ``extra_templates`` are added (replacing one of the same name)."""
    directory = Path(directory)
    if not (directory / "tokenizer.json").exists():
        raise ArtifactError(f"{directory} has no tokenizer.json")
    files = {f: directory / f for f in ("tokenizer.json", "tokenizer_config.json",
                                        "special_tokens_map.json") if (directory / f).exists()}
    config: dict[str, Any] = {}
    if "tokenizer_config.json" in files:
        config = _json_object(files["tokenizer_config.json"])
    if "special_tokens_map.json" in files:
        stm = _json_object(files["special_tokens_map.json"])
        for key in ("bos_token", "eos_token", "pad_token"):
            config.setdefault(key, stm.get(key))
    for key in ("bos_token", "eos_token"):  # given at import: they win over the config's
        if fields.get(key) is not None:
            config[key] = fields.pop(key)
        fields.pop(key, None)
    templates: dict[str, str] = {}
    raw = config.get("chat_template")
    if isinstance(raw, str):
        templates["default"] = raw
    elif isinstance(raw, list):
        for i, t in enumerate(raw):
            if not (isinstance(t, dict) and isinstance(t.get("name"), str)
                    and isinstance(t.get("template"), str)):
                raise ArtifactError(f"{files['tokenizer_config.json']}: chat_template[{i}] "
                                    f"is not {{'name': str, 'template': str}}")
            templates[check_name(t["name"], "chat template name")] = t["template"]
    jinja = directory / "chat_template.jinja"
    if jinja.exists() and "default" not in templates:
        templates["default"] = jinja.read_text(encoding="utf-8")
    default = {} if templates else _default_template(extra_templates)  # the config's stays
    templates.update(extra_templates or {})
    return write_artifact(
        root, name, version, files, format="hf_tokenizer_json", tokenizer_file="tokenizer.json",
        tokenizer_config_file="tokenizer_config.json" if "tokenizer_config.json" in files else None,
        chat_templates=templates, **default,
        bos_token=added_token_text(config.get("bos_token")),
        eos_token=added_token_text(config.get("eos_token")),
        pad_token=added_token_text(config.get("pad_token")),
        add_bos_token=bool(config.get("add_bos_token", False)),
        add_eos_token=bool(config.get("add_eos_token", False)),
        model_max_length=config.get("model_max_length"),
        **fields,
    )


def import_tekken(path: str | Path, root: str | Path, name: str, version: str, *,
                  extra_templates: dict[str, str | Path] | None = None,
                  **fields: Any) -> dict:
    """A Mistral tekken.json, copied unchanged (``extra_templates``: its chat templates)."""
    path = Path(path)
    for key in ("bos_token", "eos_token"):
        if fields.pop(key, None) is not None:
            raise ArtifactError(f"{path}: a tekken file names its own BOS and EOS "
                                f"(<s>, </s>); --{key.replace('_', '-')} is for rank files "
                                f"and Hugging Face directories")
    return write_artifact(root, name, version, {path.name: path}, format="tekken",
                          tokenizer_file=path.name, chat_templates=extra_templates,
                          **_default_template(extra_templates), **fields)


def import_sentencepiece(path: str | Path, root: str | Path, name: str, version: str, *,
                         extra_templates: dict[str, str | Path] | None = None,
                         **fields: Any) -> dict:
    """A SentencePiece ``.model`` file (Llama 2's, Mistral's ``tokenizer.model``), copied
    unchanged; the manifest's ``format`` is ``"sentencepiece"``.

    The manifest records the model's BOS/EOS/PAD literals and ``add_bos_token`` (true
    when it has a BOS, as Llama's tokenizers add it); ``bos_token``/``eos_token`` given
    here replace the model's and must name one of its control pieces. The model is
    converted once here, so what cannot be exact is refused before anything is written.

    Raises:
        ArtifactError: not a SentencePiece model, or a BOS/EOS that is no control piece.
        UnsupportedArtifact: a model feature with no exact equivalent
            (sentencepiece_json.py), named.
    """
    path = Path(path)
    proto, _ = read_model_proto(path)
    tokenizer_json_from_proto(proto, str(path))  # refuse now, naming the source file
    config = sentencepiece_config(proto)
    controls = {p.piece: i for i, p in enumerate(proto.pieces)
                if p.type in (CONTROL, UNKNOWN_PIECE)}
    for key in ("bos_token", "eos_token"):
        literal = fields.pop(key, None)
        if literal is None:
            continue
        if literal not in controls:
            raise ArtifactError(f"--{key.replace('_', '-')} {literal!r} is not one of the "
                                f"model's control pieces ({_listed(controls)})")
        config[key] = literal
    return write_artifact(
        root, name, version, {path.name: path}, format="sentencepiece",
        tokenizer_file=path.name, chat_templates=extra_templates,
        **_default_template(extra_templates),
        bos_token=config["bos_token"], eos_token=config["eos_token"],
        pad_token=config["pad_token"], add_bos_token=config["add_bos_token"],
        add_eos_token=config["add_eos_token"], **fields,
    )


def _default_template(extra: dict[str, str | Path] | None) -> dict[str, Any]:
    """A template given at import is the default when it is the artifact's only one (a
    template named "default" is the default anyway)."""
    if extra and len(extra) == 1 and "default" not in extra:
        return {"default_chat_template": next(iter(extra))}
    return {}


def import_any(path: str | Path, root: str | Path, name: str, version: str,
               **fields: Any) -> dict:
    """Dispatch on what ``source`` is: a directory, a tekken or tokenizer JSON, and for
    other files their content (file_kinds.py): a SentencePiece model or a rank file.

    ``name`` and ``version`` are checked first (versions.py's grammar), before any file
    is read or written.
    """
    check_name(name, "name")
    check_name(version, "version")
    source = Path(path)  # not a keyword "source": that is the manifest's provenance field
    if not source.exists():
        raise ArtifactError(f"{source}: no such file or directory", path=str(source))
    kind = None if source.is_dir() or source.suffix == ".json" else sniff(source)
    if kind is None or kind.name != TIKTOKEN:
        given = [k for k in ("preset", "pattern", "special_tokens") if fields.get(k) is not None]
        if given and (kind is None or kind.name != UNKNOWN):
            raise ArtifactError(f"{source}: {', '.join(given)} apply to tiktoken rank files; "
                                f"this source brings its own")
    if source.is_dir():
        if not (source / "tokenizer.json").exists() and (source / "tokenizer.model").is_file() \
                and sniff(source / "tokenizer.model").name == SENTENCEPIECE:
            raise ArtifactError(f"{source} has no tokenizer.json but a SentencePiece "
                                f"tokenizer.model: import that file")
        return import_hf(source, root, name, version, **fields)
    if kind is None:  # a .json file
        head = source.read_bytes()[:4096]
        if b'"model"' not in head and b'"config"' in head:
            return import_tekken(source, root, name, version, **fields)
        raise ArtifactError(f"{source}: import a tokenizer.json through its directory")
    if kind.name == SENTENCEPIECE:
        return import_sentencepiece(source, root, name, version, **fields)
    if kind.name == TOKENIZER_JSON:
        raise ArtifactError(f"{source} is {kind.what}: import it through its directory")
    if kind.name == TEKKEN:
        return import_tekken(source, root, name, version, **fields)
    if kind.name == TIKTOKEN or (kind.name == UNKNOWN and (fields.get("preset") is not None
                                                           or fields.get("pattern") is not None)):
        return import_tiktoken(source, root, name, version, **fields)  # names a bad line
    raise ArtifactError(refusal(source, kind), path=str(source))


def _json_object(path: Path) -> dict[str, Any]:
    value = read_json(path)
    if not isinstance(value, dict):
        raise ArtifactError(f"{path} is not a JSON object", path=str(path))
    return value
