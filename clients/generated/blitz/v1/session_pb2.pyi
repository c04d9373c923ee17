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

class SessionState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SESSION_STATE_UNSPECIFIED: _ClassVar[SessionState]
    SESSION_STATE_IDLE: _ClassVar[SessionState]
    SESSION_STATE_RUNNING: _ClassVar[SessionState]
    SESSION_STATE_PARKED: _ClassVar[SessionState]
    SESSION_STATE_CLOSED: _ClassVar[SessionState]

class BusyStrategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BUSY_STRATEGY_UNSPECIFIED: _ClassVar[BusyStrategy]
    BUSY_STRATEGY_REJECT: _ClassVar[BusyStrategy]
    BUSY_STRATEGY_ENQUEUE: _ClassVar[BusyStrategy]
    BUSY_STRATEGY_INTERRUPT: _ClassVar[BusyStrategy]

class RuleScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RULE_SCOPE_UNSPECIFIED: _ClassVar[RuleScope]
    RULE_SCOPE_SESSION: _ClassVar[RuleScope]
    RULE_SCOPE_ALWAYS: _ClassVar[RuleScope]

class TurnState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TURN_STATE_UNSPECIFIED: _ClassVar[TurnState]
    TURN_STATE_RUNNING: _ClassVar[TurnState]
    TURN_STATE_PARKED: _ClassVar[TurnState]
    TURN_STATE_FINISHED: _ClassVar[TurnState]
    TURN_STATE_QUEUED: _ClassVar[TurnState]
SESSION_STATE_UNSPECIFIED: SessionState
SESSION_STATE_IDLE: SessionState
SESSION_STATE_RUNNING: SessionState
SESSION_STATE_PARKED: SessionState
SESSION_STATE_CLOSED: SessionState
BUSY_STRATEGY_UNSPECIFIED: BusyStrategy
BUSY_STRATEGY_REJECT: BusyStrategy
BUSY_STRATEGY_ENQUEUE: BusyStrategy
BUSY_STRATEGY_INTERRUPT: BusyStrategy
RULE_SCOPE_UNSPECIFIED: RuleScope
RULE_SCOPE_SESSION: RuleScope
RULE_SCOPE_ALWAYS: RuleScope
TURN_STATE_UNSPECIFIED: TurnState
TURN_STATE_RUNNING: TurnState
TURN_STATE_PARKED: TurnState
TURN_STATE_FINISHED: TurnState
TURN_STATE_QUEUED: TurnState

class AcceptPlanRequest(_message.Message):
    __slots__ = ("session_id", "plan_id", "text", "turn_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    plan_id: str
    text: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., plan_id: _Optional[str] = ..., text: _Optional[str] = ..., turn_id: _Optional[str] = ...) -> None: ...

class RejectPlanRequest(_message.Message):
    __slots__ = ("session_id", "plan_id", "feedback")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    plan_id: str
    feedback: str
    def __init__(self, session_id: _Optional[str] = ..., plan_id: _Optional[str] = ..., feedback: _Optional[str] = ...) -> None: ...

class RejectPlanResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetServerInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ServerInfo(_message.Message):
    __slots__ = ("protocol", "protocol_revision", "server_version", "default_model", "models", "limits", "features", "command_isolation", "commands", "agents", "default_agent", "repositories", "principal", "admin")
    class LimitsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_REVISION_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_MODEL_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    COMMAND_ISOLATION_FIELD_NUMBER: _ClassVar[int]
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_AGENT_FIELD_NUMBER: _ClassVar[int]
    REPOSITORIES_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ADMIN_FIELD_NUMBER: _ClassVar[int]
    protocol: str
    protocol_revision: int
    server_version: str
    default_model: str
    models: _containers.RepeatedScalarFieldContainer[str]
    limits: _containers.ScalarMap[str, int]
    features: _containers.RepeatedScalarFieldContainer[str]
    command_isolation: str
    commands: _containers.RepeatedCompositeFieldContainer[SlashCommand]
    agents: _containers.RepeatedCompositeFieldContainer[AgentInfo]
    default_agent: str
    repositories: bool
    principal: str
    admin: bool
    def __init__(self, protocol: _Optional[str] = ..., protocol_revision: _Optional[int] = ..., server_version: _Optional[str] = ..., default_model: _Optional[str] = ..., models: _Optional[_Iterable[str]] = ..., limits: _Optional[_Mapping[str, int]] = ..., features: _Optional[_Iterable[str]] = ..., command_isolation: _Optional[str] = ..., commands: _Optional[_Iterable[_Union[SlashCommand, _Mapping]]] = ..., agents: _Optional[_Iterable[_Union[AgentInfo, _Mapping]]] = ..., default_agent: _Optional[str] = ..., repositories: _Optional[bool] = ..., principal: _Optional[str] = ..., admin: _Optional[bool] = ...) -> None: ...

