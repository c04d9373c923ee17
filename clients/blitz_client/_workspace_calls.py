"""WorkspaceService's calls of the asyncio client: an image uploaded for a turn, the
session's workspace read (its folders, a file, the diff of what changed), and a session
from a repository's changes handed back (a patch series, a diff, a bundle or a push).
`AsyncBlitz` is made of these and its other calls (`_calls.py`)."""

from __future__ import annotations

from blitz.v1 import workspace_pb2
from blitz_client._calls import Calls
from blitz_client._requests import export_format_value

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

    async def diff(self, session_id: str, *, turn_id: str = "") -> workspace_pb2.GetDiffResponse:
        """What changed in the session, as a unified diff: `diff`, the changed `paths`, and
        whether the diff was `truncated`. A session from a repository: git's diff of its
        starting commit (`base`) against the workspace now, whatever changed it; another:
        what the agent's file tools changed, from before each file's first change to now.
        With `turn_id`: that finished turn's changes only."""
        request = workspace_pb2.GetDiffRequest(session_id=session_id, turn_id=turn_id)
        result: workspace_pb2.GetDiffResponse = await self._unary("GetDiff", request)
        return result

    async def export_changes(
        self,
        session_id: str,
        format: str | int = "patch",
        *,
        branch: str = "",
        message: str = "",
        squash: bool = False,
    ) -> workspace_pb2.ExportChangesResponse:
        """A session from a repository's changes, handed back (docs/repositories.md).

        `format`: "patch" (a `git format-patch` series, one commit per turn that changed
        files, for `git am`), "diff" (one diff for `git apply`), "bundle" (a `git bundle`
        of `branch`, its `base` the prerequisite) or "push". The first three answer
        `data` (empty when nothing changed), a `file_name`, the `commits` and their
        `base`. "push" commits, then starts a turn that asks for the push's approval and
        then pushes `branch` (empty: "blitz/" and the session's id) to `remote`: it
        answers at once with that `turn_id`; follow it (`follow_turn`) to its `finished`.
        `squash`: one commit instead of one per turn, with `message` (empty: a message
        naming the session)."""
        request = workspace_pb2.ExportChangesRequest(
            session_id=session_id,
            format=export_format_value(format),  # type: ignore[arg-type]  # a valid enum int
            branch=branch,
            message=message,
            squash=squash,
        )
        result: workspace_pb2.ExportChangesResponse = await self._unary("ExportChanges", request)
        return result
