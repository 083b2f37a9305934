// A match's events in words: each game's own phrasing (one module per game, an exhaustive
// switch over its event union, so a new event type without a sentence fails the type check),
// for the match page's log and the replay's "which move led here".
import { listMatchEvents, type MatchEvent } from "../client";
import { api } from "../api";
import { breakingNewsTeller } from "./breaking_news";
import { sayCarcassonne } from "./carcassonne";
import { sayDingo } from "./dingo";
import { hanabiTeller } from "./hanabi";

const PAGE_SIZE = 500;

export interface LogLine {
  version: number;
  type: string;
  text: string;
}

/** Every event's line, in order. `events` is the match's log from its first version (some
 * games fold it, e.g. Hanabi's hands for counting slots), as this caller may see it. */
export function tell(events: readonly MatchEvent[], players: string[]): LogLine[] {
  const hanabi = hanabiTeller(players);
  const breakingNews = breakingNewsTeller(players);
  const say = (event: MatchEvent): string => {
    switch (event.game) {
      case "hanabi":
        return hanabi(event.data);
      case "carcassonne":
        return sayCarcassonne(event.data, players);
      case "dingo":
        return sayDingo(event.data, players);
      case "breaking_news":
        return breakingNews(event.data);
    }
  };
  return events.map((event) => ({ version: event.version, type: event.type, text: say(event) }));
}

/** The match's whole log as the caller (`bearer`: a seat token or an invitation, else a
 * spectator) may see it, page by page. */
export async function readHistory(matchId: string, bearer: string | null): Promise<MatchEvent[]> {
  const events: MatchEvent[] = [];
  let cursor: string | undefined;
  do {
    const page = await listMatchEvents({
      client: api(bearer),
      path: { match_id: matchId },
      query: { limit: PAGE_SIZE, ...(cursor && { cursor }) },
      throwOnError: true,
    });
    events.push(...page.data.items);
    cursor = page.data.next_cursor ?? undefined;
  } while (cursor);
  return events;
}
