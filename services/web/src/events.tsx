// What happened lately in a match: its events as this caller may see them (the server redacts
// what they may not), newest first, each said in a line from its own fields, so any game's log
// reads without a table of phrasings.
import type { MatchEvent } from "./client";

/** How many of the latest events the log keeps. */
export const LOG_LENGTH = 30;

/** Each game's event fields that hold a seat, shown as the player's name (as the contract's
 * event models say; a field of the same name may hold something else in another game). */
const SEAT_FIELDS: Record<string, ReadonlySet<string>> = {
  hanabi: new Set(["seat", "target"]),
  carcassonne: new Set(["seat"]),
  dingo: new Set(["seat", "ranch", "first_player", "start_player"]),
  breaking_news: new Set(["seat", "reported_by"]),
};
const NO_SEAT_FIELDS: ReadonlySet<string> = new Set(["seat"]);
/** Fields every event has, or too long to say in a line. */
const LEFT_OUT = new Set(["type", "hands", "deck", "order"]);
const LONGEST_VALUE = 60;

/** `events` with `more` added: each version once, in order, the last `LOG_LENGTH`. */
export function withEvents(events: MatchEvent[], more: MatchEvent[]): MatchEvent[] {
  const byVersion = new Map(events.map((event) => [event.version, event]));
  for (const event of more) byVersion.set(event.version, event);
  return [...byVersion.values()].sort((a, b) => a.version - b.version).slice(-LOG_LENGTH);
}

export function EventLog({ events, players }: { events: MatchEvent[]; players: string[] }) {
  if (events.length === 0) return null;
  return (
    <details class="event-log" open>
      <summary>What happened</summary>
      <ol data-testid="event-log">
        {[...events].reverse().map((event) => (
          <li key={event.version} value={event.version} data-type={event.type}>
            <strong>{event.type}</strong>
            {event.seat !== null && <> by {players[event.seat] ?? `seat ${event.seat}`}</>}
            {describe(event, players)}
          </li>
        ))}
      </ol>
    </details>
  );
}

/** The event's fields, but those every event has, the empty ones, and its own `seat` when that
 * is the mover's (the line already says "by"). */
function describe(event: MatchEvent, players: string[]): string {
  const seats = SEAT_FIELDS[event.game] ?? NO_SEAT_FIELDS;
  const said = Object.entries(event.data as Record<string, unknown>)
    .filter(([field, value]) => !LEFT_OUT.has(field) && value !== null && value !== undefined)
    .filter(([field, value]) => !(field === "seat" && value === event.seat))
    .map(
      ([field, value]) => `${field.replaceAll("_", " ")} ${say(value, seats.has(field), players)}`,
    );
  return said.length === 0 ? "" : `: ${said.join(", ")}`;
}

function say(value: unknown, isSeat: boolean, players: string[]): string {
  if (isSeat && typeof value === "number") return players[value] ?? `seat ${value}`;
  if (Array.isArray(value) && value.every((item) => typeof item !== "object")) {
    return `[${value.join(", ")}]`;
  }
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return text.length > LONGEST_VALUE ? `${text.slice(0, LONGEST_VALUE - 1)}…` : text;
}
