"""A person at the console: a whole turn with every kind of request, a denial, a plan
rejected then accepted, cancel and steer, images, on a laptop and on a phone."""

from __future__ import annotations

import base64

from playwright.async_api import expect

from blitz_client import AsyncBlitz

# The README's chat example, as one prompt (the demo model takes a directive a line).
TURN = "\n".join(
    [
        "think: a greeting needs a command",
        "todo: greet; ask",
        "$ echo hello",
        "ask: shall I go on? [yes|no]",
        "All done.",
    ]
)
# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


async def test_a_turn_thinks_plans_asks_to_run_an_edited_command_asks_and_finishes(server, console):
    page = await console(server)
    await expect(page.page.get_by_role("form", name="Sign in")).to_have_count(0)
    await page.create_session("greeting")
    await page.send(TURN)

    approval = page.approval()
    await expect(approval).to_be_visible()
    await expect(approval).to_be_focused()  # focus moves to a new approval
    await expect(approval.locator(".detail")).to_have_text("echo hello")
    await expect(approval).to_contain_text("rule scope: command: echo hello")
    await expect(approval).to_contain_text("COMMAND")
    await page.shot("approval")
    await page.page.keyboard.press("e")  # the same letters as `blitz chat`
    edit = approval.get_by_label("Command to run")
    await expect(edit).to_be_focused()
    await edit.fill("echo edited")
    await page.page.keyboard.press("Control+Enter")

    question = page.question()
    await expect(question).to_be_visible()
    await expect(question).to_be_focused()
    await expect(page.page.locator("[data-kind=approval]")).to_contain_text(
        "approved once by you as: echo edited"
    )
    tool = page.page.locator("[data-kind=tool][data-tool=run_command]")
    await expect(tool.locator(".tool-output")).to_contain_text("edited")
    await expect(tool).to_contain_text("exit 0")
    await question.get_by_label("yes").check()
    await question.get_by_role("button", name="answer").click()

    await expect(page.finished()).to_have_count(1)
    await expect(page.page.locator("[data-kind=question]")).to_contain_text("answered by you: yes")
    await expect(page.page.get_by_test_id("turn-usage")).to_contain_text("4 model calls")
    await expect(page.page.get_by_test_id("turn-usage")).to_contain_text("session: 168 tokens")
    await expect(page.page.get_by_test_id("session-usage")).to_contain_text("4 model calls")
    thought = page.page.locator("details[data-kind=thought]")
    await expect(thought).to_have_count(1)
    assert await thought.get_attribute("open") is None  # collapsed
    await expect(thought).to_contain_text("thought for 5 words")
    await expect(page.page.get_by_role("complementary", name="Tasks")).to_contain_text("greet")
    await expect(page.page.locator("[data-kind=text]").last).to_contain_text("You said: All done.")
    await page.shot("turn")
    await page.check_clean()


async def test_a_denial_carries_its_reason_to_the_model(server, console):
    page = await console(server)
    await page.create_session("deny")
    await page.send("$ rm -rf build")
    approval = page.approval()
    await expect(approval).to_be_focused()
    await page.page.keyboard.press("d")
    reason = approval.get_by_label("Reason (the model receives it)")
    await expect(reason).to_be_focused()
    await reason.fill("not on this machine")
    await page.page.keyboard.press("Enter")

    await expect(page.finished()).to_have_count(1)
    await expect(page.page.locator("[data-kind=approval]")).to_contain_text(
        "denied by you: not on this machine"
    )
    tool = page.page.locator("[data-kind=tool][data-tool=run_command]")
    await expect(tool).to_contain_text("not on this machine")
    await page.check_clean()


async def test_deny_and_stop_ends_the_turn_cancelled(server, console):
    page = await console(server)
    await page.create_session("stop")
    await page.send("$ echo one\n$ echo two")
    await expect(page.approval()).to_be_focused()
    await page.page.keyboard.press("x")
    # The reason's box takes the focus once drawn; Enter before that would go elsewhere.
    await expect(page.page.get_by_label("Reason (the model receives it)")).to_be_focused()
    await page.page.keyboard.press("Enter")
    await expect(page.finished()).to_contain_text("CANCELLED")
    await expect(page.page.locator("[data-kind=approval]")).to_contain_text("the turn stopped")
    await page.check_clean()


