"""Opening files under a folder's descriptor without following links: the path gate's hands.

`blitz.paths.Workspace` decides where a path leads; these functions open what it decided,
one component at a time relative to a folder descriptor, each with O_NOFOLLOW, and check
what they reach on its descriptor: only regular files with a single link are read,
written or removed, and fifos, devices and sockets are refused before anything could block
on them. Every function here blocks; none follows a link or acts outside the folder
descriptor it is given.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Generator
from dataclasses import dataclass

# A folder, never through a link. O_NOFOLLOW guards the last component, and the walk opens
# one component at a time, so no component is ever followed.
FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a fifo swapped in after the lstat check must not wait for a writer here.
READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
# `files` goes no deeper: each level holds a descriptor open.
MAX_DEPTH = 64


class PathRefused(Exception):
    """A path that would leave the workspace, or that names nothing a tool may touch."""


@dataclass(frozen=True)
class FileRead:
    """What a read found: the file's path relative to the workspace, its first bytes, and
    its whole size."""

    path: str
    data: bytes
    size: int


@dataclass(frozen=True)
class Entry:
    """One name in a folder, as it is (links not followed): kind is "folder", "file" (a
    regular file), "link" or "other" (a fifo, device or socket); size is a file's."""

    name: str
    kind: str
    size: int


def open_folder(path: str) -> int:
    """Open the workspace folder at its real `path`; a link in its place is refused."""
    try:
        return os.open(path, FOLDER)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathRefused("the workspace folder is a symbolic link") from None
        raise


def child_folder(parent: int, name: str, shown: str, *, create: bool) -> int:
    """Open the folder `name` in `parent`, never through a link (made first, with `create`);
    `parent` is closed."""
    try:
        if create:
            # mkdir never follows a link: where one stands it fails, and the open refuses.
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=parent)
        try:
            return os.open(name, FOLDER, dir_fd=parent)
        except OSError as exc:
            if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            if stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                raise PathRefused(f"{shown} passes through a symbolic link") from None
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), name) from None
    finally:
        os.close(parent)


def check_file(st: os.stat_result, shown: str) -> None:
    """Refuse anything but a regular file with a single link."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), shown)
    if stat.S_ISLNK(mode):
        raise PathRefused(f"path {shown!r} became a symbolic link while it was being opened")
    if not stat.S_ISREG(mode):
        raise PathRefused(f"path {shown!r} is {_kind(mode)}, not a regular file")
    if st.st_nlink > 1:
        # Another name for the same file may be outside the workspace.
        raise PathRefused(f"path {shown!r} has other hard links, maybe outside the workspace")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a fifo"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(folder: int, name: str, shown: str) -> int:
    """Open `name` in `folder` to read, only if it is a regular file with a single link."""
    # Looked at first, so that a fifo or a device is never opened at all...
    check_file(os.stat(name, dir_fd=folder, follow_symlinks=False), shown)
    try:
        fd = os.open(name, READ, dir_fd=folder)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PathRefused(f"path {shown!r} became a symbolic link") from None
        raise
    # ...and what was opened is checked again, in case it was swapped in between.
    try:
        check_file(os.fstat(fd), shown)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_all(fd: int, limit: int | None) -> bytes:
    """What `fd` holds from where it stands: `limit` bytes at most (None: all of it)."""
    chunks = []
    left = limit
    while left is None or left > 0:
        chunk = os.read(fd, 1 << 20 if left is None else min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        if left is not None:
            left -= len(chunk)
    return b"".join(chunks)


def replace(folder: int, name: str, data: bytes, mode: int | None) -> None:
    """Put `data` at `name` in `folder`: a new file beside it, renamed over it. `mode`: the
    permission bits it keeps (None: a new file's, as the umask allows)."""
    temp = f".blitz-{secrets.token_hex(8)}.tmp"
    fd = os.open(temp, CREATE, 0o666 if mode is None else 0o600, dir_fd=folder)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=folder)
        raise


def scan(folder: int) -> list[tuple[str, os.stat_result]]:
    """The names in `folder`, sorted, each with what it is (not following links)."""
    found = []
    with os.scandir(folder) as listing:
        for entry in listing:
            try:
                found.append((entry.name, entry.stat(follow_symlinks=False)))
            except FileNotFoundError:
                continue  # removed since it was listed
    return sorted(found, key=lambda item: item[0])


def entry(name: str, st: os.stat_result) -> Entry:
    """What `name` is, from its lstat."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return Entry(name, "folder", 0)
    if stat.S_ISLNK(mode):
        return Entry(name, "link", 0)
    if stat.S_ISREG(mode):
        return Entry(name, "file", st.st_size)
    return Entry(name, "other", 0)


def files_under(
    folder: int, parts: list[str], limit: int, skip: frozenset[str], *, depth: int
) -> Generator[FileRead, None, None]:
    """The files of `MAX_DEPTH` levels under `folder` (closed at the end), as `files` says."""
    try:
        found = scan(folder)
        for name, st in found:
            if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1 or st.st_size > limit:
                continue
            rel = "/".join([*parts, name])
            try:
                fd = open_regular(folder, name, rel)
            except (PathRefused, OSError):
                continue  # gone or swapped since it was listed
            try:
                yield FileRead(rel, read_all(fd, limit + 1), os.fstat(fd).st_size)
            finally:
                os.close(fd)
        if depth >= MAX_DEPTH:
            return
        for name, st in found:
            if not stat.S_ISDIR(st.st_mode) or name in skip:
                continue
            try:
                child = child_folder(os.dup(folder), name, name, create=False)
            except (PathRefused, OSError):
                continue
            yield from files_under(child, [*parts, name], limit, skip, depth=depth + 1)
    finally:
        os.close(folder)
