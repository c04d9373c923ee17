"""Command lines a person types first and the CLI once refused: `--approve` before the
prompt, `--json` after the action, `rules SESSION`, `files` on a file and `cat`, `fork`
without a turn, and two Ctrl-Cs at an idle chat prompt."""

from __future__ import annotations

import json
import time

from support.cli import blitz

from blitz_client import AsyncBlitz


async def notes_session(server) -> tuple[str, list[str]]:
    """A session of two turns, the second writing notes.md; its id and its turns' ids."""
    async with AsyncBlitz(server.grpc_target) as client:
        session = await client.create_session(title="source")
        await client.update_session(session.id, mode="accept_edits")
        turns = []
        for text in ("first", "write notes.md\n```\nhello\n```"):
            async for event in client.run(session.id, text):
                turns.append(event.turn_id)
    return session.id, list(dict.fromkeys(turns))


async def test_approve_before_the_prompt_leaves_the_prompt_alone(server):
    code, out, err = await blitz(server, "run", "--approve", "$ echo hi")
    assert code == 0, err
    assert "hi" in out

    code, out, err = await blitz(server, "run", "$ echo hi", "--approve", "session")
    assert code == 0, err
    assert "hi" in out


async def test_approve_with_a_prompt_both_before_and_after_is_a_usage_error(server):
    code, _, err = await blitz(server, "run", "--approve", "sesion", "$ echo hi")
    assert code == 2
    assert "--approve takes once, session or always" in err


async def test_json_goes_before_or_after_the_action(server):
    async with AsyncBlitz(server.grpc_target) as client:
        session = await client.create_session(title="listed")
    for args in (("sessions", "list", "--json"), ("sessions", "--json", "list"),
                 ("sessions", "list", "--state", "idle", "--json")):  # fmt: skip
        code, out, err = await blitz(server, *args)
        assert code == 0, err
        assert [json.loads(line)["id"] for line in out.splitlines()] == [session.id], args

    for args in (("rules", "list", session.id, "--json"), ("rules", "--json", "list", session.id)):
        code, out, err = await blitz(server, *args)
        assert (code, out) == (0, ""), err


async def test_rules_with_a_session_and_no_action_lists_them(server):
    async with AsyncBlitz(server.grpc_target) as client:
        session = await client.create_session()
    code, out, err = await blitz(server, "rules", session.id)
    assert code == 0, err
    assert "scope" in out and "effect" in out  # the table's header

    code, out, err = await blitz(server, "rules", "--json", session.id)
    assert (code, out) == (0, ""), err


async def test_files_on_a_file_points_at_cat_which_prints_it(server):
    session_id, _ = await notes_session(server)
    code, out, err = await blitz(server, "files", session_id, "notes.md")
    assert code == 0, err
    assert "notes.md" in out
    assert f"blitz cat {session_id} notes.md" in err

    code, out, err = await blitz(server, "files", session_id, "notes.md", "--json")
    assert code == 0 and json.loads(out)["path"] == "notes.md", err

    code, out, err = await blitz(server, "cat", session_id, "notes.md")
    assert (code, out) == (0, "hello\n"), err

    code, _, err = await blitz(server, "files", session_id, "missing.md")
    assert code == 1 and "FILE_NOT_FOUND" in err
    code, _, err = await blitz(server, "cat", session_id, "missing.md")
    assert code == 1 and "FILE_NOT_FOUND" in err


async def test_fork_takes_the_last_finished_turn_or_a_turn_number(server):
    session_id, _ = await notes_session(server)
    code, out, err = await blitz(server, "sessions", "fork", session_id, "--json")
    assert code == 0, err
    code, out, _ = await blitz(server, "files", json.loads(out)["id"], "--json")
    assert "notes.md" in out, "the last turn's files"

    code, out, err = await blitz(server, "sessions", "fork", session_id, "1", "--json")
    assert code == 0, err
    code, out, _ = await blitz(server, "files", json.loads(out)["id"], "--json")
    assert "notes.md" not in out, "the first turn's files"

    code, _, err = await blitz(server, "sessions", "fork", session_id, "3")
    assert code == 2 and "the session has 2 turns" in err


def test_two_ctrl_cs_at_an_idle_prompt_leave_however_slow(terminal):
    chat = terminal(["chat"])
    chat.expect(r"(?m)^› $")
    time.sleep(0.5)  # a SIGINT while readline sets up is only seen at the next key
    chat.child.sendintr()
    chat.expect(r"press Ctrl-C again to leave")
    chat.expect(r"› $")
    time.sleep(2.5)  # slower than the two seconds within which a press cancels and leaves
    chat.child.sendintr()
    assert chat.wait_exit() == 0


async def test_sessions_show_prints_the_commands_that_answer_a_request(server):
    async with AsyncBlitz(server.grpc_target) as client:
        session = await client.create_session()
        stream = client.run(session.id, "$ pytest -q tests")
        async for event in stream:
            if event.HasField("approval_request"):
                request_id = event.approval_request.request_id
                break
        await stream.aclose()
    code, out, err = await blitz(server, "sessions", "show", session.id)
    assert code == 0, err
    ids = f"{session.id} {request_id}"
    assert f"blitz approve {ids}\n" in out
    assert f"blitz approve {ids} --scope session|always" in out
    assert f"blitz approve {ids} --suggested" in out
    assert f'blitz deny {ids} --reason "…"' in out
    assert "[a]lways" not in out and "[r]" not in out
