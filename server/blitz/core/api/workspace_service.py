"""WorkspaceService, transport-free: image uploads for turns, read-only workspace views, and
a session from a repository's changes handed back.

Reads go through the same path gate as the agent's tools (`blitz.paths`), so a
client sees exactly what the agent may see, and nothing outside it: the session's folder is
opened by its name without following a link, and so is every path in it. File calls run
off the event loop on the bounded workers of `blitz.offload`. Nothing here writes to a
workspace.

A session from a repository has git's diffs and exports (`blitz.repos`, on Blitz's own
git data for the session, never the workspace's `.git`); a push is a turn of its own
(`/push`, core/driver/push.py), which ExportChanges starts once the commit is made.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from blitz.core.files.checkpoints import END, START, never_changed
from blitz.core.files.diffs import SessionDiff, session_diff, turn_diff, turn_hashes
from blitz.core.files.manifests import decode
from blitz.core.repository import repo_error, repository_of
from blitz.errors import BlitzError, Reason, invalid_argument
from blitz.offload import FILE_CALLS, CallTimedOut
from blitz.paths import PathRefused, Workspace
from blitz.ports import CallContext
from blitz.redact import mask_known, mask_known_bytes
from blitz.repos import RepoError, Repositories, SourceRefused
from blitz.repos.push import default_branch_name
from blitz.store import FileOriginal, ImageRecord, SessionRecord, Store, TurnState
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import workspace_pb2 as w

if TYPE_CHECKING:
    from blitz.core.api.service import FindSession

# Starts a turn in the caller's session (SessionCore.start_turn): the push's.
StartTurn = Callable[[s.RunTurnRequest, CallContext], Awaitable[str]]

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
# ExportChanges: a commit message's characters, and the formats made here (PUSH is a turn).
_MESSAGE_MAX = 64 * 1024
_FORMATS = {
    w.EXPORT_FORMAT_PATCH: "patch",
    w.EXPORT_FORMAT_DIFF: "diff",
    w.EXPORT_FORMAT_BUNDLE: "bundle",
}


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
        repos: Repositories | None = None,
        start_turn: StartTurn | None = None,
    ) -> None:
        """`find_session`: the caller's session (`SessionCore.session_record`);
        `workspace_root`: the folder the sessions' workspaces are in; `repos`: sessions
        from a repository's git data; `start_turn`: how a push's turn is started."""
        self._find_session = find_session
        self._store = store
        self._workspace_root = Path(workspace_root)
        self._image_max = image_max_bytes
        self._read_max = read_max_bytes
        self._repos = repos
        self._start_turn = start_turn

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
        """What changed (docs/protocol.md, "Diffs"): a session from a repository, git's
        diff of its starting commit (or of one turn's commit) against the workspace; a turn
        of another session, its checkpoints'; else what its agent's file tools changed,
        each file from before the session's first change of it to now. Secrets the
        server knows are masked on both sides, as in ReadFile."""
        session = await self._find_session(req.session_id, ctx)
        if req.turn_id:
            await self._finished_turn(session, req.turn_id)
        if session.repository and self._repos is not None:
            folder = await self._workspace(req.session_id, ctx)
            try:
                got = await self._repos.diff(
                    session.id, folder.root, turn_id=req.turn_id, limit=_DIFF_MAX
                )
            except RepoError as exc:
                raise repo_error(exc) from None
            paths = got.paths[:_DIFF_PATHS_MAX]
            return w.GetDiffResponse(
                diff=mask_known(got.diff),
                paths=paths,
                truncated=got.truncated or len(paths) < len(got.paths),
                base=got.base,
            )
        if req.turn_id:
            diff = await self._turn_diff(session, req.turn_id)
        else:
            diff = await self._file_tools_diff(req.session_id, ctx)
        paths = diff.paths[:_DIFF_PATHS_MAX]
        return w.GetDiffResponse(
            diff=diff.diff, paths=paths, truncated=diff.truncated or len(paths) < len(diff.paths)
        )

    async def _finished_turn(self, session: SessionRecord, turn_id: str) -> None:
        """TURN_NOT_FOUND unless the turn is the session's; INVALID_ARGUMENT unless it
        has finished (its end is what a turn's diff compares)."""
        turn = await self._store.get_turn(session.id, turn_id)
        if turn is None:
            raise BlitzError(
                Reason.TURN_NOT_FOUND, f"no turn {turn_id!r} in this session", {"turn_id": turn_id}
            )
        if turn.state != TurnState.FINISHED:
            raise invalid_argument(
                "turn_id", "the turn has not finished: its diff is not known yet"
            )

    async def _turn_diff(self, session: SessionRecord, turn_id: str) -> SessionDiff:
        """A turn's changes, from its start and end checkpoints."""
        cps = {c.at: c for c in await self._store.get_checkpoints(session.id, turn_id)}
        start, end = cps.get(START), cps.get(END)
        if never_changed(cps):
            return SessionDiff(diff="", paths=[], truncated=False)
        if start is None or start.manifest is None or end is None:
            raise invalid_argument(
                "turn_id",
                "no checkpoint of this turn's files is kept (a server command, an aside, or"
                " a turn older than the checkpoints kept): its changes are not known",
            )
        if end.manifest is None:  # its end is its start: it changed nothing
            return SessionDiff(diff="", paths=[], truncated=False)
        before, after = decode(start.manifest), decode(end.manifest)
        blobs = await self._store.checkpoint_blobs(session.id, turn_hashes(before, after))
        masked = {h: mask_known_bytes(b) for h, b in blobs.items()}
        try:
            return await FILE_CALLS.run(turn_diff, before, after, masked, limit=_DIFF_MAX)
        except CallTimedOut:
            raise _too_slow() from None

    async def _file_tools_diff(self, session_id: str, ctx: CallContext) -> SessionDiff:
        workspace = await self._workspace(session_id, ctx)
        originals = [
            FileOriginal(
                o.session_id, o.path, None if o.content is None else mask_known_bytes(o.content)
            )
            for o in await self._store.originals(session_id)
        ]

        def current(path: str) -> bytes | None:
            try:
                got = workspace.read(path, _DIFF_READ_MAX)
            except (PathRefused, FileNotFoundError, NotADirectoryError, IsADirectoryError):
                return None  # gone, or no longer a file the agent may touch
            return mask_known_bytes(got.data)

        try:
            return await FILE_CALLS.run(session_diff, originals, current, limit=_DIFF_MAX)
        except CallTimedOut:
            raise _too_slow() from None

    async def export_changes(
        self, req: w.ExportChangesRequest, ctx: CallContext
    ) -> w.ExportChangesResponse:
        """A session from a repository's changes as a patch series, a diff or a bundle;
        or, for a push, the commit made and the `/push` turn started that asks for its
        approval and then pushes it (docs/repositories.md)."""
        session = await self._find_session(req.session_id, ctx)
        repository = repository_of(session)
        if repository is None or self._repos is None:
            raise invalid_argument(
                "session_id",
                "this session did not start from a repository: it has nothing"
                " to export in git's terms (GetDiff shows its changes)",
            )
        if len(req.message) > _MESSAGE_MAX:
            raise invalid_argument(
                "message", "the commit message is too long", limit=str(_MESSAGE_MAX)
            )
        folder = await self._workspace(req.session_id, ctx)
        fmt = req.format or w.EXPORT_FORMAT_PATCH
        try:
            if fmt == w.EXPORT_FORMAT_PUSH:
                return await self._push(session, req, folder.root, ctx)
            if fmt not in _FORMATS:
                raise invalid_argument(
                    "format", f"no export format {fmt}", accepted="PATCH,DIFF,BUNDLE,PUSH"
                )
            got = await self._repos.export(
                session.id,
                folder.root,
                format=_FORMATS[fmt],
                message=req.message,
                squash=req.squash or bool(req.message),
                branch=req.branch,
            )
        except SourceRefused as exc:
            raise invalid_argument("branch", str(exc)) from None
        except RepoError as exc:
            raise repo_error(exc, branch=req.branch) from None
        data = got.data if fmt == w.EXPORT_FORMAT_BUNDLE else mask_known_bytes(got.data)
        return w.ExportChangesResponse(
            data=data,
            file_name=got.file_name,
            commits=got.commits,
            base=got.base,
            branch=(req.branch or default_branch_name(session.id))
            if fmt == w.EXPORT_FORMAT_BUNDLE
            else "",
        )

    async def _push(
        self, session: SessionRecord, req: w.ExportChangesRequest, folder: Path, ctx: CallContext
    ) -> w.ExportChangesResponse:
        assert self._repos is not None and self._start_turn is not None
        if session.turn_id:
            raise BlitzError(
                Reason.SESSION_BUSY,
                "a turn is running in this session: push once it has ended",
                {"turn_id": session.turn_id},
            )
        plan = await self._repos.prepare_push(
            session.id,
            folder,
            branch=req.branch,
            message=req.message,
            squash=req.squash or bool(req.message),
        )
        turn = t.Turn(text=f"/push {plan.branch} @{plan.commit}", command=True)
        turn_id = await self._start_turn(s.RunTurnRequest(session_id=session.id, turn=turn), ctx)
        return w.ExportChangesResponse(
            commits=list(plan.commits),
            base=plan.base,
            turn_id=turn_id,
            branch=plan.branch,
            remote=plan.remote,
        )


def _not_found(path: str) -> BlitzError:
    return BlitzError(Reason.FILE_NOT_FOUND, f"no such file or folder {path!r}", {"path": path})


def _too_slow() -> BlitzError:
    # Not the client's fault, and nothing of ours failed: the disk did not answer.
    return BlitzError(Reason.INTERNAL, "the workspace's files did not answer in time")
