"""The playground in a real browser against the real service.

The page is the reference client of our offsets, so the checks are about exactness: the
coloured spans, read back from the DOM, must concatenate to the input, each span must be
exactly the characters its offsets cover (UTF-16 units, as the page asks for), tokens
sharing a character must be drawn as one group, and every number shown must equal what
the API says (/count, /encode, /render_chat).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.browser.conftest import Playground

# CJK, a ZWJ family, skin tones, a ZWJ flag, combining marks (incl. stacked), Hangul,
# tabs and newlines. No CR: a <textarea> value normalizes CRLF to LF (HTML spec), so no
# text a user can put in the page holds one.
TRICKY = (
    "Hello 世界! 日本語のテキスト。\n"
    "👨\u200d👩\u200d👧\u200d👦 family, 👍🏽 👋🏿 skin tones\tTab\tseparated\n"
    "cafe\u0301 n\u0303 a\u0308\u0301 (combining) 한국어\n"
    "flag 🏳️\u200d🌈 ok"
)
# Typed key by key at the end (the live, debounced path), not pasted; "\t" is the Tab key.
TYPED = " 🧑🏾\u200d🚀\t更多 e\u0301!\n"


def utf16_slice(text: str, start: int, end: int) -> str:
    data = text.encode("utf-16-le", "surrogatepass")
    return data[2 * start:2 * end].decode("utf-16-le", "surrogatepass")


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def expected_groups(ids: list[int], offsets: list[list[int]]) -> list[tuple[int, int, list[int]]]:
    """Tokens whose offsets overlap form one group (the page's drawing rule, restated)."""
    groups: list[list[Any]] = []
    for token_id, (s, e) in zip(ids, offsets, strict=True):
        if groups and s < groups[-1][1] and s != e:
            groups[-1][1] = max(groups[-1][1], e)
            groups[-1][2].append(token_id)
        else:
            groups.append([s, e, [token_id]])
    return [(s, e, members) for s, e, members in groups]


def assert_spans_cover(spans: list[dict[str, Any]], text: str) -> None:
    """Concatenation = the text; each token span = the text its offsets cover."""
    assert "".join(s["text"] for s in spans) == text
    assert not [s for s in spans if "gap" in s["cls"].split()], "text not covered by any token"
    for span in spans:
        assert span["text"] == utf16_slice(text, span["start"], span["end"]), span


def encode_request(tokenizer: str, text: str, policy: str = "reject",
                   bos: bool = False) -> dict[str, Any]:
    return {"tokenizer": tokenizer, "text": text, "special_tokens": policy,
            "add_special_tokens": bos,
            "return_offsets": True, "offset_units": "utf16", "return_tokens": True}


def check_text_view(pg: Playground, tokenizer: str, text: str, policy: str = "reject",
                    bos: bool = False) -> None:
    """Everything the text mode shows for `text`, against the API."""
    enc = pg.api("/encode", encode_request(tokenizer, text, policy, bos))
    count = pg.api("/count", {"tokenizer": tokenizer, "text": text, "special_tokens": policy,
                              "add_special_tokens": bos})
    spans = pg.spans("#viewer")
    assert_spans_cover(spans, text)
    got = [(s["start"], s["end"], s["ids"]) for s in spans]
    assert got == expected_groups(enc["ids"], enc["offsets"])
    assert int(pg.text_of("#token-count")) == count["count"] == len(enc["ids"])
    assert int(pg.text_of("#char-count")) == len(text)  # code points
    assert pg.text_of("#cpt") == f"{len(text) / count['count']:.2f}"
    assert pg.ids_shown() == enc["ids"]
    assert pg.text_of("#tok-ref") == enc["tokenizer"]
    assert pg.page.text_content("#tok-hash") == enc["tokenizer_hash"]


def test_text_mode_spans_are_exactly_the_input(playground: Playground) -> None:
    pg = playground
    pg.open("text")
    pg.page.fill("#input", TRICKY)
    pg.page.focus("#input")
    pg.page.keyboard.press("End")
    pg.page.keyboard.press("Control+End")
    pg.page.keyboard.type(TYPED, delay=15)
    text = TRICKY + TYPED
    assert pg.page.input_value("#input") == text
    assert pg.settle("#viewer", text) == "ready"
    check_text_view(pg, "o200k_base@1", text)

    # Pieces of one multi-byte character are drawn as one group, marked with its size.
    groups = [s for s in pg.spans("#viewer") if s["count"] > 1]
    assert groups and all("multi" in g["cls"].split() for g in groups)
    assert any("🏽" in g["text"] or "🏿" in g["text"] for g in groups)
    pg.screenshot("playground-text.png")
    # The same view with a token hovered: its ids light up below (docs/playground.png).
    pg.page.locator("#viewer .tok", has_text="世界").first.hover()
    pg.page.wait_for_selector("#ids .id.hover")
    pg.screenshot("playground-hover.png")
    pg.page.mouse.move(5, 5)

    # The ids are one click away from the clipboard, as the JSON list shown.
    pg.page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=pg.url)
    pg.page.click("#copy-ids")
    pg.page.wait_for_function("document.querySelector('#copy-status').textContent === 'copied'")
    copied = pg.page.evaluate("navigator.clipboard.readText()")
    assert json.loads(copied) == pg.ids_shown()
    assert json.loads(copied) == pg.api("/encode", encode_request("o200k_base@1", text))["ids"]

    # Every served tokenizer, picked from the list the page filled from GET /tokenizers.
    listed = [t["tokenizer"] for t in pg.api("/tokenizers")["tokenizers"]]
    options = pg.page.eval_on_selector_all("#tokenizer option", "os => os.map(o => o.value)")
    assert options == listed
    for ref in listed:
        pg.page.select_option("#tokenizer", ref)
        pg.page.wait_for_function("r => document.querySelector('#tok-ref').textContent === r",
                                  arg=ref)
        assert pg.settle("#viewer", text) == "ready"
        check_text_view(pg, ref, text)


