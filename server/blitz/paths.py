"""The path gate: the one check every path into a session's workspace goes through.

`Workspace.resolve` turns a path the model or a client wrote into a real path inside the
workspace, or refuses it: `..` components, absolute paths outside the root and symlinks
that lead out are all refused with `PathRefused`. The agent's tools report a refusal back
to the model as an error result; the core's workspace views answer INVALID_ARGUMENT. Both
use this gate, so a client sees exactly what the agent may see. Nothing here may touch a
file; it only decides where a caller may touch one.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

__all__ = ["PathRefused", "Workspace", "too_long"]

# Linux's limits, in bytes: a longer path fails every file call with ENAMETOOLONG.
_NAME_MAX = 255
_PATH_MAX = 4096


def too_long(path: str) -> bool:
    """Whether `path`, or one of its components, is longer than a file system allows."""
    data = path.encode("utf-8", "surrogateescape")
    return len(data) >= _PATH_MAX or any(len(part) > _NAME_MAX for part in data.split(b"/"))


class PathRefused(Exception):
    """A tool path that would leave the workspace, or that names nothing usable."""


class Workspace:
    """A workspace root, resolved once so later checks compare real paths."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(str(root))

    def resolve(self, path: str) -> Path:
        """The real path `path` names inside the workspace; `PathRefused` otherwise.

        `..` is refused outright, even where it would stay inside, so that what the user
        approves reads the way it acts. Symlinks are followed before the containment check, so
        a link that points outside is refused wherever it sits in the path.
        """
        if not path or "\x00" in path:
            raise PathRefused(f"invalid path {path!r}")
        if ".." in PurePosixPath(path).parts or ".." in Path(path).parts:
            raise PathRefused(f"path {path!r} contains '..'")
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        if too_long(str(candidate)):
            raise PathRefused(f"path {path[:40]!r}… is too long")
        real = candidate.resolve(strict=False)
        if not real.is_relative_to(self.root):
            raise PathRefused(f"path {path!r} is outside the workspace")
        return real

    def relative(self, real: Path) -> str:
        """How a resolved path is shown to the model and the user: relative to the root."""
        rel = real.relative_to(self.root).as_posix()
        return rel if rel else "."
