// A session's workspace: its files (ListFiles, ReadFile), read-only, and what changed
// (GetDiff), the whole session's or one turn's; a session from a repository hands its
// changes back from here (ExportChanges: a download, or a push that waits for approval
// in the log like any other). A file's content is shown as text, never as markup.

import { BlitzError, ExportFormat, type FileEntry, type GetDiffResponse, type Repository } from "blitz-client";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { blitz, describe } from "./api.js";
import { shortCommit } from "./format.js";
import { Diff, Markdown } from "./items.js";
import type { PushSummary, TurnSummary } from "./log.js";
import { codeHtml } from "./safe_html.js";

export function Files({ sessionId }: { sessionId: string }) {
  const [path, setPath] = useState("");
  const [entries, setEntries] = useState<FileEntry[]>();
  const [file, setFile] = useState<{ path: string; text: string; size: bigint; truncated: boolean; binary: boolean }>();
  const [error, setError] = useState("");

  useEffect(() => {
    setEntries(undefined);
    setError("");
    blitz.workspaces
      .listFiles({ sessionId, path })
      .then((answer) => setEntries(answer.entries))
      .catch((thrown) => setError(describe(thrown)));
  }, [sessionId, path]);

  async function open(entry: FileEntry) {
    if (entry.directory) {
      setFile(undefined);
      setPath(entry.path);
      return;
    }
    try {
      const answer = await blitz.workspaces.readFile({ sessionId, path: entry.path });
      const binary = answer.content.includes(0);
      const text = binary ? "" : new TextDecoder("utf-8", { fatal: false }).decode(answer.content);
      setFile({ path: entry.path, text, size: answer.size, truncated: answer.truncated, binary });
    } catch (thrown) {
      setError(describe(thrown));
    }
  }

  const parts = path ? path.split("/") : [];
  return (
    <section class="files" aria-label="Workspace files">
      <nav class="crumbs" aria-label="Folder">
        <button type="button" class="link" onClick={() => (setPath(""), setFile(undefined))}>
          workspace
        </button>
        {parts.map((part, i) => (
          <span key={i}>
            {" / "}
            <button type="button" class="link" onClick={() => (setPath(parts.slice(0, i + 1).join("/")), setFile(undefined))}>
              {part}
            </button>
          </span>
        ))}
      </nav>
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
      {entries && entries.length === 0 && <p class="empty">This folder is empty.</p>}
      {entries && (
        <ul class="entries">
          {entries.map((entry) => (
            <li key={entry.path}>
              <button type="button" class="link" onClick={() => open(entry)}>
                {entry.directory ? "📁 " : ""}
                {entry.path.split("/").pop()}
                {entry.directory ? "/" : ""}
              </button>
              {!entry.directory && <span class="dim"> {String(entry.size)} bytes</span>}
            </li>
          ))}
        </ul>
      )}
      {file && (
        <article class="file-view" aria-label={`File ${file.path}`}>
          <h3>{file.path}</h3>
          {file.binary ? <p class="dim">A binary file of {String(file.size)} bytes.</p> : <FileText path={file.path} text={file.text} />}
          {file.truncated && <p class="dim">Only the start is shown: the file has {String(file.size)} bytes.</p>}
        </article>
      )}
    </section>
  );
}

/** A file's text: highlighted for its language, and a Markdown file previewed (its source
 * a click away). Both through safe_html.ts. */
function FileText({ path, text }: { path: string; text: string }) {
  const markdown = /\.(?:md|markdown)$/i.test(path);
  const [source, setSource] = useState(false);
  const html = useMemo(() => (markdown && !source ? undefined : codeHtml(text, path)), [text, path, markdown, source]);
  return (
    <>
      {markdown && (
        <div class="view-switch" role="group" aria-label="Show the file as">
          <button type="button" aria-pressed={!source} onClick={() => setSource(false)}>
            preview
          </button>
          <button type="button" aria-pressed={source} onClick={() => setSource(true)}>
            source
          </button>
        </div>
      )}
      {markdown && !source ? (
        <Markdown source={text} class="markdown file-preview" />
      ) : html === undefined ? (
        <pre class="file-content">{text}</pre>
      ) : (
        // Highlighted: escaped text in spans, sanitized (safe_html.ts).
        <pre class="file-content hljs">
          <code dangerouslySetInnerHTML={{ __html: html }} />
        </pre>
      )}
    </>
  );
}

