// The console's frame: the handshake and sign-in, the routes (in the URL's fragment, so
// the server serves one page), the session list beside the open session, and on a narrow
// screen one of the two at a time.

import type { ServerInfo } from "blitz-client";
import { useEffect, useState } from "preact/hooks";
import { handshake, type SignIn, storeToken } from "./api.js";
import { SessionView, type Tab } from "./session.js";
import { SessionList } from "./sessions.js";

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
  const [generation, setGeneration] = useState(0);
  const [permission, setPermission] = useState(typeof Notification === "undefined" ? "unsupported" : Notification.permission);
  useEffect(() => {
    const onHash = () => setRoute(readRoute());
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
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
        {permission === "default" && (
          <button type="button" class="link" onClick={() => Notification.requestPermission().then(setPermission)}>
            notify me
          </button>
        )}
        {signedIn && (
          <button type="button" class="link" onClick={onSignOut}>
            sign out
          </button>
        )}
      </header>
      <div class="panes">
        <SessionList
          info={info}
          openId={route.sessionId}
          onOpen={(id) => open(id)}
          generation={generation}
          onChanged={() => setGeneration((g) => g + 1)}
        />
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
                  setGeneration((g) => g + 1);
                  location.hash = "#/";
                }}
                onChanged={() => setGeneration((g) => g + 1)}
              />
            </>
          ) : (
            <p class="empty">Open a session, or make a new one.</p>
          )}
        </main>
      </div>
    </div>
  );
}
