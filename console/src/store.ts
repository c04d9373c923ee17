// The caller's sessions as the page knows them: one map by id, which the session list and
// the open session's header both read, so the two always agree.
//
// It is fed by WatchSessions: a snapshot of the newest sessions, `synced`, then each
// session as a whole when it changes, or its `deleted_id`. A stream that ends or fails is
// opened again after a backoff (half a second, doubling to ten); the snapshot that
// follows replaces the map. A server that answers UNIMPLEMENTED (one from before the
// call) is polled instead: ListSessions every two seconds. A session read on its own
// (GetSession, a fork, a rewind's answer) goes in the same map, where the newer of two
// views of a session wins (more events, or as many and a later update).

import { BlitzError, type Session } from "blitz-client";
import { useEffect, useState } from "preact/hooks";
import { blitz, describe } from "./api.js";

/** How many of the newest sessions the stream's snapshot holds (the server's most). */
const SNAPSHOT = 500;
const POLL_MS = 2000;
const OLDER_PAGE = 100;

export interface SessionsState {
  sessions: ReadonlyMap<string, Session>;
  /** "watching": WatchSessions; "polling": an older server's ListSessions. */
  mode: "connecting" | "watching" | "polling";
  /** The snapshot arrived: the map is the server's (then kept so). */
  synced: boolean;
  /** Why the stream is down, while it is ("" when it is up). */
  error: string;
  /** Older sessions may exist than the map holds ("older →" reads them). */
  more: boolean;
}

type Listener = () => void;

class Store {
  state: SessionsState = { sessions: new Map(), mode: "connecting", synced: false, error: "", more: false };
  private listeners = new Set<Listener>();
  private timer = 0;
  private olderToken: string | undefined;
  private started = false;

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Tells the listeners, once per burst (a snapshot is one). */
  private changed(patch: Partial<SessionsState> = {}): void {
    this.state = { ...this.state, ...patch };
    if (this.timer) return;
    this.timer = window.setTimeout(() => {
      this.timer = 0;
      for (const listener of this.listeners) listener();
    }, 30);
  }

  /** A session as read anywhere: kept unless the map holds a newer view of it. */
  put(session: Session): void {
    const known = this.state.sessions.get(session.id);
    if (known && !newer(session, known)) return;
    const sessions = new Map(this.state.sessions);
    sessions.set(session.id, session);
    this.changed({ sessions });
  }

  remove(id: string): void {
    if (!this.state.sessions.has(id)) return;
    const sessions = new Map(this.state.sessions);
    sessions.delete(id);
    this.changed({ sessions });
  }

  /** Starts following the server's sessions, once per page. */
  start(): void {
    if (this.started) return;
    this.started = true;
    void this.watch();
  }

  private async watch(): Promise<void> {
    let delay = 500;
    for (;;) {
      let fresh: Map<string, Session> | undefined = new Map();
      try {
        for await (const update of blitz.sessions.watchSessions({ pageSize: SNAPSHOT })) {
          if (fresh) {
            if (update.session) fresh.set(update.session.id, update.session);
            if (update.synced) {
              // The snapshot is the map; what was read of older sessions stays.
              const oldest = minCreate(fresh);
              const sessions = new Map(fresh);
              for (const [id, session] of this.state.sessions) {
                if (!sessions.has(id) && fresh.size >= SNAPSHOT && created(session) < oldest) sessions.set(id, session);
              }
              this.changed({ sessions, mode: "watching", synced: true, error: "", more: fresh.size >= SNAPSHOT });
              fresh = undefined;
              delay = 500;
            }
            continue;
          }
          if (update.session) this.put(update.session);
          if (update.deletedId) this.remove(update.deletedId);
        }
        // The server ended the stream (it is going away): open it again.
      } catch (thrown) {
        const error = BlitzError.from(thrown);
        if (error.code === "unimplemented") return this.poll();
        this.changed({ error: describe(error) });
      }
      await sleep(delay);
      delay = Math.min(delay * 2, 10_000);
    }
  }

  /** An older server's way: the newest sessions, every two seconds. */
  private async poll(): Promise<void> {
    this.changed({ mode: "polling" });
    for (;;) {
      try {
        const answer = await blitz.sessions.listSessions({ pageSize: OLDER_PAGE });
        const fresh = new Map(answer.sessions.map((s) => [s.id, s]));
        const oldest = minCreate(fresh);
        const sessions = new Map(fresh);
        for (const [id, session] of this.state.sessions) {
          // Sessions past the page stay as read; those the page should hold and does not are gone.
          if (!sessions.has(id) && answer.nextPageToken && created(session) < oldest) sessions.set(id, session);
        }
        for (const [id, session] of sessions) {
          const known = this.state.sessions.get(id);
          if (known && !newer(session, known)) sessions.set(id, known);
        }
        this.changed({ sessions, synced: true, error: "", more: !!answer.nextPageToken });
      } catch (thrown) {
        this.changed({ error: describe(thrown) });
      }
      await sleep(POLL_MS);
    }
  }

  /** Reads sessions older than the map holds: ListSessions' pages, from the newest,
   * until one holds a session the map did not. */
  async older(): Promise<void> {
    let token = this.olderToken ?? "";
    for (;;) {
      const answer = await blitz.sessions.listSessions({ pageSize: OLDER_PAGE, pageToken: token });
      const added = answer.sessions.some((s) => !this.state.sessions.has(s.id));
      for (const session of answer.sessions) this.put(session);
      token = answer.nextPageToken;
      this.olderToken = token;
      if (!token) return this.changed({ more: false });
      if (added) return;
    }
  }
}

/** Whether `a` is a later view of a session than `b`. */
function newer(a: Session, b: Session): boolean {
  if (a.lastSeq !== b.lastSeq) return a.lastSeq > b.lastSeq;
  return stamp(a.updateTime) >= stamp(b.updateTime);
}

function stamp(time: Session["updateTime"]): number {
  return time ? Number(time.seconds) * 1000 + time.nanos / 1e6 : 0;
}

export function created(session: Session): number {
  return stamp(session.createTime);
}

function minCreate(sessions: Map<string, Session>): number {
  let oldest = Number.POSITIVE_INFINITY;
  for (const session of sessions.values()) oldest = Math.min(oldest, created(session));
  return oldest;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => window.setTimeout(resolve, ms));
}

export const store = new Store();

/** The store's state, drawn again when it changes. */
export function useSessions(): SessionsState {
  const [state, setState] = useState(store.state);
  useEffect(() => {
    setState(store.state);
    return store.subscribe(() => setState(store.state));
  }, []);
  return state;
}

/** The newest sessions first (ListSessions' order). */
export function newestFirst(sessions: Iterable<Session>): Session[] {
  return [...sessions].sort((a, b) => created(b) - created(a) || (a.id < b.id ? 1 : -1));
}
