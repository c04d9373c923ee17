// One session: its log replayed from seq 0 and then live, resumed from the last seq seen
// after any drop; its header (the store's Session, the same object the list shows: title,
// state, mode, usage, actions); the composer; and its workspace (files, diff).

import { BlitzError, BusyStrategy, newTurnId, type ServerInfo, type StreamStatus, type TurnEvent, type TurnFinished } from "blitz-client";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { blitz, describe } from "./api.js";
import { acpAgent, agentLabel, labelsText, parseLabels, repositoryLine, sessionUsageLine, stateWord } from "./format.js";
import { type ItemContext, LogItem, Ticks } from "./items.js";
import { EMPTY, finishedTurns, foldAll, type Item, itemText, lastFinishedTurn, type Log, openRequests, pushes, type TurnSummary } from "./log.js";
import { ModePicker, RulesPanel } from "./rules.js";
import { store, useSessions } from "./store.js";
import { WorkflowRunner } from "./workflows.js";
import { Files, WorkspaceDiff } from "./workspace.js";

export type Tab = "log" | "files" | "diff";

interface Props {
  id: string;
  tab: Tab;
  /** The diff view's turn ("" for the whole session's). */
  turnId: string;
  info: ServerInfo;
  onOpen: (id: string, tab?: Tab) => void;
  onGone: () => void;
}

/** The log of session `id`, fed by a resumed Watch from seq 0. */
function useSessionLog(id: string): { log: Log; status: StreamStatus | undefined; ended: string } {
  const [log, setLog] = useState<Log>(EMPTY);
  const [status, setStatus] = useState<StreamStatus>();
  const [ended, setEnded] = useState("");
  useEffect(() => {
    setLog(EMPTY);
    setEnded("");
    const abort = new AbortController();
    let queue: TurnEvent[] = [];
    let timer = 0;
    // Events are folded in batches (one per 30 ms at most), so a long replay renders
    // a few times, not once per event.
    const flush = () => {
      timer = 0;
      const batch = queue;
      queue = [];
      setLog((now) => foldAll(now, batch));
    };
    (async () => {
      try {
        for await (const event of blitz.watch(id, { signal: abort.signal, onStatus: setStatus })) {
          queue.push(event);
          if (!timer) timer = window.setTimeout(flush, 30);
        }
        if (!abort.signal.aborted) setEnded("closed");
      } catch (thrown) {
        if (!abort.signal.aborted) setEnded(describe(thrown));
      }
    })();
    return () => {
      abort.abort();
      window.clearTimeout(timer);
    };
  }, [id]);
  return { log, status, ended };
}

/** Where a fork came from, as the page that forked it knows (kept for the tab's life). */
interface ForkOrigin {
  sourceId: string;
  sourceTitle: string;
  turnId: string;
  /** The turn's place among the source's turns, from 1 (0: not known). */
  turnNumber: number;
}

const FORKS_KEY = "blitz.forks";

function forkOrigins(): Record<string, ForkOrigin> {
  try {
    return JSON.parse(sessionStorage.getItem(FORKS_KEY) ?? "{}") as Record<string, ForkOrigin>;
  } catch {
    return {};
  }
}

function rememberFork(forkId: string, origin: ForkOrigin): void {
  try {
    sessionStorage.setItem(FORKS_KEY, JSON.stringify({ ...forkOrigins(), [forkId]: origin }));
  } catch {
    // No storage: the line falls back on the fork's title.
  }
}

/** "forked from <title> at turn 2": from what the page kept, else from the title the
 * server gives a fork ("fork of <title or id>"); undefined for a session not forked. */
export function forkLine(id: string, title: string): { from: string; sourceId: string; turn: string; turnId: string } | undefined {
  const kept = forkOrigins()[id];
  if (kept) {
    const turn = kept.turnNumber ? `turn ${kept.turnNumber}` : `turn ${kept.turnId}`;
    return { from: kept.sourceTitle || kept.sourceId, sourceId: kept.sourceId, turn, turnId: kept.turnId };
  }
  const match = /^fork of (.+)$/s.exec(title);
  return match ? { from: match[1], sourceId: "", turn: "", turnId: "" } : undefined;
}

