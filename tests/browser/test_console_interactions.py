"""What a person answers and reads in a session, as the console draws it: a form question
with typed fields (a refusal on its field, a decline), the suggested rule and the rules
that result, a plan shown once, a long output in full, the lines a cancel closes, replies
below the fold, the keys of a question and of the composer, server commands' output, and
a turn queued behind another."""

from __future__ import annotations

import json

from playwright.async_api import expect

from blitz_client import AsyncBlitz

FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "who books"},
        "seats": {"type": "integer", "title": "Seats", "minimum": 1, "maximum": 8},
        "terrace": {"type": "boolean", "title": "Terrace"},
        "size": {"type": "string", "enum": ["small", "large"], "title": "Table"},
        "when": {"type": "string", "format": "date", "title": "Day"},
        "diet": {"type": "array", "items": {"type": "string", "enum": ["vegan", "halal"]}},
    },
    "required": ["name", "seats"],
}


PROMPT_HINT = "prompt: Ctrl+Enter or ⌘+Enter sends, Enter is a new line; /help lists the commands"


def ask_form(question: str = "Book a table?") -> str:
    """The demo model's directive that asks `FORM` through ask_user."""
    return "call ask_user " + json.dumps({"question": question, "form": FORM})


async def test_a_form_question_has_typed_fields_a_refusal_on_its_field_and_a_decline(
    server, console, console_wire
):
    page = await console(server, wire=console_wire)
    await page.create_session("booking")
    await page.send(ask_form())
    form = page.question()
    await expect(form).to_be_focused()
    await expect(form).to_contain_text("Book a table?")
    name = form.get_by_label("Name")
    seats = form.get_by_label("Seats")
    await expect(name).to_have_attribute("type", "text")
    await expect(seats).to_have_attribute("type", "number")
    await expect(seats).to_have_attribute("min", "1")
    await expect(seats).to_have_attribute("max", "8")
    await expect(form.get_by_label("Terrace")).to_have_attribute("type", "checkbox")
    await expect(form.get_by_label("Day")).to_have_attribute("type", "date")
    await expect(form.get_by_role("group", name="Table").get_by_role("radio")).to_have_count(2)
    await expect(form.locator("[data-field=name] .required")).to_have_count(1)
    await expect(form.locator("[data-field=terrace] .required")).to_have_count(0)
    await expect(form).to_contain_text("who books")
    asking = page.page.locator("[data-kind=tool][data-tool=ask_user] .tool-status")
    await expect(asking).to_have_text("waiting for an answer")

    await name.fill("Ada")
    await seats.fill("12")  # past the maximum: the server says so, on the field
    await form.get_by_role("button", name="send").click()
    refused = form.locator("[data-field=seats] .field-error")
    await expect(refused).to_be_visible()
    await expect(seats).to_have_attribute("aria-invalid", "true")
    await expect(seats).to_be_focused()
    await expect(page.question()).to_have_count(1)  # still open
    await page.doc_shot("form")

    await seats.fill("4")
    await form.get_by_label("Terrace").check()
    await form.get_by_label("large").check()
    await form.get_by_label("Day").fill("2026-12-24")
    await form.get_by_role("group", name="diet").get_by_label("vegan").check()
    await form.get_by_role("button", name="send").click()
    await expect(page.finished()).to_have_count(1)
    answered = page.page.locator("[data-kind=question]").get_by_test_id("resolution")
    for part in (
        "answered by you",
        "name=Ada",
        "seats=4",
        "terrace=true",
        "size=large",
        "when=2026-12-24",
        "diet=vegan",
    ):
        await expect(answered).to_contain_text(part)

    # Another form, declined.
    await page.send(ask_form("Another one?"))
    await expect(page.question()).to_be_focused()
    await page.question().get_by_role("button", name="decline").click()
    await expect(page.finished()).to_have_count(2)
    await expect(page.page.locator("[data-kind=question]").nth(1)).to_contain_text(
        "declined by you"
    )
    page.check_wire()
    await page.check_clean()


