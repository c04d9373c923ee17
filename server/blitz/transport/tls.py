"""The certificate and key both ports serve TLS with, read once at start."""

from __future__ import annotations

from dataclasses import dataclass, field

from cryptography import x509

__all__ = ["Tls"]


@dataclass(frozen=True)
class Tls:
    """A PEM certificate chain and its private key, and the files they came from (uvicorn
    reads files)."""

    cert: bytes
    key: bytes = field(repr=False)
    cert_file: str = ""
    key_file: str = ""

    def is_ca(self) -> bool:
        """Whether the chain's first certificate (the server's own) is a CA's: what a
        self-signed certificate made the common `openssl req -x509` way is."""
        try:
            cert = x509.load_pem_x509_certificate(self.cert)
            return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
        except (ValueError, x509.ExtensionNotFound):
            return False