/** The source's log up to the turn a fork was made at: what the fork's model remembers,
 * read once (Watch without follow) and shown dimmed, with no action on it. */
function ForkHistory({ sourceId, turnId }: { sourceId: string; turnId: string }) {
  const [log, setLog] = useState<Log>();
  const [error, setError] = useState("");
  useEffect(() => {
    const abort = new AbortController();
    (async () => {
      const events: TurnEvent[] = [];
      try {
        for await (const event of blitz.watch(sourceId, { follow: false, signal: abort.signal })) {
          events.push(event);
          if (event.turnId === turnId && event.kind.case === "finished") break;
        }
        setLog(foldAll(EMPTY, events));
      } catch (thrown) {
        if (!abort.signal.aborted) setError(describe(thrown));
      }
    })();
    return () => abort.abort();
  }, [sourceId, turnId]);
  const ctx: ItemContext = useMemo(
    () => ({ sessionId: sourceId, planId: "", focusId: "", onFork: undefined, onRewind: undefined, diffHref: (turn) => `#/s/${sourceId}/diff/${encodeURIComponent(turn)}`, onAcceptPlan: async () => {}, onRejectPlan: async () => {} }),
    [sourceId],
  );
  if (error) return <div class="error-line">{error}</div>;
  if (!log) return <p class="dim">reading the history…</p>;
  return (
    <div class="fork-history" aria-label="The history the fork remembers" role="region">
      {log.items
        .filter((item) => !isOpen(item))
        .map((item) => (
          <LogItem key={item.seq || `${item.kind}-${item.turnId}`} item={item} ctx={ctx} />
        ))}
    </div>
  );
}

