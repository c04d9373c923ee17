"""Who may see and do what: every RPC on both wires, for each kind of caller.

A server with tokens configured requires one on every call. Callers with no token, a
malformed header, an unknown token or a revoked one are refused (UNAUTHENTICATED) by every
RPC. Another principal is told that alice's session does not exist (SESSION_NOT_FOUND),
and never sees any of it in a list, a stream or an error; nor of her webhook
(WEBHOOK_NOT_FOUND), her schedule (SCHEDULE_NOT_FOUND) or her hook (HOOK_NOT_FOUND). An
admin sees and acts on it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from google.protobuf.field_mask_pb2 import FieldMask
from support.images import PNG
from support.servers import make_settings
from support.wire import Wire, until

from blitz.auth import token_hash
from blitz.config import Settings
from blitz.server import RunningServer, running_server
from blitz.store import TokenRecord, open_store
from blitz.transport.methods import SERVICES
from blitz.v1 import hooks_pb2 as hk
from blitz.v1 import schedules_pb2 as sc
from blitz.v1 import session_pb2 as s
from blitz.v1 import turn_pb2 as t
from blitz.v1 import webhooks_pb2 as wh
from blitz.v1 import workflow_pb2 as wf
from blitz.v1 import workspace_pb2 as w
from blitz.v1.session_connect import SessionServiceClient
from blitz_client import BlitzError
from blitz_client._connect import ConnectTransport
from blitz_client._grpc import GrpcTransport

TOKENS = "alice:alice-token-1234,bob:bob-token-5678,root:root-token-9012:admin"
REVOKED = "carol-token-revoked"
TITLE = "alice's private session"


def client(server: RunningServer, kind: str, authorization: str | None) -> Wire:
    headers = {"authorization": authorization} if authorization else {}
    if kind == "grpc":
        return Wire(kind, GrpcTransport(server.grpc_target, headers=headers, tls=False))
    return Wire(kind, ConnectTransport(server.http_url, headers=headers))


@dataclass
class Alice:
    """What alice has on the server: a session with a rule, a file, an image, a parked turn,
    and a webhook with a delivery."""

    session: s.Session
    request_id: str
    rule_id: str
    image_id: str
    webhook_id: str = ""
    delivery_id: str = ""
    schedule_id: str = ""
    hook_id: str = ""


@pytest.fixture
async def server(tmp_path) -> AsyncIterator[RunningServer]:
    settings: Settings = make_settings(tmp_path / "data", tokens=TOKENS)
    async with open_store(settings.database) as store:
        now = time.time()
        await store.add_token(
            TokenRecord("tok_carol", "carol", token_hash(REVOKED), False, now, revoke_time=now)
        )
    async with running_server(settings) as running:
        yield running


@pytest.fixture
async def alice(server: RunningServer) -> Alice:
    wire = client(server, "grpc", "Bearer alice-token-1234")
    try:
        # No receiver answers there (`.invalid` never resolves): its deliveries wait.
        hook = await wire.call(
            "CreateWebhook",
            wh.CreateWebhookRequest(url="https://blitz.invalid/hook", events=["*"]),
        )
        session = await wire.create_session(title=TITLE)
        # Nightly, in her session: it does not fire while the test runs.
        schedule = await wire.call(
            "CreateSchedule",
            sc.CreateScheduleRequest(
                schedule=sc.Schedule(cron="0 3 * * *", prompt="hi", session_id=session.id)
            ),
        )
        stream = wire.run(session.id, "$ echo secret > notes.txt")
        await wire.decide_next(stream, session.id, t.DECISION_SESSION)
        [e async for e in stream]
        stream = wire.run(session.id, "$ echo parked")
        parked = await until(stream, "approval_request")
        await stream.aclose()
        rules = await wire.call("ListRules", s.ListRulesRequest(session_id=session.id))
        image = await wire.call(
            "UploadImage",
            w.UploadImageRequest(session_id=session.id, data=PNG, media_type="image/png"),
        )
        # A hook for no tool there is: it never runs on her turns.
        made = await wire.call(
            "CreateHook",
            hk.CreateHookRequest(
                event=hk.HOOK_EVENT_PRE_TOOL, command="true", tools=["no_such_tool"]
            ),
        )
        listing = wh.ListDeliveriesRequest(webhook_id=hook.webhook.id)
        for _ in range(600):  # the outbox is expanded within moments
            deliveries = (await wire.call("ListDeliveries", listing)).deliveries
            if deliveries:
                break
            await asyncio.sleep(0.05)
    finally:
        await wire.close()
    return Alice(
        session,
        parked.approval_request.request_id,
        rules.rules[0].id,
        image.image_id,
        hook.webhook.id,
        deliveries[0].id,
        schedule.id,
        made.hook.id,
    )


def calls(a: Alice) -> dict[str, Any]:
    """One request of every RPC, each about alice's session."""
    sid = a.session.id
    return {
        "CreateSession": s.CreateSessionRequest(title="mine"),
        "GetSession": s.GetSessionRequest(session_id=sid),
        "ListSessions": s.ListSessionsRequest(),
        "CloseSession": s.CloseSessionRequest(session_id=sid),
        "RunTurn": s.RunTurnRequest(session_id=sid, turn=t.Turn(text="hi")),
        "Watch": s.WatchRequest(session_id=sid),
        "WatchSessions": s.WatchSessionsRequest(),
        "Decide": s.DecideRequest(
            session_id=sid, request_id=a.request_id, decision=t.DECISION_ONCE, command="id"
        ),
        "Answer": s.AnswerRequest(session_id=sid, request_id=a.request_id, answers=["x"]),
        "Cancel": s.CancelRequest(session_id=sid),
        "Steer": s.SteerRequest(session_id=sid, text="psst"),
        "GetUsage": s.GetUsageRequest(session_id=sid),
        "ListRules": s.ListRulesRequest(session_id=sid),
        "RevokeRule": s.RevokeRuleRequest(session_id=sid, rule_id=a.rule_id),
        "UploadImage": w.UploadImageRequest(session_id=sid, data=PNG, media_type="image/png"),
        "ListFiles": w.ListFilesRequest(session_id=sid),
        "ReadFile": w.ReadFileRequest(session_id=sid, path="notes.txt"),
        "GetDiff": w.GetDiffRequest(session_id=sid),
        "ExportChanges": w.ExportChangesRequest(session_id=sid),
        "ListTurns": s.ListTurnsRequest(session_id=sid),
        "GetTurn": s.GetTurnRequest(session_id=sid, turn_id="t_any"),
        "RewindSession": s.RewindSessionRequest(session_id=sid, to_turn_id="t_any", files=True),
        "UpdateSession": s.UpdateSessionRequest(
            session_id=sid, title="taken", update_mask=FieldMask(paths=["title"])
        ),
        "ForkSession": s.ForkSessionRequest(session_id=sid, turn_id="t_any"),
        "DeleteSession": s.DeleteSessionRequest(session_id=sid),
        "GetServerInfo": s.GetServerInfoRequest(),
        "AcceptPlan": s.AcceptPlanRequest(session_id=sid, plan_id="t_any"),
        "RejectPlan": s.RejectPlanRequest(session_id=sid, plan_id="t_any"),
        "ListCommands": s.ListCommandsRequest(session_id=sid),
        **webhook_calls(a),
        "RunWorkflow": wf.RunWorkflowRequest(session_id=sid, name="any"),
        "ListWorkflows": wf.ListWorkflowsRequest(session_id=sid),
        "GetWorkflow": wf.GetWorkflowRequest(session_id=sid, name="any"),
        **schedule_calls(a),
        **hook_calls(a),
    }


