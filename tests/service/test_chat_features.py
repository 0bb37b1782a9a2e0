"""Chat features over HTTP: per-message counts, fitting a context, the chat cache.

Per-message counts must sum to ``count`` exactly on every bundled template (and, through
the library, on every template in ../shared); fitting keeps system/developer messages
and the last user turn and drops the fewest oldest turns; the chat cache answers a
repeated conversation from memory, keyed so that nothing else can hit it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tokserve.service.operations.chat import render_chat
from tokserve.service.runtime.settings import Settings

SHARED_TEMPLATES = Path(__file__).resolve().parents[3] / "shared" / "templates"

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
CONVERSATIONS = {
    "multi_turn": ([
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello. What do you need?"},
        {"role": "user", "content": "Name a prime."}], None),
    "tools": ([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
            "name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "22°C, sunny"},
        {"role": "assistant", "content": "It is 22°C and sunny."}], [WEATHER]),
    "non_latin": ([
        {"role": "user", "content": "日本語で答えて 🦀"},
        {"role": "assistant", "content": "はい、わかりました。", "thinking": "Be polite."},
        {"role": "user", "content": "Ελληνικά;"}], None),
    "developer": ([
        {"role": "system", "content": "S"}, {"role": "developer", "content": "Use French."},
        {"role": "user", "content": "Q"}], None),
}


#: bundled tokenizers whose templates ignore ``tools``
WRITES_NO_TOOLS = {"phi-3-mini@1"}


def _templated(client) -> list[str]:
    return [t["tokenizer"] for t in client.get("/tokenizers").json()["tokenizers"]
            if t["chat_templates"]]


def test_bundled_templates_are_there(client):
    assert {"deepseek-v4@1", "o200k_harmony@1"} <= set(_templated(client))


@pytest.mark.parametrize("conv", sorted(CONVERSATIONS))
@pytest.mark.parametrize("gen", [False, True])
def test_message_counts_sum_to_count_on_every_bundled_template(client, conv, gen):
    messages, tools = CONVERSATIONS[conv]
    for tokenizer in _templated(client):
        body = {"tokenizer": tokenizer, "messages": messages, "tools": tools,
                "add_generation_prompt": gen, "return_message_counts": True}
        rendered = client.post("/render_chat", json=body)
        if rendered.status_code == 400:  # the template refuses this conversation
            continue
        r = rendered.json()
        counted = client.post("/count", json=body).json()
        for answer in (r, counted):
            parts = [m["tokens"] for m in answer["message_counts"]]
            assert sum(parts) + answer["tools_tokens"] + answer["template_tokens"] == \
                answer["count"] == len(r["ids"]), (tokenizer, conv)
            assert [m["index"] for m in answer["message_counts"]] == list(range(len(messages)))
            assert [m["role"] for m in answer["message_counts"]] == \
                [m["role"] for m in messages]
        assert counted["message_counts"] == r["message_counts"]
        if tools:  # Phi-3's templates write no tools: there is nothing to attribute
            assert (r["tools_tokens"] == 0) if tokenizer in WRITES_NO_TOOLS else \
                (r["tools_tokens"] > 0), tokenizer


def test_message_counts_attribute_content_to_its_message(client):
    """Each message's distinctive content lands in its own count, nowhere else."""
    words = ["alpha", "bravo", "charlie", "delta"]
    messages = [{"role": role, "content": " ".join([w] * (10 * (i + 1)))}
                for i, (role, w) in enumerate(zip(["user", "assistant"] * 2, words))]
    for tokenizer in _templated(client):
        r = client.post("/render_chat", json={"tokenizer": tokenizer, "messages": messages,
                                              "return_message_counts": True}).json()
        for i, m in enumerate(r["message_counts"]):
            alone = client.post("/count", json={"tokenizer": tokenizer,
                                                "text": messages[i]["content"]}).json()["count"]
            assert abs(m["tokens"] - alone) <= 3, (tokenizer, i, m["tokens"], alone)


def _shared_templates() -> list[Path]:
    return sorted(SHARED_TEMPLATES.glob("*.jinja")) if SHARED_TEMPLATES.is_dir() else []


@pytest.mark.skipif(not _shared_templates(), reason="needs ../shared/templates beside the repo")
@pytest.mark.parametrize("conv", sorted(CONVERSATIONS))
def test_message_counts_sum_to_count_on_every_shared_template(o200k, conv):
    messages, tools = CONVERSATIONS[conv]
    checked = 0
    for path in _shared_templates():
        try:
            r = render_chat(o200k, path.read_text(encoding="utf-8"), messages=messages,
                            tools=tools, add_generation_prompt=True, reserved_literals="allow",
                            return_message_counts=True,
                            special_tokens={"bos_token": "<|endoftext|>"})
        except Exception:  # noqa: BLE001 - the template refuses this input
            continue
        assert sum(r.message_tokens) + r.tools_tokens + r.template_tokens == len(r.ids), path
        checked += 1
    assert checked >= 5


# ==== fitting ===============================================================================

LONG = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "First question about the weather in Paris? " * 3},
    {"role": "assistant", "content": "First answer: it is sunny and warm today. " * 3},
    {"role": "developer", "content": "Answer in one sentence."},
    {"role": "user", "content": "Second question about trains to Lyon? " * 3},
    {"role": "assistant", "content": "Second answer: every hour from Gare de Lyon. " * 3},
    {"role": "user", "content": "Third and last question: what should I pack?"},
]


def _count(client, messages, **extra) -> int:
    return client.post("/count", json={"tokenizer": "deepseek-v4", "messages": messages,
                                       **extra}).json()["count"]


