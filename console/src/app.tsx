// The console's frame: the handshake and sign-in, the routes (in the URL's fragment, so
// the server serves one page), the session list beside the open session, and on a narrow
// screen one of the two at a time.

import type { ServerInfo } from "blitz-client";
import { useEffect, useState } from "preact/hooks";
import { handshake, type SignIn, storeToken } from "./api.js";
import { KeysDialog, typing } from "./keys.js";
import { SessionView, type Tab } from "./session.js";
import { ScheduleList } from "./schedules.js";
import { SessionList } from "./sessions.js";
import { useSessions } from "./store.js";

/** The page's own title (index.html's), behind the count of what waits. */
const TITLE = document.title || "Blitz console";

interface Route {
  sessionId: string;
  tab: Tab;
  /** The diff view's turn (`#/s/ID/diff/TURN`): "" for the whole session's. */
  turnId: string;
}

function readRoute(): Route {
  const match = /^#\/s\/([^/]+)(?:\/(files|diff)(?:\/([^/]+))?)?$/.exec(location.hash);
  if (!match || (match[3] && match[2] !== "diff")) return { sessionId: "", tab: "log", turnId: "" };
  return { sessionId: decodeURIComponent(match[1]), tab: (match[2] as Tab) ?? "log", turnId: match[3] ? decodeURIComponent(match[3]) : "" };
}

export function App() {
  const [signIn, setSignIn] = useState<SignIn>({ state: "checking" });

  async function check() {
    setSignIn(await handshake());
  }
  useEffect(() => {
    void check();
  }, []);
  // A server that cannot be reached is asked again, every two seconds.
  useEffect(() => {
    if (signIn.state !== "down") return;
    const timer = window.setTimeout(check, 2000);
    return () => window.clearTimeout(timer);
  }, [signIn]);

  if (signIn.state === "checking") return <p class="splash">Connecting…</p>;
  if (signIn.state === "down") {
    return (
      <p class="splash" role="alert">
        {signIn.error} Trying again…
      </p>
    );
  }
  if (signIn.state === "out") {
    return (
      <SignInForm
        error={signIn.error ?? ""}
        onToken={(token) => {
          storeToken(token);
          void check();
        }}
      />
    );
  }
  return (
    <Console
      info={signIn.info}
      signedIn={!!signIn.token}
      onSignOut={() => {
        storeToken("");
        void check();
      }}
    />
  );
}

function SignInForm({ error, onToken }: { error: string; onToken: (token: string) => void }) {
  const [token, setToken] = useState("");
  return (
    <main class="sign-in">
      <h1>Blitz</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (token.trim()) onToken(token.trim());
        }}
        aria-label="Sign in"
      >
        <p>This server needs a bearer token (from its operator, or `blitz token create`).</p>
        <label>
          token{" "}
          <input type="password" autoComplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} aria-label="Token" autoFocus />
        </label>
        <button type="submit">sign in</button>
        <p class="dim">It is kept in this tab only (session storage), never in a URL.</p>
        {error && (
          <div class="error-line" role="alert">
            {error}
          </div>
        )}
      </form>
    </main>
  );
}

function Console({ info, signedIn, onSignOut }: { info: ServerInfo; signedIn: boolean; onSignOut: () => void }) {
  const [route, setRoute] = useState(readRoute());
  const [keys, setKeys] = useState(false);
  const [permission, setPermission] = useState(typeof Notification === "undefined" ? "unsupported" : Notification.permission);
  const known = useSessions();
  useEffect(() => {
    const onHash = () => setRoute(readRoute());
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  // `?` lists the keys, `/` goes to the search (the log's in a session, else the list's).
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (typing(event) || event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.key === "?") {
        event.preventDefault();
        setKeys(true);
      } else if (event.key === "/") {
        const field =
          document.querySelector<HTMLInputElement>(".main [data-search]:not([disabled])") ??
          document.querySelector<HTMLInputElement>("[data-search=sessions]");
        if (field && field.offsetParent !== null) {
          event.preventDefault();
          field.focus();
        }
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  // The tab says how many requests wait for someone, in every session: "(2) Blitz console".
  let waiting = 0;
  for (const session of known.sessions.values()) waiting += session.pending.length;
  useEffect(() => {
    document.title = waiting ? `(${waiting}) ${TITLE}` : TITLE;
  }, [waiting]);
  const open = (id: string, tab: Tab = "log") => {
    location.hash = tab === "log" ? `#/s/${id}` : `#/s/${id}/${tab}`;
  };
  return (
    <div class={`console${route.sessionId ? " has-session" : ""}`}>
      <header class="top">
        <a href="#/" class="brand">
          Blitz
        </a>
        <span class="dim server">
          {info.serverVersion} · {info.protocol} r{info.protocolRevision} · {info.defaultModel}
        </span>
        <span class="spacer" />
        <button type="button" class="link" onClick={() => setKeys(true)} aria-keyshortcuts="?" title="Keyboard shortcuts (?)">
          keys
        </button>
        {permission === "default" && (
          <button type="button" class="link" onClick={() => Notification.requestPermission().then(setPermission)}>
            notify me
          </button>
        )}
        {signedIn ? (
          <span class="who" data-testid="who">
            {/* GetServerInfo says whose the token is (a server from before it: only that there is one). */}
            <span class="dim">{info.principal ? "signed in as " : "signed in"}</span>
            {info.principal && <strong>{info.principal}</strong>}
            {info.admin && <span class="state">admin</span>}
            <button type="button" class="link" onClick={onSignOut}>
              sign out
            </button>
          </span>
        ) : (
          <span class="who dim" data-testid="who" title="This server takes calls without a token (loopback)">
            no sign-in needed
          </span>
        )}
      </header>
      <KeysDialog open={keys} onClose={() => setKeys(false)} />
      <div class="panes">
        <SessionList info={info} openId={route.sessionId} onOpen={(id) => open(id)} />
        <main class="main">
          {route.sessionId ? (
            <>
              <a href="#/" class="back">
                ← sessions
              </a>
              <SessionView
                key={route.sessionId}
                id={route.sessionId}
                tab={route.tab}
                turnId={route.turnId}
                info={info}
                onOpen={open}
                onGone={() => {
                  location.hash = "#/";
                }}
              />
            </>
          ) : (
            <>
              <p class="empty">Open a session, or make a new one.</p>
              <ScheduleList onOpen={(id) => open(id)} />
            </>
          )}
        </main>
      </div>
    </div>
  );
}
