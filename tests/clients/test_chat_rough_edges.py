"""What a day of `blitz chat` found, told by a terminal: plan mode that carried nothing out,
ALWAYS as one key for a destructive command, a saved rule left unnamed, a reason prompt
that said nothing, no `--workspace`, typing that landed on the spinner, and `/rewind`
without a list, numbers or a question first (issue 38)."""

from __future__ import annotations

import re

from support.chat_screens import FOOTER, KEYS

from blitz_client import Blitz


def test_a_plan_accepted_in_plan_mode_is_carried_out(terminal, server_process):
    chat = terminal(["chat"])
    chat.prompt("/mode plan")
    chat.prompt("todo: make file\n$ touch planned.txt")
    chat.expect(r"plan: \[a\]ccept \[r\]eject \[l\]ater › ")
    chat.child.send("a")
    chat.expect(r"plan accepted")
    chat.expect(KEYS)  # the plan's command asks, as in ask mode
    chat.child.send("o")
    chat.expect(FOOTER)
    assert list((server_process.data_dir / "workspaces").glob("*/planned.txt"))
    chat.prompt("todo: again")
    chat.expect(r"plan: \[a\]ccept")  # the session is still in plan mode


def test_a_destructive_command_offers_no_rule_and_always_asks_to_confirm(terminal, server_process):
    chat = terminal(["chat"])
    chat.prompt("$ rm -rf build")
    before = chat.expect(KEYS)
    assert "destructive" in before and "[r]" not in before and "always allow" not in before
    chat.child.send("a")
    chat.expect(r"always allow exactly `command: rm -rf build` in this workspace\? type yes: ")
    chat.child.sendline("no")
    chat.expect(r"not saved; choose again")
    chat.expect(KEYS)
    chat.child.send("a")
    chat.expect(r"type yes: ")
    chat.child.sendline("yes")
    chat.expect(r"↳ approved always")
    chat.expect(r"rule saved: allows command: rm -rf build\n")
    chat.expect(FOOTER)


def test_the_saved_rule_is_named_when_approved(terminal):
    chat = terminal(["chat"])
    chat.prompt("$ true -q one")
    chat.expect(KEYS)
    chat.child.send("r")
    chat.expect(r"↳ approved always")
    chat.expect(r"rule saved: allows command: true -q …")
    chat.expect(FOOTER)


def test_deny_and_stop_says_what_the_next_line_is_for(terminal):
    chat = terminal(["chat"])
    chat.prompt("$ echo never")
    chat.expect(KEYS)
    chat.child.send("x")
    chat.expect(r"deny and stop the turn, telling the agent this reason \(Enter for none\): ")
    chat.child.sendline("")
    chat.expect(r"CANCELLED")


def test_chat_starts_a_session_in_a_named_workspace(terminal, server_process):
    chat = terminal(["chat", "--workspace", "team"])
    chat.prompt("write notes.md\n```\nshared\n```")
    chat.expect(r"\[p\]ark › ")
    chat.child.send("o")
    chat.expect(FOOTER)
    assert (server_process.data_dir / "workspaces" / "team" / "notes.md").read_text() == "shared\n"


def test_a_line_typed_while_a_turn_runs_is_queued_and_runs_after(terminal):
    chat = terminal(["chat"])
    chat.prompt("$ sleep 4; echo slept")
    chat.expect(KEYS)
    chat.child.send("o")
    chat.expect(r"type to queue a prompt \(Enter sends it\)")  # the input line, under the spinner
    chat.child.send("echo-me-")
    chat.expect(r"› echo-me-▏")
    chat.child.send("later\r")
    chat.expect(r"↳ queued: echo-me-later")
    before = chat.expect(r"exit 0")
    assert "echo-me-later ·" not in before and "· 1secho" not in before, "not on the spinner"
    chat.expect(FOOTER)
    chat.expect(r"queued turn")
    chat.expect(r"You said: echo-me-later")
    chat.expect(FOOTER)
    chat.expect(r"(?m)^› $")


def test_in_steer_mode_a_typed_line_steers_and_what_is_left_waits_at_the_prompt(terminal):
    chat = terminal(["chat", "--while-busy", "steer"])
    chat.prompt("$ sleep 4")
    chat.expect(KEYS)
    chat.child.send("o")
    chat.expect(r"type to steer this turn")
    chat.child.send("go left\r")
    chat.expect(r"↳ steered: go left")
    chat.child.send("half typed")
    chat.expect(r"› half typed▏")
    chat.expect(FOOTER)
    chat.expect(r"› half typed")  # the next prompt holds it, to finish or clear
    chat.child.send("\x15/busy\r")
    chat.expect(r"a line typed while a turn runs steers the turn")


def test_rewind_lists_the_turns_by_number_and_asks_before_it_rewinds(terminal):
    chat = terminal(["chat"])
    for text in ("first words", "second words", "third words"):
        chat.prompt(text)
        chat.expect(FOOTER)
    chat.prompt("/rewind")
    chat.expect(r"  1  first words\s+2  second words\s+3  third words")
    chat.expect(r"/rewind N goes back to turn N")
    chat.prompt("/rewind 2")
    chat.expect(r"rewind to turn 2; the later turn leaves the history\? \[y/N\] ")
    chat.child.sendline("")
    chat.expect(r"↳ not rewound")
    chat.prompt("/rewind 1")
    chat.expect(r"\[y/N\] ")
    chat.child.sendline("y")
    chat.expect(r"↳ rewound to turn 1")


def test_a_replay_numbers_its_turns_and_draws_no_empty_separator(terminal, server_process):
    with Blitz(server_process.grpc_target) as client:
        session = client.create_session()
        for text in ("one", "two"):
            list(client.run(session.id, text))
        client.close_session(session.id)  # a session_state event of no turn
    chat = terminal(["chat", "--session", session.id])
    chat.expect(r"─ turn 1 ─")
    chat.expect(r"› one")
    chat.expect(r"─ turn 2 ─")
    chat.expect(r"› two")
    chat.expect(r"(?m)^› $")
    assert not re.search(r"turn\s+─", chat.screen), "no separator without a turn"
