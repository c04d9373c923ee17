"""`blitz chat` in a pseudo-terminal against a real `blitz serve` with the demo model."""

from __future__ import annotations

import re
import subprocess
import sys
import time

from support.chat_screens import FOOTER, KEYS, WRITE_KEYS

from blitz_client import Blitz


def test_approve_once_streams_the_command_and_its_output(terminal):
    chat = terminal(["chat"])
    chat.expect(r"server [\w.]+ · blitz\.v1 revision \d+")  # from GetServerInfo
    chat.prompt("think: first a look\n$ echo hello-from-blitz\nAll **done**.")
    chat.expect(r"▸ thought for 3 words")
    chat.expect(r"⏺ run_command echo hello-from-blitz")
    chat.expect(r"approve COMMAND")
    chat.expect(KEYS)
    chat.child.send("o")
    chat.expect(r"↳ approved once")
    chat.expect(r"hello-from-blitz\s+⎿ exit 0")
    chat.expect(r"You said: All done\.")
    chat.expect(FOOTER)
    chat.prompt("/quit")
    assert chat.wait_exit() == 0


def test_approve_for_the_session_then_a_rule_approves_without_asking(terminal, server_process):
    chat = terminal(["chat"])
    chat.prompt("$ echo one")
    chat.expect(KEYS)
    chat.child.send("s")
    chat.expect(r"↳ approved session")
    chat.expect(FOOTER)
    chat.prompt("$ echo one")
    before_footer = chat.expect(FOOTER)
    assert "[o]nce" not in before_footer
    assert re.search(r"one\s+⎿ exit 0", before_footer), before_footer
    session_id = re.search(r"session (s_\w+)", chat.screen).group(1)
    with Blitz(server_process.grpc_target) as client:
        rules = client.rules(session_id)
    assert [r.scope_label for r in rules] == ["command: echo one"]


def test_deny_asks_a_reason_that_the_model_receives(terminal):
    chat = terminal(["chat"])
    chat.prompt("$ rm -rf build")
    chat.expect(KEYS)
    chat.child.send("d")
    chat.expect(r"reason \(Enter for none\): ")
    chat.child.sendline("not today")
    chat.expect(r"↳ denied: not today")
    chat.expect(r"denied: not today")  # the model's reply quotes what it was told
    chat.expect(FOOTER)


def test_deny_and_stop_ends_the_turn(terminal):
    chat = terminal(["chat"])
    chat.prompt("$ rm -rf build\n$ echo never-asked")
    chat.expect(KEYS)
    chat.child.send("x")
    chat.expect(r"reason \(Enter for none\): ")
    chat.child.sendline("stop here")
    chat.expect(r"↳ denied and stopped the turn: stop here")
    chat.expect(r"CANCELLED")
    chat.expect(FOOTER)
    assert "never-asked" not in chat.screen.split("stopped the turn")[1]


def test_a_proposed_plan_is_rejected_with_feedback_then_accepted(terminal, server_process):
    chat = terminal(["chat", "--plan"])
    chat.prompt("todo: make file\n$ touch planned.txt")
    chat.expect(r"plan proposed")
    chat.expect(r"plan: \[a\]ccept \[r\]eject \[l\]ater › ")
    chat.child.send("r")
    chat.expect(r"feedback \(Enter for none\): ")
    chat.child.sendline("name it better")
    chat.expect(r"plan rejected; your next prompt goes with the feedback")
    chat.prompt("todo: make file\n$ touch planned.txt")
    chat.expect(r"plan: \[a\]ccept \[r\]eject \[l\]ater › ")
    chat.child.send("a")
    chat.expect(r"plan accepted")
    chat.expect(KEYS)
    chat.child.send("o")
    chat.expect(FOOTER)
    workspaces = server_process.data_dir / "workspaces"
    assert list(workspaces.glob("*/planned.txt")), "carried out"


def test_an_edit_left_empty_asks_again_rather_than_run_the_original(terminal):
    chat = terminal(["chat"])
    chat.prompt("$ echo original")
    chat.expect(KEYS)
    chat.child.send("e")
    chat.expect(r"command: ")
    chat.child.send("\x15")  # Ctrl-U: clear the pre-filled command
    chat.child.sendline("")
    chat.expect(r"no command given; choose again")
    chat.expect(KEYS)
    chat.child.send("d")
    chat.expect(r"reason \(Enter for none\): ")
    chat.child.sendline("")
    chat.expect(FOOTER)
    assert "original\n" not in chat.screen.split("no command given")[1]


