"""Patterns and special tokens for tiktoken-format rank files.

A ``.tiktoken`` file holds only ``base64(token) rank`` lines; the pre-tokenizer pattern
and the special tokens live in the reference implementation's code. These are the
published facts for the vocabularies we support, so that ``tokserve.load(path,
preset=...)`` reproduces exactly what tiktoken builds for the same file. The patterns
themselves are defined in patterns.py, next to the scanner that reproduces each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .patterns import CL100K, LLAMA3, O200K, QWEN, R50K


def _llama3_specials(first_id: int = 128000) -> dict[str, int]:
    names = [
        "<|begin_of_text|>",
        "<|end_of_text|>",
        "<|reserved_special_token_0|>",
        "<|reserved_special_token_1|>",
        "<|finetune_right_pad_id|>",
        "<|step_id|>",
        "<|start_header_id|>",
        "<|end_header_id|>",
        "<|eom_id|>",
        "<|eot_id|>",
        "<|python_tag|>",
        "<|image|>",
    ]
    names += [f"<|reserved_special_token_{i}|>" for i in range(2, 246)]
    return {name: first_id + i for i, name in enumerate(names)}


def _o200k_harmony_specials() -> dict[str, int]:
    """o200k_base's specials plus the harmony chat format's, as tiktoken defines them.

    As in tiktoken, id 200018 has two literals: ``<|endofprompt|>`` (from o200k_base) and
    ``<|reserved_200018|>``; both encode to it, and it decodes to the reserved one.
    """
    named = {
        "<|startoftext|>": 199998, "<|endoftext|>": 199999, "<|endofprompt|>": 200018,
        "<|return|>": 200002, "<|constrain|>": 200003, "<|channel|>": 200005,
        "<|start|>": 200006, "<|end|>": 200007, "<|message|>": 200008, "<|call|>": 200012,
    }
    reserved = {f"<|reserved_{i}|>": i for i in (200000, 200001, 200004, 200009, 200010,
                                                  200011, *range(200013, 201088))}
    return {**named, **reserved}


def _qwen_specials(first_id: int = 151643) -> dict[str, int]:
    names = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    names += [f"<|extra_{i}|>" for i in range(205)]
    return {name: first_id + i for i, name in enumerate(names)}


@dataclass(frozen=True)
class Preset:
    """What a tiktoken rank file needs besides its ranks to reproduce the reference."""

    name: str
    pattern: str
    special_tokens: dict[str, int] = field(default_factory=dict)
    bos_token: str | None = None
    eos_token: str | None = None
    add_bos_token: bool = False


_ENDOFTEXT_50K = {"<|endoftext|>": 50256}
_FIM_50K = {"<|fim_prefix|>": 50281, "<|fim_middle|>": 50282, "<|fim_suffix|>": 50283}

PRESETS: dict[str, Preset] = {
    # The GPT-2/GPT-3 era encodings (bundled: artifacts/README.md). gpt2 is r50k_base's
    # ranks (tiktoken builds it from GPT-2's encoder.json/vocab.bpe, which hold the same
    # 50,256 tokens), so it is built from the same rank file.
    "gpt2": Preset("gpt2", R50K.text, dict(_ENDOFTEXT_50K), eos_token="<|endoftext|>"),
    "r50k_base": Preset("r50k_base", R50K.text, dict(_ENDOFTEXT_50K),
                        eos_token="<|endoftext|>"),
    "p50k_base": Preset("p50k_base", R50K.text, dict(_ENDOFTEXT_50K),
                        eos_token="<|endoftext|>"),
    "p50k_edit": Preset("p50k_edit", R50K.text, {**_ENDOFTEXT_50K, **_FIM_50K},
                        eos_token="<|endoftext|>"),
    "cl100k_base": Preset(
        "cl100k_base",
        CL100K.text,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
        eos_token="<|endoftext|>",
    ),
    "o200k_base": Preset(
        "o200k_base",
        O200K.text,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        eos_token="<|endoftext|>",
    ),
    "o200k_harmony": Preset(
        "o200k_harmony",
        O200K.text,
        _o200k_harmony_specials(),
        bos_token="<|startoftext|>",
        eos_token="<|return|>",
    ),
    "llama3": Preset(
        "llama3",
        LLAMA3.text,
        _llama3_specials(),
        bos_token="<|begin_of_text|>",
        eos_token="<|end_of_text|>",
        add_bos_token=True,
    ),
    "qwen": Preset("qwen", QWEN.text, _qwen_specials(), eos_token="<|endoftext|>"),
}
