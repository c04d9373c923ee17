"""The `fetch_url` tool: one HTTP(S) GET for the model, reduced to text.

A host in the turn's `fetch_grants` is fetched without asking; any other needs a NETWORK
approval (scope `network: <host>`). Addresses are checked before asking and again on every
hop: loopback, private, link-local and other internal ranges are refused unless the server
allows local fetches, and cloud metadata addresses always. A redirect may only lead to a
granted host or the host that was approved; elsewhere the model is told to fetch it
directly (so it gets its own approval). The body is capped in bytes, HTML is reduced to
text, and binary content is described, not returned.

The address checks and the per-hop redirect handling are pydantic-ai's `_ssrf` module
(pinned with pydantic-ai); this module must never open a connection any other way. Its
refusals are worded for the model here; a request that fails on the way is reported by the
exception's type, its text goes to the log.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx2
import structlog
from pydantic_ai import RunContext
from pydantic_ai._ssrf import safe_download, validate_and_resolve_url

from blitz.agent.deps import ToolDeps
from blitz.agent.policy import Action, gate
from blitz.html_text import html_to_text
from blitz.v1 import turn_pb2

__all__ = ["fetch_url", "normalize_host"]

log = structlog.get_logger(__name__)

_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript")


def normalize_host(host: str) -> str:
    """How grants and hosts are compared: lower case, no trailing dot, no brackets."""
    return host.strip().strip("[]").rstrip(".").lower()


async def fetch_url(ctx: RunContext[ToolDeps], url: str) -> dict[str, Any]:
    """Fetch a web page or file over HTTP(S) and return its text (may need approval).

    Args:
        url: The absolute http:// or https:// URL.
    """
    deps = ctx.deps
    limits = deps.settings.fetch
    try:
        parts = urlsplit(url.strip())
        hostname = parts.hostname
    except ValueError:  # e.g. "http://[::1": an unclosed bracket
        return {"url": url, "error": "not a valid URL: its host or port cannot be read"}
    if parts.scheme not in ("http", "https") or not hostname:
        return {"url": url, "error": "only absolute http:// and https:// URLs can be fetched"}
    host = normalize_host(hostname)
    grants = {normalize_host(g) for g in deps.policy.fetch_grants if g.strip()}
    try:
        # Refuse a blocked address before anyone is asked to approve it.
        await validate_and_resolve_url(url, limits.allow_local)
    except ValueError as exc:
        return {"url": url, "error": _address_refusal(exc)}
    if host not in grants:
        action = Action(turn_pb2.ACTION_KIND_NETWORK, url, f"network: {host}")
        if refused := await gate(ctx, action):
            return {"url": url, "error": refused}
    allowed = sorted(grants | {host})
    try:
        response = await safe_download(
            url,
            allow_local=limits.allow_local,
            timeout=int(limits.timeout),
            allowed_domains=allowed,
            max_bytes=limits.max_bytes,
            headers={"User-Agent": "blitz-agent"},
        )
    except httpx2.HTTPStatusError as exc:
        return {"url": url, "status": exc.response.status_code, "error": "HTTP error status"}
    except httpx2.RequestError as exc:
        log.warning("fetch_failed", host=host, exc_info=exc)
        return {"url": url, "error": _request_failure(host, exc)}
    except ValueError as exc:
        return {"url": url, "error": _address_refusal(exc)}
    return _result(url, response, cap=deps.settings.output_cap)


def _result(url: str, response: httpx2.Response, *, cap: int) -> dict[str, Any]:
    media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    body = response.content
    result: dict[str, Any] = {
        "url": url,
        "status": response.status_code,
        "content_type": media_type,
    }
    if media_type and not media_type.startswith(_TEXT_TYPES) and "html" not in media_type:
        result["content"] = f"(binary content, {len(body)} bytes, not shown)"
        return result
    text = body.decode(_text_encoding(response.encoding), errors="replace")
    if "html" in media_type or (not media_type and "<html" in text[:1000].lower()):
        text = html_to_text(text)
    result["content"] = text[:cap]
    result["truncated"] = len(text) > cap
    return result


def _request_failure(host: str, exc: httpx2.RequestError) -> str:
    """What the model is told of a request that failed on the way: our words, not httpx's."""
    # pydantic-ai re-raises httpx's error as a compatibility type of its own; the cause is it.
    cause = exc.__cause__ if isinstance(exc.__cause__, httpx2.RequestError) else exc
    if isinstance(cause, httpx2.TimeoutException):
        why = "no answer came in time"
    else:
        why = "it could not be sent, or its answer broke off"
    return f"the request to {host} failed ({type(cause).__name__}): {why}"


def _text_encoding(name: str | None) -> str:
    """The page's declared charset if it names a text encoding (not `base64`, `zlib`…)."""
    if name:
        try:
            b"a".decode(name, "replace")  # refuses codecs that are not text encodings
        except LookupError:
            return "utf-8"
        return name
    return "utf-8"


def _address_refusal(exc: ValueError) -> str:
    message = str(exc)
    if "private/internal" in message:
        # The library's hint names its own option; say what applies here instead.
        return message.split(". Use ")[0] + " (the server does not allow local fetches)."
    if "allowed domains" in message:
        return (
            f"{message}. A redirect led to another host: fetch that URL directly, "
            "which may need its own approval."
        )
    return message
