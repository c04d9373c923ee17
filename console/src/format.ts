// Words and numbers as the console shows them: the same wording as `blitz chat`'s.

import {
  ActionKind,
  type AgentInfo,
  Decision,
  type FlowStep,
  HookDecision,
  type HookOutcome,
  type Resolution,
  type Repository,
  type Rewound,
  type Session,
  SessionState,
  type Usage,
} from "blitz-client";
import type { JsonObject } from "@bufbuild/protobuf";
import type { UsageSum } from "./log.js";

/** The built-in agent's name (ServerInfo.agents' first); any other is an ACP agent's. */
export const BUILTIN_AGENT = "blitz";

/** Every kind of approval by its name, as `blitz chat` prints it (the compiler checks
 * that a new kind of the stubs is named here). */
export const ACTION_KINDS: Record<number, string> = {
  [ActionKind.COMMAND]: "COMMAND",
  [ActionKind.WRITE]: "WRITE",
  [ActionKind.DELETE]: "DELETE",
  [ActionKind.NETWORK]: "NETWORK",
  [ActionKind.MCP]: "MCP",
  [ActionKind.PUSH]: "PUSH",
} satisfies Record<Exclude<ActionKind, ActionKind.UNSPECIFIED>, string>;

/** What waits for someone, for a notification: "A push waits for approval", … */
export function waitingWhat(kind: ActionKind | undefined): string {
  if (kind === undefined) return "A question waits";
  return kind === ActionKind.PUSH ? "A push waits for approval" : "An approval waits";
}

export const STATES: Record<number, string> = {
  [SessionState.IDLE]: "idle",
  [SessionState.RUNNING]: "running",
  [SessionState.PARKED]: "parked",
  [SessionState.CLOSED]: "closed",
};

const DECISION_WORDS: Record<number, string> = {
  [Decision.ONCE]: "once",
  [Decision.SESSION]: "for the session",
  [Decision.ALWAYS]: "always",
};

export function stateWord(session: Session): string {
  return STATES[session.state] ?? "unknown";
}

/** The ACP agent that serves the session (docs/agents.md); "" for the built-in agent. */
export function acpAgent(session: Session | undefined): string {
  const agent = session?.agent ?? "";
  return agent === BUILTIN_AGENT ? "" : agent;
}

/** An agent as a person reads it: its display name, else its name. */
export function agentLabel(agents: readonly AgentInfo[], name: string): string {
  return agents.find((a) => a.name === name)?.displayName || name;
}

/** Who resolved a request, as a person reads it. */
export function byWhom(resolution: Resolution, mine: boolean): string {
  if (mine) return "by you";
  return resolution.resolvedBy ? `by ${resolution.resolvedBy}` : "by another client";
}

/** How a request ended: "approved once by alice", "denied by you: too risky", … */
export function resolutionLine(resolution: Resolution, mine: boolean): string {
  const by = byWhom(resolution, mine);
  if (resolution.via === "withdrawn") return "withdrawn: the turn ended first";
  if (resolution.declined) return `declined ${by}`;
  if (resolution.values && Object.keys(resolution.values).length > 0) return `answered ${by}: ${valuesLine(resolution.values)}`;
  if (resolution.via === "answer" || resolution.answers.length > 0) {
    const answers = resolution.answers.join(", ") || "no answer";
    return `answered ${by}: ${answers}`;
  }
  if (resolution.via === "timeout") {
    return resolution.decision === Decision.DENY ? "denied: it timed out" : "closed unanswered: it timed out";
  }
  if (resolution.decision === Decision.DENY) {
    const stop = resolution.interrupt ? " and the turn stopped" : "";
    const reason = resolution.reason ? `: ${resolution.reason}` : "";
    return `denied ${by}${stop}${reason}`;
  }
  if (resolution.via === "hook") return `approved by the hook ${resolution.resolvedBy}`;
  const how = resolution.via === "rule" ? "by a rule" : DECISION_WORDS[resolution.decision] ?? "";
  const edited = resolution.command ? ` as: ${resolution.command}` : "";
  // The rule a SESSION or ALWAYS decision saved, in the server's words.
  const saved = resolution.savedRule?.label ? ` · rule saved: ${resolution.savedRule.label}` : "";
  return `approved ${how} ${resolution.via === "rule" ? "" : by}${edited}`.replace(/\s+/g, " ").trim() + saved;
}

/** A form's values in one line: "name=Ada, seats=4" (several choices joined by +). */
export function valuesLine(values: JsonObject): string {
  const shown = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));
  return Object.entries(values)
    .map(([key, value]) => `${key}=${Array.isArray(value) ? value.map(shown).join("+") : shown(value)}`)
    .join(", ");
}

/** A workflow step's status, marked as `blitz chat` marks it. */
export const FLOW_MARKS: Record<string, string> = {
  started: "…",
  waiting: "⏸",
  retrying: "↻",
  succeeded: "✓",
  failed: "✗",
  skipped: "↷",
  cancelled: "⊘",
};

/** A workflow step's progress: "[2/5] Plan ✓", then why it failed or is retried. */
export function flowLine(step: FlowStep): string {
  const why = step.error ? ` ${step.error}` : "";
  return `[${step.index}/${step.count}] ${step.title || step.id} ${FLOW_MARKS[step.status] ?? "?"}${why}`;
}