def test_hover_shows_id_bytes_and_offsets(playground: Playground) -> None:
    pg = playground
    pg.open("text")
    text = "ok 👍🏽 done"
    pg.page.fill("#input", text)
    pg.settle("#viewer", text)
    enc = pg.api("/encode", encode_request("o200k_base@1", text))

    group = pg.page.locator("#viewer .tok.multi").first
    group.hover()
    tip = pg.page.locator("#tip")
    tip.wait_for(state="visible")
    card = tip.inner_text()
    start, end = (int(group.get_attribute(a)) for a in ("data-start", "data-end"))
    members = [i for i, (s, e) in enumerate(enc["offsets"]) if s < end and e > start]
    assert len(members) > 1
    # Each member's own bytes, which together are the shared characters' UTF-8 bytes.
    shared = utf16_slice(text, start, end).encode()
    member_hex = []
    for i in members:
        assert f"token #{i}   id {enc['ids'][i]}" in card
        s, e = enc["offsets"][i]
        assert f"offsets [{s}, {e}) UTF-16" in card
    for line in card.splitlines():
        if line.startswith("bytes ") and "(" in line:
            member_hex.append(line[len("bytes "):line.index(" (")])
    assert " ".join(member_hex) == shared.hex(" ")
    assert "not recoverable" not in card


def test_whitespace_toggle_changes_only_the_look(playground: Playground) -> None:
    pg = playground
    pg.open("text")
    text = "a\tb  c\nd\n\ne"
    pg.page.fill("#input", text)
    pg.settle("#viewer", text)
    assert pg.page.locator("#viewer .ws-tab").count() == 1
    assert pg.page.evaluate("document.body.classList.contains('show-ws')")
    before = pg.page.text_content("#viewer")
    pg.page.uncheck("#show-ws")
    assert not pg.page.evaluate("document.body.classList.contains('show-ws')")
    assert pg.page.text_content("#viewer") == before == text
    pg.page.check("#show-ws")
    assert_spans_cover(pg.spans("#viewer"), text)


