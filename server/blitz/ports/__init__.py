"""The ports: the contracts between the layers, owned by none of them.

`agent` is what the core and an agent say to each other for one turn; `session` and
`webhooks` are what the transports ask of the core, and `services` how the transports are
handed them (each service's port by the service's name); `links` is what the HTTP port's
approval links and Slack's buttons ask of it. Adapters implement them;
`blitz.assembly` wires them up.
"""

from blitz.ports.agent import (
    AgentPort,
    AnswerResult,
    ApprovalResult,
    Completed,
    ImageInput,
    ModelCallUsage,
    Parked,
    Resolution,
    RuleDecision,
    TurnIO,
    TurnPolicy,
)
from blitz.ports.links import LinkPort, LinkState, LinkView, SlackAnswer, SlackPort
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
    "Completed",
    "ImageInput",
    "LinkPort",
    "LinkState",
    "LinkView",
    "ModelCallUsage",
    "Parked",
    "Resolution",
    "RuleDecision",
    "ServicePorts",
    "SessionPort",
    "SlackAnswer",
    "SlackPort",
    "TurnIO",
    "TurnPolicy",
    "WebhookPort",
    "WorkflowPort",
    "WorkspacePort",
]
