"""`BlitzError`: the one exception a client raises, whatever the transport.

Both transports report a failed call as a canonical code plus, from a Blitz server, a
`blitz.v1.ErrorInfo` (reason, metadata, message). Each transport module translates its
library's exception into `BlitzError` where the call is made, so nothing above it ever
sees `grpc.aio.AioRpcError` or `connectrpc.errors.ConnectError`.
"""

from __future__ import annotations

from collections.abc import Mapping

from blitz.v1 import turn_pb2

__all__ = ["RESUMABLE_REASONS", "RETRY", "BlitzError", "connection_hint"]

# What grpc-core and pyqwest say of a port nothing listens on.
_REFUSED = "Connection refused"
# What each library says when a client and a port disagree about TLS.
_PLAIN_TO_TLS = ("Socket closed", "connection closed before message completed")
_TLS_TO_PLAIN = ("WRONG_VERSION_NUMBER", "InvalidContentType", "wrong version number")
# What BoringSSL (grpcio's TLS) and rustls (the Connect client's) say of a server
# certificate that chains to no authority the client trusts: one from a private CA, say.
_UNTRUSTED = ("CERTIFICATE_VERIFY_FAILED", "UnknownIssuer")
# What rustls (the Connect client's TLS) says of a server certificate that is a CA's, as
# `openssl req -x509` makes by default; grpcio takes one, so only Connect says this.
_CA_AS_LEAF = "CaUsedAsEndEntity"
_LEAF_HOW = (
    " (the server's certificate is a CA's, basicConstraints CA:TRUE, as `openssl req -x509`"
    " makes by default, and this client takes only a leaf certificate: make one with"
    " `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365"
    " -subj /CN=HOST -addext subjectAltName=DNS:HOST -addext"
    " basicConstraints=critical,CA:FALSE -keyout key.pem -out cert.pem`, serve it with"
    " --tls-cert/--tls-key and trust it with --ca-file; or keep the CA, issue a leaf from it"
    " and serve that)"
)


def connection_hint(message: str, *, tls: bool, plain: str, secure: str) -> str:
    """`message`, with a hint when it is what a common mistake looks like: nothing listens
    at the address (no server started, or another port); a plain client at a TLS port sees
    the connection closed, a TLS client at a plain port a handshake that fails; a
    certificate from a private authority is not trusted without its CA file; and one at a
    port serving a CA's certificate says how to make a leaf. `plain` and `secure` are the
    address to try, spelt each way."""
    if _REFUSED in message:
        return f"{message} (is `blitz serve` running at {secure if tls else plain}?)"
    if tls and any(sign in message for sign in _UNTRUSTED):
        return (
            f"{message} (the server's certificate is not from an authority this client"
            " trusts: give the CA file that issued it with --ca-file or BLITZ_CA_FILE)"
        )
    if not tls and any(sign in message for sign in _PLAIN_TO_TLS):
        return (
            f"{message} (if this port serves TLS, connect to {secure}, with --ca-file or"
            " BLITZ_CA_FILE when its certificate is from a private authority)"
        )
    if tls and any(sign in message for sign in _TLS_TO_PLAIN):
        return f"{message} (this port does not serve TLS: connect to {plain})"
    if tls and _CA_AS_LEAF in message:
        return message + _LEAF_HOW
    return message


# A stream that ends with one of these (or with code `unavailable`, which is what a
# dropped connection or a restarting server looks like) can be picked up with Watch.
RESUMABLE_REASONS = frozenset({"SHUTTING_DOWN", "SLOW_CONSUMER", "UNAVAILABLE"})

