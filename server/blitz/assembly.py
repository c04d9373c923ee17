"""The server's parts built from the settings and wired together, in one place.

This builds, in order: the store, authentication, the agent, the event log, the locks,
the turn driver with what it drives turns with (the pending requests, the checkpoints,
the workflow runs, the sessions' hooks), the six services over them (`SessionCore`,
`WorkspaceCore`, `WebhookCore`, `WorkflowCore`, `ScheduleCore`, whose scheduler fires the
schedules, and `HookCore`), and
the approval links and Slack's buttons, which answer through the session core
(`blitz.core.links`). Each part is handed exactly what it needs,
by keyword; none reaches through another for a third. What the transports serve comes out
as one mapping, each service's port by the service's full name (`blitz.ports.ServicePorts`,
keyed as `blitz.transport.methods.SERVICES`): a new service is its proto, its port, its
core and one entry in `_services`.

`open_core` is all of it as one `async with` resource: `blitz.server` puts the transports
in front of it, and benchmarks and tests of the core call its ports directly. With
`blitz.server`, this is the one place that knows the concrete parts; it must hold no
business rule and read no environment.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from blitz.acp.claims import NoAgentsDeclared
from blitz.agent import (
    Agent,
    BoxSpec,
    CommandLimits,
    CommandSandbox,
    FetchLimits,
    Isolation,
    ModelAccess,
    RetryPolicy,
    available_models,
    isolation,
    load_mcp_config,
)
from blitz.agent.hook_commands import BoxedHookCommands
from blitz.auth import Authenticator, ServeRefused, authentication
from blitz.config import Settings, hidden_paths, refused_bind
from blitz.config.agents import BUILTIN_AGENT
from blitz.core import Retries, ServerFacts, SessionCore, WebhookCore, WorkflowCore, WorkspaceCore
from blitz.core.api.service import CHECKPOINT_TURNS, FindSession, replica_name
from blitz.core.api.workspace_service import IMAGE_MAX_BYTES
from blitz.core.driver.interactions import Interactions
from blitz.core.driver.push import PushRunner
from blitz.core.driver.recovery import Recovery
from blitz.core.driver.runners import (
    AgentRunner,
    CommandRunner,
    OpenWorkspace,
    Runners,
    TurnRunner,
    open_workspace,
)
from blitz.core.driver.turns import Turns
from blitz.core.events.event_log import EventLog
from blitz.core.events.session_feed import SessionFeed
from blitz.core.files.checkpoints import Checkpoints
from blitz.core.hook_service import HookCore
from blitz.core.hook_service.declared import declared_specs
from blitz.core.hooks.directory import HookDirectory
from blitz.core.hooks.http import HttpHooks
from blitz.core.hooks.running import HookRunner
from blitz.core.hooks.turn_hooks import TurnHooks
from blitz.core.links import KEY_NAME, LinkCore, LinkMaker, LinkSigner, SlackActions, new_key
from blitz.core.locks import SessionLocks
from blitz.core.requests.deadlines import Deadlines
from blitz.core.requests.pending import PendingRequests
from blitz.core.schedules import Firings, ScheduleCore
from blitz.core.schedules.firing import IsAdmin
from blitz.core.supervisor import Supervisor
from blitz.core.workflows.workflow_runs import WorkflowRuns
from blitz.outbound import AddressPolicy, parse_ranges
from blitz.ports import AgentPort, HookCommands, LinkPort, ServicePorts, SlackPort
from blitz.redact import add_known_secrets
from blitz.repos import Credential, RepoSettings, Repositories
from blitz.store import Store, open_store
from blitz.tracing import Tracing
from blitz.transport import MAX_REQUEST_BYTES
from blitz.transport.methods import (
    HOOK_SERVICE,
    SCHEDULE_SERVICE,
    SESSION_SERVICE,
    WEBHOOK_SERVICE,
    WORKFLOW_SERVICE,
    WORKSPACE_SERVICE,
)
from blitz.v1 import session_pb2 as s

if TYPE_CHECKING:  # imported where an agent is declared: the ACP SDK is slow to load
    from blitz.acp.processes import AgentProcesses

__all__ = ["Core", "open_core"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Core:
    """What the assembly built, for the transports to be put in front of."""

    # Each service's port by the service's full name: what the transports serve.
    ports: ServicePorts
    # Who each call is from (`blitz.auth`); it may need no token until one is made.
    authenticator: Authenticator
    # The store, for readiness (`/readyz` pings it) and for tests that arrange records.
    store: Store
    # What confines the agent's commands (`blitz.agent.Isolation`'s value).
    commands: str
    # The approval links' pages and Slack's buttons, for the HTTP port (None: not served).
    links: LinkPort | None = None
    slack: SlackPort | None = None


@asynccontextmanager
async def open_core(settings: Settings, *, tracing: Tracing | None = None) -> AsyncIterator[Core]:
    """Every part, opened in order and closed in reverse.

    Raises ServeRefused when the server would be reachable beyond loopback with no token,
    or a webhook the configuration declares cannot be served.
    """
    add_known_secrets(
        [
            settings.openai_api_key,
            settings.anthropic_api_key,
            settings.compatible_api_key,
            settings.slack_signing_secret,
        ]
    )
    settings.workspace_root.mkdir(parents=True, exist_ok=True)
    if "://" not in settings.database:
        Path(settings.database).parent.mkdir(parents=True, exist_ok=True)
    access = ModelAccess(
        openai_api_key=settings.openai_api_key,
        openai_base_url=settings.openai_base_url,
        anthropic_api_key=settings.anthropic_api_key,
        anthropic_base_url=settings.anthropic_base_url,
        compatible_base_url=settings.base_url,
        compatible_api_key=settings.compatible_api_key,
        compatible_images=settings.compatible_images,
        default_context_window=settings.context_window,
    )
    sandbox = _sandbox(settings)
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(
            open_store(settings.database, lease=settings.turn_lease)
        )
        authenticator = await authentication(settings, store)
        _check_confinement(settings, sandbox, authenticator)
        features = ("tls",) if settings.tls_cert else ()
        processes = _agent_processes(settings, sandbox)
        if processes is not None:
            await stack.enter_async_context(processes)
        facts = ServerFacts(
            models=tuple(available_models(access)),
            limits={"request_bytes": MAX_REQUEST_BYTES, "image_bytes": IMAGE_MAX_BYTES},
            features=(*features, "tokens") if authenticator.required else features,
            command_isolation=sandbox.isolation.value,
            agents=partial(_agents, processes),
            default_agent=settings.default_agent,
            repositories=bool(settings.repo_allow),
        )
        agent = await stack.enter_async_context(
            Agent(
                command_timeout=settings.command_timeout,
                sandbox=sandbox,
                output_cap=settings.output_cap,
                access=access,
                retry=RetryPolicy(retries=settings.model_retries, first_delay=settings.retry_delay),
                fetch=FetchLimits(
                    allow_local=settings.fetch_allow_local, max_bytes=settings.fetch_max_bytes
                ),
                mcp_servers=load_mcp_config(settings.mcp_config) if settings.mcp_config else (),
                history_turns=settings.history_turns,
                tracer_provider=tracing.provider if tracing else None,
            )
        )
        signer, maker = await _link_maker(settings, store)
        sessions, ports = await _services(
            stack,
            settings,
            store=store,
            agent=agent,
            processes=processes,
            facts=facts,
            tracing=tracing,
            links=maker,
            is_admin=authenticator.is_admin,
            hook_commands=BoxedHookCommands(sandbox=sandbox),
        )
        authenticator.on_required = partial(_tokens_now_required, settings, sandbox, sessions)
        links = LinkCore(
            signer=signer, store=store, resolver=sessions, public_url=settings.public_url
        )
        slack = await stack.enter_async_context(
            SlackActions(
                links=links,
                signing_secret=settings.slack_signing_secret,
                users=settings.slack_users,
                is_admin=authenticator.is_admin,
                policy=AddressPolicy(ranges=parse_ranges(settings.webhook_allow_private)),
                timeout=settings.webhook_timeout,
            )
        )
        yield Core(
            ports=ports,
            authenticator=authenticator,
            store=store,
            commands=sandbox.isolation.value,
            links=links,
            slack=slack,
        )


async def _link_maker(settings: Settings, store: Store) -> tuple[LinkSigner, LinkMaker | None]:
    """The key approval links are signed with (the store's, made at the first start), and
    what makes a delivery's links: none without a public URL to link to."""
    signer = LinkSigner(await store.server_key(KEY_NAME, new=new_key()))
    if not settings.public_url:
        log.warning(
            "no --public-url: webhook notifications carry no links or Slack buttons that"
            " answer an approval or a question (docs/webhooks.md, Approval links)"
        )
        return signer, None
    return signer, LinkMaker(signer=signer, public_url=settings.public_url, ttl=settings.link_ttl)


async def _services(
    stack: AsyncExitStack,
    settings: Settings,
    *,
    store: Store,
    agent: AgentPort,
    processes: AgentProcesses | None,
    facts: ServerFacts,
    tracing: Tracing | None,
    links: LinkMaker | None = None,
    is_admin: IsAdmin | None = None,
    hook_commands: HookCommands | None = None,
) -> tuple[SessionCore, ServicePorts]:
    """The event log, the locks, the turn driver and the workflow runs, and the four
    services over them, opened on `stack` (closed in reverse: the turns drained, then the
    deadlines' timers, then the event log flushed); the session core, and every service's
    port by the service's full name."""
    root = settings.workspace_root
    workflows_dir = Path(settings.workflows_dir) if settings.workflows_dir else None
    replica = replica_name()
    event_log = await stack.enter_async_context(EventLog(store))
    feed = SessionFeed()
    event_log.on_changed(feed.changed)
    timers = Supervisor("deadlines")
    stack.push_async_callback(timers.aclose)
    locks = SessionLocks()
    pending = PendingRequests(
        store=store,
        log=event_log,
        locks=locks,
        deadlines=Deadlines(timers),
        approval_timeout=_timedelta_or_none(settings.approval_timeout),
    )
    interactions = Interactions()
    repos = _repositories(settings)
    checkpoints = Checkpoints(
        store=store,
        log=event_log,
        workspace_root=root,
        keep_turns=CHECKPOINT_TURNS,
        repos=repos,
    )
    opener = partial(open_workspace, root)
    runs = WorkflowRuns(
        store=store,
        log=event_log,
        agent=agent,
        workspace_root=root,
        workflows_dir=workflows_dir,
        open_workspace=opener,
    )
    # What carries out each kind of turn, asked in order: the first that claims it runs it.
    runners = Runners(
        (
            PushRunner(repos=repos, open_workspace=opener),
            runs,
            _acp_runner(store, processes, checkpoints, opener),
            CommandRunner(store=store, agent=agent),
            AgentRunner(store=store, agent=agent, open_workspace=opener),
        )
    )
    # The sessions' hooks (docs/hooks.md): a command hook runs in the command box, an HTTP
    # hook reaches what a webhook may.
    try:
        directory = HookDirectory(store=store, declared=declared_specs(settings.hooks))
    except ValueError as exc:
        raise ServeRefused(f"hooks: {exc}") from None
    hook_policy = AddressPolicy(ranges=parse_ranges(settings.webhook_allow_private))
    hook_runner = HookRunner(
        commands=hook_commands,
        http=await stack.enter_async_context(HttpHooks(policy=hook_policy)),
    )
    turns = Turns(
        store=store,
        log=event_log,
        runners=runners,
        locks=locks,
        pending=pending,
        default_max_turns=settings.max_turns,
        default_timeout=_timedelta_or_none(settings.turn_timeout),
        owner=replica,
        lease=settings.turn_lease,
        interactions=interactions,
        checkpoints=checkpoints,
        max_running=settings.max_running_turns,
        refuse_when_full=settings.when_full == "refuse",
        tracer=tracing.tracer("blitz.core") if tracing else None,
        hooks=TurnHooks(
            hooks_of=directory.hooks_for,
            runner=hook_runner,
            log=event_log,
            store=store,
            pending=pending,
            open_workspace=opener,
        ),
    )
    sessions = await stack.enter_async_context(
        SessionCore(
            store=store,
            agent=agent,
            log=event_log,
            locks=locks,
            turns=turns,
            pending=pending,
            interactions=interactions,
            checkpoints=checkpoints,
            recovery=Recovery(store=store, log=event_log, turns=turns, pending=pending),
            workspace_root=root,
            default_model=settings.model,
            drain_timeout=settings.drain_timeout,
            facts=facts,
            allow_bypass_mode=settings.allow_bypass_mode,
            repos=repos,
            feed=feed,
        )
    )
    find_session = sessions.session_record
    webhooks = await stack.enter_async_context(
        _webhooks(
            settings,
            store=store,
            event_log=event_log,
            replica=replica,
            find_session=find_session,
            links=links,
        )
    )
    workflows = WorkflowCore(
        find_session=find_session,
        run_turn=sessions.run_turn,
        runs=runs,
        workspace_root=root,
        workflows_dir=workflows_dir,
        start_turn=sessions.start_turn,
    )
    schedules = await stack.enter_async_context(
        ScheduleCore(
            store=store,
            find_session=find_session,
            firings=Firings(
                store=store,
                create_session=sessions.create_session,
                start_turn=sessions.start_turn,
                start_workflow=workflows.start_workflow,
                is_admin=is_admin or _no_admins,
                holder=replica,
            ),
            lease=settings.turn_lease,
        )
    )
    # Each service's port: the transports serve exactly these.
    return sessions, {
        SESSION_SERVICE.full_name: sessions,
        WORKSPACE_SERVICE.full_name: WorkspaceCore(
            find_session=find_session,
            store=store,
            workspace_root=root,
            repos=repos,
            start_turn=sessions.start_turn,
        ),
        WEBHOOK_SERVICE.full_name: webhooks,
        WORKFLOW_SERVICE.full_name: workflows,
        SCHEDULE_SERVICE.full_name: schedules,
        HOOK_SERVICE.full_name: HookCore(
            store=store,
            directory=directory,
            runner=hook_runner,
            find_session=find_session,
            open_workspace=opener,
            policy=hook_policy,
            scratch=root,
        ),
    }


async def _no_admins(name: str) -> bool:
    """Whether a schedule's owner is an admin, where no authentication says: none is."""
    return False


def _agent_processes(settings: Settings, sandbox: CommandSandbox) -> AgentProcesses | None:
    """The ACP agents' processes (docs/agents.md), None where no agent is declared;
    ServeRefused when the default agent is none of those declared, or an agent's binds
    would show it the server's own files."""
    names = {BUILTIN_AGENT, *(a.name for a in settings.agents)}
    if settings.default_agent not in names:
        raise ServeRefused(
            f"--default-agent {settings.default_agent!r} is neither {BUILTIN_AGENT!r} nor a"
            " declared agent"
        )
    for declared in settings.agents:
        if why := refused_bind(replace(settings, command_binds=declared.binds)):
            raise ServeRefused(f"agent {declared.name!r}: binds: {why}")
    if not settings.agents:
        return None
    from blitz.acp.processes import AgentProcesses
    from blitz.acp.terminals import TerminalLimits

    return AgentProcesses(
        agents={a.name: a for a in settings.agents},
        data_dir=settings.data_dir,
        sandbox=sandbox,
        terminals=TerminalLimits(
            sandbox=sandbox, time_limit=settings.command_timeout, output_cap=settings.output_cap
        ),
        max_processes=settings.max_agent_processes,
    )


def _repositories(settings: Settings) -> Repositories:
    """Sessions from a repository: the sources allowed, the credentials git is given,
    Blitz's own git data for each under `--repo-dir` (docs/repositories.md). There
    even when no source is allowed: a session made before still diffs and pushes."""
    add_known_secrets([c.password for c in settings.repo_credentials])
    return Repositories(
        RepoSettings(
            data_dir=settings.repo_dir.resolve(),
            allow=settings.repo_allow,
            max_size=settings.repo_max_size,
            timeout=settings.repo_timeout,
            credentials=tuple(
                Credential(
                    url_prefix=c.url,
                    username=c.username,
                    password=c.password,
                    principals=c.principals,
                )
                for c in settings.repo_credentials
            ),
            push_default_branch=settings.repo_push_default_branch,
            author=settings.repo_author,
        )
    )


def _acp_runner(
    store: Store,
    processes: AgentProcesses | None,
    checkpoints: Checkpoints,
    opener: OpenWorkspace,
) -> TurnRunner:
    """What carries out ACP sessions' turns: `AcpRunner` where agents are declared; where
    none is, a runner that ends them AGENT_UNAVAILABLE, and no import of the ACP SDK."""
    if processes is None:
        return NoAgentsDeclared()
    from blitz.acp.runner import AcpRunner

    return AcpRunner(
        store=store, processes=processes, checkpoints=checkpoints, open_workspace=opener
    )


def _agents(processes: AgentProcesses | None) -> list[s.AgentInfo]:
    """ServerInfo.agents: the built-in agent, then each declared one."""
    found = [s.AgentInfo(name=BUILTIN_AGENT, display_name="Blitz", kind="builtin")]
    for agent in processes.describe() if processes is not None else ():
        found.append(s.AgentInfo(kind="acp", **agent))
    return found


def _webhooks(
    settings: Settings,
    *,
    store: Store,
    event_log: EventLog,
    replica: str,
    find_session: FindSession,
    links: LinkMaker | None,
) -> WebhookCore:
    """The webhooks of the sessions, as the settings say; their approvals' and questions'
    deliveries carry the links `links` makes."""
    try:
        return WebhookCore(
            find_session=find_session,
            store=store,
            log=event_log,
            replica=replica,
            policy=AddressPolicy(ranges=parse_ranges(settings.webhook_allow_private)),
            retry=Retries(
                first_delay=settings.webhook_retry_delay,
                window=settings.webhook_retry_window,
                pause_after=settings.webhook_pause_after,
            ),
            timeout=settings.webhook_timeout,
            workers=settings.webhook_workers,
            public_url=settings.public_url,
            declared=settings.webhooks,
            links=links,
        )
    except ValueError as exc:
        raise ServeRefused(f"webhooks: {exc}") from None


def _sandbox(settings: Settings) -> CommandSandbox:
    """What confines every command, as configured; ServeRefused when the mechanism asked
    for does not work here, or a bind would show commands the server's own files (settings
    made in code skip `blitz.config.resolve`, which refuses it first)."""
    try:
        mechanism = isolation(settings.command_isolation)
    except ValueError as exc:
        raise ServeRefused(str(exc)) from None
    if why := refused_bind(settings):
        raise ServeRefused(f"--command-binds: {why}")
    return CommandSandbox(
        isolation=mechanism,
        limits=CommandLimits(
            cpu_seconds=settings.command_cpu or math.ceil(settings.command_timeout),
            memory_bytes=settings.command_memory,
            file_bytes=settings.command_file_size,
            processes=settings.command_processes,
        ),
        tree_processes=settings.command_tree_processes,
        tree_memory_bytes=settings.command_tree_memory,
        box=BoxSpec(
            hidden=tuple(hidden_paths(settings)),
            binds=settings.command_binds,
        ),
    )


def _tokens_now_required(
    settings: Settings, sandbox: CommandSandbox, core: SessionCore, principals: frozenset[str]
) -> None:
    """A first token was made while the server ran: GetServerInfo says tokens now, and
    the rule of `_check_confinement` is said in the log if it is broken (a restart would
    refuse it)."""
    core.add_feature("tokens")
    if (
        sandbox.isolation is Isolation.UNCONFINED
        and len(principals) > 1
        and not settings.unconfined_commands
    ):
        log.error(
            "commands run unconfined and several principals now have tokens: one's commands"
            " could read another's files; a restart will refuse this (docs/security.md)",
            principals=len(principals),
        )


def _check_confinement(
    settings: Settings, sandbox: CommandSandbox, authenticator: Authenticator
) -> None:
    """Unconfined commands of one principal could read another's files: with neither a box
    nor Landlock, a server of several principals starts only when the operator says so."""
    if sandbox.isolation is not Isolation.UNCONFINED or not authenticator.required:
        return
    if len(authenticator.principals) > 1 and not settings.unconfined_commands:
        raise ServeRefused(
            "commands would run unconfined here (neither bubblewrap's namespaces nor"
            " Landlock work), so one principal's commands could read another's files:"
            f" refusing to serve {len(authenticator.principals)} principals. Give the"
            " server what docs/security.md names, or pass --unconfined-commands to accept"
            " it."
        )


def _timedelta_or_none(seconds: float) -> timedelta | None:
    return timedelta(seconds=seconds) if seconds > 0 else None