class AgentInfo(_message.Message):
    __slots__ = ("name", "display_name", "kind", "version")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    name: str
    display_name: str
    kind: str
    version: str
    def __init__(self, name: _Optional[str] = ..., display_name: _Optional[str] = ..., kind: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class SlashCommand(_message.Message):
    __slots__ = ("name", "description", "arguments")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    arguments: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., arguments: _Optional[str] = ...) -> None: ...

class ListCommandsRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class ListCommandsResponse(_message.Message):
    __slots__ = ("commands",)
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedCompositeFieldContainer[SlashCommand]
    def __init__(self, commands: _Optional[_Iterable[_Union[SlashCommand, _Mapping]]] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ("id", "title", "workspace", "model", "labels", "state", "create_time", "update_time", "turn_id", "last_seq", "usage", "pending", "approval_timeout", "plan_id", "mode", "queued_turn_ids", "owner", "agent", "repository")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    QUEUED_TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    REPOSITORY_FIELD_NUMBER: _ClassVar[int]
    id: str
    title: str
    workspace: str
    model: str
    labels: _containers.ScalarMap[str, str]
    state: SessionState
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    turn_id: str
    last_seq: int
    usage: _turn_pb2.Usage
    pending: _containers.RepeatedCompositeFieldContainer[_turn_pb2.TurnEvent]
    approval_timeout: _duration_pb2.Duration
    plan_id: str
    mode: _turn_pb2.SessionMode
    queued_turn_ids: _containers.RepeatedScalarFieldContainer[str]
    owner: str
    agent: str
    repository: Repository
    def __init__(self, id: _Optional[str] = ..., title: _Optional[str] = ..., workspace: _Optional[str] = ..., model: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., state: _Optional[_Union[SessionState, str]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn_id: _Optional[str] = ..., last_seq: _Optional[int] = ..., usage: _Optional[_Union[_turn_pb2.Usage, _Mapping]] = ..., pending: _Optional[_Iterable[_Union[_turn_pb2.TurnEvent, _Mapping]]] = ..., approval_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., plan_id: _Optional[str] = ..., mode: _Optional[_Union[_turn_pb2.SessionMode, str]] = ..., queued_turn_ids: _Optional[_Iterable[str]] = ..., owner: _Optional[str] = ..., agent: _Optional[str] = ..., repository: _Optional[_Union[Repository, _Mapping]] = ...) -> None: ...

class RepositorySource(_message.Message):
    __slots__ = ("url", "ref", "depth", "submodules")
    URL_FIELD_NUMBER: _ClassVar[int]
    REF_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    SUBMODULES_FIELD_NUMBER: _ClassVar[int]
    url: str
    ref: str
    depth: int
    submodules: bool
    def __init__(self, url: _Optional[str] = ..., ref: _Optional[str] = ..., depth: _Optional[int] = ..., submodules: _Optional[bool] = ...) -> None: ...

class Repository(_message.Message):
    __slots__ = ("url", "ref", "commit", "branch", "default_branch", "depth", "submodules")
    URL_FIELD_NUMBER: _ClassVar[int]
    REF_FIELD_NUMBER: _ClassVar[int]
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    BRANCH_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_BRANCH_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    SUBMODULES_FIELD_NUMBER: _ClassVar[int]
    url: str
    ref: str
    commit: str
    branch: str
    default_branch: str
    depth: int
    submodules: bool
    def __init__(self, url: _Optional[str] = ..., ref: _Optional[str] = ..., commit: _Optional[str] = ..., branch: _Optional[str] = ..., default_branch: _Optional[str] = ..., depth: _Optional[int] = ..., submodules: _Optional[bool] = ...) -> None: ...

class CreateSessionRequest(_message.Message):
    __slots__ = ("title", "workspace", "model", "labels", "approval_timeout", "mode", "agent", "source")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TITLE_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    title: str
    workspace: str
    model: str
    labels: _containers.ScalarMap[str, str]
    approval_timeout: _duration_pb2.Duration
    mode: _turn_pb2.SessionMode
    agent: str
    source: RepositorySource
    def __init__(self, title: _Optional[str] = ..., workspace: _Optional[str] = ..., model: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., approval_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., mode: _Optional[_Union[_turn_pb2.SessionMode, str]] = ..., agent: _Optional[str] = ..., source: _Optional[_Union[RepositorySource, _Mapping]] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ("page_size", "page_token", "state", "labels")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    state: SessionState
    labels: _containers.ScalarMap[str, str]
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., state: _Optional[_Union[SessionState, str]] = ..., labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ("sessions", "next_page_token")
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[Session]
    next_page_token: str
    def __init__(self, sessions: _Optional[_Iterable[_Union[Session, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CloseSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class RunTurnRequest(_message.Message):
    __slots__ = ("session_id", "turn", "turn_id", "busy")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    BUSY_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    turn: _turn_pb2.Turn
    turn_id: str
    busy: BusyStrategy
    def __init__(self, session_id: _Optional[str] = ..., turn: _Optional[_Union[_turn_pb2.Turn, _Mapping]] = ..., turn_id: _Optional[str] = ..., busy: _Optional[_Union[BusyStrategy, str]] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("session_id", "after_seq", "follow")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    after_seq: int
    follow: bool
    def __init__(self, session_id: _Optional[str] = ..., after_seq: _Optional[int] = ..., follow: _Optional[bool] = ...) -> None: ...

class WatchSessionsRequest(_message.Message):
    __slots__ = ("labels", "page_size")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LABELS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    labels: _containers.ScalarMap[str, str]
    page_size: int
    def __init__(self, labels: _Optional[_Mapping[str, str]] = ..., page_size: _Optional[int] = ...) -> None: ...

class SessionsUpdate(_message.Message):
    __slots__ = ("session", "deleted_id", "synced")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    DELETED_ID_FIELD_NUMBER: _ClassVar[int]
    SYNCED_FIELD_NUMBER: _ClassVar[int]
    session: Session
    deleted_id: str
    synced: bool
    def __init__(self, session: _Optional[_Union[Session, _Mapping]] = ..., deleted_id: _Optional[str] = ..., synced: _Optional[bool] = ...) -> None: ...

class DecideRequest(_message.Message):
    __slots__ = ("session_id", "request_id", "decision", "reason", "command", "interrupt", "rule")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    INTERRUPT_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    request_id: str
    decision: _turn_pb2.Decision
    reason: str
    command: str
    interrupt: bool
    rule: _turn_pb2.RuleMatch
    def __init__(self, session_id: _Optional[str] = ..., request_id: _Optional[str] = ..., decision: _Optional[_Union[_turn_pb2.Decision, str]] = ..., reason: _Optional[str] = ..., command: _Optional[str] = ..., interrupt: _Optional[bool] = ..., rule: _Optional[_Union[_turn_pb2.RuleMatch, _Mapping]] = ...) -> None: ...

class DecideResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AnswerRequest(_message.Message):
    __slots__ = ("session_id", "request_id", "answers", "values", "decline")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    DECLINE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    request_id: str
    answers: _containers.RepeatedScalarFieldContainer[str]
    values: _struct_pb2.Struct
    decline: bool
    def __init__(self, session_id: _Optional[str] = ..., request_id: _Optional[str] = ..., answers: _Optional[_Iterable[str]] = ..., values: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., decline: _Optional[bool] = ...) -> None: ...

class AnswerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ("session_id", "turn_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., turn_id: _Optional[str] = ...) -> None: ...

class CancelResponse(_message.Message):
    __slots__ = ("turn_id",)
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    def __init__(self, turn_id: _Optional[str] = ...) -> None: ...

class SteerRequest(_message.Message):
    __slots__ = ("session_id", "text", "expected_turn_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    text: str
    expected_turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., text: _Optional[str] = ..., expected_turn_id: _Optional[str] = ...) -> None: ...

class SteerResponse(_message.Message):
    __slots__ = ("turn_id",)
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    def __init__(self, turn_id: _Optional[str] = ...) -> None: ...

class GetUsageRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class LedgerEntry(_message.Message):
    __slots__ = ("turn_id", "model", "input", "cached", "cache_write", "output", "cost_usd", "priced", "search_queries", "search_cost_usd", "time", "tokens_unknown")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    PRICED_FIELD_NUMBER: _ClassVar[int]
    SEARCH_QUERIES_FIELD_NUMBER: _ClassVar[int]
    SEARCH_COST_USD_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    TOKENS_UNKNOWN_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    model: str
    input: int
    cached: int
    cache_write: int
    output: int
    cost_usd: float
    priced: bool
    search_queries: int
    search_cost_usd: float
    time: _timestamp_pb2.Timestamp
    tokens_unknown: bool
    def __init__(self, turn_id: _Optional[str] = ..., model: _Optional[str] = ..., input: _Optional[int] = ..., cached: _Optional[int] = ..., cache_write: _Optional[int] = ..., output: _Optional[int] = ..., cost_usd: _Optional[float] = ..., priced: _Optional[bool] = ..., search_queries: _Optional[int] = ..., search_cost_usd: _Optional[float] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., tokens_unknown: _Optional[bool] = ...) -> None: ...

class UsageReport(_message.Message):
    __slots__ = ("total", "entries")
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    total: _turn_pb2.Usage
    entries: _containers.RepeatedCompositeFieldContainer[LedgerEntry]
    def __init__(self, total: _Optional[_Union[_turn_pb2.Usage, _Mapping]] = ..., entries: _Optional[_Iterable[_Union[LedgerEntry, _Mapping]]] = ...) -> None: ...

class Rule(_message.Message):
    __slots__ = ("id", "scope", "kind", "scope_label", "session_id", "workspace", "caller", "create_time", "request_id", "match", "pattern", "effect", "expire_time")
    ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SCOPE_LABEL_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WORKSPACE_FIELD_NUMBER: _ClassVar[int]
    CALLER_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    id: str
    scope: RuleScope
    kind: _turn_pb2.ActionKind
    scope_label: str
    session_id: str
    workspace: str
    caller: str
    create_time: _timestamp_pb2.Timestamp
    request_id: str
    match: _turn_pb2.RuleMatchKind
    pattern: str
    effect: _turn_pb2.RuleEffect
    expire_time: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., scope: _Optional[_Union[RuleScope, str]] = ..., kind: _Optional[_Union[_turn_pb2.ActionKind, str]] = ..., scope_label: _Optional[str] = ..., session_id: _Optional[str] = ..., workspace: _Optional[str] = ..., caller: _Optional[str] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., request_id: _Optional[str] = ..., match: _Optional[_Union[_turn_pb2.RuleMatchKind, str]] = ..., pattern: _Optional[str] = ..., effect: _Optional[_Union[_turn_pb2.RuleEffect, str]] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListRulesRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class ListRulesResponse(_message.Message):
    __slots__ = ("rules",)
    RULES_FIELD_NUMBER: _ClassVar[int]
    rules: _containers.RepeatedCompositeFieldContainer[Rule]
    def __init__(self, rules: _Optional[_Iterable[_Union[Rule, _Mapping]]] = ...) -> None: ...

class RevokeRuleRequest(_message.Message):
    __slots__ = ("session_id", "rule_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    RULE_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    rule_id: str
    def __init__(self, session_id: _Optional[str] = ..., rule_id: _Optional[str] = ...) -> None: ...

class RevokeRuleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetTurnRequest(_message.Message):
    __slots__ = ("session_id", "turn_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    turn_id: str
    def __init__(self, session_id: _Optional[str] = ..., turn_id: _Optional[str] = ...) -> None: ...

class RewindSessionRequest(_message.Message):
    __slots__ = ("session_id", "to_turn_id", "files")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TO_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    to_turn_id: str
    files: bool
    def __init__(self, session_id: _Optional[str] = ..., to_turn_id: _Optional[str] = ..., files: _Optional[bool] = ...) -> None: ...

class RewindSessionResponse(_message.Message):
    __slots__ = ("rewound", "session")
    REWOUND_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    rewound: _turn_pb2.Rewound
    session: Session
    def __init__(self, rewound: _Optional[_Union[_turn_pb2.Rewound, _Mapping]] = ..., session: _Optional[_Union[Session, _Mapping]] = ...) -> None: ...

class ListTurnsRequest(_message.Message):
    __slots__ = ("session_id", "page_size", "page_token")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    page_size: int
    page_token: str
    def __init__(self, session_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class TurnSummary(_message.Message):
    __slots__ = ("turn_id", "turn", "state", "create_time", "finish_time", "usage", "output", "error", "first_seq")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    turn: _turn_pb2.Turn
    state: TurnState
    create_time: _timestamp_pb2.Timestamp
    finish_time: _timestamp_pb2.Timestamp
    usage: _turn_pb2.Usage
    output: str
    error: _turn_pb2.ErrorInfo
    first_seq: int
    def __init__(self, turn_id: _Optional[str] = ..., turn: _Optional[_Union[_turn_pb2.Turn, _Mapping]] = ..., state: _Optional[_Union[TurnState, str]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finish_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., usage: _Optional[_Union[_turn_pb2.Usage, _Mapping]] = ..., output: _Optional[str] = ..., error: _Optional[_Union[_turn_pb2.ErrorInfo, _Mapping]] = ..., first_seq: _Optional[int] = ...) -> None: ...

class ListTurnsResponse(_message.Message):
    __slots__ = ("turns", "next_page_token")
    TURNS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    turns: _containers.RepeatedCompositeFieldContainer[TurnSummary]
    next_page_token: str
    def __init__(self, turns: _Optional[_Iterable[_Union[TurnSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class UpdateSessionRequest(_message.Message):
    __slots__ = ("session_id", "title", "labels", "approval_timeout", "update_mask", "mode")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    UPDATE_MASK_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    title: str
    labels: _containers.ScalarMap[str, str]
    approval_timeout: _duration_pb2.Duration
    update_mask: _field_mask_pb2.FieldMask
    mode: _turn_pb2.SessionMode
    def __init__(self, session_id: _Optional[str] = ..., title: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., approval_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., update_mask: _Optional[_Union[_field_mask_pb2.FieldMask, _Mapping]] = ..., mode: _Optional[_Union[_turn_pb2.SessionMode, str]] = ...) -> None: ...

class DeleteSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class DeleteSessionResponse(_message.Message):
    __slots__ = ("workspace_deleted",)
    WORKSPACE_DELETED_FIELD_NUMBER: _ClassVar[int]
    workspace_deleted: bool
    def __init__(self, workspace_deleted: _Optional[bool] = ...) -> None: ...

class ForkSessionRequest(_message.Message):
    __slots__ = ("session_id", "turn_id", "title")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    turn_id: str
    title: str
    def __init__(self, session_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., title: _Optional[str] = ...) -> None: ...
