// A session's event log as the console shows it: every TurnEvent folded, in seq order,
// into a list of items (a prompt, streamed text, a tool call with its output and result,
// an approval with its resolution, …) and the session's state beside them.
//
// Pure: `fold(log, event)` returns the next log and never touches the DOM, so the same
// events give the same view whether they arrive live or in a replay. Events at or below
// the last seq folded are ignored, which is what makes a resumed stream safe to feed in.

import type {
  Accepted,
  ApprovalRequest,
  FlowStep,
  HookOutcome,
  PlanDecision,
  PlanProposed,
  Question,
  Resolution,
  Rewound,
  Task,
  TurnEvent,
  TurnFinished,
  Usage,
} from "blitz-client";
import { FileChanged_Kind, SessionStateChange_State } from "blitz-client";
import type { JsonObject } from "@bufbuild/protobuf";

interface Base {
  /** The seq of the event that made the item: its key, and `data-seq` in the page. */
  seq: number;
  turnId: string;
  author: string;
}

export type Item =
  | (Base & { kind: "prompt"; turn: Accepted["turn"] })
  | (Base & { kind: "text"; thought: boolean; text: string; streaming: boolean })
  | (Base & {
      kind: "tool";
      id: string;
      name: string;
      args: JsonObject | undefined;
      partial: boolean;
      /** Its approval request or question is open (either shares the call's id). */
      waiting?: "approval" | "answer";
      /** Its turn finished before its result came (cancelled, stopped, failed). */
      stopped?: boolean;
      output: string;
      result?: { value: JsonObject | undefined; isError: boolean; seconds: number };
    })
  | (Base & { kind: "approval"; request: ApprovalRequest; resolution?: Resolution })
  | (Base & { kind: "question"; question: Question; resolution?: Resolution })
  | (Base & { kind: "resolution"; resolution: Resolution })
  | (Base & { kind: "tasks"; tasks: Task[] })
  | (Base & { kind: "notice"; text: string; error: boolean })
  | (Base & { kind: "plan"; plan: PlanProposed; decision?: PlanDecision })
  | (Base & { kind: "planDecision"; decision: PlanDecision })
  | (Base & { kind: "file"; path: string; change: string })
  /** A workflow step: one line per step of a run, its status updated as it goes. */
  | (Base & { kind: "flowStep"; step: FlowStep })
  | (Base & { kind: "rewound"; rewound: Rewound })
  /** A hook ran (docs/hooks.md): what it decided, or how it failed. */
  | (Base & { kind: "hook"; outcome: HookOutcome })
  /** `answered`: the turn showed an answer of its own (text), so `finished.output` only
   * repeats it; a command's answer is in `finished.output` alone. `command`: the turn was
   * a server command (`/push`, `/help`…). */
  | (Base & { kind: "finished"; finished: TurnFinished; calls: Usage[]; answered: boolean; command: boolean });

export type SessionPhase = "idle" | "running" | "parked" | "closed" | "unknown";

export interface Log {
  items: Item[];
  /** The last seq folded, and how many events were: equal when none was lost. */
  lastSeq: number;
  events: number;
  phase: SessionPhase;
  /** The turn running or parked, "" when none. */
  turnId: string;
  tasks: Task[];
  /** The open plan proposal's id, "" when none. */
  planId: string;
  /** The session's usage: the last `finished.after`, and the calls since. */
  usage: UsageSum;
  /** Model calls per turn so far (`usage` events), for a turn's footer. */
  calls: Record<string, Usage[]>;
}

export interface UsageSum {
  calls: number;
  input: bigint;
  output: bigint;
  costUsd: number;
  priced: boolean;
  tokensUnknown: boolean;
}

export const EMPTY: Log = {
  items: [],
  lastSeq: 0,
  events: 0,
  phase: "unknown",
  turnId: "",
  tasks: [],
  planId: "",
  usage: { calls: 0, input: 0n, output: 0n, costUsd: 0, priced: true, tokensUnknown: false },
  calls: {},
};

