"""The demo model's directive syntax, parsed without running anything."""

from __future__ import annotations

from blitz.agent.demo.directives import Progress, Say, Stream, Think, ToolStep, parse


def test_each_directive_parses_to_its_tool_call() -> None:
    prompt = "\n".join(
        [
            "$ ls -la",
            "write notes/a.txt",
            "```",
            "line one",
            "  indented",
            "```",
            "delete old.txt",
            "read README.md",
            "ls",
            "ls src",
            "ask: Which colour? [red | green|blue]",
            "ask+: Which toppings? [cheese|ham]",
            "ask: What is your name?",
            "todo: plan; build ; test",
            "think: weighing options",
            "stream: 5",
            "just chatting",
        ]
    )
    assert parse(prompt) == [
        ToolStep("run_command", {"command": "ls -la"}),
        ToolStep("write_file", {"path": "notes/a.txt", "content": "line one\n  indented\n"}),
        ToolStep("delete_file", {"path": "old.txt"}),
        ToolStep("read_file", {"path": "README.md"}),
        ToolStep("list_files", {"path": "."}),
        ToolStep("list_files", {"path": "src"}),
        ToolStep(
            "ask_user",
            {
                "question": "Which colour?",
                "options": ["red", "green", "blue"],
                "multi_select": False,
            },
        ),
        ToolStep(
            "ask_user",
            {"question": "Which toppings?", "options": ["cheese", "ham"], "multi_select": True},
        ),
        ToolStep(
            "ask_user", {"question": "What is your name?", "options": [], "multi_select": False}
        ),
        ToolStep(
            "todo",
            {
                "items": [
                    {"content": "plan", "status": "pending"},
                    {"content": "build", "status": "pending"},
                    {"content": "test", "status": "pending"},
                ]
            },
        ),
        Think("weighing options"),
        Stream(5),
        Say("just chatting"),
    ]


def test_ask_takes_options_separated_by_commas_when_none_holds_a_bar() -> None:
    assert parse("ask: ok? [a, b]\nask+: which? [x,y , z]\nask: pick [1, 2 | 3]") == [
        ToolStep("ask_user", {"question": "ok?", "options": ["a", "b"], "multi_select": False}),
        ToolStep(
            "ask_user", {"question": "which?", "options": ["x", "y", "z"], "multi_select": True}
        ),
        # A bar separates: the comma is then part of an option.
        ToolStep("ask_user", {"question": "pick", "options": ["1, 2", "3"], "multi_select": False}),
    ]


def test_prose_that_looks_like_a_verb_stays_text() -> None:
    """A PATH is one word, and `write` needs its fenced block; otherwise it is just text."""
    assert parse("read the docs please\nwrite tests\ndelete\nstream: lots\n$") == [
        Say("read the docs please"),
        Say("write tests"),
        Say("delete"),
        Say("stream: lots"),
        Say("$"),
    ]


def test_unclosed_fence_takes_the_rest_of_the_prompt() -> None:
    assert parse("write a.txt\n```\nx\ny") == [
        ToolStep("write_file", {"path": "a.txt", "content": "x\ny\n"})
    ]


def test_empty_fence_writes_an_empty_file() -> None:
    assert parse("write a.txt\n```\n```\nbye") == [
        ToolStep("write_file", {"path": "a.txt", "content": ""}),
        Say("bye"),
    ]


def test_doing_and_done_move_an_item_of_the_current_list() -> None:
    assert parse("doing: 2\ndone: 2\ndoing: x") == [
        Progress(2, "in_progress"),
        Progress(2, "completed"),
        Say("doing: x"),
    ]


def test_delegate_hands_one_directive_to_a_named_sub_agent() -> None:
    assert parse("delegate tester: $ pytest -q") == [
        ToolStep("delegate", {"agent": "tester", "task": "$ pytest -q"})
    ]


def test_delegate_hands_a_fenced_block_of_directives() -> None:
    prompt = "delegate writer:\n~~~\nwrite a.txt\n```\nhi\n```\n$ cat a.txt\n~~~\nthen this"
    assert parse(prompt) == [
        ToolStep("delegate", {"agent": "writer", "task": "write a.txt\n```\nhi\n```\n$ cat a.txt"}),
        Say("then this"),
    ]
    assert parse("delegate t:\n```\nls\n```") == [
        ToolStep("delegate", {"agent": "t", "task": "ls"})
    ]


def test_delegate_without_a_task_stays_text() -> None:
    assert parse("delegate tester:") == [Say("delegate tester:")]
