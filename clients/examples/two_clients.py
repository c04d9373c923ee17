"""Two asyncio clients on one session: one runs a turn, the other watches and answers.

    python clients/examples/two_clients.py [URL]

The runner never answers the question its turn asks; the watcher (a second connection,
as a web page or a bot would be) sees it and answers. Any client of a session may.
"""

from __future__ import annotations

import asyncio
import sys

from blitz_client import DEFAULT_URL, AsyncBlitz


async def watch_and_answer(url: str, session_id: str) -> None:
    async with AsyncBlitz(url) as watcher:
        async for event in watcher.watch(session_id):
            if event.HasField("question"):
                question = event.question
                print(f"watcher: answering {question.question!r} with {question.options[-1]!r}")
                await watcher.answer(session_id, question.request_id, question.options[-1])
            elif event.HasField("finished"):
                return


async def main(url: str) -> int:
    async with AsyncBlitz(url) as runner:
        session = await runner.create_session(title="two clients")
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(watch_and_answer(url, session.id))
            async for event in runner.run(session.id, "ask: tea or coffee? [tea|coffee]"):
                if event.HasField("finished"):
                    print(f"runner: {event.finished.output}")
        report = await runner.usage(session.id)
        print(f"usage: {report.total.calls} model calls")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_URL)))
