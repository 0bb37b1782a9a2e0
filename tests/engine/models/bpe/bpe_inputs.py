"""Inputs the BPE model's tests share: a bundled vocabulary's rank file, and pieces."""

from __future__ import annotations

import random


def rank_file(tok) -> str:
    """The .tiktoken rank file of a loaded bundled tokenizer."""
    directory = tok.artifact.directory
    return str(directory / tok.manifest["tokenizer_file"])


def mixed_pieces(seed: int, count: int) -> list[str]:
    """Multi-token pieces of several scripts (what the piece and pair caches hold)."""
    rng = random.Random(seed)
    alphabets = ["的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年",
                 "абвгдеёжзийклмнопрстуфхцчшщъыьэюя", "αβγδεζηθικλμνξοπρστυφχψω",
                 "กขฃคฅฆงจฉชซฌญฎฏฐฑฒณดตถทธนบปผฝพฟภมยรลวศษสหฬอฮ", "😀👍🏽🎉🔥✨"]
    return [" " + "".join(rng.choice(a) for _ in range(rng.randint(2, 30))).strip()
            for a in (rng.choice(alphabets) for _ in range(count))]
