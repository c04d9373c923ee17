// The console's one client of the server it was loaded from, and its sign-in.
//
// The page calls its own origin only (the Content-Security-Policy's `connect-src 'self'`).
// A bearer token, when the server needs one, is kept in sessionStorage: per tab, gone
// with it, never in a URL (so never in a history, a log or a Referer).
//
// Every call names this browser in a `blitz-client` header (`console/<id>`, the id random
// and kept in localStorage), which the server records in `Resolution.client`: so the
// page knows its own decisions ("by you") after a reload. It says nothing of the person.
//
// The wire is Connect's binary format; `?wire=grpc-web` in the page's address switches to
// gRPC-Web (binary), which the browser tests use to drive the same console over both.

import type { Interceptor, Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { BlitzError, createBlitz, type ServerInfo } from "blitz-client";

const TOKEN_KEY = "blitz.token";
const CLIENT_KEY = "blitz.client";

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

/** This browser's name for the server (`console/<16 hex digits>`), made once and kept. */
export const CLIENT_ID = clientId();

function clientId(): string {
  try {
    const kept = localStorage.getItem(CLIENT_KEY);
    if (kept && /^console\/[0-9a-f]{16}$/.test(kept)) return kept;
  } catch {
    // No storage: a name for this page's life.
  }
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  const made = `console/${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
  try {
    localStorage.setItem(CLIENT_KEY, made);
  } catch {
    // As above.
  }
  return made;
}

/** The wire the page speaks: Connect, or gRPC-Web with `?wire=grpc-web`. */
export const WIRE: "connect" | "grpc-web" = new URLSearchParams(location.search).get("wire") === "grpc-web" ? "grpc-web" : "connect";

const headers: Interceptor = (next) => async (request) => {
  if (current) request.header.set("authorization", `Bearer ${current}`);
  request.header.set("blitz-client", CLIENT_ID);
  return await next(request);
};

function transport(): Transport {
  const options = { baseUrl: location.origin, useBinaryFormat: true, interceptors: [headers] };
  return WIRE === "grpc-web" ? createGrpcWebTransport(options) : createConnectTransport(options);
}

/** The client every view uses; the token is read at each call. */
export const blitz = createBlitz({
  baseUrl: location.origin,
  transport: transport(),
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

/** Whether this page resolved a request: the server recorded our name on it, or (a
 * server from before `Resolution.client`) the page answered it since it was loaded. */
export function resolvedHere(client: string, requestId: string): boolean {
  return client ? client === CLIENT_ID : answeredHere.has(requestId);
}

/** Requests this page answered since it was loaded. */
export const answeredHere = new Set<string>();
