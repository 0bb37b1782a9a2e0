"""Formats: every way files become an ``Artifact`` (artifact.py).

* tiktoken rank files (``*.tiktoken``, Llama 3's ``tokenizer.model``) plus a preset or an
  explicit pattern and special tokens;
* Hugging Face ``tokenizer.json`` with a byte-level BPE model;
* SentencePiece ``.model`` files (Llama 2's ``tokenizer.model``), converted to the
  tokenizer.json description (sentencepiece_json.py) and read as one;
* Mistral ``tekken.json``;
* an artifact version directory (``manifest.json`` + files), the unit the service serves:
  every file, chat templates included, is checked against the manifest's sha256 before
  anything is trusted (the manifest itself is versions.py's).
"""

from __future__ import annotations

import base64
from dataclasses import replace
from pathlib import Path
from typing import Any

from . import tables as compiled
from .artifact import AddedToken, Artifact, ChatTemplate, _read, content_hash, sha256_hex
from .errors import ArtifactError, UnsupportedArtifact
from .file_checks import (check_tokenizer_json, merge_pairs, parse_json, read_json,
                          special_tokens_map, token_id, token_literal, vocab_tokens)
from .file_kinds import (SENTENCEPIECE, TEKKEN, TIKTOKEN, TOKENIZER_JSON, UNKNOWN, refusal,
                         sniff, sniff_bytes)
from .presets import PRESETS, Preset
from .sentencepiece_files import parse_model_proto
from .sentencepiece_json import sentencepiece_config, tokenizer_json_from_proto
from .versions import MANIFEST, read_manifest, verify_files


# ---------------------------------------------------------------- tiktoken


def load_tiktoken(
    path: str | Path,
    *,
    preset: str | Preset | None = None,
    pattern: str | None = None,
    special_tokens: dict[str, int] | None = None,
    name: str | None = None,
    bos_token: str | None = None,
    eos_token: str | None = None,
    add_bos_token: bool | None = None,
) -> Artifact:
    """A tiktoken rank file plus a preset or an explicit pattern and special tokens."""
    path = Path(path)
    if isinstance(preset, str):
        try:
            preset = PRESETS[preset]
        except KeyError:
            raise ArtifactError(
                f"unknown preset {preset!r}; known presets: {', '.join(sorted(PRESETS))}"
            ) from None
    data = _read(path)
    kind = sniff_bytes(data)  # another format, or no rank file and nothing asked of one
    if kind.name != TIKTOKEN and (kind.name != UNKNOWN or (preset is None and pattern is None)):
        raise ArtifactError(refusal(path, kind, "a tiktoken rank file"), path=str(path))
    if preset is None and pattern is None:
        raise ArtifactError(
            f"{path} is a tiktoken rank file: pass preset= (one of "
            f"{', '.join(sorted(PRESETS))}) or pattern= and special_tokens="
        )
    pattern = pattern if pattern is not None else preset.pattern
    if special_tokens is None:
        special_tokens = preset.special_tokens if preset is not None else {}
    specials = special_tokens_map(special_tokens, f"{path}: special_tokens")
    bos = bos_token if bos_token is not None else (preset.bos_token if preset else None)
    eos = eos_token if eos_token is not None else (preset.eos_token if preset else None)
    add_bos = add_bos_token if add_bos_token is not None else bool(preset and preset.add_bos_token)
    return tiktoken_artifact(
        data, name=name or (preset.name if preset else path.stem), pattern=pattern,
        special_tokens=specials, bos_token=bos, eos_token=eos, add_bos_token=add_bos)


def tiktoken_artifact(
    data: bytes,
    *,
    name: str,
    pattern: str,
    special_tokens: dict[str, int],
    bos_token: str | None = None,
    eos_token: str | None = None,
    add_bos_token: bool = False,
) -> Artifact:
    """An artifact from rank-file bytes (``base64(token) rank`` lines) already in memory.

    ``load_tiktoken`` reads the file into this; ``tokserve.Encoding(mergeable_ranks=...)``
    serializes a rank dict into it, so both reach the same C parser and the same hash.
    """
    added = tuple(AddedToken(lit, tid) for lit, tid in special_tokens.items())
    settings = {
        "format": "tiktoken",
        "pattern": pattern,
        "special_tokens": special_tokens,
        "bos": bos_token,
        "add_bos": add_bos_token,
    }
    return Artifact(
        name=name,
        format="tiktoken",
        reference="tiktoken",
        tokens=None,
        merges=None,
        whole_piece_lookup=True,
        added_tokens=added,
        normalizer=None,
        pre_tokenizer={"type": "Pattern", "pattern": pattern},
        post_processor=None,
        bos_token=bos_token,
        eos_token=eos_token,
        pad_token=None,
        add_bos_token=add_bos_token,
        add_eos_token=False,
        hash=content_hash(sha256_hex(data), settings),
        tiktoken_data=data,
    )


