"""`blitz chat` as a daily driver (issue 25) and the controls of issue 24, in a pty."""

from __future__ import annotations

import json
import re
import time

from support.chat_screens import FOOTER, KEYS
from support.images import PNG

from blitz_client import Blitz


def session_of(chat) -> str:
    return re.search(r"session (s_\w+)", chat.screen).group(1)


def test_a_bracketed_paste_of_three_lines_is_one_turn(terminal, server_process):
    chat = terminal(["chat"])
    chat.expect(r"(?m)^› $")
    assert "\x1b[?2004h" in "".join(chat._raw), "the chat asks the terminal to bracket pastes"
    chat.child.send("\x1b[200~first line\nsecond line\nthird line\x1b[201~")
    time.sleep(0.2)
    chat.child.send("\r")
    chat.expect(r"You said: first line\s+second line\s+third line")
    chat.expect(FOOTER)
    chat.expect(r"(?m)^› $")
    with Blitz(server_process.grpc_target) as client:
        assert len(list(client.list_turns(session_of(chat)))) == 1


def test_a_running_command_shows_its_name_and_a_live_time(terminal):
    chat = terminal(["chat"])
    chat.prompt("$ sleep 3")
    chat.expect(KEYS)
    chat.child.send("o")
    chat.expect(r"↳ approved once")
    chat.expect(r"run_command sleep 3 · [1-9]s")  # the clock counts while it runs
    chat.expect(FOOTER)


def test_known_tools_render_once_and_a_denial_is_one_line(terminal):
    chat = terminal(["chat"])
    chat.prompt("todo: one; two\n$ rm -rf build")
    chat.expect(r"Tasks\s+☐ one\s+☐ two")
    chat.expect(KEYS)
    chat.child.send("d")
    chat.expect(r"reason \(Enter for none\): ")
    chat.child.sendline("no")
    screen = chat.expect(FOOTER)
    assert "⏺ todo" not in chat.screen and "tasks=" not in chat.screen
    assert "denied=" not in screen and "reason=" not in screen
    assert "tokens per model call" not in screen


def test_detach_at_an_approval_then_reattach_and_approve(terminal):
    first = terminal(["chat"])
    first.prompt("$ echo come-back")
    first.expect(KEYS)
    first.child.send("p")
    session_id = session_of(first)
    first.expect(r"the turn stays parked on this request; come back with:")
    first.expect(rf"blitz chat --session {session_id}")
    assert first.wait_exit() == 0

    second = terminal(["chat", "--session", session_id])
    second.expect(r"› \$ echo come-back")  # the user's own prompt, replayed
    second.expect(r"this turn is still open")
    second.expect(KEYS)
    second.child.send("o")
    second.expect(r"come-back\s+⎿ exit 0")
    second.expect(FOOTER)


def test_an_approval_answered_by_another_client_closes_the_prompt(terminal, server_process):
    chat = terminal(["chat"])
    chat.prompt("$ echo elsewhere")
    chat.expect(KEYS)
    session_id = session_of(chat)
    with Blitz(server_process.grpc_target) as client:
        pending = client.session(session_id).pending
        request = next(e.approval_request for e in pending if e.HasField("approval_request"))
        client.decide(session_id, request.request_id, "once")
    chat.expect(r"answered in another client")
    chat.expect(r"↳ approved once")
    chat.expect(r"elsewhere\s+⎿ exit 0")
    chat.expect(FOOTER)
    chat.prompt("after")
    chat.expect(r"You said: after")


def test_help_lists_the_chats_commands_and_the_servers(terminal):
    chat = terminal(["chat"])
    chat.prompt("/help")
    chat.expect(r"chat commands")
    chat.expect(r"/thoughts: ")
    chat.expect(r"/quit: ")
    chat.expect(r"server commands")
    chat.expect(r"/usage: the session's tokens and cost so far")


def test_the_suggested_rule_is_offered_and_then_approves_alike_commands(terminal, server_process):
    chat = terminal(["chat"])
    chat.prompt("$ true -q one")
    chat.expect(r"\[r\] always allow `true -q …`")
    chat.expect(KEYS)
    chat.child.send("r")
    chat.expect(r"↳ approved always")
    chat.expect(FOOTER)
    chat.prompt("$ true -q two")
    before = chat.expect(FOOTER)
    assert "[o]nce" not in before and "approved by rule" in before
    with Blitz(server_process.grpc_target) as client:
        rules = client.rules(session_of(chat))
    assert [r.pattern for r in rules] == ["true -q"]


def test_mode_accept_edits_writes_without_asking(terminal, server_process):
    chat = terminal(["chat"])
    chat.prompt("/mode accept_edits")
    chat.expect(r"↳ mode: accept_edits")
    chat.prompt("write moded.md\n```\nhi\n```")
    before = chat.expect(FOOTER)
    assert "[o]nce" not in before
    assert list(server_process.data_dir.glob("workspaces/*/moded.md"))
    chat.prompt("/mode")
    chat.expect(r"mode: accept_edits")
    chat.prompt("/mode sometimes")
    chat.expect(r"mode must be one of")


