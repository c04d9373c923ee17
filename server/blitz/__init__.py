"""Blitz: an agent session server."""

import os
import pkgutil

# gRPC's fork handlers restart its threads in a child forked while gRPC is busy, and that
# child can crash before it execs. uvloop forks for every subprocess (tool commands, MCP
# servers), so under load a plain `echo` died of SIGSEGV. No Blitz child uses gRPC, so the
# handlers are switched off unless the environment says otherwise. This must happen before
# gRPC starts, hence here, the first module of the package anyone imports.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

# `blitz` is split between two distributions: this one (blitz-server) and blitz-client,
# which ships the generated stubs `blitz.v1` (clients/generated/blitz/v1) with no
# `blitz/__init__.py` of its own. Alone, the client's `blitz` is a PEP 420 namespace
# package. A pure namespace package cannot be ours, though: the line above must run
# before anything imports grpc, and only an `__init__` runs first. So this package is
# regular and extends its own path, pkgutil-style, with every other `blitz` folder on
# sys.path. That finds `blitz.v1` in each install: both wheels in one site-packages
# (one folder, nothing to extend), editable installs (server/ and clients/generated/ on
# sys.path) and one of each. A regular package wins over namespace portions wherever it
# sits on sys.path, so the order of those entries does not matter.
__path__ = pkgutil.extend_path(__path__, __name__)