export function SessionView({ id, tab, turnId, info, onOpen, onGone }: Props) {
  const known = useSessions();
  const session = known.sessions.get(id);
  const [error, setError] = useState("");
  const { log, status, ended } = useSessionLog(id);
  const logEnd = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const [plan, setPlan] = useState(false);
  const [find, setFind] = useState("");
  const [rewinding, setRewinding] = useState<TurnSummary>();
  const [rules, setRules] = useState(false);
  const [history, setHistory] = useState(false);

  async function refresh() {
    try {
      store.put(await blitz.sessions.getSession({ sessionId: id }));
    } catch (thrown) {
      const e = BlitzError.from(thrown);
      if (e.reason === "SESSION_NOT_FOUND") onGone();
      else setError(describe(e));
    }
  }
  useEffect(() => {
    setError("");
    void refresh();
  }, [id]);
  // The store follows the server (WatchSessions); an older server's is polled, so the
  // session is read again when its log moves.
  useEffect(() => {
    if (log.phase !== "unknown" && known.mode !== "watching") void refresh();
  }, [log.phase, known.mode]);

  const open = openRequests(log);
  const newest = open[open.length - 1];
  // The newest request takes the focus while the log is shown (and again when it is shown
  // once more: a push asked for from the diff view waits in the log).
  const focusId = newest === undefined || tab !== "log" ? "" : newest.kind === "approval" ? newest.request.requestId : newest.question.requestId;
  // A session an ACP agent serves is not forked nor rewound: the agent's memory is its own.
  const acp = acpAgent(session);
  const turns = useMemo(() => finishedTurns(log), [log.items]);
  const sessionPushes = useMemo(() => pushes(log), [log.items]);
  const logPhase = log.phase !== "unknown" ? log.phase : session ? stateWord(session) : "unknown";
  const running = logPhase === "running" || logPhase === "parked";
  const closed = logPhase === "closed" || (session !== undefined && stateWord(session) === "closed");
  // The header says the session's state as the list does: both read the store.
  const phase = session ? stateWord(session) : logPhase;
  const live = status?.state === "live" ? "live" : status?.state === "reconnecting" ? "reconnecting…" : "connecting…";
  const canRewind = !acp && !running;

  const ctx: ItemContext = useMemo(
    () => ({
      sessionId: id,
      planId: log.planId,
      focusId,
      onFork: acp ? undefined : (turnId) => void fork(turnId),
      onRewind: canRewind ? (turnId) => setRewinding(turns.find((t) => t.turnId === turnId)) : undefined,
      diffHref: (turnId) => `#/s/${id}/diff/${encodeURIComponent(turnId)}`,
      onAcceptPlan: async (planId, text) => {
        await startTurn((signal) => blitz.sessions.acceptPlan({ sessionId: id, planId, text, turnId: newTurnId() }, { signal }));
        // The plan is being carried out: the next prompt is not another plan.
        setPlan(false);
      },
      onRejectPlan: async (planId, feedback) => {
        await blitz.sessions.rejectPlan({ sessionId: id, planId, feedback });
      },
    }),
    [id, log.planId, focusId, acp, canRewind, turns],
  );

  // Follow the log's end while the reader is there.
  useEffect(() => {
    if (stick.current) logEnd.current?.scrollIntoView({ block: "end" });
  }, [log.items.length, log.items[log.items.length - 1]]);

  async function fork(turnId: string) {
    setError("");
    try {
      const forked = await blitz.sessions.forkSession({ sessionId: id, turnId });
      const turn = turns.find((t) => t.turnId === turnId);
      rememberFork(forked.id, { sourceId: id, sourceTitle: session?.title || id, turnId, turnNumber: turn?.number ?? 0 });
      store.put(forked);
      onOpen(forked.id);
    } catch (thrown) {
      setError(describe(thrown));
    }
  }

  const forked = forkLine(id, session?.title ?? "");
  const query = find.trim().toLowerCase();
  const shown = query ? log.items.filter((item) => isOpen(item) || itemText(item).toLowerCase().includes(query)) : log.items;
  const finishedOf = (turn: string) => {
    for (let i = log.items.length - 1; i >= 0; i--) {
      const item = log.items[i];
      if (item.kind === "finished" && item.turnId === turn) return item.finished;
    }
    return undefined;
  };
  const queued = (session?.queuedTurnIds ?? []).map((turn) => ({
    turnId: turn,
    text: (log.items.find((item) => item.kind === "prompt" && item.turnId === turn) as Extract<Item, { kind: "prompt" }> | undefined)?.turn?.text ?? "",
  }));

  return (
    <section class="session" aria-label="Session">
      <header class="session-head">
        <SessionTitle id={id} phase={phase} live={ended ? (ended === "closed" ? "closed" : ended) : live} />
        <SessionMeta id={id} agent={acp && agentLabel(info.agents, acp)} log={log} />
        <SessionActions
          id={id}
          phase={phase}
          agent={acp}
          canFork={!!lastFinishedTurn(log) && !acp}
          onFork={() => fork(lastFinishedTurn(log))}
          onRules={() => setRules(!rules)}
          rules={rules}
          onGone={() => {
            store.remove(id);
            onGone();
          }}
        />
      </header>
      {rules && <RulesPanel sessionId={id} onClose={() => setRules(false)} />}
      <nav class="tabs" aria-label="Views of the session">
        <a href={`#/s/${id}`} aria-current={tab === "log" ? "page" : undefined}>
          Log
        </a>
        <a href={`#/s/${id}/files`} aria-current={tab === "files" ? "page" : undefined}>
          Files
        </a>
        <a href={`#/s/${id}/diff`} aria-current={tab === "diff" ? "page" : undefined}>
          Diff
        </a>
        <span class="spacer" />
        {tab === "log" && (
          <input
            type="search"
            class="find"
            value={find}
            onInput={(e) => setFind(e.currentTarget.value)}
            placeholder="find in this session ( / )"
            aria-label="Find in this session"
            data-search="log"
          />
        )}
      </nav>
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
      {tab === "files" && <Files sessionId={id} />}
      {tab === "diff" && (
        <WorkspaceDiff
          sessionId={id}
          turnId={turnId}
          repository={session?.repository}
          turns={turns}
          pushes={sessionPushes}
          closed={closed}
          onPushing={() => onOpen(id, "log")}
        />
      )}
      <div class={tab === "log" ? "log-view" : "hidden"}>
        {log.tasks.length > 0 && <TaskList tasks={log.tasks} />}
        <div
          class="log"
          role="log"
          aria-live="polite"
          data-last-seq={log.lastSeq}
          data-events={log.events}
          onScroll={(e) => {
            const el = e.currentTarget;
            stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
          }}
        >
          {forked && (
            <div class="item forked" data-kind="forked">
              ↱ forked from{" "}
              {forked.sourceId ? <a href={`#/s/${forked.sourceId}`}>{forked.from}</a> : <strong>{forked.from}</strong>}
              {forked.turn ? ` at ${forked.turn}` : ""}
              <span class="dim"> · its model remembers the history up to there</span>
              {forked.sourceId && forked.turnId && (
                <>
                  {" "}
                  <button type="button" class="link" aria-expanded={history} onClick={() => setHistory(!history)}>
                    {history ? "hide that history" : "show that history"}
                  </button>
                </>
              )}
              {history && forked.sourceId && <ForkHistory sourceId={forked.sourceId} turnId={forked.turnId} />}
            </div>
          )}
          {query && (
            <div class="find-count dim" role="status">
              {shown.length} of {log.items.length} lines match “{find.trim()}”
            </div>
          )}
          {log.items.length === 0 && !forked && <p class="empty">{log.events ? "" : "Nothing yet: send a prompt below."}</p>}
          {shown.map((item) => (
            <LogItem key={item.seq || `${item.kind}-${item.turnId}`} item={item} ctx={ctx} />
          ))}
          {running && log.items.length > 0 && open.length === 0 && <div class="working">working…</div>}
          <div ref={logEnd} />
        </div>
        <Composer
          sessionId={id}
          running={running}
          closed={closed}
          turnId={log.turnId}
          info={info}
          plan={plan}
          setPlan={setPlan}
          finishedOf={finishedOf}
          queued={queued}
          start={startTurn}
        />
      </div>
      {rewinding && (
        <RewindDialog
          sessionId={id}
          turn={rewinding}
          later={turns.filter((t) => t.number > rewinding.number && !t.command).length}
          onClose={() => setRewinding(undefined)}
        />
      )}
    </section>
  );

  /** Starts a turn (RunTurn, AcceptPlan, RunWorkflow) and lets go once it is accepted:
   * the session's Watch shows its events, so the page reads each event once, from one
   * stream. */
  async function startTurn(open: (signal: AbortSignal) => AsyncIterable<TurnEvent>): Promise<void> {
    const abort = new AbortController();
    try {
      for await (const _ of open(abort.signal)) break;
    } finally {
      abort.abort();
    }
  }
}