def rank_file_bytes(mergeable_ranks: dict[bytes, int]) -> bytes:
    """``mergeable_ranks`` in the rank-file format (the inverse of tiktoken's loader)."""
    return b"".join(
        base64.b64encode(token) + b" " + str(rank).encode("ascii") + b"\n"
        for token, rank in sorted(mergeable_ranks.items(), key=lambda item: item[1])
    )


# ---------------------------------------------------------------- tokenizer.json

_SUPPORTED_NORMALIZERS = {"NFC", "NFKC", "NFD", "NFKD", "Sequence"}
_SUPPORTED_PRE_TOKENIZERS = {"Split", "ByteLevel", "Digits", "Sequence"}
_SUPPORTED_POST_PROCESSORS = {"ByteLevel", "TemplateProcessing", "Sequence"}


def _check_tree(spec: dict | None, supported: set[str], stage: str, path: str, key: str) -> None:
    if spec is None:
        return
    if not isinstance(spec, dict):
        raise ArtifactError(f"{path}: {stage} step {spec!r:.60} is not an object", path=path)
    kind = spec.get("type")
    if kind not in supported:
        raise UnsupportedArtifact(f"{stage} {kind!r:.60}", path)
    if kind == "Sequence":
        children = spec.get(key, [])
        if not isinstance(children, list):
            raise ArtifactError(f"{path}: {stage} Sequence {key!r} is not a list", path=path)
        for child in children:
            _check_tree(child, supported, stage, path, key)


def _has_byte_level(spec: dict | None) -> bool:
    if spec is None:
        return False
    if spec.get("type") == "ByteLevel":
        return True
    return any(_has_byte_level(c) for c in spec.get("pretokenizers", []) or [])


def added_token_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return value.get("content")
    return None


def load_tokenizer_json(
    path: str | Path, *, name: str | None = None, config: dict[str, Any] | None = None
) -> Artifact:
    """A Hugging Face ``tokenizer.json``: byte-level BPE, or a piece tokenizer
    (SentencePiece-style BPE with byte fallback, Unigram; ``piece_tokenizer.py``).

    ``config`` is the optional ``tokenizer_config.json`` (BOS/EOS/PAD literals and the
    add_bos/add_eos flags some tokenizers keep there instead of a post-processor).
    """
    path = Path(path)
    data = _read(path)
    spec = parse_json(data, path)
    return tokenizer_json_artifact(spec, sha256_hex(data), name=name or path.parent.name
                                   or path.stem, config=config, where=str(path))


