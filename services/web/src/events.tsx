// What happened lately in a match: its events as this caller may see them (the server redacts
// what they may not), newest first, each in a player's words (src/log/).
import { useMemo } from "preact/hooks";

import type { MatchEvent } from "./client";
import { tell } from "./log";

/** How many of the latest events the log shows. */
export const LOG_LENGTH = 30;

/** `events` with `more` added: each version once, in order, from the first (the log's words
 * are folded from the whole match). */
export function withEvents(events: MatchEvent[], more: MatchEvent[]): MatchEvent[] {
  const byVersion = new Map(events.map((event) => [event.version, event]));
  for (const event of more) byVersion.set(event.version, event);
  return [...byVersion.values()].sort((a, b) => a.version - b.version);
}

export function EventLog({ events, players }: { events: MatchEvent[]; players: string[] }) {
  const lines = useMemo(() => tell(events, players).slice(-LOG_LENGTH), [events, players]);
  if (lines.length === 0) return null;
  return (
    <details class="event-log" open>
      <summary>What happened</summary>
      <ol data-testid="event-log">
        {[...lines].reverse().map((line) => (
          <li key={line.version} value={line.version} data-type={line.type}>
            {line.text}
          </li>
        ))}
      </ol>
    </details>
  );
}
