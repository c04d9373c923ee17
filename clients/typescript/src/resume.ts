// Riding out outages: a stream of a session's events that is picked up again where it
// dropped, and unary calls sent again while a server goes away.
//
// Every event carries a per-session `seq`, contiguous from 1. A stream that drops (a
// network error, a server restart, SHUTTING_DOWN, SLOW_CONSUMER) is opened again with
// Watch(after_seq = the last seq seen), and events at or below it are skipped, so a reader
// sees each event once and in order. On a Watch stream a seq that skips one means an
// event was lost on the way: the stream is read again after the last seq seen, once; a
// skip still there the second time is the server's and is let through. This mirrors the
// Python SDK (blitz_client/_resume.py).

import { BlitzError } from "./errors.js";
import { SessionStateChange_State, type TurnEvent } from "./gen/blitz/v1/turn_pb.js";

/** Opens a stream of events after a seq (0: from the start). */
export type StreamOpener = (afterSeq: number, signal: AbortSignal) => AsyncIterable<TurnEvent>;

/** Where a resumed stream stands, for a client that shows it. */
export interface StreamStatus {
  state: "connecting" | "live" | "reconnecting";
  /** The last seq delivered. */
  lastSeq: number;
  /** Why it is reconnecting. */
  error?: BlitzError;
}

export interface ResumeOptions {
  /** Deliver events after this seq (0: from the first). */
  afterSeq?: number;
  /** Ends the stream, quietly. */
  signal?: AbortSignal;
  /** How long one outage may last before its error is thrown (ms); Infinity: for ever. */
  reconnectTimeoutMs?: number;
  /** Told each time the stream connects, delivers or starts reconnecting. */
  onStatus?: (status: StreamStatus) => void;
  /** Only this turn's events, until its `finished` (a RunTurn or AcceptPlan resumed). */
  turnId?: string;
  /** Whether a stream opened after `afterSeq` has contiguous seqs (Watch's do). */
  contiguous?: (afterSeq: number) => boolean;
  /** A call that succeeds once the server answers: a stream with nothing to send yet
   * sends nothing, not even its headers, so "live" is said when this answers. */
  probe?: (signal: AbortSignal) => Promise<unknown>;
}

// How long a (re)opened stream may stay silent before the probe asks the server (ms).
const PROBE_AFTER_MS = 300;

// A stream that stayed open this long (ms) before it failed had reached the server.
const CONNECTED_MS = 1000;

/** Events from `open(lastSeq)`, opened again after every resumable failure. */
export async function* resumed(
  open: StreamOpener,
  options: ResumeOptions = {},
): AsyncGenerator<TurnEvent, void, undefined> {
  const { signal, turnId, onStatus } = options;
  const timeout = options.reconnectTimeoutMs ?? 30_000;
  const contiguous = options.contiguous ?? (() => true);
  let lastSeq = options.afterSeq ?? 0;
  let failingSince: number | undefined;
  let delay = 50;
  let reached = false;
  // The seq after which a skip was read again: a second skip there is the server's.
  let rereadAfter: number | undefined;
  onStatus?.({ state: "connecting", lastSeq });
  for (;;) {
    if (signal?.aborted) return;
    const opened = Date.now();
    const checked = contiguous(lastSeq);
    const attempt = new AbortController();
    const stop = () => attempt.abort();
    signal?.addEventListener("abort", stop);
    let gap = false;
    let error: BlitzError;
    let live = false;
    const sayLive = () => {
      if (live || attempt.signal.aborted) return;
      live = true;
      onStatus?.({ state: "live", lastSeq });
    };
    if (options.probe) void probeLater(options.probe, attempt.signal, sayLive);
    try {
      for await (const event of open(lastSeq, attempt.signal)) {
        reached = true;
        failingSince = undefined;
        delay = 50;
        sayLive();
        const seq = Number(event.seq);
        if (seq) {
          if (seq <= lastSeq) continue; // seen before the stream dropped
          if (checked && seq > lastSeq + 1 && rereadAfter !== lastSeq) {
            gap = true; // lost on the way: read again after the last seq seen
            rereadAfter = lastSeq;
            break;
          }
          lastSeq = seq;
        }
        if (turnId !== undefined && closes(event)) return; // its turns have all finished
        if (turnId !== undefined && event.turnId !== turnId) continue;
        yield event;
        if (turnId !== undefined && event.kind.case === "finished") return;
      }
      if (gap) continue;
      if (turnId === undefined) return;
      error = new BlitzError("unavailable", "UNAVAILABLE", "the stream ended early");
    } catch (thrown) {
      if (signal?.aborted) return;
      const failure = BlitzError.from(thrown);
      if (!failure.resumable) throw failure;
      error = failure;
    } finally {
      signal?.removeEventListener("abort", stop);
      attempt.abort();
    }
    const now = Date.now();
    if (now - opened >= CONNECTED_MS) {
      reached = true;
      failingSince = undefined;
      delay = 50;
    }
    if (!reached) throw error;
    failingSince ??= now;
    if (now - failingSince > timeout) throw error;
    onStatus?.({ state: "reconnecting", lastSeq, error });
    await sleep(delay, signal);
    delay = Math.min(delay * 2, 1000);
  }
}

/** `send()`'s result, sent again while a server that is going away turns it away.
 *
 * SHUTTING_DOWN on a unary call means it was refused at the door, before anything was
 * done, so sending it again is safe: it reaches another replica, or the same server once
 * restarted, within `timeoutMs`. Every failure is thrown as a BlitzError.
 */
export async function retried<T>(send: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const started = Date.now();
  let delay = 50;
  for (;;) {
    try {
      return await send();
    } catch (thrown) {
      const error = BlitzError.from(thrown);
      if (error.reason !== "SHUTTING_DOWN" || Date.now() - started > timeoutMs) throw error;
    }
    await sleep(delay);
    delay = Math.min(delay * 2, 1000);
  }
}

async function probeLater(
  probe: (signal: AbortSignal) => Promise<unknown>,
  signal: AbortSignal,
  answered: () => void,
): Promise<void> {
  await sleep(PROBE_AFTER_MS, signal);
  if (signal.aborted) return;
  try {
    await probe(signal);
    answered();
  } catch {
    // The stream itself fails, or says why.
  }
}

function closes(event: TurnEvent): boolean {
  // The server ends a Watch after the session's CLOSED.
  return (
    event.kind.case === "sessionState" && event.kind.value.state === SessionStateChange_State.SESSION_STATE_CLOSED
  );
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}
