// What happened lately in a match: its events as this caller may see them (the server redacts
// what they may not), newest first, each said in a line from its own fields, so any game's log
// reads without a table of phrasings.
import type { MatchEvent } from "./client";

/** How many of the latest events the log keeps. */
export const LOG_LENGTH = 30;

/** Fields that name a seat: shown as the player's name. */
const SEAT_FIELDS = new Set(["seat", "target", "giver", "player", "winner", "mover", "by"]);
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
            {describe(event.data as Record<string, unknown>, event.seat, players)}
          </li>
        ))}
      </ol>
    </details>
  );
}

/** The event's fields, but those every event has, the empty ones, and its own `seat` when that
 * is the mover's (the line already says "by"). */
function describe(data: Record<string, unknown>, mover: number | null, players: string[]): string {
  const said = Object.entries(data)
    .filter(([field, value]) => !LEFT_OUT.has(field) && value !== null && value !== undefined)
    .filter(([field, value]) => !(field === "seat" && value === mover))
    .map(([field, value]) => `${field.replaceAll("_", " ")} ${say(field, value, players)}`);
  return said.length === 0 ? "" : `: ${said.join(", ")}`;
}

function say(field: string, value: unknown, players: string[]): string {
  if (SEAT_FIELDS.has(field) && typeof value === "number") return players[value] ?? `seat ${value}`;
  if (Array.isArray(value) && value.every((item) => typeof item !== "object")) {
    return `[${value.join(", ")}]`;
  }
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return text.length > LONGEST_VALUE ? `${text.slice(0, LONGEST_VALUE - 1)}…` : text;
}