def test_special_token_policy_and_literal_notice(playground: Playground) -> None:
    pg = playground
    pg.open("text")
    text = "hi <|endoftext|> there"
    pg.page.fill("#input", text)
    # Under "reject" the API refuses the text; the page shows it as text, with a notice
    # naming the refusal (tests/browser/test_playground_day_one.py has the details).
    assert pg.settle("#viewer", text) == "ready"
    notice = pg.page.locator("#text-notice")
    assert notice.is_visible() and not pg.page.locator("#text-error").is_visible()
    assert "special_token_in_text" in notice.inner_text()
    assert '"<|endoftext|>"' in notice.inner_text()
    check_text_view(pg, "o200k_base@1", text, "text")

    pg.page.select_option("#special-policy", "allow")
    assert pg.settle("#viewer", text) == "ready"
    assert not notice.is_visible()
    check_text_view(pg, "o200k_base@1", text, "allow")
    special = [s for s in pg.spans("#viewer") if "special" in s["cls"].split()]
    assert [(s["text"], s["ids"]) for s in special] == [("<|endoftext|>", [199999])]

    pg.page.select_option("#special-policy", "text")
    assert pg.settle("#viewer", text) == "ready"
    check_text_view(pg, "o200k_base@1", text, "text")
    assert not [s for s in pg.spans("#viewer") if "special" in s["cls"].split()]


def test_inserted_bos_is_drawn_without_changing_the_text(playground: Playground,
                                                         bos_tokenizer: str) -> None:
    pg = playground
    pg.open("text")
    text = "hi 👍🏽\tthere"
    pg.page.select_option("#tokenizer", bos_tokenizer)
    pg.page.fill("#input", text)
    assert pg.settle("#viewer", text) == "ready"
    assert not pg.page.locator("#viewer .tok.inserted").count()
    pg.page.check("#add-special")
    pg.page.wait_for_function("() => document.querySelector('#viewer .tok.inserted')")
    assert pg.settle("#viewer", text) == "ready"
    check_text_view(pg, bos_tokenizer, text, bos=True)
    inserted = pg.page.locator("#viewer .tok.inserted")
    assert inserted.count() == 1
    assert inserted.get_attribute("data-label") == "<|endoftext|>"
    assert inserted.get_attribute("data-ids") == "100257"
    assert inserted.text_content() == ""


def test_compare_mode_two_tokenizers_same_text(playground: Playground) -> None:
    pg = playground
    pg.open("compare")
    pg.page.select_option("#cmp-a-tokenizer", "o200k_base@1")
    pg.page.select_option("#cmp-b-tokenizer", "cl100k_base@1")
    pg.page.fill("#input", TRICKY)
    for side in ("a", "b"):
        assert pg.settle(f"#cmp-{side}-viewer", TRICKY) == "ready"
    counts = {}
    for side, ref in (("a", "o200k_base@1"), ("b", "cl100k_base@1")):
        spans = pg.spans(f"#cmp-{side}-viewer")
        assert_spans_cover(spans, TRICKY)
        enc = pg.api("/encode", encode_request(ref, TRICKY))
        assert [(s["start"], s["end"], s["ids"]) for s in spans] == \
            expected_groups(enc["ids"], enc["offsets"])
        counts[side] = pg.api("/count", {"tokenizer": ref, "text": TRICKY})["count"]
        assert int(pg.text_of(f"#cmp-{side}-count")) == counts[side]
        assert pg.text_of(f"#pane-{side} .ref") == ref
    summary = pg.text_of("#cmp-summary")
    diff = counts["b"] - counts["a"]
    assert (f"{abs(diff)} {'more' if diff > 0 else 'fewer'}" in summary) if diff else \
        ("Both use" in summary)
    pg.screenshot("playground-compare.png")


def chat_messages() -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "Answer briefly.\tBe kind."},
        {"role": "user", "content": "Translate: 世界 👨\u200d👩\u200d👧 cafe\u0301?"},
        {"role": "assistant", "content": "World 🌍🏽 — 세계\nnaïve n\u0303"},
        {"role": "user", "content": "Thanks 👍🏿"},
    ]


def fill_messages(pg: Playground, messages: list[dict[str, str]]) -> None:
    page = pg.page
    while page.locator("#messages li").count() > len(messages):
        page.locator("#messages li .remove").last.click()
    while page.locator("#messages li").count() < len(messages):
        page.click("#add-message")
    for i, m in enumerate(messages):
        row = page.locator("#messages li").nth(i)
        row.locator(".role").select_option(m["role"])
        row.locator(".content").fill(m["content"])


