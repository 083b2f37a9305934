// The app's one way to the server: the client generated from openapi/openapi.json
// (src/client/), on this page's origin (the gateway serves the app and the API together), and
// the credentials this browser holds, kept in localStorage.
import { type ProblemDocument, rematchTable } from "./client";
import { type Client, createClient, createConfig } from "./client/client";
import type { Auth } from "./client/core/auth.gen";
import { links } from "./router";

const APP_KEY = "playtable.appKey";
const CONFIG_TIMEOUT_MS = 3000;

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
    const answer = await fetch("/web-config.json", {
      cache: "no-store",
      signal: AbortSignal.timeout(CONFIG_TIMEOUT_MS),
    });
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
function idempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The key of each request sent and not answered yet, by what it asks. */
const unanswered = new Map<string, string>();

/** Sends `call` with an Idempotency-Key that stays the same for the same `request` (what it
 * asks, e.g. `["joinTable", tableId, name]`) until the server answers it: a retry after a lost
 * answer (no answer, or a 5xx) gets the first attempt's outcome, so a seat is never taken twice
 * and a token shown once is not lost. Once answered, success or refusal, the next is new. */
export async function sendOnce<T>(request: unknown[], call: (key: string) => Promise<T>) {
  const asked = JSON.stringify(request);
  const key = unanswered.get(asked) ?? idempotencyKey();
  unanswered.set(asked, key);
  try {
    const answer = await call(key);
    unanswered.delete(asked);
    return answer;
  } catch (error) {
    if (isProblem(error) && error.status < 500) unanswered.delete(asked);
    throw error;
  }
}

/** What the page shows of a failed call: the problem's title and detail, or what went wrong
 * before any answer. */
export interface ShownProblem {
  title: string;
  detail: string;
}

const LONGEST_DETAIL = 200;

export function problemOf(error: unknown): ShownProblem {
  if (isProblem(error)) return { title: error.title, detail: error.detail ?? "" };
  if (error instanceof Error) return { title: "No answer from the server", detail: error.message };
  // not a problem document: a proxy's error page, say; its text, cut short
  return { title: "Unexpected answer", detail: String(error).slice(0, LONGEST_DETAIL) };
}

/** Whether `error` is a problem of this type (the last part of its type URI, e.g.
 * "version-not-found"): what a page may act on, beyond showing it. */
export function isProblemOfType(error: unknown, type: string): boolean {
  return isProblem(error) && error.type.endsWith(`/${type}`);
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

function isSeat(value: unknown): value is Seat {
  return (
    isRecord(value) &&
    typeof value.seat === "number" &&
    typeof value.token === "string" &&
    typeof value.name === "string"
  );
}

const seatKey = (tableId: string) => `playtable.table.${tableId}.seat`;
const invitationKey = (tableId: string) => `playtable.table.${tableId}.invitation`;
const matchKey = (matchId: string) => `playtable.match.${matchId}.bearer`;
const rematchKey = (tableId: string) => `playtable.table.${tableId}.rematch`;

export const credentials = {
  seat(tableId: string): Seat | null {
    try {
      const stored: unknown = JSON.parse(localStorage.getItem(seatKey(tableId)) ?? "null");
      return isSeat(stored) ? stored : null;
    } catch {
      return null; // not ours, or damaged: as if there were none
    }
  },
  /** Every table at which this browser holds a seat, with the seat (the lobby lists them). */
  seats(): { tableId: string; seat: Seat }[] {
    const held = /^playtable\.table\.(.+)\.seat$/;
    return Object.keys(localStorage).flatMap((key) => {
      const tableId = held.exec(key)?.[1];
      const seat = tableId === undefined ? null : credentials.seat(tableId);
      return tableId === undefined || seat === null ? [] : [{ tableId, seat }];
    });
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
    return localStorage.getItem(matchKey(matchId)) || null;
  },
  /** Whether this browser has settled how it sees the match (as a player, or no longer). */
  knowsMatch(matchId: string): boolean {
    return localStorage.getItem(matchKey(matchId)) !== null;
  },
  /** `bearer` null: this browser watches the match from now on (its player left it). */
  keepMatch(matchId: string, bearer: string | null): void {
    localStorage.setItem(matchKey(matchId), bearer ?? "");
  },
  /** The rematch of a finished table in which this browser has taken its seat back. */
  rematch(tableId: string): string | null {
    return localStorage.getItem(rematchKey(tableId));
  },
  keepRematch(tableId: string, rematchId: string): void {
    localStorage.setItem(rematchKey(tableId), rematchId);
  },
};

/** Takes back this player's seat in the rematch of a finished table (opening the rematch if
 * nobody has yet) with the seat's `token`, keeps the new seat, and goes to the new table. */
export async function takeRematchSeat(tableId: string, token: string): Promise<void> {
  const joined = await sendOnce(["rematchTable", tableId], (key) =>
    rematchTable({
      client: api(token),
      path: { table_id: tableId },
      headers: { "Idempotency-Key": key },
      throwOnError: true,
    }),
  );
  const { seat, token: newToken, table } = joined.data;
  const name = table.seats[seat]?.player ?? "";
  credentials.keepSeat(table.table_id, { seat, token: newToken, name });
  credentials.keepRematch(tableId, table.table_id);
  location.hash = links.table(table.table_id);
}
