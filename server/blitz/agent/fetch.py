"""The `fetch_url` tool: one HTTP(S) GET for the model, reduced to text.

What may be fetched is decided per origin: scheme, host and port. A URL whose origin a
grant covers (`Turn.fetch_grants`) is fetched without asking. A grant is a bare host, which
covers that host on every port and both schemes, or an origin written as a URL
(`https://pypi.org`, `http://localhost:8080`), which covers that origin alone. Any other
origin needs a NETWORK approval whose detail and scope name the origin
(`network: https://pypi.org:443`), so a rule made from it covers that origin and no other
port or scheme of the host.

Every hop is checked twice. Its address: loopback, private, link-local and other internal
ranges are refused unless the server allows local fetches, and cloud metadata addresses
always. Its origin: a redirect may only lead to the origin that was approved or to one a
grant covers; anywhere else (another host, port or scheme) it is not followed, and the
model is told to fetch that URL directly, which asks for its own approval. The body is
capped in bytes, HTML is reduced to text, and binary content is described, not returned.

The address checks and the rules of a hop (connect to the address that was checked, send
the host's name in `Host` and SNI, follow no redirect by itself) are `blitz.outbound`'s,
which webhook deliveries share; the capped read of a body is pydantic-ai's `_ssrf`
module's (pinned with pydantic-ai). The hop loop is here because `safe_download` checks a
redirect's host name only, not its port or scheme. This module must never open a
connection any other way. Every refusal and failure is worded
for the model here; a library's own text goes to the log.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx2
import structlog
from pydantic_ai import RunContext
from pydantic_ai._http import create_async_httpx2_client
from pydantic_ai._ssrf import (
    _read_capped_body,
    _response_with_decoded_content,
    resolve_redirect_url,
)

from blitz.agent.deps import FetchLimits, ToolDeps
from blitz.agent.policy import Action, Rewrite, gate_input
from blitz.html_text import html_to_text
from blitz.outbound import AddressPolicy, Refused, ResolvedUrl, request_to, resolve
from blitz.v1 import turn_pb2

__all__ = ["Grants", "Origin", "fetch_url", "normalize_host"]

log = structlog.get_logger(__name__)

_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript")
_MAX_REDIRECTS = 10
_DEFAULT_PORTS = {"http": 80, "https": 443}
# The encodings whose size can be checked while the body streams in (see `_ssrf`).
_ACCEPT_ENCODING = "identity, gzip"


def normalize_host(host: str) -> str:
    """How grants and hosts are compared: lower case, no trailing dot, no brackets."""
    return host.strip().strip("[]").rstrip(".").lower()


@dataclass(frozen=True)
class Origin:
    """Where a URL leads: scheme, host (normalized) and port, the default one spelled out."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        """The origin of an absolute http(s) URL; ValueError when it has none."""
        parts = urlsplit(url.strip())
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise ValueError("not an absolute http(s) URL")
        return cls(scheme, normalize_host(parts.hostname), parts.port or _DEFAULT_PORTS[scheme])

    @property
    def label(self) -> str:
        """`https://pypi.org:443`: how approvals and rules name the origin."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


@dataclass(frozen=True)
class Grants:
    """A turn's fetch grants: bare hosts (every port and scheme) and whole origins."""

    hosts: frozenset[str]
    origins: frozenset[Origin]

    @classmethod
    def parse(cls, grants: Iterable[str]) -> Grants:
        """The grants as a turn gives them; one that names no host grants nothing."""
        hosts: set[str] = set()
        origins: set[Origin] = set()
        for grant in grants:
            grant = grant.strip()
            if "://" in grant:
                try:
                    origins.add(Origin.of(grant))
                except ValueError:
                    continue
            elif grant:
                hosts.add(normalize_host(grant))
        return cls(frozenset(hosts), frozenset(origins))

    def cover(self, origin: Origin) -> bool:
        return origin.host in self.hosts or origin in self.origins


class _Refused(Exception):
    """A hop that is not made; the message is for the model."""


async def fetch_url(ctx: RunContext[ToolDeps], url: str) -> dict[str, Any]:
    """Fetch a web page or file over HTTP(S) and return its text (may need approval).

    Args:
        url: The absolute http:// or https:// URL.
    """
    deps = ctx.deps
    grants = Grants.parse(deps.policy.fetch_grants)
    origin = await _checked(ctx, url)
    if isinstance(origin, str):
        return {"url": url, "error": origin}
    if not grants.cover(origin):

        async def reshape(rewritten: dict[str, Any]) -> tuple[Action, dict[str, Any]] | str:
            # A hook's URL passes the checks the model's does, and is asked for as its own.
            checked = await _checked(ctx, str(rewritten["url"]))
            if isinstance(checked, str):
                return checked
            return _action(str(rewritten["url"]), checked), {"url": rewritten["url"]}

        refused, rewritten = await gate_input(
            ctx,
            _action(url, origin),
            tool_input={"url": url},
            rewrite=Rewrite(frozenset({"url"}), reshape),
        )
        if refused:
            return {"url": url, "error": refused}
        if rewritten is not None:
            url = str(rewritten["url"])
            origin = await _checked(ctx, url)
            if isinstance(origin, str):
                return {"url": url, "error": origin}
    limits = deps.settings.fetch
    try:
        response = await _download(
            url, allowed=lambda hop: hop == origin or grants.cover(hop), limits=limits
        )
    except httpx2.HTTPStatusError as exc:
        return {"url": url, "status": exc.response.status_code, "error": "HTTP error status"}
    except httpx2.RequestError as exc:
        log.warning("fetch_failed", host=origin.host, exc_info=exc)
        return {"url": url, "error": _request_failure(origin.host, exc)}
    except _Refused as exc:
        return {"url": url, "error": str(exc)}
    return _result(url, response, cap=deps.settings.output_cap)


