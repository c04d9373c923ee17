"""`blitz run`, `usage`, `sessions` and `watch` as a script calls them, against a real server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys

from support.cli import blitz
from support.processes import interruptible
from support.servers import free_port, make_settings, running_server

from blitz_client import AsyncBlitz


async def blitz_alone(*args: str, **env: str) -> tuple[int, str, str]:
    """Run `blitz ARGS` with only what `args` and `env` say of the server."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BLITZ_")}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "blitz.cli", *args, env={**clean, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_run_json_prints_every_event_as_a_json_line(server):
    code, out, _ = await blitz(server, "run", "$ echo scripted\nask+: pick [a|b|c]",
                               "--json", "--approve", "--answer", "1", "--answer", "c")  # fmt: skip
    events = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert "accepted" in events[0]
    assert "finished" in events[-1]
    assert [e["seq"] for e in events] == [str(n) for n in range(1, len(events) + 1)]
    result = next(e["toolResult"] for e in events if "toolResult" in e)
    assert result["result"]["output"] == "scripted\n"
    assert "answer: a, c" in events[-1]["finished"]["output"]


async def test_run_refuses_approvals_and_questions_unless_told(server):
    """A refusal fails a CI step (exit 3) unless --allow-refused keeps the old codes."""
    code, out, err = await blitz(server, "run", "$ echo nope")
    assert code == 3
    assert "denied: refused: blitz run was not given --approve" in out
    assert "an action was refused" in err

    code, out, _ = await blitz(server, "run", "$ echo nope", "--allow-refused")
    assert code == 0
    assert "denied: refused" in out

    code, _, err = await blitz(server, "run", "ask: which? [x|y]")
    assert code == 3
    assert "give --answer" in err
    assert "CANCELLED" in err

    code, _, err = await blitz(server, "run", "ask: which? [x|y]", "--allow-refused")
    assert code == 1
    assert "give --answer" in err


async def test_run_exits_0_when_its_own_deny_was_asked_for(server):
    code, out, _ = await blitz(server, "run", "$ echo nope", "--deny", "not in CI")
    assert code == 0
    assert "denied: not in CI" in out


async def test_run_json_exit_code_3_on_refusal(server):
    code, out, _ = await blitz(server, "run", "$ echo nope", "--json")
    assert code == 3
    assert any("resolution" in json.loads(line) for line in out.splitlines())


async def test_run_exit_codes(server):
    code, _, err = await blitz(server, "run", "hi", "--session", "s_missing")
    assert (code, "SESSION_NOT_FOUND" in err) == (1, True)
    code, _, err = await blitz(server, "run", "hi", "--approve", "sometimes")
    assert code == 2
    code, _, err = await blitz(server, "run", "$ sleep 5", "--approve", "--timeout", "0.3")
    assert (code, "TURN_TIMEOUT" in err) == (1, True)


async def test_usage_prints_a_row_per_call_and_totals(server):
    async with AsyncBlitz(server.grpc_target) as client:
        session = await client.create_session()
        async for _ in client.run(session.id, "hello"):
            pass
        async for _ in client.run(session.id, "again"):
            pass
    code, out, _ = await blitz(server, "usage", session.id)
    assert code == 0
    assert f"usage of {session.id}" in out
    assert out.count("demo") == 2
    assert "2 calls" in out

    code, out, _ = await blitz(server, "usage", session.id, "--json")
    report = json.loads(out)
    assert report["total"]["calls"] == 2 and len(report["entries"]) == 2


async def test_sessions_list_show_close(server):
    async with AsyncBlitz(server.grpc_target) as client:
        # Brackets read as rich markup would vanish: the title must be printed as given.
        session = await client.create_session(title="[v2]")
    code, out, _ = await blitz(server, "sessions", "--json")
    assert code == 0
    assert [json.loads(line)["id"] for line in out.splitlines()] == [session.id]
    code, out, _ = await blitz(server, "sessions")
    assert code == 0
    assert session.id in out and "│ [v2] " in out
    code, out, _ = await blitz(server, "sessions", "show", session.id, "--json")
    assert code == 0
    assert json.loads(out)["state"] == "SESSION_STATE_IDLE"
    code, out, _ = await blitz(server, "sessions", "close", session.id)
    assert code == 0
    assert f"{session.id} [v2]" in out
    assert "· closed ·" in out
    code, _, err = await blitz(server, "sessions", "show", "s_missing")
    assert code == 1 and "SESSION_NOT_FOUND" in err


async def test_watch_replays_a_session(server):
    async with AsyncBlitz(server.grpc_target) as client:
        session = await client.create_session()
        async for _ in client.run(session.id, "think: quietly\nwatch me"):
            pass
    code, out, _ = await blitz(server, "watch", session.id, "--no-follow")
    assert code == 0
    assert "You said: watch me" in out
    assert "thought for 1 word" in out
    assert "/thoughts" not in out, "watch is not interactive: nothing to expand with"
    assert "› think: quietly" in out, "the user's prompt is replayed"
    code, out, _ = await blitz(server, "watch", session.id, "--no-follow", "--json", "--after", "2")
    seqs = [json.loads(line)["seq"] for line in out.splitlines()]
    assert seqs[0] == "3"


async def test_bad_flags_are_usage_errors_not_tracebacks(server):
    for args in (
        ["run", "hi", "--timeout", "nan"],
        ["run", "hi", "--timeout", "1e300"],
        ["run", "hi", "--max-turns", "2147483648"],
        ["watch", "s_x", "--after", "99999999999999999999"],
        ["usage", "s_x", "--token", "é"],
    ):
        code, _, err = await blitz(server, *args)
        assert code == 2, args
        assert "Traceback" not in err and err.strip(), args


async def test_run_answering_second_goes_on_to_the_end(server):
    async with AsyncBlitz(server.grpc_target) as client:
        # Its approvals time out at once: blitz run's decision always comes second.
        session = await client.create_session(approval_timeout=0.001)
    code, out, err = await blitz(server, "run", "$ echo late", "--session", session.id,
                                 "--approve", "--json")  # fmt: skip
    assert code == 3, err  # the timeout denied it: refused, whoever came first
    assert "finished" in json.loads(out.splitlines()[-1])


async def test_run_with_an_answer_that_is_no_option_number(server):
    code, _, err = await blitz(server, "run", "ask: which? [yes|no]", "--answer", "²")
    assert code == 3 and "does not answer" in err and "Traceback" not in err


async def test_ctrl_c_on_run_cancels_the_turn(server):
    proc = await asyncio.create_subprocess_exec(
        *interruptible([sys.executable, "-m", "blitz.cli", "run", "$ sleep 30", "--approve",
                        "--json", "--server", server.grpc_target]),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    async with asyncio.timeout(30):
        while "toolCall" not in (line := (await proc.stdout.readline()).decode()):
            assert line, "blitz run ended before running the command"
            session_id = json.loads(line).get("sessionId", "")
        await asyncio.sleep(0.3)  # the command is running
        proc.send_signal(signal.SIGINT)
        _, err = await proc.communicate()
    assert proc.returncode == 130, err.decode()
    assert b"Traceback" not in err
    async with AsyncBlitz(server.grpc_target) as client:
        events = [e async for e in client.watch(session_id, follow=False)]
    assert events[-1].finished.error.reason == "CANCELLED"


async def test_run_approving_for_the_session_an_action_with_a_secret_approves_it_once(server):
    code, out, err = await blitz(server, "run", "$ echo password=hunter2", "--approve", "session")
    assert code == 0, err
    assert "exit 0" in out


async def test_server_and_blitz_server_take_replicas_separated_by_commas(server):
    """The first where nothing listens: the command goes on with the second."""
    async with AsyncBlitz(server.grpc_target) as client:
        session = await client.create_session()
    dead = f"127.0.0.1:{free_port()}"
    code, out, err = await blitz_alone(
        "sessions", "--json", "--server", f"{dead},{server.grpc_target}"
    )
    assert code == 0, err
    assert [json.loads(line)["id"] for line in out.splitlines()] == [session.id]

    replicas = f"http://127.0.0.1:{free_port()}, {server.http_url}"
    code, out, err = await blitz_alone("run", "over connect", BLITZ_SERVER=replicas)
    assert code == 0, err
    assert "You said: over connect" in out

    code, _, err = await blitz_alone(
        "sessions", "--server", f"{server.grpc_target},{server.http_url}"
    )
    assert code == 2
    assert "not a mix" in err and "Traceback" not in err


async def parked(client, text: str):
    """A new session with a turn parked on its first request: (session id, request id)."""
    session = await client.create_session()
    async with contextlib.aclosing(client.run(session.id, text)) as events:
        async for event in events:
            kind = event.WhichOneof("kind")
            if kind in ("approval_request", "question"):
                return session.id, getattr(event, kind).request_id
    raise AssertionError("the turn did not park")


async def test_approve_deny_and_answer_a_parked_turn_from_a_script(server):
    async with AsyncBlitz(server.grpc_target) as client:
        session_id, request_id = await parked(client, "$ pytest -q tests/a.py")
        code, out, err = await blitz(server, "approve", session_id, request_id, "--suggested",
                                     "--json")  # fmt: skip
        assert code == 0, err
        assert json.loads(out) == {"requestId": request_id, "decision": "always"}
        code, out, _ = await blitz(server, "rules", "list", session_id, "--json")
        rules = [json.loads(line) for line in out.splitlines()]
        assert code == 0 and [r["pattern"] for r in rules] == ["pytest -q"]
        code, out, _ = await blitz(server, "rules", "list", session_id)
        assert "commands starting `pytest -q`" in out and "always" in out
        code, out, _ = await blitz(server, "rules", "revoke", session_id, rules[0]["id"], "--json")
        assert code == 0 and json.loads(out)["revoked"] is True
        assert await client.rules(session_id) == []

        session_id, request_id = await parked(client, "$ rm -rf build")
        code, out, _ = await blitz(server, "sessions", "show", session_id)
        assert f"open request {request_id}" in out
        code, out, _ = await blitz(server, "deny", session_id, request_id, "--reason", "no",
                                   "--json")  # fmt: skip
        assert code == 0 and json.loads(out) == {"requestId": request_id, "decision": "deny"}
        code, _, err = await blitz(server, "deny", session_id, request_id)
        assert code == 1 and "ALREADY_RESOLVED" in err

        session_id, request_id = await parked(client, "ask: which? [red|blue]")
        code, out, err = await blitz(server, "answer", session_id, request_id, "blue", "--json")
        assert code == 0 and json.loads(out)["answered"] is True, err
        code, _, err = await blitz(server, "answer", session_id, request_id)
        assert code == 2 and "give the answers" in err


async def test_diff_files_fork_delete_and_show(server):
    async with AsyncBlitz(server.grpc_target) as client:
        session = await client.create_session(title="source")
        await client.update_session(session.id, mode="accept_edits")
        turns = []
        for text in ("first", "write notes.md\n```\nhello\n```"):
            async for event in client.run(session.id, text):
                turns.append(event.turn_id)
    code, out, _ = await blitz(server, "diff", session.id, "--json")
    assert code == 0 and json.loads(out)["paths"] == ["notes.md"]
    code, out, _ = await blitz(server, "diff", session.id)
    assert "+hello" in out and "+++ b/notes.md" in out
    code, out, _ = await blitz(server, "files", session.id, "--json")
    entries = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and "notes.md" in [e["path"] for e in entries]
    code, out, _ = await blitz(server, "files", session.id)
    assert "notes.md" in out

    code, out, err = await blitz(server, "sessions", "fork", session.id, turns[0], "--json",
                                 "--title", "at first")  # fmt: skip
    fork = json.loads(out)
    assert code == 0 and fork["title"] == "at first", err
    code, out, _ = await blitz(server, "files", fork["id"], "--json")
    assert "notes.md" not in out, "the fork has the files as they were at its turn"
    code, out, _ = await blitz(server, "sessions", "delete", fork["id"], "--json")
    assert code == 0 and json.loads(out)["id"] == fork["id"]
    code, _, err = await blitz(server, "sessions", "show", fork["id"])
    assert code == 1 and "SESSION_NOT_FOUND" in err


async def test_usage_all_sums_every_session_by_model_and_day(server):
    async with AsyncBlitz(server.grpc_target) as client:
        for _ in range(2):
            session = await client.create_session()
            async for _ in client.run(session.id, "hello"):
                pass
    code, out, _ = await blitz(server, "usage", "--all", "--json")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [(r["model"], r["calls"]) for r in rows] == [("demo", 2)]
    code, out, _ = await blitz(server, "usage", "--all", "--by", "day", "--json")
    assert len([json.loads(line) for line in out.splitlines()]) == 1
    code, out, _ = await blitz(server, "usage", "--all", "--by", "session")
    assert code == 0 and out.count("s_") == 2
    code, _, err = await blitz(server, "usage")
    assert code == 2 and "--all" in err


async def test_a_piped_table_is_not_cut_to_80_columns(server):
    async with AsyncBlitz(server.grpc_target) as client:
        await client.create_session(title="a title long enough to be cut at eighty columns wide")
    code, out, _ = await blitz(server, "sessions")
    assert code == 0
    assert "a title long enough to be cut at eighty columns wide" in out
    assert "…" not in out


async def test_an_admins_usage_all_is_summed_by_principal(tmp_path):
    tokens = "alice:alice-token-1234,bob:bob-token-5678,root:root-token-9012:admin"
    async with running_server(make_settings(tmp_path / "data", tokens=tokens)) as server:
        for who in ("alice", "bob", "bob"):
            secret = {"alice": "alice-token-1234", "bob": "bob-token-5678"}[who]
            async with AsyncBlitz(server.grpc_target, token=secret) as client:
                session = await client.create_session()
                assert session.owner == who
                async for _ in client.run(session.id, "hello"):
                    pass
        code, out, err = await blitz(server, "usage", "--all", "--by", "principal", "--json",
                                     "--token", "root-token-9012")  # fmt: skip
        rows = {row["principal"]: row["calls"] for row in map(json.loads, out.splitlines())}
        assert code == 0 and rows == {"alice": 1, "bob": 2}, err
        # A principal sees only its own.
        code, out, _ = await blitz(server, "usage", "--all", "--by", "principal", "--json",
                                   "--token", "bob-token-5678")  # fmt: skip
        assert [json.loads(line)["principal"] for line in out.splitlines()] == ["bob"]
