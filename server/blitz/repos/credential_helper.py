"""The credential helper git is given for a clone or a push that has a credential.

Git runs it (`credential.helper=!PYTHON -I -S THIS get`) and writes what it wants on its
stdin: `protocol=https`, `host=git.example.com`. It answers with the user name and the
password from its own environment (`BLITZ_GIT_USERNAME`, `BLITZ_GIT_PASSWORD`), set by
Blitz for that one git process, and only when the protocol and host are the source's
(`BLITZ_GIT_PROTOCOL`, `BLITZ_GIT_HOST`): a credential is never handed to another host.
`store` and `erase` do nothing. It imports nothing of Blitz, so that it starts fast, and
never prints the password anywhere but to git.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> int:
    if not argv or argv[-1] != "get":
        return 0
    asked: dict[str, str] = {}
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line:
            break
        key, _, value = line.partition("=")
        asked[key] = value
    env = os.environ
    if asked.get("protocol") != env.get("BLITZ_GIT_PROTOCOL") or asked.get("host") != env.get(
        "BLITZ_GIT_HOST"
    ):
        return 0
    username, password = env.get("BLITZ_GIT_USERNAME", ""), env.get("BLITZ_GIT_PASSWORD", "")
    if "\n" in username or "\n" in password or not password:
        return 0
    sys.stdout.write(f"username={username}\npassword={password}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