/** The `case` of a TurnEvent's `kind`: the oneof's fields of turn.proto, in camelCase. */
export type EventKind = NonNullable<TurnEvent["kind"]["case"]>;

/** The kinds of TurnEvent the console shows nothing of, on purpose, each with why. Every
 * other kind has a `case` in `apply` below that shows it (as an item of the log, or in the
 * header or a turn's footer); the compiler checks that `apply` names every kind of the
 * stubs, and tests/console/test_event_kinds.py that each kind of turn.proto is in one
 * place or the other. Empty today: every kind is shown. */
export const IGNORED_KINDS: Readonly<Partial<Record<EventKind, string>>> = {};

const PHASES: Record<number, SessionPhase> = {
  [SessionStateChange_State.SESSION_STATE_IDLE]: "idle",
  [SessionStateChange_State.SESSION_STATE_RUNNING]: "running",
  [SessionStateChange_State.SESSION_STATE_PARKED]: "parked",
  [SessionStateChange_State.SESSION_STATE_CLOSED]: "closed",
};

const CHANGES: Record<number, string> = {
  [FileChanged_Kind.CREATED]: "created",
  [FileChanged_Kind.MODIFIED]: "modified",
  [FileChanged_Kind.DELETED]: "deleted",
};

/** The log with `events` folded in, in order (a batch, as a frame's worth arrives).
 *
 * The log itself is never changed: the batch works on a copy of its list, and an item
 * that changes is a new object, so a view can tell what changed by identity. */
export function foldAll(log: Log, events: TurnEvent[]): Log {
  const next: Log = { ...log, items: log.items.slice(), calls: { ...log.calls } };
  for (const event of events) apply(next, event);
  return next;
}

/** The log with one more event. */
export function fold(log: Log, event: TurnEvent): Log {
  return foldAll(log, [event]);
}

