"""Images for upload tests: real, tiny, and valid by their content."""

from __future__ import annotations

import base64

__all__ = ["PNG"]

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
"""The smallest valid PNG: one transparent pixel."""
