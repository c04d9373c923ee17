"""The ports: the contracts between the layers, owned by none of them.

`agent` is what the core and an agent say to each other for one turn; `session`,
`webhooks`, `schedules` and `hooks` are what the transports ask of the core, and
`services` how the transports are handed them (each service's port by the service's
name); `links` is what the HTTP port's approval links and Slack's buttons ask of it;
`hooks` also says how the core has a hook's command run; `gate` is the one order in which
an action that may need a person is decided, which every agent calls. Adapters implement
them; `blitz.assembly` wires them up.
"""

from blitz.ports.agent import (
    AgentPort,
    AnswerResult,
    ApprovalResult,
    Completed,
    HookVerdict,
    ImageInput,
    ModelCallUsage,
    Parked,
    Reshape,
    Resolution,
    Rewrites,
    RuleDecision,
    TurnIO,
    TurnPolicy,
)
from blitz.ports.gate import Verdict, decide_action
from blitz.ports.hooks import CommandRun, HookCommands, HookPort
from blitz.ports.links import LinkPort, LinkState, LinkView, SlackAnswer, SlackPort
from blitz.ports.schedules import SchedulePort
from blitz.ports.services import ServicePorts
from blitz.ports.session import (
    Authenticate,
    CallContext,
    SessionPort,
    WorkflowPort,
    WorkspacePort,
)
from blitz.ports.webhooks import WebhookPort

__all__ = [
    "AgentPort",
    "AnswerResult",
    "ApprovalResult",
    "Authenticate",
    "CallContext",
    "CommandRun",
    "Completed",
    "HookCommands",
    "HookPort",
    "HookVerdict",
    "ImageInput",
    "LinkPort",
    "LinkState",
    "LinkView",
    "ModelCallUsage",
    "Parked",
    "Reshape",
    "Resolution",
    "Rewrites",
    "RuleDecision",
    "SchedulePort",
    "ServicePorts",
    "SessionPort",
    "SlackAnswer",
    "SlackPort",
    "TurnIO",
    "TurnPolicy",
    "Verdict",
    "WebhookPort",
    "WorkflowPort",
    "WorkspacePort",
    "decide_action",
]
