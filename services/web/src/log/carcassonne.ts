// Carcassonne's log, with The Messengers, Inns & Cathedrals and Traders & Builders: tiles by
// what they show (the tile data's descriptions), followers and the other pieces by the feature
// they stand on, scores, goods and messages as players say them.
import type { CarcassonneEvent } from "../client";
import { featureKind, GOODS, TILES } from "../games/carcassonne/geometry";
import { messageCard } from "../games/carcassonne/messages";
import { capitalised, seatName } from "../games/names";
import { sayHosting } from "./hosting";
import { counted, listed, names, standings, won } from "./words";

const FIGURES = ["scoring figure", "messenger"];

export function sayCarcassonne(event: CarcassonneEvent, players: string[]): string {
  const name = (seat: number) => seatName(players, seat);
  switch (event.type) {
    case "StackShuffled":
      return `The tiles were shuffled: ${counted(event.stack_size, "tile")} in the stack, the start tile in the middle`;
    case "TileDrawn":
      return `${name(event.seat)} drew a tile: ${tile(event.tile)}`;
    case "TileDiscarded":
      return `${name(event.seat)}'s tile fits nowhere and leaves the game: ${tile(event.tile)}`;
    case "TilePlaced": {
      const kind = event.follower === null ? null : featureKind(event.tile, event.follower);
      const follower =
        event.follower === null
          ? "no follower"
          : `a ${PIECE_NAMES[event.piece ?? "follower"] ?? "follower"} on the ${kind ?? "tile"}`;
      return `${name(event.seat)} placed ${tile(event.tile)} at (${event.x}, ${event.y}) with ${follower}`;
    }
    case "FeatureScored": {
      const when = event.final ? "at the end, " : "";
      if (event.seats.length === 0)
        return `${capitalised(when)}a ${event.feature} was completed with no follower on it`;
      return `${capitalised(when)}${names(players, event.seats)} scored ${counted(event.points, "point")} for a ${event.feature}`;
    }
    case "GameOver":
      return `The game is over: ${standings(players, event.scores)}; ${won(players, event.winners)}`;
    case "MessagesShuffled":
      return `The Messengers' ${counted(event.size, "message")} were shuffled`;
    case "PreferenceSet":
      return event.figure === null
        ? `${name(event.seat)}'s points outside their turn go to whichever figure is behind`
        : `${name(event.seat)}'s points outside their turn go to their ${FIGURES[event.figure] ?? "figure"}`;
    case "FigureAdvanced":
      return `${name(event.seat)}'s ${FIGURES[event.figure] ?? "figure"} moved ${counted(event.points, "space")}`;
    case "MessageDrawn":
      return `${name(event.seat)} drew message ${message(event.message)}`;
    case "MessageResolved": {
      if (event.took_points)
        return `${name(event.seat)} took ${counted(event.points, "point")} instead of message ${message(event.message)}`;
      const back = event.returned ? ", and took a follower back" : "";
      return `${name(event.seat)} carried out message ${message(event.message)}: ${counted(event.points, "point")}${back}`;
    }
    case "FiguresSummed":
      return `Each player's two figures became one: ${standings(players, event.totals)}`;
    case "ExpansionsInPlay": {
      const played = [
        event.inns_cathedrals ? "Inns & Cathedrals" : null,
        event.traders_builders ? "Traders & Builders" : null,
      ].filter((title) => title !== null);
      return `The match plays ${played.join(" and ") || "no expansion"}: its tiles are in the stack`;
    }
    case "BuilderTurn":
      return `${name(event.seat)}'s builder: a second tile this turn`;
    case "GoodsTaken":
      return `${name(event.seat)} completed a city with goods and took ${goods(event.goods)}`;
    case "PieceReturned":
      return `${name(event.seat)}'s ${PIECE_NAMES[event.piece] ?? "piece"} went back to their supply from (${event.x}, ${event.y})`;
    case "BonusScored":
      return event.reason === "pig"
        ? `At the end, ${name(event.seat)}'s pig scored ${counted(event.points, "more point")} for its farm`
        : `At the end, ${name(event.seat)} scored ${counted(event.points, "point")} for the most ${event.reason}`;
    default:
      return sayHosting(event, players);
  }
}

/** The pieces as players call them (PlaceTile.piece's values). */
const PIECE_NAMES: Record<string, string> = {
  follower: "follower",
  large_follower: "large follower",
  builder: "builder",
  pig: "pig",
};

/** "2 wine and 1 cloth tokens": goods counted per good of GOODS. */
function goods(counts: number[]): string {
  const said = GOODS.flatMap((good, i) => ((counts[i] ?? 0) > 0 ? [`${counts[i]} ${good}`] : []));
  const total = counts.reduce((sum, n) => sum + n, 0);
  return said.length === 0 ? "no goods" : `${listed(said)} ${total === 1 ? "token" : "tokens"}`;
}

/** "tile E (city north)". */
function tile(letter: string): string {
  const description = TILES.get(letter)?.description;
  return description ? `tile ${letter} (${description})` : `tile ${letter}`;
}

/** "3, Smallest cloister". */
function message(number: number): string {
  const card = messageCard(number);
  return card ? `${number}, ${card.title}` : String(number);
}