async def test_the_suggested_rule_is_one_key_and_its_rule_is_listed_and_revoked(server, console):
    page = await console(server)
    await page.create_session("rules")
    await page.send("$ git status --short")
    approval = page.approval()
    button = approval.get_by_role("button", name="always allow commands starting git status")
    await expect(button.locator("code")).to_have_text("git status")
    await expect(button).to_be_visible()
    await page.doc_shot("suggested-rule")
    await page.decide("r")
    await expect(page.finished()).to_have_count(1)
    await expect(page.page.locator("[data-kind=approval]")).to_contain_text(
        "approved always by you"
    )

    # The rule covers the next such command: no approval, a line saying a rule approved it.
    await page.send("$ git status")
    await expect(page.finished()).to_have_count(2)
    await expect(page.page.locator("[data-kind=resolution]")).to_contain_text("approved by a rule")

    await page.page.get_by_role("button", name="rules", exact=True).click()
    rules = page.page.get_by_role("region", name="Approval rules")
    await expect(rules.locator("li")).to_have_count(1)
    await expect(rules.locator("li")).to_contain_text("commands starting git status")
    await expect(rules.locator("li code")).to_have_text("git status")
    await expect(rules).to_contain_text("always")
    await rules.get_by_role("button", name="revoke commands starting git status").click()
    await expect(rules.locator("li")).to_have_count(0)
    await expect(rules).to_contain_text("No rule applies")
    await page.send("$ git status")
    await expect(page.approval()).to_be_visible()  # it asks again
    await page.check_clean()


async def test_a_plan_shows_once_as_markdown_and_accepting_it_says_so(server, console):
    page = await console(server)
    await page.create_session("plan once")
    await page.send("todo: read; fix; test; ship\n$ echo planned", plan=True)
    plan = page.page.locator(".plan.open")
    await expect(plan).to_be_visible()
    # Once: no text line beside the card, no second list of the steps, no raw backquote.
    await expect(page.page.locator("[data-kind=text]")).to_have_count(0)
    await expect(plan.locator("ol")).to_have_count(1)
    await expect(plan.locator("code")).to_have_text("echo planned")
    await expect(plan).not_to_contain_text("`")
    # A line after the last step is a line of its own, not glued to the step.
    await expect(plan.locator("li").last).to_have_text("run echo planned")
    await expect(plan.locator("p").last).to_contain_text("task list set (5 items)")
    await page.doc_shot("plan")
    await expect(page.page.get_by_label("plan mode")).to_be_checked()
    await plan.get_by_role("button", name="accept the plan").click()
    await expect(page.page.locator("[data-kind=prompt]").nth(1)).to_contain_text(
        "accepted the plan"
    )
    await expect(page.page.locator("[data-kind=prompt]").nth(1)).not_to_contain_text("no text")
    await expect(page.approval()).to_contain_text("echo planned")
    await page.decide("o")
    await expect(page.finished()).to_have_count(2)
    await expect(page.page.get_by_label("plan mode")).not_to_be_checked()
    await page.check_clean()


async def test_a_long_output_shows_its_tail_then_all_and_says_when_the_server_cut_it(
    server, console
):
    page = await console(server)
    await page.create_session("long")
    await page.send("$ seq 600")
    await page.decide("o")
    await expect(page.finished()).to_have_count(1)
    tool = page.page.locator("[data-kind=tool]")
    output = tool.locator(".tool-output")
    await expect(output).to_contain_text("… 200 earlier lines")
    await expect(output).to_contain_text("600")
    await tool.get_by_role("button", name="show all 600 lines").click()
    text = await output.inner_text()
    assert text.splitlines()[:2] == ["1", "2"], text[:40]
    assert len(text.splitlines()) == 600
    await expect(tool.get_by_role("button", name="show the last 400 lines")).to_be_visible()
    await expect(tool.locator(".cut-note")).to_have_count(0)

    # More than the server keeps of a command's output: the page says so.
    await page.send("$ seq 100000")
    await page.decide("o")
    await expect(page.finished()).to_have_count(2)
    await expect(tool.nth(1).locator(".cut-note")).to_contain_text("the server kept its first")
    await page.check_clean()


async def test_a_cancel_closes_the_turns_open_lines(server, console):
    page = await console(server)
    await page.create_session("cancel")
    await page.send("$ echo wait")
    await expect(page.approval()).to_be_visible()
    tool = page.page.locator("[data-kind=tool]")
    await expect(tool.locator(".tool-status")).to_contain_text("waiting for approval")
    await page.page.get_by_label("Steer text").fill("also mention the weather")
    await page.page.get_by_role("button", name="steer", exact=True).click()
    steer = page.page.get_by_test_id("steer")
    await expect(steer).to_contain_text("sent to the running turn")
    await page.page.get_by_role("button", name="cancel turn").click()
    await expect(page.finished()).to_contain_text("CANCELLED")
    await expect(tool.locator(".tool-status")).to_contain_text("stopped")
    await expect(tool).not_to_contain_text("running…")
    await expect(tool).not_to_contain_text("waiting for approval")
    await expect(steer).to_contain_text("not delivered")
    await expect(page.page.get_by_text("sent to the running turn")).to_have_count(0)

    # A steer the turn reads says so once the turn has ended.
    await page.send("$ echo again")
    await expect(page.approval()).to_be_visible()
    await page.page.get_by_label("Steer text").fill("keep it short")
    await page.page.get_by_role("button", name="steer", exact=True).click()
    await expect(steer).to_contain_text("sent to the running turn")
    await page.approval().get_by_role("button", name="once").click()
    await expect(page.finished()).to_have_count(2)
    await expect(steer).to_contain_text("delivered to the turn")
    await page.check_clean()


