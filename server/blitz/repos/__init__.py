"""Blitz's own, hardened use of git for sessions that start from a repository.

A session can be cloned from a repository, and hands its work back in git's terms: a
diff, a patch series, a bundle, a branch pushed to the origin. The repository, and all
the agent writes into the workspace (`.git/config`, `.git/hooks`, `.gitattributes`,
`.gitmodules`), is hostile input, and Blitz's git runs on the server, outside the command
box. So:

- Blitz never uses the workspace's `.git`. Each session has a bare repository of Blitz's
  own, `DATA_DIR/SESSION.git`, and a private index; every later command runs as
  `git --git-dir=DATA_DIR/SESSION.git --work-tree=WORKSPACE` (layout.py, bare.py).
- Every git process is hardened (git.py): no configuration but Blitz's, nothing
  executed (hooks, fsmonitor, filters, textconv, pagers, ssh, ext::), one transport
  allowed at a time, a time bound, a size bound, bounded output.
- Sources must match the operator's allow patterns; credentials reach git only through
  a helper and the environment of the one process that needs them, never a URL, an
  argument or a message (sources.py, credential_helper.py).

`Repositories` (repositories.py) is the whole surface the core uses.
"""

from __future__ import annotations

from blitz.repos.changes import Diff, Export
from blitz.repos.clone import Cloned
from blitz.repos.errors import KINDS, RepoError, SourceRefused
from blitz.repos.push import PushPlan
from blitz.repos.repositories import Repositories
from blitz.repos.settings import Credential, RepoSettings
from blitz.repos.sources import Source

__all__ = [
    "KINDS",
    "Cloned",
    "Credential",
    "Diff",
    "Export",
    "PushPlan",
    "RepoError",
    "RepoSettings",
    "Repositories",
    "Source",
    "SourceRefused",
]
