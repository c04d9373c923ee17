"""WorkspaceService, transport-free: image uploads for turns and read-only workspace views.

Reads go through the same path gate as the agent's tools (`blitz.paths`), so a
client sees exactly what the agent may see, and nothing outside it. Nothing here writes to
a workspace.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from blitz.core.service import SessionCore
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.paths import PathRefused, Workspace
from blitz.ports import CallContext
from blitz.store import ImageRecord
from blitz.v1 import workspace_pb2 as w

__all__ = ["IMAGE_TYPES", "WorkspaceCore"]

# Media types a model may be sent, each with the bytes its files start with.
IMAGE_TYPES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
_LIST_LIMIT = 1000


class WorkspaceCore:
    """Every WorkspaceService call; sessions are looked up (and owned) as in SessionCore."""

    def __init__(
        self,
        *,
        sessions: SessionCore,
        image_max_bytes: int = 5 * 1024 * 1024,
        read_max_bytes: int = 1024 * 1024,
    ) -> None:
        self._sessions = sessions
        self._image_max = image_max_bytes
        self._read_max = read_max_bytes

    async def upload_image(
        self, req: w.UploadImageRequest, ctx: CallContext
    ) -> w.UploadImageResponse:
        session = await self._sessions.session_record(req.session_id, ctx)
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
        await self._sessions.store.add_image(image)
        return w.UploadImageResponse(image_id=image.id, size=len(req.data))

    async def _workspace(self, session_id: str, ctx: CallContext) -> Workspace:
        session = await self._sessions.session_record(session_id, ctx)
        return Workspace(self._sessions.workspace_root / session.workspace)

    async def list_files(self, req: w.ListFilesRequest, ctx: CallContext) -> w.ListFilesResponse:
        workspace = await self._workspace(req.session_id, ctx)
        folder = _resolve(workspace, req.path or ".")
        if not folder.is_dir():
            raise _not_found(req.path)
        entries = []
        for child in sorted(folder.iterdir())[:_LIST_LIMIT]:
            try:
                real = workspace.resolve(workspace.relative(child.absolute()))
            except (PathRefused, ValueError):
                continue  # a link that leads out is not shown
            entries.append(
                w.FileEntry(
                    path=workspace.relative(child.absolute()),
                    directory=real.is_dir(),
                    size=real.stat().st_size if real.is_file() else 0,
                )
            )
        return w.ListFilesResponse(entries=entries)

    async def read_file(self, req: w.ReadFileRequest, ctx: CallContext) -> w.ReadFileResponse:
        workspace = await self._workspace(req.session_id, ctx)
        if not req.path:
            raise invalid_argument("path", "path is required")
        path = _resolve(workspace, req.path)
        if not path.is_file():
            raise _not_found(req.path)
        size = path.stat().st_size
        with path.open("rb") as f:
            content = f.read(self._read_max)
        return w.ReadFileResponse(content=content, truncated=size > len(content), size=size)


def _resolve(workspace: Workspace, path: str) -> Path:
    try:
        return workspace.resolve(path)
    except PathRefused as exc:
        raise invalid_argument("path", str(exc)) from None


def _not_found(path: str) -> BlitzError:
    return BlitzError(Reason.FILE_NOT_FOUND, f"no such file or folder {path!r}", {"path": path})
