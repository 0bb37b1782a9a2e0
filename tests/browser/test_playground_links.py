"""Share links: the page state (mode, tokenizer(s), options, text or chat messages) is in
the URL fragment, and opening that link in a fresh tab shows the same view: same
tokenizer, text, mode and options, and the same highlighted tokens and ids."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import httpx
from test_playground import (  # tests/browser is on sys.path (rootdir conftest, no __init__)
    TRICKY,
    assert_spans_cover,
    chat_messages,
    encode_request,
    expected_groups,
    fill_messages,
)

if TYPE_CHECKING:
    from tests.browser.conftest import Playground


def copy_share_link(pg: Playground) -> str:
    """What the "Copy share link" button puts on the clipboard (= the address bar)."""
    pg.page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=pg.url)
    pg.page.evaluate("document.querySelector('#share-status').textContent = ''")
    pg.page.click("#share")
    pg.page.wait_for_function("document.querySelector('#share-status').textContent === 'link copied'")
    link = pg.page.evaluate("navigator.clipboard.readText()")
    assert link == pg.page.url
    return link


@contextmanager
def fresh_tab(pg: Playground) -> Iterator[Playground]:
    """Another tab of the same browser (its own sessionStorage and history), checked for
    script errors like the fixture's."""
    tab = type(pg)(pg.page.context.new_page(), pg.url)
    try:
        yield tab
        assert not tab.errors, tab.errors
    finally:
        tab.page.close()


def open_link(tab: Playground, link: str, mode: str) -> None:
    tab.page.goto(link)
    tab.page.wait_for_function(
        "m => document.body.dataset.mode === m && document.body.dataset.busy === '0'",
        arg=mode, timeout=20_000)


def view_of(pg: Playground, viewer: str) -> dict[str, Any]:
    return {"text": pg.page.evaluate(f"document.querySelector('{viewer}').textSource"),
            "spans": pg.spans(viewer)}


def fragment(link: str) -> dict[str, list[str]]:
    return parse_qs(link.split("#", 1)[1], keep_blank_values=True)


def test_text_mode_link_round_trip(playground: Playground, bos_tokenizer: str) -> None:
    pg = playground
    pg.open("text")
    text = TRICKY + " <|endoftext|> tail"
    pg.page.select_option("#tokenizer", bos_tokenizer)
    pg.page.select_option("#special-policy", "allow")
    pg.page.check("#add-special")
    pg.page.uncheck("#show-ws")
    pg.page.fill("#input", text)
    assert pg.settle("#viewer", text) == "ready"
    link = copy_share_link(pg)
    assert fragment(link) == {"mode": ["text"], "tokenizer": [bos_tokenizer], "special": ["allow"],
                              "bos": ["1"], "ws": ["0"], "text": [text]}
    before = view_of(pg, "#viewer")

    with fresh_tab(pg) as tab:
        open_link(tab, link, "text")
        assert tab.settle("#viewer", text) == "ready"
        page = tab.page
        assert page.input_value("#tokenizer") == bos_tokenizer
        assert page.input_value("#special-policy") == "allow"
        assert page.is_checked("#add-special") and not page.is_checked("#show-ws")
        assert page.input_value("#input") == text
        assert view_of(tab, "#viewer") == before
        enc = tab.api("/encode", encode_request(bos_tokenizer, text, "allow", bos=True))
        assert [(s["start"], s["end"], s["ids"]) for s in before["spans"]] == \
            expected_groups(enc["ids"], enc["offsets"])
        assert tab.ids_shown() == enc["ids"] == pg.ids_shown()
        assert tab.text_of("#token-count") == pg.text_of("#token-count") == str(len(enc["ids"]))
        assert [s for s in before["spans"] if "special" in s["cls"].split()]
        assert tab.page.locator("#viewer .tok.inserted").count() == 1
        assert not tab.page.is_visible("#global-error")


def test_long_text_link_is_compressed_and_exact(playground: Playground) -> None:
    """A long text goes into the link deflated (base64url); it comes back exactly."""
    pg = playground
    pg.open("text")
    rng = random.Random(16)
    pieces = [TRICKY, "\t", "\n", " ", "plain words ", "数据 ", "👩🏽\u200d💻", "e\u0301", "%&=#+?"]
    text = "".join(rng.choice(pieces) for _ in range(3000))
    pg.page.evaluate("""t => { const i = document.querySelector('#input'); i.value = t;
                              i.dispatchEvent(new Event('input', {bubbles: true})); }""", text)
    assert pg.settle("#viewer", text) == "ready"
    link = copy_share_link(pg)
    fields = fragment(link)
    assert "text" not in fields and len(fields["textz"][0]) < len(text.encode()) // 2
    before = pg.spans("#viewer")

    with fresh_tab(pg) as tab:
        open_link(tab, link, "text")
        assert tab.settle("#viewer", text) == "ready"
        assert tab.page.input_value("#input") == text
        assert tab.page.evaluate("document.querySelector('#viewer').textContent") == text
        # the first screen (what is drawn) is the same on both tabs
        after = tab.spans("#viewer")
        assert after and after == before[:len(after)]
        assert tab.ids_shown() == pg.ids_shown()


