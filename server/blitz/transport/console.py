"""The browser console on the HTTP port: its page at `/`, its assets under `/console/`.

The files are built from `console/` by `make console` and ship inside this package
(`blitz/console/`), so serving them needs no Node. They are read once, when the app is
made, and answered from memory (gzipped ahead for a client that accepts it), with an ETag
so a reload costs a 304.

Everything the console shows comes from the model, commands and files, all untrusted
(docs/console.md), so every answer here carries headers that keep a page from doing what
the bundle does not: a Content-Security-Policy with no inline script, no eval, no plugin,
calls only to this origin (`connect-src 'self'`), no framing (`frame-ancestors 'none'`),
and `X-Content-Type-Options: nosniff`. The bundle itself renders untrusted text as text and
Markdown only through a sanitizer; the policy is the second wall.

No business rule here, and nothing but GET and HEAD.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path

from blitz.transport.http import Receive, Scope, Send

__all__ = ["CONSOLE_PATH", "CONTENT_SECURITY_POLICY", "SECURITY_HEADERS", "ConsoleApp"]

# Where the assets are served; the page itself is `/`.
CONSOLE_PATH = "/console"
# The built files, inside this package.
_BUILT = Path(__file__).resolve().parent.parent / "console"
_INDEX = "index.html"
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        # Uploaded images are previewed from blob: URLs before they are sent.
        "img-src 'self' blob: data:",
        "connect-src 'self'",
        "font-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=(), payment=(), usb=()"),
)


@dataclass(frozen=True)
class _Asset:
    content_type: bytes
    body: bytes
    gzipped: bytes
    etag: bytes


class ConsoleApp:
    """The console's page and assets; `/` is the page (`HttpApp` routes it here)."""

    path = CONSOLE_PATH

    def __init__(self, folder: Path = _BUILT) -> None:
        self._assets: dict[str, _Asset] = {}
        if folder.is_dir():
            for file in sorted(folder.iterdir()):
                if file.is_file() and file.suffix in _TYPES:
                    self._assets[file.name] = _asset(file)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if method not in ("GET", "HEAD"):
            await _answer(send, 405, b"text/plain; charset=utf-8", b"GET only\n", allow=True)
            return
        path: str = scope["path"]
        name = _INDEX if path == "/" else path.removeprefix(CONSOLE_PATH + "/")
        asset = self._assets.get(name)
        if asset is None:
            if name == _INDEX:
                body = b"the console is not built: run `make console`\n"
                await _answer(send, 503, b"text/plain; charset=utf-8", body)
            else:
                await _answer(send, 404, b"text/plain; charset=utf-8", b"not found\n")
            return
        headers = dict(
            (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]
        )
        if asset.etag.decode() in {t.strip() for t in headers.get("if-none-match", "").split(",")}:
            await _answer(send, 304, asset.content_type, b"", etag=asset.etag)
            return
        gzipped = "gzip" in headers.get("accept-encoding", "").lower()
        body = asset.gzipped if gzipped else asset.body
        await _answer(
            send,
            200,
            asset.content_type,
            body,
            etag=asset.etag,
            gzipped=gzipped,
            head=method == "HEAD",
        )


def _asset(file: Path) -> _Asset:
    body = file.read_bytes()
    digest = hashlib.sha256(body).hexdigest()[:32]
    return _Asset(
        content_type=_TYPES[file.suffix].encode(),
        body=body,
        gzipped=gzip.compress(body, compresslevel=9, mtime=0),
        etag=f'"{digest}"'.encode(),
    )


async def _answer(
    send: Send,
    status: int,
    content_type: bytes,
    body: bytes,
    *,
    etag: bytes = b"",
    gzipped: bool = False,
    head: bool = False,
    allow: bool = False,
) -> None:
    headers = [(b"content-type", content_type), *SECURITY_HEADERS]
    # Always asked again, answered 304 while unchanged: a new server's console is loaded
    # as soon as it serves.
    headers.append((b"cache-control", b"no-cache"))
    headers.append((b"vary", b"accept-encoding"))
    if etag:
        headers.append((b"etag", etag))
    if gzipped:
        headers.append((b"content-encoding", b"gzip"))
    if allow:
        headers.append((b"allow", b"GET, HEAD"))
    if status != 304:
        headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head or status == 304 else body})
