"""The certificate and key both ports serve TLS with, read once at start."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Tls"]


@dataclass(frozen=True)
class Tls:
    """A PEM certificate chain and its private key, and the files they came from (uvicorn
    reads files)."""

    cert: bytes
    key: bytes = field(repr=False)
    cert_file: str = ""
    key_file: str = ""
