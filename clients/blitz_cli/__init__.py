"""blitz_cli: the `blitz` command and its client side: `chat`, `sessions`, `watch`, `usage`, `run`.

Built on `blitz_client` and rich. `command.py` is the entry point (the `blitz` script): it
builds the parser, adds the commands that installed distributions plug in (blitz-server's
`serve`, `config`, `token`) and these with `add_arguments` (`arguments.py`), reads
`BLITZ_SERVER`, `BLITZ_TOKEN` and `BLITZ_CA_FILE` (the environment is read only there) and
calls the chosen command's `client_handler(args, server=, token=, ca_file=)`. The handlers
live in `chat.py` (the interactive chat) and `scriptable.py` (the commands made for
scripts); `render.py` draws events and `prompts.py` asks for decisions.
"""

from blitz_cli.arguments import add_arguments

__all__ = ["add_arguments"]
