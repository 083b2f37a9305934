// What happened lately in a match: its events as this caller may see them (the server redacts
// what they may not), newest first, each in a player's words (src/log/).
import { useMemo } from "preact/hooks";

import type { MatchEvent } from "./client";
import { type LogLine, tell } from "./log";

/** How many of the latest events the log shows at once; the earlier ones fold away. */
export const LOG_LENGTH = 30;

/** `events` with `more` added: each version once, in order, from the first (the log's words
 * are folded from the whole match). */
export function withEvents(events: MatchEvent[], more: MatchEvent[]): MatchEvent[] {
  const byVersion = new Map(events.map((event) => [event.version, event]));
  for (const event of more) byVersion.set(event.version, event);
  return [...byVersion.values()].sort((a, b) => a.version - b.version);
}

export function EventLog({ events, players }: { events: MatchEvent[]; players: string[] }) {
  const lines = useMemo(() => tell(events, players).reverse(), [events, players]);
  if (lines.length === 0) return null;
  const earlier = lines.slice(LOG_LENGTH);
  return (
    <details class="event-log" open>
      <summary>What happened</summary>
      <Lines lines={lines.slice(0, LOG_LENGTH)} testId="event-log" />
      {earlier.length > 0 && (
        <details class="event-log-earlier">
          <summary>Earlier ({earlier.length})</summary>
          <Lines lines={earlier} testId="event-log-earlier" />
        </details>
      )}
    </details>
  );
}

/** Lines newest first, each numbered with its event's version. */
function Lines({ lines, testId }: { lines: LogLine[]; testId: string }) {
  return (
    <ol data-testid={testId}>
      {lines.map((line) => (
        <li key={line.version} value={line.version} data-type={line.type}>
          {line.text}
        </li>
      ))}
    </ol>
  );
}