def webhook_calls(a: Alice) -> dict[str, Any]:
    """One request of every WebhookService RPC, each about alice's webhook (or session)."""
    hook = a.webhook_id
    return {
        "CreateWebhook": wh.CreateWebhookRequest(
            url="https://blitz.invalid/mine", events=["*"], session_id=a.session.id
        ),
        "GetWebhook": wh.GetWebhookRequest(webhook_id=hook),
        "ListWebhooks": wh.ListWebhooksRequest(),
        "UpdateWebhook": wh.UpdateWebhookRequest(
            webhook_id=hook, url="https://blitz.invalid/taken", update_mask=FieldMask(paths=["url"])
        ),
        "DeleteWebhook": wh.DeleteWebhookRequest(webhook_id=hook),
        "RotateWebhookSecret": wh.RotateWebhookSecretRequest(webhook_id=hook),
        "TestWebhook": wh.TestWebhookRequest(webhook_id=hook),
        "ListDeliveries": wh.ListDeliveriesRequest(webhook_id=hook),
        "RedeliverWebhook": wh.RedeliverWebhookRequest(webhook_id=hook, delivery_id=a.delivery_id),
    }


def schedule_calls(a: Alice) -> dict[str, Any]:
    """One request of every ScheduleService RPC, each about alice's schedule (or session)."""
    mine = a.schedule_id
    return {
        "CreateSchedule": sc.CreateScheduleRequest(
            schedule=sc.Schedule(cron="0 3 * * *", prompt="hi", session_id=a.session.id)
        ),
        "GetSchedule": sc.GetScheduleRequest(schedule_id=mine),
        "ListSchedules": sc.ListSchedulesRequest(),
        "UpdateSchedule": sc.UpdateScheduleRequest(
            schedule=sc.Schedule(id=mine, prompt="taken"), update_mask=FieldMask(paths=["prompt"])
        ),
        "DeleteSchedule": sc.DeleteScheduleRequest(schedule_id=mine),
        "RunSchedule": sc.RunScheduleRequest(schedule_id=mine),
        "ListFirings": sc.ListFiringsRequest(schedule_id=mine),
    }


