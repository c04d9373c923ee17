"""What a day of `blitz chat` found, told by a terminal: plan mode that carried nothing out,
…"""

from __future__ import annotations

from support.chat_screens import FOOTER, KEYS


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
