"""Blitz: an agent session server."""

import os

# gRPC's fork handlers restart its threads in a child forked while gRPC is busy, and that
# child can crash before it execs. uvloop forks for every subprocess (tool commands, MCP
# servers), so under load a plain `echo` died of SIGSEGV. No Blitz child uses gRPC, so the
# handlers are switched off unless the environment says otherwise. This must happen before
# gRPC starts, hence here, the first module of the package anyone imports.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
