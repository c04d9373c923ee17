"""Signing in, and the sessions: listed (filtered, paged), made, renamed, forked, closed,
deleted; a badge and a notification for a request elsewhere; the workspace's files and
diff."""

from __future__ import annotations

from playwright.async_api import expect

from blitz_client import AsyncBlitz

TOKEN = "console-test-token-1234"


async def test_a_token_signs_in_and_a_bad_one_is_refused(serve, console):
    server = await serve(f"--tokens=alice:{TOKEN}")
    page = await console(server)
    form = page.page.get_by_role("form", name="Sign in")
    await expect(form).to_be_visible()
    await page.shot("sign-in")
    await form.get_by_label("Token").fill("not-the-token")
    await form.get_by_role("button", name="sign in").click()
    await expect(form.get_by_role("alert")).to_have_text("The server refused this token.")

    await form.get_by_label("Token").fill(TOKEN)
    await form.get_by_role("button", name="sign in").click()
    await expect(page.page.get_by_role("region", name="Sessions")).to_be_visible()
    assert TOKEN not in page.page.url
    stored = await page.page.evaluate("sessionStorage.getItem('blitz.token')")
    assert stored == TOKEN
    await page.create_session("signed in")
    await page.page.reload()  # the tab keeps its token
    await expect(page.page.get_by_role("heading", name="signed in")).to_be_visible()

    await page.page.get_by_role("button", name="sign out").click()
    await expect(page.page.get_by_role("form", name="Sign in")).to_be_visible()
    assert await page.page.evaluate("sessionStorage.getItem('blitz.token')") is None
    await page.check_clean()


async def test_sessions_are_filtered_paged_renamed_forked_closed_and_deleted(server, console):
    async with AsyncBlitz(server.grpc_target) as blitz:
        for n in range(22):
            await blitz.create_session(title=f"bulk {n:02}", labels={"team": "a" if n % 2 else "b"})
        source = await blitz.create_session(title="source")
        async for _ in blitz.run(source.id, "hello"):
            pass
    page = await console(server)
    listed = page.page.locator(".session-list li")
    await expect(listed).to_have_count(20)  # a page
    await page.page.get_by_role("button", name="older →").click()
    await expect(listed).to_have_count(3)
    await page.page.get_by_role("button", name="← newer").click()
    await page.page.get_by_label("Filter by labels").fill("team=a")
    await expect(listed).to_have_count(11)
    await page.page.get_by_label("Filter by labels").fill("")
    await page.shot("sessions")

    await page.page.locator(f"[data-session='{source.id}']").click()
    await page.live()
    await page.page.get_by_role("button", name="rename").click()
    rename = page.page.get_by_role("form", name="Rename the session")
    await rename.get_by_label("Title").fill("renamed")
    await rename.get_by_label("Labels").fill("team=c")
    await rename.get_by_role("button", name="save").click()
    await expect(page.page.get_by_role("heading", name="renamed")).to_be_visible()
    await expect(page.page.locator(f"[data-session='{source.id}']")).to_contain_text("renamed")

    await page.page.get_by_role("button", name="fork", exact=True).click()
    await expect(page.page.get_by_role("heading", name="fork of renamed")).to_be_visible()
    fork_id = page.page.url.rsplit("/", 1)[1]
    assert fork_id != source.id

    await page.page.get_by_role("button", name="close", exact=True).click()
    await expect(page.page.get_by_test_id("session-state")).to_have_text("closed")
    await expect(page.page.get_by_text("This session is closed")).to_be_visible()
    await page.page.get_by_label("Filter by state").select_option(label="closed")
    await expect(listed).to_have_count(1)
    await page.page.get_by_label("Filter by state").select_option(label="any")

    await page.page.get_by_role("button", name="delete", exact=True).click()
    await page.page.get_by_role("button", name="yes, delete").click()
    await page.page.wait_for_url("**/#/")
    await expect(page.page.locator(f"[data-session='{fork_id}']")).to_have_count(0)
    async with AsyncBlitz(server.grpc_target) as blitz:
        assert fork_id not in [s.id async for s in blitz.sessions()]
    await page.check_clean()


