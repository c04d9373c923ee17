"""A person's day with the console beyond one answer: forks that say where they came from,
"by you" after a reload, a session list that follows the server live (and agrees with the
open session's header, on two pages, over both wires), searching, the keys, the model
picker, highlighted files and a Markdown preview, a workflow chosen and run, the mode and
the rules, a rewind, the tab's count of what waits, and who is signed in."""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.async_api import expect

from blitz_client import AsyncBlitz

WORKFLOWS = Path(__file__).resolve().parents[2] / "docs" / "examples" / "workflows"
TOKEN = "habits-test-token-5678"
FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "seats": {"type": "integer", "title": "Seats", "minimum": 1, "maximum": 8},
        "size": {"type": "string", "enum": ["small", "large"], "title": "Table"},
    },
    "required": ["name"],
}


async def test_a_fork_opens_at_its_own_address_and_says_where_it_came_from(server, console):
    async with AsyncBlitz(server.grpc_target) as blitz:
        source = await blitz.create_session(title="origin")
        first = ""
        async for event in blitz.run(source.id, "hello"):
            first = event.turn_id
        async for _ in blitz.run(source.id, "and again"):
            pass
        page = await console(server, f"#/s/{source.id}")
        await page.live()
        await expect(page.finished()).to_have_count(2)
        await page.finished().first.get_by_role("button", name="fork here").click()
        await page.page.wait_for_url(re.compile(r"#/s/(?!" + source.id + r")[^/]+$"))
        fork_id = page.page.url.rsplit("/", 1)[1]
        await page.live()
        await expect(page.page.get_by_role("heading", name="fork of origin")).to_be_visible()
        line = page.page.locator("[data-kind=forked]")
        await expect(line).to_contain_text("forked from origin at turn 1")
        await expect(line.get_by_role("link", name="origin")).to_have_attribute(
            "href", f"#/s/{source.id}"
        )
        await expect(page.page.locator(f"[data-session='{fork_id}']")).to_contain_text(
            "fork of origin"
        )
        await line.get_by_role("button", name="show that history").click()
        history = line.get_by_role("region", name="The history the fork remembers")
        await expect(history.locator("[data-kind=prompt]")).to_have_text(["hello"])
        await expect(history.locator("[data-kind=text]")).to_contain_text("You said: hello")
        await page.doc_shot("fork")
        await page.page.reload()
        await page.live()
        await expect(page.page.locator("[data-kind=forked]")).to_contain_text(
            "forked from origin at turn 1"
        )

        # A fork made elsewhere: its title is all there is to say where it came from.
        other = await blitz.fork_session(source.id, first)
    elsewhere = await console(server, f"#/s/{other.id}", name="elsewhere")
    await elsewhere.live()
    await expect(elsewhere.page.locator("[data-kind=forked]")).to_contain_text("forked from origin")
    for each in (page, elsewhere):
        await each.check_clean()


async def test_by_you_is_remembered_after_a_reload_and_another_browser_is_another_client(
    server, console
):
    page = await console(server, name="mine")
    session_id = await page.create_session("mine")
    await page.send("$ echo one\nask: go on? [yes|no]")
    await page.decide("o")
    await expect(page.question()).to_be_focused()
    await page.page.keyboard.press("1")
    await page.page.keyboard.press("Enter")
    await expect(page.finished()).to_have_count(1)
    client = await page.page.evaluate("localStorage.getItem('blitz.client')")
    assert re.fullmatch(r"console/[0-9a-f]{16}", client), client

    await page.page.reload()
    await page.live()
    await expect(page.finished()).to_have_count(1)
    await expect(page.page.locator("[data-kind=approval]")).to_contain_text("approved once by you")
    await expect(page.page.locator("[data-kind=question]")).to_contain_text("answered by you: yes")
    async with AsyncBlitz(server.grpc_target) as blitz:
        events = [e async for e in blitz.watch(session_id, follow=False)]
    clients = {e.resolution.client for e in events if e.HasField("resolution")}
    assert clients == {client}

    other = await console(server, f"#/s/{session_id}", name="other")
    await other.live()
    await expect(other.page.locator("[data-kind=approval]")).to_contain_text(
        "approved once by another client"
    )
    for each in (page, other):
        await each.check_clean()