/** An open request stays in sight whatever is being looked for. */
function isOpen(item: Item): boolean {
  return (item.kind === "approval" || item.kind === "question") && item.resolution === undefined;
}

function SessionTitle({ id, phase, live }: { id: string; phase: string; live: string }) {
  const session = useSessions().sessions.get(id);
  return (
    <div class="title-row">
      <h2 class="session-title">{session?.title || id}</h2>
      <span class={`state state-${phase}`} data-testid="session-state">
        {phase}
      </span>
      <span class={`live live-${live.replace(/[^a-z]/g, "")}`} data-testid="stream-status" role="status">
        {live}
      </span>
    </div>
  );
}

function SessionMeta({ id, agent, log }: { id: string; agent: string; log: Log }) {
  const session = useSessions().sessions.get(id);
  return (
    <div class="meta">
      {agent ? (
        <span class="agent" data-testid="session-agent" title={session?.model}>
          agent {agent}
        </span>
      ) : (
        <span data-testid="session-model">{session?.model}</span>
      )}
      {session && !agent && <ModePicker session={session} />}
      {session?.repository && (
        <span
          class="repository"
          data-testid="session-repository"
          title={`cloned from ${session.repository.url}\ncommit ${session.repository.commit}${session.repository.branch ? `\nbranch ${session.repository.branch}` : ""}`}
        >
          from <code>{repositoryLine(session.repository)}</code>
          {session.repository.branch && <span class="dim"> on {session.repository.branch}</span>}
        </span>
      )}
      {session && Object.keys(session.labels).length > 0 && <span class="labels">{labelsText(session.labels)}</span>}
      <span class="usage" data-testid="session-usage">
        {sessionUsageLine(log.usage)}
      </span>
    </div>
  );
}