def test_rewind_with_files_puts_them_back(terminal, server_process):
    chat = terminal(["chat"])
    chat.prompt("/mode accept_edits")
    chat.prompt("first")
    chat.expect(FOOTER)
    chat.prompt("write later.md\n```\nx\n```")
    chat.expect(FOOTER)
    assert list(server_process.data_dir.glob("workspaces/*/later.md"))
    chat.prompt("/rewind 1 --files")
    chat.expect(r"rewind to turn 1; the later turn leaves the history and the workspace's")
    chat.child.sendline("y")
    chat.expect(r"↳ rewound to turn 1 · 1 files restored")
    assert not list(server_process.data_dir.glob("workspaces/*/later.md"))
    chat.prompt("/files")
    chat.prompt("/diff")
    chat.expect(r"no changes|@@")


def test_a_form_is_asked_field_by_field(terminal):
    form = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name"},
            "age": {"type": "integer"},
            "colour": {"type": "string", "enum": ["red", "blue"]},
            "subscribe": {"type": "boolean"},
        },
        "required": ["name", "age"],
    }
    chat = terminal(["chat"])
    chat.prompt("call ask_user " + json.dumps({"question": "Who are you?", "form": form}))
    chat.expect(r"\? Who are you\?")
    chat.expect(r"Name › ")
    chat.child.sendline("Ada")
    chat.expect(r"age \(a whole number\) › ")
    chat.child.sendline("many")
    chat.expect(r"not an answer for age")
    chat.child.sendline("36")
    chat.expect(r"2\. blue")
    chat.expect(r"colour \[optional\] › ")
    chat.child.sendline("2")
    chat.expect(r"subscribe \(y/n\) \[optional\] › ")
    chat.child.sendline("")
    answered = chat.expect(FOOTER)
    line = re.search(r"↳ answered: (.*)", answered).group(1)
    assert sorted(line.strip().split(", ")) == ["age=36", "colour=blue", "name=Ada"]


def test_a_busy_session_says_so_and_queue_runs_the_prompt_after(terminal, server_process):
    chat = terminal(["chat"])
    chat.expect(r"(?m)^› $")
    session_id = session_of(chat)
    with Blitz(server_process.grpc_target) as client:
        # Another client's turn parks on an approval: the session is busy.
        with client.run(session_id, "$ echo blocker") as events:
            request = next(e for e in events if e.HasField("approval_request"))
        chat.child.sendline("too soon")
        chat.expect(r"SESSION_BUSY")
        chat.expect(r"/queue TEXT runs it when the session is free")
        chat.prompt("/queue queued hello")
        chat.expect(r"queued")
        client.decide(session_id, request.approval_request.request_id, "once")
    chat.expect(r"You said: queued hello")
    chat.expect(FOOTER)


def test_pick_lists_the_sessions_and_attaches_to_the_chosen_one(terminal, server_process):
    with Blitz(server_process.grpc_target) as client:
        older = client.create_session(title="older")
        for _ in client.run(older.id, "remember me"):
            pass
        client.create_session(title="newer")
    chat = terminal(["chat", "--pick"])
    chat.expect(r"1\. s_\w+ · newer · idle")
    chat.expect(r"2\. s_\w+ · older · idle")
    chat.expect(r"session \(number, Enter for none\) › ")
    chat.child.sendline("2")
    chat.expect(rf"session {older.id} · older")
    chat.expect(r"› remember me")  # the replay, with the user's prompt
    chat.expect(r"You said: remember me")
    chat.prompt("/sessions")
    chat.expect(r"session \(number, Enter for none\) › ")
    chat.child.sendline("")
    chat.prompt("/quit")
    assert chat.wait_exit() == 0


def test_steer_and_aside_reach_the_server(terminal):
    chat = terminal(["chat"])
    chat.prompt("/steer go left")
    chat.expect(r"NO_RUNNING_TURN")  # nothing to steer while the session is idle
    chat.prompt("/aside what is this?")
    chat.expect(r"(You said: what is this\?|✗ \w+)")
    chat.prompt("/help")
    chat.expect(r"/aside TEXT: ")


def test_an_image_goes_with_the_next_prompt(terminal, server_process, tmp_path):
    image = tmp_path / "dot.png"
    image.write_bytes(PNG)
    chat = terminal(["chat"])
    chat.prompt(f"/image {image}")
    chat.expect(r"↳ image \w+ \(\d+ B\) goes with the next prompt")
    chat.prompt("what is in it?")
    chat.expect(FOOTER)
    with Blitz(server_process.grpc_target) as client:
        turns = list(client.list_turns(session_of(chat)))
    assert len(turns) == 1 and len(turns[0].turn.image_ids) == 1


def test_tab_completes_a_servers_command(terminal):
    chat = terminal(["chat"])
    chat.expect(r"(?m)^› $")
    chat.child.send("/usa\t")
    chat.expect(r"/usage ")
    chat.child.send("\r")
    chat.expect(r"(tokens|model calls|usage)")


def test_a_question_answered_by_another_client_closes_the_prompt(terminal, server_process):
    chat = terminal(["chat"])
    chat.prompt("ask: which? [red|blue]")
    chat.expect(r"answer › ")
    session_id = session_of(chat)
    with Blitz(server_process.grpc_target) as client:
        pending = client.session(session_id).pending
        question = next(e.question for e in pending if e.HasField("question"))
        client.answer(session_id, question.request_id, "blue")
    chat.expect(r"answered in another client")
    chat.expect(r"↳ answered: blue")
    chat.expect(FOOTER)


def test_an_answer_typed_key_by_key_can_be_edited(terminal):
    chat = terminal(["chat"])
    chat.prompt("ask: name? ")
    chat.expect(r"answer › ")
    chat.child.send("Adx\x7fa\r")
    chat.expect(r"↳ answered: Ada")
