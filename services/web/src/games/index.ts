// Which table each game is played at; a game without its own yet gets the generic one, so
// every game in the catalogue can be played from the first day.
import { BreakingNewsTable } from "./breaking_news";
import { CarcassonneTable } from "./carcassonne";
import { DingoTable } from "./dingo";
import { FallbackTable } from "./fallback";
import { HanabiTable } from "./hanabi";
import type { GameTable } from "./types";

const TABLES: Record<string, GameTable> = {
  hanabi: HanabiTable,
  dingo: DingoTable,
  breaking_news: BreakingNewsTable,
  carcassonne: CarcassonneTable,
};

export function tableFor(game: string): GameTable {
  return TABLES[game] ?? FallbackTable;
}
