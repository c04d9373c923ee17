// `createBlitz`: the services of a Blitz server behind one object, with the helpers
// every client needs and none should write again.
//
// - `sessions`, `workspaces`, `webhooks`, `workflows`, `schedules` and `hooks` are the
//   connect-es clients of SessionService, WorkspaceService, WebhookService,
//   WorkflowService, ScheduleService and HookService, every method as generated, with the bearer token sent and each
//   failure thrown as a BlitzError (the ErrorInfo parsed). A unary call the server turns
//   away with SHUTTING_DOWN is sent again (`retried`).
// - `watch` is a session's events, resumed after any drop from the last seq seen, checked
//   for gaps; `run`, `runWorkflow` and `acceptPlan` are one turn's events until its
//   `finished`, resumed the same way.
//
// It works in a browser and in Node 20 and later: the transport is connect-web's, on
// fetch. Connect's binary format is used: the smallest and fastest to decode.

import type { DescMethod, DescService, MessageInitShape } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BlitzError } from "./errors.js";
import { SessionService } from "./gen/blitz/v1/session_pb.js";
import { Decision, type TurnEvent, type TurnSchema } from "./gen/blitz/v1/turn_pb.js";
import { WebhookService } from "./gen/blitz/v1/webhooks_pb.js";
import { WorkflowService } from "./gen/blitz/v1/workflow_pb.js";
import { ScheduleService } from "./gen/blitz/v1/schedules_pb.js";
import { HookService } from "./gen/blitz/v1/hooks_pb.js";
import { WorkspaceService } from "./gen/blitz/v1/workspace_pb.js";
import { type ResumeOptions, resumed, retried } from "./resume.js";

export interface BlitzOptions {
  /** The server's HTTP port: "http://127.0.0.1:8080". */
  baseUrl: string;
  /** A bearer token, or a function giving the current one (none: no header). */
  token?: string | (() => string | undefined);
  /** Another transport (connect-web's gRPC-Web one, say); `baseUrl` is then unused. */
  transport?: Transport;
  /** How long one outage may last before a call or stream gives up (ms); default 30 s. */
  reconnectTimeoutMs?: number;
  /** fetch to use (default: the global one). */
  fetch?: typeof globalThis.fetch;
}

/** The decisions of an approval, as `blitz chat` names them. */
export type DecisionName = "once" | "session" | "always" | "deny";

const DECISIONS: Record<DecisionName, Decision> = {
  once: Decision.ONCE,
  session: Decision.SESSION,
  always: Decision.ALWAYS,
  deny: Decision.DENY,
};

export type StreamOptions = Omit<ResumeOptions, "turnId" | "contiguous" | "probe">;

/** A Blitz server's services and the helpers around them. */
export interface Blitz {
  readonly sessions: Client<typeof SessionService>;
  readonly workspaces: Client<typeof WorkspaceService>;
  readonly webhooks: Client<typeof WebhookService>;
  readonly workflows: Client<typeof WorkflowService>;
  readonly schedules: Client<typeof ScheduleService>;
  readonly hooks: Client<typeof HookService>;
  /** A session's events after `afterSeq` (default 0), live from then on with `follow`
   * (default true), resumed after every drop without a duplicate or a gap. */
  watch(
    sessionId: string,
    options?: StreamOptions & { follow?: boolean },
  ): AsyncGenerator<TurnEvent, void, undefined>;
  /** Runs a turn (its text, or the whole Turn) and yields its events until `finished`.
   * A `turnId` is made when none is given, so a retry never starts a second turn. */
  run(
    sessionId: string,
    turn: string | MessageInitShape<typeof TurnSchema>,
    options?: StreamOptions & { turnId?: string },
  ): AsyncGenerator<TurnEvent, void, undefined>;
  /** Runs the workflow `name` (docs/workflows.md) as one turn of the session and yields
   * its events, `flowStep`s among them, until `finished`, as `run` does. `params` are
   * sent as text (true as "true"); `turn` holds the run's options (`timeout`,
   * `maxCostUsd`, `maxTurns`, `mode`, `readOnly`, `fetchGrants`). */
  runWorkflow(
    sessionId: string,
    name: string,
    params?: Record<string, string | number | boolean>,
    options?: StreamOptions & { turnId?: string; turn?: MessageInitShape<typeof TurnSchema> },
  ): AsyncGenerator<TurnEvent, void, undefined>;
  /** Accepts a proposed plan and yields the events of the turn that carries it out. */
  acceptPlan(
    sessionId: string,
    planId: string,
    options?: StreamOptions & { text?: string; turnId?: string },
  ): AsyncGenerator<TurnEvent, void, undefined>;
  /** Decides an approval request. */
  decide(
    sessionId: string,
    requestId: string,
    decision: DecisionName,
    options?: { reason?: string; command?: string; interrupt?: boolean },
  ): Promise<void>;
  /** Answers a question. */
  answer(sessionId: string, requestId: string, answers: string[]): Promise<void>;
}

