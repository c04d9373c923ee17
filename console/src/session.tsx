// One session: its log replayed from seq 0 and then live, resumed from the last seq seen
// after any drop; its header (title, state, usage, actions); the composer; and its
// workspace (files, diff).

import { BlitzError, newTurnId, type ServerInfo, type Session, type StreamStatus, type TurnEvent } from "blitz-client";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { blitz, describe } from "./api.js";
import { acpAgent, agentLabel, labelsText, parseLabels, repositoryLine, sessionUsageLine, stateWord } from "./format.js";
import { type ItemContext, LogItem } from "./items.js";
import { EMPTY, finishedTurns, foldAll, lastFinishedTurn, type Log, openRequests, pushes } from "./log.js";
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
  onChanged: () => void;
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

export function SessionView({ id, tab, turnId, info, onOpen, onGone, onChanged }: Props) {
  const [session, setSession] = useState<Session>();
  const [error, setError] = useState("");
  const { log, status, ended } = useSessionLog(id);
  const logEnd = useRef<HTMLDivElement>(null);
  const stick = useRef(true);

  async function refresh() {
    try {
      setSession(await blitz.sessions.getSession({ sessionId: id }));
    } catch (thrown) {
      const e = BlitzError.from(thrown);
      if (e.reason === "SESSION_NOT_FOUND") onGone();
      else setError(describe(e));
    }
  }
  useEffect(() => {
    setSession(undefined);
    setError("");
    void refresh();
  }, [id]);
  // The header's state follows the log's; the session itself is read again when it moves.
  useEffect(() => {
    if (log.phase !== "unknown") void refresh();
  }, [log.phase]);

  const open = openRequests(log);
  const newest = open[open.length - 1];
  // The newest request takes the focus while the log is shown (and again when it is shown
  // once more: a push asked for from the diff view waits in the log).
  const focusId = newest === undefined || tab !== "log" ? "" : newest.kind === "approval" ? newest.request.requestId : newest.question.requestId;
  // A session an ACP agent serves is not forked: the agent's memory is its own.
  const acp = acpAgent(session);
  const ctx: ItemContext = useMemo(
    () => ({
      sessionId: id,
      planId: log.planId,
      focusId,
      onFork: acp ? undefined : (turnId) => void fork(turnId),
      diffHref: (turnId) => `#/s/${id}/diff/${encodeURIComponent(turnId)}`,
      onAcceptPlan: async (planId, text) => {
        await startTurn((signal) => blitz.sessions.acceptPlan({ sessionId: id, planId, text, turnId: newTurnId() }, { signal }));
      },
      onRejectPlan: async (planId, feedback) => {
        await blitz.sessions.rejectPlan({ sessionId: id, planId, feedback });
      },
    }),
    [id, log.planId, focusId, acp],
  );

  // Follow the log's end while the reader is there.
  useEffect(() => {
    if (stick.current) logEnd.current?.scrollIntoView({ block: "end" });
  }, [log.items.length, log.items[log.items.length - 1]]);

  async function fork(turnId: string) {
    try {
      const forked = await blitz.sessions.forkSession({ sessionId: id, turnId });
      onChanged();
      onOpen(forked.id);
    } catch (thrown) {
      setError(describe(thrown));
    }
  }

  const turns = useMemo(() => finishedTurns(log), [log.items]);
  const sessionPushes = useMemo(() => pushes(log), [log.items]);
  const phase = log.phase !== "unknown" ? log.phase : session ? stateWord(session) : "unknown";
  const running = phase === "running" || phase === "parked";
  const closed = phase === "closed";
  const live = status?.state === "live" ? "live" : status?.state === "reconnecting" ? "reconnecting…" : "connecting…";

  return (
    <section class="session" aria-label="Session">
      <SessionHeader
        id={id}
        session={session}
        phase={phase}
        log={log}
        live={ended ? (ended === "closed" ? "closed" : ended) : live}
        agent={acp && agentLabel(info.agents, acp)}
        onFork={() => fork(lastFinishedTurn(log))}
        canFork={!!lastFinishedTurn(log) && !acp}
        onChanged={() => {
          void refresh();
          onChanged();
        }}
        onGone={onGone}
      />
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
          {log.items.length === 0 && <p class="empty">{log.events ? "" : "Nothing yet: send a prompt below."}</p>}
          {log.items.map((item) => (
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
          start={startTurn}
        />
      </div>
    </section>
  );

  /** Starts a turn (RunTurn, AcceptPlan) and lets go once it is accepted: the session's
   * Watch shows its events, so the page reads each event once, from one stream. */
  async function startTurn(open: (signal: AbortSignal) => AsyncIterable<TurnEvent>): Promise<void> {
    const abort = new AbortController();
    try {
      for await (const _ of open(abort.signal)) break;
    } finally {
      abort.abort();
    }
  }
}

function SessionHeader(props: {
  id: string;
  session: Session | undefined;
  phase: string;
  log: Log;
  live: string;
  /** The ACP agent serving the session, as shown; "" for the built-in agent. */
  agent: string;
  canFork: boolean;
  onFork: () => void;
  onChanged: () => void;
  onGone: () => void;
}) {
  const { id, session, phase, log } = props;
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState("");
  const [labels, setLabels] = useState("");
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [error, setError] = useState("");

  async function act(run: () => Promise<unknown>) {
    setError("");
    try {
      await run();
      props.onChanged();
    } catch (thrown) {
      setError(describe(thrown));
    }
  }

  async function save(event: Event) {
    event.preventDefault();
    const parsed = parseLabels(labels);
    if (parsed === undefined) return setError("Labels are key=value, separated by commas.");
    await act(() =>
      blitz.sessions.updateSession({
        sessionId: id,
        title: title.trim(),
        labels: parsed,
        updateMask: { paths: ["title", "labels"] },
      }),
    );
    setEditing(false);
  }

  return (
    <header class="session-head">
      {editing ? (
        <form class="rename" onSubmit={save} aria-label="Rename the session">
          <input value={title} onInput={(e) => setTitle(e.currentTarget.value)} aria-label="Title" placeholder="title" />
          <input value={labels} onInput={(e) => setLabels(e.currentTarget.value)} aria-label="Labels" placeholder="labels: key=value, …" />
          <button type="submit">save</button>
          <button type="button" class="link" onClick={() => setEditing(false)}>
            cancel
          </button>
        </form>
      ) : (
        <div class="title-row">
          <h2 class="session-title">{session?.title || id}</h2>
          <span class={`state state-${phase}`} data-testid="session-state">
            {phase}
          </span>
          <span class={`live live-${props.live.replace(/[^a-z]/g, "")}`} data-testid="stream-status" role="status">
            {props.live}
          </span>
        </div>
      )}
      <div class="meta">
        {props.agent ? (
          <span class="agent" data-testid="session-agent" title={session?.model}>
            agent {props.agent}
          </span>
        ) : (
          <span>{session?.model}</span>
        )}
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
        <button type="button" disabled={phase === "closed"} onClick={() => act(() => blitz.sessions.closeSession({ sessionId: id }))}>
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
    </header>
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
            <span aria-hidden="true">{marks[task.status] ?? "☐"}</span> {task.content}
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

function Composer(props: {
  sessionId: string;
  running: boolean;
  closed: boolean;
  turnId: string;
  info: ServerInfo;
  start: (open: (signal: AbortSignal) => AsyncIterable<TurnEvent>) => Promise<void>;
}) {
  const [text, setText] = useState("");
  const [plan, setPlan] = useState(false);
  const [images, setImages] = useState<Picked[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [note, setNote] = useState("");
  const maxImages = Number(props.info.limits.images_per_turn ?? 16n);
  const maxBytes = Number(props.info.limits.image_bytes ?? 5n * 1024n * 1024n);

  const picked = useRef<Picked[]>([]);
  picked.current = images;
  // The previews' blob: URLs go with the composer.
  useEffect(() => () => picked.current.forEach((image) => URL.revokeObjectURL(image.url)), []);

  async function send(event?: Event) {
    event?.preventDefault();
    const prompt = text.trim();
    if (!prompt && images.length === 0) return;
    setBusy(true);
    setError("");
    setNote("");
    try {
      if (props.running) {
        await blitz.sessions.steer({ sessionId: props.sessionId, text: prompt });
        setNote("sent to the running turn");
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
            { sessionId: props.sessionId, turnId: newTurnId(), turn: { text: prompt, plan: plan && !command, imageIds, command } },
            { signal },
          ),
        );
        images.forEach((image) => URL.revokeObjectURL(image.url));
        setImages([]);
      }
      setText("");
    } catch (thrown) {
      setError(describe(thrown));
    } finally {
      setBusy(false);
    }
  }

  async function cancel() {
    setError("");
    try {
      await blitz.sessions.cancel({ sessionId: props.sessionId, turnId: props.turnId });
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
    <form class="composer" onSubmit={send} aria-label={props.running ? "Steer the running turn" : "New turn"}>
      <textarea
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) void send(e);
        }}
        aria-label={props.running ? "Steer text" : "Prompt"}
        placeholder={props.running ? "steer the running turn (the agent sees it before its next model call)" : "prompt (Ctrl+Enter sends; /help for commands)"}
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
          </>
        )}
        <span class="spacer" />
        {props.running && (
          <button type="button" class="deny" onClick={cancel}>
            cancel turn
          </button>
        )}
        <button type="submit" disabled={busy}>
          {props.running ? "steer" : "send"}
        </button>
      </div>
      {note && (
        <div class="note" role="status">
          {note}
        </div>
      )}
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
    </form>
  );
}
