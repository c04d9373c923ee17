"""The destructive list: which commands are on it, that none of them is offered a broader
rule, and that docs/security.md shows the same table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from blitz.core.requests.destructive import DESTRUCTIVE
from blitz.core.requests.rules import command_parts, destructive_action, suggested_rule
from blitz.v1 import turn_pb2 as t

DOCS = Path(__file__).parents[2] / "docs" / "security.md"


def ask(command: str) -> t.ApprovalRequest:
    return t.ApprovalRequest(kind=t.ACTION_KIND_COMMAND, scope_label=f"command: {command}")


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        "rm notes.txt",
        "/bin/rm -r x",
        "sudo rm -rf /",
        "FOO=1 rm x",
        "git push --force origin main",
        "git push -f",
        "git push origin +main",
        "git push --force-with-lease=main origin main",
        "git push origin --delete old",
        "git -C repo push --force",
        "git reset --hard HEAD~3",
        "git clean -fdx",
        "git branch -D topic",
        "git stash drop",
        "dd if=/dev/zero of=/dev/sda",
        "mkfs.ext4 /dev/sdb1",
        "mkfs -t ext4 /dev/sdb1",
        "chmod -R 777 .",
        "find . -name '*.pyc' -delete",
        "make && rm -rf dist",
        "ls | xargs rm",
        "kubectl delete pod x",
        "terraform destroy -auto-approve",
        "echo $(rm -rf x)",  # unreadable: any word naming a listed program
    ],
)
def test_these_commands_are_destructive_and_get_no_broader_rule(command):
    request = ask(command)
    assert destructive_action(request) is not None
    assert suggested_rule(request) is None


@pytest.mark.parametrize(
    "command",
    ["git push origin topic", "git status", "pytest -q", "chmod +x run.sh", "find . -name x",
     "git reset HEAD notes.md", "git branch -d merged", "echo rm", "make clean"],
)  # fmt: skip
def test_these_are_not(command):
    assert destructive_action(ask(command)) is None


def test_a_plain_command_still_gets_its_prefix():
    suggestion = suggested_rule(ask("git push origin topic"))
    assert suggestion is not None and suggestion.pattern == "git push"


def test_the_parsed_and_the_crude_reading_agree_on_a_plain_command():
    assert command_parts("rm -rf build") == [["rm", "-rf", "build"]]


def test_docs_security_lists_the_same_table():
    text = DOCS.read_text()
    section = text.split("### Destructive commands", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \| (?:`([^`]+)`)? \| ([^|]+) \| ([^|]+) \|$", section, re.M)
    documented = [
        (program, sub, frozenset(re.findall(r"`([^`]+)`", with_)), why.strip())
        for program, sub, with_, why in rows
    ]
    assert documented == [(e.program, e.subcommand, e.options, e.why) for e in DESTRUCTIVE]
