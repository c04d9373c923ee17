// The list of sessions: filtered by state and labels, paged, polled every two seconds so
// that a session waiting for someone shows a badge (and, if the person allowed it, a
// browser notification) while they look at another.

import { BlitzError, type ServerInfo, type Session, SessionState } from "blitz-client";
import { useEffect, useRef, useState } from "preact/hooks";
import { blitz, describe } from "./api.js";
import { labelsText, parseLabels, stateWord, waitingWhat } from "./format.js";

const PAGE_SIZE = 20;
const POLL_MS = 2000;

interface Props {
  info: ServerInfo;
  openId: string;
  onOpen: (id: string) => void;
  /** Bumped when a session changed here (made, renamed, closed…): read the list again. */
  generation: number;
  onChanged: () => void;
}

export function SessionList({ info, openId, onOpen, generation, onChanged }: Props) {
  const [state, setState] = useState<SessionState>(SessionState.UNSPECIFIED);
  const [labelFilter, setLabelFilter] = useState("");
  const [tokens, setTokens] = useState<string[]>([""]); // the page tokens of the pages so far
  const [page, setPage] = useState<{ sessions: Session[]; next: string }>();
  const [error, setError] = useState("");
  const [creating, setCreating] = useState(false);
  const seen = useRef(new Set<string>());
  const first = useRef(true);
  const labels = parseLabels(labelFilter);
  const token = tokens[tokens.length - 1];

  useEffect(() => {
    let stopped = false;
    let timer = 0;
    async function poll() {
      try {
        const answer = await blitz.sessions.listSessions({ pageSize: PAGE_SIZE, pageToken: token, state, labels: labels ?? {} });
        if (stopped) return;
        setPage({ sessions: answer.sessions, next: answer.nextPageToken });
        setError("");
        notifyNew(answer.sessions);
      } catch (thrown) {
        if (!stopped) setError(describe(thrown));
      }
      if (!stopped) timer = window.setTimeout(poll, POLL_MS);
    }
    void poll();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }, [state, labelFilter, token, generation]);

  /** A notification for each request that arrived since the last poll, elsewhere. */
  function notifyNew(sessions: Session[]) {
    for (const session of sessions) {
      for (const event of session.pending) {
        const id = event.kind.case === "approvalRequest" || event.kind.case === "question" ? event.kind.value.requestId : "";
        if (!id || seen.current.has(id)) continue;
        seen.current.add(id);
        if (first.current || session.id === openId) continue;
        notify(session, waitingWhat(event.kind.case === "approvalRequest" ? event.kind.value.kind : undefined));
      }
    }
    first.current = false;
  }

  return (
    <section class="sessions" aria-label="Sessions">
      <div class="sessions-head">
        <h2>Sessions</h2>
        <button type="button" onClick={() => setCreating(!creating)} aria-expanded={creating}>
          new session
        </button>
      </div>
      {creating && (
        <NewSession
          info={info}
          onMade={(session) => {
            setCreating(false);
            setTokens([""]);
            onChanged();
            onOpen(session.id);
          }}
        />
      )}
      <div class="filters" role="search">
        <label>
          state{" "}
          <select value={state} onChange={(e) => (setState(Number(e.currentTarget.value) as SessionState), setTokens([""]))} aria-label="Filter by state">
            <option value={SessionState.UNSPECIFIED}>any</option>
            <option value={SessionState.IDLE}>idle</option>
            <option value={SessionState.RUNNING}>running</option>
            <option value={SessionState.PARKED}>parked</option>
            <option value={SessionState.CLOSED}>closed</option>
          </select>
        </label>
        <label>
          labels{" "}
          <input
            value={labelFilter}
            onInput={(e) => (setLabelFilter(e.currentTarget.value), setTokens([""]))}
            placeholder="key=value, …"
            aria-label="Filter by labels"
            aria-invalid={labels === undefined}
          />
        </label>
      </div>
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
      <ul class="session-list">
        {page?.sessions.map((session) => {
          const waiting = session.pending.length;
          return (
            <li key={session.id} class={session.id === openId ? "current" : ""}>
              <a href={`#/s/${session.id}`} aria-current={session.id === openId ? "page" : undefined} data-session={session.id}>
                <span class="session-name">{session.title || session.id}</span>
                {waiting > 0 && session.id !== openId && (
                  <span class="badge" data-testid="badge" aria-label={`${waiting} waiting for you`}>
                    {waiting}
                  </span>
                )}
                <span class={`state state-${stateWord(session)}`}>{stateWord(session)}</span>
                {Object.keys(session.labels).length > 0 && <span class="labels">{labelsText(session.labels)}</span>}
              </a>
            </li>
          );
        })}
      </ul>
      {page && page.sessions.length === 0 && <p class="empty">No sessions{labelFilter || state ? " match" : " yet"}.</p>}
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={tokens.length < 2} onClick={() => setTokens(tokens.slice(0, -1))}>
          ← newer
        </button>
        <span class="dim">page {tokens.length}</span>
        <button type="button" disabled={!page?.next} onClick={() => page?.next && setTokens([...tokens, page.next])}>
          older →
        </button>
      </nav>
    </section>
  );
}