async def test_the_list_follows_the_server_live_and_agrees_with_the_header_on_two_pages(
    server, console, console_wire
):
    first = await console(server, name="first", wire=console_wire)
    session_id = await first.create_session("shared")
    second = await console(server, f"#/s/{session_id}", name="second", wire=console_wire)
    await second.live()
    for page in (first, second):
        await expect(page.page.locator(".session-list")).to_have_attribute("data-mode", "watching")

    async with AsyncBlitz(server.grpc_target) as blitz:
        # A session made elsewhere shows at once, with no reload.
        elsewhere = await blitz.create_session(title="made elsewhere")
        for page in (first, second):
            await expect(page.page.locator(f"[data-session='{elsewhere.id}']")).to_be_visible()

        await first.send("$ echo shared")
        for page in (first, second):
            entry = page.page.locator(f"[data-session='{session_id}']")
            await expect(entry).to_have_attribute("data-state", "parked")
            await expect(page.page.get_by_test_id("session-state")).to_have_text("parked")
            await expect(page.approval()).to_be_visible()
        await first.doc_shot("two-pages")
        await second.decide("o")
        await expect(first.approval()).to_have_count(0)  # the other page's prompt closes
        await expect(first.page.locator("[data-kind=approval]")).to_contain_text(
            "approved once by another client"
        )
        for page in (first, second):
            await expect(page.finished()).to_have_count(1)
            entry = page.page.locator(f"[data-session='{session_id}']")
            await expect(entry).to_have_attribute("data-state", "idle")
            await expect(page.page.get_by_test_id("session-state")).to_have_text("idle")

        # A rename and a deletion elsewhere reach both the list and the header.
        await blitz.update_session(session_id, title="renamed elsewhere")
        for page in (first, second):
            await expect(page.page.locator(f"[data-session='{session_id}']")).to_contain_text(
                "renamed elsewhere"
            )
            await expect(page.page.get_by_role("heading", name="renamed elsewhere")).to_be_visible()
        await blitz.delete_session(elsewhere.id)
        for page in (first, second):
            await expect(page.page.locator(f"[data-session='{elsewhere.id}']")).to_have_count(0)
    for page in (first, second):
        page.check_wire()
        await page.check_clean()


async def test_a_server_without_watch_sessions_is_polled(server, console, browser):
    """A server from before WatchSessions answers it 404 (UNIMPLEMENTED): the list polls."""
    page = await console(server)
    await page.page.route(
        "**/blitz.v1.SessionService/WatchSessions", lambda r: r.fulfill(status=404)
    )
    await page.page.reload()
    await expect(page.page.locator(".session-list")).to_have_attribute("data-mode", "polling")
    async with AsyncBlitz(server.grpc_target) as blitz:
        made = await blitz.create_session(title="polled")
    await expect(page.page.locator(f"[data-session='{made.id}']")).to_be_visible()
    await page.check_clean()


