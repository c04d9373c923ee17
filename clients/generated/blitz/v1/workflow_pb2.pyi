from blitz.v1 import session_pb2 as _session_pb2
from blitz.v1 import turn_pb2 as _turn_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RunWorkflowRequest(_message.Message):
    __slots__ = ("session_id", "name", "params", "turn", "turn_id", "busy")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    BUSY_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    name: str
    params: _containers.ScalarMap[str, str]
    turn: _turn_pb2.Turn
    turn_id: str
    busy: _session_pb2.BusyStrategy
    def __init__(self, session_id: _Optional[str] = ..., name: _Optional[str] = ..., params: _Optional[_Mapping[str, str]] = ..., turn: _Optional[_Union[_turn_pb2.Turn, _Mapping]] = ..., turn_id: _Optional[str] = ..., busy: _Optional[_Union[_session_pb2.BusyStrategy, str]] = ...) -> None: ...

class ListWorkflowsRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class ListWorkflowsResponse(_message.Message):
    __slots__ = ("workflows",)
    WORKFLOWS_FIELD_NUMBER: _ClassVar[int]
    workflows: _containers.RepeatedCompositeFieldContainer[Workflow]
    def __init__(self, workflows: _Optional[_Iterable[_Union[Workflow, _Mapping]]] = ...) -> None: ...

class GetWorkflowRequest(_message.Message):
    __slots__ = ("session_id", "name")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    name: str
    def __init__(self, session_id: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class Workflow(_message.Message):
    __slots__ = ("name", "version", "title", "description", "params", "steps", "source", "path", "error", "definition")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    title: str
    description: str
    params: _containers.RepeatedCompositeFieldContainer[WorkflowParam]
    steps: _containers.RepeatedCompositeFieldContainer[WorkflowStep]
    source: str
    path: str
    error: _turn_pb2.ErrorInfo
    definition: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., params: _Optional[_Iterable[_Union[WorkflowParam, _Mapping]]] = ..., steps: _Optional[_Iterable[_Union[WorkflowStep, _Mapping]]] = ..., source: _Optional[str] = ..., path: _Optional[str] = ..., error: _Optional[_Union[_turn_pb2.ErrorInfo, _Mapping]] = ..., definition: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class WorkflowParam(_message.Message):
    __slots__ = ("name", "type", "required", "default", "has_default", "description", "values")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    HAS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    required: bool
    default: str
    has_default: bool
    description: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., required: _Optional[bool] = ..., default: _Optional[str] = ..., has_default: _Optional[bool] = ..., description: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class WorkflowStep(_message.Message):
    __slots__ = ("id", "title", "type")
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    id: str
    title: str
    type: str
    def __init__(self, id: _Optional[str] = ..., title: _Optional[str] = ..., type: _Optional[str] = ...) -> None: ...
