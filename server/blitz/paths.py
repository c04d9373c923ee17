"""The path gate: the one way into a session's workspace, for the agent's tools and the core.

Two steps, both here. `Workspace.resolve` decides: it turns a path the model or a client
wrote into a real path inside the workspace, or refuses it with `PathRefused` (`..`,
absolute paths outside the root, links that lead out, names too long). The file calls
(`read`, `entries`, `files`, `current`, `write`, `delete`; `folder` hands the core a
folder's descriptor for its own walks, core/files/snapshots.py) then act on that decision without
trusting it to still hold. Each opens the workspace folder and checks it is the one it was,
then walks down one component at a time relative to the folder's descriptor with
O_NOFOLLOW: a link swapped in after the decision ends the walk with a refusal instead of
being followed out. The file it reaches is checked on its descriptor (`fstat`): only
regular files with a single link are read, written or deleted, and fifos, devices and
sockets are refused before any call that could block on them. A write goes to a temporary
file in the same folder, renamed over the old one (atomic, and a link swapped in is
replaced, never followed). A client therefore sees exactly what the agent may see.

The descriptor work itself is in `_nofollow.py`. Every file call here blocks: callers run it
off the event loop (`blitz.offload`). Nothing here may follow a link once the decision is
made, or write outside the folder it walked to.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from blitz import _nofollow as nofollow
from blitz._nofollow import Entry, FileRead, PathRefused

__all__ = ["Entry", "FileRead", "Listing", "PathRefused", "Workspace", "too_long"]

# Linux's limits, in bytes: a longer path fails every file call with ENAMETOOLONG.
_NAME_MAX = 255
_PATH_MAX = 4096


def too_long(path: str) -> bool:
    """Whether `path`, or one of its components, is longer than a file system allows."""
    data = path.encode("utf-8", "surrogateescape")
    return len(data) >= _PATH_MAX or any(len(part) > _NAME_MAX for part in data.split(b"/"))


@functools.lru_cache(maxsize=64)
def _real_base(base: str) -> Path:
    """The real path of a folder that holds workspaces (the operator's, which does not
    move while the server runs): resolved once, not for every turn."""
    return Path(base).resolve(strict=True)


@dataclass(frozen=True)
class Listing:
    path: str
    entries: list[Entry]


class Workspace:
    """A workspace folder, opened once; every later call checks it is still that folder."""

    def __init__(self, root: Path, *, resolved: bool = False) -> None:
        """`resolved`: `root` is already the real path (`named` checks it by identity)."""
        if not resolved and os.path.islink(root):
            raise PathRefused(f"the workspace folder {str(root)!r} is a symbolic link")
        self.root = root if resolved else root.resolve(strict=True)
        fd = nofollow.open_folder(str(self.root))
        try:
            st = os.fstat(fd)
        finally:
            os.close(fd)
        self._identity = (st.st_dev, st.st_ino)

    @classmethod
    def named(cls, base: Path, name: str, *, create: bool = False) -> Workspace:
        """The workspace `name` (plain folder names joined by '/') under `base`.

        Each folder of `name` is opened without following a link (and made first, with
        `create`), so a name through a link is refused (`PathRefused`) wherever the link is.
        """
        parts = name.split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise PathRefused(f"workspace {name!r} is not a plain folder name")
        base = _real_base(str(base))
        fd = os.open(base, nofollow.FOLDER)
        for part in parts:
            fd = nofollow.child_folder(fd, part, f"workspace {name!r}", create=create)
        try:
            walked = os.fstat(fd)
        finally:
            os.close(fd)
        # Every part was opened without following a link, under the real base: the joined
        # path is real, and the identity check below catches a swap since.
        workspace = cls(base.joinpath(*parts), resolved=True)
        if workspace._identity != (walked.st_dev, walked.st_ino):
            raise PathRefused(f"workspace {name!r} changed while it was being opened")
        return workspace

    # The decision

    def resolve(self, path: str) -> Path:
        """The real path `path` names inside the workspace; `PathRefused` otherwise.

        `..` is refused outright, even where it would stay inside, so that what the user
        approves reads the way it acts. Symlinks are followed before the containment check, so
        a link that points outside is refused wherever it sits in the path; one that stays
        inside is an alias for where it leads.
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
        try:
            real = candidate.resolve(strict=False)
        except (RuntimeError, OSError):  # RuntimeError: a loop of links, in Python 3.11
            raise PathRefused(
                f"path {path!r} could not be resolved: its symbolic links loop or keep changing"
            ) from None
        if not real.is_relative_to(self.root):
            raise PathRefused(f"path {path!r} is outside the workspace")
        return real

    def relative(self, real: Path) -> str:
        """How a resolved path is shown to the model and the user: relative to the root."""
        rel = real.relative_to(self.root).as_posix()
        return rel if rel else "."

    def locate(self, path: str) -> str:
        """`path` as decided: relative to the root, through no link; `PathRefused` if not."""
        return self.relative(self.resolve(path))

    # The file calls: each blocks, and each may raise PathRefused or an OSError
    # (FileNotFoundError, NotADirectoryError, IsADirectoryError, ...).

    def read(self, path: str, limit: int) -> FileRead:
        """The first `limit` bytes of the regular file `path`, and its size."""
        rel = self.locate(path)
        fd = self._open_file(rel, path)
        try:
            return FileRead(rel, nofollow.read_all(fd, limit), os.fstat(fd).st_size)
        finally:
            os.close(fd)

    def current(self, path: str) -> tuple[str, bytes | None]:
        """Where `path` is (as `locate` says) and what it holds now: None when no file is
        there yet. A file that may not be written (a link, a hard link, a fifo...) and a
        folder are refused, so nobody is asked to approve what cannot happen."""
        rel = self.locate(path)
        try:
            fd = self._open_file(rel, path)
        except FileNotFoundError:
            return rel, None
        try:
            return rel, nofollow.read_all(fd, None)
        finally:
            os.close(fd)

    def write(self, rel: str, data: bytes) -> None:
        """Replace (or create) the file at `rel`, as `locate` gave it, with `data`.

        Missing folders on the way are made. The data goes to a temporary file beside it,
        renamed over the old one, which keeps its permission bits.
        """
        folders, name = self._split(rel)
        folder = self._folder(folders, rel, create=True)
        try:
            mode = None
            with contextlib.suppress(FileNotFoundError):
                st = os.stat(name, dir_fd=folder, follow_symlinks=False)
                nofollow.check_file(st, rel)
                mode = stat.S_IMODE(st.st_mode)
            nofollow.replace(folder, name, data, mode)
        finally:
            os.close(folder)

    def delete(self, rel: str) -> None:
        """Remove the regular file at `rel`, as `locate` gave it."""
        folders, name = self._split(rel)
        folder = self._folder(folders, rel)
        try:
            nofollow.check_file(os.stat(name, dir_fd=folder, follow_symlinks=False), rel)
            os.unlink(name, dir_fd=folder)
        finally:
            os.close(folder)

    def entries(self, path: str) -> Listing:
        """Every name in the folder `path`, sorted, links shown as links and not followed."""
        rel = self.locate(path)
        folder = self._folder(self._walkable(rel), path)
        try:
            found = [nofollow.entry(name, st) for name, st in nofollow.scan(folder)]
        finally:
            os.close(folder)
        return Listing(rel, found)

    def files(
        self, path: str, *, limit: int, skip: frozenset[str] = frozenset()
    ) -> Generator[FileRead, None, None]:
        """Every regular file under `path` (or `path` itself, if it is a file), read whole.

        A folder's files come in name order, then its folders, each in turn; folders named
        in `skip`, links, fifos and devices, hard-linked files, files larger than `limit`
        bytes and folders deeper than 64 levels are passed over, not followed. A `path`
        that names a file is read or refused as `read` would.
        """
        rel = self.locate(path)
        parts = self._walkable(rel)
        try:
            folder = self._folder(parts, path)
        except NotADirectoryError:
            got = self.read(path, limit + 1)
            if got.size <= limit:
                yield got
            return
        yield from nofollow.files_under(folder, parts, limit, skip, depth=0)

    def folder(self, rel: str, *, create: bool = False) -> int:
        """A descriptor of the folder at `rel` (as `locate` gives it: "." for the root),
        walked to one component at a time without following a link (and made on the way,
        with `create`). For the core's own walks of a workspace; the caller closes it."""
        return self._folder(self._walkable(rel), rel, create=create)

    # Walking down

    def _open_root(self) -> int:
        fd = nofollow.open_folder(str(self.root))
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != self._identity:
            os.close(fd)
            raise PathRefused("the workspace folder was replaced after it was opened")
        return fd

    def _folder(self, parts: list[str], shown: str, *, create: bool = False) -> int:
        """A descriptor of the folder `parts` names, walked to without following a link."""
        fd = self._open_root()
        for part in parts:
            fd = nofollow.child_folder(fd, part, f"path {shown!r}", create=create)
        return fd

    def _open_file(self, rel: str, shown: str) -> int:
        folders, name = self._split(rel, shown)
        folder = self._folder(folders, shown)
        try:
            return nofollow.open_regular(folder, name, shown)
        finally:
            os.close(folder)

    def _split(self, rel: str, shown: str | None = None) -> tuple[list[str], str]:
        """The folders on the way to the file `rel`, and its name."""
        parts = self._walkable(rel)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), shown or rel)
        return parts[:-1], parts[-1]

    @staticmethod
    def _walkable(rel: str) -> list[str]:
        """The components of a path `locate` gave; anything else is refused here too."""
        if rel == ".":
            return []
        parts = rel.split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise PathRefused(f"path {rel!r} is not a path inside the workspace")
        return parts
