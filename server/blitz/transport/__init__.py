"""Transports: thin adapters from the wire to the ports of every service.

`grpc` serves `grpc.aio`; `connect` serves Connect and gRPC-Web as ASGI apps, which
`http` routes and runs under uvicorn behind `rebinding`'s Host and Origin checks; `gate`
admits calls and drains them at shutdown; `unexpected` turns any other exception than a
`BlitzError` into INTERNAL for both. None of
them holds a business rule or knows the core: they are handed each service's port by the
service's name (`blitz.ports.ServicePorts`), build a `CallContext`, call a port and map
its errors.
"""

from blitz.transport.connect import build_connect_apps
from blitz.transport.gate import MAX_REQUEST_BYTES, CallGate
from blitz.transport.grpc import GatedHealthServicer, bind_grpc_server, build_grpc_server
from blitz.transport.http import HttpApp, HttpServer
from blitz.transport.tls import Tls

__all__ = [
    "MAX_REQUEST_BYTES",
    "CallGate",
    "GatedHealthServicer",
    "HttpApp",
    "HttpServer",
    "Tls",
    "bind_grpc_server",
    "build_connect_apps",
    "build_grpc_server",
]