async def _checked(ctx: RunContext[ToolDeps], url: str) -> Origin | str:
    """The origin `url` leads to, or why it may not be fetched. What can be refused without
    a lookup is refused before anyone is asked to approve it (an address written in the
    URL, a name no DNS could hold); a name is looked up only once the fetch is approved:
    the lookup itself tells a DNS server where the agent wants to go."""
    try:
        origin = Origin.of(url)
    except ValueError:  # e.g. "http://[::1" (an unclosed bracket), or a port that is no number
        scheme, _, rest = url.strip().partition(":")
        if scheme.lower() in _DEFAULT_PORTS and rest.startswith("//") and rest[2:3] not in "/":
            return "not a valid URL: its host or port cannot be read"
        return "only absolute http:// and https:// URLs can be fetched"
    try:
        if _literal(origin.host):
            await _resolve(url, origin, allow_local=ctx.deps.settings.fetch.allow_local)
        else:
            _check_name(origin.host)
    except _Refused as exc:
        return str(exc)
    return origin


def _action(url: str, origin: Origin) -> Action:
    """The NETWORK approval a fetch of `url` asks: its scope names the origin."""
    detail = f"GET {url} ({origin.label})"
    return Action(turn_pb2.ACTION_KIND_NETWORK, detail, f"network: {origin.label}")


async def _download(
    url: str, *, allowed: Callable[[Origin], bool], limits: FetchLimits
) -> httpx2.Response:
    """GET `url`, following redirects only to origins `allowed` covers, each hop checked."""
    current = url
    max_bytes = limits.max_bytes
    client = create_async_httpx2_client(timeout=httpx2.Timeout(limits.timeout, connect=5))
    async with client:
        for _ in range(_MAX_REDIRECTS + 1):
            try:
                hop = Origin.of(current)
            except ValueError:
                raise _Refused("a redirect led to a URL that cannot be fetched") from None
            if not allowed(hop):
                raise _Refused(
                    f"a redirect led to {current} (host '{hop.host}', {hop.label}), which this "
                    "fetch was not approved for: fetch that URL directly, which may need its "
                    "own approval."
                )
            resolved = await _resolve(current, hop, allow_local=limits.allow_local)
            response = await client.send(
                _request(client, resolved), follow_redirects=False, stream=True
            )
            if response.is_redirect:
                await response.aclose()
                location = response.headers.get("location")
                if not location:
                    raise _Refused("the server answered with a redirect that leads nowhere")
                current = resolve_redirect_url(current, location)
                continue
            try:
                response.raise_for_status()
                try:
                    content = await _read_capped_body(response, max_bytes)
                except httpx2.RequestError:
                    raise
                except ValueError:
                    raise _Refused(
                        f"the response is larger than {max_bytes:,} bytes, or is compressed "
                        "in a way whose size cannot be checked"
                    ) from None
                return _response_with_decoded_content(response, content)
            finally:
                await response.aclose()
    raise _Refused(f"the server redirected more than {_MAX_REDIRECTS} times")


def _literal(host: str) -> bool:
    """Whether `host` is an address itself, which needs no lookup to be checked."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _check_name(host: str) -> None:
    """`_Refused` for a host name no DNS server could hold (IDNA refuses it)."""
    try:
        host.encode("idna")
    except UnicodeError as exc:
        raise _Refused(_address_refusal(host, Refused("invalid", host, str(exc)))) from None


async def _resolve(url: str, origin: Origin, *, allow_local: bool) -> ResolvedUrl:
    """The checked address of `url`'s host; `_Refused`, in our words, when it is blocked."""
    try:
        return await resolve(url, AddressPolicy(allow_private=allow_local))
    except Refused as exc:
        raise _Refused(_address_refusal(origin.host, exc)) from None


def _request(client: httpx2.AsyncClient, resolved: ResolvedUrl) -> httpx2.Request:
    """The GET of one hop: to the checked address, naming the host in `Host` and SNI."""
    headers = {"User-Agent": "blitz-agent", "Accept-Encoding": _ACCEPT_ENCODING}
    return request_to(client, resolved, "GET", headers=headers)


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


def _address_refusal(host: str, exc: Refused) -> str:
    """Why an address is refused, in our words; the library's text goes to the log."""
    log.info("fetch_refused", host=host, reason=exc.kind, detail=exc.detail)
    if exc.kind == "private":
        return (
            f"Access to the private/internal address of {host} is blocked "
            "(the server does not allow local fetches)."
        )
    if exc.kind == "metadata":
        return f"Access to {host} is blocked: it is a cloud metadata service."
    if exc.kind == "unresolved":
        return f"the host {host} could not be resolved"
    return f"not a valid URL: the host {host} or its port cannot be used"