def test_compare_mode_link_round_trip(playground: Playground) -> None:
    pg = playground
    pg.open("compare")
    pg.page.select_option("#cmp-a-tokenizer", "cl100k_base@1")
    pg.page.select_option("#cmp-b-tokenizer", "deepseek-v4@1")
    pg.page.fill("#input", TRICKY)
    for side in ("a", "b"):
        assert pg.settle(f"#cmp-{side}-viewer", TRICKY) == "ready"
    link = copy_share_link(pg)
    assert fragment(link)["mode"] == ["compare"]
    before = {side: view_of(pg, f"#cmp-{side}-viewer") for side in ("a", "b")}

    with fresh_tab(pg) as tab:
        open_link(tab, link, "compare")
        assert tab.page.input_value("#cmp-a-tokenizer") == "cl100k_base@1"
        assert tab.page.input_value("#cmp-b-tokenizer") == "deepseek-v4@1"
        for side in ("a", "b"):
            assert tab.settle(f"#cmp-{side}-viewer", TRICKY) == "ready"
            assert view_of(tab, f"#cmp-{side}-viewer") == before[side]
            assert_spans_cover(before[side]["spans"], TRICKY)
        assert tab.text_of("#cmp-summary") == pg.text_of("#cmp-summary")


def test_chat_mode_link_round_trip(playground: Playground) -> None:
    pg = playground
    pg.open("chat")
    pg.page.select_option("#chat-tokenizer", "o200k_harmony@1")
    pg.page.select_option("#chat-literals", "escape")
    pg.page.check("#chat-gen-prompt")
    messages = chat_messages() + [{"role": "user", "content": "Literal <|end|> & #hash %25"}]
    fill_messages(pg, messages)
    rendered = pg.api("/render_chat", {"tokenizer": "o200k_harmony@1", "messages": messages,
                                       "add_generation_prompt": True, "reserved_literals": "escape",
                                       "return_message_counts": True})
    assert pg.settle("#chat-viewer", rendered["text"]) == "ready"
    link = copy_share_link(pg)
    before = view_of(pg, "#chat-viewer")
    counts = pg.page.eval_on_selector_all("#messages .msg-count", "bs => bs.map(b => b.textContent)")

    with fresh_tab(pg) as tab:
        open_link(tab, link, "chat")
        assert tab.settle("#chat-viewer", rendered["text"]) == "ready"
        page = tab.page
        assert page.input_value("#chat-tokenizer") == "o200k_harmony@1"
        assert page.input_value("#chat-template") == "default"
        assert page.input_value("#chat-literals") == "escape"
        assert page.is_checked("#chat-gen-prompt")
        shown = page.eval_on_selector_all("#messages li", """lis => lis.map(li => ({
            role: li.querySelector('.role').value, content: li.querySelector('.content').value}))""")
        assert shown == messages
        assert view_of(tab, "#chat-viewer") == before
        assert tab.ids_shown("#chat-ids") == rendered["ids"]
        assert page.eval_on_selector_all("#messages .msg-count", "bs => bs.map(b => b.textContent)") \
            == counts == [f"{m['tokens']} token{'' if m['tokens'] == 1 else 's'}"
                          for m in rendered["message_counts"]]


def test_link_opened_in_the_same_tab_and_old_links(playground: Playground) -> None:
    pg = playground
    # The old form (the mode only) still opens that mode with the defaults.
    pg.open("chat")
    assert pg.page.input_value("#chat-tokenizer")
    pg.page.goto(f"{pg.url}/playground#compare")
    pg.page.wait_for_function("document.body.dataset.mode === 'compare' && document.body.dataset.busy === '0'")
    # The address bar follows the page; another link pasted into the same tab is applied.
    pg.page.goto(f"{pg.url}/playground#mode=text&tokenizer=cl100k_base&text=caf%C3%A9+%F0%9F%91%8D")
    pg.page.wait_for_function("document.body.dataset.mode === 'text' && document.body.dataset.busy === '0'")
    assert pg.page.input_value("#tokenizer") == "cl100k_base@1"  # a bare name: its served version
    assert pg.settle("#viewer", "café 👍") == "ready"
    pg.page.evaluate("location.hash = 'mode=text&tokenizer=o200k_base%401&text=hello+again'")
    assert pg.settle("#viewer", "hello again") == "ready"
    assert pg.page.input_value("#tokenizer") == "o200k_base@1"
    assert fragment(pg.page.url)["text"] == ["hello again"]

    # A link this server cannot honour says why, and the page still works.
    pg.page.goto(f"{pg.url}/playground#mode=text&tokenizer=nope@9&special=sometimes&textz=%21%21")
    pg.page.wait_for_function("document.body.dataset.mode === 'text' && document.body.dataset.busy === '0'")
    error = pg.text_of("#global-error")
    assert '"nope@9" is not served here' in error
    assert '"sometimes" is not available here' in error
    assert "the text in the link could not be read" in error
    assert pg.settle("#viewer") == "ready"


def test_link_on_a_server_that_needs_a_token(auth_playground: Playground, auth_token: str) -> None:
    """The page asks for the bearer token after a 401, then applies the link it was opened with."""
    tab = auth_playground
    tab.page.goto(f"{tab.url}/playground#mode=text&tokenizer=cl100k_base%401&text=hi+there")
    tab.page.wait_for_selector("#auth-row", state="visible")
    assert "401" in tab.text_of("#global-error")
    tab.page.fill("#auth-token", auth_token)
    tab.page.dispatch_event("#auth-token", "change")
    assert tab.settle("#viewer", "hi there") == "ready"
    assert tab.page.input_value("#tokenizer") == "cl100k_base@1"
    assert not tab.page.is_visible("#global-error")
    r = httpx.post(f"{tab.url}/encode", headers={"Authorization": f"Bearer {auth_token}"},
                   json={"tokenizer": "cl100k_base@1", "text": "hi there"}, timeout=10)
    assert tab.ids_shown() == r.json()["ids"]
    assert fragment(tab.page.url)["text"] == ["hi there"]
