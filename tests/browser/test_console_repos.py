"""A person at the console with a session from a repository: made from the new-session
form, its origin in the header, the diff against the starting commit and per turn, a
patch downloaded, and a push approved in the log that lands on the origin."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from playwright.async_api import expect

# The demo model writes a file when a line says so (tests/browser/test_sessions.py).
WRITE = "write notes.txt\n```\nhello from the agent\n```"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [*GIT, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def origin(tmp_path: Path) -> tuple[Path, str]:
    """A bare repository in `tmp_path` with one commit on `main`; it and that commit."""
    bare = tmp_path / "origin.git"
    git("init", "--bare", str(bare))
    work = tmp_path / "work"
    git("clone", str(bare), str(work))
    (work / "README.md").write_text("# a project\n")
    git("add", "README.md", cwd=work)
    git("commit", "-m", "start", cwd=work)
    git("push", "origin", "HEAD:main", cwd=work)
    return bare, git("rev-parse", "HEAD", cwd=work)


async def test_a_session_from_a_repository_shows_diffs_downloads_a_patch_and_pushes(
    serve, console, tmp_path
):
    bare, commit = await asyncio.to_thread(origin, tmp_path)
    server = await serve(f"--repo-allow=file://{tmp_path}/*")
    page = await console(server)
    p = page.page

    # The form: a source the operator does not allow is refused next to its field.
    await p.get_by_role("button", name="new session").click()
    form = p.get_by_role("form", name="New session")
    url = form.get_by_label("Repository URL")
    await url.fill("file:///nowhere/else.git")
    await form.get_by_role("button", name="create").click()
    await expect(form.locator("#new-session-url-error")).to_be_visible()
    await expect(url).to_have_attribute("aria-invalid", "true")
    assert "#/s/" not in p.url

    # Then one it does: cloned, and the session's header says from where.
    await form.get_by_label("Title").fill("from a repo")
    await url.fill(f"file://{bare}")
    await expect(url).to_have_attribute("aria-invalid", "false")
    await form.get_by_role("button", name="create").click()
    await p.wait_for_url("**/#/s/*")
    await page.live()
    session_id = p.url.rsplit("/", 1)[1]
    origin_line = p.get_by_test_id("session-repository")
    await expect(origin_line).to_contain_text(f"file://{bare} @ {commit[:12]}")
    await expect(origin_line).to_contain_text("on main")
    await page.shot("repo-session")

    # A turn that writes a file, approved as any other.
    await page.send(WRITE)
    await expect(page.approval()).to_contain_text("WRITE")
    await page.decide("o")
    await expect(page.finished()).to_have_count(1)

    # The turn's own diff, from its footer.
    await page.finished().get_by_role("link", name="diff").click()
    await p.wait_for_url(f"**/#/s/{session_id}/diff/*")
    diff = p.get_by_role("region", name="What the agent changed")
    await expect(diff.get_by_test_id("diff-summary")).to_contain_text("1 file changed in turn 1")
    await expect(diff.locator(".d2h-file-name")).to_contain_text("notes.txt")
    await expect(diff.locator(".d2h-code-line-ctn").last).to_contain_text("hello from the agent")
    await expect(diff.get_by_label("Changes of")).to_have_value(p.url.rsplit("/", 1)[1])

    # The whole session's, against the starting commit.
    await diff.get_by_label("Changes of").select_option("")
    await p.wait_for_url(f"**/#/s/{session_id}/diff")
    await expect(diff.get_by_test_id("diff-base")).to_contain_text(commit[:12])
    await expect(diff.get_by_test_id("diff-base")).to_contain_text("the starting commit")
    await expect(diff.get_by_test_id("diff-summary")).to_contain_text(
        "1 file changed since the session's starting commit"
    )
    await expect(diff.locator(".d2h-code-line-ctn").last).to_contain_text("hello from the agent")
    await page.shot("repo-diff")

    # A patch, downloaded.
    async with p.expect_download() as downloading:
        await diff.get_by_role("button", name="download patch").click()
    download = await downloading.value
    assert download.suggested_filename.endswith(".patch"), download.suggested_filename
    patch = await asyncio.to_thread(Path(await download.path()).read_text)
    assert "notes.txt" in patch and "+hello from the agent" in patch, patch

    # A push: asked for here, approved in the log, labelled as a push.
    await diff.get_by_role("button", name="push…").click()
    push_form = p.get_by_role("form", name="Push to the repository")
    await push_form.get_by_label("Branch").fill("feature/x")
    await push_form.get_by_role("button", name="push").click()
    await p.wait_for_url(f"**/#/s/{session_id}")
    approval = page.approval()
    await expect(approval).to_contain_text("PUSH")
    await expect(approval.locator(".detail")).to_contain_text("feature/x")
    await expect(approval).to_have_attribute(
        "aria-label", "Approval needed: a push to the repository"
    )
    await page.shot("repo-push-approval")
    await page.decide("o")
    await expect(page.finished()).to_have_count(2)
    pushed = page.finished().last
    await expect(pushed).to_contain_text("Pushed branch feature/x")
    await expect(pushed.get_by_role("link", name="diff")).to_have_count(0)  # a command's turn
    await expect(p.locator("[data-kind=approval]").last).to_contain_text("approved once by you")

    # The branch is on the origin, at a commit holding the change.
    landed = await asyncio.to_thread(git, "--git-dir", str(bare), "rev-parse", "feature/x")
    assert landed != commit
    content = await asyncio.to_thread(git, "--git-dir", str(bare), "show", "feature/x:notes.txt")
    assert content == "hello from the agent"

    # And the diff view lists the push, as it ended.
    await p.get_by_role("link", name="Diff", exact=True).click()
    status = p.get_by_test_id("push-status")
    await expect(status).to_have_attribute("data-state", "done")
    await expect(status).to_contain_text("Pushed branch feature/x")
    await page.check_clean()


async def test_the_form_offers_no_repository_where_the_operator_allows_none(server, console):
    page = await console(server)
    await page.page.get_by_role("button", name="new session").click()
    form = page.page.get_by_role("form", name="New session")
    await expect(form.get_by_label("Title")).to_be_visible()
    await expect(form.get_by_label("Repository URL")).to_have_count(0)
    await page.check_clean()