function apply(next: Log, event: TurnEvent): void {
  const seq = Number(event.seq);
  if (seq && seq <= next.lastSeq) return; // seen already
  next.lastSeq = seq || next.lastSeq;
  next.events += 1;
  const base: Base = { seq, turnId: event.turnId, author: event.author };
  const push = (item: Item) => {
    next.items.push(item);
  };
  const replace = (index: number, item: Item) => {
    next.items[index] = item;
  };
  const { kind } = event;
  switch (kind.case) {
    case "accepted": {
      push({ ...base, kind: "prompt", turn: kind.value.turn });
      // Any turn but the one carrying it out supersedes an open plan.
      if (!kind.value.turn?.accepted) next.planId = "";
      break;
    }
    case "text": {
      const text = kind.value;
      const last = next.items[next.items.length - 1];
      const continues =
        last?.kind === "text" &&
        last.streaming &&
        last.turnId === base.turnId &&
        last.author === base.author &&
        last.thought === text.thought;
      if (text.partial) {
        if (continues) replace(next.items.length - 1, { ...last, text: last.text + text.text });
        else push({ ...base, kind: "text", thought: text.thought, text: text.text, streaming: true });
      } else if (text.repeat) {
        // The whole text again: what streamed is complete (and may have been merged).
        if (continues) replace(next.items.length - 1, { ...last, text: text.text, streaming: false });
      } else {
        push({ ...base, kind: "text", thought: text.thought, text: text.text, streaming: false });
      }
      break;
    }
    case "toolCall": {
      const call = kind.value;
      const index = findTool(next.items, call.id);
      const args = call.args as JsonObject | undefined;
      if (index >= 0) {
        const item = next.items[index] as Extract<Item, { kind: "tool" }>;
        replace(index, { ...item, name: call.name, args, partial: call.partial });
      } else {
        push({ ...base, kind: "tool", id: call.id, name: call.name, args, partial: call.partial, output: "" });
      }
      break;
    }
    case "toolOutput": {
      const index = findTool(next.items, kind.value.id);
      if (index >= 0) {
        const item = next.items[index] as Extract<Item, { kind: "tool" }>;
        replace(index, { ...item, output: item.output + kind.value.output });
      }
      break;
    }
    case "toolResult": {
      const result = kind.value;
      const index = findTool(next.items, result.id);
      const value = {
        value: result.result as JsonObject | undefined,
        isError: result.isError,
        seconds: result.duration ? Number(result.duration.seconds) + result.duration.nanos / 1e9 : 0,
      };
      if (index >= 0) {
        replace(index, { ...(next.items[index] as Extract<Item, { kind: "tool" }>), result: value });
      } else {
        push({ ...base, kind: "tool", id: result.id, name: result.name, args: undefined, partial: false, output: "", result: value });
      }
      break;
    }
    case "approvalRequest": {
      const tool = findTool(next.items, kind.value.requestId);
      if (tool >= 0) replace(tool, { ...(next.items[tool] as Extract<Item, { kind: "tool" }>), waiting: "approval" });
      push({ ...base, kind: "approval", request: kind.value });
      break;
    }
    case "question": {
      const tool = findTool(next.items, kind.value.requestId);
      if (tool >= 0) replace(tool, { ...(next.items[tool] as Extract<Item, { kind: "tool" }>), waiting: "answer" });
      push({ ...base, kind: "question", question: kind.value });
      break;
    }
    case "resolution": {
      const resolution = kind.value;
      const tool = findTool(next.items, resolution.requestId);
      if (tool >= 0) replace(tool, { ...(next.items[tool] as Extract<Item, { kind: "tool" }>), waiting: undefined });
      const index = next.items.findIndex(
        (item) =>
          (item.kind === "approval" && item.request.requestId === resolution.requestId) ||
          (item.kind === "question" && item.question.requestId === resolution.requestId),
      );
      if (index >= 0) {
        replace(index, { ...(next.items[index] as Extract<Item, { kind: "approval" | "question" }>), resolution });
      } else {
        push({ ...base, kind: "resolution", resolution }); // a rule approved it: it never parked
      }
      break;
    }
    case "tasks":
      next.tasks = kind.value.items;
      push({ ...base, kind: "tasks", tasks: kind.value.items });
      break;
    case "notice":
      push({ ...base, kind: "notice", text: kind.value.text, error: kind.value.error });
      break;
    case "historyTrimmed": {
      const trimmed = kind.value;
      push({
        ...base,
        kind: "notice",
        text: `history trimmed: ${trimmed.droppedMessages} older messages no longer sent to the model (${trimmed.keptTurns} turns kept)`,
        error: false,
      });
      break;
    }
    case "fileChanged":
      push({ ...base, kind: "file", path: kind.value.path, change: CHANGES[kind.value.kind] ?? "changed" });
      break;
    case "usage": {
      const usage = kind.value;
      next.calls[base.turnId] = [...(next.calls[base.turnId] ?? []), usage];
      next.usage = {
        calls: next.usage.calls + usage.calls,
        input: next.usage.input + usage.input,
        output: next.usage.output + usage.output,
        costUsd: next.usage.costUsd + usage.costUsd,
        priced: next.usage.priced && usage.priced,
        tokensUnknown: next.usage.tokensUnknown || usage.tokensUnknown,
      };
      break;
    }
    case "planProposed": {
      next.planId = kind.value.planId;
      // The plan is the turn's answer: its text, already shown as it streamed, goes into
      // the plan's card instead of standing twice.
      const plan = kind.value.plan.trim();
      const said = next.items.findIndex((item) => item.kind === "text" && !item.thought && item.turnId === base.turnId && item.text.trim() === plan);
      if (said >= 0) next.items.splice(said, 1);
      push({ ...base, kind: "plan", plan: kind.value });
      break;
    }
    case "planDecision": {
      const decision = kind.value;
      if (next.planId === decision.planId) next.planId = "";
      const index = next.items.findIndex((item) => item.kind === "plan" && item.plan.planId === decision.planId);
      if (index >= 0) replace(index, { ...(next.items[index] as Extract<Item, { kind: "plan" }>), decision });
      push({ ...base, kind: "planDecision", decision });
      break;
    }
    case "sessionState": {
      const phase = PHASES[kind.value.state] ?? "unknown";
      next.phase = phase;
      next.turnId = phase === "running" || phase === "parked" ? kind.value.turnId || base.turnId : "";
      break;
    }
    case "finished": {
      closeTurn(next, base.turnId);
      const after = kind.value.after;
      if (after) {
        next.usage = {
          calls: after.calls,
          input: after.input,
          output: after.output,
          costUsd: after.costUsd,
          priced: after.priced,
          tokensUnknown: after.tokensUnknown,
        };
      }
      // Whatever was still open in the turn ended with it (its resolutions say how).
      if (next.turnId === base.turnId) next.turnId = "";
      const { answered, command } = closeStreaming(next, base.turnId);
      push({ ...base, kind: "finished", finished: kind.value, calls: next.calls[base.turnId] ?? [], answered, command });
      break;
    }
    case "flowStep": {
      // One line per step of a run: a step's later events (waiting, retrying, its end)
      // update the line its start made, so the log reads as the workflow's progress.
      const step = kind.value;
      const index = next.items.findIndex(
        (item) => item.kind === "flowStep" && item.step.run === step.run && item.step.id === step.id && item.step.index === step.index,
      );
      if (index >= 0) replace(index, { ...(next.items[index] as Extract<Item, { kind: "flowStep" }>), step });
      else push({ ...base, kind: "flowStep", step });
      break;
    }
    case "rewound":
      push({ ...base, kind: "rewound", rewound: kind.value });
      break;
    case "hook":
      push({ ...base, kind: "hook", outcome: kind.value });
      break;
    case undefined:
      break; // a kind this console's stubs do not know: a newer server's
    default:
      kind satisfies never; // every kind of the stubs has its case above
  }
}