async def test_replies_below_the_fold_come_into_sight_and_enter_sends(server, console):
    async with AsyncBlitz(server.grpc_target) as blitz:
        made = await blitz.create_session(title="fold")
        for n in range(8):  # a log longer than the screen
            async for _ in blitz.run(made.id, "\n".join(f"line {n}.{k}" for k in range(6))):
                pass
    turns = 8
    for width, height in ((1280, 860), (390, 844)):
        page = await console(server, f"#/s/{made.id}", width=width, height=height)
        await page.live()
        await page.send("$ rm -rf build")
        await page.decide("d")
        reason = page.approval().get_by_label("Reason (the model receives it)")
        await expect(reason).to_be_focused()
        await expect(reason).to_be_in_viewport()
        await reason.fill("not here")
        await page.page.keyboard.press("Enter")
        await expect(page.page.locator("[data-kind=approval]").last).to_contain_text(
            "denied by you: not here"
        )
        turns += 1
        await expect(page.finished()).to_have_count(turns)

        await page.send("$ echo one")
        await page.decide("e")
        command = page.approval().get_by_label("Command to run")
        await expect(command).to_be_focused()
        await expect(command).to_be_in_viewport()
        await command.fill("echo edited")
        await page.page.keyboard.press("Enter")  # one line: Enter runs it
        await expect(page.page.locator("[data-kind=approval]").last).to_contain_text(
            "approved once by you as: echo edited"
        )
        turns += 1
        await expect(page.finished()).to_have_count(turns)
        await page.shot(f"fold-{width}")
        await page.check_clean()


async def test_keys_answer_a_question_and_the_composer_sends_on_ctrl_enter(server, console):
    page = await console(server)
    await page.create_session("keys")
    prompt = page.page.get_by_label("Prompt")
    await expect(prompt).to_have_attribute("placeholder", PROMPT_HINT)
    await prompt.click()
    await page.page.keyboard.type("ask: which colour? [red|green|blue]")
    await page.page.keyboard.press("Enter")  # a new line, not a send
    await expect(prompt).to_have_value("ask: which colour? [red|green|blue]\n")
    await expect(page.page.locator("[data-kind=prompt]")).to_have_count(0)
    await page.page.keyboard.press("Control+Enter")
    question = page.question()
    await expect(question).to_be_focused()
    await page.page.keyboard.press("2")
    await expect(question.get_by_label("green")).to_be_checked()
    await page.page.keyboard.press("Enter")
    await expect(page.finished()).to_have_count(1)
    await expect(page.page.locator("[data-kind=question]")).to_contain_text(
        "answered by you: green"
    )
    await page.check_clean()


async def test_server_commands_show_their_output(server, console):
    page = await console(server)
    await page.create_session("commands")
    await page.send("hello")
    await expect(page.finished()).to_have_count(1)
    await page.send("/help")
    await expect(page.finished()).to_have_count(2)
    await expect(page.finished().nth(1).locator(".output")).to_contain_text(
        "/usage: the session's tokens and cost so far"
    )
    await page.send("/usage")
    await expect(page.finished()).to_have_count(3)
    await expect(page.finished().nth(2).locator(".output")).to_contain_text("1 model call")
    await page.check_clean()


async def test_a_turn_queued_behind_a_running_one_runs_after_it(server, console):
    page = await console(server)
    await page.create_session("queue")
    await page.send("$ echo first")
    await expect(page.approval()).to_be_visible()
    await page.page.get_by_label("Steer text").fill("queued hello")
    await page.page.get_by_role("button", name="queue").click()
    queued = page.page.get_by_test_id("queued-turn")
    await expect(queued).to_contain_text("queued: queued hello")
    await page.approval().get_by_role("button", name="once").click()
    await expect(page.finished()).to_have_count(2)
    await expect(queued).to_have_count(0)
    await expect(page.page.locator("[data-kind=text]").last).to_contain_text(
        "You said: queued hello"
    )
    await page.check_clean()
