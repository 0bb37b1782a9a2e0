"""The bundled SentencePiece-family tokenizers (mistral-v0.3, phi-3-mini): served by name
and by Hugging Face repo id, with their instruct chat formats, through the real app.

References, each on the bundled files (no network):
- Mistral v0.3's template: mistral-common's ``MistralTokenizer.v3()``
  ``encode_chat_completion`` (its v3 SentencePiece tokenizer has the same pieces and
  control ids as the bundled tokenizer.json); a rendered chat's ids must equal its tokens.
  A chat that ends with an assistant message is compared with its finetuning mode, which
  accepts one, and ``continue_final_message`` with an assistant ``prefix`` message.
- Phi-3's templates: transformers' ``apply_chat_template`` over a ``PreTrainedTokenizerFast``
  built from the bundled files gives the text; ``tokenizers`` encodes that text to the ids.
- ``--models`` at import: an imported Llama 2 (from ../shared, skipped when absent) is
  served by ``meta-llama/Llama-2-7b-hf``.
"""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from shared_files import shared_file

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "artifacts"
MISTRAL = "mistralai/Mistral-7B-Instruct-v0.3"
PHI3 = "microsoft/Phi-3-mini-4k-instruct"
TEXTS = ["hello world", "  two  spaces\tand a tab\n\nnew lines ", "naïve café 東京 😀👍🏽 1234567",
         "▁ itself and <0x41>", "def f(x):\n    return x ** 2\n"]


@pytest.fixture(scope="module")
def reference():
    """``reference(name)``: tokenizers' Tokenizer over a bundled tokenizer.json."""
    tokenizers = pytest.importorskip("tokenizers")
    cache: dict[str, object] = {}

    def get(name: str):
        if name not in cache:
            cache[name] = tokenizers.Tokenizer.from_file(
                str(BUNDLED / name / "1" / "tokenizer.json"))
        return cache[name]
    return get


# ==== by name and by repo id =============================================================

@pytest.mark.parametrize("model,tokenizer", [
    ("mistral-v0.3", "mistral-v0.3"), (MISTRAL, "mistral-v0.3"),
    ("mistralai/Mistral-7B-v0.3", "mistral-v0.3"),
    ("phi-3-mini", "phi-3-mini"), (PHI3, "phi-3-mini"),
    ("microsoft/Phi-3-mini-128k-instruct", "phi-3-mini"),
    ("microsoft/Phi-3.5-mini-instruct", "phi-3-mini"),
])
def test_served_by_name_and_by_repo_id(client, reference, model, tokenizer):
    field = "tokenizer" if model == tokenizer else "model"
    r = client.post("/encode", json={field: model, "texts": TEXTS})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["tokenizer"] == f"{tokenizer}@1"
    expected = [e.ids for e in reference(tokenizer).encode_batch(TEXTS,
                                                                 add_special_tokens=False)]
    assert [res["ids"] for res in body["results"]] == expected


def test_models_lists_their_repo_ids(client):
    rows = {r["model"]: r for r in client.get("/models").json()["models"]}
    for model, tokenizer in ((MISTRAL, "mistral-v0.3"), ("mistralai/Mistral-7B-v0.3",
                                                          "mistral-v0.3"),
                             (PHI3, "phi-3-mini"), ("microsoft/Phi-3-mini-128k-instruct",
                                                    "phi-3-mini"),
                             ("microsoft/Phi-3.5-mini-instruct", "phi-3-mini")):
        assert rows[model]["tokenizer"] == tokenizer and rows[model]["served"]
        assert rows[model]["source"] == "manifest"


# ==== Mistral v0.3: ids equal mistral-common's ===========================================

def _u(c):
    return {"role": "user", "content": c}


def _a(c):
    return {"role": "assistant", "content": c}


def _s(c):
    return {"role": "system", "content": c}


def _tool(c, i="abcDEF123"):
    return {"role": "tool", "content": c, "tool_call_id": i}


def _call(name, arguments, i="abcDEF123"):
    return {"role": "assistant", "tool_calls": [
        {"id": i, "type": "function", "function": {"name": name, "arguments": arguments}}]}


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather now, in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]

