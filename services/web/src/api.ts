// The app's one way to the server: the client generated from openapi/openapi.json
// (src/client/), on this page's origin (the gateway serves the app and the API together), and
// the credentials this browser holds, kept in localStorage.
import type { ProblemDocument } from "./client";
import { type Client, createClient, createConfig } from "./client/client";
import type { Auth } from "./client/core/auth.gen";

const APP_KEY = "playtable.appKey";

export function appKey(): string {
  return localStorage.getItem(APP_KEY) ?? "";
}

export function setAppKey(key: string): void {
  localStorage.setItem(APP_KEY, key.trim());
}

/** The app key a server hands its own web client (`playtable stack` writes one): it wins over
 * a stored one, which a restarted stack has revoked. A static file beside the app, not the API. */
export async function loadServerAppKey(): Promise<void> {
  try {
    const answer = await fetch("/web-config.json", { cache: "no-store" });
    if (!answer.ok) return;
    const config: unknown = await answer.json();
    if (isRecord(config) && typeof config.appKey === "string") setAppKey(config.appKey);
  } catch {
    // no config on this server: the app key field says what to do
  }
}

/** A client sending the app's key to the operations that take it, and `bearer` (a seat token
 * or a private table's invitation) to those that take a bearer token. */
export function api(bearer?: string | null): Client {
  return createClient(
    createConfig({
      baseUrl: location.origin,
      auth: (scheme: Auth) => (scheme.type === "apiKey" ? appKey() : (bearer ?? undefined)),
    }),
  );
}

/** A fresh Idempotency-Key; getRandomValues works where randomUUID does not (plain HTTP). */
export function idempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** What the page shows of a failed call: the problem's title and detail, or what went wrong
 * before any answer. */
export interface Shown {
  title: string;
  detail: string;
}

export function problemOf(error: unknown): Shown {
  if (isProblem(error)) return { title: error.title, detail: error.detail ?? "" };
  if (error instanceof Error) return { title: "No answer from the server", detail: error.message };
  return { title: "Unexpected answer", detail: String(error) };
}

function isProblem(error: unknown): error is ProblemDocument {
  return isRecord(error) && typeof error.title === "string" && typeof error.status === "number";
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

// --- the credentials this browser holds -----------------------------------------------------

export interface Seat {
  seat: number;
  token: string;
  name: string;
}

const seatKey = (tableId: string) => `playtable.table.${tableId}.seat`;
const invitationKey = (tableId: string) => `playtable.table.${tableId}.invitation`;
const matchKey = (matchId: string) => `playtable.match.${matchId}.bearer`;

export const credentials = {
  seat(tableId: string): Seat | null {
    const stored = localStorage.getItem(seatKey(tableId));
    return stored === null ? null : (JSON.parse(stored) as Seat);
  },
  keepSeat(tableId: string, seat: Seat): void {
    localStorage.setItem(seatKey(tableId), JSON.stringify(seat));
  },
  forgetSeat(tableId: string): void {
    localStorage.removeItem(seatKey(tableId));
  },
  invitation(tableId: string): string | null {
    return localStorage.getItem(invitationKey(tableId));
  },
  keepInvitation(tableId: string, token: string): void {
    localStorage.setItem(invitationKey(tableId), token);
  },
  /** The seat token (else the invitation) a match's requests carry; none: a spectator. */
  match(matchId: string): string | null {
    return localStorage.getItem(matchKey(matchId));
  },
  keepMatch(matchId: string, bearer: string): void {
    localStorage.setItem(matchKey(matchId), bearer);
  },
  forgetMatch(matchId: string): void {
    localStorage.removeItem(matchKey(matchId));
  },
};
