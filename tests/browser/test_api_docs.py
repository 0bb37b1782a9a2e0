"""/redoc and /docs in headless Chromium: the API docs pages of the real service.

Every request the pages make stays on the service (no CDN script, font, logo or
validator badge: the pages work offline and tell no one who reads them), the document
renders without a console warning (ReDoc warns about schemas it cannot merge, such as a
branch that gives a field another type), and both list the main operations first.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

MAIN_TAGS = ["tokenize", "chat", "stream", "tokenizers"]


@pytest.fixture
def tab(browser_context: Any, server_url: str) -> Iterator[SimpleNamespace]:
    """A fresh tab, with what it logs and every request it sends off the service."""
    page = browser_context.new_page()
    seen = SimpleNamespace(page=page, console=[], elsewhere=[])
    page.on("console", lambda msg: msg.type in ("warning", "error")
            and seen.console.append(f"{msg.type}: {msg.text}"))
    page.on("pageerror", lambda exc: seen.console.append(f"page error: {exc}"))
    page.on("request", lambda request: request.url.startswith(
        (server_url + "/", "data:", "blob:")) or seen.elsewhere.append(request.url))
    try:
        yield seen
    finally:
        page.close()


def test_redoc_is_offline_warning_free_and_starts_with_the_main_operations(tab, server_url):
    tab.page.goto(server_url + "/redoc")
    tab.page.wait_for_selector("li[data-item-id='tag/admin']")
    tab.page.wait_for_load_state("networkidle")
    items = tab.page.eval_on_selector_all(
        "li[data-item-id^='tag/']", "els => els.map(e => e.dataset.itemId)")
    tags = [item.removeprefix("tag/") for item in items if "/operation/" not in item]
    assert tags[:4] == MAIN_TAGS and tags[-1] == "admin"
    assert items[1:4] == ["tag/tokenize/operation/encode", "tag/tokenize/operation/count",
                          "tag/tokenize/operation/decode"]
    assert tab.elsewhere == []
    assert tab.console == []


def test_swagger_ui_is_offline_and_starts_with_the_main_operations(tab, server_url):
    tab.page.goto(server_url + "/docs")
    tab.page.wait_for_selector(".opblock-tag[data-tag='admin']")
    tab.page.wait_for_load_state("networkidle")
    tags = tab.page.eval_on_selector_all(".opblock-tag", "els => els.map(e => e.dataset.tag)")
    assert tags[:4] == MAIN_TAGS and tags[-1] == "admin"
    paths = tab.page.eval_on_selector_all(".opblock-summary-path",
                                          "els => els.map(e => e.dataset.path)")
    assert paths[:3] == ["/encode", "/count", "/decode"]
    assert tab.elsewhere == []
    assert tab.console == []
