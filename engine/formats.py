"""Formats: every way files become an ``Artifact`` (artifact.py).

* tiktoken rank files (``*.tiktoken``, Llama 3's ``tokenizer.model``) plus a preset or an
  explicit pattern and special tokens;
* Hugging Face ``tokenizer.json`` (tokenizer_json.py), byte-level or piece tokenizers;
* SentencePiece ``.model`` files (Llama 2's ``tokenizer.model``), converted to the
  tokenizer.json description (sentencepiece_json.py) and read as one (tokenizer_json.py);
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
from .file_checks import parse_json, read_json, special_tokens_map, token_id, token_literal
from .file_kinds import (
    SENTENCEPIECE,
    TEKKEN,
    TIKTOKEN,
    TOKENIZER_JSON,
    UNKNOWN,
    refusal,
    sniff,
    sniff_bytes,
)
from .presets import PRESETS, Preset
from .tokenizer_json import load_sentencepiece, load_tokenizer_json
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