async def test_sessions_are_searched_by_title_and_label_and_a_log_by_its_text(server, console):
    async with AsyncBlitz(server.grpc_target) as blitz:
        await blitz.create_session(title="alpha report", labels={"team": "docs"})
        await blitz.create_session(title="beta build", labels={"team": "infra"})
        target = await blitz.create_session(title="gamma notes")
        async for _ in blitz.run(target.id, "the weather is fine\nthe harbour is calm"):
            pass
        async for _ in blitz.run(target.id, "nothing of note"):
            pass
    page = await console(server)
    listed = page.page.locator(".session-list li")
    await expect(listed).to_have_count(3)
    search = page.page.get_by_label("Search sessions")
    await search.fill("beta")
    await expect(listed).to_have_count(1)
    await expect(listed).to_contain_text("beta build")
    await search.fill("team=docs")
    await expect(listed).to_have_count(1)
    await expect(listed).to_contain_text("alpha report")
    await search.fill("nothing like it")
    await expect(page.page.get_by_text("No sessions match.")).to_be_visible()
    await search.fill("")
    await expect(listed).to_have_count(3)

    await page.page.locator(f"[data-session='{target.id}']").click()
    await page.live()
    await expect(page.finished()).to_have_count(2)
    await page.page.locator("body").click()
    await page.page.keyboard.press("/")  # in a session, `/` finds in its log
    find = page.page.get_by_label("Find in this session")
    await expect(find).to_be_focused()
    await page.page.keyboard.type("harbour")
    await expect(page.page.locator(".find-count")).to_contain_text("match “harbour”")
    await expect(page.page.locator("[data-kind=text]")).to_have_count(1)
    await expect(page.page.locator("[data-kind=text]")).to_contain_text("the harbour is calm")
    await expect(page.page.locator("[data-kind=prompt]")).to_have_count(1)
    await find.fill("")
    await expect(page.page.locator("[data-kind=prompt]")).to_have_count(2)
    await page.check_clean()


async def test_the_question_mark_lists_the_keys(server, console):
    for width, height in ((1280, 860), (390, 844)):
        page = await console(server, width=width, height=height)
        await expect(page.page.get_by_role("region", name="Sessions")).to_be_visible()
        await page.page.locator("body").click()
        await page.page.keyboard.press("?")
        dialog = page.page.get_by_role("dialog", name="Keyboard shortcuts")
        await expect(dialog).to_be_visible()
        keys = ("o", "s", "a", "r", "d", "x", "e", "1\u20139", "Ctrl+Enter, \u2318+Enter", "?")
        for key in keys:
            await expect(
                dialog.locator("kbd", has_text=re.compile(f"^{re.escape(key)}$"))
            ).to_have_count(1)
        assert await page.page.evaluate("document.scrollingElement.scrollWidth") <= width
        if width > 400:
            await page.doc_shot("keys")
        await page.page.keyboard.press("Escape")
        await expect(dialog).to_be_hidden()
        await page.check_clean()


async def test_the_new_session_form_picks_a_model_and_an_agent(server, console):
    page = await console(server)
    await page.page.get_by_role("button", name="new session").click()
    form = page.page.get_by_role("form", name="New session")
    model = form.get_by_label("Model")
    await expect(model.locator("option")).to_have_text(["demo (default)"])
    await expect(model).to_have_value("demo")
    await form.get_by_label("Title").fill("picked")
    await form.get_by_role("button", name="create").click()
    await page.page.wait_for_url(re.compile(r"#/s/[^/]+$"))
    await page.live()
    await expect(page.page.get_by_test_id("session-model")).to_have_text("demo")
    await page.check_clean()


async def test_files_and_diffs_are_highlighted_and_markdown_is_previewed(server, console):
    page = await console(server)
    await page.create_session("highlight")
    await page.send(
        "write app.py\n```\ndef greet(name):\n    return 'hi ' + name\n```\n"
        "write README.md\n```\n# Notes\n\nSome *words* and <img src=x onerror=alert(1)>.\n```"
    )
    await expect(page.approval()).to_contain_text("app.py")
    await page.decide("o")
    await expect(page.approval()).to_contain_text("README.md")
    await page.decide("o")
    await expect(page.finished()).to_have_count(1)

    await page.page.get_by_role("link", name="Files", exact=True).click()
    await page.page.get_by_role("button", name="app.py").click()
    code = page.page.locator(".file-content")
    await expect(code.locator(".hljs-keyword").first).to_have_text("def")
    await expect(code).to_contain_text("return 'hi ' + name")
    await page.doc_shot("file")
    await page.page.get_by_role("button", name="README.md").click()
    preview = page.page.locator(".file-preview")
    await expect(preview.get_by_role("heading", name="Notes")).to_be_visible()
    await expect(preview.locator("em")).to_have_text("words")
    await expect(preview.locator("img")).to_have_count(0)
    await expect(preview).to_contain_text("<img src=x onerror=alert(1)>")
    await page.page.get_by_role("button", name="source").click()
    await expect(page.page.locator(".file-content")).to_contain_text("# Notes")

    await page.page.get_by_role("link", name="Diff", exact=True).click()
    diff = page.page.get_by_role("region", name="What the agent changed")
    await expect(diff.locator(".d2h-code-line-ctn .hljs-keyword").first).to_have_text("def")
    await page.doc_shot("diff")
    await page.check_clean()


