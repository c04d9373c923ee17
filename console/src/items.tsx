// One item of a session's log, as the page shows it. Untrusted strings are children
// (text nodes); only Markdown and diffs become markup, through safe_html.ts.

import type { JsonObject } from "@bufbuild/protobuf";
import { ActionKind, type ApprovalRequest, BlitzError, Decision, type Question, RuleMatchKind } from "blitz-client";
import { Component, type ComponentChildren } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { answeredHere, blitz, describe, resolvedHere } from "./api.js";
import { ACTION_KINDS, argsLine, expiryLine, flowLine, hookLine, resolutionLine, rewoundLine, splitDiff, turnUsageLine, words } from "./format.js";
import { collect, formFields, FormFields, initialRaw, type Raw, refusedField } from "./forms.js";
import type { Item } from "./log.js";
import { diffAsHtml, markdownHtml } from "./safe_html.js";

export interface ItemContext {
  sessionId: string;
  /** The open plan proposal's id ("" when none). */
  planId: string;
  /** The request the page focuses (the newest open one). */
  focusId: string;
  /** Forks at a turn; undefined where the session cannot be forked (an ACP agent's). */
  onFork: ((turnId: string) => void) | undefined;
  /** Asks to rewind to a turn; undefined while it cannot be (a turn runs, an ACP agent's). */
  onRewind: ((turnId: string) => void) | undefined;
  /** The page of one turn's diff (the Diff view, that turn chosen). */
  diffHref: (turnId: string) => string;
  onAcceptPlan: (planId: string, text: string) => Promise<void>;
  onRejectPlan: (planId: string, feedback: string) => Promise<void>;
}

/** An item, drawn again only when it (or the context) is a new object. */
export class LogItem extends Component<{ item: Item; ctx: ItemContext }> {
  override shouldComponentUpdate(next: { item: Item; ctx: ItemContext }): boolean {
    return next.item !== this.props.item || next.ctx !== this.props.ctx;
  }

  override render() {
    return <ItemView item={this.props.item} ctx={this.props.ctx} />;
  }
}

