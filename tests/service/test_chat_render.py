"""service.chat rendering internals: provenance is exact, masks follow their rules,
templates compile once per hash, special tokens come from the artifact."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokserve.service.operations.chat import compiled as chat_compiled
from tokserve.service.operations.chat import render_chat
from tokserve.service.operations.chat.provenance import Traced, runs_of

OID = 7


def t(s: str) -> Traced:
    return Traced(s, ((0, len(s), OID),))


def covered(value: str) -> set[int]:
    return {i for s, e, _ in runs_of(value) for i in range(s, e)}


TEXT = st.text(alphabet=st.sampled_from(list("ab \n\t<>/ßΣ日")), max_size=20)


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT, st.sampled_from(["a", " ", "\n", "</", "ab", None]))
def test_traced_methods_equal_str_and_keep_every_char(a, b, sep):
    """Every overridden method returns str's value; fully traced input stays fully traced."""
    x = t(a)
    for name, args in [("strip", ()), ("lstrip", ()), ("rstrip", ("\n",)), ("split", (sep,)),
                       ("rsplit", (sep, 1)), ("splitlines", ()), ("upper", ()),
                       ("lower", ()), ("title", ())]:
        got = getattr(x, name)(*args)
        want = getattr(str, name)(a, *args)
        assert got == want, name
        for piece in (got if isinstance(got, list) else [got]):
            assert covered(piece) == set(range(len(piece))), (name, piece)
    if sep:
        for got, want in ((x.partition(sep), a.partition(sep)),
                          (x.rpartition(sep), a.rpartition(sep))):
            assert got == want
        assert x.replace(sep, b) == a.replace(sep, b)
    assert x[1:5] == a[1:5] and x[::-2] == a[::-2]
    joined = "<" + x + b
    assert joined == "<" + a + b
    assert covered(joined) == set(range(1, 1 + len(a)))


def test_str_and_json_of_traced_are_the_plain_values():
    import json
    x = t('a "b"\n')
    assert str(x) is x and json.dumps(x) == json.dumps('a "b"\n')


class Tok:
    """A tokenizer stand-in for text-only renders (return_ids=False)."""

    bos_token, eos_token, pad_token = "<s>", "</s>", None
    manifest = {"unk_token": "<unk>"}

    def find_literals(self, text):
        return [(lit, text.find(lit)) for lit in ("<s>",) if lit in text]


def test_special_tokens_are_variables():
    r = render_chat(Tok(), "{{ bos_token }}|{{ eos_token }}|{{ unk_token }}|{{ pad_token }}",
                    messages=[{"role": "user", "content": "x"}], return_ids=False)
    assert r.text == "<s>|</s>|<unk>|"


def test_none_fields_are_dropped_and_reasoning_aliased():
    src = ("{% for m in messages %}{{ m.content is defined }} {{ m.thinking }} "
           "{{ m.reasoning_content }}{% endfor %}")
    r = render_chat(Tok(), src, messages=[{"role": "assistant", "content": None,
                                           "reasoning": "why"}], return_ids=False)
    assert r.text == "False why why"


def test_continue_final_message_cuts_after_content():
    src = "{% for m in messages %}[{{ m.role }}]{{ m.content }}<end>\n{% endfor %}"
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Once "}]
    r = render_chat(Tok(), src, messages=msgs, continue_final_message=True, return_ids=False)
    assert r.text == "[user]hi<end>\n[assistant]Once "
    trim = src.replace("{{ m.content }}", "{{ m.content | trim }}")
    r = render_chat(Tok(), trim, messages=msgs, continue_final_message=True, return_ids=False)
    assert r.text == "[user]hi<end>\n[assistant]Once"


def test_compiled_once_per_hash(monkeypatch):
    calls = []
    env = chat_compiled.environment()
    real = env.from_string
    monkeypatch.setattr(env, "from_string", lambda s: calls.append(s) or real(s))
    src = "{{ messages | length }}-unique-7f3a"
    for _ in range(3):
        render_chat(Tok(), src, template_hash="sha256:test-once", messages=[{"role": "u"}],
                    return_ids=False)
    assert len(calls) == 1
    assert len(chat_compiled._CACHE) <= chat_compiled.CACHE_SIZE


@pytest.fixture(scope="module")
def ds():
    engine = pytest.importorskip("tokserve")
    return engine.load("deepseek-v4")


def test_content_rule_masks_assistant_content_only(ds):
    src = ("{% for m in messages %}<｜{{ m.role }}｜>{{ m.content | trim }}"
           "{% if m.role == 'assistant' %}<｜end▁of▁sentence｜>{% endif %}{% endfor %}")
    msgs = [{"role": "user", "content": "question"},
            {"role": "assistant", "content": "  the answer "},
            {"role": "user", "content": "more"},
            {"role": "assistant", "content": "yes"}]
    r = render_chat(ds, src, messages=msgs, return_assistant_mask=True, return_offsets=True)
    assert r.mask_rule == "content"
    assert [r.text[a:b] for a, b in r.assistant_spans] == ["the answer", "yes"]
    for tid, label, (a, b) in zip(r.ids, r.labels, r.offsets):
        inside = any(a < e and b > s for s, e in r.assistant_spans)
        assert label == (tid if inside else -100)
    assert sum(1 for x in r.labels if x != -100) >= 3


def test_generation_rule_reported(ds):
    src = ("{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}"
           "{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}")
    msgs = [{"role": "user", "content": "Question\n\n"}, {"role": "assistant", "content": "A!"}]
    r = render_chat(ds, src, messages=msgs, return_assistant_mask=True)
    assert r.mask_rule == "generation" and r.assistant_spans == [[10, 12]]
    assert r.labels[-1] != -100 and r.labels[0] == -100


def test_bos_from_the_artifact_is_a_special_id(ds):
    r = render_chat(ds, "{{ bos_token }}", messages=[{"role": "user", "content": "x"}])
    assert r.ids == [ds.special_tokens[ds.bos_token]]
