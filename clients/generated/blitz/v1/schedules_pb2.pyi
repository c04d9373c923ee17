import datetime

from blitz.v1 import session_pb2 as _session_pb2
from blitz.v1 import turn_pb2 as _turn_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import field_mask_pb2 as _field_mask_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ScheduleState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_STATE_UNSPECIFIED: _ClassVar[ScheduleState]
    SCHEDULE_STATE_ACTIVE: _ClassVar[ScheduleState]
    SCHEDULE_STATE_PAUSED: _ClassVar[ScheduleState]

class CatchUp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CATCH_UP_UNSPECIFIED: _ClassVar[CatchUp]
    CATCH_UP_SKIP: _ClassVar[CatchUp]
    CATCH_UP_ONCE: _ClassVar[CatchUp]
SCHEDULE_STATE_UNSPECIFIED: ScheduleState
SCHEDULE_STATE_ACTIVE: ScheduleState
SCHEDULE_STATE_PAUSED: ScheduleState
CATCH_UP_UNSPECIFIED: CatchUp
CATCH_UP_SKIP: CatchUp
CATCH_UP_ONCE: CatchUp

class ScheduledWorkflow(_message.Message):
    __slots__ = ("name", "params")
    class ParamsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    name: str
    params: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., params: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SessionTemplate(_message.Message):
    __slots__ = ("title", "labels", "model", "agent", "workspace", "mode")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TITLE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    title: str
    labels: _containers.ScalarMap[str, str]
    model: str
    agent: str
    workspace: str
    mode: _turn_pb2.SessionMode
    def __init__(self, title: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., model: _Optional[str] = ..., agent: _Optional[str] = ..., workspace: _Optional[str] = ..., mode: _Optional[_Union[_turn_pb2.SessionMode, str]] = ...) -> None: ...

class Schedule(_message.Message):
    __slots__ = ("id", "title", "cron", "every", "time_zone", "prompt", "workflow", "session_id", "session", "busy", "catch_up", "state", "owner", "create_time", "update_time", "next_fire_time", "last_firing")
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    EVERY_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    BUSY_FIELD_NUMBER: _ClassVar[int]
    CATCH_UP_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    LAST_FIRING_FIELD_NUMBER: _ClassVar[int]
    id: str
    title: str
    cron: str
    every: _duration_pb2.Duration
    time_zone: str
    prompt: str
    workflow: ScheduledWorkflow
    session_id: str
    session: SessionTemplate
    busy: _session_pb2.BusyStrategy
    catch_up: CatchUp
    state: ScheduleState
    owner: str
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    next_fire_time: _timestamp_pb2.Timestamp
    last_firing: ScheduleFiring
    def __init__(self, id: _Optional[str] = ..., title: _Optional[str] = ..., cron: _Optional[str] = ..., every: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., time_zone: _Optional[str] = ..., prompt: _Optional[str] = ..., workflow: _Optional[_Union[ScheduledWorkflow, _Mapping]] = ..., session_id: _Optional[str] = ..., session: _Optional[_Union[SessionTemplate, _Mapping]] = ..., busy: _Optional[_Union[_session_pb2.BusyStrategy, str]] = ..., catch_up: _Optional[_Union[CatchUp, str]] = ..., state: _Optional[_Union[ScheduleState, str]] = ..., owner: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., next_fire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_firing: _Optional[_Union[ScheduleFiring, _Mapping]] = ...) -> None: ...

class ScheduleFiring(_message.Message):
    __slots__ = ("schedule_id", "tick_time", "fire_time", "via", "session_id", "turn_id", "error")
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    TICK_TIME_FIELD_NUMBER: _ClassVar[int]
    FIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    VIA_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    schedule_id: str
    tick_time: _timestamp_pb2.Timestamp
    fire_time: _timestamp_pb2.Timestamp
    via: str
    session_id: str
    turn_id: str
    error: str
    def __init__(self, schedule_id: _Optional[str] = ..., tick_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., fire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., via: _Optional[str] = ..., session_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class CreateScheduleRequest(_message.Message):
    __slots__ = ("schedule",)
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class GetScheduleRequest(_message.Message):
    __slots__ = ("schedule_id",)
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    schedule_id: str
    def __init__(self, schedule_id: _Optional[str] = ...) -> None: ...

class ListSchedulesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSchedulesResponse(_message.Message):
    __slots__ = ("schedules",)
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    schedules: _containers.RepeatedCompositeFieldContainer[Schedule]
    def __init__(self, schedules: _Optional[_Iterable[_Union[Schedule, _Mapping]]] = ...) -> None: ...

class UpdateScheduleRequest(_message.Message):
    __slots__ = ("schedule", "update_mask")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    update_mask: _field_mask_pb2.FieldMask
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ...) -> None: ...

class DeleteScheduleRequest(_message.Message):
    __slots__ = ("schedule_id",)
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    schedule_id: str
    def __init__(self, schedule_id: _Optional[str] = ...) -> None: ...

class DeleteScheduleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RunScheduleRequest(_message.Message):
    __slots__ = ("schedule_id",)
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    schedule_id: str
    def __init__(self, schedule_id: _Optional[str] = ...) -> None: ...

class ListFiringsRequest(_message.Message):
    __slots__ = ("schedule_id", "page_size", "page_token")
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    schedule_id: str
    page_size: int
    page_token: str
    def __init__(self, schedule_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListFiringsResponse(_message.Message):
    __slots__ = ("firings", "next_page_token")
    FIRINGS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    firings: _containers.RepeatedCompositeFieldContainer[ScheduleFiring]
    next_page_token: str
    def __init__(self, firings: _Optional[_Iterable[_Union[ScheduleFiring, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