function SessionActions(props: {
  id: string;
  phase: string;
  /** The ACP agent serving the session; "" for the built-in agent. */
  agent: string;
  canFork: boolean;
  onFork: () => void;
  rules: boolean;
  onRules: () => void;
  onGone: () => void;
}) {
  const { id, phase } = props;
  const session = useSessions().sessions.get(id);
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState("");
  const [labels, setLabels] = useState("");
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [error, setError] = useState("");

  async function act(run: () => Promise<unknown>) {
    setError("");
    try {
      await run();
    } catch (thrown) {
      setError(describe(thrown));
    }
  }

  async function save(event: Event) {
    event.preventDefault();
    const parsed = parseLabels(labels);
    if (parsed === undefined) return setError("Labels are key=value, separated by commas.");
    await act(async () => {
      store.put(await blitz.sessions.updateSession({ sessionId: id, title: title.trim(), labels: parsed, updateMask: { paths: ["title", "labels"] } }));
      setEditing(false);
    });
  }

  return (
    <>
      {editing && (
        <form class="rename" onSubmit={save} aria-label="Rename the session">
          <input value={title} onInput={(e) => setTitle(e.currentTarget.value)} aria-label="Title" placeholder="title" />
          <input value={labels} onInput={(e) => setLabels(e.currentTarget.value)} aria-label="Labels" placeholder="labels: key=value, …" />
          <button type="submit">save</button>
          <button type="button" class="link" onClick={() => setEditing(false)}>
            cancel
          </button>
        </form>
      )}
      <div class="actions session-actions">
        <button
          type="button"
          onClick={() => {
            setTitle(session?.title ?? "");
            setLabels(session ? labelsText(session.labels) : "");
            setEditing(true);
          }}
        >
          rename
        </button>
        <button type="button" disabled={!props.canFork} onClick={props.onFork} title={props.agent ? "A session an ACP agent serves cannot be forked" : "A new session from the last finished turn"}>
          fork
        </button>
        <button type="button" onClick={props.onRules} aria-expanded={props.rules} title="The approval rules that apply to this session">
          rules
        </button>
        <button type="button" disabled={phase === "closed"} onClick={() => act(async () => store.put(await blitz.sessions.closeSession({ sessionId: id })))}>
          close
        </button>
        {confirmDelete ? (
          <span class="confirm" role="group" aria-label="Confirm delete">
            delete for good?{" "}
            <button
              type="button"
              class="deny"
              onClick={() =>
                act(async () => {
                  await blitz.sessions.deleteSession({ sessionId: id });
                  props.onGone();
                })
              }
            >
              yes, delete
            </button>
            <button type="button" class="link" onClick={() => setConfirmDelete(false)}>
              no
            </button>
          </span>
        ) : (
          <button type="button" class="deny" onClick={() => setConfirmDelete(true)}>
            delete
          </button>
        )}
      </div>
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
    </>
  );
}

/** The question before a rewind: to which turn, how many later turns leave the history,
 * and whether the files go back too. */