/** What a hook's decision is called: "allowed", "denied", "goes on"… */
const HOOK_WORDS: Record<number, string> = {
  [HookDecision.NONE]: "ran",
  [HookDecision.ALLOW]: "allowed",
  [HookDecision.DENY]: "denied",
  [HookDecision.ASK]: "asks a person",
  [HookDecision.CONTINUE]: "goes on",
};

/** A hook's run, as `blitz chat` words it: "⚓ hook hk_1 (pre_tool run_command): denied:
 * no force pushes", or how it failed. */
export function hookLine(outcome: HookOutcome): string {
  const about = outcome.tool ? ` ${outcome.tool}` : "";
  let line = `⚓ hook ${outcome.hookId} (${outcome.event}${about}): ${HOOK_WORDS[outcome.decision] ?? "ran"}`;
  if (outcome.failed) line += ` — failed: ${outcome.error}`;
  else if (outcome.reason) line += `: ${outcome.reason}`;
  if (outcome.updatedInput) line += ` (input rewritten: ${JSON.stringify(outcome.updatedInput)})`;
  if (outcome.additionalContext) line += " (added context)";
  return line;
}

/** A rewind: "↺ rewound to turn t-1 (2 later turns dropped from the history, 1 file
 * restored)", or "files left as they were" when only the history went back. */
export function rewoundLine(rewound: Rewound): string {
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  let files = "files left as they were";
  if (rewound.files) {
    files = `${plural(rewound.restoredPaths.length, "file")} restored`;
    if (rewound.unrestoredPaths.length) files += `, ${rewound.unrestoredPaths.length} could not be`;
  }
  const dropped = plural(rewound.droppedTurnIds.length, "later turn");
  return `↺ rewound to turn ${rewound.toTurnId} (${dropped} dropped from the history, ${files})`;
}

export function money(usd: number): string {
  return `$${usd.toFixed(4)}`;
}

/** A turn's own calls, tokens and cost, and the session's totals after it. */
export function turnUsageLine(before: Usage | undefined, after: Usage | undefined): string {
  if (!after) return "";
  const calls = after.calls - (before?.calls ?? 0);
  const input = after.input - (before?.input ?? 0n);
  const output = after.output - (before?.output ?? 0n);
  const cost = after.costUsd - (before?.costUsd ?? 0);
  let price = after.priced ? money(cost) : `≥${money(cost)} (some prices unknown)`;
  if (after.tokensUnknown) price += " · some token counts unknown";
  return (
    `${calls} model call${calls === 1 ? "" : "s"} · ${input} in · ${output} out · ${price}` +
    ` │ session: ${after.input + after.output} tokens · ${money(after.costUsd)}`
  );
}

export function sessionUsageLine(usage: UsageSum): string {
  const cost = usage.priced ? money(usage.costUsd) : `≥${money(usage.costUsd)}`;
  return `${usage.calls} model call${usage.calls === 1 ? "" : "s"} · ${usage.input + usage.output} tokens · ${cost}`;
}

/** "auto-deny in 4:59", from an expiry time in ms. */
export function expiryLine(expiresMs: number, nowMs: number, action: string): string {
  const left = Math.max(0, Math.floor((expiresMs - nowMs) / 1000));
  return `${action} in ${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}`;
}

/** A tool call's arguments in one line: a lone value as itself, else name=value pairs. */
export function argsLine(args: Record<string, unknown> | undefined, width = 100): string {
  if (!args) return "";
  const entries = Object.entries(args);
  const value = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));
  let text = entries.length === 1 ? value(entries[0][1]) : entries.map(([k, v]) => `${k}=${value(v)}`).join(", ");
  text = text.split(/\s+/).join(" ");
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

export function words(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

export function labelsText(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}

/** "team=docs, env=dev" as labels; undefined when it does not read as such. */
export function parseLabels(text: string): Record<string, string> | undefined {
  const labels: Record<string, string> = {};
  for (const part of text.split(",")) {
    const trimmed = part.trim();
    if (!trimmed) continue;
    const eq = trimmed.indexOf("=");
    if (eq <= 0) return undefined;
    labels[trimmed.slice(0, eq).trim()] = trimmed.slice(eq + 1).trim();
  }
  return labels;
}

/** A commit id as shown: its first 12 digits (as the server's push request names it). */
export function shortCommit(commit: string): string {
  return commit.slice(0, 12);
}

/** Where a session came from: "https://host/repo.git @ 1a2b3c4d5e6f" (the ref asked for,
 * when one was, before the @). */
export function repositoryLine(repository: Repository): string {
  const ref = repository.ref ? ` ${repository.ref}` : "";
  return `${repository.url}${ref} @ ${shortCommit(repository.commit)}`;
}

/** A unified diff split into what git prints before its first file (a `--stat`, a
 * commit's header) and the diff itself, so each is drawn as what it is. */
export function splitDiff(text: string): { head: string; diff: string } {
  const at = text.search(/^(?:diff --git |--- )/m);
  if (at < 0) return { head: text, diff: "" };
  return { head: text.slice(0, at).trimEnd(), diff: text.slice(at) };
}
