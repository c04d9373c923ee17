// BlitzError: the one error a Blitz call or stream fails with, whatever went wrong.
//
// A Blitz server attaches a blitz.v1.ErrorInfo (reason, metadata, message) to every failed
// call, as a Connect error detail. `BlitzError.from` reads it out of connect-es's
// ConnectError, so callers branch on `reason` ("SESSION_BUSY") and read `metadata`
// (the field, the limit, the id) instead of parsing messages. A failure that never reached
// a server (a refused connection, a dropped stream) carries no ErrorInfo and is code
// "unavailable", which a stream resumes from.
//
// RETRY is the `retry` column of docs/protocol.md's table of reasons, as the Python SDK
// carries it (blitz_client.RETRY); a test holds both to the table.

import { Code, ConnectError } from "@connectrpc/connect";
import { type ErrorInfo, ErrorInfoSchema } from "./gen/blitz/v1/turn_pb.js";

/** What a client does about a reason: see docs/protocol.md, "Reasons". */
export type Retry = "no" | "retry" | "resume" | "after";

/** What to do about each reason the server sends. */
export const RETRY: Readonly<Record<string, Retry>> = Object.freeze({
  INVALID_ARGUMENT: "no",
  SESSION_NOT_FOUND: "no",
  TURN_NOT_FOUND: "no",
  REQUEST_NOT_FOUND: "no",
  FILE_NOT_FOUND: "no",
  RULE_NOT_FOUND: "no",
  WEBHOOK_NOT_FOUND: "no",
  DELIVERY_NOT_FOUND: "no",
  SCHEDULE_NOT_FOUND: "no",
  HOOK_NOT_FOUND: "no",
  SESSION_BUSY: "after",
  SESSION_CLOSED: "no",
  NO_RUNNING_TURN: "no",
  TURN_MISMATCH: "no",
  TURN_ID_REUSED: "no",
  ALREADY_RESOLVED: "no",
  NO_PENDING_PLAN: "no",
  MAX_TURNS: "no",
  BUDGET_EXCEEDED: "no",
  TURN_TIMEOUT: "no",
  CANCELLED: "no",
  MODEL_ERROR: "retry",
  CONTEXT_OVERFLOW: "no",
  UNAUTHENTICATED: "no",
  PERMISSION_DENIED: "no",
  RATE_LIMITED: "retry",
  SLOW_CONSUMER: "resume",
  REQUEST_TOO_LARGE: "no",
  SERVER_RESTARTED: "retry",
  SHUTTING_DOWN: "resume",
  INTERNAL: "no",
  STEP_FAILED: "no",
  AGENT_UNAVAILABLE: "retry",
  AGENT_CRASHED: "retry",
  AGENT_TIMEOUT: "retry",
  AGENT_PROTOCOL_ERROR: "no",
  AGENT_ERROR: "retry",
  MAX_TOKENS: "no",
  REFUSED: "no",
  REPOSITORY_UNAVAILABLE: "retry",
  REPOSITORY_TOO_LARGE: "no",
  PUSH_REJECTED: "no",
  PUSH_DENIED: "no",
  NO_CHANGES: "no",
  HOOK_DENIED: "no",
});

/** Reasons after which a stream is picked up again with Watch from its last seq. */
export const RESUMABLE_REASONS: ReadonlySet<string> = new Set([
  "SHUTTING_DOWN",
  "SLOW_CONSUMER",
  "UNAVAILABLE",
]);

// Connect's codes in their wire spelling, by number (connect-es's Code enum).
const CODE_NAMES: Record<number, string> = {
  [Code.Canceled]: "canceled",
  [Code.Unknown]: "unknown",
  [Code.InvalidArgument]: "invalid_argument",
  [Code.DeadlineExceeded]: "deadline_exceeded",
  [Code.NotFound]: "not_found",
  [Code.AlreadyExists]: "already_exists",
  [Code.PermissionDenied]: "permission_denied",
  [Code.ResourceExhausted]: "resource_exhausted",
  [Code.FailedPrecondition]: "failed_precondition",
  [Code.Aborted]: "aborted",
  [Code.OutOfRange]: "out_of_range",
  [Code.Unimplemented]: "unimplemented",
  [Code.Internal]: "internal",
  [Code.Unavailable]: "unavailable",
  [Code.DataLoss]: "data_loss",
  [Code.Unauthenticated]: "unauthenticated",
};

/** A failed call or stream. */
export class BlitzError extends Error {
  override name = "BlitzError";
  /** The status in Connect's spelling: "not_found", "failed_precondition", "unavailable"… */
  readonly code: string;
  /** The ErrorInfo reason ("SESSION_BUSY"…); without one, the code in upper case. */
  readonly reason: string;
  /** What was wrong: the field, the limit, the id. */
  readonly metadata: Readonly<Record<string, string>>;
  /** The ErrorInfo as the server sent it; undefined when the failure carried none. */
  readonly info: ErrorInfo | undefined;

  constructor(
    code: string,
    reason: string,
    message: string,
    metadata: Record<string, string> = {},
    options: { info?: ErrorInfo; cause?: unknown } = {},
  ) {
    super(message ? `${reason}: ${message}` : reason, { cause: options.cause });
    this.code = code;
    this.reason = reason;
    this.metadata = Object.freeze({ ...metadata });
    this.info = options.info;
  }

  /** The English description, without the reason in front. */
  get description(): string {
    return this.info?.message || this.message.replace(`${this.reason}: `, "");
  }

  /** Whether a stream that failed so is resumed with Watch from its last seq. */
  get resumable(): boolean {
    return this.code === "unavailable" || RESUMABLE_REASONS.has(this.reason);
  }

  /** What to do about it (see RETRY). */
  get retry(): Retry {
    return RETRY[this.reason] ?? (this.code === "unavailable" ? "resume" : "no");
  }

  /** The BlitzError that `reason` (anything a call threw) stands for. */
  static from(reason: unknown): BlitzError {
    if (reason instanceof BlitzError) return reason;
    const error = ConnectError.from(reason);
    let code = CODE_NAMES[error.code] ?? "unknown";
    // fetch reports a refused or dropped connection as a TypeError, which connect-es
    // passes on as "unknown": it is what an unreachable server looks like.
    if (code === "unknown" && !error.isWireError && isNetworkFailure(error.cause)) {
      code = "unavailable";
    }
    const info = error.findDetails(ErrorInfoSchema)[0];
    if (info === undefined || !info.reason) {
      return new BlitzError(code, code.toUpperCase(), error.rawMessage, {}, { info, cause: error });
    }
    return new BlitzError(code, info.reason, info.message || error.rawMessage, info.metadata, {
      info,
      cause: error,
    });
  }
}

function isNetworkFailure(cause: unknown): boolean {
  return cause instanceof TypeError || (cause instanceof Error && cause.name === "NetworkError");
}

/** Whether `reason` is the caller's own cancellation (an AbortSignal it aborted). */
export function isCancellation(reason: unknown): boolean {
  if (reason instanceof BlitzError) return reason.code === "canceled" && !reason.info;
  return reason instanceof Error && reason.name === "AbortError";
}
