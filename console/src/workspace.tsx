// A session's workspace, read-only: its files (ListFiles, ReadFile) and what the agent's
// file tools changed (GetDiff). A file's content is shown as text, never as markup.

import type { FileEntry, GetDiffResponse } from "blitz-client";
import { useEffect, useState } from "preact/hooks";
import { blitz, describe } from "./api.js";
import { Diff } from "./items.js";

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
          {file.binary ? (
            <p class="dim">A binary file of {String(file.size)} bytes.</p>
          ) : (
            <pre class="file-content">{file.text}</pre>
          )}
          {file.truncated && <p class="dim">Only the start is shown: the file has {String(file.size)} bytes.</p>}
        </article>
      )}
    </section>
  );
}

export function WorkspaceDiff({ sessionId }: { sessionId: string }) {
  const [diff, setDiff] = useState<GetDiffResponse>();
  const [error, setError] = useState("");
  async function load() {
    setError("");
    try {
      setDiff(await blitz.workspaces.getDiff({ sessionId }));
    } catch (thrown) {
      setError(describe(thrown));
    }
  }
  useEffect(() => {
    setDiff(undefined);
    void load();
  }, [sessionId]);
  return (
    <section class="workspace-diff" aria-label="What the agent changed">
      <div class="actions">
        <button type="button" onClick={load}>
          refresh
        </button>
      </div>
      {error && (
        <div class="error-line" role="alert">
          {error}
        </div>
      )}
      {diff && diff.paths.length === 0 && <p class="empty">The agent's file tools changed nothing in this session.</p>}
      {diff && diff.paths.length > 0 && (
        <>
          <p class="dim">
            {diff.paths.length} file{diff.paths.length === 1 ? "" : "s"} changed (by the agent's file tools; commands' changes are not shown)
            {diff.truncated ? "; cut to size" : ""}
          </p>
          <Diff diff={diff.diff} />
        </>
      )}
    </section>
  );
}