def hook_calls(a: Alice) -> dict[str, Any]:
    """One request of every HookService RPC, each about alice's hook."""
    mine = a.hook_id
    return {
        "CreateHook": hk.CreateHookRequest(event=hk.HOOK_EVENT_PRE_TOOL, command="true"),
        "GetHook": hk.GetHookRequest(hook_id=mine),
        "ListHooks": hk.ListHooksRequest(),
        "UpdateHook": hk.UpdateHookRequest(
            hook_id=mine, command="false", update_mask=FieldMask(paths=["command"])
        ),
        "DeleteHook": hk.DeleteHookRequest(hook_id=mine),
        "TestHook": hk.TestHookRequest(hook_id=mine),
    }


def test_every_rpc_is_tried():
    """Every RPC of every service the server serves (`methods.SERVICES`): a service added
    later is tried here, or this fails."""
    rpcs = {method.name for service in SERVICES for method in service.methods}
    assert set(calls(Alice(s.Session(), "", "", ""))) == rpcs


async def attempt(wire: Wire, method: str, request: Any) -> Any:
    """The call's answer (a stream's events, read to its end), or the BlitzError it raised."""
    try:
        if method in ("RunTurn", "Watch", "AcceptPlan", "RunWorkflow"):
            return [e async for e in wire.stream(method, request)]
        if method == "WatchSessions":  # endless: its first snapshot, up to `synced`
            stream = wire.stream(method, request)
            updates = []
            async for update in stream:
                if update.synced:
                    break
                updates.append(update)
            await stream.aclose()
            return updates
        return await wire.call(method, request)
    except BlitzError as exc:
        return exc


BAD = {
    "no token": None,
    "a malformed header": "Basic YWxpY2U6aHVudGVyMg==",
    "an empty bearer": "Bearer",
    "an unknown token": "Bearer not-a-token-anyone-has",
    "a revoked token": f"Bearer {REVOKED}",
}


