"""Webhooks the operator declares in the configuration file, as `[[webhooks]]` tables.

The `webhooks` setting (`config/table.py`): in the TOML file an array of tables, in a flag
or a variable the same as JSON. Each is one webhook, with the fields of CreateWebhook and
two of its own: `name`, which identifies it across restarts (its id is `wh_config_NAME`),
and `secret`, which the operator gives (`whsec_…`), so that its receivers can be told it
before the server runs.
Here the tables' shape is checked (keys, types); what their values mean (a URL Blitz may
reach, known event kinds) is checked where the webhooks are made, at start
(`blitz.core.webhooks.declared`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["DeclaredWebhook", "declared_webhooks"]

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_FORMATS = ("standard", "slack")
_STRINGS = ("name", "url", "secret", "format", "principal", "description")


@dataclass(frozen=True, kw_only=True)
class DeclaredWebhook:
    """One `[[webhooks]]` table of the configuration file."""

    name: str
    url: str
    events: tuple[str, ...]
    # The signing secret; kept out of repr (and so out of logs).
    secret: str = field(default="", repr=False)
    # "standard" or "slack".
    format: str = "standard"
    labels: Mapping[str, str] = field(default_factory=dict)
    # Only this principal's sessions ("": every principal's).
    principal: str = ""
    description: str = ""


def declared_webhooks(value: object) -> tuple[DeclaredWebhook, ...]:
    """The `webhooks` setting, parsed (from the file's tables or JSON); ValueError naming
    the webhook at fault."""
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise ValueError("must be a list of webhooks: [[webhooks]] tables in the file")
    found: list[DeclaredWebhook] = []
    for number, table in enumerate(value, start=1):
        at = f"webhook {number}"
        unknown = set(table) - {*_STRINGS, "events", "labels"}
        if unknown:
            raise ValueError(f"{at}: {', '.join(sorted(unknown))} is no key of a webhook")
        for key in _STRINGS:
            if key in table and not isinstance(table[key], str):
                raise ValueError(f"{at}: {key} must be a string")
        name = table.get("name", "")
        if not _NAME.match(name):
            raise ValueError(f"{at}: name must be 1-63 of a-z, 0-9, - and _, starting alphanumeric")
        at = f"webhook {name!r}"
        if name in {w.name for w in found}:
            raise ValueError(f"{at}: declared twice")
        events = table.get("events", [])
        if not (isinstance(events, list) and events and all(isinstance(e, str) for e in events)):
            raise ValueError(f'{at}: events must be a list of event kinds, e.g. ["finished"]')
        labels = table.get("labels", {})
        if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
            raise ValueError(f'{at}: labels must be a table of strings, e.g. {{team = "docs"}}')
        form = table.get("format", "standard")
        if form not in _FORMATS:
            raise ValueError(f"{at}: format must be one of {', '.join(_FORMATS)}")
        secret = table.get("secret", "")
        if form == "standard" and not secret:
            raise ValueError(f"{at}: a standard webhook needs its secret (whsec_…)")
        if not table.get("url"):
            raise ValueError(f"{at}: url is required")
        found.append(
            DeclaredWebhook(
                name=name,
                url=table["url"],
                events=tuple(events),
                secret=secret,
                format=form,
                labels=dict(labels),
                principal=table.get("principal", ""),
                description=table.get("description", ""),
            )
        )
    return tuple(found)