#: name -> (messages, tools)
MISTRAL_CHATS = {
    "one turn": ([_u("Hello")], None),
    "whitespace kept": ([_u("  Hello world  "), _a(" Hi!  \n"), _u("\nagain\n")], None),
    "multi-turn": ([_u("Hi"), _a("Hello! How can I help?"), _u("Tell me a joke."),
                    _a("No."), _u("Please?")], None),
    "system: into the last user message": ([_s("You are terse."), _u("Hi"), _a("Yo"),
                                            _u("Again")], None),
    "two systems": ([_s("One."), _u("Hi"), _s("Two."), _u("Again")], None),
    "system only": ([_s("Only a system prompt")], None),
    "system, then assistant first": ([_s("sys"), _a("hey"), _u("u")], None),
    "consecutive users joined": ([_u("a"), _u("b"), _u(""), _u("c")], None),
    "text parts": ([{"role": "user", "content": [{"type": "text", "text": "part 1"},
                                                 {"type": "text", "text": "part 2"}]}], None),
    "multilingual": ([_u("héllo wörld 你好 🎉"), _a("ça va ✓"), _u("日本語\tタブ")], None),
    "tools listed": ([_u("hi"), _a("hello"), _u("Weather in Paris?")], TOOLS),
    "tool call and result": ([_s("Use tools."), _u("Weather in Paris?"),
                              _call("get_weather", {"city": "Paris"}), _tool("sunny, 22 C"),
                              _a("It is sunny."), _u("Thanks")], TOOLS),
    "tool result as an object": ([_u("Weather?"), _call("get_weather", {"city": "Nice"}),
                                  _tool({"temp": 22.5, "sky": ["sun"], "é": None})], TOOLS),
    "two calls": ([_u("Weather?"), {"role": "assistant", "tool_calls": [
        {"id": "aaaaaaaa1", "type": "function",
         "function": {"name": "get_weather", "arguments": {"city": "A"}}},
        {"id": "bbbbbbbb2", "type": "function",
         "function": {"name": "get_weather", "arguments": {"city": "B"}}}]},
        _tool("one", "aaaaaaaa1"), _tool("", "bbbbbbbb2")], TOOLS),
}


@functools.cache
def _mistral_v3(mode: str):
    """mistral-common's v3 SentencePiece tokenizer validating in ``mode``."""
    pytest.importorskip("mistral_common")
    from mistral_common.protocol.instruct.validator import ValidationMode
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    return MistralTokenizer.from_file(
        str(MistralTokenizer._data_path() / "mistral_instruct_tokenizer_240323.model.v3"),
        mode=ValidationMode(mode))  # what MistralTokenizer.v3() loads, in test mode


def _mistral_common(messages, tools=None, *, mode: str = "test"):
    from mistral_common.protocol.instruct.request import ChatCompletionRequest

    v3 = _mistral_v3(mode)
    messages = copy.deepcopy(messages)
    for m in messages:  # mistral-common takes a tool result as text (JSON is parsed)
        if m["role"] == "tool" and isinstance(m["content"], dict):
            m["content"] = json.dumps(m["content"])
    return v3.encode_chat_completion(ChatCompletionRequest(messages=messages,
                                                           tools=tools)).tokens


def _render(client, **body):
    r = client.post("/render_chat", json={"model": MISTRAL, **body})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.parametrize("name", MISTRAL_CHATS)
def test_mistral_chat_ids_equal_mistral_commons(client, name):
    messages, tools = MISTRAL_CHATS[name]
    body = _render(client, messages=messages, tools=tools)
    assert body["tokenizer"] == "mistral-v0.3@1"
    assert body["ids"] == _mistral_common(messages, tools)
    counted = client.post("/count", json={"model": MISTRAL, "messages": messages,
                                          "tools": tools}).json()
    assert counted["count"] == len(body["ids"])