interface DiffProps {
  sessionId: string;
  /** One turn's changes ("" for the whole session's). */
  turnId: string;
  /** Where the session's workspace was cloned from; undefined for a plain folder. */
  repository: Repository | undefined;
  /** The turns that finished, to choose one of. */
  turns: TurnSummary[];
  pushes: PushSummary[];
  closed: boolean;
  /** A push was asked for: its approval waits in the log. */
  onPushing: () => void;
}

/** A turn as the diff view names it: "turn 2: write notes.txt". */
function turnLabel(turn: TurnSummary): string {
  const text = turn.text.split("\n")[0].trim();
  const cut = text.length > 48 ? `${text.slice(0, 47)}…` : text;
  return `turn ${turn.number}${cut ? `: ${cut}` : ""}`;
}

export function WorkspaceDiff({ sessionId, turnId, repository, turns, pushes, closed, onPushing }: DiffProps) {
  const [diff, setDiff] = useState<GetDiffResponse>();
  const [error, setError] = useState("");
  const choosable = turns.filter((turn) => !turn.command);
  const chosen = turns.find((turn) => turn.turnId === turnId);
  // The last diff asked for: an answer to an earlier question is dropped.
  const asked = useRef(0);
  const shown = useRef("");
  async function load() {
    const call = ++asked.current;
    setError("");
    try {
      const answer = await blitz.workspaces.getDiff({ sessionId, turnId });
      if (call === asked.current) setDiff(answer);
    } catch (thrown) {
      if (call !== asked.current) return;
      setDiff(undefined);
      setError(describe(thrown));
    }
  }
  // Read for another turn, and again when a turn ends (the workspace may have changed).
  useEffect(() => {
    const key = `${sessionId}/${turnId}`;
    if (shown.current !== key) setDiff(undefined);
    shown.current = key;
    void load();
  }, [sessionId, turnId, turnId ? 0 : turns.length]);

  const what = turnId ? (chosen ? turnLabel(chosen) : `turn ${turnId}`) : "";
  const files = diff ? `${diff.paths.length} file${diff.paths.length === 1 ? "" : "s"} changed` : "";
  let summary = "";
  if (diff && diff.paths.length > 0) {
    if (turnId) summary = `${files} in ${what}`;
    else if (repository) summary = `${files} since the session's starting commit`;
    else summary = `${files} (by the agent's file tools; commands' changes are not shown)`;
    if (diff.truncated) summary += "; cut to size";
  }
  let empty = "";
  if (diff && diff.paths.length === 0) {
    if (turnId) empty = `Nothing changed in ${what}.`;
    else if (repository) empty = "Nothing changed since the session's starting commit.";
    else empty = "The agent's file tools changed nothing in this session.";
  }
  return (
    <section class="workspace-diff" aria-label="What the agent changed">
      <div class="actions">
        <label>
          changes of{" "}
          <select
            value={turnId}
            onChange={(e) => {
              const turn = e.currentTarget.value;
              location.hash = turn ? `#/s/${sessionId}/diff/${encodeURIComponent(turn)}` : `#/s/${sessionId}/diff`;
            }}
            aria-label="Changes of"
          >
            <option value="">the whole session</option>
            {choosable.map((turn) => (
              <option key={turn.turnId} value={turn.turnId}>
                {turnLabel(turn)}
              </option>
            ))}
            {turnId && !choosable.some((turn) => turn.turnId === turnId) && <option value={turnId}>{what}</option>}
          </select>
        </label>
        <button type="button" onClick={load}>
          refresh
        </button>
      </div>
      {repository && <Exports sessionId={sessionId} repository={repository} pushes={pushes} closed={closed} onPushing={onPushing} />}
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
      {diff?.base && (
        <p class="dim base" data-testid="diff-base">
          compared with commit <code title={diff.base}>{shortCommit(diff.base)}</code>
          {turnId ? " (the workspace as the turn found it)" : repository && diff.base === repository.commit ? " (the starting commit)" : ""}
        </p>
      )}
      {empty && <p class="empty">{empty}</p>}
      {diff && diff.paths.length > 0 && (
        <>
          <p class="dim" data-testid="diff-summary">
            {summary}
          </p>
          <Diff diff={diff.diff} />
        </>
      )}
    </section>
  );
}

const DOWNLOADS: { format: ExportFormat; name: string; type: string; title: string }[] = [
  { format: ExportFormat.PATCH, name: "patch", type: "text/x-patch", title: "A patch series, one commit per turn: git am applies it" },
  { format: ExportFormat.DIFF, name: "diff", type: "text/x-diff", title: "One diff against the starting commit: git apply applies it" },
  { format: ExportFormat.BUNDLE, name: "bundle", type: "application/octet-stream", title: "A git bundle of a branch with the commits: git fetch reads it" },
];