def tokenizer_json_artifact(spec: Any, data_hash: str, *, name: str,
                            config: dict[str, Any] | None = None, where: str,
                            fmt: str = "hf_tokenizer_json") -> Artifact:
    """The artifact of a parsed ``tokenizer.json`` (``data_hash``: the sha256 of the bytes
    it came from; ``where``: the file, for messages). ``fmt`` names the file's format
    (a SentencePiece ``.model`` arrives here converted)."""
    check_tokenizer_json(spec, where)
    if is_piece_tokenizer(spec):
        return _piece_artifact(spec, data_hash, name=name, config=config, where=where,
                               fmt=fmt)
    model = spec["model"]
    if not isinstance(model.get("vocab"), dict):
        raise ArtifactError(f"{where}: model.vocab must be an object of token -> id",
                            path=where)
    if model.get("type", "BPE") != "BPE":
        raise UnsupportedArtifact(f"model type {model.get('type')!r} (only BPE and Unigram)",
                                  where)
    for flag in ("byte_fallback", "fuse_unk"):
        if model.get(flag):
            raise UnsupportedArtifact(f"BPE {flag}=true with a ByteLevel pre-tokenizer", where)
    if model.get("dropout") not in (None, 0, 0.0):
        raise UnsupportedArtifact("BPE dropout", where)
    for affix in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(affix):
            raise UnsupportedArtifact(f"BPE {affix}={model[affix]!r}", where)
    pre = spec.get("pre_tokenizer")
    _check_tree(spec.get("normalizer"), _SUPPORTED_NORMALIZERS, "normalizer", where, "normalizers")
    _check_tree(pre, _SUPPORTED_PRE_TOKENIZERS, "pre_tokenizer", where, "pretokenizers")
    _check_tree(
        spec.get("post_processor"), _SUPPORTED_POST_PROCESSORS, "post_processor", where,
        "processors",
    )
    decoder = spec.get("decoder")
    if decoder is not None and decoder.get("type") != "ByteLevel":
        raise UnsupportedArtifact(f"decoder {decoder.get('type')!r} (only ByteLevel)", where)

    added_ids = {t["id"] for t in spec.get("added_tokens", [])}
    # Added tokens may also sit in the model's vocabulary under their literal (not
    # byte-level) spelling; they are matched by the scan, never produced by merges.
    tokens = vocab_tokens(model["vocab"], added_ids, where)
    merges = merge_pairs(model.get("merges", []), where)
    config = config or {}
    settings = {"format": fmt, "config": {
        k: config.get(k) for k in ("add_bos_token", "add_eos_token", "bos_token", "eos_token")
    }}
    return Artifact(
        name=name,
        format=fmt,
        reference="tokenizers",
        tokens=tokens,
        merges=merges,
        whole_piece_lookup=bool(model.get("ignore_merges", False)),
        added_tokens=_added_tokens(spec),
        normalizer=spec.get("normalizer"),
        pre_tokenizer=pre,
        post_processor=spec.get("post_processor"),
        bos_token=added_token_text(config.get("bos_token")),
        eos_token=added_token_text(config.get("eos_token")),
        pad_token=added_token_text(config.get("pad_token")),
        add_bos_token=bool(config.get("add_bos_token", False)),
        add_eos_token=bool(config.get("add_eos_token", False)),
        hash=content_hash(data_hash, settings),
    )


def is_piece_tokenizer(spec: dict[str, Any]) -> bool:
    """Whether a ``tokenizer.json`` is of the piece family: a Unigram model, or a BPE
    model without a ByteLevel pre-tokenizer (its vocabulary is strings, not bytes)."""
    model = spec["model"]
    kind = model.get("type")
    if kind == "Unigram" or (kind is None and isinstance(model.get("vocab"), list)):
        return True
    return kind in (None, "BPE") and not _has_byte_level(spec.get("pre_tokenizer"))


def _added_tokens(spec: dict[str, Any]) -> tuple[AddedToken, ...]:
    return tuple(
        AddedToken(
            t["content"], t["id"], bool(t.get("special", False)),
            bool(t.get("lstrip", False)), bool(t.get("rstrip", False)),
            bool(t.get("single_word", False)), bool(t.get("normalized", False)),
        )
        for t in spec.get("added_tokens", [])
    )


def _piece_artifact(spec: dict[str, Any], data_hash: str, *, name: str,
                    config: dict[str, Any] | None, where: str, fmt: str) -> Artifact:
    """A piece tokenizer's artifact. Every stage is parsed here once, so a component the
    engine does not implement is refused at import and load, by name and by its path in
    the file (``normalizer.normalizers[1]: normalizer 'BertNormalizer'``). Only the
    file's post-processor adds BOS/EOS, as in ``tokenizers``."""
    from .decoders.piece_decoder import PieceDecoder
    from .models.piece_models import build_piece_model
    from .normalizers.piece_normalizer import PieceNormalizer
    from .pre_tokenizers.piece_pre_tokenizer import PiecePreTokenizer

    try:
        model = build_piece_model(spec["model"])
        PieceNormalizer(spec.get("normalizer"))
        PiecePreTokenizer(spec.get("pre_tokenizer"))
        if spec.get("decoder") is not None:
            PieceDecoder(spec.get("decoder"))
        _check_tree(spec.get("post_processor"), {"TemplateProcessing", "Sequence"},
                    "post_processor", where, "processors")
    except UnsupportedArtifact as e:
        raise UnsupportedArtifact(e.details.get("feature", str(e)), where) from None
    except ArtifactError as e:
        raise ArtifactError(f"{where}: {e}", path=where) from None
    config = config or {}
    settings = {"format": fmt, "family": "pieces", "config": {
        k: config.get(k) for k in ("bos_token", "eos_token")}}
    return Artifact(
        name=name,
        format=fmt,
        reference="tokenizers",
        tokens=None,
        merges=None,
        whole_piece_lookup=False,
        added_tokens=_added_tokens(spec),
        normalizer=spec.get("normalizer"),
        pre_tokenizer=spec.get("pre_tokenizer"),
        post_processor=spec.get("post_processor"),
        bos_token=added_token_text(config.get("bos_token")),
        eos_token=added_token_text(config.get("eos_token")),
        pad_token=added_token_text(config.get("pad_token")),
        add_bos_token=False,
        add_eos_token=False,
        hash=content_hash(data_hash, settings),
        # the built model holds the vocabulary; the parsed one (tens of MB of Python
        # objects for a large vocabulary) is not kept in every worker
        model={k: v for k, v in spec["model"].items() if k not in ("vocab", "merges")},
        decoder=spec.get("decoder"),
        piece_model=model,
    )


