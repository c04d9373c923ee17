"""WorkspaceService, transport-free: image uploads for turns and read-only workspace views.

Reads go through the same path gate as the agent's tools (`blitz.paths`), so a
client sees exactly what the agent may see, and nothing outside it: the session's folder is
opened by its name without following a link, and so is every path in it. File calls run
off the event loop on the bounded workers of `blitz.offload`. Nothing here writes to a
workspace.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from blitz.core.files.diffs import session_diff
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.offload import FILE_CALLS, CallTimedOut
from blitz.paths import PathRefused, Workspace
from blitz.ports import CallContext
from blitz.redact import mask_known_bytes
from blitz.store import FileOriginal, ImageRecord, Store
from blitz.v1 import workspace_pb2 as w

if TYPE_CHECKING:
    from blitz.core.api.service import FindSession

__all__ = ["IMAGE_MAX_BYTES", "IMAGE_TYPES", "WorkspaceCore"]

# The largest image UploadImage takes.
IMAGE_MAX_BYTES = 5 * 1024 * 1024

# Media types a model may be sent, each with the bytes its files start with.
IMAGE_TYPES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
_LIST_LIMIT = 1000
# GetDiff: the diff's characters (each at most 4 bytes, so well within one answer), the
# paths it lists, and how much of each current file is read to compare.
_DIFF_MAX = 512 * 1024
_DIFF_PATHS_MAX = 5000
_DIFF_READ_MAX = 8 * 1024 * 1024


class WorkspaceCore:
    """Every WorkspaceService call; sessions are looked up (and owned) as in SessionCore."""

    def __init__(
        self,
        *,
        find_session: FindSession,
        store: Store,
        workspace_root: Path,
        image_max_bytes: int = IMAGE_MAX_BYTES,
        read_max_bytes: int = 1024 * 1024,
    ) -> None:
        """`find_session`: the caller's session (`SessionCore.session_record`);
        `workspace_root`: the folder the sessions' workspaces are in."""
        self._find_session = find_session
        self._store = store
        self._workspace_root = Path(workspace_root)
        self._image_max = image_max_bytes
        self._read_max = read_max_bytes

    async def upload_image(
        self, req: w.UploadImageRequest, ctx: CallContext
    ) -> w.UploadImageResponse:
        session = await self._find_session(req.session_id, ctx)
        magic = IMAGE_TYPES.get(req.media_type)
        if magic is None:
            raise invalid_argument(
                "media_type",
                f"media type {req.media_type!r} is not accepted",
                accepted=", ".join(IMAGE_TYPES),
            )
        if not req.data:
            raise invalid_argument("data", "the image is empty")
        if len(req.data) > self._image_max:
            raise invalid_argument(
                "data",
                f"the image is {len(req.data)} bytes; the limit is {self._image_max}",
                limit=str(self._image_max),
            )
        if not req.data.startswith(magic) or (
            req.media_type == "image/webp" and req.data[8:12] != b"WEBP"
        ):
            raise invalid_argument("data", f"the data is not a {req.media_type} image")
        image = ImageRecord(
            id="img_" + uuid.uuid4().hex,
            session_id=session.id,
            media_type=req.media_type,
            data=req.data,
            create_time=time.time(),
        )
        await self._store.add_image(image)
        return w.UploadImageResponse(image_id=image.id, size=len(req.data))

    async def _workspace(self, session_id: str, ctx: CallContext) -> Workspace:
        session = await self._find_session(session_id, ctx)
        name = session.workspace
        try:
            return await FILE_CALLS.run(Workspace.named, self._workspace_root, name)
        except PathRefused as exc:
            reason = str(exc)
        except FileNotFoundError:
            reason = f"workspace {name!r} is gone"
        except NotADirectoryError:
            reason = f"workspace {name!r} is not a folder"
        except CallTimedOut:
            raise _too_slow() from None
        raise BlitzError(
            Reason.FILE_NOT_FOUND,
            f"the session's workspace cannot be opened: {reason}",
            {"path": "."},
        )

    async def list_files(self, req: w.ListFilesRequest, ctx: CallContext) -> w.ListFilesResponse:
        """The folder's folders and regular files; links (never followed), fifos, devices
        and sockets are left out."""
        workspace = await self._workspace(req.session_id, ctx)
        path = req.path or "."
        try:
            listing = await FILE_CALLS.run(workspace.entries, path)
        except PathRefused as exc:
            raise invalid_argument("path", str(exc)) from None
        except (FileNotFoundError, NotADirectoryError):
            raise _not_found(req.path) from None
        except CallTimedOut:
            raise _too_slow() from None
        prefix = "" if listing.path == "." else listing.path + "/"
        return w.ListFilesResponse(
            entries=[
                w.FileEntry(path=prefix + e.name, directory=e.kind == "folder", size=e.size)
                for e in listing.entries
                if e.kind in ("folder", "file")
            ][:_LIST_LIMIT]
        )

    async def read_file(self, req: w.ReadFileRequest, ctx: CallContext) -> w.ReadFileResponse:
        """The file's first bytes; only a regular file with a single link is read. The
        server's own secrets in it are masked, as they are in what the agent reads."""
        workspace = await self._workspace(req.session_id, ctx)
        if not req.path:
            raise invalid_argument("path", "path is required")
        try:
            got = await FILE_CALLS.run(workspace.read, req.path, self._read_max)
        except PathRefused as exc:
            raise invalid_argument("path", str(exc)) from None
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise _not_found(req.path) from None
        except CallTimedOut:
            raise _too_slow() from None
        return w.ReadFileResponse(
            content=mask_known_bytes(got.data), truncated=got.size > len(got.data), size=got.size
        )

    async def get_diff(self, req: w.GetDiffRequest, ctx: CallContext) -> w.GetDiffResponse:
        """What the agent's file tools changed in the session: each file from before the
        session's first change of it to now (docs/protocol.md, "Diffs"). Secrets the server
        knows are masked on both sides, as in ReadFile."""
        workspace = await self._workspace(req.session_id, ctx)
        originals = [
            FileOriginal(
                o.session_id, o.path, None if o.content is None else mask_known_bytes(o.content)
            )
            for o in await self._store.originals(req.session_id)
        ]

        def current(path: str) -> bytes | None:
            try:
                got = workspace.read(path, _DIFF_READ_MAX)
            except (PathRefused, FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return None  # gone, or no longer a file the agent may touch
            return mask_known_bytes(got.data)

        try:
            diff = await FILE_CALLS.run(session_diff, originals, current, limit=_DIFF_MAX)
        except CallTimedOut:
            raise _too_slow() from None
        paths = diff.paths[:_DIFF_PATHS_MAX]
        return w.GetDiffResponse(
            diff=diff.diff, paths=paths, truncated=diff.truncated or len(paths) < len(diff.paths)
        )


def _not_found(path: str) -> BlitzError:
    return BlitzError(Reason.FILE_NOT_FOUND, f"no such file or folder {path!r}", {"path": path})


def _too_slow() -> BlitzError:
    # Not the client's fault, and nothing of ours failed: the disk did not answer.
    return BlitzError(Reason.INTERNAL, "the workspace's files did not answer in time")
