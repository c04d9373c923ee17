// The list of sessions: the store's (store.ts: WatchSessions, or polling on an older
// server), newest first, filtered here by state, labels and words of the title or
// labels, 20 a page; a session waiting for someone shows a badge (and, if the person
// allowed it, a browser notification) while they look at another.

import { BlitzError, type ServerInfo, type Session, SessionState } from "blitz-client";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { blitz, describe } from "./api.js";
import { labelsText, parseLabels, stateWord, waitingWhat } from "./format.js";
import { newestFirst, store, useSessions } from "./store.js";

const PAGE_SIZE = 20;

interface Props {
  info: ServerInfo;
  openId: string;
  onOpen: (id: string) => void;
}

/** Whether a session matches the filters: its state, every label asked for, and each
 * word of the search in its title, id or labels. */
export function matches(session: Session, state: SessionState, labels: Record<string, string> | undefined, search: string): boolean {
  if (state !== SessionState.UNSPECIFIED && session.state !== state) return false;
  for (const [key, value] of Object.entries(labels ?? {})) if (session.labels[key] !== value) return false;
  const haystack = `${session.title} ${session.id} ${labelsText(session.labels)}`.toLowerCase();
  return search
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((word) => haystack.includes(word));
}

export function SessionList({ info, openId, onOpen }: Props) {
  const known = useSessions();
  const [state, setState] = useState<SessionState>(SessionState.UNSPECIFIED);
  const [labelFilter, setLabelFilter] = useState("");
  const [search, setSearch] = useState("");
  const [page, setPage] = useState(0);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState("");
  const [creating, setCreating] = useState(false);
  const seen = useRef(new Set<string>());
  const first = useRef(true);
  const labels = parseLabels(labelFilter);

  useEffect(() => store.start(), []);
  const shown = useMemo(
    () => newestFirst(known.sessions.values()).filter((session) => matches(session, state, labels, search)),
    [known.sessions, state, labelFilter, search],
  );
  const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
  const at = Math.min(page, pages - 1);
  const listed = shown.slice(at * PAGE_SIZE, (at + 1) * PAGE_SIZE);

  // A notification for each request that arrived since the list last changed, elsewhere.
  useEffect(() => {
    if (!known.synced) return;
    for (const session of known.sessions.values()) {
      for (const event of session.pending) {
        const id = event.kind.case === "approvalRequest" || event.kind.case === "question" ? event.kind.value.requestId : "";
        if (!id || seen.current.has(id)) continue;
        seen.current.add(id);
        if (first.current || session.id === openId) continue;
        notify(session, waitingWhat(event.kind.case === "approvalRequest" ? event.kind.value.kind : undefined));
      }
    }
    first.current = false;
  }, [known.sessions, known.synced]);

  async function older() {
    if (at < pages - 1) return setPage(at + 1);
    setLoading(true);
    setError("");
    try {
      await store.older();
      setPage(at + 1);
    } catch (thrown) {
      setError(describe(thrown));
    } finally {
      setLoading(false);
    }
  }

  const filtering = labelFilter || state || search;
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
            setPage(0);
            store.put(session);
            onOpen(session.id);
          }}
        />
      )}
      <div class="filters" role="search">
        <input
          type="search"
          class="search"
          value={search}
          onInput={(e) => (setSearch(e.currentTarget.value), setPage(0))}
          placeholder="search titles and labels ( / )"
          aria-label="Search sessions"
          data-search="sessions"
        />
        <label>
          state{" "}
          <select value={state} onChange={(e) => (setState(Number(e.currentTarget.value) as SessionState), setPage(0))} aria-label="Filter by state">
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
            onInput={(e) => (setLabelFilter(e.currentTarget.value), setPage(0))}
            placeholder="key=value, …"
            aria-label="Filter by labels"
            aria-invalid={labels === undefined}
          />
        </label>
      </div>
      {(error || known.error) && (
        <div class="error-line" role="alert">
          {error || `${known.error} (reconnecting…)`}
        </div>
      )}
      <ul class="session-list" data-mode={known.mode}>
        {listed.map((session) => {
          const waiting = session.pending.length;
          return (
            <li key={session.id} class={session.id === openId ? "current" : ""}>
              <a href={`#/s/${session.id}`} aria-current={session.id === openId ? "page" : undefined} data-session={session.id} data-state={stateWord(session)}>
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
      {known.synced && shown.length === 0 && <p class="empty">No sessions{filtering ? " match" : " yet"}.</p>}
      <nav class="pager" aria-label="Pages">
        <button type="button" disabled={at === 0} onClick={() => setPage(at - 1)}>
          ← newer
        </button>
        <span class="dim">page {at + 1}</span>
        <button type="button" disabled={loading || (at >= pages - 1 && !known.more)} onClick={older}>
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

const OTHER = "\u0000other";

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
  // The models by name, the default first; "PROVIDER:*" is any model of a provider, typed.
  const named = info.models.filter((m) => !m.endsWith(":*"));
  const models = [info.defaultModel, ...named.filter((m) => m !== info.defaultModel)].filter(Boolean);
  const providers = info.models.filter((m) => m.endsWith(":*")).map((m) => m.slice(0, -2));
  const [other, setOther] = useState(false);
  function pickModel(value: string) {
    setOther(value === OTHER);
    setModel(value === OTHER ? `${providers[0]}:` : value);
  }
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
          <select value={other ? OTHER : model} onChange={(e) => pickModel(e.currentTarget.value)} aria-label="Model">
            {models.map((m) => (
              <option key={m} value={m}>
                {m}
                {m === info.defaultModel ? " (default)" : ""}
              </option>
            ))}
            {providers.length > 0 && <option value={OTHER}>another model of {providers.join(", ")}…</option>}
          </select>
        </label>
      )}
      {!acp && other && (
        <input
          value={model}
          onInput={(e) => setModel(e.currentTarget.value)}
          placeholder={`${providers[0]}:name`}
          aria-label="Model name"
          autoComplete="off"
          spellcheck={false}
        />
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