/** The requests still waiting for someone, in the order they were asked. */
export function openRequests(log: Log): Extract<Item, { kind: "approval" | "question" }>[] {
  return log.items.filter(
    (item): item is Extract<Item, { kind: "approval" | "question" }> =>
      (item.kind === "approval" || item.kind === "question") && item.resolution === undefined,
  );
}

/** The last finished turn that can be forked at (not an aside), "" when none. */
export function lastFinishedTurn(log: Log): string {
  const asides = new Set(log.items.filter((i) => i.kind === "prompt" && i.turn?.aside).map((i) => i.turnId));
  for (let i = log.items.length - 1; i >= 0; i--) {
    const item = log.items[i];
    if (item.kind === "finished" && !asides.has(item.turnId)) return item.turnId;
  }
  return "";
}

/** A turn that finished, as the diff view offers it. */
export interface TurnSummary {
  turnId: string;
  /** Its place among the session's turns, from 1. */
  number: number;
  /** Its prompt's text ("" when none was seen). */
  text: string;
  /** A server command (`/push`, `/help`…): its changes are none of the agent's. */
  command: boolean;
}

/** The turns that finished, oldest first. */
export function finishedTurns(log: Log): TurnSummary[] {
  const prompts = new Map<string, { number: number; text: string; command: boolean }>();
  for (const item of log.items) {
    if (item.kind === "prompt" && !prompts.has(item.turnId)) {
      prompts.set(item.turnId, { number: prompts.size + 1, text: item.turn?.text ?? "", command: !!item.turn?.command });
    }
  }
  const turns: TurnSummary[] = [];
  for (const item of log.items) {
    if (item.kind !== "finished") continue;
    const prompt = prompts.get(item.turnId);
    turns.push({ turnId: item.turnId, number: prompt?.number ?? turns.length + 1, text: prompt?.text ?? "", command: prompt?.command ?? false });
  }
  return turns;
}