function ItemView({ item, ctx }: { item: Item; ctx: ItemContext }) {
  const author = item.author ? <span class="author">{item.author}</span> : null;
  switch (item.kind) {
    case "prompt": {
      const turn = item.turn;
      const flags = [
        turn?.plan && "plan mode",
        turn?.command && "command",
        turn?.aside && "aside",
        turn?.accepted && "carries out the plan",
        turn?.imageIds.length ? `${turn.imageIds.length} image${turn.imageIds.length === 1 ? "" : "s"}` : "",
      ].filter(Boolean);
      // A plan's acceptance sends no text of its own, unless the person added some.
      const said = turn?.text || (turn?.accepted ? "" : <em>(no text)</em>);
      return (
        <div class="item prompt" data-seq={item.seq} data-kind="prompt">
          {turn?.accepted && <div class="bubble accepted-plan">✓ accepted the plan: carry it out</div>}
          {said && <div class="bubble">{said}</div>}
          {flags.length > 0 && <div class="flags">{flags.join(" · ")}</div>}
        </div>
      );
    }
    case "text":
      if (item.thought) {
        return (
          <details class="item thought" data-seq={item.seq} data-kind="thought">
            <summary>
              {author}
              {item.streaming ? "thinking…" : `thought for ${words(item.text)} word${words(item.text) === 1 ? "" : "s"}`}
            </summary>
            <div class="thought-text">{item.text}</div>
          </details>
        );
      }
      return (
        <div class="item text" data-seq={item.seq} data-kind="text">
          {author}
          <Markdown source={item.text} />
        </div>
      );
    case "tool":
      return <ToolItem item={item} author={author} />;
    case "approval":
      return item.resolution === undefined ? (
        <ApprovalPrompt item={item} ctx={ctx} />
      ) : (
        <div class="item approval resolved" data-seq={item.seq} data-kind="approval">
          <div class="approval-head">
            {author}
            <KindBadge request={item.request} /> <code>{item.request.detail}</code>
          </div>
          <Resolved resolution={item.resolution} requestId={item.request.requestId} />
        </div>
      );
    case "question":
      return item.resolution === undefined ? (
        <QuestionPrompt item={item} ctx={ctx} />
      ) : (
        <div class="item question resolved" data-seq={item.seq} data-kind="question">
          <div class="question-text">
            {author}? {urlToOpen(item.question)[0]}
          </div>
          <Opens question={item.question} />
          <Resolved resolution={item.resolution} requestId={item.question.requestId} />
        </div>
      );
    case "resolution":
      return (
        <div class="item resolution" data-seq={item.seq} data-kind="resolution">
          <Resolved resolution={item.resolution} requestId={item.resolution.requestId} />
        </div>
      );
    case "tasks":
      return (
        <div class="item tasks-set" data-seq={item.seq} data-kind="tasks">
          {author}task list set ({item.tasks.length} item{item.tasks.length === 1 ? "" : "s"})
        </div>
      );
    case "notice":
      return (
        <div class={`item notice${item.error ? " error" : ""}`} data-seq={item.seq} data-kind="notice" role={item.error ? "alert" : undefined}>
          ℹ {item.text}
        </div>
      );
    case "plan":
      return <PlanItem item={item} ctx={ctx} />;
    case "planDecision": {
      const d = item.decision;
      const by = d.decidedBy ? ` by ${d.decidedBy}` : "";
      return (
        <div class={`item plan-decision ${d.approved ? "ok" : "no"}`} data-seq={item.seq} data-kind="plan-decision">
          ↳ plan {d.approved ? "accepted" : "rejected"}
          {by}
          {d.feedback ? `: ${d.feedback}` : ""}
        </div>
      );
    }
    case "file":
      return (
        <div class="item file" data-seq={item.seq} data-kind="file">
          {author}
          {item.change} <code>{item.path}</code>
        </div>
      );
    case "flowStep": {
      const step = item.step;
      return (
        <div class={`item flow-step flow-${step.status}`} data-seq={item.seq} data-kind="flow-step" data-status={step.status} title={step.status}>
          {flowLine(step)}
          {step.workflow && <span class="dim"> ({step.workflow})</span>}
        </div>
      );
    }
    case "rewound":
      return (
        <div class="item rewound" data-seq={item.seq} data-kind="rewound">
          {rewoundLine(item.rewound)}
        </div>
      );
    case "hook": {
      const o = item.outcome;
      return (
        <div class={`item hook${o.failed ? " error" : ""}`} data-seq={item.seq} data-kind="hook">
          {hookLine(o)}
          {o.systemMessage && <div class="dim">{o.systemMessage}</div>}
        </div>
      );
    }
    case "finished": {
      const f = item.finished;
      return (
        <div class="item finished" data-seq={item.seq} data-kind="finished">
          {f.error && (
            <div class="error-line" role="alert">
              ✗ {f.error.reason} {f.error.message}
            </div>
          )}
          {f.output && !item.answered && <Markdown source={f.output} class="markdown output" />}
          {f.leftover.length > 0 && <div class="leftover">not delivered: {f.leftover.join("; ")}</div>}
          {item.calls.length > 1 && (
            <div class="calls">
              tokens per model call (in→out): {item.calls.map((u) => `${u.input}→${u.output}`).join(", ")}
            </div>
          )}
          <div class="usage-line">
            <span class="usage" data-testid="turn-usage">
              {turnUsageLine(f.before, f.after)}
            </span>
            {!item.command && (
              <a class="link" href={ctx.diffHref(item.turnId)} title="What this turn changed in the workspace">
                diff
              </a>
            )}
            {ctx.onFork && (
              <button type="button" class="link" onClick={() => ctx.onFork?.(item.turnId)} title="A new session from this turn">
                fork here
              </button>
            )}
            {ctx.onRewind && !item.command && (
              <button type="button" class="link" onClick={() => ctx.onRewind?.(item.turnId)} title="Take the session back to the end of this turn">
                rewind here
              </button>
            )}
          </div>
        </div>
      );
    }
  }
}