function RewindDialog({ sessionId, turn, later, onClose }: { sessionId: string; turn: TurnSummary; later: number; onClose: () => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [files, setFiles] = useState(true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  async function rewind() {
    setBusy(true);
    setError("");
    try {
      const answer = await blitz.sessions.rewindSession({ sessionId, toTurnId: turn.turnId, files });
      if (answer.session) store.put(answer.session);
      onClose();
    } catch (thrown) {
      setError(describe(thrown));
      setBusy(false);
    }
  }
  const text = turn.text.split("\n")[0].trim();
  return (
    <dialog ref={dialog} class="dialog rewind" aria-label="Rewind the session" onClose={onClose}>
      <h2>Rewind to turn {turn.number}?</h2>
      {text && <p class="dim quote">“{text.length > 80 ? `${text.slice(0, 79)}…` : text}”</p>}
      <p>
        {later === 0
          ? "No later turn: the model's history stays as it is."
          : `The ${later === 1 ? "later turn leaves" : `${later} later turns leave`} the model's history (their events stay in the log).`}
      </p>
      <label class="check">
        <input type="checkbox" checked={files} onChange={(e) => setFiles(e.currentTarget.checked)} /> also put back the files they changed
      </label>
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
      <div class="actions">
        <button type="button" class="deny" disabled={busy} onClick={rewind}>
          {busy ? "rewinding…" : "rewind"}
        </button>
        <button type="button" onClick={onClose}>
          cancel
        </button>
      </div>
    </dialog>
  );
}

function TaskList({ tasks }: { tasks: Log["tasks"] }) {
  const marks: Record<string, string> = { completed: "☑", in_progress: "◐" };
  return (
    <aside class="task-list" aria-label="Tasks">
      <strong>Tasks</strong>
      <ul>
        {tasks.map((task) => (
          <li key={task.id || task.content} class={`task task-${task.status}`}>
            <span aria-hidden="true">{marks[task.status] ?? "☐"}</span> <Ticks text={task.content} />
            <span class="sr-only"> ({task.status.replace("_", " ")})</span>
          </li>
        ))}
      </ul>
    </aside>
  );
}

interface Picked {
  file: File;
  url: string;
}

/** A text sent to a running turn, and what became of it once the turn ended. */
interface Steered {
  turnId: string;
  text: string;
}

function steerState(steer: Steered, finished: TurnFinished | undefined): string {
  if (!finished) return "sent to the running turn";
  return finished.leftover.includes(steer.text) ? "not delivered: the turn ended before reading it" : "delivered to the turn";
}

function Composer(props: {
  sessionId: string;
  running: boolean;
  closed: boolean;
  turnId: string;
  info: ServerInfo;
  plan: boolean;
  setPlan: (plan: boolean) => void;
  finishedOf: (turnId: string) => TurnFinished | undefined;
  queued: { turnId: string; text: string }[];
  start: (open: (signal: AbortSignal) => AsyncIterable<TurnEvent>) => Promise<void>;
}) {
  const { plan, setPlan } = props;
  const [text, setText] = useState("");
  const [images, setImages] = useState<Picked[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [steers, setSteers] = useState<Steered[]>([]);
  const [workflow, setWorkflow] = useState(false);
  const maxImages = Number(props.info.limits.images_per_turn ?? 16n);
  const maxBytes = Number(props.info.limits.image_bytes ?? 5n * 1024n * 1024n);

  const picked = useRef<Picked[]>([]);
  picked.current = images;
  // The previews' blob: URLs go with the composer.
  useEffect(() => () => picked.current.forEach((image) => URL.revokeObjectURL(image.url)), []);

  async function send(event?: Event, busyStrategy: BusyStrategy = BusyStrategy.UNSPECIFIED) {
    event?.preventDefault();
    const prompt = text.trim();
    if (!prompt && images.length === 0) return;
    setBusy(true);
    setError("");
    try {
      if (props.running && busyStrategy === BusyStrategy.UNSPECIFIED) {
        const turnId = props.turnId;
        await blitz.sessions.steer({ sessionId: props.sessionId, text: prompt, expectedTurnId: turnId });
        setSteers((now) => [...now, { turnId, text: prompt }]);
      } else {
        const imageIds: string[] = [];
        for (const image of images) {
          const data = new Uint8Array(await image.file.arrayBuffer());
          const uploaded = await blitz.workspaces.uploadImage({ sessionId: props.sessionId, data, mediaType: image.file.type });
          imageIds.push(uploaded.imageId);
        }
        const command = prompt.startsWith("/");
        await props.start((signal) =>
          blitz.sessions.runTurn(
            { sessionId: props.sessionId, turnId: newTurnId(), turn: { text: prompt, plan: plan && !command, imageIds, command }, busy: busyStrategy },
            { signal },
          ),
        );
        images.forEach((image) => URL.revokeObjectURL(image.url));
        setImages([]);
        // What was steered into the turns before is said; a new turn starts afresh.
        if (!props.running) setSteers([]);
      }
      setText("");
    } catch (thrown) {
      setError(describe(thrown));
    } finally {
      setBusy(false);
    }
  }

  async function cancel(turnId: string) {
    setError("");
    try {
      await blitz.sessions.cancel({ sessionId: props.sessionId, turnId });
    } catch (thrown) {
      setError(describe(thrown));
    }
  }

  function pick(files: FileList | null) {
    if (!files) return;
    const picked: Picked[] = [];
    for (const file of Array.from(files)) {
      if (file.size > maxBytes) {
        setError(`${file.name} is larger than ${Math.round(maxBytes / 1048576)} MiB`);
        continue;
      }
      picked.push({ file, url: URL.createObjectURL(file) });
    }
    setImages((now) => [...now, ...picked].slice(0, maxImages));
  }

  if (props.closed) return <p class="composer closed">This session is closed: fork it to go on.</p>;
  return (
    <>
      {workflow && !props.running && (
        <WorkflowRunner sessionId={props.sessionId} start={props.start} onStarted={() => setWorkflow(false)} onClose={() => setWorkflow(false)} />
      )}
      <form class="composer" onSubmit={(e) => send(e)} aria-label={props.running ? "Steer the running turn" : "New turn"}>
        <textarea
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) void send(e);
          }}
          aria-label={props.running ? "Steer text" : "Prompt"}
          aria-keyshortcuts="Control+Enter Meta+Enter"
          placeholder={
            props.running
              ? "steer the running turn: the agent reads it before its next model call (Ctrl+Enter or ⌘+Enter sends; Enter is a new line)"
              : "prompt: Ctrl+Enter or ⌘+Enter sends, Enter is a new line; /help lists the commands"
          }
          rows={3}
        />
        {images.length > 0 && (
          <ul class="thumbs" aria-label="Images to send">
            {images.map((image, i) => (
              <li key={image.url}>
                {/* A preview of the user's own file, from a blob: URL. */}
                <img src={image.url} alt={image.file.name} />
                <button type="button" class="link" aria-label={`remove ${image.file.name}`} onClick={() => setImages((now) => now.filter((_, j) => j !== i))}>
                  ✕
                </button>
              </li>
            ))}
          </ul>
        )}
        <div class="composer-row">
          {!props.running && (
            <>
              <label class="check">
                <input type="checkbox" checked={plan} onChange={(e) => setPlan(e.currentTarget.checked)} /> plan mode
              </label>
              <label class="file-pick">
                images
                <input type="file" accept="image/png,image/jpeg,image/gif,image/webp" multiple onChange={(e) => pick(e.currentTarget.files)} aria-label="Attach images" />
              </label>
              <button type="button" class="link" onClick={() => setWorkflow(!workflow)} aria-expanded={workflow}>
                workflow…
              </button>
            </>
          )}
          <span class="spacer" />
          {props.running && (
            <>
              <button type="button" class="deny" onClick={() => cancel(props.turnId)}>
                cancel turn
              </button>
              <button type="button" disabled={busy} onClick={() => send(undefined, BusyStrategy.ENQUEUE)} title="Run it as a new turn once this one has finished">
                queue
              </button>
            </>
          )}
          <button type="submit" disabled={busy}>
            {props.running ? "steer" : "send"}
          </button>
        </div>
        {props.queued.length > 0 && (
          <ul class="queued" aria-label="Queued turns">
            {props.queued.map((q) => (
              <li key={q.turnId} data-testid="queued-turn">
                ⧗ queued: {q.text || q.turnId}{" "}
                <button type="button" class="link deny" onClick={() => cancel(q.turnId)}>
                  cancel
                </button>
              </li>
            ))}
          </ul>
        )}
        {steers.length > 0 && (
          <ul class="steers" aria-label="Steered">
            {steers.map((steer, i) => {
              const state = steerState(steer, props.finishedOf(steer.turnId));
              return (
                <li key={i} class={`note steer ${state.startsWith("not") ? "bad" : ""}`} role="status" data-testid="steer">
                  ↪ “{steer.text}”: {state}
                </li>
              );
            })}
          </ul>
        )}
        {error && (
          <div class="error-line" role="alert">
            {error}
          </div>
        )}
      </form>
    </>
  );
}