async def test_a_workflow_is_chosen_filled_in_and_run_step_by_step(serve, console):
    server = await serve(f"--workflows-dir={WORKFLOWS}")
    page = await console(server)
    await page.create_session("workflows")
    await page.page.get_by_role("button", name="workflow…").click()
    runner = page.page.get_by_role("form", name="Run a workflow")
    picker = runner.get_by_label("Workflow")
    await expect(picker.locator("option")).to_have_count(2)
    await picker.select_option("every-step")
    issue = runner.get_by_label("issue")
    await expect(issue).to_have_attribute("type", "number")
    await expect(runner.locator("[data-field=issue] .required")).to_have_count(1)
    await expect(runner.get_by_label("quick")).not_to_be_checked()
    await expect(runner.get_by_role("list", name="Steps").locator("li")).to_have_count(7)
    await runner.get_by_role("button", name="run").click()  # the issue is required
    await expect(runner.locator("[data-field=issue] .field-error")).to_contain_text("required")

    await picker.select_option("hello")
    name = runner.get_by_label("name")
    await expect(name).to_have_value("world")  # its default
    await name.fill("Ada")
    await page.shot("workflow-form")
    await runner.get_by_role("button", name="run").click()
    await expect(runner).to_have_count(0)
    steps = page.page.locator("[data-kind=flow-step]")
    await expect(page.approval()).to_be_focused()  # the command step asks first
    await expect(steps.nth(0)).to_have_text("[1/2] Greet ✓ (hello@1)")
    await expect(steps.nth(1)).to_have_attribute("data-status", "waiting")
    await page.decide("o")
    await expect(page.finished()).to_have_count(1)
    await expect(steps.nth(1)).to_have_text("[2/2] Write it down ✓ (hello@1)")
    await expect(page.page.locator("[data-kind=prompt]")).to_contain_text("/run hello name=Ada")
    await page.doc_shot("workflow")
    await page.check_clean()


async def test_the_mode_is_changed_from_the_header(server, console):
    page = await console(server)
    session_id = await page.create_session("modes")
    mode = page.page.get_by_test_id("session-mode")
    await expect(mode).to_have_value("1")  # ask
    await mode.select_option(label="read-only")
    async with AsyncBlitz(server.grpc_target) as blitz:
        for _ in range(100):
            if (await blitz.session(session_id)).mode == 3:  # SESSION_MODE_READ_ONLY
                break
            await page.page.wait_for_timeout(100)
        assert (await blitz.session(session_id)).mode == 3
    await page.send("$ echo nope")
    await expect(page.finished()).to_have_count(1)
    await expect(page.approval()).to_have_count(0)  # refused without asking
    await expect(page.page.locator("[data-kind=tool]")).to_contain_text("read")
    await mode.select_option(label="ask")
    await page.send("$ echo now")
    await expect(page.approval()).to_be_visible()
    await page.check_clean()


