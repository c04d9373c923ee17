"""The browser suite: Debian's Chromium, driven by Playwright, against `blitz serve`.

Each test starts a real `blitz serve` on 127.0.0.1 (support/blitz_serve.py) and opens the
console in Chromium (the system's `/usr/bin/chromium`, never a browser Playwright would
download). Where Chromium or Playwright is missing the suite is skipped with one line,
except in CI (`CI` set), where that is a failure: CI installs Chromium (`.ci/run`).

Every page records what would mean that hostile content got further than text: script
errors, and Content-Security-Policy violations (a `securitypolicyviolation` event, or
Chromium's console line about one). `ConsolePage.check_clean()` fails the test on any.

Screenshots go to tests/browser/artifacts/ (gitignored; BLITZ_ARTIFACTS elsewhere). The
few that docs/console.md shows (`doc_shot`) are written to docs/ as well when
BLITZ_DOC_SCREENSHOTS is set, so an ordinary run leaves the committed ones as they are.

`console(server, wire="grpc-web")` opens the page with `?wire=grpc-web`: the console then
speaks gRPC-Web instead of Connect (console/src/api.ts); `console_wire` parametrizes a test
over both (`console_wire`).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support.blitz_serve import BlitzServe

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("BLITZ_ARTIFACTS") or ROOT / "tests" / "browser" / "artifacts")
DOCS = ROOT / "docs"
WIRES = ("connect", "grpc-web")
CHROMIUM = os.environ.get("BLITZ_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
# As root Chromium needs --no-sandbox; the rest keep it from calling out on a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
    "--disable-quic",
]
# Bounded, generous waits: a shared 2-CPU machine is slow, never stuck. Playwright's
# `expect` keeps a default of its own (5 s), so it is given the same.
TIMEOUT_MS = 20_000

# Run in every page before its own scripts (Playwright injects it, past the CSP).
_WATCH_PAGE = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__violations.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});
window.__notifications = [];
if ("Notification" in window) {
  const Real = window.Notification;
  window.Notification = class extends Real {
    constructor(title, options) {
      super(title, options);
      window.__notifications.push(title + ": " + ((options && options.body) || ""));
    }
  };
  Object.defineProperty(window.Notification, "permission", { get: () => Real.permission });
  window.Notification.requestPermission = Real.requestPermission.bind(Real);
}
"""


def _unavailable() -> str:
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (make install)"
    if not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return ""


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    why = _unavailable()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"the browser suite cannot run in CI: {why}")
        pytest.skip(f"browser tests skipped: {why}")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def serve(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[BlitzServe]]]:
    """A factory: `await serve(*flags)` starts a `blitz serve`, stopped after the test."""
    started: list[BlitzServe] = []

    async def start(*extra: str, name: str = "data") -> BlitzServe:
        server = await BlitzServe(tmp_path / name, *extra).start()
        started.append(server)
        return server

    yield start
    for server in started:
        await server.stop()


@pytest.fixture
async def server(serve: Callable[..., Awaitable[BlitzServe]]) -> BlitzServe:
    """A server with no tokens on loopback: no sign-in."""
    return await serve()