async def test_a_plan_is_rejected_with_feedback_then_accepted_and_carried_out(server, console):
    page = await console(server)
    await page.create_session("plan")
    await page.send("$ echo planned", plan=True)
    plan = page.page.locator(".plan.open")
    await expect(plan).to_contain_text("plan proposed")
    await expect(plan).to_contain_text("echo planned")
    await plan.get_by_role("button", name="reject…").click()
    await plan.get_by_label("Feedback for the model").fill("say why first")
    await plan.get_by_role("button", name="reject the plan").click()
    await expect(page.page.locator("[data-kind=plan-decision]")).to_contain_text(
        "plan rejected: say why first"
    )
    await expect(page.page.locator(".plan.open")).to_have_count(0)

    await page.send("$ echo planned", plan=True)
    plan = page.page.locator(".plan.open")
    await expect(plan).to_have_count(1)
    await page.shot("plan")
    await plan.get_by_role("button", name="accept the plan").click()
    await expect(page.page.locator("[data-kind=plan-decision]").last).to_contain_text(
        "plan accepted"
    )
    await expect(page.approval()).to_contain_text("echo planned")
    await page.decide("o")
    await expect(page.finished()).to_have_count(3)
    await expect(page.page.locator("[data-kind=tool][data-tool=run_command]").last).to_contain_text(
        "exit 0"
    )
    await page.check_clean()


async def test_a_running_turn_is_steered_and_cancelled(server, console):
    page = await console(server)
    await page.create_session("steer")
    await page.send("$ echo wait")
    await expect(page.approval()).to_be_visible()
    steer = page.page.get_by_label("Steer text")
    await steer.fill("also mention the weather")
    await page.page.get_by_role("button", name="steer").click()
    await expect(
        page.page.get_by_role("status").filter(has_text="sent to the running turn")
    ).to_be_visible()
    await page.page.get_by_role("button", name="cancel turn").click()
    await expect(page.finished()).to_contain_text("CANCELLED")
    await expect(page.finished()).to_contain_text("not delivered: also mention the weather")
    await expect(page.page.locator("[data-kind=approval]")).to_contain_text("withdrawn")
    await expect(page.page.get_by_label("Prompt")).to_be_visible()  # a new turn may start
    await page.check_clean()


async def test_a_turn_takes_an_uploaded_image(server, console, tmp_path):
    picture = tmp_path / "dot.png"
    picture.write_bytes(PNG)
    page = await console(server)
    session_id = await page.create_session("image")
    await page.page.get_by_label("Attach images").set_input_files(str(picture))
    await expect(page.page.get_by_role("list", name="Images to send").locator("img")).to_have_count(
        1
    )
    await page.send("what is in it?")
    await expect(page.finished()).to_have_count(1)
    await expect(page.page.locator("[data-kind=prompt]")).to_contain_text("1 image")
    async with AsyncBlitz(server.grpc_target) as blitz:
        [turn] = [turn async for turn in blitz.list_turns(session_id)]
        assert len(turn.turn.image_ids) == 1
    await page.check_clean()


async def test_on_a_phone_the_console_fits_375_pixels(server, console):
    page = await console(server, width=375, height=740)
    await page.create_session("phone")
    await page.send("$ echo small")
    await expect(page.approval()).to_be_visible()
    await expect(page.approval().get_by_role("button", name="once")).to_be_in_viewport()
    wide = await page.page.evaluate("document.scrollingElement.scrollWidth")
    assert wide <= 375
    await page.shot("phone")
    await page.decide("o")
    await expect(page.finished()).to_have_count(1)
    await page.page.get_by_role("link", name="← sessions").click()
    await expect(page.page.get_by_role("region", name="Sessions")).to_be_visible()
    assert await page.page.evaluate("document.scrollingElement.scrollWidth") <= 375
    await page.check_clean()