# ---------------------------------------------------------------- SentencePiece .model


def load_sentencepiece(path: str | Path, *, name: str | None = None,
                       config: dict[str, Any] | None = None) -> Artifact:
    """A SentencePiece ``.model`` file (protobuf), read as the ``tokenizer.json`` it
    converts to (sentencepiece_json.py: ids equal to sentencepiece's on ordinary text).

    ``config``: the BOS/EOS/PAD literals and ``add_bos_token``/``add_eos_token`` (a
    manifest's), over the model's own (``sentencepiece_config``: BOS added when the
    model has one). The content hash covers the ``.model`` bytes and the config.
    """
    path = Path(path)
    data = _read(path)
    proto = parse_model_proto(data, str(path))
    merged = sentencepiece_config(proto)
    merged.update({k: v for k, v in (config or {}).items() if v is not None})
    spec = tokenizer_json_from_proto(proto, str(path), add_bos=bool(merged["add_bos_token"]),
                                     add_eos=bool(merged["add_eos_token"]))
    # tokenizer_json_artifact: the lead's reader of tokenizer.json dicts (issue 30)
    art = tokenizer_json_artifact(spec, sha256_hex(data), name or path.parent.name or path.stem,
                                  merged)
    return replace(art, format="sentencepiece")


# ---------------------------------------------------------------- Mistral tekken

# mistral-common's defaults for tekken files that list no special tokens (v3 and older);
# the rest up to ``default_num_special_tokens`` are "<SPECIAL_{rank}>" fillers.
TEKKEN_DEFAULT_SPECIALS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)


def load_tekken(path: str | Path, *, name: str | None = None) -> Artifact:
    """A Mistral ``tekken.json``: tiktoken-style ranks shifted up by the special tokens.

    Ordinary ids are ``rank + default_num_special_tokens``; only the first
    ``default_vocab_size - default_num_special_tokens`` ranks are used, as in
    mistral-common. Its tokenizer never matches special literals in text; here they
    follow the caller's special-token policy like any artifact's.
    """
    path = Path(path)
    data = _read(path)
    where = str(path)
    spec = parse_json(data, path)
    try:
        config = spec["config"]
        pattern = config["pattern"]
        n_special = token_id(config["default_num_special_tokens"], f"{path}: config")
        inner = token_id(config["default_vocab_size"], f"{path}: config") - n_special
        vocab = spec["vocab"][:inner]
        if not isinstance(pattern, str):
            raise TypeError("config.pattern is not a string")
    except (KeyError, TypeError) as e:
        raise ArtifactError(f"{path} is not a tekken file: {e!r}", path=where) from None
    for key in ("image", "audio"):
        if spec.get(key):
            raise UnsupportedArtifact(f"tekken {key} configuration", where)
    listed = spec.get("special_tokens")
    try:
        if listed:
            specials = {token_literal(t["token_str"], f"{path}: special_tokens[{i}]"):
                        token_id(t["rank"], f"{path}: special_tokens[{i}]")
                        for i, t in enumerate(listed)}
        else:
            specials = {lit: rank for rank, lit in enumerate(TEKKEN_DEFAULT_SPECIALS)}
        for rank in range(len(specials), n_special):
            specials.setdefault(f"<SPECIAL_{rank}>", rank)
        tokens: list[tuple[bytes, int]] = []
        for i, entry in enumerate(vocab):
            if entry.get("rank") != i:
                raise ArtifactError(f"{path}: vocab entry {i} has rank {entry.get('rank')}")
            tokens.append((base64.b64decode(entry["token_bytes"], validate=True),
                           token_id(i + n_special, f"{path}: vocab entry {i}")))
    except (KeyError, TypeError, AttributeError, ValueError) as e:  # binascii.Error too
        raise ArtifactError(f"{path}: malformed tekken entry: {e!r}", path=where) from None
    settings = {"format": "tekken", "pattern": pattern, "specials": len(specials)}
    return Artifact(
        name=name or path.stem,
        format="tekken",
        reference="tiktoken",
        tokens=tokens,
        merges=None,
        whole_piece_lookup=True,
        added_tokens=tuple(AddedToken(lit, tid) for lit, tid in specials.items()),
        normalizer=None,
        pre_tokenizer={"type": "Pattern", "pattern": pattern},
        post_processor=None,
        bos_token="<s>" if "<s>" in specials else None,
        eos_token="</s>" if "</s>" in specials else None,
        pad_token="<pad>" if "<pad>" in specials else None,
        add_bos_token=True,
        add_eos_token=False,
        hash=content_hash(sha256_hex(data), settings),
    )


