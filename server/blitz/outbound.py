"""Where the server may connect for someone else, and how: the one address check of every
HTTP request Blitz makes on another's behalf (the agent's `fetch_url`, webhook deliveries).

A URL's host is resolved and every address it resolves to is checked before anything
connects. Loopback, private, link-local and other internal ranges are refused unless the
policy allows them (all of them, for fetches under `--fetch-allow-local`; the operator's
ranges, for webhooks under `--webhook-allow-private`), and cloud metadata addresses
always, whatever the policy. The request then goes to the address that was checked, never
to the name again, so a name that resolves elsewhere the second time (DNS rebinding)
changes nothing; the host's name travels in `Host` and in TLS's SNI. Nothing here follows
a redirect: a caller that follows one checks its target again.

The ranges and the reading of addresses (IPv6 transition forms, zone ids, numeric IPv4
spellings such as `0x7f.1`, which the resolver reads as 127.0.0.1) are pydantic-ai's
`_ssrf` module, pinned with pydantic-ai. A refusal says why as a kind (`Refused.kind`);
each caller words it for its reader, and the library's own text goes to the log only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import httpx2
from pydantic_ai._ssrf import (
    ResolvedUrl,
    build_url_with_ip,
    extract_host_and_port,
    is_cloud_metadata_ip,
    is_private_ip,
    resolve_hostname,
)

__all__ = [
    "AddressPolicy",
    "Network",
    "Refused",
    "ResolvedUrl",
    "parse_ranges",
    "request_to",
    "resolve",
]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
RefusalKind = Literal["invalid", "unresolved", "private", "metadata"]


class Refused(ValueError):
    """An address that is not connected to. `kind` says why: "invalid" (no usable host or
    port), "unresolved" (the name did not resolve), "private" (an internal range the policy
    does not allow), "metadata" (a cloud metadata service); `detail` is the library's text
    or the address, for the log."""

    def __init__(self, kind: RefusalKind, host: str, detail: str = "") -> None:
        super().__init__(f"{host}: {kind}")
        self.kind: RefusalKind = kind
        self.host = host
        self.detail = detail


@dataclass(frozen=True)
class AddressPolicy:
    """Which internal addresses may be reached: every one (`allow_private`), or those in
    `ranges`. Public addresses always may; cloud metadata addresses never."""

    allow_private: bool = False
    ranges: tuple[Network, ...] = ()

    def check(self, address: str, host: str) -> None:
        """Raise `Refused` unless `address` (an IP of `host`) may be connected to."""
        if is_cloud_metadata_ip(address):
            raise Refused("metadata", host, address)
        if not is_private_ip(address) or self.allow_private or self.allows(address):
            return
        raise Refused("private", host, address)

    def allows(self, address: str) -> bool:
        """Whether one of the operator's ranges holds `address` (or the IPv4 address an
        IPv4-mapped IPv6 address stands for)."""
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return False
        candidates: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            candidates.append(ip.ipv4_mapped)
        return any(c.version == net.version and c in net for c in candidates for net in self.ranges)


def parse_ranges(texts: Iterable[str]) -> tuple[Network, ...]:
    """Address ranges from CIDR texts (`127.0.0.0/8`, `fd00::/8`; a bare address is a range
    of one); ValueError naming the first that is not one."""
    ranges: list[Network] = []
    for part in texts:
        part = part.strip()
        if not part:
            continue
        try:
            ranges.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"{part!r} is not an address range (e.g. 10.0.0.0/8)") from None
    return tuple(ranges)


async def resolve(url: str, policy: AddressPolicy) -> ResolvedUrl:
    """`url`'s host resolved, every address checked against `policy`; the first address,
    with what a request to it needs. Raises `Refused`."""
    try:
        hostname, path, port, is_https = extract_host_and_port(url)
    except ValueError as exc:  # no host, a port that is no number, a scheme not http(s)
        raise Refused("invalid", url, str(exc)) from None
    literal = hostname.strip("[]")
    try:
        ipaddress.ip_address(literal)
        addresses = [literal]
    except ValueError:
        try:
            addresses = await resolve_hostname(hostname)
        except ValueError as exc:  # the resolver's failure, or a name IDNA refuses
            text = str(exc)
            kind: RefusalKind = "unresolved" if "DNS resolution failed" in text else "invalid"
            raise Refused(kind, hostname, text) from None
    for address in addresses:
        policy.check(address, hostname)
    return ResolvedUrl(
        resolved_ip=addresses[0], hostname=hostname, port=port, is_https=is_https, path=path
    )


def request_to(
    client: httpx2.AsyncClient,
    resolved: ResolvedUrl,
    method: str,
    *,
    headers: Mapping[str, str],
    content: bytes | None = None,
) -> httpx2.Request:
    """A request to the checked address of `resolved`, naming the host in `Host` and SNI."""
    host = resolved.hostname
    try:
        if isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address):
            host = f"[{host}]"
    except ValueError:
        pass
    if resolved.port != (443 if resolved.is_https else 80):
        host = f"{host}:{resolved.port}"
    extensions = {"sni_hostname": resolved.hostname} if resolved.is_https else {}
    return client.build_request(
        method,
        build_url_with_ip(resolved),
        headers={**headers, "Host": host},
        content=content,
        extensions=extensions,
    )
