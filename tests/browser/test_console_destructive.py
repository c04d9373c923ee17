"""A destructive command in the console: marked, no broader rule offered, `a` asking to
confirm; and the rule a decision saved named where the request was answered."""

from __future__ import annotations

from playwright.async_api import expect


async def test_always_for_a_destructive_command_asks_to_confirm_and_names_the_rule(server, console):
    page = await console(server)
    await page.create_session("destructive")
    await page.send("$ rm -rf build")
    approval = page.approval()
    await expect(approval.locator(".destructive")).to_contain_text("destructive")
    await expect(approval.get_by_role("button", name="always allow")).to_have_count(0)
    await page.decide("a")
    await expect(approval).to_contain_text("Always allow exactly command: rm -rf build")
    await expect(page.finished()).to_have_count(0)
    await approval.get_by_role("button", name="yes, always allow it").click()
    await expect(page.finished()).to_have_count(1)
    await expect(page.page.locator("[data-kind=approval]")).to_contain_text(
        "rule saved: command: rm -rf build"
    )
    page.check_wire()
    await page.check_clean()
