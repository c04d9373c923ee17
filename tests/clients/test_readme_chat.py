"""The README's `blitz chat` transcript is what a newcomer gets, keystroke for keystroke."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
SECTION = "### Chat with it in the terminal"


def block(lang: str) -> str:
    section = README[README.index(SECTION) :]
    match = re.search(rf"^```{lang}\n(.*?)^```$", section, re.S | re.M)
    assert match, f"no {lang} block in {SECTION!r}"
    return match.group(1)


def looks_like(line: str) -> str:
    """A regex for a transcript line: any session id, any run of spaces or rule."""
    pattern = re.escape(line.strip())
    pattern = pattern.replace("s_…", r"s_\w+")
    pattern = re.sub(r"(\\ )+", r"\\s+", pattern)
    return re.sub(r"─+", "─+", pattern)


def test_the_chat_transcript_is_what_blitz_chat_shows(terminal):
    command, *lines = block("text").splitlines()
    assert command == "$ .venv/bin/blitz chat"
    chat = terminal(["chat"])
    chat.child.setwinsize(40, 80)
    for line in lines:
        typed = re.match(r"^([›…]) (.*)$", line)
        keyed = re.match(r"^(.*› )(\S+)$", line)
        if typed:
            # `expect` strips ANSI codes, so the prompt itself is matched as plain text.
            chat.expect(rf"(?m)^{typed.group(1)} $")
            chat.child.sendline(typed.group(2))
        elif keyed:
            chat.expect(re.escape(keyed.group(1)))
            key = keyed.group(2)
            chat.child.send(key) if len(key) == 1 and "[o]nce" in line else chat.child.sendline(key)
        else:
            chat.expect(looks_like(line))
    assert chat.wait_exit() == 0


def test_the_python_client_snippet_runs(server_process):
    code = block("python").replace("127.0.0.1:50051", server_process.grpc_target)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "$ echo hi -> exit 0" in proc.stdout
