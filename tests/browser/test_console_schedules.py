"""The schedules where no session is open: each with when it fires, its state, its next
tick and its last firing, which opens the session that firing started."""

from __future__ import annotations

import re

from playwright.async_api import expect

from blitz_client import AsyncBlitz


async def test_the_schedules_are_listed_and_a_last_firing_opens_its_session(server, console):
    async with AsyncBlitz(server.grpc_target) as blitz:
        nightly = await blitz.create_schedule(
            cron="0 3 * * *", time_zone="Europe/Paris", prompt="bump", title="nightly deps"
        )
        await blitz.create_schedule(every=3600, prompt="triage", title="hourly triage")
        await blitz.pause_schedule((await blitz.schedules())[1].id)
        fired = await blitz.run_schedule(nightly.id)
    page = await console(server)
    listed = page.page.get_by_role("region", name="Schedules")
    await expect(listed).to_be_visible()
    row = listed.locator(f"[data-schedule='{nightly.id}']")
    await expect(row).to_contain_text("nightly deps")
    await expect(row).to_contain_text("cron 0 3 * * * (Europe/Paris)")
    await expect(row).to_contain_text("active")
    await expect(listed.locator("tr", has_text="hourly triage")).to_contain_text("paused")
    await page.shot("schedules")
    await row.get_by_role("button").click()
    await expect(page.page).to_have_url(re.compile(f"#/s/{fired.session_id}$"))
    await page.check_clean()
