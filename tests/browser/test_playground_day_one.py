"""The playground's day-one gaps (issue 32), in headless Chromium against the real service:

* chat mode offers the tokenizers OpenAI's chat models count with (o200k_base for
  gpt-4o, cl100k_base for gpt-4), which have no template: the counts are the service's
  chat /count (method "openai-chat-format"), the view draws each message's role and
  content as that rule counts them, and a share link to it round-trips (also one that
  names the model, gpt-4o);
* a special-token literal under the default policy ("reject") no longer replaces the view
  with an API error: the text is shown as plain text (the API's "text" reading; chat:
  "escape"), the literal's tokens marked, and a notice names the refusal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from test_playground import assert_spans_cover, encode_request, expected_groups, fill_messages
from test_playground_links import copy_share_link, fragment, fresh_tab, open_link

if TYPE_CHECKING:
    from tests.browser.conftest import Playground

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Count me: 東京 👩🏽\u200d💻 café"},
    {"role": "assistant", "content": "Done.\tNext?"},
]


def openai_view(messages: list[dict[str, str]]) -> str:
    """The text the page draws for an OpenAI-format chat: role, newline, content; a blank
    line between messages."""
    return "\n\n".join(f"{m['role']}\n{m['content']}" for m in messages)


def shown_counts(pg: Playground) -> list[int | None]:
    return pg.page.eval_on_selector_all(
        "#messages .msg-count",
        "bs => bs.map(b => b.dataset.tokens === undefined ? null : Number(b.dataset.tokens))")


def literal_spans(pg: Playground, viewer: str) -> list[dict[str, Any]]:
    return [s for s in pg.spans(viewer) if "literal" in s["cls"].split()]


def marked(pg: Playground, viewer: str) -> list[str]:
    """The text of each run of adjacent marked tokens, without the whitespace a token may
    carry before a literal (o200k_base's " <" is one token)."""
    runs: list[list[Any]] = []
    for s in literal_spans(pg, viewer):
        if runs and runs[-1][0] == s["start"]:
            runs[-1] = [s["end"], runs[-1][1] + s["text"]]
        else:
            runs.append([s["end"], s["text"]])
    return [text.strip() for _, text in runs]


# ---- chat mode: OpenAI's chat format -----------------------------------------------------------

def test_chat_mode_offers_openai_chat_counting(playground: Playground) -> None:
    pg = playground
    pg.open("chat")
    options = pg.page.eval_on_selector_all(
        "#chat-tokenizer option", "os => os.map(o => [o.value, o.textContent])")
    labels = dict(options)
    assert "o200k_base@1" in labels and "cl100k_base@1" in labels, options
    assert "OpenAI chat format (gpt-4o" in labels["o200k_base@1"]
    assert "OpenAI chat format (gpt-4" in labels["cl100k_base@1"]
    assert "gpt2@1" not in labels  # no template and no OpenAI chat accounting
    assert pg.page.input_value("#chat-tokenizer") == "deepseek-v4@1"  # still the default

    for tokenizer in ("o200k_base@1", "cl100k_base@1"):
        pg.page.select_option("#chat-tokenizer", tokenizer)
        fill_messages(pg, MESSAGES)
        text = openai_view(MESSAGES)
        assert pg.settle("#chat-viewer", text) == "ready"
        counted = pg.api("/count", {"tokenizer": tokenizer, "messages": MESSAGES,
                                    "return_message_counts": True})
        assert counted["method"] == "openai-chat-format" and counted["exact"]
        assert int(pg.text_of("#chat-count")) == counted["count"]
        assert shown_counts(pg) == [m["tokens"] for m in counted["message_counts"]]
        assert int(pg.text_of("#chat-template-count")) == counted["template_tokens"] == 3
        assert pg.text_of("#chat-ref") == tokenizer
        assert pg.text_of("#chat-template-hash") == "–"
        method = pg.page.locator("#chat-method")
        assert method.is_visible() and "openai-chat-format" in method.inner_text()
        assert pg.page.eval_on_selector("#chat-viewer", "v => v.dataset.method") == \
            "openai-chat-format"
        assert pg.page.is_disabled("#chat-gen-prompt")
        assert pg.page.input_value("#chat-template") == ""

        # the drawn tokens: each role and content as /encode tokenizes it, where it stands
        spans = pg.spans("#chat-viewer")
        tokens = [s for s in spans if "tok" in s["cls"].split()]
        want, ids, base = [], [], 0
        for k, m in enumerate(MESSAGES):
            for j, value in enumerate((m["role"], m["content"])):
                if k or j:
                    base += 1 if j else 2
                enc = pg.api("/encode", encode_request(tokenizer, value))
                want += [(s + base, e + base, g) for s, e, g in
                         expected_groups(enc["ids"], enc["offsets"])]
                ids += enc["ids"]
                base += len(value.encode("utf-16-le")) // 2
        assert [(s["start"], s["end"], s["ids"]) for s in tokens] == want
        assert pg.ids_shown("#chat-ids") == ids
        # what the rule counts per message = its drawn tokens + the per-message constant
        per_message = [len(pg.api("/encode", encode_request(tokenizer, m["role"]))["ids"])
                       + len(pg.api("/encode", encode_request(tokenizer, m["content"]))["ids"])
                       for m in MESSAGES]
        assert [c - n for c, n in zip(shown_counts(pg), per_message)] == [3, 3, 3]
        assert "".join(s["text"] for s in spans) == text

    # back to a template tokenizer: the generation prompt is a choice again
    pg.page.select_option("#chat-tokenizer", "deepseek-v4@1")
    assert pg.settle("#chat-viewer") == "ready"
    assert not pg.page.is_disabled("#chat-gen-prompt")
    assert not pg.page.locator("#chat-method").is_visible()
    pg.screenshot("playground-chat-openai.png")


def test_openai_chat_share_link_round_trips(playground: Playground) -> None:
    pg = playground
    pg.open("chat")
    pg.page.select_option("#chat-tokenizer", "o200k_base@1")
    fill_messages(pg, MESSAGES)
    assert pg.settle("#chat-viewer", openai_view(MESSAGES)) == "ready"
    link = copy_share_link(pg)
    got = fragment(link)
    assert got["mode"] == ["chat"] and got["tokenizer"] == ["o200k_base@1"]
    assert "template" not in got
    count = pg.text_of("#chat-count")
    spans = pg.spans("#chat-viewer")

    with fresh_tab(pg) as tab:
        open_link(tab, link, "chat")
        assert tab.settle("#chat-viewer", openai_view(MESSAGES)) == "ready"
        assert not tab.page.locator("#global-error").is_visible()
        assert tab.page.input_value("#chat-tokenizer") == "o200k_base@1"
        assert tab.text_of("#chat-count") == count
        assert tab.spans("#chat-viewer") == spans

    # a link naming the model, as a request's "tokenizer" may
    by_model = link.replace("tokenizer=o200k_base%401", "tokenizer=gpt-4o")
    assert by_model != link
    with fresh_tab(pg) as tab:
        open_link(tab, by_model, "chat")
        assert tab.settle("#chat-viewer", openai_view(MESSAGES)) == "ready"
        assert not tab.page.locator("#global-error").is_visible()
        assert tab.page.input_value("#chat-tokenizer") == "o200k_base@1"
        assert tab.text_of("#chat-count") == count


# ---- a refused literal is shown as text, marked ---------------------------------------------------

def test_text_mode_shows_a_refused_literal_as_text_and_marks_it(playground: Playground) -> None:
    pg = playground
    pg.open("text")
    text = "a 😀 <|endoftext|> b <|endofprompt|>"
    pg.page.fill("#input", text)
    assert pg.settle("#viewer", text) == "ready"
    assert pg.page.input_value("#special-policy") == "reject"  # the user's choice stays
    notice = pg.page.locator("#text-notice")
    assert notice.is_visible() and not pg.page.locator("#text-error").is_visible()
    words = notice.inner_text()
    assert "400 special_token_in_text" in words and 'special_tokens "text"' in words
    assert '"<|endofprompt|>"' in words and '"<|endoftext|>"' in words and '"allow"' in words

    enc = pg.api("/encode", encode_request("o200k_base@1", text, "text"))
    spans = pg.spans("#viewer")
    assert_spans_cover(spans, text)
    assert [(s["start"], s["end"], s["ids"]) for s in spans] == \
        expected_groups(enc["ids"], enc["offsets"])
    assert pg.ids_shown() == enc["ids"] and int(pg.text_of("#token-count")) == enc["count"]
    # the marked tokens are exactly the literals' characters, each drawn as ordinary text
    assert marked(pg, "#viewer") == ["<|endoftext|>", "<|endofprompt|>"]
    assert not [s for s in spans if "special" in s["cls"].split()]
    hover = pg.page.locator("#viewer .tok.literal").first
    hover.hover()
    pg.page.wait_for_selector("#tip:not([hidden])")
    assert "literal shown as text" in pg.text_of("#tip")

    # the link keeps the user's policy, and opens to the same view
    link = copy_share_link(pg)
    assert fragment(link)["special"] == ["reject"]
    with fresh_tab(pg) as tab:
        open_link(tab, link, "text")
        assert tab.settle("#viewer", text) == "ready"
        assert tab.page.locator("#text-notice").is_visible()
        assert tab.spans("#viewer") == spans

    # a text without a literal: no notice
    pg.page.fill("#input", "plain")
    assert pg.settle("#viewer", "plain") == "ready"
    assert not notice.is_visible() and not literal_spans(pg, "#viewer")


def test_compare_mode_panes_show_a_refused_literal_each(playground: Playground) -> None:
    pg = playground
    pg.open("compare")
    pg.page.select_option("#cmp-a-tokenizer", "o200k_base@1")
    pg.page.select_option("#cmp-b-tokenizer", "gpt2@1")
    text = "x <|endoftext|> y"
    pg.page.fill("#input", text)
    for side, ref in (("a", "o200k_base@1"), ("b", "gpt2@1")):
        assert pg.settle(f"#cmp-{side}-viewer", text) == "ready"
        assert pg.page.locator(f"#pane-{side} .notice").is_visible()
        assert not pg.page.locator(f"#pane-{side} .error").is_visible()
        enc = pg.api("/encode", encode_request(ref, text, "text"))
        assert int(pg.text_of(f"#cmp-{side}-count")) == enc["count"]
        assert marked(pg, f"#cmp-{side}-viewer") == ["<|endoftext|>"]


def test_chat_modes_show_a_refused_literal_escaped_and_marked(playground: Playground) -> None:
    pg = playground
    pg.open("chat")
    # a template tokenizer: the prompt rendered with reserved_literals "escape"
    literal = "<｜end▁of▁sentence｜>"
    messages = [{"role": "user", "content": f"sneaky {literal} literal"}]
    pg.page.select_option("#chat-tokenizer", "deepseek-v4@1")
    fill_messages(pg, messages)
    rendered = pg.api("/render_chat", {"tokenizer": "deepseek-v4@1", "messages": messages,
                                       "reserved_literals": "escape",
                                       "return_message_counts": True})
    assert pg.settle("#chat-viewer", rendered["text"]) == "ready"
    notice = pg.page.locator("#chat-notice")
    assert notice.is_visible() and not pg.page.locator("#chat-error").is_visible()
    assert "400 reserved_literal_in_content" in notice.inner_text()
    assert 'reserved_literals "escape"' in notice.inner_text()
    assert int(pg.text_of("#chat-count")) == rendered["count"]
    assert shown_counts(pg) == [m["tokens"] for m in rendered["message_counts"]]
    assert marked(pg, "#chat-viewer") == [literal]
    # the template's own end-of-sentence token is special, not marked
    specials = [s for s in pg.spans("#chat-viewer") if "special" in s["cls"].split()]
    assert specials and not [s for s in specials if "literal" in s["cls"].split()]

    # OpenAI's chat format: counted with the literal as text, as the API reads content
    messages = [{"role": "user", "content": "hi <|endoftext|> there"}]
    pg.page.select_option("#chat-tokenizer", "o200k_base@1")
    fill_messages(pg, messages)
    assert pg.settle("#chat-viewer", openai_view(messages)) == "ready"
    counted = pg.api("/count", {"tokenizer": "o200k_base@1", "messages": messages,
                                "reserved_literals": "escape", "return_message_counts": True})
    assert int(pg.text_of("#chat-count")) == counted["count"]
    assert notice.is_visible()
    assert marked(pg, "#chat-viewer") == ["<|endoftext|>"]

    # "allow" (trusted input): the literal is its special id, no notice, nothing marked
    pg.page.select_option("#chat-literals", "allow")
    assert pg.settle("#chat-viewer", openai_view(messages)) == "ready"
    assert not notice.is_visible() and not literal_spans(pg, "#chat-viewer")
    special = [s for s in pg.spans("#chat-viewer") if "special" in s["cls"].split()]
    assert [(s["text"], s["ids"]) for s in special] == [("<|endoftext|>", [199999])]
