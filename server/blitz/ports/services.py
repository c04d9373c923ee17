"""The ports as the transports are handed them: each service's port, by the service's name.

The key is the service's full name in the proto (`blitz.v1.SessionService`, the
descriptor's `full_name`) and the value is what serves its RPCs (`SessionPort` for that
one): the transports serve every service of `blitz.transport.methods.SERVICES` from this
mapping, so a new service is its proto, its port, its core and one entry in the mapping
the assembly builds (`blitz.assembly`), and no transport. Nothing here knows a wire.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["ServicePorts"]

ServicePorts = Mapping[str, object]
"""What serves each service, by the service's full name (`blitz.v1.SessionService`)."""