/** Which field of the form a refusal names: ErrorInfo's `field` (INVALID_ARGUMENT), or
 * the source's `url` (a repository that cannot be reached or is too large). */
function fieldOf(error: BlitzError): "url" | "ref" | "" {
  const field = error.metadata.field ?? "";
  if (field === "source.url" || field === "source" || (!field && error.metadata.url)) return "url";
  if (field === "source.ref") return "ref";
  return "";
}

function NewSession({ info, onMade }: { info: ServerInfo; onMade: (session: Session) => void }) {
  const [title, setTitle] = useState("");
  const [labels, setLabels] = useState("");
  const [model, setModel] = useState(info.defaultModel);
  // The agents a session may be served by, the built-in one first; an ACP agent's model
  // is its operator's, so the model field goes while one is chosen (docs/agents.md).
  const [agent, setAgent] = useState(info.agents[0]?.name ?? "");
  // A repository to clone into the new workspace (only where the operator allows some).
  const [url, setUrl] = useState("");
  const [ref, setRef] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [fieldError, setFieldError] = useState<{ field: "url" | "ref"; text: string }>();
  const models = info.models.filter((m) => !m.endsWith(":*"));
  const acp = info.agents.find((a) => a.name === agent)?.kind === "acp";
  const source = info.repositories && url.trim() ? { url: url.trim(), ref: ref.trim() } : undefined;
  async function make(event: Event) {
    event.preventDefault();
    if (busy) return;
    setError("");
    setFieldError(undefined);
    const parsed = parseLabels(labels);
    if (parsed === undefined) return setError("Labels are key=value, separated by commas.");
    setBusy(true);
    try {
      // With a source the server clones it before it answers: seconds, for a large one.
      onMade(await blitz.sessions.createSession({ title: title.trim(), labels: parsed, agent, model: acp ? "" : model, source }));
    } catch (thrown) {
      const e = BlitzError.from(thrown);
      const field = source ? fieldOf(e) : "";
      if (field) setFieldError({ field, text: describe(e) });
      else setError(describe(e));
      setBusy(false);
    }
  }
  const errorOf = (field: "url" | "ref") => (fieldError?.field === field ? fieldError.text : "");
  return (
    <form class="new-session" onSubmit={make} aria-label="New session" aria-busy={busy}>
      <input value={title} onInput={(e) => setTitle(e.currentTarget.value)} placeholder="title (optional)" aria-label="Title" />
      <input value={labels} onInput={(e) => setLabels(e.currentTarget.value)} placeholder="labels: key=value, …" aria-label="Labels" />
      {info.agents.length > 1 && (
        <label>
          agent{" "}
          <select value={agent} onChange={(e) => setAgent(e.currentTarget.value)} aria-label="Agent">
            {info.agents.map((a) => (
              <option key={a.name} value={a.name}>
                {a.displayName || a.name}
              </option>
            ))}
          </select>
        </label>
      )}
      {!acp && (
        <label>
          model{" "}
          {models.length > 1 ? (
            <select value={model} onChange={(e) => setModel(e.currentTarget.value)} aria-label="Model">
              {models.map((m) => (
                <option key={m} value={m}>
                  {m}
                </option>
              ))}
            </select>
          ) : (
            <input value={model} onInput={(e) => setModel(e.currentTarget.value)} aria-label="Model" />
          )}
        </label>
      )}
      {info.repositories && (
        <fieldset class="repository-source">
          <legend>from a repository (optional)</legend>
          <input
            value={url}
            onInput={(e) => (setUrl(e.currentTarget.value), setFieldError(undefined))}
            placeholder="git URL: https://…, file:///… (empty: an empty folder)"
            aria-label="Repository URL"
            aria-invalid={!!errorOf("url")}
            aria-describedby={errorOf("url") ? "new-session-url-error" : undefined}
            autoComplete="off"
            spellcheck={false}
          />
          {errorOf("url") && (
            <div class="error-line field-error" id="new-session-url-error" role="alert">
              {errorOf("url")}
            </div>
          )}
          <input
            value={ref}
            onInput={(e) => (setRef(e.currentTarget.value), setFieldError(undefined))}
            placeholder="ref: a branch, tag or commit (empty: the default branch)"
            aria-label="Ref"
            aria-invalid={!!errorOf("ref")}
            aria-describedby={errorOf("ref") ? "new-session-ref-error" : undefined}
            autoComplete="off"
            spellcheck={false}
            disabled={!url.trim()}
          />
          {errorOf("ref") && (
            <div class="error-line field-error" id="new-session-ref-error" role="alert">
              {errorOf("ref")}
            </div>
          )}
        </fieldset>
      )}
      <button type="submit" disabled={busy}>
        {busy ? (source ? "cloning…" : "creating…") : "create"}
      </button>
      {busy && source && (
        <div class="note" role="status" data-testid="cloning">
          Cloning {source.url}… the session opens once its workspace is ready.
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

function notify(session: Session, what: string) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  try {
    const note = new Notification(`Blitz: ${what}`, { body: session.title || session.id, tag: session.id });
    note.onclick = () => {
      window.focus();
      location.hash = `#/s/${session.id}`;
    };
  } catch {
    // Some browsers only notify from a service worker: the badge says it all the same.
  }
}
