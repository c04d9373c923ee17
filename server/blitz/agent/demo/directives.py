"""The demo model's prompt language: plain directives, one per line.

`parse` turns a prompt into an ordered list of directives; the demo model plays them back.
Syntax (a PATH is one word, no spaces; anything that does not match is plain text):

    $ CMD                     run_command(CMD)
    $+net CMD                 run_command(CMD, network=true): asks a NETWORK approval
    $+git CMD                 run_command(CMD, git=true): may write .git and .blitz
    $+net+git CMD             both
    write PATH                write_file(PATH, content of the fenced block on the next lines)
    ```
    content
    ```
    delete PATH               delete_file(PATH)
    edit PATH                 edit_file(PATH, first fenced block -> second fenced block)
    ```
    old text
    ```
    ```
    new text
    ```
    search: PATTERN           search(PATTERN) over the workspace
    fetch URL                 fetch_url(URL)
    call TOOL {JSON}          any tool by name with JSON arguments (an MCP tool: server.tool)
    read PATH                 read_file(PATH)
    ls [PATH]                 list_files(PATH, default ".")
    ask: QUESTION [a|b|c]     ask_user, choose one of a, b, c (no brackets: free text);
                              [a, b, c] too, when no option holds a `|`
    ask+: QUESTION [a|b|c]    ask_user, choose any of a, b, c
    todo: a; b; c             todo with those items, each pending
    doing: N                  todo: item N (from 1) of the current list in_progress, and the
                              item in progress before it completed
    done: N                   todo: item N of the current list completed
    delegate NAME: DIRECTIVE  delegate(NAME, DIRECTIVE): the sub-agent NAME (the demo model
                              again) carries out that one directive, e.g.
                              `delegate tester: $ pytest -q`
    delegate NAME:            delegate(NAME, the fenced block): several directives for the
    ~~~                       sub-agent, one per line (``` fences work too, when the block
    DIRECTIVES                holds no ``` block of its own)
    ~~~
    think: TEXT               stream TEXT as thinking
    stream: N                 stream N small text chunks ("chunk 0 ", "chunk 1 ", ...)

Parsing never fails: a malformed directive is plain text. Nothing here runs anything.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Directive", "Progress", "Say", "Stream", "Think", "ToolStep", "parse"]


@dataclass(frozen=True)
class ToolStep:
    """Call `tool` with `args`: one model response of its own."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Think:
    text: str


@dataclass(frozen=True)
class Say:
    """A line of plain text, echoed back in the final answer."""

    text: str


@dataclass(frozen=True)
class Stream:
    count: int


@dataclass(frozen=True)
class Progress:
    """Move item `item` (from 1) of the current task list to `status`: one todo call.

    The list is whatever the last todo call left, so the model resolves it when it gets
    there; `in_progress` also completes the item in progress before.
    """

    item: int
    status: str


Directive = ToolStep | Think | Say | Stream | Progress

_PATH_VERB = re.compile(r"^(write|delete|read|edit)\s+(\S+)$")
_SEARCH = re.compile(r"^search:\s*(.+)$")
_BOXED = re.compile(r"^\$(?P<flags>(?:\+(?:net|git)){1,2})\s+(?P<command>.+)$")
_FETCH = re.compile(r"^fetch\s+(https?://\S+)$")
_CALL = re.compile(r"^call\s+([A-Za-z0-9_.-]+)(?:\s+(\{.*\}))?$")
_LS = re.compile(r"^ls(?:\s+(\S+))?$")
_ASK = re.compile(r"^ask(\+)?:\s*(.*)$", re.DOTALL)
_OPTIONS = re.compile(r"^(.*?)\s*\[([^\[\]]*)\]$", re.DOTALL)
_TODO = re.compile(r"^todo:\s*(.*)$")
_PROGRESS = re.compile(r"^(doing|done):\s*(\d+)$")
_DELEGATE = re.compile(r"^delegate\s+([^\s:]+):\s*(.*)$")
_THINK = re.compile(r"^think:\s*(.*)$")
_STREAM = re.compile(r"^stream:\s*(\d+)$")
_FENCE = "```"
# A delegated block may fence with tildes, to hold directives with ``` blocks of their own.
_TILDES = "~~~"


