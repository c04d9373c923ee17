"""Hostile content stays text, and only the origins of `--cors-origin` may call the port.

The model, a command and a file all write HTML meant to run script: an `<img onerror>`, a
`<script>`, a `javascript:` link, an inline handler. Nothing of it may run, and nothing of
it may even reach the Content-Security-Policy (a violation report would mean the page
built markup from it), in the log, the approval's diff, a question, the title, the files
view or the diff view.
"""

from __future__ import annotations

from playwright.async_api import expect

from blitz_client import AsyncBlitz

HOSTILE = [
    "<img src=x onerror=window.__xss=1>",
    "<script>window.__xss=2</script>",
    "[click me](javascript:window.__xss=3)",
    '<a href="javascript:window.__xss=4">link</a> <b onmouseover=window.__xss=5>bold</b>',
    "<svg onload=window.__xss=6></svg><iframe src=javascript:window.__xss=7></iframe>",
]
PROMPT = "\n".join(
    [
        *HOSTILE,
        "$ printf '<img src=x onerror=window.__xss=8>'",
        "write evil.html",
        "```",
        "<script>window.__xss=9</script><img src=x onerror=window.__xss=10>",
        "```",
        "ask: <img src=x onerror=window.__xss=11> pick [<b onclick=window.__xss=12>a</b>|b]",
    ]
)
# What would be there had any of it become markup.
DANGER = (
    "img, script:not([src='/console/console.js']), iframe, svg:not(.d2h-icon),"
    " [onerror], [onload], [onclick], [onmouseover], a[href^='javascript']"
)


async def assert_nothing_ran(page) -> None:  # type: ignore[no-untyped-def]
    assert await page.page.evaluate("window.__xss") is None
    assert await page.page.locator(DANGER).count() == 0
    await page.check_clean()


async def test_what_the_model_a_command_and_a_file_write_never_runs(server, console):
    async with AsyncBlitz(server.grpc_target) as blitz:
        session = await blitz.create_session(title="<img src=x onerror=window.__xss=13>")
    page = await console(server, f"#/s/{session.id}")
    await page.live()
    await expect(page.page.locator(".session-title")).to_have_text(
        "<img src=x onerror=window.__xss=13>"
    )
    await page.send(PROMPT)

    await expect(page.approval()).to_contain_text("printf")
    await page.decide("o")
    approval = page.approval()
    await expect(approval).to_contain_text("WRITE")
    await expect(approval.locator(".diff")).to_contain_text("<script>window.__xss=9</script>")
    await assert_nothing_ran(page)
    await page.decide("o")
    question = page.question()
    await expect(question).to_contain_text("<img src=x onerror=window.__xss=11> pick")
    await expect(question.get_by_label("<b onclick=window.__xss=12>a</b>")).to_be_visible()
    await question.get_by_role("radio").nth(1).check()
    await question.get_by_role("button", name="answer").click()
    await expect(page.finished()).to_have_count(1)

    text = page.page.locator("[data-kind=text]").last
    for line in ("<img src=x onerror=window.__xss=1>", "<script>window.__xss=2</script>"):
        await expect(text).to_contain_text(line)  # shown, as text
    link = text.get_by_text("click me")
    await expect(link).to_be_visible()
    assert await link.get_attribute("href") is None  # a javascript: link is no link
    await link.click()
    await text.get_by_text("bold").hover()
    await expect(page.page.locator(".tool-output")).to_have_text(
        "<img src=x onerror=window.__xss=8>"
    )
    await page.shot("hostile")
    await assert_nothing_ran(page)

    await page.page.get_by_role("link", name="Files", exact=True).click()
    await page.page.get_by_role("button", name="evil.html").click()
    await expect(page.page.locator(".file-content")).to_contain_text(
        "<script>window.__xss=9</script>"
    )
    await page.page.get_by_role("link", name="Diff", exact=True).click()
    await expect(page.page.get_by_role("region", name="What the agent changed")).to_contain_text(
        "<img src=x onerror=window.__xss=10>"
    )
    await assert_nothing_ran(page)


async def test_the_page_refuses_inline_script_and_eval(server, console):
    """The policy itself: a script the page did not ship cannot run, nor can eval. (A
    string given to setTimeout is eval'd by the page itself, where the policy holds; the
    test's own `evaluate` is not bound by it.)"""
    page = await console(server)
    await expect(page.page.get_by_role("region", name="Sessions")).to_be_visible()
    await page.page.evaluate(
        """() => {
          const s = document.createElement("script");
          s.textContent = "window.__xss = 'inline'";
          document.body.append(s);
          setTimeout("window.__xss = 'eval'", 0);
        }"""
    )
    await page.page.wait_for_timeout(300)
    assert await page.page.evaluate("window.__xss") is None
    violations = await page.page.evaluate("window.__violations")
    assert sorted(v.split(" ")[0] for v in violations) == ["script-src", "script-src-elem"], (
        violations
    )


# A page of another origin: calls the server as a dashboard would, and says what it saw. The
# gRPC-Web call is refused (a malformed grpc-timeout) with a trailers-only answer, whose
# status is in its headers: the page can read it only if the server exposes them.
CALLER = """<!doctype html><title>caller</title><script>
window.call = async (url) => {
  try {
    const unary = await fetch(url + "/blitz.v1.SessionService/ListSessions", {
      method: "POST", headers: {"content-type": "application/json",
      "authorization": "Bearer none", "connect-protocol-version": "1"}, body: "{}"});
    const web = await fetch(url + "/blitz.v1.SessionService/GetSession", {
      method: "POST", headers: {"content-type": "application/grpc-web+proto",
      "x-grpc-web": "1", "x-user-agent": "test", "grpc-timeout": "soon"},
      body: new Uint8Array([0, 0, 0, 0, 0])});
    return {ok: true, unary: unary.status, sessions: ((await unary.json()).sessions || []).length,
            grpcStatus: web.headers.get("grpc-status")};
  } catch (error) {
    return {ok: false, error: String(error)};
  }
};
</script>"""


async def test_only_an_allowed_origin_may_call_the_server_from_a_page(serve, browser, other_site):
    allowed, other = other_site(CALLER.encode()), other_site(CALLER.encode())
    server = await serve(f"--cors-origin={allowed}")
    context = await browser.new_context()
    try:
        page = await context.new_page()
        await page.goto(allowed + "/caller.html")
        seen = await page.evaluate("url => window.call(url)", server.url)
        assert seen == {"ok": True, "unary": 200, "sessions": 0, "grpcStatus": "3"}, seen

        await page.goto(other + "/caller.html")
        refused = await page.evaluate("url => window.call(url)", server.url)
        assert refused == {"ok": False, "error": "TypeError: Failed to fetch"}
    finally:
        await context.close()