class ConsolePage:
    """The console in one browser context, and what it recorded."""

    def __init__(self, page: Any, server: BlitzServe, name: str, wire: str = "connect") -> None:
        self.page = page
        self.server = server
        self.name = name
        self.wire = wire
        self.problems: list[str] = []
        # The content types of the calls the page made: what wire it spoke.
        self.content_types: set[str] = set()
        page.on("request", self._request)
        page.set_default_timeout(TIMEOUT_MS)
        _expect_waits(TIMEOUT_MS)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("console", self._console)

    def _console(self, message: Any) -> None:
        text = message.text
        if message.type == "error" and (
            "Content Security Policy" in text or "Refused to" in text or "Uncaught" in text
        ):
            self.problems.append(f"console: {text}")

    def _request(self, request: Any) -> None:
        if request.method == "POST":
            self.content_types.add(request.headers.get("content-type", ""))

    async def open(self, fragment: str = "") -> ConsolePage:
        query = "?wire=grpc-web" if self.wire == "grpc-web" else ""
        await self.page.goto(self.server.url + "/" + query + fragment)
        return self

    def check_wire(self) -> None:
        """The page spoke the wire it was opened for, and only that one."""
        if self.wire == "grpc-web":
            expected = {"application/grpc-web+proto"}
        else:  # unary calls, and streams
            expected = {"application/proto", "application/connect+proto"}
        assert self.content_types and self.content_types <= expected, self.content_types

    async def check_clean(self) -> None:
        """No script error and no CSP violation happened in the page."""
        violations = await self.page.evaluate("window.__violations")
        assert violations == [], violations
        assert self.problems == [], self.problems

    async def shot(self, name: str) -> Path:
        await asyncio.to_thread(ARTIFACTS.mkdir, parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        await self.page.screenshot(path=str(path), full_page=False)
        return path

    async def doc_shot(self, name: str) -> Path:
        """A screenshot docs/console.md shows: artifacts/NAME.png, and docs/console-NAME.png
        when BLITZ_DOC_SCREENSHOTS is set."""
        path = await self.shot(name)
        if os.environ.get("BLITZ_DOC_SCREENSHOTS"):
            await asyncio.to_thread(shutil.copyfile, path, DOCS / f"console-{name}.png")
        return path

    # What a person does

    async def create_session(self, title: str = "", labels: str = "") -> str:
        page = self.page
        await page.get_by_role("button", name="new session").click()
        form = page.get_by_role("form", name="New session")
        await form.get_by_label("Title").fill(title)
        if labels:
            await form.get_by_label("Labels").fill(labels)
        await form.get_by_role("button", name="create").click()
        await page.wait_for_url(re.compile(r"#/s/[^/]+$"))
        await self.live()
        return page.url.rsplit("/", 1)[1]

    async def live(self) -> None:
        from playwright.async_api import expect

        await expect(self.page.get_by_test_id("stream-status")).to_have_text("live")

    async def send(self, prompt: str, *, plan: bool = False) -> None:
        page = self.page
        await page.get_by_label("Prompt").fill(prompt)
        if plan:
            await page.get_by_label("plan mode").check()
        await page.get_by_role("button", name="send").click()

    def approval(self) -> Any:
        return self.page.locator(".approval.open")

    async def decide(self, key: str) -> None:
        """Press an approval key on the open approval, once focus has moved to it."""
        from playwright.async_api import expect

        await expect(self.approval()).to_be_focused()
        await self.page.keyboard.press(key)

    def question(self) -> Any:
        return self.page.locator(".question.open")

    def finished(self) -> Any:
        return self.page.locator("[data-kind=finished]")

    async def seqs(self) -> list[int]:
        """The seqs of the log's items, in page order."""
        found = await self.page.locator(".log [data-seq]").evaluate_all(
            "els => els.map(e => Number(e.dataset.seq))"
        )
        return list(found)


@pytest.fixture
async def console(browser: Any) -> AsyncIterator[Callable[..., Awaitable[ConsolePage]]]:
    """A factory: `await console(server)` opens its console in a new browser context."""
    contexts: list[Any] = []

    async def open_console(
        target: BlitzServe,
        fragment: str = "",
        *,
        width: int = 1280,
        height: int = 860,
        name: str = "page",
        permissions: tuple[str, ...] = (),
        wire: str = "connect",
    ) -> ConsolePage:
        context = await browser.new_context(viewport={"width": width, "height": height})
        if permissions:
            await context.grant_permissions(list(permissions), origin=target.url)
        await context.add_init_script(_WATCH_PAGE)
        contexts.append(context)
        page = ConsolePage(await context.new_page(), target, name, wire)
        return await page.open(fragment)

    yield open_console
    for context in contexts:
        await context.close()


@pytest.fixture(params=WIRES)
def console_wire(request: pytest.FixtureRequest) -> str:
    """Each wire the console speaks: a test taking it runs once over each (the suite's
    `wire` is the Python clients')."""
    return str(request.param)


@pytest.fixture
def other_site() -> Iterator[Callable[[bytes], str]]:
    """A factory: `other_site(html)` serves `html` at every path of a new origin on
    127.0.0.1 (a real server, as another site's page would come from one); its URL."""
    servers: list[ThreadingHTTPServer] = []

    def serve_page(html: bytes) -> str:
        class Page(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-length", str(len(html)))
                self.end_headers()
                self.wfile.write(html)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve_page
    for server in servers:
        server.shutdown()
        server.server_close()


def _expect_waits(timeout_ms: int) -> None:
    from playwright.async_api import expect

    expect.set_options(timeout=timeout_ms)
