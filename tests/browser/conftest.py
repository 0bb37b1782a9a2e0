"""Browser fixtures: the real service on a loopback port, and headless Debian Chromium.

The page is driven with the ``playwright`` Python package pointed at the SYSTEM Chromium
(``/usr/bin/chromium``, or ``TOKSERVE_CHROMIUM``); ``playwright install`` is never needed
and does not work offline. Without the package or the browser every test here skips with
a reason saying how to enable it. Every test that drives the browser carries the
``browser`` marker (``pytest -m "not browser"`` leaves them out).

The server is the real app (``service.app.create_app``) served by uvicorn in a thread, on a
socket bound to 127.0.0.1 port 0, so runs never collide on a port. Screenshots go to
``build/screenshots/`` (gitignored).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "build" / "screenshots"
CHROMIUM = Path(os.environ.get("TOKSERVE_CHROMIUM", "/usr/bin/chromium"))
# Playwright adds --headless itself and gets a fresh --user-data-dir from
# launch_persistent_context (it refuses the flag in `args`).
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]
SETTLE_TIMEOUT_MS = 20_000


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "browser: drives the playground in headless Chromium")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        in_here = here in Path(str(item.fspath)).parents
        if in_here and "browser_context" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)


def _unavailable() -> str | None:
    """Why the browser tests cannot run here, phrased as how to enable them; None if they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return ("browser tests need the `playwright` Python package: pip install playwright "
                "(or pip install -e '.[test]'); do not run `playwright install`, the system "
                "Chromium is used")
    if not CHROMIUM.exists():
        return (f"no Chromium at {CHROMIUM}: run `bash tools/install_chromium.sh` (Debian: "
                "apt-get install chromium chromium-driver) or set TOKSERVE_CHROMIUM")
    return None


# ------------------------------------------------------------------------------ server

#: An extra tokenizer that inserts a BOS token (none of the bundled ones does), so the page's
#: drawing of zero-width, tokenizer-inserted tokens is exercised too.
BOS_TOKENIZER = "cl100k-bos@1"


def _bos_artifact(root: Path) -> Path:
    """``root/cl100k-bos/1``: the bundled cl100k_base vocabulary with add_bos_token on."""
    from tokserve import bundled_root
    from tokserve.authoring.manifest import write_artifact

    src = bundled_root() / "cl100k_base" / "1"
    manifest = json.loads((src / "manifest.json").read_text())
    write_artifact(root, "cl100k-bos", "1",
                   {"cl100k_base.tiktoken": src / "cl100k_base.tiktoken"},
                   format="tiktoken", tokenizer_file="cl100k_base.tiktoken",
                   pattern=manifest["pattern"], special_tokens=manifest["special_tokens"],
                   bos_token="<|endoftext|>", add_bos_token=True, normalizer="none",
                   source="tests/browser: bundled cl100k_base with add_bos_token", license="MIT")
    return root


def _app(extra_root: Path, auth_token: str | None = None) -> Any:
    from tokserve import bundled_root
    from tokserve.service.http.app import create_app
    from tokserve.service.runtime.settings import Settings

    settings = Settings(bundled_artifacts=bundled_root(), artifacts=[extra_root],
                        auth_token=auth_token, default_tokenizer="o200k_base",
                        log_level="warning")
    return create_app(settings)


@contextmanager
def _serve(app: Any) -> Iterator[str]:
    """Serves `app` with uvicorn in a thread on a free loopback port; yields its base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the service did not start (see the log above)")
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port}"
    try:
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of the real service, serving the bundled artifacts (plus BOS_TOKENIZER), on
    a free loopback port."""
    with _serve(_app(_bos_artifact(tmp_path_factory.mktemp("artifacts")))) as url:
        yield url


#: The bearer token of the `auth_server_url` service (the `auth_token` fixture).
AUTH_TOKEN = "playground-test-token"


@pytest.fixture(scope="session")
def auth_token() -> str:
    return AUTH_TOKEN