def _random_chat(rnd) -> tuple[list[dict], list[dict] | None]:
    """A conversation mistral-common accepts: roles in an order its validator allows,
    text with runs of spaces and newlines, text parts, tool calls answered by results."""
    pieces = ["hi", " ", "  ", "\n", "\n\n", "\t", "é", "你好", "🎉", "word", "x.", "?", " end ",
              "", "a b", "\u00a0", "ñ", "'s", "--", "<", "(x)"]

    def text(least: int = 0) -> str:
        return "".join(rnd.choice(pieces) for _ in range(rnd.randint(least, 6)))

    allowed = {None: ["user", "system"], "system": ["user", "assistant", "system"],
               "user": ["assistant", "system", "user"], "assistant": ["assistant", "user"],
               "tool": ["assistant", "user"]}  # a tool message only answers a call
    messages: list[dict] = []
    prev, pending = None, []
    for _ in range(rnd.randint(1, 8)):
        if pending:
            result = rnd.choice([text(1).lstrip('{["-0123456789 \t\n\u00a0') or "done",
                                 {"k": text(), "n": rnd.randint(-5, 5)}])
            messages.append(_tool(result, pending.pop(0)))
            prev = "tool"
            continue
        role = rnd.choice(allowed[prev])
        if role == "assistant" and prev != "assistant" and rnd.random() < 0.3:
            pending = [f"call{rnd.randrange(10**5):05d}" for _ in range(rnd.randint(1, 2))]
            messages.append({"role": "assistant", "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "get_weather",
                                                           "arguments": {"city": text()}}}
                for i in pending]})
        elif role == "assistant":
            messages.append(_a(text(1) or "x"))
        elif rnd.random() < 0.15:
            messages.append({"role": role, "content": [{"type": "text", "text": text()}
                                                       for _ in range(rnd.randint(1, 3))]})
        else:
            messages.append({"role": role, "content": text()})
        prev = role
    messages += [_tool("done", i) for i in pending]
    return messages, TOOLS if rnd.random() < 0.3 else None


def test_mistral_random_chats_equal_mistral_commons(bundled):
    """Seeded random conversations through the renderer in process (the HTTP route is the
    same call): every one's ids equal mistral-common's."""
    import random

    import tokserve
    from tokserve.service.operations.chat import render_chat

    directory = bundled("mistral-v0.3")
    tok = tokserve.load(str(directory))
    template = (directory / "chat_template.jinja").read_text(encoding="utf-8")
    rnd = random.Random(30)
    for _ in range(150):
        messages, tools = _random_chat(rnd)
        mode = "finetuning" if messages[-1]["role"] == "assistant" else "test"
        ours = render_chat(tok, template, messages=copy.deepcopy(messages), tools=tools)
        assert ours.ids == _mistral_common(messages, tools, mode=mode), (messages, tools)


def test_mistral_chat_ending_with_the_assistant(client):
    """A finished conversation is what mistral-common's finetuning mode encodes;
    continue_final_message is an assistant ``prefix`` message (no </s>)."""
    messages = [_s("sys"), _u("Hi"), _a("Hello there.  ")]
    assert _render(client, messages=messages)["ids"] == _mistral_common(messages,
                                                                        mode="finetuning")
    prefix = [_u("Write a haiku"), _a("Autumn moonlight")]
    body = _render(client, messages=prefix, continue_final_message=True)
    assert body["ids"] == _mistral_common([prefix[0], {**prefix[1], "prefix": True}])


def test_mistral_caller_literals_are_text_as_in_mistral_common(client):
    """mistral-common encodes "[INST]" in content as text; so does ``escape``; the default
    ``reject`` refuses it."""
    messages = [_u("use [INST] and </s> literally"), _a("ok [/INST]"), _u("<s>[TOOL_CALLS]")]
    assert _render(client, messages=messages, reserved_literals="escape")["ids"] == \
        _mistral_common(messages)
    r = client.post("/render_chat", json={"model": MISTRAL, "messages": messages})
    assert r.status_code == 400 and r.json()["error"]["code"] == "reserved_literal_in_content"


