import datetime

from blitz.v1 import turn_pb2 as _turn_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HookEvent(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HOOK_EVENT_UNSPECIFIED: _ClassVar[HookEvent]
    HOOK_EVENT_TURN_START: _ClassVar[HookEvent]
    HOOK_EVENT_PRE_TOOL: _ClassVar[HookEvent]
    HOOK_EVENT_POST_TOOL: _ClassVar[HookEvent]
    HOOK_EVENT_TURN_END: _ClassVar[HookEvent]
    HOOK_EVENT_NOTIFICATION: _ClassVar[HookEvent]
HOOK_EVENT_UNSPECIFIED: HookEvent
HOOK_EVENT_TURN_START: HookEvent
HOOK_EVENT_PRE_TOOL: HookEvent
HOOK_EVENT_POST_TOOL: HookEvent
HOOK_EVENT_TURN_END: HookEvent
HOOK_EVENT_NOTIFICATION: HookEvent

class Hook(_message.Message):
    __slots__ = ("id", "event", "command", "url", "tools", "commands", "paths", "timeout", "fail_open", "description", "disabled", "owner", "server_wide", "declared", "create_time", "update_time")
    ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    FAIL_OPEN_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    SERVER_WIDE_FIELD_NUMBER: _ClassVar[int]
    DECLARED_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    id: str
    event: HookEvent
    command: str
    url: str
    tools: _containers.RepeatedScalarFieldContainer[str]
    commands: _containers.RepeatedScalarFieldContainer[str]
    paths: _containers.RepeatedScalarFieldContainer[str]
    timeout: _duration_pb2.Duration
    fail_open: bool
    description: str
    disabled: bool
    owner: str
    server_wide: bool
    declared: str
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., event: _Optional[_Union[HookEvent, str]] = ..., command: _Optional[str] = ..., url: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ..., commands: _Optional[_Iterable[str]] = ..., paths: _Optional[_Iterable[str]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., fail_open: _Optional[bool] = ..., description: _Optional[str] = ..., disabled: _Optional[bool] = ..., owner: _Optional[str] = ..., server_wide: _Optional[bool] = ..., declared: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateHookRequest(_message.Message):
    __slots__ = ("event", "command", "url", "tools", "commands", "paths", "timeout", "fail_open", "description", "server_wide")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    FAIL_OPEN_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SERVER_WIDE_FIELD_NUMBER: _ClassVar[int]
    event: HookEvent
    command: str
    url: str
    tools: _containers.RepeatedScalarFieldContainer[str]
    commands: _containers.RepeatedScalarFieldContainer[str]
    paths: _containers.RepeatedScalarFieldContainer[str]
    timeout: _duration_pb2.Duration
    fail_open: bool
    description: str
    server_wide: bool
    def __init__(self, event: _Optional[_Union[HookEvent, str]] = ..., command: _Optional[str] = ..., url: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ..., commands: _Optional[_Iterable[str]] = ..., paths: _Optional[_Iterable[str]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., fail_open: _Optional[bool] = ..., description: _Optional[str] = ..., server_wide: _Optional[bool] = ...) -> None: ...

class CreateHookResponse(_message.Message):
    __slots__ = ("hook", "secret")
    HOOK_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    hook: Hook
    secret: str
    def __init__(self, hook: _Optional[_Union[Hook, _Mapping]] = ..., secret: _Optional[str] = ...) -> None: ...

class GetHookRequest(_message.Message):
    __slots__ = ("hook_id",)
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    hook_id: str
    def __init__(self, hook_id: _Optional[str] = ...) -> None: ...

class ListHooksRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListHooksResponse(_message.Message):
    __slots__ = ("hooks",)
    HOOKS_FIELD_NUMBER: _ClassVar[int]
    hooks: _containers.RepeatedCompositeFieldContainer[Hook]
    def __init__(self, hooks: _Optional[_Iterable[_Union[Hook, _Mapping]]] = ...) -> None: ...

class UpdateHookRequest(_message.Message):
    __slots__ = ("hook_id", "command", "url", "tools", "commands", "paths", "timeout", "fail_open", "description", "disabled", "update_mask")
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    FAIL_OPEN_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    hook_id: str
    command: str
    url: str
    tools: _containers.RepeatedScalarFieldContainer[str]
    commands: _containers.RepeatedScalarFieldContainer[str]
    paths: _containers.RepeatedScalarFieldContainer[str]
    timeout: _duration_pb2.Duration
    fail_open: bool
    description: str
    disabled: bool
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, hook_id: _Optional[str] = ..., command: _Optional[str] = ..., url: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ..., commands: _Optional[_Iterable[str]] = ..., paths: _Optional[_Iterable[str]] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., fail_open: _Optional[bool] = ..., description: _Optional[str] = ..., disabled: _Optional[bool] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class DeleteHookRequest(_message.Message):
    __slots__ = ("hook_id",)
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    hook_id: str
    def __init__(self, hook_id: _Optional[str] = ...) -> None: ...

class DeleteHookResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TestHookRequest(_message.Message):
    __slots__ = ("hook_id", "input", "session_id")
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    hook_id: str
    input: _struct_pb2.Struct
    session_id: str
    def __init__(self, hook_id: _Optional[str] = ..., input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., session_id: _Optional[str] = ...) -> None: ...

class TestHookResponse(_message.Message):
    __slots__ = ("outcome", "status", "stdout", "stderr")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STDOUT_FIELD_NUMBER: _ClassVar[int]
    STDERR_FIELD_NUMBER: _ClassVar[int]
    outcome: _turn_pb2.HookOutcome
    status: int
    stdout: str
    stderr: str
    def __init__(self, outcome: _Optional[_Union[_turn_pb2.HookOutcome, _Mapping]] = ..., status: _Optional[int] = ..., stdout: _Optional[str] = ..., stderr: _Optional[str] = ...) -> None: ...
