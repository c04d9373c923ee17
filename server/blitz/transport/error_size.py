"""What either wire sends of an error is small, whatever the error echoes.

A gRPC client refuses trailers over its metadata limit (8 KiB by default), and an error
travels there twice: its message in `grpc-message`, percent-encoded, and its ErrorInfo in
`grpc-status-details-bin`. A message or a metadata value that quotes a client's input (an
id, a media type) could otherwise be as large as a request, so both transports cut every
error to these sizes before it leaves, saying that they did. This module knows no wire.
"""

from __future__ import annotations

from blitz.errors import BlitzError

__all__ = ["fit_error"]

# UTF-8 bytes of a message (percent-encoding may triple them on gRPC).
MESSAGE_MAX = 512
# Characters of one metadata value, and how many entries are kept.
METADATA_VALUE_MAX = 200
METADATA_MAX = 16
_KEY_MAX = 64


def fit_error(error: BlitzError) -> BlitzError:
    """`error` itself when it is small enough, else a copy cut to the sizes above."""
    message = error.message
    metadata = error.metadata
    small = len(message.encode("utf-8", "surrogatepass")) <= MESSAGE_MAX and (
        len(metadata) <= METADATA_MAX
        and all(len(k) <= _KEY_MAX and len(v) <= METADATA_VALUE_MAX for k, v in metadata.items())
    )
    if small:
        return error
    cut = message.encode("utf-8", "surrogatepass")[: MESSAGE_MAX - 8].decode("utf-8", "ignore")
    if cut != message:
        cut += " … (cut)"
    kept = {
        k[:_KEY_MAX]: v if len(v) <= METADATA_VALUE_MAX else v[: METADATA_VALUE_MAX - 4] + " …"
        for k, v in list(metadata.items())[:METADATA_MAX]
    }
    return BlitzError(error.reason, cut, kept)