async def test_a_request_elsewhere_shows_a_badge_and_a_notification(server, console):
    page = await console(server, permissions=("notifications",))
    watched = await page.create_session("watched")
    async with AsyncBlitz(server.grpc_target) as blitz:
        other = await blitz.create_session(title="elsewhere")
        stream = blitz.run(other.id, "$ echo elsewhere")
        async for event in stream:
            if event.HasField("approval_request"):
                break
        await stream.aclose()
        badge = page.page.locator(f"[data-session='{other.id}']").get_by_test_id("badge")
        await expect(badge).to_have_text("1")
        notified = await page.page.evaluate("window.__notifications")
        assert notified == ["Blitz: An approval waits: elsewhere"]
        # Not for the open session: it shows the request itself.
        assert await page.page.locator(f"[data-session='{watched}'] .badge").count() == 0
        await page.shot("badge")

        await page.page.locator(f"[data-session='{other.id}']").click()
        await expect(page.approval()).to_be_focused()
        await expect(page.page.locator(f"[data-session='{other.id}'] .badge")).to_have_count(0)
    await page.check_clean()


async def test_the_workspace_shows_its_files_and_the_sessions_diff(server, console):
    page = await console(server)
    session_id = await page.create_session("files")
    await page.send("write notes.txt\n```\nhello from the agent\n```")
    approval = page.approval()
    await expect(approval.locator(".d2h-wrapper")).to_be_visible()  # the diff, as a diff
    await expect(approval.locator(".d2h-code-line-ctn").last).to_contain_text(
        "hello from the agent"
    )
    await expect(approval).to_contain_text("WRITE")
    await page.decide("o")
    await expect(page.finished()).to_have_count(1)

    await page.page.get_by_role("link", name="Files", exact=True).click()
    await page.page.get_by_role("button", name="notes.txt").click()
    await expect(page.page.locator(".file-content")).to_have_text("hello from the agent\n")
    await page.page.get_by_role("link", name="Diff", exact=True).click()
    diff = page.page.get_by_role("region", name="What the agent changed")
    await expect(diff).to_contain_text("1 file changed")
    await expect(diff.locator(".d2h-file-name")).to_contain_text("notes.txt")
    await expect(diff.locator(".d2h-code-line-ctn").last).to_contain_text("hello from the agent")
    await page.shot("diff")
    assert page.page.url.endswith(f"#/s/{session_id}/diff")
    await page.check_clean()


async def test_the_agent_picker_makes_a_session_of_a_declared_agent(serve, console, tmp_path):
    """With an ACP agent declared the new-session form offers a choice of agent; choosing
    it hides the model (its operator's) and the session's header names it. Its process
    starts only at a first turn, which this test never sends (tests/acp runs agents)."""
    stub = tmp_path / "stub-agent"
    stub.write_text("#!/bin/sh\nexit 1\n")
    stub.chmod(0o755)
    config = tmp_path / "blitz.toml"
    config.write_text(f'[agents.stub]\ndisplay_name = "Stub Agent"\ncommand = "{stub}"\n')
    server = await serve(f"--config={config}")
    page = await console(server)
    await page.page.get_by_role("button", name="new session").click()
    form = page.page.get_by_role("form", name="New session")
    picker = form.get_by_label("Agent")
    await expect(picker.locator("option")).to_have_text(["Blitz", "Stub Agent"])
    await expect(form.get_by_label("Model")).to_be_visible()
    await picker.select_option(label="Stub Agent")
    await expect(form.get_by_label("Model")).to_have_count(0)
    await form.get_by_label("Title").fill("by the stub")
    await page.shot("new-session-agent")
    await form.get_by_role("button", name="create").click()
    await page.page.wait_for_url("**/#/s/*")
    await page.live()
    await expect(page.page.get_by_test_id("session-agent")).to_have_text("agent Stub Agent")
    await expect(page.page.get_by_role("button", name="fork", exact=True)).to_be_disabled()
    await page.shot("acp-session")
    session_id = page.page.url.rsplit("/", 1)[1]
    async with AsyncBlitz(server.grpc_target) as blitz:
        made = await blitz.session(session_id)
    assert (made.agent, made.model) == ("stub", "acp:stub")

    # The built-in agent, chosen back, has its model again.
    await page.page.get_by_role("button", name="new session").click()
    await form.get_by_label("Agent").select_option(label="Blitz")
    await expect(form.get_by_label("Model")).to_be_visible()
    await page.check_clean()


async def test_one_agent_is_no_choice(server, console):
    page = await console(server)
    await page.page.get_by_role("button", name="new session").click()
    form = page.page.get_by_role("form", name="New session")
    await expect(form.get_by_label("Title")).to_be_visible()
    await expect(form.get_by_label("Agent")).to_have_count(0)
    await form.get_by_role("button", name="create").click()
    await page.page.wait_for_url("**/#/s/*")
    await page.live()
    await expect(page.page.get_by_test_id("session-agent")).to_have_count(0)
    await page.check_clean()