/** A client of the Blitz server at `options.baseUrl`. */
export function createBlitz(options: BlitzOptions): Blitz {
  const timeout = options.reconnectTimeoutMs ?? 30_000;
  const token = typeof options.token === "function" ? options.token : () => options.token as string | undefined;
  const bearer: Interceptor = (next) => async (request) => {
    const value = token();
    if (value) request.header.set("authorization", `Bearer ${value}`);
    return await next(request);
  };
  const transport =
    options.transport ??
    createConnectTransport({
      baseUrl: options.baseUrl,
      useBinaryFormat: true,
      interceptors: [bearer],
      fetch: options.fetch,
    });
  const sessions = wrapped(SessionService, createClient(SessionService, transport), timeout);
  const workspaces = wrapped(WorkspaceService, createClient(WorkspaceService, transport), timeout);
  const webhooks = wrapped(WebhookService, createClient(WebhookService, transport), timeout);
  const workflows = wrapped(WorkflowService, createClient(WorkflowService, transport), timeout);
  const schedules = wrapped(ScheduleService, createClient(ScheduleService, transport), timeout);
  const hooks = wrapped(HookService, createClient(HookService, transport), timeout);

  function turnEvents(
    sessionId: string,
    turnId: string,
    start: (signal: AbortSignal) => AsyncIterable<TurnEvent>,
    stream: StreamOptions,
  ) {
    return resumed(
      (afterSeq, signal) =>
        // Nothing seen yet: the turn may not exist, so ask for it again (its turn_id makes
        // that safe); after that, read the session's log from the last seq seen.
        afterSeq === 0
          ? start(signal)
          : sessions.watch({ sessionId, afterSeq: BigInt(afterSeq), follow: true }, { signal }),
      {
        ...stream,
        reconnectTimeoutMs: stream.reconnectTimeoutMs ?? timeout,
        turnId,
        // RunTurn's own stream skips the seqs of other turns (an aside's); Watch's do not.
        contiguous: (afterSeq) => afterSeq > 0,
      },
    );
  }

  return {
    sessions,
    workspaces,
    webhooks,
    workflows,
    schedules,
    hooks,
    watch(sessionId, { follow = true, ...stream } = {}) {
      return resumed(
        (afterSeq, signal) =>
          sessions.watch({ sessionId, afterSeq: BigInt(afterSeq), follow }, { signal }),
        {
          ...stream,
          reconnectTimeoutMs: stream.reconnectTimeoutMs ?? timeout,
          probe: (signal) => sessions.getSession({ sessionId }, { signal }),
        },
      );
    },
    run(sessionId, turn, { turnId = newTurnId(), ...stream } = {}) {
      const message = typeof turn === "string" ? { text: turn } : turn;
      return turnEvents(
        sessionId,
        turnId,
        (signal) => sessions.runTurn({ sessionId, turn: message, turnId }, { signal }),
        stream,
      );
    },
    runWorkflow(sessionId, name, params = {}, { turnId = newTurnId(), turn, ...stream } = {}) {
      const given = Object.fromEntries(Object.entries(params).map(([key, value]) => [key, String(value)]));
      return turnEvents(
        sessionId,
        turnId,
        (signal) => workflows.runWorkflow({ sessionId, name, params: given, turn, turnId }, { signal }),
        stream,
      );
    },
    acceptPlan(sessionId, planId, { text = "", turnId = newTurnId(), ...stream } = {}) {
      return turnEvents(
        sessionId,
        turnId,
        (signal) => sessions.acceptPlan({ sessionId, planId, text, turnId }, { signal }),
        stream,
      );
    },
    async decide(sessionId, requestId, decision, { reason = "", command = "", interrupt = false } = {}) {
      await sessions.decide({
        sessionId,
        requestId,
        decision: DECISIONS[decision],
        reason,
        command,
        interrupt,
      });
    },
    async answer(sessionId, requestId, answers) {
      await sessions.answer({ sessionId, requestId, answers });
    },
  };
}

/** A turn id the server accepts (1-128 of letters, digits and `._:-`). */
export function newTurnId(): string {
  return `t-${globalThis.crypto.randomUUID()}`;
}

/** `client` with every failure thrown as a BlitzError, and unary calls `retried`. */
function wrapped<S extends DescService>(service: S, client: Client<S>, timeoutMs: number): Client<S> {
  const methods: Record<string, unknown> = {};
  const raw = client as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const method of service.methods as DescMethod[]) {
    const call = raw[method.localName].bind(client);
    methods[method.localName] =
      method.methodKind === "unary"
        ? (...args: unknown[]) => retried(() => call(...args) as Promise<unknown>, timeoutMs)
        : (...args: unknown[]) => explained(call(...args) as AsyncIterable<unknown>);
  }
  return methods as Client<S>;
}

async function* explained<T>(stream: AsyncIterable<T>): AsyncGenerator<T, void, undefined> {
  try {
    yield* stream;
  } catch (thrown) {
    throw BlitzError.from(thrown);
  }
}