# ---------------------------------------------------------------- artifact directories


def read_chat_templates(directory: Path, manifest: dict[str, Any],
                        digests: dict[str, str]) -> tuple[dict[str, ChatTemplate], str | None]:
    """The manifest's ``chat_templates`` (name -> ``{"file", "sha256"}``), each read
    once and checked against the hashes the manifest pins for it (``digests``: those
    ``verify_files`` found), and the default template's name.

    Raises:
        ArtifactError: a template without a file, or whose bytes are not what the
            manifest pins (``sha256`` in the entry, or the file's in ``files``).
    """
    templates: dict[str, ChatTemplate] = {}
    for tname, spec in (manifest.get("chat_templates") or {}).items():
        fname = spec.get("file") if isinstance(spec, dict) else spec
        if not isinstance(fname, str) or Path(fname).is_absolute() or ".." in Path(fname).parts:
            raise ArtifactError(f"{directory / MANIFEST}: chat template {tname!r} names no "
                                f"file inside the artifact")
        raw = _read(directory / fname)
        digest = sha256_hex(raw)
        pinned = [digests.get(fname)]
        if isinstance(spec, dict) and spec.get("sha256"):
            pinned.append(str(spec["sha256"]).removeprefix("sha256:"))
        if any(p is not None and p != digest for p in pinned):
            raise ArtifactError(f"{directory / fname}: chat template {tname!r} does not match "
                                f"the sha256 in {MANIFEST}", path=str(directory / fname))
        try:
            source = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ArtifactError(f"{directory / fname}: chat template is not UTF-8: {e}") from e
        templates[tname] = ChatTemplate(tname, source, "sha256:" + digest)
    default = manifest.get("default_chat_template")
    if default is None and len(templates) == 1:
        default = next(iter(templates))
    if default is not None and default not in templates:
        raise ArtifactError(f"{directory / MANIFEST}: default_chat_template {default!r} is not "
                            f"among chat_templates {sorted(templates)}")
    return templates, default


def load_directory(directory: str | Path, *, verify: bool = True,
                   tables: str | Path | None = None) -> Artifact:
    """An artifact version directory: ``manifest.json`` plus the files it hashes.

    ``tables``: a directory for compiled tables (tables.py). The version's tables are
    mapped from there when a file for its manifest exists, else built, written there
    and mapped; either way the artifact then holds no vocabulary objects of its own.
    """
    directory = Path(directory)
    manifest, raw = read_manifest(directory)
    digests = verify_files(directory, manifest) if verify else {}
    templates, default = read_chat_templates(directory, manifest, digests)
    extra = dict(manifest=manifest, directory=directory, chat_templates=templates,
                 default_chat_template=default)
    if tables is not None:
        key = compiled.key_of(raw)
        found = compiled.read(compiled.path_for(tables, key), key)
        if found is not None:
            return compiled.artifact_from(*found, **extra)
    art = _parse_directory(directory, manifest)
    if tables is not None and not art.is_pieces:  # piece models keep their own tables
        image = compiled.image_of(art)
        path = compiled.path_for(tables, key)
        try:
            compiled.write(path, key, art, image)
            found = compiled.read(path, key)
        except OSError:  # a read-only tables directory: this process keeps its own copy
            found = None
        art = replace(art, tokens=None, merges=None, tiktoken_data=None,
                      tables=found[1] if found else image)
    return replace(art, **extra)