@pytest.mark.parametrize("kind", ["grpc", "connect"])
@pytest.mark.parametrize("credential", list(BAD))
async def test_every_call_without_a_valid_token_is_refused(server, alice, kind, credential):
    wire = client(server, kind, BAD[credential])
    try:
        for method, request in calls(alice).items():
            got = await attempt(wire, method, request)
            assert isinstance(got, BlitzError), f"{method} answered {credential}"
            assert (got.code, got.reason) == ("unauthenticated", "UNAUTHENTICATED"), method
            assert got.info is not None and got.info.metadata["header"] == "authorization"
            secret = (BAD[credential] or "").split()[1:]
            assert not secret or secret[0] not in got.message, "no token is echoed"
    finally:
        await wire.close()


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_another_principal_is_told_nothing_of_alices_session(server, alice, kind):
    wire = client(server, kind, "Bearer bob-token-5678")
    try:
        for method, request in calls(alice).items():
            got = await attempt(wire, method, request)
            if method == "CreateSession":
                assert got.title == "mine"
            elif method == "GetServerInfo":
                assert "tokens" in got.features, "about the server, not about alice"
            elif method == "ListSessions":
                assert alice.session.id not in {x.id for x in got.sessions}
            elif method == "WatchSessions":
                assert alice.session.id not in {u.session.id for u in got}
            elif method == "ListWebhooks":
                assert alice.webhook_id not in {x.id for x in got.webhooks}
            elif method == "ListSchedules":
                assert alice.schedule_id not in {x.id for x in got.schedules}
            elif method == "ListHooks":
                assert alice.hook_id not in {x.id for x in got.hooks}
            elif method == "CreateHook":
                assert got.hook.owner == "bob"
            elif method in hook_calls(alice):
                assert isinstance(got, BlitzError), f"{method} answered bob"
                assert (got.code, got.reason) == ("not_found", "HOOK_NOT_FOUND"), method
                assert alice.hook_id in got.message and TITLE not in got.message
            elif method in schedule_calls(alice) and method != "CreateSchedule":
                assert isinstance(got, BlitzError), f"{method} answered bob"
                assert (got.code, got.reason) == ("not_found", "SCHEDULE_NOT_FOUND"), method
                assert alice.schedule_id in got.message and TITLE not in got.message
            elif method in webhook_calls(alice) and method != "CreateWebhook":
                assert isinstance(got, BlitzError), f"{method} answered bob"
                assert (got.code, got.reason) == ("not_found", "WEBHOOK_NOT_FOUND"), method
                assert alice.webhook_id in got.message and TITLE not in got.message
            else:
                assert isinstance(got, BlitzError), f"{method} answered bob"
                assert (got.code, got.reason) == ("not_found", "SESSION_NOT_FOUND"), method
                assert TITLE not in got.message and alice.request_id not in got.message
        mine = await attempt(wire, "ListSessions", s.ListSessionsRequest())
        assert [x.title for x in mine.sessions] == ["mine"], "bob's list holds bob's only"
    finally:
        await wire.close()
    # Alice's session is as she left it: still parked on her request.
    owner = client(server, kind, "Bearer alice-token-1234")
    try:
        got = await owner.call("GetSession", s.GetSessionRequest(session_id=alice.session.id))
    finally:
        await owner.close()
    assert got.state == s.SESSION_STATE_PARKED and len(got.pending) == 1


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_an_admin_sees_and_acts_on_every_session(server, alice, kind):
    admin = client(server, kind, "Bearer root-token-9012")
    sid = alice.session.id
    try:
        listed = await admin.call("ListSessions", s.ListSessionsRequest())
        assert sid in {x.id for x in listed.sessions}
        got = await admin.call("GetSession", s.GetSessionRequest(session_id=sid))
        assert got.title == TITLE and len(got.pending) == 1
        replay = [e async for e in admin.stream("Watch", s.WatchRequest(session_id=sid))]
        assert replay[-2].HasField("approval_request")
        assert replay[-1].session_state.state == t.SessionStateChange.STATE_PARKED
        files = await admin.call("ReadFile", w.ReadFileRequest(session_id=sid, path="notes.txt"))
        assert files.content == b"secret\n"
        # The admin approves alice's command: the resolution names who decided.
        watch = admin.stream(
            "Watch", s.WatchRequest(session_id=sid, after_seq=got.last_seq, follow=True)
        )
        await admin.decide(sid, alice.request_id, t.DECISION_ONCE)
        resolution = await until(watch, "resolution")
        await watch.aclose()
    finally:
        await admin.close()
    assert resolution.resolution.resolved_by == "root"


async def test_resolved_by_names_the_principal_who_decided(server):
    wire = client(server, "connect", "Bearer alice-token-1234")
    try:
        session = await wire.create_session()
        stream = wire.run(session.id, "$ true")
        await wire.decide_next(stream, session.id, t.DECISION_ONCE)
        resolution = await until(stream, "resolution")
        await stream.aclose()
    finally:
        await wire.close()
    assert resolution.resolution.resolved_by == "alice"


async def test_grpc_web_carries_the_token_too(server, alice):
    url = server.http_url
    async with SessionServiceClient(url, protocol=ProtocolType.GRPC_WEB) as web:
        with pytest.raises(ConnectError) as refused:
            await web.list_sessions(s.ListSessionsRequest())
        mine = await web.list_sessions(
            s.ListSessionsRequest(), headers={"authorization": "Bearer alice-token-1234"}
        )
    assert refused.value.code == Code.UNAUTHENTICATED
    assert [x.id for x in mine.sessions] == [alice.session.id]


@pytest.mark.parametrize("kind", ["grpc", "connect"])
async def test_an_always_rule_is_its_principals_alone(server: RunningServer, kind: str) -> None:
    alice = client(server, kind, "Bearer alice-token-1234")
    bob = client(server, kind, "Bearer bob-token-5678")
    try:
        first = await alice.create_session(workspace="app")
        stream = alice.run(first.id, "$ echo always")
        await alice.decide_next(stream, first.id, t.DECISION_ALWAYS)
        [e async for e in stream]
        later = await alice.run_all(
            (await alice.create_session(workspace="app")).id, "$ echo always"
        )
        assert not [e for e in later if e.HasField("approval_request")], "her sessions there"
        stream = bob.run((await bob.create_session(workspace="app")).id, "$ echo always")
        assert await until(stream, "approval_request"), "not bob's, even by the same name"
        await stream.aclose()
    finally:
        await alice.close()
        await bob.close()
