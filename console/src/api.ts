// The console's one client of the server it was loaded from, and its sign-in.
//
// The page calls its own origin only (the Content-Security-Policy's `connect-src 'self'`).
// A bearer token, when the server needs one, is kept in sessionStorage: per tab, gone
// with it, never in a URL (so never in a history, a log or a Referer).

import { BlitzError, createBlitz, type ServerInfo } from "blitz-client";

const TOKEN_KEY = "blitz.token";

export function storedToken(): string {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? "";
  } catch {
    return "";
  }
}

export function storeToken(token: string): void {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage refused (a private mode): the token lives as long as the page.
  }
  current = token;
}

let current = storedToken();

/** The client every view uses; the token is read at each call. */
export const blitz = createBlitz({
  baseUrl: location.origin,
  token: () => current,
  // The console waits out any outage: it says so, and picks up where it was.
  reconnectTimeoutMs: Number.POSITIVE_INFINITY,
});

export type SignIn =
  | { state: "checking" }
  | { state: "in"; info: ServerInfo; token: string }
  | { state: "out"; error?: string }
  | { state: "down"; error: string };

/** Whether the server answers with the current token (or none): the handshake. */
export async function handshake(): Promise<SignIn> {
  try {
    const info = await blitz.sessions.getServerInfo({});
    return { state: "in", info, token: current };
  } catch (thrown) {
    const error = BlitzError.from(thrown);
    if (error.reason === "UNAUTHENTICATED" || error.reason === "PERMISSION_DENIED") {
      return current ? { state: "out", error: "The server refused this token." } : { state: "out" };
    }
    return { state: "down", error: describe(error) };
  }
}

/** A user-facing line for any failure. */
export function describe(thrown: unknown): string {
  const error = BlitzError.from(thrown);
  if (error.code === "unavailable" && !error.info) return "The server cannot be reached.";
  return `${error.reason}: ${error.description}`;
}
