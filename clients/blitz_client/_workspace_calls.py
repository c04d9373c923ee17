"""WorkspaceService's calls of the asyncio client: an image uploaded for a turn, and the
session's workspace read (its folders, a file, the diff of what the agent changed).
`AsyncBlitz` is made of these and its other calls (`_calls.py`)."""

from __future__ import annotations

from blitz.v1 import workspace_pb2
from blitz_client._calls import Calls

__all__ = ["WorkspaceCalls"]


class WorkspaceCalls(Calls):
    """The workspace calls of `AsyncBlitz`."""

    async def upload_image(
        self, session_id: str, data: bytes, media_type: str
    ) -> workspace_pb2.UploadImageResponse:
        """Store an image for a later turn's `image_ids`; the reply has its `image_id` and `size`.

        `media_type` is "image/png", "image/jpeg", "image/gif" or "image/webp", and `data`
        must be such an image (the server checks the content) of at most 5 MiB; otherwise
        INVALID_ARGUMENT names the field (`media_type` or `data`).
        """
        request = workspace_pb2.UploadImageRequest(
            session_id=session_id, data=data, media_type=media_type
        )
        result: workspace_pb2.UploadImageResponse = await self._unary("UploadImage", request)
        return result

    async def list_files(self, session_id: str, path: str = "") -> list[workspace_pb2.FileEntry]:
        """The entries of one folder of the session's workspace (`path` relative to it; "":
        its root). Each entry's `path` is relative to the workspace."""
        request = workspace_pb2.ListFilesRequest(session_id=session_id, path=path)
        response: workspace_pb2.ListFilesResponse = await self._unary("ListFiles", request)
        return list(response.entries)

    async def read_file(self, session_id: str, path: str) -> workspace_pb2.ReadFileResponse:
        """One file of the session's workspace: its `content`, `size`, and whether it was
        `truncated` at the server's read cap. A path that leaves the workspace is
        INVALID_ARGUMENT on `path`; a missing file is FILE_NOT_FOUND."""
        request = workspace_pb2.ReadFileRequest(session_id=session_id, path=path)
        result: workspace_pb2.ReadFileResponse = await self._unary("ReadFile", request)
        return result

    async def diff(self, session_id: str) -> workspace_pb2.GetDiffResponse:
        """A unified diff of the files the agent's file tools changed in the session, from
        before its first change of each to now: `diff`, the changed `paths`, and whether
        the diff was `truncated`. Changes made only by commands are not in it."""
        request = workspace_pb2.GetDiffRequest(session_id=session_id)
        result: workspace_pb2.GetDiffResponse = await self._unary("GetDiff", request)
        return result
