"""Scores as tokenizers holds them: serde_json's (not correctly rounded) f64 parsing.

tokenizers' ``model.save`` writes the doubles it holds with shortest round-trip digits,
so reading that file back with Python's (correctly rounded) ``json`` recovers them
exactly; they must equal ``json_score`` (native, unigram_scores.h) of the original file's
numbers, all 32,100 of T5's (about a quarter differ from Python's own reading of the
same text). The plain-Python copy of the algorithm (_scores_reference.py) is the oracle
for everything else.
"""

from __future__ import annotations

import json

import pytest

import random

from tokserve.errors import ArtifactError
from tokserve.models.unigram._scores_reference import serde_json_f64
from tokserve.models.unigram._unigram import json_score

from unigram_inputs import t5_file, t5_reference


def test_t5_scores_are_the_doubles_tokenizers_holds(tmp_path):
    t5_reference().model.save(str(tmp_path))
    with open(tmp_path / "unigram.json", encoding="utf-8") as fh:
        held = [score for _, score in json.load(fh)["vocab"]]
    with open(t5_file(), encoding="utf-8") as fh:
        as_text = [score for _, score in json.load(fh, parse_float=str)["model"]["vocab"]]
    with open(t5_file(), encoding="utf-8") as fh:
        as_float = [score for _, score in json.load(fh)["model"]["vocab"]]
    assert len(held) == len(as_text) == 32100
    assert [json_score(s) for s in as_text] == held
    assert [json_score(s) for s in as_float] == held
    assert sum(a != b for a, b in zip(as_float, held)) > 1000  # why this module exists


@pytest.mark.parametrize("text, value", [
    ("0", 0.0), ("-0", -0.0), ("-0.0", -0.0), ("1.5", 1.5), ("-2.25e3", -2250.0), ("1E2", 100.0),
    ("1e-400", 0.0), ("5e-324", 5e-324), ("0.000001", 1e-6),
    # 20 digits fit the u64, the rest only scale: (12345678901234567890 as f64) * 1e4
    ("123456789012345678901234", float(12345678901234567890) * 1e4),
    ("1e+2", 100.0), ("18446744073709551615", 1.8446744073709552e19),
    ("18446744073709551616.5", 1.8446744073709552e19),
])
def test_serde_json_f64_values(text, value):
    for parse in (serde_json_f64, json_score):
        assert parse(text) == value
        assert str(parse(text)) == str(value)  # the sign of zero too


def test_native_equals_the_reference_on_random_numbers():
    rng = random.Random(8)
    for _ in range(20000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30)))
        text = rng.choice(["", "-"]) + (digits.lstrip("0") or "0")
        if rng.random() < 0.8:
            text += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30)))
        if rng.random() < 0.4:
            text += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 400))
        try:
            want = serde_json_f64(text)
        except ValueError:
            with pytest.raises(ArtifactError):
                json_score(text)
            continue
        assert str(json_score(text)) == str(want), text
        assert json_score(float(text)) == serde_json_f64(repr(float(text))), text


def test_serde_rounding_differs_from_correct_rounding():
    # 17 significant digits: the u64 significand rounds to f64 before the division
    assert serde_json_f64("-2.0122928619384766") != float("-2.0122928619384766")
    assert serde_json_f64("-2.0122928619384766") == -2.012292861938477


@pytest.mark.parametrize("text", ["", "-", "01", "1.", ".5", "1e", "1e+", "+1", "1.5x",
                                  "nan", "inf", "1e400", "-1e99999999999", " 1", "1 "])
def test_serde_json_f64_rejects(text):
    with pytest.raises(ValueError):
        serde_json_f64(text)
    with pytest.raises(ArtifactError):
        json_score(text)


@pytest.mark.parametrize("value", [True, None, "x", [1.0], float("nan")])
def test_json_score_rejects(value):
    with pytest.raises(ArtifactError):
        json_score(value)
