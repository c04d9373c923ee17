"""blitz_cli: the `blitz` command's client side: `chat`, `sessions`, `watch`, `usage`, `run`.

Built on `blitz_client` and rich. `blitz.cli` adds these subcommands beside `serve` with
`add_arguments` (`arguments.py`) and calls the chosen one's `client_handler(args, server=,
token=)`, having read `BLITZ_SERVER` and `BLITZ_TOKEN` itself (the environment is read only
there). The handlers live in `chat.py` (the interactive chat) and `scriptable.py` (the
commands made for scripts); `render.py` draws events and `prompts.py` asks for decisions.
"""

from blitz_cli.arguments import add_arguments

__all__ = ["add_arguments"]
