"""Helpers that several test modules share, one module per concern.

`wire` is the client tests talk through (over gRPC or Connect, or in process with
`in_process`); `servers` makes settings for real test servers (and a turn parked before
one stops); `events` reads lists of TurnEvents; `waiting` polls for a condition; `images`
holds test images. The test doubles live here too: `fake_provider` (a model provider
speaking the real wire formats), `fake_core` (the ports, for the transports' own tests)
and `recording_io` (a TurnIO that records what the agent says). The other modules
(`postgres`, `replicas`, `proxy`, `terminals`, ...) say what they hold in their own docs.
Fixtures are not here: they live in the `conftest.py` files.
"""