# What to do about each reason: the `retry` column of docs/protocol.md's table of reasons.
# "no": the same call fails the same way; "retry": it may succeed after a backoff;
# "resume": resume the stream with Watch (a unary call: send it again, maybe elsewhere);
# "after": it succeeds once the running turn has finished.
RETRY: Mapping[str, str] = {
    "INVALID_ARGUMENT": "no",
    "SESSION_NOT_FOUND": "no",
    "TURN_NOT_FOUND": "no",
    "REQUEST_NOT_FOUND": "no",
    "FILE_NOT_FOUND": "no",
    "RULE_NOT_FOUND": "no",
    "WEBHOOK_NOT_FOUND": "no",
    "DELIVERY_NOT_FOUND": "no",
    "SCHEDULE_NOT_FOUND": "no",
    "HOOK_NOT_FOUND": "no",
    "SESSION_BUSY": "after",
    "SESSION_CLOSED": "no",
    "NO_RUNNING_TURN": "no",
    "TURN_MISMATCH": "no",
    "TURN_ID_REUSED": "no",
    "ALREADY_RESOLVED": "no",
    "NO_PENDING_PLAN": "no",
    "MAX_TURNS": "no",
    "BUDGET_EXCEEDED": "no",
    "TURN_TIMEOUT": "no",
    "CANCELLED": "no",
    "MODEL_ERROR": "retry",
    "CONTEXT_OVERFLOW": "no",
    "UNAUTHENTICATED": "no",
    "PERMISSION_DENIED": "no",
    "RATE_LIMITED": "retry",
    "SLOW_CONSUMER": "resume",
    "REQUEST_TOO_LARGE": "no",
    "SERVER_RESTARTED": "retry",
    "SHUTTING_DOWN": "resume",
    "INTERNAL": "no",
    "STEP_FAILED": "no",
    "AGENT_UNAVAILABLE": "retry",
    "AGENT_CRASHED": "retry",
    "AGENT_TIMEOUT": "retry",
    "AGENT_PROTOCOL_ERROR": "no",
    "AGENT_ERROR": "retry",
    "MAX_TOKENS": "no",
    "REFUSED": "no",
    "REPOSITORY_UNAVAILABLE": "retry",
    "REPOSITORY_TOO_LARGE": "no",
    "PUSH_REJECTED": "no",
    "PUSH_DENIED": "no",
    "NO_CHANGES": "no",
    "HOOK_DENIED": "no",
}


class BlitzError(Exception):
    """A failed call or stream.

    Attributes:
        code: the canonical status in Connect's spelling (`"not_found"`,
            `"failed_precondition"`, `"unavailable"`, ...); gRPC codes are mapped to it.
        reason: the ErrorInfo reason (`"SESSION_BUSY"`, ...); when the server sent none
            (the connection failed, say), the code in upper case.
        metadata: what was wrong: the field, the limit, the id.
        message: an English description.
        info: the ErrorInfo detail as the server sent it; None when the failure carried
            none (the connection failed, or the server is not a Blitz server).
        sent: False when no connection could be made (refused, timed out, no such host):
            the request never left the client, so no server did anything with it.
    """

    def __init__(
        self,
        code: str,
        reason: str,
        message: str,
        metadata: Mapping[str, str] | None = None,
        *,
        info: turn_pb2.ErrorInfo | None = None,
        sent: bool = True,
    ) -> None:
        super().__init__(f"{reason}: {message}" if message else reason)
        self.code = code
        self.reason = reason
        self.message = message
        self.metadata: dict[str, str] = dict(metadata or {})
        self.info = info
        self.sent = sent

    @classmethod
    def from_info(
        cls, code: str, info: turn_pb2.ErrorInfo | None, message: str, *, sent: bool = True
    ) -> BlitzError:
        """From a wire status and the ErrorInfo detail it carried, if any."""
        if info is None or not info.reason:
            return cls(code, code.upper(), message, info=info, sent=sent)
        metadata = dict(info.metadata)
        return cls(code, info.reason, info.message or message, metadata, info=info, sent=sent)

    @property
    def resumable(self) -> bool:
        """True when a stream that failed so can be resumed with Watch from its last seq."""
        return self.code == "unavailable" or self.reason in RESUMABLE_REASONS

    @property
    def retry(self) -> str:
        """What to do about it: "no", "retry", "resume" or "after" (see `RETRY`)."""
        if self.reason in RETRY:
            return RETRY[self.reason]
        return "resume" if self.code == "unavailable" else "no"

    def __repr__(self) -> str:
        return (
            f"BlitzError(code={self.code!r}, reason={self.reason!r}, "
            f"message={self.message!r}, metadata={self.metadata!r})"
        )