@pytest.mark.parametrize("endpoint", ["/render_chat", "/count"])
def test_fit_drops_the_fewest_oldest_turns(client, endpoint):
    full = _count(client, LONG)
    minus_one = _count(client, [m for i, m in enumerate(LONG) if i not in (1, 2)])
    minus_two = _count(client, [m for i, m in enumerate(LONG) if i not in (1, 2, 4, 5)])
    assert full > minus_one > minus_two
    for limit, dropped, expected in ((full, [], full), (full - 1, [1, 2], minus_one),
                                     (minus_one, [1, 2], minus_one),
                                     (minus_one - 1, [1, 2, 4, 5], minus_two),
                                     (minus_two, [1, 2, 4, 5], minus_two)):
        r = client.post(endpoint, json={"tokenizer": "deepseek-v4", "messages": LONG,
                                        "max_tokens": limit, "fit": "drop_oldest",
                                        "return_message_counts": True})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["dropped_messages"] == dropped and body["count"] == expected <= limit
        kept = [m["index"] for m in body["message_counts"]]
        assert kept == [i for i in range(len(LONG)) if i not in dropped]
        assert {0, 3, 6} <= set(kept)  # system, developer and the last user turn stay
    if endpoint == "/render_chat":  # the rendered text is the kept conversation's
        body = client.post(endpoint, json={"tokenizer": "deepseek-v4", "messages": LONG,
                                           "max_tokens": minus_one, "fit": "drop_oldest"})
        kept_only = client.post(endpoint, json={
            "tokenizer": "deepseek-v4",
            "messages": [m for i, m in enumerate(LONG) if i not in (1, 2)]})
        assert body.json()["text"] == kept_only.json()["text"]
        assert body.json()["ids"] == kept_only.json()["ids"]


def test_fit_that_cannot_fit_is_context_overflow(client):
    least = _count(client, [m for i, m in enumerate(LONG) if i not in (1, 2, 4, 5)])
    r = client.post("/render_chat", json={"tokenizer": "deepseek-v4", "messages": LONG,
                                          "max_tokens": least - 1, "fit": "drop_oldest"})
    assert r.status_code == 400
    err = r.json()["error"]
    assert err["code"] == "context_overflow" and err["count"] == least
    plain = client.post("/render_chat", json={"tokenizer": "deepseek-v4", "messages": LONG,
                                              "max_tokens": 10})
    assert plain.status_code == 400 and "fit" in plain.json()["error"]["message"]


def test_fit_with_openai_accounting(client):
    full = client.post("/count", json={"model": "gpt-4o", "messages": LONG}).json()["count"]
    r = client.post("/count", json={"model": "gpt-4o", "messages": LONG, "max_tokens": full - 1,
                                    "fit": "drop_oldest"}).json()
    assert r["dropped_messages"] == [1, 2] and r["count"] < full


# ==== chat cache =============================================================================


def _chat_cache(client) -> tuple[int, int]:
    text = client.get("/metrics").text

    def value(name: str) -> int:
        found = re.search(rf'tokserve_cache_{name}_total{{kind="chat"}} (\S+)', text)
        return int(float(found.group(1))) if found else 0

    return value("hits"), value("misses")


@pytest.fixture(scope="module")
def clocked(live_server, bundled, tmp_path_factory):
    """A server with two extra tokenizers whose templates read the clock."""
    from tokserve.authoring.importers import import_tiktoken

    root = tmp_path_factory.mktemp("artifacts")
    ranks = bundled("cl100k_base") / "cl100k_base.tiktoken"
    body = "{% for m in messages %}<|im_start|>{{ m.content }}<|im_end|>{% endfor %}"
    for name, clock in (("dated", "%Y-%m-%d"), ("timed", "%H:%M:%S.%f")):
        import_tiktoken(ranks, root, name, "1", preset="cl100k_base",
                        extra_templates={"default": f"{{{{ strftime_now('{clock}') }}}}" + body})
    settings = Settings(_env_file=None, artifacts=[root])
    with live_server(settings) as srv:
        yield srv.client


def test_chat_cache_answers_a_repeated_conversation(clocked):
    messages, _ = CONVERSATIONS["multi_turn"]
    body = {"tokenizer": "deepseek-v4", "messages": messages, "return_offsets": True}
    before = _chat_cache(clocked)
    answers = [clocked.post("/render_chat", json=body).json() for _ in range(3)]
    after = _chat_cache(clocked)
    assert answers[0] == answers[1] == answers[2]
    assert (after[0] - before[0], after[1] - before[1]) == (1, 2)  # stored on the 2nd sighting
    # anything that changes the answer is another key
    for other in ({**body, "add_generation_prompt": True}, {**body, "return_offsets": False},
                  {**body, "messages": messages[:-1]}, {**body, "reserved_literals": "escape"}):
        hits = _chat_cache(clocked)[0]
        clocked.post("/render_chat", json=other)
        assert _chat_cache(clocked)[0] == hits, other
    # /count with the same chat is a key of its own, and equals len(ids)
    counted = [clocked.post("/count", json={"tokenizer": "deepseek-v4", "messages": messages})
               for _ in range(3)]
    assert {c.json()["count"] for c in counted} == {answers[0]["count"]}


def test_chat_cache_keys_on_the_date_and_never_stores_the_time(clocked):
    messages = [{"role": "user", "content": "hi"}]
    for name, expect_hits in (("dated", 1), ("timed", 0)):
        before = _chat_cache(clocked)
        texts = [clocked.post("/render_chat", json={"tokenizer": name, "messages": messages})
                 .json()["text"] for _ in range(3)]
        after = _chat_cache(clocked)
        assert after[0] - before[0] == expect_hits, name
        if name == "timed":
            assert len(set(texts)) == 3  # each render read the clock anew