def _parse_directory(directory: Path, manifest: dict[str, Any]) -> Artifact:
    fmt = manifest["format"]
    tokenizer_file = directory / manifest["tokenizer_file"]
    if fmt == "tiktoken":
        specials = manifest.get("special_tokens")
        art = load_tiktoken(
            tokenizer_file,
            preset=manifest.get("preset"),
            pattern=manifest.get("pattern"),
            special_tokens=specials,
            name=manifest["name"],
            bos_token=manifest.get("bos_token"),
            eos_token=manifest.get("eos_token"),
            add_bos_token=manifest.get("add_bos_token"),
        )
    elif fmt == "hf_tokenizer_json":
        cfg_name = manifest.get("tokenizer_config_file")
        config = _config(directory / cfg_name) if cfg_name else {}
        for key in ("bos_token", "eos_token", "pad_token", "add_bos_token", "add_eos_token"):
            if key in manifest and manifest[key] is not None:
                config[key] = manifest[key]
        art = load_tokenizer_json(tokenizer_file, name=manifest["name"], config=config)
    elif fmt == "tekken":
        art = load_tekken(tokenizer_file, name=manifest["name"])
    elif fmt == "sentencepiece":
        art = load_sentencepiece(tokenizer_file, name=manifest["name"], config={
            k: manifest.get(k) for k in ("bos_token", "eos_token", "pad_token", "add_bos_token",
                                         "add_eos_token")})
    else:
        raise UnsupportedArtifact(f"artifact format {fmt!r}", str(directory))
    return art


def load_artifact(source: str | Path, *, tables: str | Path | None = None,
                  **options: Any) -> Artifact:
    """Dispatch on what ``source`` is: directory, ``tokenizer.json`` or rank file
    (``tables`` applies to version directories, see ``load_directory``)."""
    path = Path(source)
    if path.is_dir():
        if (path / MANIFEST).exists():
            return load_directory(path, tables=tables, **options)
        if (path / "tokenizer.json").exists():
            cfg_path = path / "tokenizer_config.json"
            config = _config(cfg_path) if cfg_path.exists() else None
            return load_tokenizer_json(path / "tokenizer.json", config=config, **options)
        raise ArtifactError(f"{path} holds neither {MANIFEST} nor tokenizer.json")
    if not path.exists():
        raise ArtifactError(f"tokenizer file not found: {path}", path=str(path))
    if path.suffix == ".json":
        head = _read(path)[:4096]
        if b'"config"' in head and b'"model"' not in head:
            return load_tekken(path, **options)
        return load_tokenizer_json(path, **options)
    kind = sniff(path)  # by content: Llama 2's and Llama 3's tokenizer.model differ
    as_ranks = options.get("preset") is not None or options.get("pattern") is not None
    if kind.name == TIKTOKEN or (kind.name == UNKNOWN and as_ranks):
        return load_tiktoken(path, **options)  # a broken rank file: its parser names the line
    if not kind.readable:
        raise ArtifactError(refusal(path, kind), path=str(path))
    rank_options = sorted(k for k, v in options.items() if k != "name" and v is not None)
    if rank_options:
        raise ArtifactError(f"{path} is {kind.what}: {', '.join(rank_options)} apply to "
                            f"tiktoken rank files", path=str(path))
    reader = {SENTENCEPIECE: load_sentencepiece, TOKENIZER_JSON: load_tokenizer_json,
              TEKKEN: load_tekken}[kind.name]
    return reader(path, name=options.get("name"))


def _config(path: Path) -> dict[str, Any]:
    """A ``tokenizer_config.json``: a JSON object (file_checks.py's checks)."""
    config = read_json(path)
    if not isinstance(config, dict):
        raise ArtifactError(f"{path} is not a JSON object", path=str(path))
    return config