/** A short text whose `backquoted` parts show as code (a rule's words, a task): text
 * nodes both, never markup. */
export function Ticks({ text }: { text: string }) {
  const parts = text.split(/`([^`\n]+)`/);
  return <>{parts.map((part, i) => (i % 2 ? <code key={i}>{part}</code> : part))}</>;
}

export function Markdown({ source, class: className = "markdown" }: { source: string; class?: string }) {
  const html = useMemo(() => markdownHtml(source), [source]);
  // The one place model text becomes markup: sanitized (safe_html.ts), under the CSP.
  return <div class={className} dangerouslySetInnerHTML={{ __html: html }} />;
}

export function Diff({ diff }: { diff: string }) {
  const html = useMemo(() => diffAsHtml(diff), [diff]);
  return <div class="diff" dangerouslySetInnerHTML={{ __html: html }} />;
}

/** An approval's diff: what git prints before the first file (a push's `--stat`) as
 * text, the rest as a diff. */
function RequestDiff({ text }: { text: string }) {
  const { head, diff } = splitDiff(text);
  return (
    <>
      {head && <pre class="diff-head">{head}</pre>}
      {diff && <Diff diff={diff} />}
    </>
  );
}

/** An approval's kind, as `blitz chat` names it ("COMMAND", "PUSH"…). */
function KindBadge({ request }: { request: ApprovalRequest }) {
  const kind = ACTION_KINDS[request.kind] ?? "ACTION";
  return <span class={`kind kind-${kind.toLowerCase()}`}>{kind}</span>;
}

/** How many of a command's last lines show until "show all" is pressed. */
const TAIL_LINES = 400;

function ToolItem({ item, author }: { item: Extract<Item, { kind: "tool" }>; author: ComponentChildren }) {
  const [all, setAll] = useState(false);
  const result = item.result;
  const value = (result?.value ?? {}) as Record<string, unknown>;
  const exit = typeof value.exit_code === "number" ? value.exit_code : undefined;
  // The live lines (tool_output) are the whole output as it was printed; the result holds
  // it too, capped. Whichever is longer is all the page has.
  const kept = typeof value.output === "string" ? value.output : "";
  const output = item.output.length >= kept.length ? item.output : kept;
  const cut = value.truncated === true;
  const lines = lineCount(output);
  const error = typeof value.error === "string" ? value.error : "";
  let status: ComponentChildren = <span class="running">{item.waiting === "answer" ? "waiting for an answer" : item.waiting ? "waiting for approval" : item.partial ? "…" : "running…"}</span>;
  if (item.stopped) status = <span class="bad">└ stopped: the turn ended before it returned</span>;
  if (result) {
    if (error) status = <span class="bad">└ {error}</span>;
    else if (exit !== undefined) status = <span class={exit === 0 ? "good" : "bad"}>└ exit {exit}</span>;
    else status = <span class={result.isError ? "bad" : "good"}>└ {result.isError ? "failed" : "done"}</span>;
  }
  return (
    <div class="item tool" data-seq={item.seq} data-kind="tool" data-tool={item.name}>
      <div class="tool-head">
        {author}
        <span class="tool-name">● {item.name}</span> <span class="tool-args">{argsLine(item.args)}</span>
      </div>
      {output && <pre class="tool-output">{all ? output : tail(output, TAIL_LINES)}</pre>}
      {output && lines > TAIL_LINES && (
        <button type="button" class="link show-all" onClick={() => setAll(!all)} aria-expanded={all}>
          {all ? `show the last ${TAIL_LINES} lines` : `show all ${lines} lines`}
        </button>
      )}
      {cut && <div class="dim cut-note">The command printed more: the server kept its first {output.length.toLocaleString("en")} characters.</div>}
      <div class="tool-status">
        {status}
        {result && result.seconds > 0 && <span class="dim"> · {result.seconds.toFixed(2)} s</span>}
      </div>
      <details class="tool-details">
        <summary>arguments and result</summary>
        <pre>{JSON.stringify(item.args ?? {}, null, 2)}</pre>
        {result && <pre>{JSON.stringify(result.value ?? {}, null, 2)}</pre>}
      </details>
    </div>
  );
}

function lineCount(text: string): number {
  const all = text.split("\n");
  return all[all.length - 1] === "" ? all.length - 1 : all.length;
}

function tail(text: string, lines: number): string {
  const all = text.split("\n");
  const ends = all[all.length - 1] === "";
  const body = ends ? all.slice(0, -1) : all;
  if (body.length <= lines) return text;
  return `… ${body.length - lines} earlier lines\n${body.slice(-lines).join("\n")}${ends ? "\n" : ""}`;
}

function Resolved({ resolution, requestId }: { resolution: NonNullable<Extract<Item, { kind: "approval" }>["resolution"]>; requestId: string }) {
  const mine = resolvedHere(resolution.client, requestId);
  const denied = resolution.decision === Decision.DENY || resolution.via === "withdrawn";
  return (
    <div class={`resolved-line ${denied ? "no" : "ok"}`} role="status" data-testid="resolution">
      ↳ {resolutionLine(resolution, mine)}
    </div>
  );
}

function useNow(active: boolean): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [active]);
  return now;
}

function Expiry({ request, action }: { request: ApprovalRequest | Question; action: string }) {
  const expires = request.expireTime ? Number(request.expireTime.seconds) * 1000 + request.expireTime.nanos / 1e6 : 0;
  const now = useNow(expires > 0);
  if (!expires) return null;
  return <div class="expiry">{expiryLine(expires, now, action)}</div>;
}

/** Brings a field just opened into sight (it may be below the fold) and into focus. */
function reveal(element: HTMLElement | null): void {
  if (!element) return;
  element.scrollIntoView({ block: "nearest" });
  element.focus({ preventScroll: true });
}

/** Focus `ref` once, when the request is the one the page focuses. */
function useFocusOnArrival(ref: { current: HTMLElement | null }, focus: boolean) {
  useEffect(() => {
    if (focus) ref.current?.focus({ preventScroll: false });
  }, [focus]);
}

type Mode = "choose" | "deny" | "stop" | "edit" | "always";

export function ApprovalPrompt({ item, ctx }: { item: Extract<Item, { kind: "approval" }>; ctx: ItemContext }) {
  const request = item.request;
  const kind = ACTION_KINDS[request.kind] ?? "ACTION";
  const editable = request.kind === ActionKind.COMMAND;
  const push = request.kind === ActionKind.PUSH;
  // A request whose scope label holds a masked secret takes ONCE and DENY only (an older
  // server lists none: all four).
  const offered = (decision: Decision) =>
    request.availableDecisions.length === 0 || request.availableDecisions.includes(decision);
  const box = useRef<HTMLDivElement>(null);
  const field = useRef<HTMLTextAreaElement & HTMLInputElement>(null);
  const [mode, setMode] = useState<Mode>("choose");
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  useFocusOnArrival(box, ctx.focusId === request.requestId);
  useEffect(() => {
    if (mode !== "choose") reveal(field.current);
  }, [mode]);
  // A broader rule the server offers ("commands starting `pytest -q`"), for `r`.
  const suggested = request.suggestedRule?.pattern && offered(Decision.ALWAYS) ? request.suggestedRule : undefined;
  const suggestedWords = suggested
    ? suggested.label || (suggested.match === RuleMatchKind.RULE_MATCH_COMMAND_PREFIX ? `\`${suggested.pattern} …\`` : suggested.pattern)
    : "";
  // The command is edited on one line (Enter runs it) unless it has several.
  const multiline = request.detail.includes("\n");

  async function decide(
    decision: "once" | "session" | "always" | "deny",
    options: { reason?: string; command?: string; interrupt?: boolean; rule?: boolean } = {},
  ) {
    setBusy(true);
    setError("");
    try {
      answeredHere.add(request.requestId);
      if (options.rule && suggested) {
        await blitz.sessions.decide({ sessionId: ctx.sessionId, requestId: request.requestId, decision: Decision.ALWAYS, rule: suggested });
      } else {
        await blitz.decide(ctx.sessionId, request.requestId, decision, options);
      }
    } catch (thrown) {
      answeredHere.delete(request.requestId);
      const e = BlitzError.from(thrown);
      setError(e.reason === "ALREADY_RESOLVED" ? "Already answered by another client." : describe(e));
      setBusy(false);
    }
  }

  function start(next: Mode) {
    setMode(next);
    setText(next === "edit" ? request.detail : "");
  }

  function onKeyDown(event: KeyboardEvent) {
    const target = event.target as HTMLElement;
    if (event.key === "Escape" && mode !== "choose") {
      event.preventDefault();
      setMode("choose");
      box.current?.focus();
      return;
    }
    if (target.tagName === "TEXTAREA" || target.tagName === "INPUT") {
      if (event.key === "Enter" && (target.tagName === "INPUT" || event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        submit();
      }
      return;
    }
    if (busy || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key.toLowerCase();
    const act: Record<string, () => void> = {
      o: () => decide("once"),
      ...(offered(Decision.SESSION) ? { s: () => decide("session") } : {}),
      // ALWAYS for a destructive command is never one key: it asks to confirm.
      ...(offered(Decision.ALWAYS) ? { a: () => (request.destructive ? start("always") : decide("always")) } : {}),
      ...(suggested ? { r: () => decide("always", { rule: true }) } : {}),
      d: () => start("deny"),
      x: () => start("stop"),
      ...(editable ? { e: () => start("edit") } : {}),
    };
    if (act[key]) {
      event.preventDefault();
      act[key]();
    }
  }

  function submit() {
    if (mode === "always") void decide("always");
    else if (mode === "deny") void decide("deny", { reason: text.trim() });
    else if (mode === "stop") void decide("deny", { reason: text.trim(), interrupt: true });
    else if (mode === "edit") {
      const command = text.trim();
      if (!command) return setError("Give a command, or choose again.");
      void decide("once", { command: command === request.detail ? "" : command });
    }
  }

  return (
    <div
      class="item approval open"
      data-seq={item.seq}
      data-kind="approval"
      data-request={request.requestId}
      ref={box}
      tabIndex={-1}
      role="group"
      aria-label={push ? "Approval needed: a push to the repository" : `Approval needed: ${kind} ${request.tool}`}
      onKeyDown={onKeyDown}
    >
      <div class="approval-head">
        <KindBadge request={request} />{" "}
        {push ? <span class="tool-name">push this session's changes to its repository</span> : <span class="tool-name">{request.tool}</span>}
        {request.agent && <span class="author"> {request.agent}</span>}
        {request.taskId && <span class="dim"> · task {request.taskId}</span>}
      </div>
      <pre class="detail">{request.detail}</pre>
      {request.askedByHook && (
        <div class="hook-edit" role="note">
          the hook <code>{request.askedByHook}</code> asks for your decision
        </div>
      )}
      {request.hookEdit && (
        <div class="hook-edit" role="note">
          edited by the hook <code>{request.hookEdit.hookId}</code>; the agent asked:{" "}
          <code>{JSON.stringify(request.hookEdit.originalInput ?? {})}</code>
        </div>
      )}
      {request.diff && <RequestDiff text={request.diff} />}
      {request.scopeLabel && (
        <div class="scope">
          rule scope: <code>{request.scopeLabel}</code>
        </div>
      )}
      {request.destructive && (
        <div class="destructive" role="note">
          destructive: no broader rule is offered, and <kbd>a</kbd> always asks to confirm
        </div>
      )}
      <Expiry request={request} action="auto-deny" />
      {mode === "choose" ? (
        <div class="actions" role="toolbar" aria-label="Decide">
          <button type="button" disabled={busy} onClick={() => decide("once")} aria-keyshortcuts="o">
            <kbd>o</kbd> once
          </button>
          <button type="button" disabled={busy || !offered(Decision.SESSION)} onClick={() => decide("session")} aria-keyshortcuts="s">
            <kbd>s</kbd> session
          </button>
          <button
            type="button"
            disabled={busy || !offered(Decision.ALWAYS)}
            onClick={() => (request.destructive ? start("always") : decide("always"))}
            aria-keyshortcuts="a"
            title="A stored rule covering all your sessions"
          >
            <kbd>a</kbd> always
          </button>
          {suggested && (
            <button type="button" disabled={busy} onClick={() => decide("always", { rule: true })} aria-keyshortcuts="r" title="A stored rule covering this and every action like it, in your sessions in this workspace">
              <kbd>r</kbd> always allow <Ticks text={suggestedWords} />
            </button>
          )}
          <button type="button" disabled={busy} class="deny" onClick={() => start("deny")} aria-keyshortcuts="d">
            <kbd>d</kbd> deny
          </button>
          <button type="button" disabled={busy} class="deny" onClick={() => start("stop")} aria-keyshortcuts="x">
            <kbd>x</kbd> deny + stop
          </button>
          {editable && (
            <button type="button" disabled={busy} onClick={() => start("edit")} aria-keyshortcuts="e">
              <kbd>e</kbd> edit
            </button>
          )}
        </div>
      ) : (
        <div class="reply">
          {mode === "always" ? (
            <span>
              Always allow exactly <code>{request.scopeLabel}</code> in your sessions in this workspace?
            </span>
          ) : mode === "edit" && multiline ? (
            <textarea ref={field} value={text} onInput={(e) => setText(e.currentTarget.value)} aria-label="Command to run" rows={3} placeholder="Ctrl+Enter runs it" />
          ) : mode === "edit" ? (
            <input ref={field} value={text} onInput={(e) => setText(e.currentTarget.value)} aria-label="Command to run" spellcheck={false} autoComplete="off" />
          ) : (
            <input ref={field} value={text} onInput={(e) => setText(e.currentTarget.value)} aria-label="Reason (the model receives it)" placeholder="reason (the model receives it)" />
          )}
          <button type="button" disabled={busy} class={mode === "edit" || mode === "always" ? "" : "deny"} onClick={submit}>
            {mode === "always" ? "yes, always allow it" : mode === "edit" ? "run edited command once" : mode === "stop" ? "deny and stop the turn" : "deny"}
          </button>
          <button type="button" class="link" onClick={() => setMode("choose")}>
            back
          </button>
        </div>
      )}
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
    </div>
  );
}

/** An MCP server's URL question: its text without the last line, and the host that line
 * names once it matches the URL on the line before (the server puts both after the
 * server's words); else the text and "". The host is shown apart (`Opens`), in a style the
 * server's words cannot take. */
export function urlToOpen(q: Question): [string, string] {
  if (!q.mcpServer) return [q.question, ""];
  const cut = q.question.lastIndexOf("\n");
  const head = q.question.slice(0, cut);
  const url = head.slice(head.lastIndexOf("\n") + 1);
  let host = "";
  try {
    host = new URL(url).hostname.replace(/^\[(.*)\]$/, "$1");
  } catch {
    return [q.question, ""];
  }
  if (cut < 0 || !host || q.question.slice(cut + 1) !== `opens ${host}`) return [q.question, ""];
  return [head, host];
}

function Opens({ question }: { question: Question }) {
  const host = urlToOpen(question)[1];
  return host ? <div class="opens">opens <strong>{host}</strong></div> : null;
}

export function QuestionPrompt({ item, ctx }: { item: Extract<Item, { kind: "question" }>; ctx: ItemContext }) {
  if (item.question.form && Object.keys(item.question.form).length > 0) return <FormPrompt item={item} ctx={ctx} />;
  return <ChoicePrompt item={item} ctx={ctx} />;
}

/** An answer's failure, as the prompt says it. */
function refusal(thrown: unknown): string {
  const e = BlitzError.from(thrown);
  return e.reason === "ALREADY_RESOLVED" ? "Already answered by another client." : describe(e);
}

function ChoicePrompt({ item, ctx }: { item: Extract<Item, { kind: "question" }>; ctx: ItemContext }) {
  const q = item.question;
  const box = useRef<HTMLFormElement>(null);
  const [chosen, setChosen] = useState<string[]>([]);
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  useFocusOnArrival(box, ctx.focusId === q.requestId);

  async function answer(event?: Event, picked: string[] = chosen) {
    event?.preventDefault();
    if (busy) return;
    const answers = q.options.length ? picked : [text.trim()].filter(Boolean);
    if (!answers.length) return setError(q.options.length ? "Choose an answer." : "Type an answer.");
    setBusy(true);
    setError("");
    try {
      answeredHere.add(q.requestId);
      await blitz.answer(ctx.sessionId, q.requestId, answers);
    } catch (thrown) {
      answeredHere.delete(q.requestId);
      setError(refusal(thrown));
      setBusy(false);
    }
  }

  function toggle(option: string, on: boolean): string[] {
    const next = q.multiSelect ? (on ? [...chosen.filter((o) => o !== option), option] : chosen.filter((o) => o !== option)) : on ? [option] : [];
    setChosen(next);
    return next;
  }

  function onKeyDown(event: KeyboardEvent) {
    const target = event.target as HTMLElement;
    if (target.tagName === "INPUT" && (target as HTMLInputElement).type === "text") return;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const n = Number(event.key);
    if (Number.isInteger(n) && n >= 1 && n <= q.options.length) {
      event.preventDefault();
      toggle(q.options[n - 1], !(q.multiSelect && chosen.includes(q.options[n - 1])));
      return;
    }
    // Enter answers from the prompt or an option (a button answers by itself).
    if (event.key === "Enter" && (target === box.current || target.tagName === "INPUT")) {
      event.preventDefault();
      void answer();
    }
  }

  const name = `q-${q.requestId}`;
  return (
    <form
      class="item question open"
      data-seq={item.seq}
      data-kind="question"
      data-request={q.requestId}
      ref={box}
      tabIndex={-1}
      aria-label="Question from the agent"
      onSubmit={(e) => answer(e)}
      onKeyDown={onKeyDown}
    >
      <div class="question-text">
        {item.author && <span class="author">{item.author}</span>}? {urlToOpen(q)[0]}
        {q.multiSelect && <span class="dim"> (one or more)</span>}
      </div>
      <Opens question={q} />
      {q.options.length > 0 ? (
        <fieldset class="options">
          <legend class="sr-only">Answers</legend>
          {q.options.map((option, i) => (
            <label key={option}>
              <input
                type={q.multiSelect ? "checkbox" : "radio"}
                name={name}
                value={option}
                checked={chosen.includes(option)}
                onChange={(e) => toggle(option, e.currentTarget.checked)}
              />{" "}
              <kbd>{i + 1}</kbd> {option}
            </label>
          ))}
        </fieldset>
      ) : (
        <input type="text" class="answer" value={text} onInput={(e) => setText(e.currentTarget.value)} aria-label="Your answer" placeholder="your answer (Enter sends)" />
      )}
      <Expiry request={q} action="closes unanswered" />
      <div class="actions">
        <button type="submit" disabled={busy}>
          answer
        </button>
        {q.options.length > 0 && <span class="dim hint">{q.multiSelect ? "1–9 tick, Enter answers" : "1–9 choose, Enter answers"}</span>}
      </div>
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
    </form>
  );
}

/** A question with a form: its fields, sent as `values`, or declined. A refusal of the
 * server shows beside the field it names (`values.seats`), the question still open. */
function FormPrompt({ item, ctx }: { item: Extract<Item, { kind: "question" }>; ctx: ItemContext }) {
  const q = item.question;
  const fields = useMemo(() => formFields(q.form ?? {}), [q.form]);
  const box = useRef<HTMLFormElement>(null);
  const [raw, setRaw] = useState<Raw>(() => initialRaw(fields));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  useFocusOnArrival(box, ctx.focusId === q.requestId);
  const id = `form-${q.requestId}`;

  function showWrong(field: string, text: string) {
    setErrors({ [field]: text });
    // The field said wrong takes the focus (a group: its first choice).
    window.setTimeout(() => {
      const element = document.getElementById(`${id}-${field}`);
      reveal(element?.tagName === "FIELDSET" ? element.querySelector("input") : element);
    });
  }

  async function send(values: { values?: JsonObject; decline?: boolean }) {
    setBusy(true);
    setError("");
    setErrors({});
    try {
      answeredHere.add(q.requestId);
      await blitz.sessions.answer({ sessionId: ctx.sessionId, requestId: q.requestId, ...values });
    } catch (thrown) {
      answeredHere.delete(q.requestId);
      const e = BlitzError.from(thrown);
      const field = e.reason === "INVALID_ARGUMENT" ? refusedField(e.metadata.field, "values") : "";
      if (field && fields.some((f) => f.name === field)) showWrong(field, e.description);
      else setError(refusal(e));
      setBusy(false);
    }
  }

  function submit(event: Event) {
    event.preventDefault();
    if (busy) return;
    const { values, wrong } = collect(fields, raw);
    if (wrong) return showWrong(wrong.field, wrong.text);
    void send({ values });
  }

  return (
    <form
      class="item question open form-question"
      data-seq={item.seq}
      data-kind="question"
      data-request={q.requestId}
      ref={box}
      tabIndex={-1}
      aria-label="Question from the agent"
      onSubmit={submit}
      noValidate
    >
      <div class="question-text">
        {item.author && <span class="author">{item.author}</span>}? {urlToOpen(q)[0]}
        {q.mcpServer && <span class="dim"> (asked by the MCP server {q.mcpServer})</span>}
      </div>
      <Opens question={q} />
      <FormFields fields={fields} raw={raw} errors={errors} id={id} onChange={(name, value) => setRaw((now) => ({ ...now, [name]: value }))} />
      {fields.some((f) => f.required) && <div class="dim hint">* required</div>}
      <Expiry request={q} action="closes unanswered" />
      <div class="actions">
        <button type="submit" disabled={busy}>
          send
        </button>
        <button type="button" class="deny" disabled={busy} onClick={() => send({ decline: true })}>
          decline
        </button>
      </div>
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
    </form>
  );
}

function PlanItem({ item, ctx }: { item: Extract<Item, { kind: "plan" }>; ctx: ItemContext }) {
  const open = ctx.planId === item.plan.planId && !item.decision;
  const [mode, setMode] = useState<"choose" | "reject">("choose");
  const [text, setText] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  async function act(run: () => Promise<void>) {
    setBusy(true);
    setError("");
    try {
      await run();
    } catch (thrown) {
      setError(describe(thrown));
    } finally {
      setBusy(false);
    }
  }
  return (
    <div class={`item plan${open ? " open" : ""}`} data-seq={item.seq} data-kind="plan" aria-label="Proposed plan">
      <div class="plan-head">▣ plan proposed ({item.plan.tasks.length} steps)</div>
      {/* The plan once, as Markdown; its steps as a list only when it has no text. */}
      {item.plan.plan.trim() ? (
        <Markdown source={item.plan.plan} />
      ) : (
        <ol class="plan-steps">
          {item.plan.tasks.map((task) => (
            <li key={task.id}>
              <Ticks text={task.content} />
            </li>
          ))}
        </ol>
      )}
      {open &&
        (mode === "choose" ? (
          <div class="actions">
            <button type="button" disabled={busy} onClick={() => act(() => ctx.onAcceptPlan(item.plan.planId, ""))}>
              accept the plan
            </button>
            <button type="button" class="deny" disabled={busy} onClick={() => setMode("reject")}>
              reject…
            </button>
          </div>
        ) : (
          <div class="reply">
            <textarea value={text} onInput={(e) => setText(e.currentTarget.value)} aria-label="Feedback for the model" placeholder="feedback (the model gets it with the next turn)" rows={2} />
            <button type="button" class="deny" disabled={busy} onClick={() => act(() => ctx.onRejectPlan(item.plan.planId, text.trim()))}>
              reject the plan
            </button>
            <button type="button" class="link" onClick={() => setMode("choose")}>
              back
            </button>
          </div>
        ))}
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
    </div>
  );
}