async def test_a_turn_is_rewound_from_its_footer_after_a_confirmation(server, console):
    page = await console(server)
    await page.create_session("rewind")
    await page.send("hello")
    await expect(page.finished()).to_have_count(1)
    await page.send("write later.txt\n```\nlater\n```")
    await page.decide("o")
    await expect(page.finished()).to_have_count(2)

    await page.finished().first.get_by_role("button", name="rewind here").click()
    dialog = page.page.get_by_role("dialog", name="Rewind the session")
    await expect(dialog).to_contain_text("Rewind to turn 1?")
    await expect(dialog).to_contain_text("The later turn leaves the model's history")
    await expect(dialog.get_by_label("also put back the files they changed")).to_be_checked()
    await page.doc_shot("rewind")
    await dialog.get_by_role("button", name="cancel").click()
    await expect(dialog).to_have_count(0)
    await expect(page.page.locator("[data-kind=rewound]")).to_have_count(0)

    await page.finished().first.get_by_role("button", name="rewind here").click()
    await (
        page.page.get_by_role("dialog", name="Rewind the session")
        .get_by_role("button", name="rewind")
        .click()
    )
    await expect(page.page.locator("[data-kind=rewound]")).to_contain_text(
        "(1 later turn dropped from the history, 1 file restored)"
    )
    await page.page.get_by_role("link", name="Files", exact=True).click()
    await expect(page.page.get_by_role("button", name="later.txt")).to_have_count(0)
    await page.check_clean()


async def test_the_tab_title_counts_what_waits_everywhere(server, console):
    page = await console(server)
    await expect(page.page).to_have_title("Blitz console")
    async with AsyncBlitz(server.grpc_target) as blitz:
        asked = []
        for n in range(2):
            made = await blitz.create_session(title=f"waiting {n}")
            stream = blitz.run(made.id, "$ echo wait")
            async for event in stream:
                if event.HasField("approval_request"):
                    asked.append((made.id, event.approval_request.request_id))
                    break
            await stream.aclose()
        await expect(page.page).to_have_title("(2) Blitz console")
        await blitz.decide(*asked[0], "once")
        await expect(page.page).to_have_title("(1) Blitz console")
        await blitz.decide(*asked[1], "deny")
        await expect(page.page).to_have_title("Blitz console")
    await page.check_clean()


async def test_the_header_says_who_is_signed_in_and_signs_out(serve, console):
    server = await serve(f"--tokens=alice:{TOKEN}")
    page = await console(server)
    form = page.page.get_by_role("form", name="Sign in")
    await form.get_by_label("Token").fill(TOKEN)
    await form.get_by_role("button", name="sign in").click()
    who = page.page.get_by_test_id("who")
    await expect(who).to_contain_text("signed in as alice")
    await who.get_by_role("button", name="sign out").click()
    await expect(page.page.get_by_role("form", name="Sign in")).to_be_visible()

    local = await console(await serve(name="local"), name="local")
    await expect(local.page.get_by_test_id("who")).to_have_text("no sign-in needed")
    for each in (page, local):
        await each.check_clean()


async def test_on_a_phone_forms_and_dialogs_fit(server, console):
    page = await console(server, width=390, height=844)
    await page.create_session("phone form")
    await page.send("call ask_user " + json.dumps({"question": "Book a table?", "form": FORM}))
    await expect(page.question()).to_be_visible()
    await expect(page.question().get_by_role("button", name="decline")).to_be_visible()
    assert await page.page.evaluate("document.scrollingElement.scrollWidth") <= 390
    await page.doc_shot("phone-form")
    await page.question().get_by_role("button", name="decline").click()
    await expect(page.finished()).to_have_count(1)
    await page.finished().first.get_by_role("button", name="rewind here").click()
    dialog = page.page.get_by_role("dialog", name="Rewind the session")
    await expect(dialog.get_by_role("button", name="rewind")).to_be_in_viewport()
    assert await page.page.evaluate("document.scrollingElement.scrollWidth") <= 390
    await page.check_clean()


async def test_an_untitled_session_shows_the_title_its_first_prompt_gives_it(server, console):
    page = await console(server)
    session_id = await page.create_session()
    await expect(page.page.get_by_role("heading", name=session_id)).to_be_visible()
    await page.send("tidy the release notes\nand more")
    await expect(page.finished()).to_have_count(1)
    await expect(page.page.get_by_role("heading", name="tidy the release notes")).to_be_visible()
    await expect(page.page.locator(f"[data-session='{session_id}']")).to_contain_text(
        "tidy the release notes"
    )
    await page.check_clean()