@pytest.mark.parametrize("messages,says", [
    ([_u("Weather?"), _call("get_weather", {"city": "P"}), _tool('{"temp": 22}')],
     "must be sent as an object"),
    ([_u("Weather?"), _call("get_weather", '{"city": "P"}'), _tool("ok")],
     "must be sent as an object"),
    ([_u("Weather?"), _call("get_weather", {}, "short"), _tool("ok", "short")],
     "9 letters or digits"),
    ([_u("a"), _a("b"), _s("late system")], "Unexpected role 'system' after role 'assistant'"),
    ([_u("a"), {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
     "Only text parts"),
])
def test_mistral_template_refuses_what_it_cannot_render_exactly(client, messages, says):
    r = client.post("/render_chat", json={"model": MISTRAL, "messages": messages,
                                          "tools": TOOLS})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "template_error" and says in err["message"]


# ==== Phi-3: text equals transformers', ids equal tokenizers' ===========================

PHI3_CHATS = [
    [{"role": "user", "content": "Hello"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": " Hi  "},
     {"role": "assistant", "content": "Hello!\n"}, {"role": "user", "content": "日本語 😀"}],
    [{"role": "system", "content": ""}, {"role": "user", "content": "a</s> b"},
     {"role": "assistant", "content": "x <|end|> y"}],
]


@pytest.fixture(scope="module")
def phi3_transformers():
    transformers = pytest.importorskip("transformers")
    config = json.loads((BUNDLED / "phi-3-mini/1/tokenizer_config.json").read_text())
    return transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(BUNDLED / "phi-3-mini/1/tokenizer.json"),
        **{k: config[k] for k in ("bos_token", "eos_token", "unk_token", "pad_token")})


@pytest.mark.parametrize("template,source", [
    ("default", "tokenizer_config.json"), ("phi-3.5", "chat_template.phi-3.5.jinja")])
@pytest.mark.parametrize("index", range(len(PHI3_CHATS)))
@pytest.mark.parametrize("generation_prompt", [False, True])
def test_phi3_chat_text_equals_transformers_and_ids_tokenizers(
        client, reference, phi3_transformers, template, source, index, generation_prompt):
    messages = PHI3_CHATS[index]
    body = client.post("/render_chat", json={
        "model": PHI3, "messages": messages, "template": template,
        "add_generation_prompt": generation_prompt, "reserved_literals": "allow"}).json()
    assert body["tokenizer"] == "phi-3-mini@1", body
    path = BUNDLED / "phi-3-mini/1" / source
    text = path.read_text(encoding="utf-8")
    chat_template = json.loads(text)["chat_template"] if source.endswith(".json") else text
    expected = phi3_transformers.apply_chat_template(
        copy.deepcopy(messages), chat_template=chat_template, tokenize=False,
        add_generation_prompt=generation_prompt)
    assert body["text"] == expected
    assert body["ids"] == reference("phi-3-mini").encode(expected,
                                                         add_special_tokens=False).ids


# ==== --models at import ==================================================================

def test_models_given_at_import_resolve(tmp_path, live_server, reference):
    source = shared_file("artifacts/llama2/tokenizer.json").parent
    tokenizers = pytest.importorskip("tokenizers")
    out = subprocess.run(
        [sys.executable, "-m", "tokserve.service", "artifact", "import", str(source),
         "--name", "llama2", "--version", "1", "--out", str(tmp_path),
         "--bos-token", "<s>", "--eos-token", "</s>",
         "--models", "meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"],
        capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode == 0, out.stderr
    from tokserve.service.runtime.settings import Settings

    ref = tokenizers.Tokenizer.from_file(str(source / "tokenizer.json"))
    with live_server(Settings(_env_file=None, bundled_artifacts="",
                              artifacts=[tmp_path])) as srv:
        for model in ("meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"):
            r = srv.client.post("/encode", json={"model": model, "texts": TEXTS,
                                                 "add_special_tokens": True})
            assert r.status_code == 200, r.text
            assert r.json()["tokenizer"] == "llama2@1" and r.json()["model"] == model
            assert [res["ids"] for res in r.json()["results"]] == \
                [e.ids for e in ref.encode_batch(TEXTS, add_special_tokens=True)]
        rows = {r["model"]: r for r in srv.client.get("/models").json()["models"]}
    assert rows["meta-llama/Llama-2-7b-hf"]["tokenizer"] == "llama2"
