// Live updates: a table's or a match's Server-Sent Events feed, through the browser's
// EventSource. It cannot send headers, so the seat token goes in the feed's `token` query
// parameter (the contract's followMatch and followTable take it for this); the URL is built by
// the generated client from the contract's path.
import type { FollowMatchData, FollowTableData } from "./client";
import { api } from "./api";

export interface FeedMessage {
  /** The event's version: the feed's SSE id. */
  version: number;
  type: string;
  data: unknown;
}

const FIRST_RESTART_MS = 2000;
const LONGEST_RESTART_MS = 30_000;

/** Follows a feed from after version `after`, calling `onMessage` for each event named in
 * `names` (EventSource dispatches named events only to their own listeners). The browser
 * reconnects by itself with Last-Event-ID; when it gives up (an error answer, which it does
 * not show), this starts again after the last version received, waiting twice as long each
 * time until a message arrives. Returns the function that stops following. */
export function follow(
  url: (after: number) => string,
  after: number,
  names: readonly string[],
  onMessage: (message: FeedMessage) => void,
): () => void {
  let last = after;
  let source: EventSource | null = null;
  let restart: number | undefined;
  let wait = FIRST_RESTART_MS;
  const open = () => {
    source = new EventSource(url(last));
    for (const name of names) {
      source.addEventListener(name, (event) => {
        const message = event as MessageEvent<string>;
        const version = Number(message.lastEventId);
        last = Math.max(last, version);
        wait = FIRST_RESTART_MS;
        onMessage({ version, type: name, data: JSON.parse(message.data) });
      });
    }
    source.onerror = () => {
      if (source?.readyState !== EventSource.CLOSED) return;
      restart = window.setTimeout(open, wait);
      wait = Math.min(wait * 2, LONGEST_RESTART_MS);
    };
  };
  open();
  return () => {
    window.clearTimeout(restart);
    source?.close();
  };
}

export function matchFeedUrl(matchId: string, token: string | null) {
  return (after: number) =>
    api().buildUrl<FollowMatchData>({
      baseUrl: location.origin, // this function takes no client config
      url: "/matches/{match_id}/feed",
      path: { match_id: matchId },
      query: { after, ...(token ? { token } : {}) },
    });
}

export function tableFeedUrl(tableId: string, token: string | null) {
  return (after: number) =>
    api().buildUrl<FollowTableData>({
      baseUrl: location.origin,
      url: "/tables/{table_id}/feed",
      path: { table_id: tableId },
      query: { after, ...(token ? { token } : {}) },
    });
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
