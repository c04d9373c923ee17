"""Tab completion of /commands at the chat's prompt: the chat's own and those the server
advertises (ListCommands), read once when the chat starts."""

from __future__ import annotations

from collections.abc import Iterable

from blitz_client import Blitz, BlitzError

__all__ = ["complete_commands"]


def complete_commands(client: Blitz, session_id: str, own: Iterable[str]) -> None:
    """Tab completes a /command: the chat's own and those the server advertises."""
    try:
        import readline
    except ImportError:  # pragma: no cover - readline ships with CPython on POSIX
        return
    names = [name.split(" ", 1)[0] for name in own]
    try:
        names += [f"/{command.name}" for command in client.commands(session_id)]
    except BlitzError:
        pass  # an older server: the chat's own only
    names = sorted(set(names))

    def complete(text: str, state: int) -> str | None:
        if not readline.get_line_buffer().startswith("/"):
            return None
        found = [name + " " for name in names if name.startswith(text)]
        return found[state] if state < len(found) else None

    readline.set_completer_delims(" \t\n")
    readline.set_completer(complete)
    readline.parse_and_bind("tab: complete")
