#!/usr/bin/env python3
"""The container's health probe: exit 0 when the server's `GET /healthz` answers 200.

The Dockerfile's HEALTHCHECK and compose.yaml run it inside the container, where there is
no curl. It finds the HTTP port the way `blitz serve` does, from `BLITZ_HTTP_HOST`,
`BLITZ_HTTP_PORT` and `BLITZ_TLS_CERT`, else the TOML file of `BLITZ_CONFIG`, else the
defaults; settings given as `blitz serve` flags are beyond it, so in a container set them
as variables. With TLS it does not check the certificate: it knocks on its own loopback,
where the certificate's name cannot match, to learn whether the server is alive, and it
sends nothing secret.

It uses the standard library only: it must run with any Python in the image and start in
well under a second, so it imports nothing of Blitz.
"""

from __future__ import annotations

import os
import ssl
import sys
import tomllib
import urllib.error
import urllib.request
from typing import Any

# Less than the HEALTHCHECK's --timeout, so that a hung server is reported by this probe.
TIMEOUT_S = 4.0
# Where a server listening on every interface is reached from inside its container.
_LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def _setting(name: str, file: dict[str, Any], default: str) -> str:
    """A setting as the server reads it: its BLITZ_* variable, else the file, else default."""
    value = os.environ.get("BLITZ_" + name.upper())
    if value is None:
        value = str(file.get(name, default))
    return value.strip()


def _config_file() -> dict[str, Any]:
    path = os.environ.get("BLITZ_CONFIG")
    if not path:
        return {}
    with open(path, "rb") as handle:
        return tomllib.load(handle)


def healthz_url() -> str:
    file = _config_file()
    host = _setting("http_host", file, "127.0.0.1")
    host = _LOOPBACK.get(host, host)
    port = _setting("http_port", file, "8080")
    scheme = "https" if _setting("tls_cert", file, "") else "http"
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}/healthz"


def main() -> int:
    try:
        url = healthz_url()
    except (OSError, tomllib.TOMLDecodeError) as exc:
        print(f"unhealthy: cannot read BLITZ_CONFIG: {exc}")
        return 1
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S, context=context) as response:
            print(f"healthy: {url} answered {response.status}")
            return 0
    except urllib.error.HTTPError as exc:  # 503 while the server shuts down
        print(f"unhealthy: {url} answered {exc.code}")
    except (OSError, ValueError) as exc:
        print(f"unhealthy: {url}: {exc}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