@pytest.fixture(scope="session")
def auth_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same service with TOKSERVE_AUTH_TOKEN set (AUTH_TOKEN): the API needs a bearer
    token, the page itself does not."""
    app = _app(_bos_artifact(tmp_path_factory.mktemp("artifacts-auth")), AUTH_TOKEN)
    with _serve(app) as url:
        yield url


@pytest.fixture(scope="session")
def bos_tokenizer(server_url: str) -> str:
    """name@version of the served tokenizer that inserts a BOS token."""
    return BOS_TOKENIZER


# ------------------------------------------------------------------------------ browser

@pytest.fixture(scope="session")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium with a fresh profile directory for the whole session."""
    reason = _unavailable()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            user_data_dir=str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
            service_workers="block",
        )
        try:
            yield context
        finally:
            context.close()


class Playground:
    """One browser tab on the playground plus the same service over plain HTTP."""

    def __init__(self, page: Any, url: str) -> None:
        self.page = page
        self.url = url
        self.errors: list[str] = []
        page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        page.on("console", lambda msg: msg.type == "error" and self._console_error(msg))

    def _console_error(self, msg: Any) -> None:
        # An API error answer (e.g. 400 under `reject`) is logged by Chromium as a failed
        # resource load; that is the page working as intended, not a script error.
        if "Failed to load resource" not in msg.text:
            self.errors.append(f"console error: {msg.text}")

    # --- the service, directly -----------------------------------------------------------
    def api(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        if body is None:
            r = httpx.get(self.url + path, timeout=30)
        else:
            r = httpx.post(self.url + path, content=json.dumps(body), timeout=30,
                           headers={"Content-Type": "application/json"})
        assert r.status_code == 200, r.text
        return r.json()

    # --- the page ---------------------------------------------------------------------------
    def open(self, mode: str) -> None:
        self.page.goto(f"{self.url}/playground#{mode}")
        self.page.wait_for_function(
            "m => document.body.dataset.mode === m && document.body.dataset.busy === '0'",
            arg=mode, timeout=SETTLE_TIMEOUT_MS)

    def settle(self, viewer: str, text: str | None = None) -> str:
        """Wait until nothing is pending and `viewer` shows `text` (or an error); its status."""
        self.page.wait_for_function(
            """([sel, text]) => {
                 const v = document.querySelector(sel);
                 if (document.body.dataset.busy !== '0') return false;
                 if (v.dataset.status === 'error') return true;
                 return v.dataset.status === 'ready' && (text === null || v.textSource === text);
               }""",
            arg=[viewer, text], timeout=SETTLE_TIMEOUT_MS)
        return self.page.eval_on_selector(viewer, "v => v.dataset.status")

    def spans(self, viewer: str) -> list[dict[str, Any]]:
        """The viewer's drawn tokens (and gaps) in text order, with their offsets and ids.

        The viewer draws its text chunk by chunk as chunks come into view; a short text (all
        the tests' but the 300k one) is drawn at once, so this is every token."""
        return self.page.eval_on_selector(viewer, """v => Array.from(v.querySelectorAll('.tok, .gap'), el => ({
            cls: el.className,
            start: el.dataset.start === undefined ? null : Number(el.dataset.start),
            end: el.dataset.end === undefined ? null : Number(el.dataset.end),
            ids: el.dataset.ids ? el.dataset.ids.split(',').map(Number) : [],
            count: Number(el.dataset.count || 1),
            text: el.textContent,
        }))""")

    def ids_shown(self, selector: str = "#ids") -> list[int]:
        """The ids view's content: a JSON list, whether its chunks are drawn or not."""
        return json.loads(self.page.text_content(selector) or "null")

    def text_of(self, selector: str) -> str:
        return self.page.inner_text(selector).strip()

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / name
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture()
def playground(browser_context: Any, server_url: str) -> Iterator[Playground]:
    page = browser_context.new_page()
    pg = Playground(page, server_url)
    try:
        yield pg
        assert not pg.errors, pg.errors
    finally:
        page.close()


@pytest.fixture()
def auth_playground(browser_context: Any, auth_server_url: str) -> Iterator[Playground]:
    """A tab on the service that needs AUTH_TOKEN (not entered yet)."""
    page = browser_context.new_page()
    pg = Playground(page, auth_server_url)
    try:
        yield pg
        assert not pg.errors, pg.errors
    finally:
        page.close()
