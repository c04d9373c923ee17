"""The server's own files and folders, which no command may ever see, wherever they lie.

The configuration file can hold every principal's token, the provider keys, the
PostgreSQL URL and the webhooks' secrets; the tokens file, the TLS key and the MCP
configuration hold secrets too; the SQLite database holds the webhooks' secrets in clear;
the data folder and the workspace root hold it and every session's work. The box shows a
command little beside its workspace, but it does show the system: an operator's
`/etc/blitz.toml` or `/usr/local/var/blitz` would be in it. So the box covers each of these
that lies in what it shows, and Landlock allows what it shows without them
(blitz.agent.box, blitz.agent.sandbox).

`hidden_paths` is the one list of them, built from the settings: the configuration file,
and every setting the table marks `hidden_from_commands`; a setting added later that
names such a file is marked there (tests/sandbox/test_server_files.py holds the table to
it). `refused_bind` keeps `--command-binds` from showing any of them.
"""

from __future__ import annotations

import os

from blitz.config.settings import Settings
from blitz.config.table import SETTINGS

__all__ = ["hidden_paths", "refused_bind"]

# The files SQLite keeps beside a database while it writes.
_SQLITE_SIDES = ("", "-wal", "-shm", "-journal")


def hidden_paths(settings: Settings) -> dict[str, str]:
    """Every file and folder of the server's own that `settings` name, by absolute path,
    as given and with its links resolved (a link to the file is the file), each with the
    flag that names it."""
    named = [(settings.config_file, "--config")] if settings.config_file else []
    for spec in SETTINGS:
        if spec.hidden_from_commands:
            named += [(path, spec.flag) for path in _files(spec.name, getattr(settings, spec.name))]
    found: dict[str, str] = {}
    for path, flag in named:
        absolute = os.path.abspath(path)
        found.setdefault(absolute, flag)
        found.setdefault(os.path.realpath(absolute), flag)
    return found


def refused_bind(settings: Settings) -> str:
    """Why the settings' `--command-binds` cannot be served, or "": a folder bound into
    the box that is, holds or lies inside one of `hidden_paths` would show it to every
    command (or, inside it, show part of it)."""
    hidden = hidden_paths(settings)
    for bind in settings.command_binds:
        for form in dict.fromkeys((os.path.normpath(bind), os.path.realpath(bind))):
            for path, flag in hidden.items():
                if _within(form, path) or _within(path, form):
                    return (
                        f"{bind} would show commands {path} ({flag}), a file or folder of"
                        " the server's own that no command may see"
                    )
    return ""


def _files(name: str, value: object) -> list[str]:
    """The paths a marked setting's value names (none when it is unset, or a database
    that is no file here)."""
    if not value:
        return []
    text = str(value)
    if name != "database":
        return [text]
    if text.startswith("sqlite:///"):
        text = text.removeprefix("sqlite:///")  # as blitz.store opens it
    elif "://" in text:
        return []  # a database server's URL
    return [text + side for side in _SQLITE_SIDES]


def _within(path: str, folder: str) -> bool:
    """Whether absolute `path` is `folder` or lies inside it."""
    return os.path.commonpath([path, folder]) == folder
