"""Run one turn with the blocking client: stream the reply, approve the command it runs.

    python clients/examples/quickstart.py [URL]

URL is the server: host:port for gRPC (default 127.0.0.1:50051) or http://host:port for
Connect. Start one with `blitz serve` (or `make run`) first.
"""

from __future__ import annotations

import sys

from blitz_client import DEFAULT_URL, Blitz

PROMPT = "$ echo hello from the workspace\nThat was easy."


def main(url: str) -> int:
    with Blitz(url) as blitz:
        session = blitz.create_session(title="quickstart")
        for event in blitz.run(session.id, PROMPT):
            if event.HasField("text") and event.text.partial and not event.text.thought:
                print(event.text.text, end="", flush=True)
            elif event.HasField("approval_request"):
                request = event.approval_request
                print(f"[approving: {request.detail}]")
                blitz.decide(session.id, request.request_id, "once")
            elif event.HasField("tool_result"):
                print(f"[{event.tool_result.name} done]")
            elif event.HasField("finished"):
                finished = event.finished
                if finished.HasField("error"):
                    print(f"\nfailed: {finished.error.reason}")
                    return 1
                print(f"\n[{finished.after.calls} model calls, ${finished.after.cost_usd:.4f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_URL))