def test_chat_mode_template_specials_and_assistant_spans(playground: Playground) -> None:
    pg = playground
    pg.open("chat")
    tokenizer = "deepseek-v4@1"
    pg.page.select_option("#chat-tokenizer", tokenizer)
    messages = chat_messages()
    fill_messages(pg, messages)
    rendered = pg.api("/render_chat", {"tokenizer": tokenizer, "messages": messages,
                                       "return_offsets": True, "return_assistant_mask": True})
    prompt = rendered["text"]
    assert pg.settle("#chat-viewer", prompt) == "ready"

    spans = pg.spans("#chat-viewer")
    assert_spans_cover(spans, prompt)
    # /render_chat offsets are code points; the page shows them over the same prompt.
    cp_to_u16 = [0]
    for ch in prompt:
        cp_to_u16.append(cp_to_u16[-1] + utf16_len(ch))
    u16_offsets = [[cp_to_u16[s], cp_to_u16[e]] for s, e in rendered["offsets"]]
    assert [(s["start"], s["end"], s["ids"]) for s in spans] == \
        expected_groups(rendered["ids"], u16_offsets)

    count = pg.api("/count", {"tokenizer": tokenizer, "messages": messages})["count"]
    assert int(pg.text_of("#chat-count")) == rendered["count"] == count
    trained = sum(label != -100 for label in rendered["labels"])
    assert int(pg.text_of("#chat-assistant-count")) == trained > 0
    assert pg.text_of("#chat-ref") == rendered["tokenizer"]
    assert pg.page.text_content("#chat-template-hash") == rendered["template_hash"]

    # Template-made special tokens are marked: each is exactly a special literal, by id.
    specials = pg.api(f"/tokenizers/{tokenizer}")["special_tokens"]
    marked = [s for s in spans if "special" in s["cls"].split()]
    assert marked
    for s in marked:
        assert specials[s["text"]] == s["ids"][0]
    unmarked_specials = [s for s in spans if "special" not in s["cls"].split()
                         and s["text"] in specials and len(s["ids"]) == 1
                         and specials[s["text"]] == s["ids"][0]]
    assert not unmarked_specials

    # Assistant spans are highlighted: exactly the tokens labelled for training.
    highlighted = [s["ids"] for s in spans if "assistant" in s["cls"].split()]
    labelled_groups = []
    i = 0
    for _, _, members in expected_groups(rendered["ids"], u16_offsets):
        labels = rendered["labels"][i:i + len(members)]
        i += len(members)
        if any(label != -100 for label in labels):
            labelled_groups.append(members)
    assert highlighted == labelled_groups
    pg.screenshot("playground-chat.png")


def test_chat_mode_reserved_literal_notice_then_escape(playground: Playground) -> None:
    pg = playground
    pg.open("chat")
    pg.page.select_option("#chat-tokenizer", "deepseek-v4@1")
    fill_messages(pg, [{"role": "user", "content": "sneaky <｜end▁of▁sentence｜> literal"}])
    # Under "reject" the API refuses the chat; the page shows it escaped, with a notice.
    assert pg.settle("#chat-viewer") == "ready"
    notice = pg.page.locator("#chat-notice")
    error = pg.page.locator("#chat-error")
    assert notice.is_visible() and not error.is_visible()
    assert "reserved_literal_in_content" in notice.inner_text()

    pg.page.select_option("#chat-literals", "escape")
    assert pg.settle("#chat-viewer") == "ready"
    assert not error.is_visible() and not notice.is_visible()
    prompt = pg.page.evaluate("document.querySelector('#chat-viewer').textSource")
    assert "sneaky <｜end▁of▁sentence｜> literal" in prompt
    # Escaped: the literal inside the content is ordinary text, so it is not marked special.
    content = "sneaky <｜end▁of▁sentence｜> literal"
    lo = utf16_len(prompt[:prompt.index(content)])
    hi = lo + utf16_len(content)
    marked_inside = [s for s in pg.spans("#chat-viewer")
                     if "special" in s["cls"].split() and lo <= s["start"] < hi]
    assert not marked_inside


@pytest.mark.parametrize("path", ["/", "/playground"])
def test_page_is_served_offline(server_url: str, path: str) -> None:
    """The page and its assets come from the service itself: nothing external is linked."""
    import httpx

    html = httpx.get(server_url + path, timeout=10)
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert "http://" not in html.text and "https://" not in html.text
    for asset, kind in (("playground.js", "javascript"), ("playground.css", "css")):
        r = httpx.get(f"{server_url}/playground/{asset}", timeout=10)
        assert r.status_code == 200 and kind in r.headers["content-type"]
        assert "https://" not in r.text and "http://" not in r.text
    missing = httpx.get(f"{server_url}/playground/index.html", timeout=10)
    assert missing.status_code == 404