/** The session's pushes (`/push` command turns), oldest first: each as far as it got. */
export interface PushSummary {
  turnId: string;
  /** What the push's approval says ("push 1a2b… to URL as branch B"), once asked. */
  detail: string;
  state: "working" | "waiting" | "done" | "failed";
  /** The turn's output ("Pushed branch …"), or its error. */
  outcome: string;
}

export function pushes(log: Log): PushSummary[] {
  const found = new Map<string, PushSummary>();
  for (const item of log.items) {
    if (item.kind === "prompt" && item.turn?.command && /^\/push(?:\s|$)/i.test(item.turn.text)) {
      found.set(item.turnId, { turnId: item.turnId, detail: "", state: "working", outcome: "" });
      continue;
    }
    const push = found.get(item.turnId);
    if (!push) continue;
    if (item.kind === "approval") {
      push.detail = item.request.detail;
      if (item.resolution === undefined) push.state = "waiting";
      else push.state = "working";
    } else if (item.kind === "finished") {
      const error = item.finished.error;
      push.state = error ? "failed" : "done";
      push.outcome = error ? `${error.reason}: ${error.message}` : item.finished.output;
    }
  }
  return [...found.values()];
}

function findTool(items: Item[], id: string): number {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item.kind === "tool" && item.id === id) return i;
  }
  return -1;
}

/** Ends whatever of the turn still streams; whether the turn showed an answer (text that
 * is not a thought), and whether it was a server command. */
function closeStreaming(log: Log, turnId: string): { answered: boolean; command: boolean } {
  // Only the newest items can still stream: look back until the turn's prompt.
  let answered = false;
  for (let i = log.items.length - 1; i >= 0; i--) {
    const item = log.items[i];
    if (item.turnId !== turnId) continue;
    if (item.kind === "prompt") return { answered, command: !!item.turn?.command };
    if ((item.kind === "text" && !item.thought) || item.kind === "plan") answered = true;
    if (item.kind === "text" && item.streaming) log.items[i] = { ...item, streaming: false };
  }
  return { answered, command: false };
}

/** Ends the lines of a turn that finished: a tool call without its result was stopped
 * (the turn was cancelled, or failed, before the tool returned), and none waits any more. */
function closeTurn(log: Log, turnId: string): void {
  for (let i = log.items.length - 1; i >= 0; i--) {
    const item = log.items[i];
    if (item.turnId !== turnId) continue;
    if (item.kind === "prompt") return;
    if (item.kind === "tool" && (!item.result || item.waiting)) log.items[i] = { ...item, waiting: undefined, stopped: !item.result };
  }
}

/** What an item says, for finding it ("" for what holds no words of its own). */
export function itemText(item: Item): string {
  switch (item.kind) {
    case "prompt":
      return item.turn?.text ?? "";
    case "text":
      return item.text;
    case "tool":
      return `${item.name} ${JSON.stringify(item.args ?? {})} ${item.output} ${JSON.stringify(item.result?.value ?? {})}`;
    case "approval":
      return `${item.request.tool} ${item.request.detail} ${item.request.scopeLabel}`;
    case "question":
      return `${item.question.question} ${item.question.options.join(" ")} ${item.resolution?.answers.join(" ") ?? ""}`;
    case "notice":
      return item.text;
    case "plan":
      return item.plan.plan;
    case "planDecision":
      return item.decision.feedback;
    case "file":
      return item.path;
    case "flowStep":
      return `${item.step.title} ${item.step.id} ${item.step.output} ${item.step.error}`;
    case "hook":
      return `${item.outcome.hookId} ${item.outcome.tool} ${item.outcome.reason} ${item.outcome.error}`;
    case "finished":
      return `${item.finished.output} ${item.finished.error?.message ?? ""} ${item.finished.leftover.join(" ")}`;
    default:
      return "";
  }
}
