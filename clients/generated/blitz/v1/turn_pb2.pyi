import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SessionMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SESSION_MODE_UNSPECIFIED: _ClassVar[SessionMode]
    SESSION_MODE_ASK: _ClassVar[SessionMode]
    SESSION_MODE_ACCEPT_EDITS: _ClassVar[SessionMode]
    SESSION_MODE_READ_ONLY: _ClassVar[SessionMode]
    SESSION_MODE_PLAN: _ClassVar[SessionMode]
    SESSION_MODE_BYPASS: _ClassVar[SessionMode]

class RuleMatchKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RULE_MATCH_UNSPECIFIED: _ClassVar[RuleMatchKind]
    RULE_MATCH_EXACT: _ClassVar[RuleMatchKind]
    RULE_MATCH_COMMAND_PREFIX: _ClassVar[RuleMatchKind]
    RULE_MATCH_PATH_GLOB: _ClassVar[RuleMatchKind]

class RuleEffect(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RULE_EFFECT_UNSPECIFIED: _ClassVar[RuleEffect]
    RULE_EFFECT_ALLOW: _ClassVar[RuleEffect]
    RULE_EFFECT_DENY: _ClassVar[RuleEffect]

class ExpiryAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXPIRY_ACTION_UNSPECIFIED: _ClassVar[ExpiryAction]
    EXPIRY_ACTION_DENY: _ClassVar[ExpiryAction]
    EXPIRY_ACTION_UNANSWERED: _ClassVar[ExpiryAction]

class HookDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HOOK_DECISION_NONE: _ClassVar[HookDecision]
    HOOK_DECISION_ALLOW: _ClassVar[HookDecision]
    HOOK_DECISION_DENY: _ClassVar[HookDecision]
    HOOK_DECISION_ASK: _ClassVar[HookDecision]
    HOOK_DECISION_CONTINUE: _ClassVar[HookDecision]

class ActionKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACTION_KIND_UNSPECIFIED: _ClassVar[ActionKind]
    ACTION_KIND_COMMAND: _ClassVar[ActionKind]
    ACTION_KIND_WRITE: _ClassVar[ActionKind]
    ACTION_KIND_DELETE: _ClassVar[ActionKind]
    ACTION_KIND_NETWORK: _ClassVar[ActionKind]
    ACTION_KIND_MCP: _ClassVar[ActionKind]
    ACTION_KIND_PUSH: _ClassVar[ActionKind]

class Decision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DECISION_UNSPECIFIED: _ClassVar[Decision]
    DECISION_DENY: _ClassVar[Decision]
    DECISION_ONCE: _ClassVar[Decision]
    DECISION_SESSION: _ClassVar[Decision]
    DECISION_ALWAYS: _ClassVar[Decision]
SESSION_MODE_UNSPECIFIED: SessionMode
SESSION_MODE_ASK: SessionMode
SESSION_MODE_ACCEPT_EDITS: SessionMode
SESSION_MODE_READ_ONLY: SessionMode
SESSION_MODE_PLAN: SessionMode
SESSION_MODE_BYPASS: SessionMode
RULE_MATCH_UNSPECIFIED: RuleMatchKind
RULE_MATCH_EXACT: RuleMatchKind
RULE_MATCH_COMMAND_PREFIX: RuleMatchKind
RULE_MATCH_PATH_GLOB: RuleMatchKind
RULE_EFFECT_UNSPECIFIED: RuleEffect
RULE_EFFECT_ALLOW: RuleEffect
RULE_EFFECT_DENY: RuleEffect
EXPIRY_ACTION_UNSPECIFIED: ExpiryAction
EXPIRY_ACTION_DENY: ExpiryAction
EXPIRY_ACTION_UNANSWERED: ExpiryAction
HOOK_DECISION_NONE: HookDecision
HOOK_DECISION_ALLOW: HookDecision
HOOK_DECISION_DENY: HookDecision
HOOK_DECISION_ASK: HookDecision
HOOK_DECISION_CONTINUE: HookDecision
ACTION_KIND_UNSPECIFIED: ActionKind
ACTION_KIND_COMMAND: ActionKind
ACTION_KIND_WRITE: ActionKind
ACTION_KIND_DELETE: ActionKind
ACTION_KIND_NETWORK: ActionKind
ACTION_KIND_MCP: ActionKind
ACTION_KIND_PUSH: ActionKind
DECISION_UNSPECIFIED: Decision
DECISION_DENY: Decision
DECISION_ONCE: Decision
DECISION_SESSION: Decision
DECISION_ALWAYS: Decision

class Turn(_message.Message):
    __slots__ = ("text", "prompt", "plan", "read_only", "aside", "accepted", "image_ids", "max_turns", "fetch_grants", "max_cost_usd", "timeout", "command", "context", "mode")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    READ_ONLY_FIELD_NUMBER: _ClassVar[int]
    ASIDE_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    IMAGE_IDS_FIELD_NUMBER: _ClassVar[int]
    MAX_TURNS_FIELD_NUMBER: _ClassVar[int]
    FETCH_GRANTS_FIELD_NUMBER: _ClassVar[int]
    MAX_COST_USD_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    text: str
    prompt: str
    plan: bool
    read_only: str
    aside: bool
    accepted: bool
    image_ids: _containers.RepeatedScalarFieldContainer[str]
    max_turns: int
    fetch_grants: _containers.RepeatedScalarFieldContainer[str]
    max_cost_usd: float
    timeout: _duration_pb2.Duration
    command: bool
    context: _containers.RepeatedCompositeFieldContainer[ContextBlock]
    mode: SessionMode
    def __init__(self, text: _Optional[str] = ..., prompt: _Optional[str] = ..., plan: _Optional[bool] = ..., read_only: _Optional[str] = ..., aside: _Optional[bool] = ..., accepted: _Optional[bool] = ..., image_ids: _Optional[_Iterable[str]] = ..., max_turns: _Optional[int] = ..., fetch_grants: _Optional[_Iterable[str]] = ..., max_cost_usd: _Optional[float] = ..., timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., command: _Optional[bool] = ..., context: _Optional[_Iterable[_Union[ContextBlock, _Mapping]]] = ..., mode: _Optional[_Union[SessionMode, str]] = ...) -> None: ...

class ContextBlock(_message.Message):
    __slots__ = ("kind", "url", "title", "html", "text")
    KIND_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    HTML_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    kind: str
    url: str
    title: str
    html: str
    text: str
    def __init__(self, kind: _Optional[str] = ..., url: _Optional[str] = ..., title: _Optional[str] = ..., html: _Optional[str] = ..., text: _Optional[str] = ...) -> None: ...

class TurnEvent(_message.Message):
    __slots__ = ("author", "accepted", "text", "tool_call", "tool_result", "approval_request", "question", "finished", "tasks", "notice", "flow_step", "resolution", "usage", "history_trimmed", "session_state", "file_changed", "tool_output", "plan_proposed", "plan_decision", "rewound", "hook", "seq", "session_id", "turn_id", "time", "step")
    AUTHOR_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    TOOL_RESULT_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_REQUEST_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    NOTICE_FIELD_NUMBER: _ClassVar[int]
    FLOW_STEP_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    HISTORY_TRIMMED_FIELD_NUMBER: _ClassVar[int]
    SESSION_STATE_FIELD_NUMBER: _ClassVar[int]
    FILE_CHANGED_FIELD_NUMBER: _ClassVar[int]
    TOOL_OUTPUT_FIELD_NUMBER: _ClassVar[int]
    PLAN_PROPOSED_FIELD_NUMBER: _ClassVar[int]
    PLAN_DECISION_FIELD_NUMBER: _ClassVar[int]
    REWOUND_FIELD_NUMBER: _ClassVar[int]
    HOOK_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    author: str
    accepted: Accepted
    text: Text
    tool_call: ToolCall
    tool_result: ToolResult
    approval_request: ApprovalRequest
    question: Question
    finished: TurnFinished
    tasks: Tasks
    notice: Notice
    flow_step: FlowStep
    resolution: Resolution
    usage: Usage
    history_trimmed: HistoryTrimmed
    session_state: SessionStateChange
    file_changed: FileChanged
    tool_output: ToolOutput
    plan_proposed: PlanProposed
    plan_decision: PlanDecision
    rewound: Rewound
    hook: HookOutcome
    seq: int
    session_id: str
    turn_id: str
    time: _timestamp_pb2.Timestamp
    step: FlowStepRef
    def __init__(self, author: _Optional[str] = ..., accepted: _Optional[_Union[Accepted, _Mapping]] = ..., text: _Optional[_Union[Text, _Mapping]] = ..., tool_call: _Optional[_Union[ToolCall, _Mapping]] = ..., tool_result: _Optional[_Union[ToolResult, _Mapping]] = ..., approval_request: _Optional[_Union[ApprovalRequest, _Mapping]] = ..., question: _Optional[_Union[Question, _Mapping]] = ..., finished: _Optional[_Union[TurnFinished, _Mapping]] = ..., tasks: _Optional[_Union[Tasks, _Mapping]] = ..., notice: _Optional[_Union[Notice, _Mapping]] = ..., flow_step: _Optional[_Union[FlowStep, _Mapping]] = ..., resolution: _Optional[_Union[Resolution, _Mapping]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., history_trimmed: _Optional[_Union[HistoryTrimmed, _Mapping]] = ..., session_state: _Optional[_Union[SessionStateChange, _Mapping]] = ..., file_changed: _Optional[_Union[FileChanged, _Mapping]] = ..., tool_output: _Optional[_Union[ToolOutput, _Mapping]] = ..., plan_proposed: _Optional[_Union[PlanProposed, _Mapping]] = ..., plan_decision: _Optional[_Union[PlanDecision, _Mapping]] = ..., rewound: _Optional[_Union[Rewound, _Mapping]] = ..., hook: _Optional[_Union[HookOutcome, _Mapping]] = ..., seq: _Optional[int] = ..., session_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., step: _Optional[_Union[FlowStepRef, _Mapping]] = ...) -> None: ...

class FlowStepRef(_message.Message):
    __slots__ = ("run", "id", "index")
    RUN_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    run: str
    id: str
    index: int
    def __init__(self, run: _Optional[str] = ..., id: _Optional[str] = ..., index: _Optional[int] = ...) -> None: ...

class PlanProposed(_message.Message):
    __slots__ = ("plan_id", "plan", "tasks")
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    PLAN_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    plan_id: str
    plan: str
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    def __init__(self, plan_id: _Optional[str] = ..., plan: _Optional[str] = ..., tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ...) -> None: ...

class PlanDecision(_message.Message):
    __slots__ = ("plan_id", "approved", "feedback", "decided_by")
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    APPROVED_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_FIELD_NUMBER: _ClassVar[int]
    DECIDED_BY_FIELD_NUMBER: _ClassVar[int]
    plan_id: str
    approved: bool
    feedback: str
    decided_by: str
    def __init__(self, plan_id: _Optional[str] = ..., approved: _Optional[bool] = ..., feedback: _Optional[str] = ..., decided_by: _Optional[str] = ...) -> None: ...

class FlowStep(_message.Message):
    __slots__ = ("workflow", "id", "title", "type", "index", "count", "status", "output", "error", "run")
    WORKFLOW_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    workflow: str
    id: str
    title: str
    type: str
    index: int
    count: int
    status: str
    output: str
    error: str
    run: str
    def __init__(self, workflow: _Optional[str] = ..., id: _Optional[str] = ..., title: _Optional[str] = ..., type: _Optional[str] = ..., index: _Optional[int] = ..., count: _Optional[int] = ..., status: _Optional[str] = ..., output: _Optional[str] = ..., error: _Optional[str] = ..., run: _Optional[str] = ...) -> None: ...

class Notice(_message.Message):
    __slots__ = ("text", "error", "transient")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    TRANSIENT_FIELD_NUMBER: _ClassVar[int]
    text: str
    error: bool
    transient: bool
    def __init__(self, text: _Optional[str] = ..., error: _Optional[bool] = ..., transient: _Optional[bool] = ...) -> None: ...

class HistoryTrimmed(_message.Message):
    __slots__ = ("dropped_messages", "kept_turns", "reason")
    DROPPED_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    KEPT_TURNS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    dropped_messages: int
    kept_turns: int
    reason: str
    def __init__(self, dropped_messages: _Optional[int] = ..., kept_turns: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class SessionStateChange(_message.Message):
    __slots__ = ("state", "turn_id", "reason")
    class State(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        SESSION_STATE_UNSPECIFIED: _ClassVar[SessionStateChange.State]
        SESSION_STATE_IDLE: _ClassVar[SessionStateChange.State]
        SESSION_STATE_RUNNING: _ClassVar[SessionStateChange.State]
        SESSION_STATE_PARKED: _ClassVar[SessionStateChange.State]
        SESSION_STATE_CLOSED: _ClassVar[SessionStateChange.State]
        STATE_UNSPECIFIED: _ClassVar[SessionStateChange.State]
        STATE_IDLE: _ClassVar[SessionStateChange.State]
        STATE_RUNNING: _ClassVar[SessionStateChange.State]
        STATE_PARKED: _ClassVar[SessionStateChange.State]
        STATE_CLOSED: _ClassVar[SessionStateChange.State]
    SESSION_STATE_UNSPECIFIED: SessionStateChange.State
    SESSION_STATE_IDLE: SessionStateChange.State
    SESSION_STATE_RUNNING: SessionStateChange.State
    SESSION_STATE_PARKED: SessionStateChange.State
    SESSION_STATE_CLOSED: SessionStateChange.State
    STATE_UNSPECIFIED: SessionStateChange.State
    STATE_IDLE: SessionStateChange.State
    STATE_RUNNING: SessionStateChange.State
    STATE_PARKED: SessionStateChange.State
    STATE_CLOSED: SessionStateChange.State
    STATE_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    state: SessionStateChange.State
    turn_id: str
    reason: str
    def __init__(self, state: _Optional[_Union[SessionStateChange.State, str]] = ..., turn_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class FileChanged(_message.Message):
    __slots__ = ("path", "kind", "tool_call_id")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[FileChanged.Kind]
        KIND_CREATED: _ClassVar[FileChanged.Kind]
        KIND_MODIFIED: _ClassVar[FileChanged.Kind]
        KIND_DELETED: _ClassVar[FileChanged.Kind]
    KIND_UNSPECIFIED: FileChanged.Kind
    KIND_CREATED: FileChanged.Kind
    KIND_MODIFIED: FileChanged.Kind
    KIND_DELETED: FileChanged.Kind
    PATH_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    path: str
    kind: FileChanged.Kind
    tool_call_id: str
    def __init__(self, path: _Optional[str] = ..., kind: _Optional[_Union[FileChanged.Kind, str]] = ..., tool_call_id: _Optional[str] = ...) -> None: ...

class Rewound(_message.Message):
    __slots__ = ("to_turn_id", "dropped_turn_ids", "restored_paths", "unrestored_paths", "files")
    TO_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    DROPPED_TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    RESTORED_PATHS_FIELD_NUMBER: _ClassVar[int]
    UNRESTORED_PATHS_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    to_turn_id: str
    dropped_turn_ids: _containers.RepeatedScalarFieldContainer[str]
    restored_paths: _containers.RepeatedScalarFieldContainer[str]
    unrestored_paths: _containers.RepeatedScalarFieldContainer[str]
    files: bool
    def __init__(self, to_turn_id: _Optional[str] = ..., dropped_turn_ids: _Optional[_Iterable[str]] = ..., restored_paths: _Optional[_Iterable[str]] = ..., unrestored_paths: _Optional[_Iterable[str]] = ..., files: _Optional[bool] = ...) -> None: ...

class Tasks(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[Task]
    def __init__(self, items: _Optional[_Iterable[_Union[Task, _Mapping]]] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("content", "status", "id")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    content: str
    status: str
    id: str
    def __init__(self, content: _Optional[str] = ..., status: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class Accepted(_message.Message):
    __slots__ = ("turn",)
    TURN_FIELD_NUMBER: _ClassVar[int]
    turn: Turn
    def __init__(self, turn: _Optional[_Union[Turn, _Mapping]] = ...) -> None: ...

class Text(_message.Message):
    __slots__ = ("text", "partial", "repeat", "thought")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    REPEAT_FIELD_NUMBER: _ClassVar[int]
    THOUGHT_FIELD_NUMBER: _ClassVar[int]
    text: str
    partial: bool
    repeat: bool
    thought: bool
    def __init__(self, text: _Optional[str] = ..., partial: _Optional[bool] = ..., repeat: _Optional[bool] = ..., thought: _Optional[bool] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "name", "args", "partial")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    args: _struct_pb2.Struct
    partial: bool
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., args: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., partial: _Optional[bool] = ...) -> None: ...

class ToolResult(_message.Message):
    __slots__ = ("id", "name", "result", "is_error", "duration")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    IS_ERROR_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    result: _struct_pb2.Struct
    is_error: bool
    duration: _duration_pb2.Duration
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., result: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., is_error: _Optional[bool] = ..., duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ToolOutput(_message.Message):
    __slots__ = ("id", "name", "output")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    output: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., output: _Optional[str] = ...) -> None: ...

class ApprovalRequest(_message.Message):
    __slots__ = ("request_id", "tool", "kind", "detail", "diff", "scope_label", "agent", "task_id", "expire_time", "on_expire", "available_decisions", "suggested_rule", "destructive", "hook_edit", "asked_by_hook")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    DIFF_FIELD_NUMBER: _ClassVar[int]
    SCOPE_LABEL_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    ON_EXPIRE_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_DECISIONS_FIELD_NUMBER: _ClassVar[int]
    SUGGESTED_RULE_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_FIELD_NUMBER: _ClassVar[int]
    HOOK_EDIT_FIELD_NUMBER: _ClassVar[int]
    ASKED_BY_HOOK_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    tool: str
    kind: ActionKind
    detail: str
    diff: str
    scope_label: str
    agent: str
    task_id: str
    expire_time: _timestamp_pb2.Timestamp
    on_expire: ExpiryAction
    available_decisions: _containers.RepeatedScalarFieldContainer[Decision]
    suggested_rule: RuleMatch
    destructive: bool
    hook_edit: HookEdit
    asked_by_hook: str
    def __init__(self, request_id: _Optional[str] = ..., tool: _Optional[str] = ..., kind: _Optional[_Union[ActionKind, str]] = ..., detail: _Optional[str] = ..., diff: _Optional[str] = ..., scope_label: _Optional[str] = ..., agent: _Optional[str] = ..., task_id: _Optional[str] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., on_expire: _Optional[_Union[ExpiryAction, str]] = ..., available_decisions: _Optional[_Iterable[_Union[Decision, str]]] = ..., suggested_rule: _Optional[_Union[RuleMatch, _Mapping]] = ..., destructive: _Optional[bool] = ..., hook_edit: _Optional[_Union[HookEdit, _Mapping]] = ..., asked_by_hook: _Optional[str] = ...) -> None: ...

class HookEdit(_message.Message):
    __slots__ = ("hook_id", "original_input", "input")
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_INPUT_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    hook_id: str
    original_input: _struct_pb2.Struct
    input: _struct_pb2.Struct
    def __init__(self, hook_id: _Optional[str] = ..., original_input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class RuleMatch(_message.Message):
    __slots__ = ("match", "pattern", "effect", "lasts", "label")
    MATCH_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    LASTS_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    match: RuleMatchKind
    pattern: str
    effect: RuleEffect
    lasts: _duration_pb2.Duration
    label: str
    def __init__(self, match: _Optional[_Union[RuleMatchKind, str]] = ..., pattern: _Optional[str] = ..., effect: _Optional[_Union[RuleEffect, str]] = ..., lasts: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., label: _Optional[str] = ...) -> None: ...

class Question(_message.Message):
    __slots__ = ("request_id", "question", "options", "agent", "task_id", "multi_select", "expire_time", "on_expire", "form", "mcp_server")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    QUESTION_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    AGENT_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    MULTI_SELECT_FIELD_NUMBER: _ClassVar[int]
    EXPIRE_TIME_FIELD_NUMBER: _ClassVar[int]
    ON_EXPIRE_FIELD_NUMBER: _ClassVar[int]
    FORM_FIELD_NUMBER: _ClassVar[int]
    MCP_SERVER_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    question: str
    options: _containers.RepeatedScalarFieldContainer[str]
    agent: str
    task_id: str
    multi_select: bool
    expire_time: _timestamp_pb2.Timestamp
    on_expire: ExpiryAction
    form: _struct_pb2.Struct
    mcp_server: str
    def __init__(self, request_id: _Optional[str] = ..., question: _Optional[str] = ..., options: _Optional[_Iterable[str]] = ..., agent: _Optional[str] = ..., task_id: _Optional[str] = ..., multi_select: _Optional[bool] = ..., expire_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., on_expire: _Optional[_Union[ExpiryAction, str]] = ..., form: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., mcp_server: _Optional[str] = ...) -> None: ...

class Resolution(_message.Message):
    __slots__ = ("request_id", "decision", "answers", "reason", "command", "resolved_by", "via", "rule_id", "interrupt", "values", "declined", "client", "saved_rule")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_BY_FIELD_NUMBER: _ClassVar[int]
    VIA_FIELD_NUMBER: _ClassVar[int]
    RULE_ID_FIELD_NUMBER: _ClassVar[int]
    INTERRUPT_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    DECLINED_FIELD_NUMBER: _ClassVar[int]
    CLIENT_FIELD_NUMBER: _ClassVar[int]
    SAVED_RULE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    decision: Decision
    answers: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    command: str
    resolved_by: str
    via: str
    rule_id: str
    interrupt: bool
    values: _struct_pb2.Struct
    declined: bool
    client: str
    saved_rule: RuleMatch
    def __init__(self, request_id: _Optional[str] = ..., decision: _Optional[_Union[Decision, str]] = ..., answers: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ..., command: _Optional[str] = ..., resolved_by: _Optional[str] = ..., via: _Optional[str] = ..., rule_id: _Optional[str] = ..., interrupt: _Optional[bool] = ..., values: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., declined: _Optional[bool] = ..., client: _Optional[str] = ..., saved_rule: _Optional[_Union[RuleMatch, _Mapping]] = ...) -> None: ...

class HookOutcome(_message.Message):
    __slots__ = ("hook_id", "event", "decision", "reason", "updated_input", "additional_context", "failed", "error", "duration", "tool", "tool_call_id", "system_message")
    HOOK_ID_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    UPDATED_INPUT_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DURATION_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    hook_id: str
    event: str
    decision: HookDecision
    reason: str
    updated_input: _struct_pb2.Struct
    additional_context: str
    failed: bool
    error: str
    duration: _duration_pb2.Duration
    tool: str
    tool_call_id: str
    system_message: str
    def __init__(self, hook_id: _Optional[str] = ..., event: _Optional[str] = ..., decision: _Optional[_Union[HookDecision, str]] = ..., reason: _Optional[str] = ..., updated_input: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., additional_context: _Optional[str] = ..., failed: _Optional[bool] = ..., error: _Optional[str] = ..., duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., tool: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., system_message: _Optional[str] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("calls", "input", "cached", "cache_write", "output", "last_prompt", "cost_usd", "priced", "search_queries", "search_cost_usd", "tokens_unknown", "model")
    CALLS_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    CACHED_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    LAST_PROMPT_FIELD_NUMBER: _ClassVar[int]
    COST_USD_FIELD_NUMBER: _ClassVar[int]
    PRICED_FIELD_NUMBER: _ClassVar[int]
    SEARCH_QUERIES_FIELD_NUMBER: _ClassVar[int]
    SEARCH_COST_USD_FIELD_NUMBER: _ClassVar[int]
    TOKENS_UNKNOWN_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    calls: int
    input: int
    cached: int
    cache_write: int
    output: int
    last_prompt: int
    cost_usd: float
    priced: bool
    search_queries: int
    search_cost_usd: float
    tokens_unknown: bool
    model: str
    def __init__(self, calls: _Optional[int] = ..., input: _Optional[int] = ..., cached: _Optional[int] = ..., cache_write: _Optional[int] = ..., output: _Optional[int] = ..., last_prompt: _Optional[int] = ..., cost_usd: _Optional[float] = ..., priced: _Optional[bool] = ..., search_queries: _Optional[int] = ..., search_cost_usd: _Optional[float] = ..., tokens_unknown: _Optional[bool] = ..., model: _Optional[str] = ...) -> None: ...

class TurnFinished(_message.Message):
    __slots__ = ("output", "before", "after", "leftover", "error")
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    LEFTOVER_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    output: str
    before: Usage
    after: Usage
    leftover: _containers.RepeatedScalarFieldContainer[str]
    error: ErrorInfo
    def __init__(self, output: _Optional[str] = ..., before: _Optional[_Union[Usage, _Mapping]] = ..., after: _Optional[_Union[Usage, _Mapping]] = ..., leftover: _Optional[_Iterable[str]] = ..., error: _Optional[_Union[ErrorInfo, _Mapping]] = ...) -> None: ...

class ErrorInfo(_message.Message):
    __slots__ = ("reason", "metadata", "message")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REASON_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    reason: str
    metadata: _containers.ScalarMap[str, str]
    message: str
    def __init__(self, reason: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., message: _Optional[str] = ...) -> None: ...
