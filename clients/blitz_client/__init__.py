"""blitz_client: a typed Python client for Blitz, the agent session server.

Two clients with the same methods: `AsyncBlitz` for asyncio code and `Blitz` for
blocking code. The URL picks the transport: `http://…`/`https://…` speak Connect to the
server's HTTP port, `host:port` (or `grpc://…`, `grpcs://…`) speak gRPC. Given several
replicas' URLs (a list, or one string with commas), a client uses one at a time and moves
on to the next when its server is gone or leaving.

    from blitz_client import Blitz

    with Blitz("127.0.0.1:50051") as blitz:
        session = blitz.create_session(title="hello")
        for event in blitz.run(session.id, "$ ls"):
            if event.HasField("approval_request"):
                blitz.decide(session.id, event.approval_request.request_id, "once")
            elif event.HasField("finished"):
                print(event.finished.output)

Besides sessions, turns and their approvals, the clients upload images for a turn's
`image_ids` (`upload_image`), show the session's workspace (`list_files`, `read_file`,
`diff`), hand a session cloned from a repository (`create_session(source="URL@REF")`)
back as a patch series, a bundle or a pushed branch (`export_changes`), and manage
webhooks (`create_webhook`, `webhooks`, `test_webhook`, `deliveries`, ...), schedules
(`create_schedule`, `schedules`, `run_schedule`, `firings`, ...) and hooks (`create_hook`,
`hooks`, `update_hook`, `test_hook`, ...; `HOOK_EVENT_NAMES` the events they run at).
Events are `blitz.v1.turn_pb2.TurnEvent` messages. A dropped stream is resumed from the
last `seq` seen, without duplicates; every failed call is a `BlitzError` (an argument
the client cannot encode, such as an unknown decision word, is a `ValueError`).
"""

from blitz.v1.turn_pb2 import TurnEvent
from blitz_client._async import DEFAULT_URL, AsyncBlitz
from blitz_client._errors import RETRY, BlitzError
from blitz_client._hook_calls import HOOK_EVENT_NAMES
from blitz_client._requests import (
    ContextLike,
    DecisionLike,
    SourceLike,
    TurnOptions,
    repository_source,
)
from blitz_client._sync import Blitz, Stream

__all__ = [
    "DEFAULT_URL",
    "HOOK_EVENT_NAMES",
    "RETRY",
    "AsyncBlitz",
    "Blitz",
    "BlitzError",
    "ContextLike",
    "DecisionLike",
    "SourceLike",
    "Stream",
    "TurnEvent",
    "TurnOptions",
    "repository_source",
]