def parse(prompt: str) -> list[Directive]:
    """The prompt's directives, in order."""
    lines = prompt.splitlines()
    out: list[Directive] = []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line:
            continue
        if line.startswith("$ ") and line[2:].strip():
            out.append(ToolStep("run_command", {"command": line[2:].strip()}))
        elif (boxed := _BOXED.match(line)) and boxed["command"].strip():
            args: dict[str, Any] = {"command": boxed["command"].strip()}
            for flag in ("net", "git"):
                if f"+{flag}" in boxed["flags"]:
                    args["network" if flag == "net" else "git"] = True
            out.append(ToolStep("run_command", args))
        elif m := _PATH_VERB.match(line):
            verb, path = m.groups()
            if verb == "write":
                # `write PATH` is a directive only with its fenced block; else it is prose
                # ("write tests").
                if i < len(lines) and lines[i].strip().startswith(_FENCE):
                    body, i = _fenced(lines, i + 1)
                    out.append(ToolStep("write_file", {"path": path, "content": body}))
                else:
                    out.append(Say(line))
            elif verb == "edit":
                # Two fenced blocks: the exact old text, then its replacement.
                if i < len(lines) and lines[i].strip().startswith(_FENCE):
                    old, i = _fenced(lines, i + 1)
                    new = ""
                    if i < len(lines) and lines[i].strip().startswith(_FENCE):
                        new, i = _fenced(lines, i + 1)
                    args = {"path": path, "old_string": old, "new_string": new}
                    out.append(ToolStep("edit_file", args))
                else:
                    out.append(Say(line))
            else:
                out.append(ToolStep(f"{verb}_file", {"path": path}))
        elif m := _SEARCH.match(line):
            out.append(ToolStep("search", {"pattern": m.group(1).strip()}))
        elif m := _FETCH.match(line):
            out.append(ToolStep("fetch_url", {"url": m.group(1)}))
        elif (m := _CALL.match(line)) and (call := _call(m.group(1), m.group(2))):
            out.append(call)
        elif m := _LS.match(line):
            out.append(ToolStep("list_files", {"path": m.group(1) or "."}))
        elif m := _ASK.match(line):
            out.append(_ask(m.group(2), multi_select=bool(m.group(1))))
        elif m := _TODO.match(line):
            items = [s.strip() for s in m.group(1).split(";") if s.strip()]
            args = {"items": [{"content": s, "status": "pending"} for s in items]}
            out.append(ToolStep("todo", args))
        elif m := _PROGRESS.match(line):
            status = "in_progress" if m.group(1) == "doing" else "completed"
            out.append(Progress(int(m.group(2)), status))
        elif m := _DELEGATE.match(line):
            name, task = m.group(1), m.group(2).strip()
            opening = lines[i].strip() if i < len(lines) else ""
            fence = next((f for f in (_FENCE, _TILDES) if opening.startswith(f)), None)
            if not task and fence is not None:
                task, i = _fenced(lines, i + 1, fence)
            if task.strip():
                out.append(ToolStep("delegate", {"agent": name, "task": task.strip()}))
            else:
                out.append(Say(line))
        elif m := _THINK.match(line):
            out.append(Think(m.group(1)))
        elif m := _STREAM.match(line):
            out.append(Stream(int(m.group(1))))
        else:
            out.append(Say(line))
    return out


def _fenced(lines: list[str], start: int, fence: str = _FENCE) -> tuple[str, int]:
    """The block from `start` to the closing fence (or the end), and the line after it."""
    body: list[str] = []
    i = start
    while i < len(lines) and lines[i].strip() != fence:
        body.append(lines[i])
        i += 1
    text = "\n".join(body) + "\n" if body else ""
    return text, i + 1


def _call(name: str, args: str | None) -> ToolStep | None:
    try:
        parsed = json.loads(args) if args else {}
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    # MCP tools are `server.tool` to people and `server__tool` to models.
    return ToolStep(name.replace(".", "__", 1), parsed)


def _ask(rest: str, *, multi_select: bool) -> ToolStep:
    question, options = rest.strip(), []
    if m := _OPTIONS.match(question):
        question = m.group(1).strip()
        # `|` separates the options; without one, commas do (`[yes, no]` is two options).
        inside = m.group(2)
        separator = "|" if "|" in inside else ","
        options = [o.strip() for o in inside.split(separator) if o.strip()]
    return ToolStep(
        "ask_user", {"question": question, "options": options, "multi_select": multi_select}
    )
