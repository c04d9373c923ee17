"""A workflow's steps and a session's rewinds, as the console shows them: one line per step
whose status follows the step, and a line per rewind saying to which turn, with or
without the files."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import expect

from blitz_client import AsyncBlitz

WORKFLOWS = Path(__file__).resolve().parents[2] / "docs" / "examples" / "workflows"


async def test_workflow_steps_and_rewinds_have_a_line_each(serve, console):
    server = await serve(f"--workflows-dir={WORKFLOWS}")
    async with AsyncBlitz(server.grpc_target) as blitz:
        session = await blitz.create_session(title="progress")
        first = ""
        async for event in blitz.run(session.id, "hello"):
            first = event.turn_id
        async for event in blitz.run(session.id, "write notes.txt\n```\nhi\n```"):
            if event.HasField("approval_request"):
                await blitz.decide(session.id, event.approval_request.request_id, "once")
        page = await console(server, f"#/s/{session.id}")
        await page.live()
        await expect(page.finished()).to_have_count(2)

        # The README's workflow, run from the composer as `blitz chat` runs it.
        await page.send("/run hello name=Ada")
        steps = page.page.locator("[data-kind=flow-step]")
        await expect(page.approval()).to_be_focused()  # the command step asks first
        await expect(steps).to_have_count(2)
        await expect(steps.nth(0)).to_have_text("[1/2] Greet ✓ (hello@1)")
        await expect(steps.nth(1)).to_have_attribute("data-status", "waiting")
        await expect(steps.nth(1)).to_have_text("[2/2] Write it down ⏸ (hello@1)")
        await page.decide("o")
        await expect(page.finished()).to_have_count(3)
        await expect(steps).to_have_count(2)  # a step's end updates its line
        await expect(steps.nth(1)).to_have_text("[2/2] Write it down ✓ (hello@1)")
        await expect(steps.nth(1)).to_have_attribute("data-status", "succeeded")
        await page.shot("workflow")

        # Back to the first turn with the files (notes.txt goes: it was not there then),
        # then again without them after one more turn.
        rewind = (await blitz.rewind(session.id, first, files=True)).rewound
        assert rewind.files and "notes.txt" in rewind.restored_paths
        restored = len(rewind.restored_paths)
        lines = page.page.locator("[data-kind=rewound]")
        await expect(lines).to_have_text(
            [
                f"↺ rewound to turn {first} (2 later turns dropped from the history,"
                f" {restored} file{'' if restored == 1 else 's'} restored)"
            ]
        )
        async for _ in blitz.run(session.id, "once more"):
            pass
        again = (await blitz.rewind(session.id, first)).rewound
        dropped = len(again.dropped_turn_ids)
        assert not again.files and dropped >= 1
        await expect(lines).to_have_count(2)
        await expect(lines.nth(1)).to_have_text(
            f"↺ rewound to turn {first} ({dropped} later turn{'' if dropped == 1 else 's'}"
            " dropped from the history, files left as they were)"
        )
    await page.shot("rewound")
    await page.check_clean()
