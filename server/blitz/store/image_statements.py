"""The statements of a session's images: the pictures a caller sent, kept by id.

A message refers to an image by its id, and the image's bytes are read back when a turn
sends the message to the model; an image is deleted only with its session.
"""

from __future__ import annotations

from blitz.store.sql_dialect import Dialect, marks

__all__ = ["IMAGE_COLUMNS", "ImageStatements"]

# An ImageRecord's columns, in the order of its fields.
IMAGE_COLUMNS = "id, session_id, media_type, data, create_time"


class ImageStatements:
    """The images' statements, in one engine's dialect."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql

        self.add_image = sql(f"INSERT INTO images ({IMAGE_COLUMNS}) VALUES ({marks(5)})")
        self.get_image = sql(f"SELECT {IMAGE_COLUMNS} FROM images WHERE session_id = ? AND id = ?")
