"""The servers a client may talk to, and the one it talks to now.

A client is given one address or several: replicas of one Blitz service, as a sequence or
as one string with commas (what `BLITZ_SERVER` holds). They are all of one transport,
every one a Connect URL or every one a gRPC target, so that a client behaves the same
whichever replica it is on. It talks to one at a time, the first to begin with; when that
one is gone or leaving, `_resume.py` moves it on to the next (round robin).

Each address's transport is opened on first use and kept until the client closes: a
stream still open on an address the client moved away from (a draining replica finishing
it) ends on its own terms rather than being cut. This module never decides when to move.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from blitz_client._transport import Transport, is_connect

__all__ = ["Addresses", "parse_addresses"]


def parse_addresses(url: str | Sequence[str]) -> tuple[str, ...]:
    """The addresses in `url` (one, several separated by commas, or a sequence), in order.

    ValueError if one is empty or if they mix Connect URLs and gRPC targets.
    """
    given = url.split(",") if isinstance(url, str) else list(url)
    addresses = tuple(address.strip() for address in given)
    if not addresses or not all(addresses):
        raise ValueError(f"an empty server address in {url!r}")
    if len({is_connect(address) for address in addresses}) > 1:
        raise ValueError(
            "server addresses must all be Connect URLs (http://, https://) or all gRPC"
            f" targets (host:port, grpc://, grpcs://), not a mix: {', '.join(addresses)}"
        )
    return addresses


class Addresses:
    """A client's addresses, the one in use, and each one's transport.

    `open_transport(address)` opens a transport; it is called inside the event loop that
    uses it, on the first call to that address.
    """

    def __init__(
        self, addresses: tuple[str, ...], *, open_transport: Callable[[str], Transport]
    ) -> None:
        self.all = addresses
        self._open = open_transport
        self._index = 0
        self._transports: dict[int, Transport] = {}

    @property
    def current(self) -> str:
        """The address in use."""
        return self.all[self._index]

    def pick(self, avoid: Collection[int] = ()) -> tuple[int, Transport]:
        """The address in use (its index) and its transport.

        When the one in use is in `avoid` (those an attempt has tried already), the next
        one that is not becomes the one in use; when all are, the one in use stays.
        """
        if len(avoid) < len(self.all):
            while self._index in avoid:
                self._index = (self._index + 1) % len(self.all)
        index = self._index
        if index not in self._transports:
            self._transports[index] = self._open(self.all[index])
        return index, self._transports[index]

    def move_on(self, index: int) -> None:
        """The address at `index` is gone or leaving: the next one is used from now on.

        Unless the client has moved on from it already: several calls and streams that
        fail at once on one dead address move the client one step, not one each.
        """
        if index == self._index:
            self._index = (index + 1) % len(self.all)

    async def close(self) -> None:
        """Close every transport opened; a later call opens them again."""
        transports, self._transports = self._transports, {}
        for transport in transports.values():
            await transport.close()