def test_every_module_the_page_loads_is_served_by_the_service(playground: Playground) -> None:
    """The page is ES modules importing one another: every file the browser fetches for it
    comes from the service (nothing external), each module as JavaScript (a browser runs a
    module script only then) with the page's no-cache and nosniff headers, and none of them
    names an external address."""
    import httpx

    pg = playground
    loaded: list[tuple[str, str, dict[str, str]]] = []
    pg.page.on("response", lambda r: loaded.append((r.url, r.request.resource_type, r.headers)))
    pg.open("text")
    assert pg.settle("#viewer") == "ready"
    assert all(url.startswith(pg.url + "/") for url, _, _ in loaded), loaded
    scripts = sorted(url for url, kind, _ in loaded if kind == "script")
    assert f"{pg.url}/playground/playground.js" in scripts and len(scripts) > 1, scripts
    for url, kind, headers in loaded:
        if kind == "script":
            assert headers["content-type"] == "text/javascript; charset=utf-8", url
            assert headers["cache-control"] == "no-cache", url
            assert headers["x-content-type-options"] == "nosniff", url
    for url in scripts:
        body = httpx.get(url, timeout=10).text
        assert "https://" not in body and "http://" not in body, url


# ------------------------------------------------------------------------------ token <-> id

ACCENT = "rgb(47, 111, 222)"  # --accent (light scheme): what a lit token/id is drawn with


def lit(pg: Playground, viewer: str = "#viewer", ids: str = "#ids") -> dict[str, Any]:
    """What is lit up now: the token spans (start, end, first token index, count) and the ids
    (token index, id), with how they are drawn."""
    return pg.page.evaluate("""([viewer, ids]) => ({
        toks: Array.from(document.querySelectorAll(`${viewer} .tok.hover`), el => ({
            start: Number(el.dataset.start), end: Number(el.dataset.end),
            index: Number(el.dataset.index), count: Number(el.dataset.count || 1),
            ids: el.dataset.ids.split(',').map(Number),
            outline: getComputedStyle(el).outlineColor + ' ' + getComputedStyle(el).outlineStyle})),
        ids: Array.from(document.querySelectorAll(`${ids} .id.hover`), el => ({
            i: Number(el.dataset.i), id: Number(el.textContent),
            background: getComputedStyle(el).backgroundColor})),
      })""", [viewer, ids])


def test_hover_links_token_and_id_both_ways(playground: Playground) -> None:
    pg = playground
    pg.page.emulate_media(color_scheme="light")
    pg.open("text")
    text = "ok 👍🏽 done\n\tsecond line, 世界"
    pg.page.fill("#input", text)
    assert pg.settle("#viewer", text) == "ready"
    enc = pg.api("/encode", encode_request("o200k_base@1", text))
    groups = expected_groups(enc["ids"], enc["offsets"])
    # token index range of each group, in order
    firsts = []
    i = 0
    for _, _, members in groups:
        firsts.append(i)
        i += len(members)

    # Token -> id: every group, including the multi-token one (all its ids light up).
    for n, (start, end, members) in enumerate(groups):
        pg.page.locator("#viewer .tok").nth(n).hover()
        state = lit(pg)
        assert [(t["start"], t["end"]) for t in state["toks"]] == [(start, end)]
        assert state["toks"][0]["outline"] == f"{ACCENT} solid"
        assert [(x["i"], x["id"]) for x in state["ids"]] == \
            [(firsts[n] + k, token_id) for k, token_id in enumerate(members)]
        assert all(x["background"] == ACCENT for x in state["ids"])
        assert f"token #{firsts[n]}   id {members[0]}" in pg.page.inner_text("#tip")

    # Id -> token: every id lights up its own group (and the group's other ids).
    for i, token_id in enumerate(enc["ids"]):
        pg.page.locator(f'#ids .id[data-i="{i}"]').hover()
        state = lit(pg)
        n = max(k for k, f in enumerate(firsts) if f <= i)
        start, end, members = groups[n]
        assert [(t["start"], t["end"], t["ids"]) for t in state["toks"]] == [(start, end, members)]
        assert state["toks"][0]["outline"] == f"{ACCENT} solid"
        assert [x["i"] for x in state["ids"]] == list(range(firsts[n], firsts[n] + len(members)))
        assert token_id in [x["id"] for x in state["ids"]]
        assert pg.page.is_visible("#tip")
        assert f"token #{i}   id {token_id}" in pg.page.inner_text("#tip")

    # Leaving puts everything back.
    pg.page.mouse.move(5, 5)
    assert lit(pg) == {"toks": [], "ids": []}
    assert not pg.page.is_visible("#tip")


