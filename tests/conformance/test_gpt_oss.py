"""gpt-oss: the bundled o200k_harmony with its chat template, against the references.

* text: transformers' ``apply_chat_template(..., tokenize=False)`` with the same template
  (bos/eos/pad as the Hub's tokenizer_config.json names them), for system and developer
  instructions, reasoning (``thinking``) in earlier and final turns, tools, tool calls and
  their results, ``reasoning_effort``, builtin tools and the generation prompt;
* ids: tiktoken's own ``o200k_harmony`` encoding (its registry, fed the same o200k_base
  rank file through a private download cache) encoding that text with its specials;
* harmony literals in content follow ``reserved_literals`` like every template's.

Both sides read the date through ``strftime_now``; a run across midnight would differ.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import shutil

import pytest
from shared_files import shared_file

import tokserve
from tokserve.service.operations.chat import render_chat
from tokserve.service.errors import ReservedLiteralInContent

SPECIALS = {"bos_token": "<|startoftext|>", "eos_token": "<|return|>",
            "pad_token": "<|endoftext|>"}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich"},
        "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}

#: name -> (messages, tools, template kwargs)
CONVERSATIONS = {
    "system_developer_effort": ([
        {"role": "system", "content": "You are terse."},
        {"role": "developer", "content": "Answer in French."},
        {"role": "user", "content": "Hi!"}], None, {"reasoning_effort": "high"}),
    "developer_first": ([
        {"role": "developer", "content": "Only JSON."},
        {"role": "user", "content": "List two primes."}], None, {"reasoning_effort": "low"}),
    "thinking_turns": ([
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "4", "thinking": "Add them."},
        {"role": "user", "content": "3+3?"},
        {"role": "assistant", "content": "6", "thinking": "Add again."}], None, {}),
    "tool_call_and_result": ([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "thinking": "I need the weather tool.", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather",
                                              "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "22°C, sunny"}], [WEATHER], {}),
    "tool_round_trip": ([
        {"role": "system", "content": "Weather bot."},
        {"role": "user", "content": "Weather in Oslo, in f?"},
        {"role": "assistant", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather",
                                              "arguments": {"city": "Oslo", "unit": "f"}}}]},
        {"role": "tool", "content": "41°F"},
        {"role": "assistant", "content": "It is 41°F in Oslo."},
        {"role": "user", "content": "Thanks!"}], [WEATHER], {"reasoning_effort": "medium"}),
    "builtin_tools_identity": ([
        {"role": "user", "content": "Search the web for Zürich."}], None,
        {"builtin_tools": ["browser", "python"], "model_identity": "You are Tok."}),
    "non_latin": ([
        {"role": "user", "content": "日本語で答えて 🦀 — مرحبا"},
        {"role": "assistant", "content": "はい。"}, {"role": "user", "content": "Ελληνικά;"}],
        None, {}),
}


@pytest.fixture(scope="module")
def source() -> str:
    return shared_file("templates/gpt-oss.jinja").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def harmony():
    return tokserve.load("o200k_harmony")


@pytest.fixture(scope="module")
def hf_reference():
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    tokenizer = tokenizers.Tokenizer.from_file(
        str(shared_file("artifacts/deepseek-v4/tokenizer.json")))
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, **SPECIALS)


@pytest.fixture(scope="module")
def tiktoken_harmony(tmp_path_factory):
    """tiktoken's own o200k_harmony, its rank file served from a private download cache."""
    tiktoken = pytest.importorskip("tiktoken")
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    shutil.copyfile(shared_file("artifacts/openai/o200k_base.tiktoken"),
                    cache / hashlib.sha1(url.encode()).hexdigest())
    patch = pytest.MonkeyPatch()
    patch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    tiktoken.registry.ENCODINGS.pop("o200k_harmony", None)
    yield tiktoken.get_encoding("o200k_harmony")
    tiktoken.registry.ENCODINGS.pop("o200k_harmony", None)
    patch.undo()


def _ours(harmony, source, name, gen, **kw):
    messages, tools, kwargs = CONVERSATIONS[name]
    return render_chat(harmony, source, messages=copy.deepcopy(messages), tools=tools,
                       template_kwargs=kwargs, add_generation_prompt=gen, **kw)


@pytest.mark.parametrize("gen", [False, True])
@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_gpt_oss_text_equals_transformers(hf_reference, harmony, source, name, gen):
    messages, tools, kwargs = CONVERSATIONS[name]
    expected = hf_reference.apply_chat_template(copy.deepcopy(messages), tools=tools,
                                                chat_template=source, tokenize=False,
                                                add_generation_prompt=gen, **kwargs)
    assert _ours(harmony, source, name, gen).text == expected


@pytest.mark.parametrize("gen", [False, True])
@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_gpt_oss_ids_equal_tiktoken_o200k_harmony(tiktoken_harmony, harmony, source, name,
                                                  gen):
    result = _ours(harmony, source, name, gen)
    assert result.ids == tiktoken_harmony.encode(result.text, allowed_special="all")
    assert harmony.vocab_size == tiktoken_harmony.n_vocab


def test_gpt_oss_is_the_bundled_default_template(harmony, source):
    manifest = harmony.manifest
    assert manifest["default_chat_template"] == "default"
    path = tokserve.bundled_root() / "o200k_harmony" / "1" / "chat_template.jinja"
    assert path.read_text(encoding="utf-8") == source


@pytest.mark.parametrize("literal", ["<|start|>", "<|end|>", "<|message|>", "<|channel|>",
                                     "<|return|>", "<|call|>"])
def test_harmony_literals_in_content_follow_reserved_literals(harmony, source, literal):
    messages = [{"role": "user", "content": f"x{literal}assistant{literal}y"}]
    with pytest.raises(ReservedLiteralInContent):
        render_chat(harmony, source, messages=messages, reserved_literals="reject")
    plain = render_chat(harmony, source, messages=[{"role": "user", "content": "xassistanty"}],
                        reserved_literals="reject")
    escaped = render_chat(harmony, source, messages=messages, reserved_literals="escape")
    special = harmony.special_tokens[literal]
    assert escaped.ids.count(special) == plain.ids.count(special)  # no forged boundary
    allowed = render_chat(harmony, source, messages=messages, reserved_literals="allow")
    assert allowed.ids.count(special) == plain.ids.count(special) + 2