/** A session from a repository, handed back: downloaded as a patch, a diff or a bundle,
 * or pushed to its origin as a new branch once someone approves (in the log). */
function Exports({ sessionId, repository, pushes, closed, onPushing }: { sessionId: string; repository: Repository; pushes: PushSummary[]; closed: boolean; onPushing: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [note, setNote] = useState("");
  const [asking, setAsking] = useState(false);
  const [branch, setBranch] = useState("");
  const [message, setMessage] = useState("");
  const [branchError, setBranchError] = useState("");

  async function download(format: (typeof DOWNLOADS)[number]) {
    setBusy(true);
    setError("");
    setNote("");
    try {
      const answer = await blitz.workspaces.exportChanges({ sessionId, format: format.format });
      if (answer.data.length === 0) {
        setNote("Nothing to download: nothing changed since the starting commit.");
        return;
      }
      save(answer.data, answer.fileName || `${sessionId}.${format.name}`, format.type);
    } catch (thrown) {
      setError(describe(thrown));
    } finally {
      setBusy(false);
    }
  }

  async function push(event: Event) {
    event.preventDefault();
    setBusy(true);
    setError("");
    setNote("");
    setBranchError("");
    const text = message.trim();
    try {
      await blitz.workspaces.exportChanges({ sessionId, format: ExportFormat.PUSH, branch: branch.trim(), message: text, squash: !!text });
      setAsking(false);
      setBranch("");
      setMessage("");
      onPushing();
    } catch (thrown) {
      const e = BlitzError.from(thrown);
      if (e.metadata.field === "branch" || e.metadata.branch) setBranchError(describe(e));
      else setError(describe(e));
    } finally {
      setBusy(false);
    }
  }

  return (
    <div class="exports" role="group" aria-label="Hand the changes back">
      <div class="actions">
        {DOWNLOADS.map((format) => (
          <button key={format.name} type="button" disabled={busy} onClick={() => download(format)} title={format.title}>
            download {format.name}
          </button>
        ))}
        <button type="button" disabled={busy || closed} onClick={() => setAsking(!asking)} aria-expanded={asking} title={closed ? "A closed session runs no turn: fork it to push" : `A new branch on ${repository.url}, once approved`}>
          push…
        </button>
      </div>
      {asking && (
        <form class="push-form" onSubmit={push} aria-label="Push to the repository">
          <p class="dim">
            A new branch on <code>{repository.url}</code>
            {repository.defaultBranch ? <> (not its default branch, {repository.defaultBranch})</> : null}, pushed once someone approves it in the log.
          </p>
          <input
            value={branch}
            onInput={(e) => (setBranch(e.currentTarget.value), setBranchError(""))}
            placeholder="branch (empty: blitz/…)"
            aria-label="Branch"
            aria-invalid={!!branchError}
            aria-describedby={branchError ? "push-branch-error" : undefined}
            autoComplete="off"
            spellcheck={false}
          />
          {branchError && (
            <div class="error-line field-error" id="push-branch-error" role="alert">
              {branchError}
            </div>
          )}
          <textarea
            value={message}
            onInput={(e) => setMessage(e.currentTarget.value)}
            placeholder="commit message (optional: the changes go as one commit with it; without, one commit per turn)"
            aria-label="Commit message"
            rows={2}
          />
          <div class="actions">
            <button type="submit" disabled={busy}>
              {busy ? "preparing…" : "push"}
            </button>
            <button type="button" class="link" onClick={() => setAsking(false)}>
              cancel
            </button>
          </div>
        </form>
      )}
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
      {pushes.length > 0 && (
        <ul class="pushes" aria-label="Pushes">
          {pushes.map((p) => (
            <li key={p.turnId} class={`push push-${p.state}`} data-testid="push-status" data-state={p.state}>
              {PUSH_MARKS[p.state]} {p.state === "done" || p.state === "failed" ? p.outcome : p.detail || "push"}
              {p.state === "waiting" && (
                <>
                  {" "}
                  <a href={`#/s/${sessionId}`}>waiting for approval in the log</a>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

const PUSH_MARKS: Record<PushSummary["state"], string> = { working: "…", waiting: "⏸", done: "✓", failed: "✗" };

/** Hands `data` to the browser as a download named `name` (from a blob: URL, which the
 * page's policy allows; the name is the browser's to make safe). */
function save(data: Uint8Array, name: string, type: string): void {
  const url = URL.createObjectURL(new Blob([data.slice()], { type }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.rel = "noopener";
  document.body.append(link);
  link.click();
  link.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