def test_edit_runs_the_edited_command(terminal):
    chat = terminal(["chat"])
    chat.prompt("$ echo original")
    chat.expect(KEYS)
    chat.child.send("e")
    chat.expect(r"command: ")
    chat.child.send("\x15")  # Ctrl-U: clear the pre-filled command
    chat.child.sendline("echo edited")
    chat.expect(r"↳ approved once: echo edited")
    chat.expect(r"edited\s+⎿ exit 0")
    chat.expect(FOOTER)


def test_a_write_shows_its_diff_and_the_task_list(terminal, server_process):
    chat = terminal(["chat"])
    chat.prompt("todo: write it; check it\nwrite notes.md\n```\nhello\n```")
    chat.expect(r"Tasks\s+☐ write it\s+☐ check it")
    chat.expect(r"approve WRITE")
    chat.expect(r"\+\+\+ b/notes\.md")
    chat.expect(r"\+hello")
    chat.expect(WRITE_KEYS)
    chat.child.send("o")
    chat.expect(FOOTER)
    assert list(server_process.data_dir.glob("workspaces/*/notes.md"))


def test_a_multi_select_question_takes_numbers(terminal):
    chat = terminal(["chat"])
    chat.prompt("ask+: which colours? [red|green|blue]")
    chat.expect(r"\? which colours\? \(one or more: numbers separated by commas\)")
    chat.expect(r"1\. red\s+2\. green\s+3\. blue")
    chat.expect(r"answer › ")
    chat.child.sendline("7")
    chat.expect(r"type a number from 1 to 3")
    chat.expect(r"answer › ")
    chat.child.sendline("1,3")
    chat.expect(r"↳ answered: red, blue")
    chat.expect(r"answer: red, blue")
    chat.expect(FOOTER)


def test_ctrl_c_cancels_the_turn_and_twice_leaves(terminal):
    chat = terminal(["chat"])
    chat.prompt("$ sleep 30")
    chat.expect(KEYS)
    chat.child.send("o")
    chat.expect(r"↳ approved once")
    time.sleep(0.5)  # the command is running
    chat.child.sendintr()
    chat.expect(r"cancelling…")
    chat.expect(r"✗ CANCELLED")
    chat.expect(r"(?m)^› $")
    chat.child.sendline("still here")
    chat.expect(r"You said: still here")
    chat.expect(r"(?m)^› $")
    # A SIGINT that lands while readline is still setting up is only noticed at the next
    # key; no person types that fast, so wait as one would.
    time.sleep(0.5)
    chat.child.sendintr()
    chat.expect(r"Ctrl-C again to leave")
    chat.expect(r"› $")
    time.sleep(0.3)  # as above: the second press comes after the prompt is back, within 2 s
    chat.child.sendintr()
    assert chat.wait_exit() == 0


def test_reattach_replays_and_prompts_for_the_open_request(terminal):
    first = terminal(["chat"])
    first.prompt("hello there\n$ echo reattached")
    first.expect(KEYS)
    session_id = re.search(r"session (s_\w+)", first.screen).group(1)
    first.close()  # the turn stays parked on the server

    second = terminal(["chat", "--session", session_id])
    second.expect(rf"session {session_id}")
    second.expect(r"⏺ run_command echo reattached")
    second.expect(r"this turn is still open")
    second.expect(r"approve COMMAND")
    second.expect(KEYS)
    second.child.send("o")
    second.expect(r"reattached\s+⎿ exit 0")
    second.expect(r"You said: hello there")
    second.expect(FOOTER)


def test_slash_commands_go_to_the_server_and_an_unknown_one_is_reported(terminal):
    chat = terminal(["chat"])
    chat.prompt("/help")
    chat.expect(r"/usage: the session's tokens and cost so far")
    chat.prompt("/no-such-command")
    chat.expect(r"✗ INVALID_ARGUMENT\s+unknown command '/no-such-command'")
    chat.prompt("after the command")
    chat.expect(r"You said: after the command")


def test_thoughts_fold_and_unfold(terminal):
    chat = terminal(["chat"])
    chat.prompt("think: a secret plan\nhi")
    chat.expect(r"▸ thought for 3 words \(/thoughts to expand\)")
    chat.prompt("/thoughts")
    chat.expect(r"thoughts are shown\s+a secret plan")


def test_piped_input_answers_prompts_line_by_line(blitz_env):
    """Without a terminal a key is a line's first letter; a blank line asks again."""
    typed = "$ echo piped\n\no\n/quit\n"
    proc = subprocess.run(
        [sys.executable, "-m", "blitz.cli", "chat"],
        input=typed,
        env=blitz_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(re.findall(KEYS, proc.stdout)) == 2
    assert "↳ approved once" in proc.stdout
    assert re.search(r"piped\s+⎿ exit 0", proc.stdout)
