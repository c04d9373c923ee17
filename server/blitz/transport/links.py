"""Approval links' pages on the HTTP port: `GET` and `POST /approve/TOKEN`.

A webhook's message carries links that answer the request it tells of (docs/webhooks.md,
"Approval links"). `GET` (and `HEAD`) never decides: it answers a small page saying what
the link would do (the session, the tool and command or the question, the choice, as whom,
until when) with one button, a form that POSTs to the same URL. So a link preview bot, a
mail scanner or a prefetching browser changes nothing. `POST` decides, once, and answers a
page saying what became of it. The token is the credential, so a forged cross-site form
would need it already; a browser's cross-site POST is refused anyway (`Sec-Fetch-Site`),
after the port's own Host and Origin checks (`rebinding.py`), which every path passes.

Everything on a page but its frame may hold what a model wrote: it is HTML-escaped, always.
The page has no script at all, and headers that say so: a Content-Security-Policy of
`default-src 'none'` that allows only its own inline style (by hash) and forms to its
own origin, no framing, no referrer (the URL is a credential), no caching.

No business rule here: the link port (`blitz.ports.LinkPort`) says what a token does.
"""

from __future__ import annotations

import base64
import hashlib
import html
from datetime import UTC, datetime

import structlog

from blitz.ports import LinkPort, LinkState, LinkView
from blitz.transport.http import Receive, Scope, Send, read_body

__all__ = ["LINKS_PATH", "PAGE_POLICY", "LinksApp"]

log = structlog.get_logger(__name__)

LINKS_PATH = "/approve"
# The most of a POST's body read (the form has no field; a browser sends a few bytes).
_FORM_MAX = 16 * 1024
# Characters of a command, path or question a page shows.
_SHOWN = 4000

_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}"
    "main{max-width:40rem;margin:2rem auto;padding:1.5rem;background:#fff;"
    "border:1px solid #d9dde5;border-radius:8px}"
    ".brand{margin:0;color:#6b7385;font-size:.85rem;letter-spacing:.05em}"
    "h1{font-size:1.3rem;margin:.3rem 0 1rem}"
    "dt{color:#6b7385;font-size:.85rem;margin-top:.6rem}dd{margin:0}"
    "pre{white-space:pre-wrap;word-break:break-word;background:#f0f2f5;padding:.5rem;"
    "border-radius:4px;margin:0}"
    ".message{font-weight:600}"
    "button{font:inherit;font-weight:600;margin-top:1.2rem;padding:.6rem 1.2rem;border:0;"
    "border-radius:6px;background:#1f6feb;color:#fff;cursor:pointer}"
    "button.refuses{background:#cf222e}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
PAGE_POLICY = "; ".join(
    (
        "default-src 'none'",
        f"style-src 'sha256-{_STYLE_HASH}'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    )
)
_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-security-policy", PAGE_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
_STATUS = {
    LinkState.OPEN: 200,
    LinkState.DONE: 200,
    LinkState.ANSWERED: 409,
    LinkState.REFUSED: 409,
    LinkState.EXPIRED: 410,
    LinkState.INVALID: 403,
    LinkState.GONE: 404,
}
_HEADINGS = {
    LinkState.ANSWERED: "Already answered",
    LinkState.REFUSED: "Refused",
    LinkState.EXPIRED: "This link has expired",
    LinkState.INVALID: "This link is not valid",
    LinkState.GONE: "No longer open",
}


class LinksApp:
    """The link pages (see the module doc), mounted on the HTTP port at `/approve/`."""

    path = LINKS_PATH

    def __init__(self, port: LinkPort) -> None:
        self._port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token: str = scope["path"][len(LINKS_PATH) + 1 :]
        method: str = scope["method"]
        if not token or "/" in token:
            await _page(send, 404, _frame("Not found", "There is nothing here."), head=False)
            return
        if method not in ("GET", "HEAD", "POST"):
            body = _frame("Not allowed", "A link is opened (GET) or its form sent (POST).")
            await _page(send, 405, body, allow=True)
            return
        if method == "POST" and _cross_site(scope):
            log.info("link_refused", why="cross-site form")
            body = _frame("Refused", "This form is sent from its own page only.")
            await _page(send, 403, body)
            return
        if method == "POST" and await read_body(receive, _FORM_MAX) is None:
            await _page(send, 413, _frame("Refused", "The form is too large."))
            return
        try:
            view = await (self._port.decide(token) if method == "POST" else self._port.page(token))
        except Exception:
            log.exception("link_page_failed", method=method)
            body = _frame("Something went wrong", "The server's log has the details.")
            await _page(send, 500, body, head=method == "HEAD")
            return
        await _page(send, _STATUS[view.state], render(view), head=method == "HEAD")


def render(view: LinkView) -> str:
    """The page of `view`: every string of it escaped."""
    if view.state is LinkState.OPEN:
        heading = "Approval needed" if view.kind == "approval" else "A question for you"
    elif view.state is LinkState.DONE:
        heading = view.message
    else:
        heading = _HEADINGS[view.state]
    rows: list[tuple[str, str, bool]] = []
    if view.kind:
        rows.append(("Session", view.title or view.session_id, False))
    if view.kind == "approval":
        rows.append(("Tool", f"{view.tool} ({view.action})", False))
        rows.append(("What it would do", _clip(view.detail), True))
        if view.scope_label:
            rows.append(("Rule scope", _clip(view.scope_label), True))
    elif view.kind == "question":
        rows.append(("Question", _clip(view.question), True))
    if view.state is LinkState.OPEN:
        rows.append(("This link", view.choice, False))
        rows.append(("Answers as", view.principal or "the local user", False))
        if view.expires:
            rows.append(("Until", _when(view.expires), False))
    parts = []
    if view.message and view.state is not LinkState.DONE:  # a DONE page's heading says it
        parts.append(f'<p class="message">{_text(view.message)}</p>')
    if rows:
        parts.append("<dl>")
        for label, value, block in rows:
            shown = f"<pre>{_text(value)}</pre>" if block else _text(value)
            parts.append(f"<dt>{_text(label)}</dt><dd>{shown}</dd>")
        parts.append("</dl>")
    if view.state is LinkState.OPEN:
        look = ' class="refuses"' if view.refuses else ""
        parts.append(
            f'<form method="post"><button type="submit"{look}>{_text(view.choice)}</button></form>'
        )
    if view.console_url:
        url = html.escape(view.console_url, quote=True)
        parts.append(f'<p><a href="{url}">Open the session in the console</a></p>')
    return _frame(heading, "\n".join(parts), escaped=True)


def _frame(heading: str, content: str, *, escaped: bool = False) -> str:
    body = content if escaped else f"<p>{_text(content)}</p>"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>Blitz · {_text(heading)}</title><style>{_STYLE}</style></head>\n"
        f'<body><main><p class="brand">BLITZ</p><h1>{_text(heading)}</h1>\n{body}\n'
        "</main></body></html>\n"
    )


def _text(value: str) -> str:
    return html.escape(value, quote=True)


def _clip(text: str) -> str:
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _cross_site(scope: Scope) -> bool:
    """Whether a browser says the request comes from another site."""
    for key, value in scope["headers"]:
        if key.lower() == b"sec-fetch-site":
            return value.decode("latin-1").strip().lower() in {"cross-site", "same-site"}
    return False


async def _page(
    send: Send, status: int, page: str, *, head: bool = False, allow: bool = False
) -> None:
    body = page.encode()
    headers = [*_HEADERS, (b"content-length", str(len(body)).encode())]
    if allow:
        headers.append((b"allow", b"GET, HEAD, POST"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})
