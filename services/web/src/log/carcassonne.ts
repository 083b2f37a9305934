// Carcassonne's log, with The Messengers: tiles by what they show (tiles.json's descriptions),
// followers by the feature they stand on, scores and messages as players say them.
import type { CarcassonneEvent } from "../client";
import { featureKind, TILES } from "../games/carcassonne/geometry";
import { messageCard } from "../games/carcassonne/messages";
import { capitalised, seatName } from "../games/names";
import { sayHosting } from "./hosting";
import { counted, names, standings, won } from "./words";

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
        event.follower === null ? "no follower" : `a follower on the ${kind ?? "tile"}`;
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
    default:
      return sayHosting(event, players);
  }
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
