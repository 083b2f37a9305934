// Live updates: a table's or a match's Server-Sent Events feed, through the browser's
// EventSource. It cannot send headers, and a URL is no place for a seat token or an invitation
// (proxies log URLs), so a feed that needs one is opened with a single-use ticket, got for the
// token just before each connection (the contract's createMatchFeedTicket and
// createTableFeedTicket); a public feed needs none. The URL is built by the generated client from
// the contract's path.
import {
  createMatchFeedTicket,
  createTableFeedTicket,
  type FollowMatchData,
  type FollowTableData,
} from "./client";
import { api } from "./api";

export interface FeedMessage {
  /** The event's version: the feed's SSE id. */
  version: number;
  type: string;
  data: unknown;
}

/** Where a feed opens from a version on; `ticketed`: its URL opens one connection only. */
export interface FeedOpening {
  url: string;
  ticketed: boolean;
}

const FIRST_RESTART_MS = 2000;
const LONGEST_RESTART_MS = 30_000;

/** Follows a feed from after version `after`, calling `onMessage` for each event named in
 * `names` (EventSource dispatches named events only to their own listeners). Without a ticket
 * the browser reconnects by itself with Last-Event-ID; with one (which its reconnect would
 * repeat, used) and whenever the browser gives up (an error answer, which it does not show),
 * this opens the feed anew, with a new ticket, after the last version received, waiting twice
 * as long each time until a message arrives. Returns the function that stops following. */
export function follow(
  opening: (after: number) => Promise<FeedOpening>,
  after: number,
  names: readonly string[],
  onMessage: (message: FeedMessage) => void,
): () => void {
  let last = after;
  let source: EventSource | null = null;
  let restart: number | undefined;
  let wait = FIRST_RESTART_MS;
  let stopped = false;
  const again = () => {
    source?.close();
    source = null;
    if (stopped) return;
    restart = window.setTimeout(() => void open(), wait);
    wait = Math.min(wait * 2, LONGEST_RESTART_MS);
  };
  const open = async () => {
    let feed: FeedOpening;
    try {
      feed = await opening(last);
    } catch {
      again(); // no ticket (the service is down, say): as a refused feed
      return;
    }
    if (stopped) return;
    const opened = new EventSource(feed.url);
    source = opened;
    for (const name of names) {
      opened.addEventListener(name, (event) => {
        const message = event as MessageEvent<string>;
        const version = Number(message.lastEventId);
        last = Math.max(last, version);
        wait = FIRST_RESTART_MS;
        onMessage({ version, type: name, data: JSON.parse(message.data) });
      });
    }
    opened.onerror = () => {
      if (feed.ticketed || opened.readyState === EventSource.CLOSED) again();
    };
  };
  void open();
  return () => {
    stopped = true;
    window.clearTimeout(restart);
    source?.close();
  };
}

/** A feed's opening after `after`: with a fresh ticket (got by `ticket`) for a token's feed;
 * as anyone may follow it when the token is refused (its seat was left, its table closed). */
async function opening(
  after: number,
  ticket: (() => Promise<{ data: { ticket: string } }>) | null,
  url: (query: { after: number; ticket?: string }) => string,
): Promise<FeedOpening> {
  if (ticket !== null) {
    try {
      return { url: url({ after, ticket: (await ticket()).data.ticket }), ticketed: true };
    } catch (error) {
      if (!refusesToken(error)) throw error;
    }
  }
  return { url: url({ after }), ticketed: false };
}

/** Whether a problem says the token itself is refused (401 or 403), not that a service is down. */
function refusesToken(error: unknown): boolean {
  const status = (error as { status?: unknown } | null)?.status;
  return status === 401 || status === 403;
}

export function matchFeedUrl(matchId: string, token: string | null) {
  const path = { match_id: matchId };
  const ticket = token
    ? () => createMatchFeedTicket({ client: api(token), path, throwOnError: true })
    : null;
  return (after: number) =>
    opening(after, ticket, (query) =>
      api().buildUrl<FollowMatchData>({
        baseUrl: location.origin, // this function takes no client config
        url: "/matches/{match_id}/feed",
        path,
        query,
      }),
    );
}

export function tableFeedUrl(tableId: string, token: string | null) {
  const path = { table_id: tableId };
  const ticket = token
    ? () => createTableFeedTicket({ client: api(token), path, throwOnError: true })
    : null;
  return (after: number) =>
    opening(after, ticket, (query) =>
      api().buildUrl<FollowTableData>({
        baseUrl: location.origin,
        url: "/tables/{table_id}/feed",
        path,
        query,
      }),
    );
}

/** Runs `task` one at a time; asked again while it runs, it runs once more afterwards (a burst
 * of feed messages costs at most two reads). */
export function serial(task: () => Promise<void>): () => Promise<void> {
  let running = false;
  let again = false;
  return async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await task();
      } while (again);
    } finally {
      running = false;
    }
  };
}
