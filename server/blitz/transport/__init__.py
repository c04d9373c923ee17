"""Transports: thin adapters from the wire to the transport-free core.

`grpc` serves `grpc.aio`; `connect` serves Connect and gRPC-Web over ASGI, run by `http`
under uvicorn; `gate` admits calls and drains them at shutdown; `unexpected` turns any
other exception than a `BlitzError` into INTERNAL for both. None of them holds a business
rule: they build a `CallContext`, call the core and map its errors.
"""

from blitz.transport.connect import ConnectSessionService, build_http_app
from blitz.transport.gate import CallGate
from blitz.transport.grpc import (
    GatedHealthServicer,
    GrpcSessionService,
    bind_grpc_server,
    build_grpc_server,
)
from blitz.transport.http import HttpServer

__all__ = [
    "CallGate",
    "ConnectSessionService",
    "GatedHealthServicer",
    "GrpcSessionService",
    "HttpServer",
    "bind_grpc_server",
    "build_grpc_server",
    "build_http_app",
]
