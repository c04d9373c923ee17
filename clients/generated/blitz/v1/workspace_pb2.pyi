from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExportFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXPORT_FORMAT_UNSPECIFIED: _ClassVar[ExportFormat]
    EXPORT_FORMAT_PATCH: _ClassVar[ExportFormat]
    EXPORT_FORMAT_DIFF: _ClassVar[ExportFormat]
    EXPORT_FORMAT_BUNDLE: _ClassVar[ExportFormat]
    EXPORT_FORMAT_PUSH: _ClassVar[ExportFormat]
EXPORT_FORMAT_UNSPECIFIED: ExportFormat
EXPORT_FORMAT_PATCH: ExportFormat
EXPORT_FORMAT_DIFF: ExportFormat
EXPORT_FORMAT_BUNDLE: ExportFormat
EXPORT_FORMAT_PUSH: ExportFormat

class UploadImageRequest(_message.Message):
    __slots__ = ("session_id", "data", "media_type")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    MEDIA_TYPE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    data: bytes
    media_type: str
    def __init__(self, session_id: _Optional[str] = ..., data: _Optional[bytes] = ..., media_type: _Optional[str] = ...) -> None: ...

class UploadImageResponse(_message.Message):
    __slots__ = ("image_id", "size")
    IMAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    image_id: str
    size: int
    def __init__(self, image_id: _Optional[str] = ..., size: _Optional[int] = ...) -> None: ...

class ListFilesRequest(_message.Message):
    __slots__ = ("session_id", "path")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    path: str
    def __init__(self, session_id: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class FileEntry(_message.Message):
    __slots__ = ("path", "directory", "size")
    PATH_FIELD_NUMBER: _ClassVar[int]
    DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    path: str
    directory: bool
    size: int
    def __init__(self, path: _Optional[str] = ..., directory: _Optional[bool] = ..., size: _Optional[int] = ...) -> None: ...

class ListFilesResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[FileEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[FileEntry, _Mapping]]] = ...) -> None: ...

class ReadFileRequest(_message.Message):
    __slots__ = ("session_id", "path")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    path: str
    def __init__(self, session_id: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class ReadFileResponse(_message.Message):
    __slots__ = ("content", "truncated", "size")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    content: bytes
    truncated: bool
    size: int
    def __init__(self, content: _Optional[bytes] = ..., truncated: _Optional[bool] = ..., size: _Optional[int] = ...) -> None: ...

class GetDiffRequest(_message.Message):
    __slots__ = ("session_id", "turn_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., turn_id: _Optional[str] = ...) -> None: ...

class GetDiffResponse(_message.Message):
    __slots__ = ("diff", "paths", "truncated", "base")
    DIFF_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    diff: str
    paths: _containers.RepeatedScalarFieldContainer[str]
    truncated: bool
    base: str
    def __init__(self, diff: _Optional[str] = ..., paths: _Optional[_Iterable[str]] = ..., truncated: _Optional[bool] = ..., base: _Optional[str] = ...) -> None: ...

class ExportChangesRequest(_message.Message):
    __slots__ = ("session_id", "format", "branch", "message", "squash")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SQUASH_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    format: ExportFormat
    branch: str
    message: str
    squash: bool
    def __init__(self, session_id: _Optional[str] = ..., format: _Optional[_Union[ExportFormat, str]] = ..., branch: _Optional[str] = ..., message: _Optional[str] = ..., squash: _Optional[bool] = ...) -> None: ...

class ExportChangesResponse(_message.Message):
    __slots__ = ("data", "file_name", "commits", "base", "turn_id", "branch", "remote")
    DATA_FIELD_NUMBER: _ClassVar[int]
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    COMMITS_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    file_name: str
    commits: _containers.RepeatedScalarFieldContainer[str]
    base: str
    turn_id: str
    branch: str
    remote: str
    def __init__(self, data: _Optional[bytes] = ..., file_name: _Optional[str] = ..., commits: _Optional[_Iterable[str]] = ..., base: _Optional[str] = ..., turn_id: _Optional[str] = ..., branch: _Optional[str] = ..., remote: _Optional[str] = ...) -> None: ...