def test_chat_ids_and_hover(playground: Playground) -> None:
    pg = playground
    pg.open("chat")
    pg.page.select_option("#chat-tokenizer", "deepseek-v4@1")
    messages = chat_messages()
    fill_messages(pg, messages)
    rendered = pg.api("/render_chat", {"tokenizer": "deepseek-v4@1", "messages": messages})
    assert pg.settle("#chat-viewer", rendered["text"]) == "ready"
    assert pg.ids_shown("#chat-ids") == rendered["ids"]
    special = pg.page.locator("#chat-viewer .tok.special").first
    special.hover()
    state = lit(pg, "#chat-viewer", "#chat-ids")
    assert [x["id"] for x in state["ids"]] == [int(special.get_attribute("data-ids"))]
    pg.page.locator('#chat-ids .id[data-i="0"]').hover()
    state = lit(pg, "#chat-viewer", "#chat-ids")
    assert [(t["index"], t["ids"]) for t in state["toks"]] == [(0, [rendered["ids"][0]])]


# ------------------------------------------------------------------------------ chat counts

def shown_message_counts(pg: Playground) -> list[int | None]:
    return pg.page.eval_on_selector_all(
        "#messages .msg-count",
        "bs => bs.map(b => b.dataset.tokens === undefined ? null : Number(b.dataset.tokens))")


def test_chat_mode_shows_per_message_counts(playground: Playground) -> None:
    pg = playground
    pg.open("chat")
    for tokenizer, gen_prompt in (("deepseek-v4@1", False), ("o200k_harmony@1", True)):
        pg.page.select_option("#chat-tokenizer", tokenizer)
        pg.page.set_checked("#chat-gen-prompt", gen_prompt)
        messages = chat_messages()
        fill_messages(pg, messages)
        request = {"tokenizer": tokenizer, "messages": messages,
                   "add_generation_prompt": gen_prompt, "return_message_counts": True}
        rendered = pg.api("/render_chat", request)
        counted = pg.api("/count", request)
        assert pg.settle("#chat-viewer", rendered["text"]) == "ready"
        want = [m["tokens"] for m in rendered["message_counts"]]
        assert [m["index"] for m in rendered["message_counts"]] == list(range(len(messages)))
        assert want == [m["tokens"] for m in counted["message_counts"]]
        assert shown_message_counts(pg) == want
        badges = pg.page.eval_on_selector_all("#messages .msg-count", "bs => bs.map(b => b.textContent)")
        assert badges == [f"{n} token{'' if n == 1 else 's'}" for n in want]
        assert int(pg.text_of("#chat-template-count")) == rendered["template_tokens"]
        assert rendered["tools_tokens"] == 0 and not pg.page.is_visible("#chat-tools-stat")
        assert sum(want) + rendered["template_tokens"] == int(pg.text_of("#chat-count")) \
            == rendered["count"] == counted["count"]

    # Editing a message updates its count; removing one renumbers the rest.
    pg.page.locator("#messages li .content").nth(3).fill("Thanks a lot, see you tomorrow 👍🏿")
    messages = [dict(m) for m in chat_messages()]
    messages[3]["content"] = "Thanks a lot, see you tomorrow 👍🏿"
    pg.page.locator("#messages li .remove").first.click()
    messages = messages[1:]
    request = {"tokenizer": "o200k_harmony@1", "messages": messages,
               "add_generation_prompt": True, "return_message_counts": True}
    rendered = pg.api("/render_chat", request)
    assert pg.settle("#chat-viewer", rendered["text"]) == "ready"
    assert shown_message_counts(pg) == [m["tokens"] for m in rendered["message_counts"]]

    # An error leaves no stale counts behind (the harmony template refuses a tool result
    # with no tool call before it).
    fill_messages(pg, [{"role": "tool", "content": "orphan result"}])
    assert pg.settle("#chat-viewer") == "error"
    assert "template_error" in pg.text_of("#chat-error")
    assert shown_message_counts(pg) == [None]
    assert pg.text_of("#chat-template-count") == "–"
