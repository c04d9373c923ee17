"""The statements of workspaces: a principal's names for its folders, the files as they
were before a session changed them, and each turn's checkpoints of its files.

A checkpoint is a manifest of a turn's files at its start or its end; the contents are
blobs kept once per session by hash, so a file that did not change costs nothing again.
A name, an original or a blob is written only if new (`ON CONFLICT ... DO NOTHING`):
the first writer's stands.
"""

from __future__ import annotations

from blitz.store.sql_dialect import Dialect, marks

__all__ = ["CHECKPOINT_COLUMNS", "WorkspaceStatements"]

# A Checkpoint's columns, in the order of its fields.
CHECKPOINT_COLUMNS = "session_id, turn_id, at, manifest, create_time"


class WorkspaceStatements:
    """The workspaces' statements, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql

        # Workspace names. Parameters: owner, name, the folder for a new name; then owner,
        # name.
        self.claim_workspace = sql(
            "INSERT INTO workspace_names (owner, name, folder) VALUES (?, ?, ?)"
            " ON CONFLICT (owner, name) DO NOTHING"
        )
        self.workspace_folder = sql(
            "SELECT folder FROM workspace_names WHERE owner = ? AND name = ?"
        )

        # Workspace files as they were
        self.keep_original = sql(
            "INSERT INTO file_originals (session_id, path, content) VALUES (?, ?, ?)"
            " ON CONFLICT (session_id, path) DO NOTHING"
        )
        self.originals = sql(
            "SELECT path, content FROM file_originals WHERE session_id = ? ORDER BY path"
        )

        # Workspace checkpoints
        self.put_checkpoint = sql(
            f"INSERT INTO checkpoints ({CHECKPOINT_COLUMNS})"
            f" VALUES ({marks(5)}) ON CONFLICT (session_id, turn_id, at)"
            " DO UPDATE SET manifest = excluded.manifest, create_time = excluded.create_time"
        )
        self.put_checkpoint_blob = sql(
            "INSERT INTO checkpoint_blobs (session_id, hash, content) VALUES (?, ?, ?)"
            " ON CONFLICT (session_id, hash) DO NOTHING"
        )
        self.checkpointed_turns = sql(
            "SELECT turn_id FROM checkpoints WHERE session_id = ? GROUP BY turn_id"
            " ORDER BY MIN(create_time), turn_id"
        )
        self.get_checkpoints = sql(
            "SELECT at, manifest, create_time FROM checkpoints"
            " WHERE session_id = ? AND turn_id = ? ORDER BY at DESC"
        )
        # Parameters: session_id, the hashes as a JSON array.
        self.checkpoint_blobs = sql(
            "SELECT hash, content FROM checkpoint_blobs"
            f" WHERE session_id = ? AND hash IN {dialect.json_texts}"
        )
        self.checkpoint_blob_hashes = sql("SELECT hash FROM checkpoint_blobs WHERE session_id = ?")
        self.drop_checkpoint = sql("DELETE FROM checkpoints WHERE session_id = ? AND turn_id = ?")
        self.drop_checkpoint_blob = sql(
            "DELETE FROM checkpoint_blobs WHERE session_id = ? AND hash = ?"
        )
